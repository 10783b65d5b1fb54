#!/usr/bin/python3
"""make_pth_cases — PyTorch checkpoints as BasicSR and MMagic write them, for
tests/test_pth_convert.c (scripts/pth2safetensors.py, then PixFlow's load_from).

The network is BasicSR's EDSR (tests/reference/zoo_archs.py) with n_feats 8, n_blocks 2, x2;
its 'params' and 'params_ema' are two independent random draws (seeds 1 and 2). Writes to OUT:
  basicsr.pth         torch.save({'params': sd, 'params_ema': sd_ema}) (zip format)
  basicsr_legacy.pth  the same with _use_new_zipfile_serialization=False (a pickle)
  mmagic.pth          {'meta': {...}, 'state_dict': {'generator.<k>': sd, 'generator_ema.<k>':
                      sd_ema, 'discriminator.<k>': ...}} plus an int64 buffer to be left out
  params.bin, params_ema.bin  the tensors as float32 little-endian, in names.txt order
  names.txt           one "NAME NUMEL" line per tensor
  net_d.pth           BasicSR's net_d_N.pth: torch.save({'params': sd}) of UNetDiscriminatorSN
                      (tests/reference/unet_d_ref.py's, num_feat 8, skip connections) after one
                      training forward, so its spectral norm's weight_u / weight_v moved
  net_d.bin, net_d_names.txt  its state_dict as above (weight_orig, weight_u, weight_v, ...)
  net_d_vgg.pth, net_d_vgg.bin, net_d_vgg_names.txt  the same for VGGStyleDiscriminator
                      (tests/reference/gan_step_ref.py's, num_feat 8, input_size 128) after one
                      training forward on a batch of 2: running statistics moved,
                      num_batches_tracked (int64) 1, stored in the .bin as a float
Usage: /usr/bin/python3 tests/reference/make_pth_cases.py OUT
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unet_d_ref  # noqa: E402
import zoo_archs  # noqa: E402


def draw(seed):
    torch.manual_seed(seed)
    net = zoo_archs.build("EDSR", 2, n_feats=8, n_blocks=2)
    with torch.no_grad():
        for p in net.parameters():
            p.uniform_(-1, 1)
    return net.state_dict()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    sd, ema = draw(1), draw(2)
    ck = {"params": sd, "params_ema": ema}
    torch.save(ck, os.path.join(out, "basicsr.pth"))
    torch.save(ck, os.path.join(out, "basicsr_legacy.pth"), _use_new_zipfile_serialization=False)
    mm = {"generator." + k: v for k, v in sd.items()}
    mm.update({"generator_ema." + k: v for k, v in ema.items()})
    mm["discriminator.conv.weight"] = torch.ones(2, 3, 3, 3)
    mm["generator_ema.steps"] = torch.tensor(7, dtype=torch.int64)
    torch.save({"meta": {"epoch": 3, "iter": 1000}, "state_dict": mm},
               os.path.join(out, "mmagic.pth"))
    with open(os.path.join(out, "names.txt"), "w") as f:
        for k, v in sd.items():
            f.write("%s %d\n" % (k, v.numel()))
    torch.manual_seed(3)
    net_d = unet_d_ref.UNetD(3, 8, True)
    net_d.train()(torch.rand(1, 3, 32, 32))     # one power iteration: u, v off their init
    sd_d = net_d.state_dict()
    torch.save({"params": sd_d}, os.path.join(out, "net_d.pth"))
    with open(os.path.join(out, "net_d_names.txt"), "w") as f:
        for k, v in sd_d.items():
            f.write("%s %d\n" % (k, v.numel()))
    import gan_step_ref  # noqa: E402 (torchvision: only here)
    net_v = gan_step_ref.VGGStyleDiscriminator(3, 8, 128)
    net_v.train()(torch.rand(2, 3, 128, 128))   # running statistics off their init
    sd_v = net_v.state_dict()
    torch.save({"params": sd_v}, os.path.join(out, "net_d_vgg.pth"))
    with open(os.path.join(out, "net_d_vgg_names.txt"), "w") as f:
        for k, v in sd_v.items():
            f.write("%s %d\n" % (k, v.numel()))
    for name, d in (("params", sd), ("params_ema", ema), ("net_d", sd_d), ("net_d_vgg", sd_v)):
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            for v in d.values():
                f.write(np.ascontiguousarray(v.detach().numpy(), dtype="<f4").tobytes())


if __name__ == "__main__":
    main()
