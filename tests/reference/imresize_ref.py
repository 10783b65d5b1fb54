#!/usr/bin/python3
"""Reference for MATLAB's imresize(A, scale, 'bicubic') (antialiasing on), written from
MATLAB's imresize.m algorithm, and the test data for tests/test_imresize.c.

The algorithm, per dimension (MATLAB contributions()):
  kernel_width = 4, or 4 / scale when scale < 1 (antialiasing stretches the kernel);
  for output x = 1..out_len: u = x / scale + 0.5 * (1 - 1 / scale);
  left = floor(u - kernel_width / 2); P = ceil(kernel_width) + 2 candidate input indices
  left + 0..P-1; weight = h(u - index), h = cubic, or scale * cubic(scale * .) when shrinking;
  each row normalised to sum 1; indices mirrored through aux = [1:n, n:-1:1] (period 2n);
  all-zero weight columns are removed.
Each dimension is applied as a (out_len x in_len) matrix, rows first (MATLAB orders dims by
scale; with one scale for both it keeps rows first). For uint8 input MATLAB's imresizemex
returns uint8 after EACH dimension (round half away from zero, saturate) — so the reference
rounds between the passes too. A float version (no rounding, float32 between passes like
MATLAB on single) is written for pf_imresize_f32.

Outputs (tests/data/imresize/): input.u8 (H x W x 3 uint8, HWC), tiny.u8, and for each case
NAME.u8 (and NAME.f32, of INPUT / 255, except for the larger up* outputs), listed in cases.txt
as "NAME INPUT H W NUM DEN OUT_H OUT_W"
(scale = NUM / DEN, computed in double the same way by the C test).
Run: /usr/bin/python3 tests/reference/imresize_ref.py
"""
import math
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "imresize")


def cubic(x):
    """Keys (1981) cubic convolution kernel, a = -0.5."""
    ax = np.abs(x)
    ax2, ax3 = ax * ax, ax * ax * ax
    return ((1.5 * ax3 - 2.5 * ax2 + 1) * (ax <= 1) +
            (-0.5 * ax3 + 2.5 * ax2 - 4 * ax + 2) * ((ax > 1) & (ax <= 2)))


def resize_matrix(n, scale):
    """The (out_len x n) matrix MATLAB's weights/indices amount to for one dimension."""
    out_len = math.ceil(n * scale)
    width = 4.0 / scale if scale < 1 else 4.0
    x = np.arange(1, out_len + 1, dtype=np.float64)
    u = x / scale + 0.5 * (1 - 1 / scale)
    left = np.floor(u - width / 2)
    p = int(math.ceil(width)) + 2
    idx = left[:, None] + np.arange(p)[None, :]
    d = u[:, None] - idx
    w = scale * cubic(scale * d) if scale < 1 else cubic(d)
    w = w / w.sum(axis=1, keepdims=True)
    aux = np.concatenate([np.arange(n), np.arange(n)[::-1]])
    idx = aux[np.mod(idx.astype(np.int64) - 1, 2 * n)]
    keep = np.any(w != 0, axis=0)                      # MATLAB drops all-zero columns
    w, idx = w[:, keep], idx[:, keep]
    m = np.zeros((out_len, n))
    for r in range(out_len):
        for c in range(w.shape[1]):
            m[r, idx[r, c]] += w[r, c]                 # mirrored taps may land twice
    return m


def matlab_round_u8(v):
    return np.clip(np.floor(v + 0.5), 0, 255).astype(np.uint8)


def imresize_u8(img, scale):
    h, w, _ = img.shape
    mh, mw = resize_matrix(h, scale), resize_matrix(w, scale)
    mid = matlab_round_u8(np.einsum("oh,hwc->owc", mh, img.astype(np.float64)))
    return matlab_round_u8(np.einsum("ow,hwc->hoc", mw, mid.astype(np.float64)))


def imresize_f32(img, scale):
    h, w, _ = img.shape
    mh, mw = resize_matrix(h, scale), resize_matrix(w, scale)
    mid = np.einsum("oh,hwc->owc", mh, img.astype(np.float64)).astype(np.float32)
    return np.einsum("ow,hwc->hoc", mw, mid.astype(np.float64)).astype(np.float32)


def test_image(h, w, seed):
    """Smooth gradients, a hard-edged square (ringing overshoots, clipping) and noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([255 * x / (w - 1), 128 + 100 * np.sin(y / 3.0), 255 * (x + y) / (h + w)],
                   axis=2)
    img[h // 4: h // 2, w // 3: 2 * w // 3] = [255, 0, 255]
    img += rng.normal(0, 12, size=img.shape)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def main():
    os.makedirs(OUT, exist_ok=True)
    inputs = {"input": test_image(37, 29, 7), "tiny": test_image(5, 3, 8)}
    for name, img in inputs.items():
        img.tofile(os.path.join(OUT, name + ".u8"))
    cases = [("down2", "input", 1, 2), ("down3", "input", 1, 3), ("down4", "input", 1, 4),
             ("up2", "input", 2, 1), ("up3", "input", 3, 1), ("down075", "input", 3, 4),
             ("tiny_down4", "tiny", 1, 4), ("tiny_up2", "tiny", 2, 1)]
    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("# NAME INPUT H W NUM DEN OUT_H OUT_W: NAME.u8 = imresize(INPUT.u8, NUM/DEN)\n")
        for name, src, num, den in cases:
            img = inputs[src]
            out = imresize_u8(img, num / den)
            out.tofile(os.path.join(OUT, name + ".u8"))
            if not name.startswith("up"):              # keep the committed data small
                imresize_f32(img.astype(np.float32) / 255, num / den).tofile(
                    os.path.join(OUT, name + ".f32"))
            f.write("%s %s %d %d %d %d %d %d\n" % (name, src, img.shape[0], img.shape[1], num,
                                                  den, out.shape[0], out.shape[1]))
            # how much the single-rounding (BasicSR float) variant differs, for docs/tests
            once = matlab_round_u8(imresize_f32(img.astype(np.float32), num / den))
            diff = np.abs(once.astype(int) - out.astype(int))
            print("%-10s %s -> %s; rounding once instead: %d of %d values differ (max %d)" %
                  (name, img.shape[:2], out.shape[:2], (diff > 0).sum(), diff.size, diff.max()))


if __name__ == "__main__":
    main()
