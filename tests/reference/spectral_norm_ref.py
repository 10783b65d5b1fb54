#!/usr/bin/python3
"""Reference for nn/spectral_norm.h, run by tests/test_spectral_norm.c `torch` (ctest
test_spectral_norm.torch), which then compares PixFlow's numbers with the files written here.

For each case, an nn.Conv2d (no bias, as BasicSR's UNetDiscriminatorSN) wrapped by
torch.nn.utils.spectral_norm (defaults: dim 0, one power iteration, eps 1e-12) after
torch.manual_seed(seed), so weight_orig, weight_u and weight_v are torch's own init. Then three
training steps: forward on a fixed input (the forward pre-hook runs one power iteration and
sets conv.weight), loss = sum(conv(x) * r) with r drawn per step, and autograd's gradients of
the loss with respect to conv.weight (the upstream gradient PixFlow is given) and
conv.weight_orig (what PixFlow must give back); between steps weight_orig moves by 0.05 N(0, 1)
as an optimiser would move it. Finally the module in eval mode: one forward and backward,
which must not touch weight_u and weight_v (checked here too).

DIR/caseI.safetensors (tests/reference/st_io.py; metadata out_channels, in_channels, kernel,
steps) holds conv.weight_orig, conv.weight_u, conv.weight_v (the initial state, state_dict
names), and for each step S in 0 1 2 and for `eval`:
  S.weight_orig  the weight_orig the step starts from (O x I x K x K)
  S.d_weight     d loss / d weight, the upstream gradient
  S.weight_u, S.weight_v   the state after the step's forward
  S.weight       the normalised weight weight_orig / sigma
  S.d_weight_orig  d loss / d weight_orig
Exit status 1 if torch itself breaks an assumption (state_dict keys, eval changing u).
Run: /usr/bin/python3 tests/reference/spectral_norm_ref.py DIR
"""
import os
import sys

import torch
from torch.nn.utils import spectral_norm

import st_io

# (out_channels, in_channels, kernel, stride, seed): a 3x3 conv, a 4x4 stride-2 conv as
# UNetDiscriminatorSN's downsampling ones, and one with more rows (O) than columns (I K K).
CASES = [(6, 4, 3, 1, 0), (8, 3, 4, 2, 1), (32, 2, 1, 1, 2)]
STEPS = 3


def step(conv, x, tensors, tag):
    """One forward and backward of conv (its mode as set); appends tag's tensors."""
    weight_orig = conv.weight_orig.detach().clone()
    y = conv(x)
    r = torch.randn_like(y)
    d_weight, d_weight_orig = torch.autograd.grad((y * r).sum(), [conv.weight, conv.weight_orig])
    tensors += [(tag + ".weight_orig", weight_orig), (tag + ".d_weight", d_weight),
                (tag + ".weight_u", conv.weight_u.clone()),
                (tag + ".weight_v", conv.weight_v.clone()),
                (tag + ".weight", conv.weight.detach().clone()),
                (tag + ".d_weight_orig", d_weight_orig)]


def make_case(out_ch, in_ch, kernel, stride, seed):
    torch.manual_seed(seed)
    conv = spectral_norm(torch.nn.Conv2d(in_ch, out_ch, kernel, stride, kernel // 2, bias=False))
    keys = list(conv.state_dict().keys())
    if keys != ["weight_orig", "weight_u", "weight_v"]:
        sys.exit("spectral_norm_ref: state_dict keys %s" % keys)
    tensors = [("conv." + k, v.clone()) for k, v in conv.state_dict().items()]
    x = torch.randn(2, in_ch, 9, 9)
    conv.train()
    for s in range(STEPS):
        step(conv, x, tensors, str(s))
        with torch.no_grad():
            conv.weight_orig.add_(0.05 * torch.randn_like(conv.weight_orig))
    u, v = conv.weight_u.clone(), conv.weight_v.clone()
    conv.eval()
    step(conv, x, tensors, "eval")
    if not (torch.equal(u, conv.weight_u) and torch.equal(v, conv.weight_v)):
        sys.exit("spectral_norm_ref: eval changed weight_u or weight_v")
    return tensors


def main():
    folder = sys.argv[1]
    for i, (out_ch, in_ch, kernel, stride, seed) in enumerate(CASES):
        meta = {"out_channels": str(out_ch), "in_channels": str(in_ch), "kernel": str(kernel),
                "steps": str(STEPS)}
        st_io.write(os.path.join(folder, "case%d.safetensors" % i),
                    make_case(out_ch, in_ch, kernel, stride, seed), meta)
    print("spectral_norm_ref: %d cases written to %s" % (len(CASES), folder))


if __name__ == "__main__":
    main()
