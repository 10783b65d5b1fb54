#!/usr/bin/python3
"""Reference for UNetDiscriminatorSN (nn/discriminator.h), run by tests/test_discriminator.c
`torch` (ctest test_discriminator.torch), which builds the network with
pf_net_build_unet_discriminator_sn, runs it on the CPU executor with the weights and u / v
vectors written here, and compares.

The network is written here from Real-ESRGAN's description (not BasicSR's code): plain
torch.nn.Conv2d layers, the SN ones wrapped by torch.nn.utils.spectral_norm (its defaults:
one power iteration per training forward, eps 1e-12), F.leaky_relu(0.2), bilinear x2 by
F.interpolate(scale_factor=2, align_corners=False), skip adds after the activation. Weights and
u / v are torch's own init after torch.manual_seed; biases are redrawn N(0, 0.1) so they are
not near zero. One training-mode forward of x (N x 3 x H x W in [0, 1]): the pre-hooks run one
power iteration each; loss = sum(out * gout) with gout drawn N(0, 1); autograd's gradient of
every parameter (weight_orig for the SN convs).

DIR/unet_d.safetensors (tests/reference/st_io.py):
  x           N x 3 x H x W, the input
  gout, out   N x 1 x H x W
  every state_dict entry before the forward, under its name (NAME.weight_orig, NAME.weight_u,
              NAME.weight_v for the SN convs; conv0 / conv9 .weight and .bias)
  after.NAME.weight_u, after.NAME.weight_v   the vectors after the forward's power iteration
  grad.NAME   d loss / d parameter NAME
metadata: num_feat, skip_connection, state_dict (the keys in torch's order, comma-separated).
Exit status 1 if torch breaks an assumption (state_dict keys of a spectral_norm conv).
Run: /usr/bin/python3 tests/reference/unet_d_ref.py DIR [NUM_FEAT [SKIP]]
"""
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import spectral_norm

import st_io

N, H, W = 2, 32, 32


class UNetD(nn.Module):
    """conv0 (bias) - conv1..3 (4x4 s2 SN) - up + conv4..6 (3x3 SN) with skips - conv7, conv8
    (3x3 SN) - conv9 (bias, 1 channel)."""

    def __init__(self, in_ch, feat, skip):
        super().__init__()
        self.skip = skip
        chans = [(in_ch, feat), (feat, 2 * feat), (2 * feat, 4 * feat), (4 * feat, 8 * feat),
                 (8 * feat, 4 * feat), (4 * feat, 2 * feat), (2 * feat, feat), (feat, feat),
                 (feat, feat), (feat, 1)]
        for i, (ic, oc) in enumerate(chans):
            down = 1 <= i <= 3
            sn = 1 <= i <= 8
            conv = nn.Conv2d(ic, oc, 4 if down else 3, 2 if down else 1, 1, bias=not sn)
            setattr(self, "conv%d" % i, spectral_norm(conv) if sn else conv)

    def forward(self, x):
        def act(t):
            return F.leaky_relu(t, 0.2)

        def up(t):
            return F.interpolate(t, scale_factor=2, mode="bilinear", align_corners=False)

        x0 = act(self.conv0(x))
        x1 = act(self.conv1(x0))
        x2 = act(self.conv2(x1))
        x3 = act(self.conv3(x2))
        y = act(self.conv4(up(x3)))
        y = y + x2 if self.skip else y
        y = act(self.conv5(up(y)))
        y = y + x1 if self.skip else y
        y = act(self.conv6(up(y)))
        y = y + x0 if self.skip else y
        y = act(self.conv7(y))
        y = act(self.conv8(y))
        return self.conv9(y)


def main():
    folder = sys.argv[1]
    feat = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    skip = bool(int(sys.argv[3])) if len(sys.argv) > 3 else True
    torch.manual_seed(41)
    net = UNetD(3, feat, skip)
    keys = list(net.state_dict().keys())
    if keys[2:5] != ["conv1.weight_orig", "conv1.weight_u", "conv1.weight_v"]:
        sys.exit("unet_d_ref: state_dict keys %s" % keys[:6])
    with torch.no_grad():
        net.conv0.bias.normal_(0, 0.1)
        net.conv9.bias.normal_(0, 0.1)
    before = [(k, v.clone()) for k, v in net.state_dict().items()]
    x = torch.rand(N, 3, H, W)
    net.train()
    out = net(x)
    gout = torch.randn(out.shape)
    (out * gout).sum().backward()
    tensors = [("x", x), ("gout", gout), ("out", out.detach())] + before
    for k, v in net.state_dict().items():
        if k.endswith("weight_u") or k.endswith("weight_v"):
            tensors.append(("after." + k, v.clone()))
    for k, p in net.named_parameters():
        tensors.append(("grad." + k, p.grad))
    path = os.path.join(folder, "unet_d.safetensors")
    st_io.write(path, tensors, {"source": "tests/reference/unet_d_ref.py",
                                "torch": torch.__version__, "num_feat": str(feat),
                                "skip_connection": str(int(skip)),
                                "state_dict": ",".join(keys)})
    print("unet_d_ref: wrote %s (num_feat %d, skip %d, output %s)"
          % (path, feat, skip, tuple(out.shape)))


if __name__ == "__main__":
    main()
