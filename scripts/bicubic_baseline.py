#!/usr/bin/python3
"""bicubic_baseline.py — PSNR-Y of plain bicubic x2 on the demo validation set (reference tool).

    /usr/bin/python3 scripts/bicubic_baseline.py [--val DIR] [--scale 2] [--crop-border N]

For each PNG in DIR (default <repo>/data/demo/val): read as RGB8, mod-crop to the scale, make
LQ by MATLAB bicubic downscale (antialiased), upscale it back by MATLAB bicubic, and report
PSNR on the Y channel (Y = 16 + 65.481 R + 128.553 G + 24.966 B with R, G, B in [0, 1], kept
as float), `crop_border` pixels removed on each side (default = scale), per image and mean.
Every image that is compared or fed on is uint8: resize results are clamped to [0, 255] and
rounded half away from zero.

Needs only numpy and skimage (skimage.io reads 8-bit PNGs). The MATLAB imresize here is an
independent numpy implementation (kernel: cubic a = -0.5, stretched by 1/scale when
downscaling, mirror padding, rows then columns, float64 arithmetic; on uint8 it rounds after
each pass like MATLAB's imresizemex, where BasicSR's Python port rounds once at the end — at
most 1 level apart), used as a cross-check of common/imresize.c.
Also imported by bench/torch_demo_train.py.
"""
import argparse
import math
import os
import struct
import sys
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# ---------------------------------------------------------------------------------------------
# PNG -> RGB8, the PixFlow rule (common/image.h): palette -> RGB, gray -> R=G=B, alpha dropped,
# 16-bit -> 8-bit by (v * 255 + 32767) // 65535.
# skimage (via Pillow) reads 16-bit RGB PNGs as 8-bit by truncation, so 16-bit files are
# decoded here directly (non-interlaced gray/RGB/gray+alpha/RGBA only — what the demo has).

