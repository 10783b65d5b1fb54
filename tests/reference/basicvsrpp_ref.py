#!/usr/bin/python3
"""basicvsrpp_ref.py — PyTorch reference for tests/test_basicvsrpp.c `torch` (ctest
test_basicvsrpp.torch): BasicVSR++ x4 (Chan et al., CVPR 2022) written here from the paper and
the module structure BasicSR's basicvsrpp_arch.py and MMagic's basicvsr_plusplus_net.py share
(not their code; BasicSR's parameter names), with SPyNet, the residual blocks and flow_warp of
the project's own bench/video/torch_basicvsr.py and torchvision.ops.deform_conv2d for the
modulated deformable convolution (mmcv's ModulatedDeformConv2d's formula).

The folder DIR (written by the C test) holds params.txt (`config N T H W mid mag`, `blocks
num_blocks`, then `param NAME OFFSET NDIM SHAPE...` per parameter tensor in PixFlow's order and
`buffer NAME NDIM SHAPE... VALUES...` per buffer), params.f32 (PixFlow's flat parameters: the
counter-hash weights of the C test), lq.u8 / gt.u8 (N T H W 3 and N T 4H 4W 3) and per layout
k LK.out.f32 (N 3T 4H 4W), LK.loss.f32, LK.grads.f32 (the flat gradients). Checked:
 - the state_dict's keys, order, shapes and buffers equal PixFlow's table, and
   load_state_dict(strict=True) takes PixFlow's weights (and PixFlow's table takes the
   model's: the same key set, no extra buffers);
 - the output within 1e-5 of float64's largest |value|, the Charbonnier loss (eps 1e-12,
   mean) within 1e-5 relative;
 - every parameter's gradient within max(1e-4, 16 e32) of its float64 gradient's largest
   |value|, where e32 is PyTorch's own float32 run's error by the same measure (as
   test_basicvsr: SPyNet's gradients are sums of many cancelling terms).
Exit status 1 on any failure.
Run: /usr/bin/python3 tests/reference/basicvsrpp_ref.py DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.ops import deform_conv2d

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), 'bench', 'video'))
from torch_basicvsr import ConvResidualBlocks, SpyNet, flow_warp  # noqa: E402
from layout_check import check_layouts, run_charbonnier  # noqa: E402

BRANCHES = ['backward_1', 'forward_1', 'backward_2', 'forward_2']
DG = 16


class Alignment(nn.Module):
    """Second-order flow-guided deformable alignment (paper Sec. 3.2, Eq. 5-7): a
    ModulatedDeformConv2d(2C, C, 3, padding 1, deform_groups 16) whose offsets and mask come
    from conv_offset on (condition features, both flows)."""

    def __init__(self, c, mag):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(c, 2 * c, 3, 3))
        self.bias = nn.Parameter(torch.zeros(c))
        self.conv_offset = nn.Sequential(
            nn.Conv2d(3 * c + 4, c, 3, 1, 1), nn.LeakyReLU(0.1), nn.Conv2d(c, c, 3, 1, 1),
            nn.LeakyReLU(0.1), nn.Conv2d(c, c, 3, 1, 1), nn.LeakyReLU(0.1),
            nn.Conv2d(c, 27 * DG, 3, 1, 1))
        self.mag = mag

    def forward(self, x, cond, flow1, flow2):
        o = self.conv_offset(torch.cat([cond, flow1, flow2], 1))
        k = 9 * DG
        res = self.mag * torch.tanh(o[:, :2 * k])
        # the flows as (dy, dx) per tap: first half of the deform groups follows flow1
        base = torch.cat([flow1.flip(1).repeat(1, k // 2, 1, 1),
                          flow2.flip(1).repeat(1, k // 2, 1, 1)], 1)
        mask = torch.sigmoid(o[:, 2 * k:])
        return deform_conv2d(x, base + res, self.weight, self.bias, padding=1, mask=mask)


class BasicVSRPP(nn.Module):
    def __init__(self, c, nb, mag):
        super().__init__()
        self.c = c
        self.spynet = SpyNet()
        self.feat_extract = ConvResidualBlocks(3, c, 5)
        self.deform_align = nn.ModuleDict({b: Alignment(c, mag) for b in BRANCHES})
        self.backbone = nn.ModuleDict({b: ConvResidualBlocks((2 + i) * c, c, nb)
                                       for i, b in enumerate(BRANCHES)})
        self.reconstruction = ConvResidualBlocks(5 * c, c, 5)
        self.upconv1 = nn.Conv2d(c, 4 * c, 3, 1, 1)
        self.upconv2 = nn.Conv2d(c, 256, 3, 1, 1)
        self.conv_hr = nn.Conv2d(64, 64, 3, 1, 1)
        self.conv_last = nn.Conv2d(64, 3, 3, 1, 1)

    def branch(self, name, spatial, done, flows):
        """One propagation branch (paper Sec. 3.1): frames in its direction, each step aligned
        with the previous two steps' features; flows[i]: frame i to its predecessor in the
        branch's order."""
        t = len(spatial)
        order = list(range(t))[::-1] if name.startswith('backward') else list(range(t))
        out = [None] * t
        prop = spatial[0].new_zeros(spatial[0].shape)
        hist = []
        for s, i in enumerate(order):
            if s > 0:
                f1 = flows[i]
                zero = torch.zeros_like(prop)
                n2, f2, c2 = zero, torch.zeros_like(f1), zero
                if s > 1:
                    n2 = hist[-2]
                    f2 = f1 + flow_warp(flows[order[s - 1]], f1)
                    c2 = flow_warp(n2, f2)
                cond = torch.cat([flow_warp(prop, f1), spatial[i], c2], 1)
                prop = self.deform_align[name](torch.cat([prop, n2], 1), cond, f1, f2)
            feat = torch.cat([spatial[i]] + [d[i] for d in done] + [prop], 1)
            prop = prop + self.backbone[name](feat)
            hist.append(prop)
            out[i] = prop
        return out

    def forward(self, lq):
        n, t = lq.shape[:2]
        x = [lq[:, i] for i in range(t)]
        spatial = [self.feat_extract(f) for f in x]
        back = {i: self.spynet(x[i], x[i + 1]) for i in range(t - 1)}
        fwd = {i + 1: self.spynet(x[i + 1], x[i]) for i in range(t - 1)}
        done = []
        for name in BRANCHES:
            done.append(self.branch(name, spatial, done, back if 'backward' in name else fwd))
        outs = []
        for i in range(t):
            h = self.reconstruction(torch.cat([spatial[i]] + [d[i] for d in done], 1))
            h = F.leaky_relu(F.pixel_shuffle(self.upconv1(h), 2), 0.1)
            h = F.leaky_relu(F.pixel_shuffle(self.upconv2(h), 2), 0.1)
            h = F.leaky_relu(self.conv_hr(h), 0.1)
            h = self.conv_last(h) + F.interpolate(x[i], scale_factor=4, mode='bilinear',
                                                  align_corners=False)
            outs.append(h)
        return torch.stack(outs, 1)


