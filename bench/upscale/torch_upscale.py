"""torch_upscale — the PyTorch side of bench/upscale/run.sh: what `pixflow upscale` does for
RGB8 images, in PyTorch 1.13 (tests/reference/zoo_archs.py's network, BasicSR's names): read
each PNG of a folder (PIL), x / 255, the network (no_grad; whole image, or with --tile the
tiles of nn/infer.c's infer_tiled, below), clamp, round, write PNG; prints images/s over the
whole loop (reading and writing included, as pixflow's) and nothing else is timed. The weights
are a PixFlow checkpoint (params_ema.* preferred, as pixflow does), read by
tests/reference/st_io.py.

usage: torch_upscale.py WEIGHTS IN_DIR OUT_DIR THREADS MODEL_TYPE SCALE [KEY=VALUE ...]
                        [--tile T --tile-overlap O]
"""
import os
import sys
import time

import numpy as np
import torch
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import st_io  # noqa: E402
import zoo_archs  # noqa: E402


def input_multiple(model_type, scale):
    """pf_net_input_multiple: RRDBNet pixel-unshuffles its input at x2 (by 2) and x1 (by 4)."""
    return {1: 4, 2: 2}.get(scale, 1) if model_type == "RRDBNet" else 1


def window_start(c0, overlap, win, n, q):
    """nn/infer.c window_start: the window of `win` pixels around the core at c0, shifted
    inwards at the edges, aligned to q."""
    s = min(c0 - overlap, n - win)
    return max(s, 0) // q * q


def infer_tiled(net, x, scale, tile, overlap, q):
    """nn/infer.c infer_tiled on x (1 x 3 x h x w): cores of tile x tile on a grid from the
    top-left, each inferred from a window of min(tile + 2 overlap, size) pixels around it
    (every window the same size), only the core's output kept; tile and overlap rounded up to
    q. tile <= 0, or a tile covering the image: the whole image."""
    h, w = x.shape[2], x.shape[3]
    if tile <= 0 or (tile >= h and tile >= w):
        return net(x)
    tile, overlap = -(-tile // q) * q, -(-overlap // q) * q
    wh, ww = min(tile + 2 * overlap, h), min(tile + 2 * overlap, w)
    out = x.new_empty(1, 3, h * scale, w * scale)
    for cy in range(0, h, tile):
        for cx in range(0, w, tile):
            sy, sx = window_start(cy, overlap, wh, h, q), window_start(cx, overlap, ww, w, q)
            y = net(x[:, :, sy:sy + wh, sx:sx + ww])
            ch, cw = min(tile, h - cy) * scale, min(tile, w - cx) * scale
            oy, ox = (cy - sy) * scale, (cx - sx) * scale
            out[:, :, cy * scale:cy * scale + ch, cx * scale:cx * scale + cw] = \
                y[:, :, oy:oy + ch, ox:ox + cw]
    return out


def upscale(net, x, scale, tile, overlap, q):
    """cli/upscale_image.c run_plane: pad by edge replication to a multiple of q, infer, crop."""
    h, w = x.shape[2], x.shape[3]
    ph, pw = -(-h // q) * q, -(-w // q) * q
    if (ph, pw) != (h, w):
        x = torch.nn.functional.pad(x, (0, pw - w, 0, ph - h), mode="replicate")
    return infer_tiled(net, x, scale, tile, overlap, q)[:, :, :h * scale, :w * scale]


def main():
    args = sys.argv[1:]
    tile = overlap = 0
    for flag in ("--tile", "--tile-overlap"):
        if flag in args:
            i = args.index(flag)
            value = int(args[i + 1])
            del args[i:i + 2]
            tile, overlap = (value, overlap) if flag == "--tile" else (tile, value)
    weights, src, dst, threads, model_type, scale = args[:6]
    hp = {}
    for kv in args[6:]:
        k, v = kv.split("=", 1)
        hp[k] = float(v) if "." in v else int(v)
    torch.set_num_threads(int(threads))
    net = zoo_archs.build(model_type, int(scale), **hp).eval()
    tensors, _ = st_io.read(weights)
    ema = {k[len("params_ema."):]: v for k, v in tensors.items() if k.startswith("params_ema.")}
    state = ema or {k: v for k, v in tensors.items() if not k.startswith("params_ema.")}
    net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()}, strict=True)
    os.makedirs(dst, exist_ok=True)
    q = input_multiple(model_type, int(scale))
    names = sorted(n for n in os.listdir(src) if n.lower().endswith(".png"))
    t0 = time.perf_counter()
    with torch.no_grad():
        for name in names:
            img = np.array(Image.open(os.path.join(src, name)).convert("RGB"))
            x = torch.from_numpy(img).permute(2, 0, 1)[None].float() / 255.0
            y = upscale(net, x, int(scale), tile, overlap, q).clamp_(0, 1)[0].permute(1, 2, 0).numpy()
            out = (y.astype(np.float64) * 255.0 + 0.5).astype(np.uint8)
            Image.fromarray(out).save(os.path.join(dst, name))
    dt = time.perf_counter() - t0
    print("torch: %d images in %.2f s: %.3f img/s (%s threads, tile %d overlap %d)" %
          (len(names), dt, len(names) / dt, threads, tile, overlap))


if __name__ == "__main__":
    main()
