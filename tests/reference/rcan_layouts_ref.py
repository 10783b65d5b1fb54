#!/usr/bin/python3
"""rcan_layouts_ref — PyTorch float64 reference for tests/test_rcan_layouts.c (torch mode).

For each case folder entry caseK.txt written by the C test (line 1: "n_feats squeeze_factor
scale n h w res_scale img_range mean0 mean1 mean2 num_group n_blocks"; then one line per
parameter tensor "NAME NUMEL D0 D1 ...", in the order of caseK_params.bin, raw float32),
caseK_lq.bin and caseK_gt.bin (uint8 NHWC), builds BasicSR's RCAN (zoo_archs.RCAN, the same
state_dict names), loads the weights in float64, runs x = lq / 255 through it and the MSE loss
against gt / 255, and writes caseK_ref.bin (float32): the loss, the output (NHWC), then every
parameter's gradient in the manifest's order.

Usage: /usr/bin/python3 tests/reference/rcan_layouts_ref.py DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_archs import RCAN  # noqa: E402


def run_case(d, k):
    with open(os.path.join(d, "case%d.txt" % k)) as f:
        lines = f.read().split("\n")
    head = lines[0].split()
    nf, sq, scale, n, h, w = (int(v) for v in head[:6])
    res_scale, img_range = float(head[6]), float(head[7])
    mean = tuple(float(v) for v in head[8:11])
    num_group, n_blocks = int(head[11]), int(head[12])
    net = RCAN(3, 3, nf, num_group, n_blocks, sq, scale, res_scale, img_range, mean).double()
    flat = np.fromfile(os.path.join(d, "case%d_params.bin" % k), dtype=np.float32)
    params = dict(net.named_parameters())
    names, at = [], 0
    for ln in lines[1:]:
        if not ln.strip():
            continue
        parts = ln.split()
        name, numel, shape = parts[0], int(parts[1]), [int(v) for v in parts[2:]]
        if name not in params:
            raise SystemExit("rcan_layouts_ref: %s is not a parameter of RCAN" % name)
        p = params[name]
        if list(p.shape) != shape:
            raise SystemExit("rcan_layouts_ref: %s: shape %s, torch %s" % (name, shape,
                                                                          list(p.shape)))
        with torch.no_grad():
            p.copy_(torch.from_numpy(flat[at:at + numel].astype(np.float64)).view(p.shape))
        at += numel
        names.append(name)
    if at != flat.size or len(names) != len(params):
        raise SystemExit("rcan_layouts_ref: case %d: %d of %d floats, %d of %d tensors"
                         % (k, at, flat.size, len(names), len(params)))
    lq = np.fromfile(os.path.join(d, "case%d_lq.bin" % k), dtype=np.uint8)
    gt = np.fromfile(os.path.join(d, "case%d_gt.bin" % k), dtype=np.uint8)
    x = torch.from_numpy(lq.astype(np.float64)).view(n, h, w, 3).permute(0, 3, 1, 2) / 255.0
    y = torch.from_numpy(gt.astype(np.float64)).view(n, h * scale, w * scale, 3)
    y = y.permute(0, 3, 1, 2) / 255.0
    out = net(x)
    loss = F.mse_loss(out, y)
    loss.backward()
    parts = [np.array([loss.item()]), out.detach().permute(0, 2, 3, 1).reshape(-1).numpy()]
    parts += [params[nm].grad.reshape(-1).numpy() for nm in names]
    np.concatenate(parts).astype(np.float32).tofile(os.path.join(d, "case%d_ref.bin" % k))


def main():
    d = sys.argv[1]
    torch.set_num_threads(1)
    k = 0
    while os.path.exists(os.path.join(d, "case%d.txt" % k)):
        run_case(d, k)
        k += 1
    print("rcan_layouts_ref: %d cases" % k)


if __name__ == "__main__":
    main()
