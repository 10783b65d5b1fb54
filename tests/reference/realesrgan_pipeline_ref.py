"""realesrgan_pipeline_ref — rebuilds the LQ of each sample test_realesrgan_pipeline wrote
from its printed parameters, as BasicSR's feed_data chains the steps (not BasicSR's code):
blur (blur_kernel_ref's kernels, torch's reflect-padded conv2d), F.interpolate, the noise
formulas given the C side's raw draws and noise input (realesrgan_ops_ref), JPEG through PIL
at the same quality (4:2:0, libjpeg), the final stage in the recorded order, then
clamp(round(x * 255), 0, 255).
Checks: each JPEG step's 8-bit input within 1 grey level of the C side's, and PIL's JPEG of
the C side's input byte-identical to the C side's file; every LQ within 1 grey level, and at most
OFF_MAX of all those 8-bit values off at all (truncating instead of rounding would be off by
1 everywhere); the LQs that are a JPEG's output (final=sinc_first) byte for byte; both final
orders, both second-order and second-blur choices, a final sinc or none and every blur
family seen.
Usage: realesrgan_pipeline_ref.py FOLDER (params.txt, gtNNN.u8, lqNNN.u8, noiseS_NNN.f32,
noiseinS_NNN.f32, jpegS_NNN.u8, jpegS_NNN.jpg)."""

import collections
import io
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image

from blur_kernel_ref import reference_kernel, torch_filter
from params_line import parse
from realesrgan_ops_ref import poisson_noise

GT, SCALE, TOL, NOISE_IN_TOL = 64, 4, 1, 1e-4
OFF_MAX = 1e-3  # share of 8-bit values allowed 1 level off (a float tie at a rounding)


def part(rec, prefix):
    """The words of one stage's step, without their prefix."""
    out = {"index": rec["index"]}
    for k, v in rec.items():
        if isinstance(k, str) and k.startswith(prefix + "."):
            out[k[len(prefix) + 1:]] = v
    return out


def blur(x, rec):
    if rec["family"] == "pulse":
        return x
    rec = dict(rec, pad_to=rec["kernel_size"])
    ker = reference_kernel(rec).astype(np.float32)
    return torch_filter(x, ker)


def resize(x, size=None, factor=None, mode="area"):
    t = torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))[None]
    kw = {} if mode == "area" else {"align_corners": False}
    if factor is not None:
        y = F.interpolate(t, scale_factor=(factor, factor), mode=mode, **kw)
    else:
        y = F.interpolate(t, size=size, mode=mode, **kw)
    return y[0].numpy().transpose(1, 2, 0)


def noise(x, rec, draws):
    h, w, _ = x.shape
    img = torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))[None]
    gray = rec["gray"] == "1"
    d = torch.from_numpy(draws.reshape(h, w, 1 if gray else 3).transpose(2, 0, 1).copy())[None]
    if rec["noise"] == "gaussian":
        n = d * torch.tensor(float(rec["sigma"]), dtype=torch.float32) / 255.0
    else:
        src = img
        if gray:
            src = 0.2989 * img[:, 0:1] + 0.587 * img[:, 1:2] + 0.114 * img[:, 2:3]
        n = poisson_noise(src, d) * torch.tensor(float(rec["scale"]), dtype=torch.float32)
    out = torch.clamp(img + n.expand(1, 3, h, w), 0, 1)
    return out[0].numpy().transpose(1, 2, 0)


def to_u8(x):
    """The end of feed_data: clamp(round(x * 255), 0, 255), ties to even (torch.round)."""
    return np.clip(np.round(x.astype(np.float32) * np.float32(255)), 0, 255).astype(np.uint8)


def jpeg_input(x):
    """The JPEG step's 8 bits (realesrgan_ops.h pf_jpeg_apply): clamp to 0..1, then
    v * 255 + 0.5 truncated, in float32."""
    v = np.clip(x.astype(np.float32), 0, 1)
    return np.floor(v * np.float32(255) + np.float32(0.5)).astype(np.uint8)


def jpeg(x, quality, c_in, c_bytes, stats):
    """PIL's JPEG of x; where x's 8 bits differ from the C side's JPEG input c_in (a float
    rounding tie, at most 1 level) the C side's input is encoded, so that each JPEG step is
    checked byte for byte and stays comparable."""
    mine = jpeg_input(x)
    delta = np.abs(mine.astype(np.int32) - c_in.reshape(mine.shape))
    stats["jpeg_in"] = max(stats["jpeg_in"], int(delta.max()))
    stats["off"] += int(np.count_nonzero(delta))
    stats["values"] += delta.size
    buf = io.BytesIO()
    Image.fromarray(c_in.reshape(mine.shape)).save(buf, format="JPEG", quality=quality,
                                                   subsampling=2)
    if buf.getvalue() != c_bytes:
        stats["bytes"] += 1
    return np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))


