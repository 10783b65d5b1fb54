#!/usr/bin/python3
"""Reference for the modulated deformable convolution (nn/cpu/dcn.h, PF_G_DCN), run by
tests/test_dcn.c `torch` (ctest test_dcn.torch) on the folder it writes.

torchvision.ops.deform_conv2d(x, offset, weight, bias, stride, padding, dilation, mask) in
float64 (Debian's python3-torchvision; its CPU kernel, not MMCV's or BasicSR's code), then
autograd's backward of L = sum(a * out). params.txt holds one case a line: `n cin h w cout k
stride pad dil groups deform_groups bias`; caseK.{x, offset, mask, weight, bias, a}.f32 are its
inputs (NCHW, OIHW; the bias file is zeros when the case has none, and torch gets bias None
then) and caseK.L{0..3}.{out, dx, doff, dmask, dw, db}.f32 what PixFlow's layer gave in four
layout combinations of x, offset, mask and output. Every array within 1e-4 of the largest
reference value of its kind (the brief's "1e-4 relative"); exit status 1 on any failure.
Run: /usr/bin/python3 tests/reference/dcn_ref.py DIR
"""
import os
import sys

import numpy as np
import torch
from torchvision.ops import deform_conv2d

TOL = 1e-4
NAMES = ["out", "dx", "doff", "dmask", "dw", "db"]


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "params.txt")) as f:
        cases = [[int(v) for v in line.split()] for line in f if line.strip()]

    def load(name, shape):
        a = np.fromfile(os.path.join(folder, name), dtype=np.float32).astype(np.float64)
        return torch.from_numpy(a.reshape(shape))

    bad = 0
    for k, (n, cin, h, w, cout, ks, st, pad, dil, groups, dg, has_bias) in enumerate(cases):
        ho = (h + 2 * pad - dil * (ks - 1) - 1) // st + 1
        wo = (w + 2 * pad - dil * (ks - 1) - 1) // st + 1
        x = load(f"case{k}.x.f32", (n, cin, h, w)).requires_grad_()
        off = load(f"case{k}.offset.f32", (n, 2 * dg * ks * ks, ho, wo)).requires_grad_()
        mask = load(f"case{k}.mask.f32", (n, dg * ks * ks, ho, wo)).requires_grad_()
        weight = load(f"case{k}.weight.f32", (cout, cin // groups, ks, ks)).requires_grad_()
        bias = load(f"case{k}.bias.f32", (cout,)).requires_grad_() if has_bias else None
        a = load(f"case{k}.a.f32", (n, cout, ho, wo))
        out = deform_conv2d(x, off, weight, bias, stride=st, padding=pad, dilation=dil,
                            mask=mask)
        (out * a).sum().backward()
        want = [out.detach(), x.grad, off.grad, mask.grad, weight.grad,
                bias.grad if has_bias else None]
        for lay in range(4):
            worst = 0.0
            for name, ref in zip(NAMES, want):
                if ref is None:
                    continue
                got = load(f"case{k}.L{lay}.{name}.f32", tuple(ref.shape))
                scale = max(ref.abs().max().item(), 1e-30)
                err = (got - ref).abs().max().item() / scale
                worst = max(worst, err)
                if not err <= TOL:
                    bad += 1
                    print(f"dcn_ref: case {k} layouts {lay}: {name} off by {err:.3g} "
                          f"relative (max |ref| {scale:.3g})")
            print(f"dcn_ref: case {k} (n {n} cin {cin} {h}x{w} cout {cout} k {ks} stride {st} "
                  f"pad {pad} dil {dil} groups {groups} deform_groups {dg} bias {has_bias}) "
                  f"layouts {lay}: worst relative difference {worst:.3g}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
