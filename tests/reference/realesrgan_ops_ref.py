#!/usr/bin/python3
"""Reference for common/realesrgan_ops.h (Real-ESRGAN's resize and noise), run by
tests/test_realesrgan_ops.c `torch` (ctest test_realesrgan_ops.torch) on the folder it writes.

Resize: torch's F.interpolate on the same float input (NCHW), with scale_factor=(f, f) when the
line has factor > 0 (as BasicSR's first resize; recompute_scale_factor left unset, so the
coordinates use 1/f), else size=(out_h, out_w); mode area / bilinear / bicubic,
align_corners=False for the last two, no antialias. Noise, written from BasicSR's
generate_gaussian_noise_pt / generate_poisson_noise_pt formulas, given the C code's raw draws
(PixFlow's own random numbers, so the draws themselves are not torch's):
  gaussian  noise = z * sigma / 255 (z the draws; gray: one plane for R, G, B)
  poisson   x = the image (gray: 0.2989 R + 0.587 G + 0.114 B), q = clamp(round(x * 255), 0,
            255) / 255, vals = 2 ** ceil(log2(number of distinct q)) (torch.unique),
            noise = (k / vals - q) * scale, k the draws
  out = clamp(image + noise, 0, 1).
The folder holds params.txt, one line per case:
  I op=resize h=H w=W c=C out_h=.. out_w=.. factor=F mode=M
  I op=noise h=H w=W c=3 noise=gaussian|poisson gray=0|1 sigma=..|scale=..
and inI.f32 (H x W x C float32, HWC), outI.f32 (the C output), drawsI.f32 (noise: the draws,
H x W x 3 or H x W for gray). Checks: resize max abs diff <= 1e-4, noise <= 1e-5; Poisson
draws are whole numbers >= 0; every mode, both noise kinds, gray and colour occur.
Exit status 1 on any failure.
Run: /usr/bin/python3 tests/reference/realesrgan_ops_ref.py DIR
"""
import collections
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

from params_line import parse

RESIZE_TOL = 1e-4
NOISE_TOL = 1e-5


def load(folder, name, i, shape):
    a = np.fromfile(os.path.join(folder, "%s%03d.f32" % (name, i)), dtype=np.float32)
    return a.reshape(shape)


def nchw(a):
    return torch.from_numpy(a.copy()).permute(2, 0, 1).unsqueeze(0)


def resize(folder, rec):
    i, h, w, c = rec["index"], int(rec["h"]), int(rec["w"]), int(rec["c"])
    oh, ow, factor = int(rec["out_h"]), int(rec["out_w"]), float(rec["factor"])
    x = nchw(load(folder, "in", i, (h, w, c)))
    kw = {} if rec["mode"] == "area" else {"align_corners": False}
    if factor > 0:
        y = F.interpolate(x, scale_factor=(factor, factor), mode=rec["mode"], **kw)
    else:
        y = F.interpolate(x, size=(oh, ow), mode=rec["mode"], **kw)
    if tuple(y.shape[2:]) != (oh, ow):
        return 0.0, "size %s, torch %s" % ((oh, ow), tuple(y.shape[2:]))
    ref = y[0].permute(1, 2, 0).numpy()
    diff = float(np.abs(ref - load(folder, "out", i, (oh, ow, c))).max())
    return diff, None if diff <= RESIZE_TOL else "max diff %g" % diff


def poisson_noise(x, k):
    """BasicSR's Poisson noise for x (1, C, H, W) given the counts k of the same shape."""
    q = torch.clamp((x * 255.0).round(), 0, 255) / 255.0
    vals = 2 ** math.ceil(math.log2(len(torch.unique(q))))
    return k / vals - q


def noise(folder, rec):
    i, h, w = rec["index"], int(rec["h"]), int(rec["w"])
    img = nchw(load(folder, "in", i, (h, w, 3)))
    gray = rec["gray"] == "1"
    draws = nchw(load(folder, "draws", i, (h, w, 1 if gray else 3)))
    if rec["noise"] == "gaussian":
        n = draws * torch.tensor(float(rec["sigma"]), dtype=torch.float32) / 255.0
    else:
        if not bool(torch.all((draws >= 0) & (draws == draws.round()))):
            return 0.0, "Poisson draws that are not counts"
        x = img
        if gray:
            r, g, b = img[:, 0:1], img[:, 1:2], img[:, 2:3]
            x = 0.2989 * r + 0.587 * g + 0.114 * b
        n = poisson_noise(x, draws) * torch.tensor(float(rec["scale"]), dtype=torch.float32)
    ref = torch.clamp(img + n.expand(1, 3, h, w), 0, 1)[0].permute(1, 2, 0).numpy()
    diff = float(np.abs(ref - load(folder, "out", i, (h, w, 3))).max())
    return diff, None if diff <= NOISE_TOL else "max diff %g" % diff


def main():
    folder = sys.argv[1]
    failures, seen = 0, collections.Counter()
    worst = collections.defaultdict(float)
    with open(os.path.join(folder, "params.txt")) as f:
        recs = [parse(line) for line in f if line.strip()]
    for rec in recs:
        if rec["op"] == "resize":
            seen[rec["mode"] + (" factor" if float(rec["factor"]) > 0 else " size")] += 1
            diff, msg = resize(folder, rec)
        else:
            seen["%s gray=%s" % (rec["noise"], rec["gray"])] += 1
            diff, msg = noise(folder, rec)
        worst[rec["op"]] = max(worst[rec["op"]], diff)
        if msg:
            failures += 1
            print("case %d (%s): %s" % (rec["index"], " ".join(
                "%s=%s" % kv for kv in rec.items() if kv[0] != "index"), msg))
    want = ["%s %s" % (m, s) for m in ("area", "bilinear", "bicubic") for s in ("factor", "size")]
    want += ["%s gray=%d" % (n, g) for n in ("gaussian", "poisson") for g in (0, 1)]
    for key in want:
        if seen[key] == 0:
            failures += 1
            print("no case of %s" % key)
    print("realesrgan_ops_ref: %d cases (%s); max diff resize %.3g, noise %.3g; %d failed" % (
        len(recs), ", ".join("%s: %d" % kv for kv in sorted(seen.items())), worst["resize"],
        worst["noise"], failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