def main():
    folder = sys.argv[1]
    params, buffers = [], []
    for line in open(os.path.join(folder, 'params.txt')):
        f = line.split()
        if f[0] == 'config':
            n, t, h, w, c = (int(v) for v in f[1:6])
            mag = float(f[6])
        elif f[0] == 'blocks':
            nb = int(f[1])
        elif f[0] == 'param':
            params.append((f[1], int(f[2]), tuple(int(v) for v in f[4:4 + int(f[3])])))
        else:
            nd = int(f[2])
            buffers.append((f[1], tuple(int(v) for v in f[3:3 + nd]),
                            [float(v) for v in f[3 + nd:]]))
    flat = np.fromfile(os.path.join(folder, 'params.f32'), dtype=np.float32)
    bad = []
    torch.set_num_threads(2)
    model = BasicVSRPP(c, nb, mag)
    sd = model.state_dict()
    ours = [p[0] for p in params] + [b[0] for b in buffers]
    ref_params = [k for k, _ in model.named_parameters()]
    if [p[0] for p in params] != ref_params:
        bad.append('parameter names or order differ from the state_dict\'s')
    if set(ours) != set(sd.keys()):
        bad.append('key sets differ: PixFlow only %s, PyTorch only %s' %
                   (sorted(set(ours) - set(sd))[:5], sorted(set(sd) - set(ours))[:5]))
    pix = {}
    for name, off, shape in params:
        numel = int(np.prod(shape))
        pix[name] = torch.from_numpy(flat[off:off + numel].copy()).view(shape)
        if name in sd and tuple(sd[name].shape) != shape:
            bad.append('%s: shape %s, PyTorch %s' % (name, shape, tuple(sd[name].shape)))
    for name, shape, vals in buffers:
        pix[name] = torch.tensor(vals, dtype=torch.float32).view(shape)
        if name in sd and not torch.equal(pix[name], sd[name]):
            bad.append('buffer %s differs' % name)
    try:
        model.load_state_dict(pix, strict=True)
    except RuntimeError as e:
        bad.append('load_state_dict(strict=True): %s' % e)
    lq = np.fromfile(os.path.join(folder, 'lq.u8'), dtype=np.uint8)
    gt = np.fromfile(os.path.join(folder, 'gt.u8'), dtype=np.uint8)

    x = torch.from_numpy(lq).view(n, t, h, w, 3).permute(0, 1, 4, 2, 3)
    y = torch.from_numpy(gt).view(n, t, 4 * h, 4 * w, 3).permute(0, 1, 4, 2, 3)
    o64, l64, g64 = run_charbonnier(model, torch.float64, x, y)
    _, _, g32 = run_charbonnier(model, torch.float32, x, y)
    k = check_layouts(folder, params, o64.reshape(n, 3 * t, 4 * h, 4 * w), l64, g64, g32,
                      'basicvsrpp_ref:', bad)
    if k == 0:
        bad.append('no layouts in %s' % folder)
    for b in bad:
        print('basicvsrpp_ref: FAILED: ' + b)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
