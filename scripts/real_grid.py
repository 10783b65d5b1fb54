#!/usr/bin/python3
"""real_grid.py — the grid of docs/real.md: for each validation photo, a crop of
   degraded LQ (nearest upscaled) | the bicubic-trained model | the degradation-trained model | GT,
   from the files scripts/demo-real.sh leaves (pixflow data --degrade, two pixflow test runs).
   Not part of the demo (it needs Debian's python3-pil); the docs image is made with it:

   /usr/bin/python3 scripts/real_grid.py LQ_DIR BICUBIC_TEST_DIR REAL_TEST_DIR GT_DIR SCALE OUT.png
"""
import os
import sys

from PIL import Image

CROP = 128  # GT pixels of each panel's crop, centred in the image


def main(argv):
    if len(argv) != 7:
        sys.exit(__doc__)
    lq_dir, bic_dir, real_dir, gt_dir, scale, out = argv[1:]
    scale = int(scale)
    rows = []
    for name in sorted(os.listdir(gt_dir)):
        if not name.endswith(".png"):
            continue
        gt = Image.open(os.path.join(gt_dir, name)).convert("RGB")
        w, h = gt.width // scale * scale, gt.height // scale * scale
        x = (w // 2 - CROP // 2) // scale * scale
        y = (h // 2 - CROP // 2) // scale * scale
        box = (x, y, x + CROP, y + CROP)
        lq = Image.open(os.path.join(lq_dir, name)).convert("RGB")
        lq_box = tuple(v // scale for v in box)
        panels = [lq.crop(lq_box).resize((CROP, CROP), Image.NEAREST),
                  Image.open(os.path.join(bic_dir, name)).convert("RGB").crop(box),
                  Image.open(os.path.join(real_dir, name)).convert("RGB").crop(box),
                  gt.crop(box)]
        rows.append(panels)
    zoom, gap = 1, 4
    side = CROP * zoom
    grid = Image.new("RGB", (4 * side + 3 * gap, len(rows) * side + (len(rows) - 1) * gap),
                     (255, 255, 255))
    for r, panels in enumerate(rows):
        for c, p in enumerate(panels):
            grid.paste(p.resize((side, side), Image.NEAREST), (c * (side + gap), r * (side + gap)))
    grid.save(out)
    print(f"real_grid: {len(rows)} photos x (LQ, bicubic-trained, degradation-trained, GT) -> {out}")


if __name__ == "__main__":
    main(sys.argv)
