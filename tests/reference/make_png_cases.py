#!/usr/bin/python3
"""Generate tests/data/png/: one small PNG per colour type / bit depth / interlace, each with the
RGB8 pixels PixFlow must decode it to (NAME.rgb, raw h*w*3 bytes; sizes in cases.txt).

The PNG encoder here is written from the PNG specification (W3C PNG 2nd edition: chunks with
CRC-32, zlib stream, per-row filters 0-4, Adam7 interlacing, sub-byte packing MSB first), not
with libpng, so the C decoder is checked against an independent writer. The expected RGB8
pixels follow docs/images.md:
  gray d<8 bits -> v * 255 / (2^d - 1) (exact); 16-bit -> (v * 255 + 32767) // 65535;
  palette -> its RGB entry (index past the palette -> black); gray -> R = G = B;
  alpha and tRNS dropped; gAMA/iCCP/tEXt ignored.
Also writes the broken files the error tests need (truncated, bad CRC, not a PNG).

Run: /usr/bin/python3 tests/reference/make_png_cases.py  (deterministic: fixed seed)
"""
import os
import struct
import zlib

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "png")
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}   # colour type -> samples per pixel


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def pack_row(samples, depth):
    """samples: 1-D uint array of one row's samples -> bytes as stored (before filtering)."""
    if depth == 16:
        return samples.astype(">u2").tobytes()
    if depth == 8:
        return samples.astype(np.uint8).tobytes()
    per_byte = 8 // depth
    out = bytearray((len(samples) + per_byte - 1) // per_byte)
    for i, v in enumerate(samples):
        out[i // per_byte] |= int(v) << (8 - depth * (i % per_byte + 1))
    return bytes(out)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def filter_row(ftype, row, prev, bpp):
    """Apply PNG filter `ftype` to bytes `row` given the previous (unfiltered) row."""
    out = bytearray(len(row))
    for i in range(len(row)):
        a = row[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][ftype]
        out[i] = (row[i] - pred) & 0xFF
    return bytes([ftype]) + bytes(out)


def encode_image(samples, depth, filter_seed):
    """samples: h x w x ch array -> filtered scanlines (bytes) for one (sub)image."""
    h, w, ch = samples.shape
    bpp = max(1, ch * depth // 8)
    raw = b""
    prev = bytes(len(pack_row(samples[0].reshape(-1), depth))) if h else b""
    for y in range(h):
        row = pack_row(samples[y].reshape(-1), depth)
        raw += filter_row((y + filter_seed) % 5, row, prev, bpp)
        prev = row
    return raw


def write_png(path, samples, depth, color_type, interlace=False, palette=None, trns=None,
              extra_chunks=()):
    h, w, _ = samples.shape
    ihdr = struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 1 if interlace else 0)
    if interlace:
        raw = b""
        for p, (x0, y0, dx, dy) in enumerate(ADAM7):
            sub = samples[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                raw += encode_image(sub, depth, p)
    else:
        raw = encode_image(samples, depth, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
    for kind, body in extra_chunks:
        data += chunk(kind, body)
    if palette is not None:
        data += chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).reshape(-1)))
    if trns is not None:
        data += chunk(b"tRNS", trns)
    z = zlib.compress(raw, 9)
    # split the zlib stream over several IDAT chunks to exercise chunk boundaries
    for i in range(0, len(z), 97):
        data += chunk(b"IDAT", z[i:i + 97])
    data += chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(data)
    return data


def expected_rgb(samples, depth, color_type, palette=None):
    """The documented PNG -> RGB8 rule, written directly from docs/images.md."""
    s = samples.astype(np.int64)
    if color_type == 3:
        pal = np.zeros((256, 3), np.int64)          # indices past the palette read as black
        pal[:len(palette)] = palette
        return pal[s[..., 0]].astype(np.uint8)
    if depth == 16:
        s = (s * 255 + 32767) // 65535
    elif depth < 8:
        s = s * 255 // ((1 << depth) - 1)
    if color_type in (0, 4):
        s = np.repeat(s[..., :1], 3, axis=2)
    else:
        s = s[..., :3]
    return s.astype(np.uint8)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20240611)
    h, w = 11, 13                                   # odd: partial Adam7 blocks, row padding
    cases = []

    def add(name, depth, color_type, interlace=False, n_palette=None, trns=None, extra=()):
        ch = CHANNELS[color_type]
        if color_type == 3:
            top = n_palette if n_palette else 1 << depth
            samples = rng.integers(0, top, size=(h, w, 1))
            palette = rng.integers(0, 256, size=(n_palette or (1 << depth), 3))
            if name.endswith("_oob"):               # some indices past the end of PLTE
                samples[0, :4, 0] = (1 << depth) - 1
        else:
            samples = rng.integers(0, 1 << depth, size=(h, w, ch))
            palette = None
            top = (1 << depth) - 1
            samples[0, 0] = 0                       # extremes, and 16-bit rounding edges
            samples[0, 1] = top
            if depth == 16:
                samples[0, 2:8, 0] = [128, 129, 257, 32767, 32768, 65407]
        write_png(os.path.join(OUT, name + ".png"), samples, depth, color_type, interlace,
                  palette, trns, extra)
        expected_rgb(samples, depth, color_type, palette).tofile(os.path.join(OUT, name + ".rgb"))
        cases.append(name)

    for d in (1, 2, 4, 8, 16):
        add("gray%d" % d, d, 0)
    for d in (8, 16):
        add("graya%d" % d, d, 4)
        add("rgb%d" % d, d, 2)
        add("rgba%d" % d, d, 6)
    for d in (1, 2, 4, 8):
        add("pal%d" % d, d, 3)
    add("pal8_trns", 8, 3, trns=bytes(range(0, 256, 16)))
    add("pal4_oob", 4, 3, n_palette=9)
    add("rgb8_ancillary", 8, 2, extra=((b"gAMA", struct.pack(">I", 100000)),
                                       (b"tEXt", b"Comment\x00ignored by PixFlow")))
    add("gray16_trns", 16, 0, trns=struct.pack(">H", 1234))
    for name, d, ct in (("gray1", 1, 0), ("gray2", 2, 0), ("gray4", 4, 0), ("gray8", 8, 0),
                        ("gray16", 16, 0), ("graya8", 8, 4), ("graya16", 16, 4),
                        ("pal1", 1, 3), ("pal2", 2, 3), ("pal4", 4, 3), ("pal8", 8, 3),
                        ("rgb8", 8, 2), ("rgb16", 16, 2), ("rgba8", 8, 6), ("rgba16", 16, 6)):
        add(name + "_adam7", d, ct, interlace=True)

    with open(os.path.join(OUT, "cases.txt"), "w") as f:
        f.write("# name width height: NAME.png must decode to NAME.rgb (RGB8 HWC)\n")
        for name in cases:
            f.write("%s %d %d\n" % (name, w, h))

    good = open(os.path.join(OUT, "rgb8.png"), "rb").read()
    with open(os.path.join(OUT, "broken_truncated.png"), "wb") as f:
        f.write(good[:len(good) // 2])
    bad = bytearray(good)
    idat_len = struct.unpack(">I", good[33:37])[0]  # the first IDAT follows IHDR at byte 33
    bad[33 + 8 + idat_len + 3] ^= 0x55              # its CRC no longer matches its data
    with open(os.path.join(OUT, "broken_crc.png"), "wb") as f:
        f.write(bytes(bad))
    with open(os.path.join(OUT, "broken_notpng.png"), "wb") as f:
        f.write(b"GIF89a this is not a PNG file\n")


if __name__ == "__main__":
    main()
