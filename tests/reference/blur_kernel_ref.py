#!/usr/bin/python3
"""Reference for common/blur_kernel.h (Real-ESRGAN's blur kernels and their filtering), run by
tests/test_blur_kernel.c `torch` (ctest test_blur_kernel.torch) on the folder it writes.

Written from the Real-ESRGAN paper (Wang et al., ICCVW 2021, sections 3.1 and 3.3) and the
formulas of BasicSR's basicsr/data/degradations.py, in numpy's matrix form rather than the C code's
closed form: the covariance S = R diag(sigma_x^2, sigma_y^2) R^T, R = [[cos, -sin],
[sin, cos]], its inverse by np.linalg.inv, q = v S^-1 v^T over the grid v = (x, y) of column
and row offsets from the centre; Gaussian exp(-q/2), generalized exp(-q^beta/2), plateau
1/(1 + q^beta); sinc omega J1(omega r)/(2 pi r) with scipy.special.j1 and omega^2/(4 pi) at
the centre; each normalised to sum 1, then zero-padded to pad_to. Filtering: torch's
F.pad(mode='reflect') by pad_to // 2 and F.conv2d per channel (BasicSR's filter2D).

The folder holds params.txt, one line per sample:
  I stage=S pad_to=N h=H w=W c=C input=u8|f32 family=NAME kernel_size=K [sigma=..|sigma_x=..
  sigma_y=.. rotation=..] [beta=..] [omega_c=..]
(family=asymmetric: a random kernel, filtering only), kI.f32 (the C kernel, N x N float32),
inI.bin (H x W x C uint8 or float32, HWC) and outI.f32 (the C filter's output, float32 HWC).
Checks: max |C kernel - numpy kernel| <= 1e-6, max |C output - torch output| <= 1e-3 (the
uint8 inputs on the 0..255 scale, the float ones in [0, 1)), and that every kind, sinc and
pulse occur at least 5 times each. Exit status 1 on any failure.
Run: /usr/bin/python3 tests/reference/blur_kernel_ref.py DIR
"""
import collections
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from scipy import special

from params_line import parse

KERNEL_TOL = 1e-6
FILTER_TOL = 1e-3
MIN_PER_KIND = 5
GAUSSIAN_LIKE = ("iso", "aniso", "generalized_iso", "generalized_aniso", "plateau_iso",
                 "plateau_aniso")


def grid(k):
    """(k, k, 2) offsets (x = column, y = row) from the centre."""
    ax = np.arange(k, dtype=np.float64) - (k - 1) / 2
    xx, yy = np.meshgrid(ax, ax)
    return np.stack([xx, yy], axis=-1)


def quadratic_form(rec, k):
    fam = rec["family"]
    if fam.endswith("aniso"):
        sx, sy, th = float(rec["sigma_x"]), float(rec["sigma_y"]), float(rec["rotation"])
    else:
        sx = sy = float(rec["sigma"])
        th = 0.0
    rot = np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]])
    cov = rot @ np.diag([sx * sx, sy * sy]) @ rot.T
    inv = np.linalg.inv(cov)
    v = grid(k)
    return np.einsum("ijk,kl,ijl->ij", v, inv, v)


def reference_kernel(rec):
    fam, k = rec["family"], int(rec["kernel_size"])
    if fam == "pulse":
        ker = np.ones((1, 1))
    elif fam == "sinc":
        omega = float(rec["omega_c"])
        r = np.linalg.norm(grid(k), axis=-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            ker = omega * special.j1(omega * r) / (2 * np.pi * r)
        ker[k // 2, k // 2] = omega ** 2 / (4 * np.pi)
    elif fam in GAUSSIAN_LIKE:
        q = quadratic_form(rec, k)
        if fam.startswith("generalized"):
            ker = np.exp(-0.5 * q ** float(rec["beta"]))
        elif fam.startswith("plateau"):
            ker = 1.0 / (1.0 + q ** float(rec["beta"]))
        else:
            ker = np.exp(-0.5 * q)
    else:
        raise ValueError("unknown family %r" % fam)
    ker = ker / ker.sum()
    p = (int(rec["pad_to"]) - k) // 2
    return np.pad(ker, ((p, p), (p, p)))


def torch_filter(img, ker):
    """img (H, W, C) float32, ker (N, N) float32: BasicSR's filter2D on one image."""
    n = ker.shape[0]
    x = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))[:, None]  # (C,1,H,W)
    x = F.pad(x, (n // 2, n // 2, n // 2, n // 2), mode="reflect")
    y = F.conv2d(x, torch.from_numpy(ker)[None, None])
    return y[:, 0].numpy().transpose(1, 2, 0)


def check_sample(folder, rec, seen):
    i, n = rec["index"], int(rec["pad_to"])
    h, w, c = int(rec["h"]), int(rec["w"]), int(rec["c"])
    ck = np.fromfile(os.path.join(folder, "k%03d.f32" % i), dtype="<f4").reshape(n, n)
    errors, diff = [], 0.0
    if rec["family"] != "asymmetric":
        seen[rec["family"]] += 1
        diff = np.abs(ck.astype(np.float64) - reference_kernel(rec)).max()
        if not diff <= KERNEL_TOL:
            errors.append("kernel differs by %.3g" % diff)
    dtype = np.uint8 if rec["input"] == "u8" else "<f4"
    img = np.fromfile(os.path.join(folder, "in%03d.bin" % i), dtype=dtype).reshape(h, w, c)
    out = np.fromfile(os.path.join(folder, "out%03d.f32" % i), dtype="<f4").reshape(h, w, c)
    ref = torch_filter(img.astype(np.float32), ck)
    fdiff = np.abs(out.astype(np.float64) - ref).max()
    if not fdiff <= FILTER_TOL:
        errors.append("filtered image differs from torch by %.3g" % fdiff)
    return errors, diff, fdiff


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "params.txt")) as f:
        recs = [parse(line) for line in f if line.strip()]
    seen, failed, kmax, fmax = collections.Counter(), 0, 0.0, 0.0
    for rec in recs:
        errors, kdiff, fdiff = check_sample(folder, rec, seen)
        kmax, fmax = max(kmax, kdiff), max(fmax, fdiff)
        for e in errors:
            failed += 1
            print("blur_kernel_ref: sample %d (%s k=%s): %s" %
                  (rec["index"], rec["family"], rec["kernel_size"], e))
    few = [k for k in GAUSSIAN_LIKE + ("sinc", "pulse") if seen[k] < MIN_PER_KIND]
    if few:
        failed += 1
        print("blur_kernel_ref: fewer than %d samples of %s" % (MIN_PER_KIND, ", ".join(few)))
    print("blur_kernel_ref: %d samples (%s), %d failures; kernels differ by at most %.3g "
          "(tolerance %g), filtered images from torch's by %.3g (tolerance %g)" %
          (len(recs), ", ".join("%s %d" % kv for kv in sorted(seen.items())), failed, kmax,
           KERNEL_TOL, fmax, FILTER_TOL))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
