#!/usr/bin/python3
"""torch_loader — the demo pipeline in PyTorch 1.13's DataLoader, the counterpart of PixFlow's
loaders in bench/loader/run.sh: patches per second and patches per CPU-second of the workers.

What a sample is, as BasicSR's PairedImageDataset (and PixFlow's loader) makes it: file
`index % n_files` (RepeatDataset), paired_random_crop (an LQ patch of gt_patch/scale at a random
position, the GT patch at scale times it), then augment: hflip, vflip, transpose (rot90 in
BasicSR's terms), each with probability 1/2, in that order, with Python's `random` as BasicSR
does. Patches stay uint8 HWC (PixFlow ships uint8 NHWC and converts on the worker; BasicSR
converts whole images to float32 before cropping, which would only slow this side down).
Batches of --batch are collated by the workers into shared memory, as usual.

Variants:
  disk    BasicSR's default (disk backend): every sample reads and decodes its GT and LQ PNG.
  memory  each worker process decodes every image once (on first use) and keeps it, as
          PixFlow's loader does.

Both read the folder that --prepare writes once: GT as RGB8 (PixFlow's rule for 16-bit PNGs,
(v*255 + 32767) // 65535, via scripts/bicubic_baseline.py, since Pillow truncates
hdr_room.png), mod-cropped to the scale, and LQ by the same MATLAB bicubic (numpy) PixFlow
uses, saved as PNG.

usage:
  /usr/bin/python3 bench/loader/torch_loader.py --prepare DIR [--train data/demo/train] [--scale 2]
  /usr/bin/python3 bench/loader/torch_loader.py --data DIR --variant disk|memory --workers N
        [--scale 2] [--gt-patch 96] [--batch 16] [--repeat 100] [--warmup 3] [--window 12]

One line per measurement on stdout:
  torch variant=disk workers=2 gt_patch=96 batch=16 window_s=12.00 batches=... patches_per_s=...
        payload_MB_per_s=... worker_cpu_s=... patches_per_worker_cpu_s=... main_cpu_s=...
The window starts --warmup seconds after the first batch; CPU seconds come from /proc over the
window (workers: all DataLoader worker processes; main: the process that receives the batches).
torch.set_num_threads(1) in every process.
"""
import argparse
import os
import random
import sys
import time

import numpy as np
import torch
from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import bicubic_baseline as bb  # noqa: E402  (PNG -> RGB8 by PixFlow's rule, MATLAB bicubic)

