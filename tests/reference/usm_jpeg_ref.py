#!/usr/bin/python3
"""Reference for common/realesrgan_ops.h's USM sharpening and JPEG stage, run by
tests/test_usm_jpeg.c `ref` (ctest test_usm_jpeg.ref) on the folder it writes.

USM, written from BasicSR's usm_sharp description (not its code): the 1-D Gaussian by OpenCV's
getGaussianKernel rule for ksize 51 and sigma 0 (sigma = 0.3 * ((51 - 1) * 0.5 - 1) + 0.8),
its outer product as a 51 x 51 kernel, the image padded by numpy's 'reflect' (= OpenCV's
BORDER_REFLECT_101, repeated where the image is smaller than the radius) and correlated in 2-D
with scipy.ndimage (not separably, unlike the C code), then in float32:
  residual = img - blur; mask = |residual| * 255 > 10; soft = blur of mask;
  out = soft * clip(img + 0.5 * residual, 0, 1) + (1 - soft) * img.
uint8 cases: in / 255, out rounded floor(v * 255 + 0.5) clamped. Checks: uint8 within 1 grey
level (the issue's bound); float within FLOAT_TOL grey levels (both sides sum in double and do
the rest in float32, so they agree to float rounding: 0 against scipy, 5e-5 against cv2; the
tighter bound catches a changed sigma, 8.05 instead of 8 moves the output by 0.26 levels). When cv2 (python3-opencv) imports,
the same steps with cv2.GaussianBlur((51, 51), 0) are checked too; the output says which ran.

JPEG: the float input clamped to [0, 1], rounded floor(v * 255f + 0.5f) in float32, saved by
PIL's Image.save(format='JPEG', quality=q) (its defaults: 4:2:0, no optimize): the C bytes must
be IDENTICAL; PIL's decode of them must equal the C output * 255 exactly.

The folder holds params.txt, one line per case:
  I kind=usm h=H w=W c=C    I.f32: input then output (float32 HWC); I.u8: input then output
  I kind=jpeg h=H w=W quality=Q   I.f32: input then output (H x W x 3 float32); I.jpg: bytes
Exit status 1 on any failure.
Run: /usr/bin/python3 tests/reference/usm_jpeg_ref.py DIR
"""
import io
import os
import sys

import numpy as np
import scipy.ndimage
from PIL import Image

from params_line import parse

KSIZE = 51
FLOAT_TOL = 0.01  # grey levels

try:
    import cv2
except ImportError:
    cv2 = None


def gaussian_2d():
    sigma = 0.3 * ((KSIZE - 1) * 0.5 - 1) + 0.8
    x = np.arange(KSIZE, dtype=np.float64) - (KSIZE - 1) * 0.5
    k = np.exp(-x * x / (2 * sigma * sigma))
    k /= k.sum()
    return np.outer(k, k)


def blur(img, k2):
    r = KSIZE // 2
    out = np.empty(img.shape, dtype=np.float64)
    for ch in range(img.shape[2]):
        p = np.pad(img[:, :, ch].astype(np.float64), r, mode="reflect")
        full = scipy.ndimage.correlate(p, k2, mode="constant")
        out[:, :, ch] = full[r:r + img.shape[0], r:r + img.shape[1]]
    return out.astype(np.float32)


def cv2_blur(img, _k2):
    out = cv2.GaussianBlur(img, (KSIZE, KSIZE), 0)
    return out.reshape(img.shape)


def usm(img, blur_fn, k2):
    img = img.astype(np.float32)
    residual = img - blur_fn(img, k2)
    mask = (np.abs(residual) * np.float32(255) > 10).astype(np.float32)
    soft = blur_fn(mask, k2)
    sharp = np.clip(img + np.float32(0.5) * residual, 0, 1)
    return soft * sharp + (1 - soft) * img


def check_usm(folder, rec, k2, blurs):
    i, h, w, c = rec["index"], int(rec["h"]), int(rec["w"]), int(rec["c"])
    n = h * w * c
    f = np.fromfile(os.path.join(folder, "%d.f32" % i), dtype=np.float32)
    u = np.fromfile(os.path.join(folder, "%d.u8" % i), dtype=np.uint8)
    fin, fout = f[:n].reshape(h, w, c), f[n:].reshape(h, w, c)
    uin, uout = u[:n].reshape(h, w, c), u[n:].reshape(h, w, c)
    ok = True
    for name, fn in blurs:
        ref = usm(fin, fn, k2)
        dmax = float(np.abs(ref - fout).max()) * 255
        uref = usm(uin.astype(np.float32) / np.float32(255), fn, k2)
        uref = np.clip(np.floor(uref * np.float32(255) + np.float32(0.5)), 0, 255)
        umax = int(np.abs(uref - uout.astype(np.float32)).max())
        good = dmax <= FLOAT_TOL and umax <= 1
        ok = ok and good
        print("%s usm %dx%dx%d vs %s: float max diff %.3g grey levels, uint8 max diff %d "
              "(USM moved values by up to %.1f levels)" % ("ok  " if good else "FAIL", h, w, c,
                                                          name, dmax, umax,
                                                          float(np.abs(ref - fin).max()) * 255))
    return ok


def check_jpeg(folder, rec):
    i, h, w, q = rec["index"], int(rec["h"]), int(rec["w"]), int(rec["quality"])
    n = h * w * 3
    f = np.fromfile(os.path.join(folder, "%d.f32" % i), dtype=np.float32)
    fin, fout = f[:n].reshape(h, w, 3), f[n:].reshape(h, w, 3)
    with open(os.path.join(folder, "%d.jpg" % i), "rb") as fh:
        cbytes = fh.read()
    u8 = np.floor(np.clip(fin, 0, 1) * np.float32(255) + np.float32(0.5)).astype(np.uint8)
    bio = io.BytesIO()
    Image.fromarray(u8, "RGB").save(bio, format="JPEG", quality=q)
    same_bytes = bio.getvalue() == cbytes
    dec = np.asarray(Image.open(io.BytesIO(cbytes)).convert("RGB"))
    same_pixels = dec.shape == (h, w, 3) and np.array_equal(
        dec.astype(np.float32) / np.float32(255), fout)
    good = same_bytes and same_pixels
    print("%s jpeg %dx%d quality %d: %d bytes, PIL %d, bytes %s, decoded pixels %s"
          % ("ok  " if good else "FAIL", h, w, q, len(cbytes), len(bio.getvalue()),
             "identical" if same_bytes else "DIFFER", "identical" if same_pixels else "DIFFER"))
    return good


def main():
    folder = sys.argv[1]
    k2 = gaussian_2d()
    blurs = [("numpy+scipy", blur)]
    if cv2 is not None:
        blurs.append(("cv2 " + cv2.__version__, cv2_blur))
    print("usm references: %s%s" % (", ".join(b[0] for b in blurs),
                                     "" if cv2 else " (cv2 not installed: not compared)"))
    ok, kinds = True, set()
    with open(os.path.join(folder, "params.txt")) as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = parse(line)
            kinds.add(rec["kind"])
            if rec["kind"] == "usm":
                ok = check_usm(folder, rec, k2, blurs) and ok
            else:
                ok = check_jpeg(folder, rec) and ok
    if kinds != {"usm", "jpeg"}:
        print("FAIL: cases of kinds %s, want usm and jpeg" % sorted(kinds))
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
