#!/usr/bin/python3
"""Reference PSNR / SSIM (BasicSR calculate_psnr / calculate_ssim conventions, docs/metrics.md)
in plain numpy, and the test data for tests/test_metrics.c.

Conventions: images RGB8; crop `crop_border` pixels on each side; optional Y channel
Y = 16 + (65.481 R + 128.553 G + 24.966 B) / 255 (R, G, B in 0..255; float64, not rounded);
PSNR = 10 log10(255^2 / MSE) over all remaining values; SSIM (Wang et al. 2004): 11x11
Gaussian window, sigma 1.5, normalised, 'valid' region only (the [5:-5, 5:-5] crop of
cv2.filter2D in BasicSR), C1 = (0.01 * 255)^2, C2 = (0.03 * 255)^2, mean of the SSIM map;
for RGB the mean over the three channels.

The window sums here are a direct 2-D correlation over every 11x11 patch (not the separable
two-pass filter of common/metrics.c). When scikit-image is importable the SSIM/PSNR are also
checked against skimage.metrics (gaussian_weights=True, sigma=1.5,
use_sample_covariance=False, data_range=255: its reflect-padded border is exactly what the
crop of 5 removes), and the script stops if they disagree.

Writes tests/data/metrics_{gt,sr_bicubic,sr_noise,sr_shift}.u8 (H x W x 3 uint8) and
tests/data/metrics_expected.txt: "IMAGE CROP Y PSNR SSIM" per line.
Run: /usr/bin/python3 tests/reference/metrics_ref.py
"""
import os

import numpy as np

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
H, W = 40, 48


def to_y(img):
    img = img.astype(np.float64)
    return 16.0 + (65.481 * img[..., 0] + 128.553 * img[..., 1] + 24.966 * img[..., 2]) / 255.0


def prepare(img, crop, y):
    img = to_y(img)[..., None] if y else img.astype(np.float64)
    if crop:
        img = img[crop:-crop, crop:-crop]
    return img


def psnr(a, b, crop, y):
    a, b = prepare(a, crop, y), prepare(b, crop, y)
    mse = np.mean((a - b) ** 2)
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def window():
    g = np.exp(-((np.arange(11) - 5) ** 2) / (2 * 1.5 ** 2))
    g /= g.sum()
    return np.outer(g, g)


def filt_valid(x, win):
    """2-D correlation of x (h x w) with win (11 x 11), output (h-10) x (w-10)."""
    patches = np.lib.stride_tricks.sliding_window_view(x, (11, 11))
    return np.einsum("ijkl,kl->ij", patches, win)


def ssim_plane(a, b):
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    win = window()
    mu1, mu2 = filt_valid(a, win), filt_valid(b, win)
    s11 = filt_valid(a * a, win) - mu1 ** 2
    s22 = filt_valid(b * b, win) - mu2 ** 2
    s12 = filt_valid(a * b, win) - mu1 * mu2
    m = ((2 * mu1 * mu2 + c1) * (2 * s12 + c2)) / ((mu1 ** 2 + mu2 ** 2 + c1) * (s11 + s22 + c2))
    return m.mean()


def ssim(a, b, crop, y):
    a, b = prepare(a, crop, y), prepare(b, crop, y)
    return float(np.mean([ssim_plane(a[..., k], b[..., k]) for k in range(a.shape[2])]))


def cross_check(a, b, crop, y, p, s):
    try:
        from skimage.metrics import peak_signal_noise_ratio, structural_similarity
    except ImportError:
        return "skimage not available"
    pa, pb = prepare(a, crop, y), prepare(b, crop, y)
    sk_s = np.mean([structural_similarity(pa[..., k], pb[..., k], gaussian_weights=True,
                                          sigma=1.5, use_sample_covariance=False,
                                          data_range=255) for k in range(pa.shape[2])])
    sk_p = peak_signal_noise_ratio(pa, pb, data_range=255)
    assert abs(sk_s - s) < 1e-10 and abs(sk_p - p) < 1e-10, (sk_s, s, sk_p, p)
    return "skimage agrees (%.1e, %.1e)" % (abs(sk_s - s), abs(sk_p - p))


def make_images():
    rng = np.random.default_rng(5)
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    gt = np.stack([128 + 90 * np.sin(x / 5 + y / 9), 128 + 90 * np.cos(x / 7 - y / 4),
                   60 + 2.5 * (x + y)], axis=2)
    gt[10:22, 14:30] = [240, 30, 60]
    gt = np.clip(np.round(gt + rng.normal(0, 6, gt.shape)), 0, 255).astype(np.uint8)
    # blur: 3x3 box of the ground truth (stands in for a bicubic-upsampled output)
    pad = np.pad(gt.astype(np.float64), ((1, 1), (1, 1), (0, 0)), mode="edge")
    blur = sum(pad[i:i + H, j:j + W] for i in range(3) for j in range(3)) / 9
    sr_bicubic = np.clip(np.round(blur), 0, 255).astype(np.uint8)
    sr_noise = np.clip(gt.astype(int) + rng.integers(-20, 21, gt.shape), 0, 255).astype(np.uint8)
    sr_shift = np.roll(gt, 1, axis=1)
    sr_shift[:, :3] = 0                                 # a border that crop_border removes
    return {"gt": gt, "sr_bicubic": sr_bicubic, "sr_noise": sr_noise, "sr_shift": sr_shift}


def main():
    imgs = make_images()
    for name, img in imgs.items():
        img.tofile(os.path.join(DATA, "metrics_%s.u8" % name))
    with open(os.path.join(DATA, "metrics_expected.txt"), "w") as f:
        f.write("# metrics_IMAGE.u8 vs metrics_gt.u8 (%d x %d x 3): IMAGE CROP Y PSNR SSIM\n"
                % (H, W))
        for name in ("sr_bicubic", "sr_noise", "sr_shift"):
            for crop in (0, 4):
                for y in (0, 1):
                    p = psnr(imgs[name], imgs["gt"], crop, y)
                    s = ssim(imgs[name], imgs["gt"], crop, y)
                    note = cross_check(imgs[name], imgs["gt"], crop, y, p, s)
                    f.write("%s %d %d %.12f %.12f\n" % (name, crop, y, p, s))
                    print("%-10s crop %d y %d: PSNR %.6f SSIM %.6f  %s" % (name, crop, y, p, s,
                                                                            note))


if __name__ == "__main__":
    main()
