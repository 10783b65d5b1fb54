#!/usr/bin/python3
"""torch_realesrgan — samples/s of Real-ESRGAN's degradations done on the CPU the way BasicSR
feeds them (basicsr/data/realesrgan_dataset.py draws the kernels with numpy per sample;
basicsr/models/realesrgan_model.py feed_data applies them with torch), one sample at a time as
a DataLoader worker would, on one thread: the PyTorch side of bench/realesrgan/run.sh.

Written for this bench (not BasicSR's code), vectorised torch per step:
  blur     numpy kernel (tests/reference/blur_kernel_ref.py: meshgrid formulas, sinc by
           scipy.special.j1), at its drawn size (BasicSR pads every kernel to 21 x 21 so that a batch stacks; a
           per-sample worker need not, which only helps torch), then filter2D: F.pad reflect
           and F.conv2d with the three channels as a batch;
  resize   F.interpolate (scale_factor for stage 1, size for stage 2 and the final one);
  noise    torch.randn (Gaussian, colour or one gray plane) or torch.poisson on the image
           rounded to 1/255 with vals = 2^ceil(log2(#unique)) (gray: on rgb_to_grayscale),
           then clamp to 0..1;
  JPEG     PIL at the drawn quality (4:2:0) from the image clamped and rounded to 8 bits,
           decoded back to float (PixFlow does real JPEG; BasicSR's DiffJPEG is not used);
  USM      the GT sharpened with pf_usm_kernel's 51-tap Gaussian, separably (1 x 51 then
           51 x 1 torch convs, reflect padding; BasicSR's USMSharp convolves the 51 x 51 outer
           product, which is slower), residual, mask |r| * 255 > 10, its blur, the blend.
Each sample's drawn parameters are PixFlow's (the --params lines of bench_realesrgan), so
both sides do the same work (same kernel sizes, resize factors, noise kinds, qualities);
the noise values themselves are torch's own.

torch_realesrgan.py CROPS PARAMS N [PATCH=256] [WARMUP=10] [SCALE=4]
Prints "torch: N samples in T s: X samples/s" and the per-stage milliseconds.
"""
import io
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

sys.path.insert(0, __file__.rsplit("/", 3)[0] + "/tests/reference")
from blur_kernel_ref import reference_kernel  # noqa: E402
from params_line import parse  # noqa: E402

STAGES = ("blur", "resize", "noise", "jpeg", "usm", "other")
T = dict.fromkeys(STAGES, 0.0)


class clock:
    """Adds the seconds of a with-block to T[stage]."""

    def __init__(self, stage):
        self.stage = stage

    def __enter__(self):
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        T[self.stage] += time.perf_counter() - self.t0


def part(rec, prefix):
    return {k[len(prefix) + 1:]: v for k, v in rec.items()
            if isinstance(k, str) and k.startswith(prefix + ".")}


def kernel(p):
    """numpy kernel of one blur record at its drawn size (blur_kernel_ref's formulas: numpy
    meshgrid, as BasicSR's degradations.py), float32."""
    return reference_kernel(dict(p, pad_to=p["kernel_size"])).astype(np.float32)


