#!/usr/bin/python3
"""Reference for a model of a hand-built description with taps and the input gradient
(nn/model.h pf_model_new_net, pf_model_read, pf_model_backward_from), run by
tests/test_model_taps.c `torch` (ctest test_model_taps.torch) on the folder it writes.

The network of test_model_taps.c, in torch.nn.functional (PyTorch's own ops), in float64:
  h     = (x - mean) * 2.5           x: N x H x W x 3 (NHWC, as the C side takes it)
  tap0  = relu(conv2d(h, conv1.weight, conv1.bias, padding=1))        3 -> 8, k 3
  tap1  = conv2d(tap0, down.weight, None, stride=2, padding=1)         8 -> 8, k 4
  out   = conv2d(max_pool2d(tap1, 2), last.weight, last.bias, padding=1)   8 -> 1, k 3
  L     = sum(a * out) + sum(b0 * tap0) + sum(b1 * tap1)
and autograd's gradients of L with respect to every parameter and to x.
The folder holds params.txt (`N H W C1 mean0 mean1 mean2 range` on the first line, then one
layout name a line), x.f32, params.f32 (the flat parameters in the table's order:
conv1.weight, conv1.bias, down.weight, last.weight, last.bias), a.f32, b0.f32, b1.f32, and
per layout L: L.out.f32, L.tap0.f32, L.tap1.f32 (NCHW, what pf_model_read gave), L.grads.f32
(the flat parameter gradients), L.dx.f32 (NHWC). Checks, each relative to the largest
reference value: forward values within 1e-5, gradients within 1e-4.
Exit status 1 on any failure.
Run: /usr/bin/python3 tests/reference/model_taps_ref.py DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

FWD_TOL = 1e-5
GRAD_TOL = 1e-4


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "params.txt")) as f:
        head, *layouts = [line.split() for line in f if line.strip()]
    n, h, w, c1 = (int(v) for v in head[:4])
    mean = torch.tensor([float(v) for v in head[4:7]], dtype=torch.float64)
    rng = float(head[7])

    def load(name, shape=None):
        a = np.fromfile(os.path.join(folder, name), dtype=np.float32).astype(np.float64)
        return torch.from_numpy(a if shape is None else a.reshape(shape))

    shapes = [("conv1.weight", (c1, 3, 3, 3)), ("conv1.bias", (c1,)),
              ("down.weight", (c1, c1, 4, 4)), ("last.weight", (1, c1, 3, 3)),
              ("last.bias", (1,))]
    flat = load("params.f32")
    params, off = {}, 0
    for name, shape in shapes:
        size = int(np.prod(shape))
        params[name] = flat[off:off + size].reshape(shape).clone().requires_grad_()
        off += size
    if off != flat.numel():
        sys.exit("model_taps_ref: %d parameters, the C side wrote %d" % (off, flat.numel()))
    x = load("x.f32", (n, h, w, 3)).clone().requires_grad_()
    hin = (x - mean) * rng
    tap0 = F.relu(F.conv2d(hin.permute(0, 3, 1, 2), params["conv1.weight"],
                           params["conv1.bias"], padding=1))
    tap1 = F.conv2d(tap0, params["down.weight"], None, stride=2, padding=1)
    out = F.conv2d(F.max_pool2d(tap1, 2), params["last.weight"], params["last.bias"],
                   padding=1)
    a, b0, b1 = (load(s + ".f32", t.shape) for s, t in (("a", out), ("b0", tap0),
                                                          ("b1", tap1)))
    loss = (a * out).sum() + (b0 * tap0).sum() + (b1 * tap1).sum()
    loss.backward()
    grads = torch.cat([params[name].grad.reshape(-1) for name, _ in shapes])
    want = {"out": out.detach(), "tap0": tap0.detach(), "tap1": tap1.detach(),
            "grads": grads, "dx": x.grad}
    bad = 0
    for (layout,) in layouts:
        worst = []
        for key, ref in want.items():
            got = load("%s.%s.f32" % (layout, key), ref.shape)
            err = float((got - ref).abs().max() / max(float(ref.abs().max()), 1e-30))
            tol = GRAD_TOL if key in ("grads", "dx") else FWD_TOL
            worst.append("%s %.2g" % (key, err))
            if not err <= tol:
                bad += 1
                print("model_taps_ref: %s: %s differs by %.3g (tolerance %g)"
                      % (layout, key, err, tol))
        print("model_taps_ref: %s: %s" % (layout, ", ".join(worst)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
