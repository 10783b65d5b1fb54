#!/usr/bin/python3
"""derive — a config of configs/ made small enough for ab_identical's 20-step runs.

usage: derive.py SRC OUT WORK_DIR IMAGES VIDEO STEPS [--shrink]

Keeps the network type and every model key (the point is to run the same ops, shapes aside),
and changes only what decides how long a run takes and where it reads and writes:
  total_iters STEPS, log_config.interval 1 (every step's loss in metrics.jsonl), one checkpoint
  at the end, no evaluation and no visual hook (inference is compared by `pixflow test`),
  1 loader (one batch order), batch 2, prefetch 2, work_dir WORK_DIR;
  image sets: data.train/eval/test read IMAGES/train and IMAGES/val (bench/smoke_data.py's
  256 x 240 and 96 x 80 PNGs), GT patch 16 LQ pixels (16 * scale);
  RealESRGANDataset: a PairedImageDataset (bicubic LQ) with the same flips and repeat;
  video sets: data/demo_video -> VIDEO, the first 12 frames of each training clip, GT patch
  64 (LQ 16), and the test clip cut to 4 frames of 128 x 64 GT.
--shrink also caps widths at 32 features and depths at 2 blocks / groups (RCAN 10 x 20 and
RRDBNet 23 x 3 x 5 at full size take most of a run's time on 2 cores).
Writes OUT (YAML, PyYAML's dump: block style, keys in the source's order).
"""
import sys

import yaml


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    shrink = "--shrink" in sys.argv
    src, out, work_dir, images, video, steps = args
    with open(src) as f:
        c = yaml.safe_load(f)
    steps = int(steps)
    m = c["model"]
    scale = int(m.get("scale", 4))
    if shrink:
        for k, cap in (("n_feats", 32), ("num_feat", 32), ("num_grow_ch", 16), ("d", 32),
                       ("n_blocks", 2), ("num_block", 2), ("num_group", 2), ("m", 2)):
            if k in m and isinstance(m[k], int):
                m[k] = min(m[k], cap)
    c.pop("total_epochs", None)
    c["total_iters"] = steps
    c["log_config"] = {"interval": 1}
    c["checkpoint_config"] = {"interval": steps, "max_keep_ckpts": 1}
    c.pop("evaluation", None)
    c.pop("visual_config", None)
    c.pop("resume_from", None)
    c.pop("load_from", None)
    c["work_dir"] = work_dir
    d = c["data"]
    d["loaders"] = 1
    d["samples_per_gpu"] = 2
    d["prefetch"] = 2
    d.pop("eval", None)
    for part in ("train", "test"):
        s = d.get(part)
        if not s:
            continue
        if "clips" in s:
            s["gt_folder"] = video
            if part == "train":
                for clip in s["clips"]:
                    clip["frames"] = [clip["frames"][0], clip["frames"][0] + 12]
                s["gt_patch_size"] = 64
            else:
                for clip in s["clips"]:
                    x, y = (clip.get("crop") or [0, 0])[:2]
                    clip["crop"] = [x, y, 128, 64]
                    clip["frames"] = [clip["frames"][0], clip["frames"][0] + 4]
        else:
            if s.get("type") == "RealESRGANDataset":
                # the network is what is compared: its data as a bicubic PairedImageDataset (a
                # 16-pixel LQ patch is too small for the degradation's kernels, and builds from
                # before issue 40 do not know the type)
                d[part] = s = {k: v for k, v in s.items()
                               if k in ("use_flip", "use_rot", "repeat")}
                s["type"] = "PairedImageDataset"
            s["gt_folder"] = images + ("/train" if part == "train" else "/val")
            if part == "train":
                s["gt_patch_size"] = 16 * scale
    with open(out, "w") as f:
        yaml.safe_dump(c, f, sort_keys=False, default_flow_style=None)


if __name__ == "__main__":
    main()