def filter2d(img, ker):
    """BasicSR's filter2D for one image: img (1, 3, H, W), ker (k, k) tensor."""
    k = ker.shape[-1]
    x = F.pad(img, (k // 2, k // 2, k // 2, k // 2), mode="reflect")
    return F.conv2d(x.view(3, 1, *x.shape[2:]), ker.view(1, 1, k, k)).view(img.shape)


def blur(img, p):
    if p["family"] == "pulse":
        return img
    with clock("blur"):
        return filter2d(img, torch.from_numpy(kernel(p)))


def resize(img, mode, factor=None, size=None):
    with clock("resize"):
        kw = {} if mode == "area" else {"align_corners": False}
        if factor is not None:
            return F.interpolate(img, scale_factor=factor, mode=mode, **kw)
        return F.interpolate(img, size=size, mode=mode, **kw)


def noise(img, p):
    with clock("noise"):
        gray = p["gray"] == "1"
        _, c, h, w = img.shape
        if p["noise"] == "gaussian":
            n = torch.randn(1, 1 if gray else c, h, w) * (float(p["sigma"]) / 255.0)
        else:
            src = img
            if gray:
                src = 0.2989 * img[:, 0:1] + 0.587 * img[:, 1:2] + 0.114 * img[:, 2:3]
            q = torch.clamp((src * 255.0).round(), 0, 255) / 255.0
            vals = 2 ** math.ceil(math.log2(len(torch.unique(q))))
            n = (torch.poisson(q * vals) / vals - q) * float(p["scale"])
        return torch.clamp(img + n, 0, 1)


def jpeg(img, quality):
    with clock("jpeg"):
        u8 = (torch.clamp(img, 0, 1) * 255.0).round().to(torch.uint8)[0].permute(1, 2, 0)
        buf = io.BytesIO()
        Image.fromarray(u8.numpy()).save(buf, format="JPEG", quality=quality)
        buf.seek(0)
        out = np.asarray(Image.open(buf).convert("RGB"))
        return torch.from_numpy(out.copy()).permute(2, 0, 1)[None].float() / 255.0


def usm_kernel():
    x = np.arange(51, dtype=np.float64) - 25
    k = np.exp(-x * x / (2 * 8.0 * 8.0))
    return torch.from_numpy((k / k.sum()).astype(np.float32))


USM_K = usm_kernel()


def gauss51(img):
    """img (1, C, H, W) filtered by USM_K along rows then columns, reflect padding."""
    c = img.shape[1]
    x = F.pad(img, (25, 25, 25, 25), mode="reflect")
    x = F.conv2d(x, USM_K.view(1, 1, 1, 51).expand(c, 1, 1, 51), groups=c)
    return F.conv2d(x, USM_K.view(1, 1, 51, 1).expand(c, 1, 51, 1), groups=c)


def usm(img):
    with clock("usm"):
        residual = img - gauss51(img)
        mask = (residual.abs() * 255 > 10).float()
        soft = gauss51(mask)
        sharp = torch.clamp(img + 0.5 * residual, 0, 1)
        return soft * sharp + (1 - soft) * img


def sample(gt_u8, rec, scale):
    """One training sample: (LQ uint8 (1, 3, h/scale, w/scale), USM GT float)."""
    with clock("other"):
        gt = torch.from_numpy(gt_u8).permute(2, 0, 1)[None].float() / 255.0
    h = gt.shape[2]
    r1, r2 = part(rec, "r1"), part(rec, "r2")
    x = blur(gt, part(rec, "b1"))
    x = resize(x, r1["mode"], factor=float(r1["scale"]))
    x = noise(x, part(rec, "n1"))
    x = jpeg(x, int(rec["q1"]))
    if rec["second_order"] == "1":
        if rec["blur2_on"] == "1":
            x = blur(x, part(rec, "b2"))
        n2 = int(h / scale * float(r2["scale"]))
        x = resize(x, r2["mode"], size=(n2, n2))
        x = noise(x, part(rec, "n2"))
    lq, sinc, mode = (h // scale, h // scale), part(rec, "s"), rec["final_mode"]
    if rec["final"] == "sinc_first":
        x = jpeg(blur(resize(x, mode, size=lq), sinc), int(rec["q2"]))
    else:
        x = blur(resize(jpeg(x, int(rec["q2"])), mode, size=lq), sinc)
    with clock("other"):
        out = torch.clamp((x * 255.0).round(), 0, 255).to(torch.uint8)
    return out, usm(gt)


def main():
    crops_path, params_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    patch = int(sys.argv[4]) if len(sys.argv) > 4 else 256
    warmup = int(sys.argv[5]) if len(sys.argv) > 5 else 10
    scale = int(sys.argv[6]) if len(sys.argv) > 6 else 4
    torch.set_num_threads(1)
    torch.manual_seed(0)
    crops = np.fromfile(crops_path, dtype=np.uint8).reshape(-1, patch, patch, 3)
    with open(params_path) as f:
        recs = [parse(line) for line in f if line.strip()]
    if len(crops) < n or len(recs) < n:
        sys.exit("torch_realesrgan: %d crops and %d parameter lines, %d wanted" % (
            len(crops), len(recs), n))
    for i in range(warmup):
        sample(crops[i % n], recs[i % n], scale)
    for s in STAGES:
        T[s] = 0.0
    t0 = time.perf_counter()
    for i in range(n):
        sample(crops[i], recs[i], scale)
    total = time.perf_counter() - t0
    print("torch: %d samples in %.3f s: %.2f samples/s" % (n, total, n / total))
    print("torch stages (ms/sample):" + "".join(" %s %.3f" % (s, 1e3 * T[s] / n) for s in STAGES)
          + " total %.3f" % (1e3 * sum(T.values()) / n))


if __name__ == "__main__":
    main()
