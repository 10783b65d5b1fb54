#!/usr/bin/python3
"""smoke_data — a tiny data set for the benchmarks' --smoke runs (ctest bench_smoke.*), so they
need neither data/demo nor minutes: OUT/train/ 4 RGB PNGs of 256 x 240 (room for a GT patch of
224) and OUT/val/ 2 of 96 x 80, smooth patterns with some noise, fixed seed. numpy + PIL.

usage: /usr/bin/python3 bench/smoke_data.py OUT
"""
import os
import sys

import numpy as np
from PIL import Image


def picture(rng, w, h):
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    f = rng.uniform(0.03, 0.2, size=(3, 2))
    img = np.stack([128 + 90 * np.sin(f[c, 0] * x * (c + 1) + f[c, 1] * y) for c in range(3)], -1)
    img += rng.normal(0, 8, size=img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def main():
    out = sys.argv[1]
    rng = np.random.default_rng(0)
    for sub, n, w, h in (("train", 4, 256, 240), ("val", 2, 96, 80)):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
        for i in range(n):
            Image.fromarray(picture(rng, w, h)).save(os.path.join(out, sub, "img%02d.png" % i))


if __name__ == "__main__":
    main()
