#!/usr/bin/python3
"""torch_edvr.py — the PyTorch side of bench_train_step's `edvr_demo` case (issue 42): seconds
per EDVR x4 training step (forward, Charbonnier loss eps 1e-12 mean, backward, Adam betas
(0.9, 0.99)) on random inputs, as bench_train_step times PixFlow's step.

    /usr/bin/python3 bench/video/torch_edvr.py [--iters 4] [--steady-from 1] [--threads 2]
        [--feat 32] [--frames 5] [--dg 8] [--ext 2] [--rec 4] [--tsa 1] [--batch 2]
        [--lq-patch 64] [--lr 1e-4] [--seed 0]

Network: tests/reference/edvr_ref.py's EDVR (the model test_edvr checks PixFlow's EDVR against:
BasicSR's parameter names, torchvision's deform_conv2d for the modulated deformable
convolution), imported, not copied. Defaults: edvr_demo's shape (num_feat 32, num_frame 5,
deformable_groups 8, num_extract_block 2, num_reconstruct_block 4, TSA, batch 2, LQ patch 64,
GT the center frame at 256 x 256).

Inputs: random (N, T, 3, p, p) LQ and (N, 3, 4p, 4p) GT in [0, 1], drawn once, as
bench_train_step's random uint8 (torch_basicvsr.py's loop reads the demo clips and trains
every frame's output, which EDVR's one center frame does not fit; the step's cost does not
depend on the values). Prints one line per step and `steady: median S s/step over iterations
A..B (min, max)` over the steps after --steady-from (the line bench/video/step_ratio.sh reads).
"""
import argparse
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), 'tests', 'reference'))
from edvr_ref import EDVR  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--iters', type=int, default=4)
    ap.add_argument('--steady-from', type=int, default=1,
                    help='steps before this one are warm-up: "steady" is the median of the rest')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--feat', type=int, default=32)
    ap.add_argument('--frames', type=int, default=5)
    ap.add_argument('--dg', type=int, default=8)
    ap.add_argument('--ext', type=int, default=2)
    ap.add_argument('--rec', type=int, default=4)
    ap.add_argument('--tsa', type=int, default=1)
    ap.add_argument('--batch', type=int, default=2)
    ap.add_argument('--lq-patch', type=int, default=64)
    ap.add_argument('--lr', type=float, default=1e-4)
    ap.add_argument('--seed', type=int, default=0)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    model = EDVR(a.feat, a.frames, a.dg, a.ext, a.rec, None, bool(a.tsa))
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, betas=(0.9, 0.99))
    p = a.lq_patch
    lq = torch.rand(a.batch, a.frames, 3, p, p)
    gt = torch.rand(a.batch, 3, 4 * p, 4 * p)
    print('model: EDVR num_feat %d num_frame %d deformable_groups %d num_extract_block %d '
          'num_reconstruct_block %d with_tsa %d, %d parameters; batch %d, LQ patch %d, %d threads'
          % (a.feat, a.frames, a.dg, a.ext, a.rec, a.tsa,
             sum(q.numel() for q in model.parameters()), a.batch, p, a.threads), flush=True)
    step_s = []
    for it in range(a.iters):
        t = time.time()
        loss = torch.mean(torch.sqrt((model(lq) - gt) ** 2 + 1e-12))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step_s.append(time.time() - t)
        print('iter %d  %.3f s  loss %.4f' % (it + 1, step_s[-1], float(loss)), flush=True)
    w = a.steady_from
    if len(step_s) > w:
        steady = sorted(step_s[w:])
        print('steady: median %.3f s/step over iterations %d..%d (min %.3f, max %.3f)'
              % (steady[len(steady) // 2], w + 1, a.iters, steady[0], steady[-1]), flush=True)


if __name__ == '__main__':
    main()
