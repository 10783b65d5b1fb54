#!/usr/bin/env python3
"""Reference files for tests/test_jpeg.c (JPEG reading and the JPEG degradation), written with
PIL, whose JPEG codec is the system libjpeg-turbo (Debian's python3-pil links libjpeg62-turbo).

Run once with Debian's /usr/bin/python3 (python3-pil, python3-skimage) and commit the output:
    /usr/bin/python3 tests/reference/make_jpeg_cases.py tests/data/jpeg

Source pixels: crops of skimage's astronaut.png (NASA, public domain), so the codec sees a
photograph, not a synthetic pattern. Writes:
  src.png            37 x 29 RGB crop (odd sizes: partial 16x16 MCUs on both edges)
  src_q{Q}.png       (Q = 3, 10, 50, 95) PIL's Image.save(format='JPEG', quality=Q) of src, reopened, as RGB PNG
  photo.jpg          64 x 48 baseline JPEG, quality 85, 4:2:0 (PIL's default)
  progressive.jpg    the same image, progressive
  s444.jpg           the same image, 4:4:4 (subsampling=0)
  gray.jpg           grayscale JPEG of the same crop
  cmyk.jpg           CMYK JPEG (PixFlow refuses it)
  <name>.png         PIL's decode of each of the four readable JPEGs, convert('RGB')
"""
import io
import os
import sys

import numpy as np
from PIL import Image
from skimage import data


def main(out):
    os.makedirs(out, exist_ok=True)
    astro = data.astronaut()
    src = Image.fromarray(astro[100:129, 180:217].copy())      # 37 x 29
    src.save(os.path.join(out, 'src.png'))
    for q in (3, 10, 50, 95):
        buf = io.BytesIO()
        src.save(buf, format='JPEG', quality=q)
        buf.seek(0)
        back = Image.open(buf).convert('RGB')
        back.save(os.path.join(out, 'src_q%d.png' % q))
    photo = Image.fromarray(astro[60:108, 200:264].copy())     # 64 x 48
    cases = {
        'photo': dict(img=photo, quality=85),
        'progressive': dict(img=photo, quality=85, progressive=True),
        's444': dict(img=photo, quality=85, subsampling=0),
        'gray': dict(img=photo.convert('L'), quality=85),
    }
    for name, c in cases.items():
        img = c.pop('img')
        path = os.path.join(out, name + '.jpg')
        img.save(path, format='JPEG', **c)
        Image.open(path).convert('RGB').save(os.path.join(out, name + '.png'))
    photo.convert('CMYK').save(os.path.join(out, 'cmyk.jpg'), format='JPEG', quality=85)
    print('wrote', sorted(os.listdir(out)))


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else 'tests/data/jpeg')