CLK_TCK = os.sysconf('SC_CLK_TCK')


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` (all threads), from /proc/PID/stat."""
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def prepare(train, out, scale):
    """Write OUT/gt/NAME.png (RGB8, mod-cropped) and OUT/lq/NAME.png (MATLAB bicubic 1/scale)."""
    for sub in ('gt', 'lq'):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    t0 = time.time()
    for path in bb.list_pngs(train):
        name = os.path.basename(path)
        gt = bb.modcrop(bb.read_png_rgb8(path), scale)
        lq = bb.imresize_u8(gt, 1.0 / scale)
        Image.fromarray(gt).save(os.path.join(out, 'gt', name))
        Image.fromarray(lq).save(os.path.join(out, 'lq', name))
    print('torch_loader: prepared %s (GT RGB8 + bicubic LQ x%d) in %.1f s' %
          (out, scale, time.time() - t0), file=sys.stderr)


def read_rgb8(path):
    img = Image.open(path)
    if img.mode != 'RGB':
        raise ValueError('%s: mode %s, expected RGB (run --prepare)' % (path, img.mode))
    return np.asarray(img)


class PairedPatches(torch.utils.data.Dataset):
    """GT/LQ patch pairs from DATA/gt and DATA/lq; see the module docstring."""

    def __init__(self, data, scale, gt_patch, repeat, in_memory):
        self.names = sorted(n for n in os.listdir(os.path.join(data, 'gt')) if n.endswith('.png'))
        if not self.names:
            raise SystemExit('torch_loader: no PNG in %s/gt (run --prepare)' % data)
        self.data, self.scale, self.gt_patch = data, scale, gt_patch
        self.repeat, self.in_memory = repeat, in_memory
        self.cache = {}             # file -> (gt, lq), filled per worker process when in_memory

    def __len__(self):
        return len(self.names) * self.repeat

    def pair(self, i):
        if i in self.cache:
            return self.cache[i]
        p = (read_rgb8(os.path.join(self.data, 'gt', self.names[i])),
             read_rgb8(os.path.join(self.data, 'lq', self.names[i])))
        if self.in_memory:
            self.cache[i] = p
        return p

    def __getitem__(self, index):
        gt, lq = self.pair(index % len(self.names))
        # BasicSR paired_random_crop
        lp = self.gt_patch // self.scale
        top = random.randint(0, lq.shape[0] - lp)
        left = random.randint(0, lq.shape[1] - lp)
        lq = lq[top:top + lp, left:left + lp]
        gt = gt[top * self.scale:top * self.scale + self.gt_patch,
                left * self.scale:left * self.scale + self.gt_patch]
        # BasicSR augment(hflip=True, rotation=True)
        hflip, vflip, rot90 = random.random() < 0.5, random.random() < 0.5, random.random() < 0.5
        out = []
        for img in (gt, lq):
            if hflip:
                img = img[:, ::-1]
            if vflip:
                img = img[::-1]
            if rot90:
                img = img.transpose(1, 0, 2)
            out.append(torch.from_numpy(np.ascontiguousarray(img)))
        return out[0], out[1]


def worker_init(_):
    torch.set_num_threads(1)


def measure(args):
    torch.set_num_threads(1)
    ds = PairedPatches(args.data, args.scale, args.gt_patch, args.repeat,
                       args.variant == 'memory')
    # One long epoch (no end-of-epoch stall), workers kept alive: the steady state.
    sampler = torch.utils.data.RandomSampler(ds, num_samples=10 ** 9)
    loader = torch.utils.data.DataLoader(ds, batch_size=args.batch, sampler=sampler,
                                         num_workers=args.workers, drop_last=True,
                                         persistent_workers=True, worker_init_fn=worker_init)
    it = iter(loader)
    pids = [w.pid for w in it._workers]   # the DataLoader's worker processes
    t_first = t_window = None
    batches = 0
    payload = 0
    for gt, lq in it:
        now = time.perf_counter()
        if t_first is None:
            t_first = now
        if t_window is None:
            if now - t_first >= args.warmup:
                t_window = now
                cpu0 = [cpu_seconds(p) for p in pids]
                main0 = cpu_seconds(os.getpid())
            continue
        batches += 1
        payload += gt.numel() + lq.numel()
        if now - t_window >= args.window:
            break
    dt = time.perf_counter() - t_window
    wcpu = sum(cpu_seconds(p) - c for p, c in zip(pids, cpu0))
    patches = batches * args.batch
    print('torch variant=%s workers=%d gt_patch=%d batch=%d window_s=%.2f batches=%d '
          'patches_per_s=%.1f payload_MB_per_s=%.1f worker_cpu_s=%.2f '
          'patches_per_worker_cpu_s=%.1f main_cpu_s=%.2f' %
          (args.variant, args.workers, args.gt_patch, args.batch, dt, batches, patches / dt,
           payload / dt / 1e6, wcpu, patches / wcpu if wcpu > 0 else 0.0,
           cpu_seconds(os.getpid()) - main0), flush=True)
    del it


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--prepare', metavar='DIR', help='write GT/LQ PNGs to DIR and exit')
    ap.add_argument('--train', default=os.path.join(ROOT, 'data', 'demo', 'train'))
    ap.add_argument('--data', metavar='DIR', help='a folder written by --prepare')
    ap.add_argument('--variant', choices=('disk', 'memory'), default='disk')
    ap.add_argument('--workers', type=int, default=1)
    ap.add_argument('--scale', type=int, default=2)
    ap.add_argument('--gt-patch', type=int, default=96)
    ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--repeat', type=int, default=100)
    ap.add_argument('--warmup', type=float, default=3.0)
    ap.add_argument('--window', type=float, default=12.0)
    args = ap.parse_args()
    if args.prepare:
        prepare(args.train, args.prepare, args.scale)
        return 0
    if not args.data or args.workers < 1:
        ap.error('--data DIR and --workers >= 1 are needed (or --prepare DIR)')
    measure(args)
    return 0


if __name__ == '__main__':
    sys.exit(main())
