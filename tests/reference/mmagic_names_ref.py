#!/usr/bin/python3
"""mmagic_names_ref.py — checkpoints as MMagic saves BasicVSR++ and BasicVSR, for
tests/test_mmagic_names.c (ctest test_mmagic_names): do scripts/pth2safetensors.py's renaming
and PixFlow's loader give PixFlow the network PyTorch runs?

The networks are the PyTorch models of tests/reference/basicvsrpp_ref.py (BasicVSRPP) and
bench/video/torch_basicvsr.py (BasicVSR), whose state_dicts have BasicSR's names. Their keys are
renamed here to MMagic's by this file's own rules, read off MMagic's source
(mmagic/models/editors/basicvsr_plusplus_net/basicvsr_plusplus_net.py, basicvsr/basicvsr_net.py,
mmagic/models/archs/upsample.py): SPyNetBasicModule's five convolutions are mmcv ConvModules
(`basic_module.K.conv.weight`, K = 0..4, where BasicSR's Sequential puts a ReLU between them:
2K), the upsamplers PixelShufflePacks (`upsample1.upsample_conv`, `upsample2.upsample_conv` for
upconv1 / upconv2), BasicVSRNet's trunks `backward_resblocks` / `forward_resblocks`. The files
are saved as MMagic's runner does, {'meta': {...}, 'state_dict': {'generator.<name>': ...,
'step_counter': ...}} (BasicVSR's model class counts its steps in a buffer beside the generator).

Writes into DIR (argument):
  lq.u8                      the clip, T H W 3 uint8 (T 3, 16 x 16)
  bvsrpp.pth, bvsrpp.out.f32 BasicVSR++ (mid_channels 8, num_blocks 1, max_residue_magnitude 10)
                             and its float64 output on lq / 255, as float32, T 4H 4W 3
  bvsr.pth, bvsr.out.f32     BasicVSR (mid_channels 8, num_blocks 2), the same
  bvsrpp_missing.pth         bvsrpp.pth without generator.deform_align.forward_2.conv_offset.6.bias
  bvsrpp_extra.pth           bvsrpp.pth with an extra generator.upsample3.upsample_conv.weight
  spynet.pth                 the SPyNet of bvsrpp alone, as MMagic's spynet_pretrained file (no
                             mean / std: MMagic's SPyNet loads it before registering them)
  names.txt                  per network, `NET BASICSR_NAME MMAGIC_NAME` for every tensor
Weights: every tensor uniform in +-1/sqrt(fan_in) from torch.manual_seed(42), SPyNet's last bias
of each level 0.2 (flows of a few pixels, so the warps and the second-order flows matter),
conv_offset's last layer drawn too (offsets that move). Exit status 1 on a failure here.
Run: /usr/bin/python3 tests/reference/mmagic_names_ref.py DIR
"""
import os
import re
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), 'bench', 'video'))
from basicvsrpp_ref import BasicVSRPP  # noqa: E402
from torch_basicvsr import BasicVSR  # noqa: E402

T, H, W = 3, 16, 16


def mmagic_name(name):
    """BasicSR's name -> MMagic's, by MMagic's module structure (see the head comment)."""
    m = re.fullmatch(r'(spynet\.)?basic_module\.(\d)\.basic_module\.(\d)\.(weight|bias)', name)
    if m:
        k = int(m.group(3))
        assert k % 2 == 0, name
        return '%sbasic_module.%s.basic_module.%d.conv.%s' % (m.group(1) or '', m.group(2),
                                                               k // 2, m.group(4))
    for basicsr, mmagic in (('upconv1.', 'upsample1.upsample_conv.'),
                            ('upconv2.', 'upsample2.upsample_conv.'),
                            ('backward_trunk.', 'backward_resblocks.'),
                            ('forward_trunk.', 'forward_resblocks.')):
        if name.startswith(basicsr):
            return mmagic + name[len(basicsr):]
    return name


def draw(model):
    torch.manual_seed(42)
    with torch.no_grad():
        for name, p in model.named_parameters():
            fan_in = p[0].numel() if p.dim() > 1 else 16
            p.uniform_(-1, 1).mul_(fan_in ** -0.5)
            if re.fullmatch(r'spynet\.basic_module\.\d\.basic_module\.8\.bias', name):
                p.fill_(0.2)


def save_mmagic(path, sd, drop=None, extra=None):
    state = {'generator.' + mmagic_name(k): v.clone() for k, v in sd.items()
             if mmagic_name(k) != drop}
    if extra:
        state['generator.' + extra[0]] = extra[1]
    state['step_counter'] = torch.tensor([600000.0])
    torch.save({'meta': {'mmagic_version': '1.2.0', 'epoch': 0, 'iter': 600000},
                'state_dict': state}, path)


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    torch.set_num_threads(2)
    torch.manual_seed(7)
    lq = torch.randint(0, 256, (T, H, W, 3), dtype=torch.uint8)
    lq.numpy().tofile(os.path.join(folder, 'lq.u8'))
    x = lq.permute(0, 3, 1, 2).unsqueeze(0).double() / 255.0
    names = []
    bad = []
    for tag, model in (('bvsrpp', BasicVSRPP(8, 1, 10.0)), ('bvsr', BasicVSR(8, 2))):
        draw(model)
        sd = model.state_dict()
        mm = [mmagic_name(k) for k in sd]
        if len(set(mm)) != len(mm):
            bad.append('%s: two tensors under one MMagic name' % tag)
        names += ['%s %s %s' % (tag, k, mmagic_name(k)) for k in sd]
        save_mmagic(os.path.join(folder, tag + '.pth'), sd)
        with torch.no_grad():
            out = model.double()(x)[0].permute(0, 2, 3, 1)
        out.float().contiguous().numpy().tofile(os.path.join(folder, tag + '.out.f32'))
        print('mmagic_names_ref: %s: %d tensors (%d renamed), output |max| %.3f' %
              (tag, len(sd), sum(a != b for a, b in zip(sd, mm)), out.abs().max().item()))
        if tag == 'bvsrpp':
            save_mmagic(os.path.join(folder, 'bvsrpp_missing.pth'), sd,
                        drop='deform_align.forward_2.conv_offset.6.bias')
            save_mmagic(os.path.join(folder, 'bvsrpp_extra.pth'), sd,
                        extra=('upsample3.upsample_conv.weight', torch.zeros(32, 8, 3, 3)))
            spy = {mmagic_name(k)[len('spynet.'):]: v.float().clone() for k, v in sd.items()
                   if k.startswith('spynet.basic_module.')}
            torch.save({'state_dict': spy}, os.path.join(folder, 'spynet.pth'))
    with open(os.path.join(folder, 'names.txt'), 'w') as f:
        f.write('\n'.join(names) + '\n')
    for b in bad:
        print('mmagic_names_ref: FAILED: ' + b)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
