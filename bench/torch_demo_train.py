#!/usr/bin/python3
"""torch_demo_train.py — PyTorch reference of PixFlow's demo training run (EDSR x2 on data/demo).

    /usr/bin/python3 bench/torch_demo_train.py [--iters 1800] [--time-limit SECONDS]
                                               [--eval-every 300] [--data DIR] [--seed 0]

Model: BasicSR's EDSR (num_feat 32, num_block 4, res_scale 1, upscale 2, img_range 255,
rgb_mean (0.4488, 0.4371, 0.4040)), PyTorch default init. Data: every PNG in DIR/train read as
RGB8 (PixFlow's PNG rule), mod-cropped to 2, LQ = MATLAB bicubic x1/2 rounded to uint8, made
once per image with the numpy imresize of scripts/bicubic_baseline.py. A batch is 16 samples;
each picks an image uniformly at random, a random 48x48 LQ crop and the matching 96x96 GT crop,
then hflip, vflip and transpose (rot90), each with probability 1/2 (BasicSR's augment).
L1 loss, Adam (lr 2e-4, betas 0.9/0.99), MultiStepLR gamma 0.5 at --milestones (default 2/3 of
--iters). torch.set_num_threads(2).

Every --eval-every iterations and at the end it evaluates on DIR/val: the whole LQ image
through the network, output clamped to [0, 1] and rounded to uint8, PSNR-Y against GT with
crop_border 2, next to bicubic (same LQ, MATLAB bicubic x2). The question it answers: how many
iterations does this tiny EDSR need to beat bicubic by >= 0.7 dB at x2 on the demo set.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import bicubic_baseline as bb  # noqa: E402


class ResidualBlockNoBN(nn.Module):
    def __init__(self, nf, res_scale=1.0):
        super().__init__()
        self.conv1 = nn.Conv2d(nf, nf, 3, 1, 1)
        self.conv2 = nn.Conv2d(nf, nf, 3, 1, 1)
        self.res_scale = res_scale

    def forward(self, x):
        return x + self.conv2(F.relu(self.conv1(x))) * self.res_scale


class EDSR(nn.Module):
    def __init__(self, nf=32, nb=4, scale=2, res_scale=1.0, img_range=255.0,
                 rgb_mean=(0.4488, 0.4371, 0.4040)):
        super().__init__()
        assert scale == 2
        self.img_range = img_range
        self.register_buffer('mean', torch.tensor(rgb_mean).view(1, 3, 1, 1))
        self.conv_first = nn.Conv2d(3, nf, 3, 1, 1)
        self.body = nn.Sequential(*[ResidualBlockNoBN(nf, res_scale) for _ in range(nb)])
        self.conv_after_body = nn.Conv2d(nf, nf, 3, 1, 1)
        self.upsample = nn.Sequential(nn.Conv2d(nf, 4 * nf, 3, 1, 1), nn.PixelShuffle(2))
        self.conv_last = nn.Conv2d(nf, 3, 3, 1, 1)

    def forward(self, x):
        x = (x - self.mean) * self.img_range
        x = self.conv_first(x)
        res = self.conv_after_body(self.body(x)) + x
        x = self.conv_last(self.upsample(res))
        return x / self.img_range + self.mean


def load_split(folder, scale):
    out = []
    for path in bb.list_pngs(folder):
        gt = bb.modcrop(bb.read_png_rgb8(path), scale)
        lq = bb.imresize_u8(gt, 1.0 / scale)
        out.append((os.path.basename(path), gt, lq))
    return out


def make_batch(train, rng, batch, lq_patch, scale):
    lqs, gts = [], []
    for _ in range(batch):
        _, gt, lq = train[rng.integers(len(train))]
        h, w = lq.shape[:2]
        y, x = rng.integers(h - lq_patch + 1), rng.integers(w - lq_patch + 1)
        l = lq[y:y + lq_patch, x:x + lq_patch]
        g = gt[y * scale:(y + lq_patch) * scale, x * scale:(x + lq_patch) * scale]
        if rng.random() < 0.5:
            l, g = l[:, ::-1], g[:, ::-1]
        if rng.random() < 0.5:
            l, g = l[::-1], g[::-1]
        if rng.random() < 0.5:
            l, g = l.transpose(1, 0, 2), g.transpose(1, 0, 2)
        lqs.append(np.ascontiguousarray(l))
        gts.append(np.ascontiguousarray(g))
    to_t = lambda a: torch.from_numpy(np.stack(a)).permute(0, 3, 1, 2).float().div_(255.0)
    return to_t(lqs), to_t(gts)


def tensor_to_u8(t):
    a = t.clamp(0, 1).mul(255.0).squeeze(0).permute(1, 2, 0).double().numpy()
    return np.floor(a + 0.5).astype(np.uint8)


@torch.no_grad()
def evaluate(model, val, scale, crop_border):
    model.eval()
    rows = []
    for name, gt, lq in val:
        x = torch.from_numpy(lq).permute(2, 0, 1).unsqueeze(0).float().div_(255.0)
        sr = tensor_to_u8(model(x))
        bic = bb.imresize_u8(lq, float(scale))
        rows.append((name, bb.psnr_y(sr, gt, crop_border), bb.psnr_y(bic, gt, crop_border)))
    model.train()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--iters', type=int, default=1800)
    ap.add_argument('--time-limit', type=float, default=0, help='seconds; 0 = none')
    ap.add_argument('--eval-every', type=int, default=300)
    ap.add_argument('--milestones', default=None, help='comma list; default 2/3 of --iters')
    ap.add_argument('--data', default=os.path.join(ROOT, 'data', 'demo'))
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--batch', type=int, default=16)
    ap.add_argument('--gt-patch', type=int, default=96)
    ap.add_argument('--lr', type=float, default=2e-4)
    args = ap.parse_args()
    scale, crop_border = 2, 2

    torch.set_num_threads(2)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    t0 = time.time()
    train = load_split(os.path.join(args.data, 'train'), scale)
    val = load_split(os.path.join(args.data, 'val'), scale)
    print('data: %d train, %d val images; LQ precomputed in %.1f s' %
          (len(train), len(val), time.time() - t0), flush=True)

    model = EDSR()
    nparams = sum(p.numel() for p in model.parameters())
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.99))
    ms = ([int(m) for m in args.milestones.split(',') if m] if args.milestones is not None
          else [max(1, (2 * args.iters) // 3)])
    sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=ms, gamma=0.5)
    print('EDSR nf32 nb4 x2: %d parameters; batch %d, GT patch %d, lr %g, milestones %s, '
          'threads %d' % (nparams, args.batch, args.gt_patch, args.lr, ms,
                          torch.get_num_threads()), flush=True)

    def report(it):
        rows = evaluate(model, val, scale, crop_border)
        net = np.mean([r[1] for r in rows])
        bic = np.mean([r[2] for r in rows])
        per = '  '.join('%s %.2f/%.2f' % (n.rsplit('.', 1)[0], a, b) for n, a, b in rows)
        print('[eval] iter %5d  PSNR-Y net %.4f  bicubic %.4f  gain %+.4f dB   (%s)' %
              (it, net, bic, net - bic, per), flush=True)
        return net - bic

    t_train, window, loss_acc, it = 0.0, time.time(), 0.0, 0
    lq_patch = args.gt_patch // scale
    start = time.time()
    for it in range(1, args.iters + 1):
        ts = time.time()
        lq, gt = make_batch(train, rng, args.batch, lq_patch, scale)
        loss = F.l1_loss(model(lq), gt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        t_train += time.time() - ts
        loss_acc += loss.item()
        if it % 50 == 0:
            print('iter %5d  loss %.5f  lr %.2e  %.3f s/step (last 50)  %.3f s/step (mean)' %
                  (it, loss_acc / 50, opt.param_groups[0]['lr'], (time.time() - window) / 50,
                   t_train / it), flush=True)
            window, loss_acc = time.time(), 0.0
        if args.eval_every and it % args.eval_every == 0:
            report(it)
        if args.time_limit and time.time() - start > args.time_limit:
            print('time limit reached at iter %d' % it, flush=True)
            break
    if not (args.eval_every and it % args.eval_every == 0):
        report(it)
    print('done: %d iters, %.3f s/step (training only), %.1f s wall' %
          (it, t_train / it, time.time() - start), flush=True)


if __name__ == '__main__':
    main()
