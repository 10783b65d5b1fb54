#!/usr/bin/python3
"""Reference for BatchNorm2d and Linear on the CPU executor (nn/net.h PF_G_BATCHNORM,
PF_G_LINEAR), run by tests/test_bn_linear.c `torch` (ctest test_bn_linear.torch) on the
folder it writes.

The network of test_bn_linear.c as torch.nn modules (PyTorch's own BatchNorm2d, not BasicSR's
code), in float64, x: N x H x W x 3 (NHWC, as the C side takes it):
  conv0_0 = Conv2d(3, C0, 3, 1, 1, bias=True), LeakyReLU(slope)
  conv0_1 = Conv2d(C0, C1, 4, 2, 1, bias=False)
  bn0_1   = BatchNorm2d(C1) (eps 1e-5, momentum 0.1), LeakyReLU(slope)
  linear1 = Linear(C1 * H/2 * W/2, F2) on x.view(N, -1), LeakyReLU(slope)
  linear2 = Linear(F2, 1)
  L = sum(a * out)
Two training forwards (train(): batch statistics, running statistics updated) on x1 then x2,
each followed by autograd's backward of L (gradients zeroed between), then an eval() forward of
x2 (running statistics). The folder holds params.txt (`N H W C0 C1 F2 slope`, then one layout
name a line), x1.f32, x2.f32, a.f32, params.f32 (the flat parameters in state_dict order:
conv0_0.weight, conv0_0.bias, conv0_1.weight, bn0_1.weight, bn0_1.bias, linear1.weight,
linear1.bias, linear2.weight, linear2.bias) and per layout L, step K (1, 2): L.outK.f32,
L.gradsK.f32 (the flat gradients, checked tensor by tensor), L.dxK.f32 (d L / d x, NHWC), L.runningK.f32 (running_mean
then running_var), and L.eval.f32. Every array within 1e-5 of the largest reference value of
its kind. Exit status 1 on any failure.
Run: /usr/bin/python3 tests/reference/bn_linear_ref.py DIR
"""
import os
import sys

import numpy as np
import torch
from torch import nn

TOL = 1e-5


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "params.txt")) as f:
        head, *layouts = [line.split() for line in f if line.strip()]
    n, h, w, c0, c1, f2 = (int(v) for v in head[:6])
    slope = float(head[6])

    def load(name, shape=None):
        a = np.fromfile(os.path.join(folder, name), dtype=np.float32).astype(np.float64)
        return torch.from_numpy(a if shape is None else a.reshape(shape))

    net = nn.ModuleDict({
        "conv0_0": nn.Conv2d(3, c0, 3, 1, 1, bias=True),
        "conv0_1": nn.Conv2d(c0, c1, 4, 2, 1, bias=False),
        "bn0_1": nn.BatchNorm2d(c1),
        "linear1": nn.Linear(c1 * (h // 2) * (w // 2), f2),
        "linear2": nn.Linear(f2, 1),
    }).double()
    act = nn.LeakyReLU(slope)
    params = [p for name, p in net.named_parameters()]
    flat = load("params.f32")
    off = 0
    with torch.no_grad():
        for p in params:
            p.copy_(flat[off:off + p.numel()].reshape(p.shape))
            off += p.numel()
    if off != flat.numel():
        sys.exit("bn_linear_ref: %d parameters, the C side wrote %d" % (off, flat.numel()))
    a = load("a.f32", (n, 1))

    def forward(x):
        y = act(net["conv0_0"](x.permute(0, 3, 1, 2)))
        y = act(net["bn0_1"](net["conv0_1"](y)))
        y = act(net["linear1"](y.reshape(n, -1)))
        return net["linear2"](y)

    bn = net["bn0_1"]
    want = {}
    net.train()
    for k in (1, 2):
        x = load("x%d.f32" % k, (n, h, w, 3)).clone().requires_grad_()
        for p in params:
            p.grad = None
        out = forward(x)
        (a * out).sum().backward()
        want["out%d" % k] = out.detach().reshape(-1)
        want["grads%d" % k] = torch.cat([p.grad.reshape(-1) for p in params])
        want["dx%d" % k] = x.grad.reshape(-1)
        want["running%d" % k] = torch.cat([bn.running_mean, bn.running_var]).detach().clone()
        if int(bn.num_batches_tracked) != k:
            sys.exit("bn_linear_ref: num_batches_tracked %d" % int(bn.num_batches_tracked))
    net.eval()
    with torch.no_grad():
        want["eval"] = forward(load("x2.f32", (n, h, w, 3))).reshape(-1)

    # the flat gradients are compared tensor by tensor, each against its own largest value
    names = [name for name, _ in net.named_parameters()]
    bounds = np.cumsum([0] + [p.numel() for p in params])
    bad = 0
    for layout in (l[0] for l in layouts):
        for key, ref in want.items():
            got, ref = load("%s.%s.f32" % (layout, key)).numpy(), ref.numpy()
            parts = [(key, 0, ref.size)]
            if key.startswith("grads"):
                parts = [("%s %s" % (key, names[i]), bounds[i], bounds[i + 1])
                         for i in range(len(names))]
            for label, lo, hi in parts:
                scale = max(np.abs(ref[lo:hi]).max(), 1e-30)
                err = np.abs(got[lo:hi] - ref[lo:hi]).max() / scale
                ok = err <= TOL
                bad += not ok
                print("%-8s %-24s rel err %.3g%s" % (layout, label, err, "" if ok else "  FAIL"))
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
