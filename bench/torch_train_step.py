#!/usr/bin/python3
"""torch_train_step — PyTorch 1.13 counterpart of bench/bench_train_step.c: seconds per
training step (forward + L1 loss + backward + Adam) of BasicSR's EDSR, demo (32 feats, 4 blocks)
and EDSR-baseline (64 / 16), x2, batch 16, 48 x 48 LQ patches, inputs uint8 NHWC converted to
float NCHW / 255 inside the step as PixFlow does. Median of --steps after --warmup.

usage: /usr/bin/python3 bench/torch_train_step.py [--threads T] [--steps N] [--warmup W]
                                                   [--only demo|baseline]
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "reference"))
from nn_torch_ref import EDSR  # noqa: E402  (BasicSR's EDSR, re-implemented)


def bench(label, feats, blocks, batch, patch, warmup, steps):
    torch.manual_seed(0)
    net = EDSR(feats, blocks, 2, 1.0)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    g = torch.Generator().manual_seed(1)
    lq = torch.randint(0, 256, (batch, patch, patch, 3), generator=g, dtype=torch.uint8)
    gt = torch.randint(0, 256, (batch, 2 * patch, 2 * patch, 3), generator=g, dtype=torch.uint8)
    times = []
    loss = None
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        x = lq.permute(0, 3, 1, 2).float() / 255.0
        y = gt.permute(0, 3, 1, 2).float() / 255.0
        opt.zero_grad()
        loss = torch.nn.functional.l1_loss(net(x), y)
        loss.backward()
        opt.step()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    n_params = sum(p.numel() for p in net.parameters())
    print("%-9s torch EDSR %d feats %d blocks x2 batch %d patch %d: %d params, median %.4f "
          "s/step (min %.4f, max %.4f, %d steps), last loss %.4f"
          % (label, feats, blocks, batch, patch, n_params, times[len(times) // 2], times[0],
             times[-1], steps, loss.item()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--patch", type=int, default=48)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print("torch %s, %d threads" % (torch.__version__, torch.get_num_threads()))
    if a.only != "baseline":
        bench("demo", 32, 4, a.batch, a.patch, a.warmup, a.steps)
    if a.only != "demo":
        bench("baseline", 64, 16, a.batch, a.patch, a.warmup, a.steps)


if __name__ == "__main__":
    main()
