"""torch_upscale — the PyTorch side of bench/upscale/run.sh: what `pixflow upscale` does for
RGB8 images, in PyTorch 1.13 (tests/reference/zoo_archs.py's network, BasicSR's names): read
each PNG of a folder (PIL), x / 255, the network (no_grad, whole image), clamp, round, write
PNG; prints images/s over the whole loop (reading and writing included, as pixflow's) and
nothing else is timed. The weights are a PixFlow checkpoint (params_ema.* preferred, as
pixflow does), read by tests/reference/st_io.py.

usage: torch_upscale.py WEIGHTS IN_DIR OUT_DIR THREADS MODEL_TYPE SCALE [KEY=VALUE ...]
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


def main():
    weights, src, dst, threads, model_type, scale = sys.argv[1:7]
    hp = {}
    for kv in sys.argv[7:]:
        k, v = kv.split("=", 1)
        hp[k] = float(v) if "." in v else int(v)
    torch.set_num_threads(int(threads))
    net = zoo_archs.build(model_type, int(scale), **hp).eval()
    tensors, _ = st_io.read(weights)
    ema = {k[len("params_ema."):]: v for k, v in tensors.items() if k.startswith("params_ema.")}
    state = ema or {k: v for k, v in tensors.items() if not k.startswith("params_ema.")}
    net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in state.items()}, strict=True)
    os.makedirs(dst, exist_ok=True)
    names = sorted(n for n in os.listdir(src) if n.lower().endswith(".png"))
    t0 = time.perf_counter()
    with torch.no_grad():
        for name in names:
            img = np.array(Image.open(os.path.join(src, name)).convert("RGB"))
            x = torch.from_numpy(img).permute(2, 0, 1)[None].float() / 255.0
            y = net(x).clamp_(0, 1)[0].permute(1, 2, 0).numpy()
            out = (y.astype(np.float64) * 255.0 + 0.5).astype(np.uint8)
            Image.fromarray(out).save(os.path.join(dst, name))
    dt = time.perf_counter() - t0
    print("torch: %d images in %.2f s: %.3f img/s (%s threads)" % (len(names), dt,
                                                                 len(names) / dt, threads))


if __name__ == "__main__":
    main()
