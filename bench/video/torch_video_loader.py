#!/usr/bin/python3
"""torch_video_loader — the PyTorch side of PixFlow's frame-loading benchmark
(bench/video/loader_ratio.sh): a torch.utils.data.Dataset that makes the samples of
configs/demo_video.yaml's training set the way BasicSR's REDSRecurrentDataset does (a random
frame of the training frames, interval 1, the start moved back near a clip's end, num_frame
consecutive frames, LQ = MATLAB bicubic x1/4 of each whole GT frame (scripts/bicubic_baseline.py,
the numpy port BasicSR's matlab_functions.imresize also is), one random LQ crop and the GT crop
at 4x, one set of flips), reading the frames straight from the video files with PyAV (Debian's
python3-av, FFmpeg 5.1 inside: the libraries PixFlow's reader uses; its RGB conversion differs from
the ffmpeg CLI's by up to ~40 levels on cityCC0.mpg, the frames are the same): seek to the keyframe
before the first frame, decode forward. Served by a DataLoader with one worker process (one
core) and batch 2; prints samples per second after a warm-up.

usage: /usr/bin/python3 bench/video/torch_video_loader.py [--samples 60] [--workers 1]
"""
import argparse
import os
import sys
import time

import av
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import bicubic_baseline as bb  # noqa: E402

CLIPS = [('cityCC0.mpg', 0, 120), ('vtest.avi', 0, 150)]   # configs/demo_video.yaml
SCALE, NUM_FRAME, GT_PATCH = 4, 3, 256


class Reader:
    """Frames of one video by index: seek to the keyframe before, then decode forward (frame
    numbers from the timestamps and the stream's rate)."""

    def __init__(self, path):
        self.c = av.open(path)
        self.s = self.c.streams.video[0]
        self.s.thread_type = 'NONE'         # one core: the DataLoader worker's
        self.rate = float(self.s.average_rate)
        self.tb = float(self.s.time_base)
        self.start = self.s.start_time or 0

    def frames(self, first, n):
        """Frames [first, first + n): decoding starts at a keyframe at or before `first` (the
        frames after a seek are not clean before one); seek further back while the keyframe
        reached is later, from the file's start at last."""
        back = 0.0                          # seconds before the frame to seek to
        while True:
            t = max(first / self.rate - back, 0.0)
            if t > 0:
                self.c.seek(self.start + int(t / self.tb), stream=self.s, backward=True,
                            any_frame=False)
            else:                           # from the start: open the file again
                self.c.close()
                self.__init__(self.c.name)
            out, clean = [], False
            for f in self.c.decode(self.s):
                if f.pts is None:
                    continue
                idx = int(round((f.pts - self.start) * self.tb * self.rate))
                clean = clean or f.key_frame or t == 0
                if not clean:
                    continue
                if idx > first and not out:
                    break                   # landed after it (MPEG-PS seeks are coarse)
                if idx < first:
                    continue
                out.append(f.to_ndarray(format='rgb24'))
                if len(out) == n:
                    return out
            assert t > 0, (first, n, len(out))
            back = back * 2 if back else 1.0


class REDSLike(Dataset):
    def __init__(self, folder, seed=0):
        self.folder, self.seed = folder, seed
        self.readers = None
        self.index = [(c, f) for c, (_, a, b) in enumerate(CLIPS) for f in range(b - a)]

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        if self.readers is None:            # one set per worker process
            self.readers = [Reader(os.path.join(self.folder, n)) for n, _, _ in CLIPS]
        rng = np.random.default_rng([self.seed, i])
        c, f = self.index[i]
        n_c = CLIPS[c][2] - CLIPS[c][1]
        if f > n_c - NUM_FRAME:
            f = int(rng.integers(0, n_c - NUM_FRAME + 1))
        gts = [bb.modcrop(x, SCALE) for x in self.readers[c].frames(CLIPS[c][1] + f, NUM_FRAME)]
        lqs = [bb.imresize_u8(g, 1.0 / SCALE) for g in gts]
        p = GT_PATCH // SCALE
        lh, lw = lqs[0].shape[:2]
        top, left = int(rng.integers(0, lh - p + 1)), int(rng.integers(0, lw - p + 1))
        hflip, vflip, rot = rng.random(3) < 0.5
        outs_l, outs_g = [], []
        for g, l in zip(gts, lqs):
            l = l[top:top + p, left:left + p]
            g = g[top * SCALE:(top + p) * SCALE, left * SCALE:(left + p) * SCALE]
            if hflip:
                l, g = l[:, ::-1], g[:, ::-1]
            if vflip:
                l, g = l[::-1], g[::-1]
            if rot:
                l, g = l.transpose(1, 0, 2), g.transpose(1, 0, 2)
            outs_l.append(np.ascontiguousarray(l))
            outs_g.append(np.ascontiguousarray(g))
        return torch.from_numpy(np.stack(outs_l)), torch.from_numpy(np.stack(outs_g))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--samples', type=int, default=60)
    ap.add_argument('--workers', type=int, default=1)
    ap.add_argument('--clips', default=os.path.join(ROOT, 'data', 'demo_video'))
    a = ap.parse_args()
    torch.set_num_threads(1)
    ds = REDSLike(a.clips)
    gen = torch.Generator().manual_seed(0)
    dl = DataLoader(ds, batch_size=2, shuffle=True, num_workers=a.workers, generator=gen,
                    persistent_workers=a.workers > 0)
    it = iter(dl)
    for _ in range(2):                      # warm-up: worker start, readers open
        next(it)
    t0 = time.time()
    n = 0
    while n < a.samples:
        lq, gt = next(it)
        n += lq.shape[0]
    dt = time.time() - t0
    print('torch DataLoader (%d worker, PyAV + numpy MATLAB bicubic) %d samples of %d frames '
          '(GT %d x %d): %.2f samples/s (%.1f frames/s)' % (a.workers, n, NUM_FRAME, GT_PATCH,
                                                           GT_PATCH, n / dt, n * NUM_FRAME / dt))


if __name__ == '__main__':
    main()
