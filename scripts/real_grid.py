#!/usr/bin/python3
"""real_grid.py — the grids of docs/real.md and docs/gan.md, from the files the demos leave.

   docs/real.md (scripts/demo-real.sh: pixflow data --degrade, two pixflow test runs), for each
   validation photo a crop of degraded LQ (nearest upscaled) | the bicubic-trained model |
   the degradation-trained model | GT:

   /usr/bin/python3 scripts/real_grid.py LQ_DIR BICUBIC_TEST_DIR REAL_TEST_DIR GT_DIR SCALE OUT.png

   docs/gan.md (scripts/demo-gan.sh), with --gan: degraded LQ (nearest upscaled) | bicubic
   upscaling of the LQ (PIL) | the demo_real model | the GAN fine-tuned model | GT:

   /usr/bin/python3 scripts/real_grid.py --gan LQ_DIR REAL_TEST_DIR GAN_TEST_DIR GT_DIR SCALE OUT.png [CROP]

   Not part of the demos (it needs Debian's python3-pil); the docs images are made with it.
"""
import os
import sys

from PIL import Image

CROP = 128  # GT pixels of each panel's crop, centred in the image (--gan: CROP argument)


def crops(lq_dir, dirs, gt_dir, scale, crop, bicubic):
    """Per GT photo: LQ (nearest), [bicubic of the LQ], each of dirs' image, GT; crop x crop."""
    rows = []
    for name in sorted(os.listdir(gt_dir)):
        if not name.endswith(".png"):
            continue
        gt = Image.open(os.path.join(gt_dir, name)).convert("RGB")
        w, h = gt.width // scale * scale, gt.height // scale * scale
        x = (w // 2 - crop // 2) // scale * scale
        y = (h // 2 - crop // 2) // scale * scale
        box = (x, y, x + crop, y + crop)
        lq = Image.open(os.path.join(lq_dir, name)).convert("RGB")
        lq_box = tuple(v // scale for v in box)
        panels = [lq.crop(lq_box).resize((crop, crop), Image.NEAREST)]
        if bicubic:
            panels.append(lq.resize((lq.width * scale, lq.height * scale), Image.BICUBIC).crop(box))
        panels += [Image.open(os.path.join(d, name)).convert("RGB").crop(box) for d in dirs]
        panels.append(gt.crop(box))
        rows.append(panels)
    return rows


def save_grid(rows, side, out, optimize=False):
    gap, cols = 4, len(rows[0])
    grid = Image.new("RGB", (cols * side + (cols - 1) * gap, len(rows) * side + (len(rows) - 1) * gap),
                     (255, 255, 255))
    for r, panels in enumerate(rows):
        for c, p in enumerate(panels):
            grid.paste(p.resize((side, side), Image.NEAREST), (c * (side + gap), r * (side + gap)))
    grid.save(out, optimize=optimize)


def main(argv):
    if len(argv) >= 8 and argv[1] == "--gan":
        lq_dir, real_dir, gan_dir, gt_dir, scale, out = argv[2:8]
        crop = int(argv[8]) if len(argv) > 8 else CROP
        rows = crops(lq_dir, [real_dir, gan_dir], gt_dir, int(scale), crop, True)
        save_grid(rows, crop, out, optimize=True)
        print(f"real_grid: {len(rows)} photos x (LQ, bicubic, demo_real, GAN fine-tuned, GT) -> {out}")
        return
    if len(argv) != 7:
        sys.exit(__doc__)
    lq_dir, bic_dir, real_dir, gt_dir, scale, out = argv[1:]
    rows = crops(lq_dir, [bic_dir, real_dir], gt_dir, int(scale), CROP, False)
    save_grid(rows, CROP, out)
    print(f"real_grid: {len(rows)} photos x (LQ, bicubic-trained, degradation-trained, GT) -> {out}")


if __name__ == "__main__":
    main(sys.argv)