def stage(folder, rec, s, x, i, stats):
    """Stage s's resize and noise; the noise is added to the C side's input (checked within
    NOISE_IN_TOL of ours): Poisson noise rounds it to 1/255 and scales the level by up to 3,
    so a float tie there would otherwise show as 3 grey levels."""
    h, w, _ = x.shape
    r = part(rec, "r%d" % s)
    if s == 1:
        x = resize(x, factor=float(r["scale"]), mode=r["mode"])
    else:
        size = (int(GT / SCALE * float(r["scale"])), int(GT / SCALE * float(r["scale"])))
        x = resize(x, size=size, mode=r["mode"])
    draws = np.fromfile(os.path.join(folder, "noise%d_%03d.f32" % (s, i)), dtype="<f4")
    c_in = np.fromfile(os.path.join(folder, "noisein%d_%03d.f32" % (s, i)), dtype="<f4")
    c_in = c_in.reshape(x.shape)
    stats["noise_in"] = max(stats["noise_in"], float(np.abs(x - c_in).max()))
    return noise(c_in, part(rec, "n%d" % s), draws)


def rebuild(folder, rec, stats):
    i = rec["index"]

    def c_in(n):
        return np.fromfile(os.path.join(folder, "jpeg%d_%03d.u8" % (n, i)), dtype=np.uint8)

    def c_bytes(n):
        with open(os.path.join(folder, "jpeg%d_%03d.jpg" % (n, i)), "rb") as f:
            return f.read()

    gt = np.fromfile(os.path.join(folder, "gt%03d.u8" % i), dtype=np.uint8)
    x = gt.reshape(GT, GT, 3).astype(np.float32) / np.float32(255)
    x = stage(folder, rec, 1, blur(x, part(rec, "b1")), i, stats)
    x = jpeg(x, int(rec["q1"]), c_in(1), c_bytes(1), stats).astype(np.float32) / np.float32(255)
    if rec["second_order"] == "1":
        if rec["blur2_on"] == "1":
            x = blur(x, part(rec, "b2"))
        x = stage(folder, rec, 2, x, i, stats)
    lq_size, q2, sinc = (GT // SCALE, GT // SCALE), int(rec["q2"]), part(rec, "s")
    if rec["final"] == "sinc_first":
        x = blur(resize(x, size=lq_size, mode=rec["final_mode"]), sinc)
        return jpeg(x, q2, c_in(2), c_bytes(2), stats)
    x = jpeg(x, q2, c_in(2), c_bytes(2), stats).astype(np.float32) / np.float32(255)
    return to_u8(blur(resize(x, size=lq_size, mode=rec["final_mode"]), sinc))


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "params.txt")) as f:
        recs = [parse(line) for line in f if line.strip()]
    failures, worst, worst_in, worst_noise_in = 0, 0, 0, 0.0
    seen = collections.Counter()
    families = collections.Counter()
    off, values = 0, 0  # 8-bit values (JPEG inputs, LQs) that differ, of all compared
    for rec in recs:
        seen["final=" + rec["final"]] += 1
        seen["second_order=" + rec["second_order"]] += 1
        if rec["second_order"] == "1":
            seen["blur2_on=" + rec["blur2_on"]] += 1
        for b in ("b1", "b2"):
            families[rec[b + ".family"]] += 1
        seen["sinc=" + ("none" if rec["s.family"] == "pulse" else "sinc")] += 1
        stats = {"jpeg_in": 0, "noise_in": 0.0, "off": 0, "values": 0, "bytes": 0}
        ref = rebuild(folder, rec, stats).astype(np.int32)
        worst_in = max(worst_in, stats["jpeg_in"])
        worst_noise_in = max(worst_noise_in, stats["noise_in"])
        if stats["bytes"]:
            failures += 1
            print("sample %d: %d JPEG files differ from PIL's" % (rec["index"], stats["bytes"]))
        if not stats["noise_in"] <= NOISE_IN_TOL:
            failures += 1
            print("sample %d: a noise input differs by %g" % (rec["index"], stats["noise_in"]))
        if stats["jpeg_in"] > TOL:
            failures += 1
            print("sample %d: a JPEG input differs by %d" % (rec["index"], stats["jpeg_in"]))
        lq = np.fromfile(os.path.join(folder, "lq%03d.u8" % rec["index"]), dtype=np.uint8)
        delta = np.abs(ref - lq.reshape(ref.shape).astype(np.int32))
        diff = int(delta.max())
        off += stats["off"] + int(np.count_nonzero(delta))
        values += stats["values"] + delta.size
        worst = max(worst, diff)
        exact = rec["final"] == "sinc_first"  # the LQ is the final JPEG's output
        if diff > (0 if exact else TOL):
            failures += 1
            print("sample %d: LQ differs by %d grey levels (%d pixels differ)" % (
                rec["index"], diff, int((ref != lq.reshape(ref.shape)).any(-1).sum())))
    for key in ("final=sinc_first", "final=jpeg_first", "second_order=0", "second_order=1",
                "blur2_on=0", "blur2_on=1", "sinc=none", "sinc=sinc"):
        if seen[key] == 0:
            failures += 1
            print("no sample with %s" % key)
    if off > OFF_MAX * values:
        failures += 1
        print("%d of %d 8-bit values differ by 1: more than float ties (%g) explain" % (
            off, values, OFF_MAX))
    for fam in ("iso", "aniso", "generalized_iso", "generalized_aniso", "plateau_iso",
                "plateau_aniso", "sinc"):
        if families[fam] == 0:
            failures += 1
            print("no blur of family %s" % fam)
    print("realesrgan_pipeline_ref: %d samples (%s); worst LQ difference %d grey levels; "
          "JPEG inputs %d, noise inputs %.3g; %d of %d 8-bit values off by 1; %d failed" % (
              len(recs), ", ".join("%s: %d" % kv for kv in sorted(seen.items())), worst,
              worst_in, worst_noise_in, off, values, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