def _read_png16(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('%s: not a PNG' % path)
    pos, idat, ihdr = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            ihdr = struct.unpack('>IIBBBBB', body)
        elif kind == b'IDAT':
            idat.append(body)
        elif kind == b'IEND':
            break
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    chans = {0: 1, 2: 3, 4: 2, 6: 4}.get(ctype)
    if depth != 16 or chans is None or interlace:
        raise ValueError('%s: only non-interlaced 16-bit gray/RGB(A) handled here' % path)
    bpp = 2 * chans
    stride = w * bpp
    raw = np.frombuffer(zlib.decompress(b''.join(idat)), np.uint8).reshape(h, stride + 1)
    out = np.zeros((h, stride), np.int32)
    prev = [0] * stride
    for y in range(h):
        ft, line = int(raw[y, 0]), raw[y, 1:].tolist()
        if ft == 0:
            cur = line
        elif ft == 2:
            cur = [(v + b) & 255 for v, b in zip(line, prev)]
        else:
            cur = [0] * stride
            for x in range(stride):
                a = cur[x - bpp] if x >= bpp else 0
                b = prev[x]
                if ft == 1:
                    p = a
                elif ft == 3:
                    p = (a + b) >> 1
                else:  # Paeth
                    c = prev[x - bpp] if x >= bpp else 0
                    pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                    p = a if (pa <= pb and pa <= pc) else (b if pb <= pc else c)
                cur[x] = (line[x] + p) & 255
        out[y] = cur
        prev = cur
    v = (out[:, 0::2] * 256 + out[:, 1::2]).reshape(h, w, chans).astype(np.int64)
    v8 = ((v * 255 + 32767) // 65535).astype(np.uint8)
    if chans in (1, 2):
        return np.repeat(v8[..., :1], 3, axis=2)
    return np.ascontiguousarray(v8[..., :3])


def read_png_rgb8(path):
    """Any PNG -> uint8 HxWx3 by PixFlow's rule."""
    with open(path, 'rb') as f:
        head = f.read(26)
    if head[:8] != b'\x89PNG\r\n\x1a\n':
        raise ValueError('%s: not a PNG' % path)
    if head[24] == 16:
        return _read_png16(path)
    import skimage.io
    img = skimage.io.imread(path)
    if img.dtype != np.uint8:
        raise ValueError('%s: unexpected dtype %s' % (path, img.dtype))
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    elif img.shape[2] == 2:
        img = np.repeat(img[..., :1], 3, axis=2)
    return np.ascontiguousarray(img[..., :3])


# ---------------------------------------------------------------------------------------------
# MATLAB imresize(img, scale, 'bicubic')

def _cubic(x):
    ax = np.abs(x)
    ax2, ax3 = ax * ax, ax * ax * ax
    return ((1.5 * ax3 - 2.5 * ax2 + 1) * (ax <= 1) +
            (-0.5 * ax3 + 2.5 * ax2 - 4 * ax + 2) * ((ax > 1) & (ax <= 2)))


def _weights_indices(in_len, out_len, scale):
    kernel_width = 4.0
    aa = scale < 1
    if aa:
        kernel_width /= scale
    x = np.arange(1, out_len + 1, dtype=np.float64)
    u = x / scale + 0.5 * (1 - 1 / scale)
    left = np.floor(u - kernel_width / 2)
    p = int(math.ceil(kernel_width)) + 2
    idx = left[:, None] + np.arange(p)[None, :]           # 1-based
    d = u[:, None] - idx
    w = scale * _cubic(d * scale) if aa else _cubic(d)
    w = w / w.sum(axis=1, keepdims=True)
    # mirror padding, MATLAB style: aux = [1..n, n..1]
    aux = np.concatenate([np.arange(in_len), np.arange(in_len - 1, -1, -1)])
    idx0 = aux[np.mod(idx.astype(np.int64) - 1, 2 * in_len)]
    return w, idx0


def out_size(n, scale):
    return int(math.ceil(n * scale - 1e-9))


def _resize_rows(a, scale):
    wt, ix = _weights_indices(a.shape[0], out_size(a.shape[0], scale), scale)
    return np.einsum('op,op...->o...', wt, a[ix])


def _resize_cols(a, scale):
    wt, ix = _weights_indices(a.shape[1], out_size(a.shape[1], scale), scale)
    return np.einsum('op,hop...->ho...', wt, a[:, ix])


def imresize(img, scale):
    """img: HxW[xC], uint8 or float. Float64 throughout, rows then columns, not rounded."""
    a = np.asarray(img, dtype=np.float64)
    return _resize_cols(_resize_rows(a, scale), scale)


def to_u8(a):
    """Clamp to [0, 255] and round half away from zero."""
    return np.floor(np.clip(a, 0, 255) + 0.5).astype(np.uint8)


def imresize_u8(img, scale):
    """MATLAB on uint8: each pass (rows, then columns) returns uint8, so round in between."""
    a = to_u8(_resize_rows(np.asarray(img, dtype=np.float64), scale))
    return to_u8(_resize_cols(a.astype(np.float64), scale))


def modcrop(img, scale):
    h, w = img.shape[:2]
    return img[:h - h % scale, :w - w % scale]


# ---------------------------------------------------------------------------------------------
# metrics

def rgb_to_y(img_u8):
    x = img_u8.astype(np.float64) / 255.0
    return 16.0 + 65.481 * x[..., 0] + 128.553 * x[..., 1] + 24.966 * x[..., 2]


def psnr_y(a_u8, b_u8, crop_border):
    ya, yb = rgb_to_y(a_u8), rgb_to_y(b_u8)
    if crop_border:
        ya = ya[crop_border:-crop_border, crop_border:-crop_border]
        yb = yb[crop_border:-crop_border, crop_border:-crop_border]
    mse = np.mean((ya - yb) ** 2)
    return float('inf') if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


def list_pngs(folder):
    names = sorted(n for n in os.listdir(folder) if n.lower().endswith('.png'))
    if not names:
        raise SystemExit('no PNG files in %s (run scripts/fetch-demo-data.sh)' % folder)
    return [os.path.join(folder, n) for n in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--val', default=os.path.join(ROOT, 'data', 'demo', 'val'))
    ap.add_argument('--scale', type=int, default=2)
    ap.add_argument('--crop-border', type=int, default=None)
    args = ap.parse_args()
    cb = args.scale if args.crop_border is None else args.crop_border
    vals = []
    print('bicubic x%d, PSNR-Y (crop_border %d) on %s' % (args.scale, cb, args.val))
    for path in list_pngs(args.val):
        gt = modcrop(read_png_rgb8(path), args.scale)
        lq = imresize_u8(gt, 1.0 / args.scale)
        up = imresize_u8(lq, float(args.scale))
        assert up.shape == gt.shape, (up.shape, gt.shape)
        p = psnr_y(up, gt, cb)
        vals.append(p)
        print('  %-24s GT %4dx%-4d LQ %4dx%-4d  PSNR-Y %.4f dB' %
              (os.path.basename(path), gt.shape[1], gt.shape[0], lq.shape[1], lq.shape[0], p))
    print('  %-24s %.4f dB' % ('mean', sum(vals) / len(vals)))


if __name__ == '__main__':
    sys.exit(main())
