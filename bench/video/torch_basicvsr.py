#!/usr/bin/python3
"""torch_basicvsr.py — the PyTorch side of PixFlow's video demo (issue 17): BasicVSR x4 trained
on the demo clips, evaluated on a held-out part of one, PSNR-Y against wall time.

    /usr/bin/python3 bench/video/torch_basicvsr.py [--minutes 10] [--eval-every 60]
        [--feat 16] [--blocks 2] [--frames 3] [--batch 2] [--lq-patch 64] [--lr 1e-3]
        [--fix-iter 0] [--flow-lr-mult 1] [--threads 2] [--seed 0] [--clips DIR]
        [--json OUT] [--iters N [--eval-iters K]] [--steady-from 10] [--final-eval 1]
        [--init-out FILE.pth | --init-in FILE.pth] [--batches DIR]

Model: BasicVSR as BasicSR's basicvsr_arch.py describes it (Chan et al., CVPR 2021), written
here from that description: SPyNet (6 levels of 5 convs 7x7, ImageNet mean/std, input resized
to a multiple of 32 and the flow resized back and scaled, border padding in its own warps),
flow_warp (bilinear grid sample, align_corners=True, zero padding), backward and forward trunks
(conv 3x3 + LeakyReLU(0.1) + num_block residual blocks), 1x1 fusion, two conv + pixel shuffle
x2 stages, conv_hr, conv_last, plus the bilinear x4 upsampling of the LQ frame. Parameter names
are BasicSR's (spynet.basic_module.L.basic_module.K, backward_trunk.main.0, ...). PyTorch's
default initialisation; SPyNet random (no pretrained weights on a Debian machine).

Data, as PixFlow reads it (common/video_dataset.h): frames decoded by the ffmpeg CLI to RGB24
(byte-identical to common/video.c), LQ = MATLAB bicubic x1/4 of each GT frame rounded to uint8
(scripts/bicubic_baseline.py). Training clips: cityCC0.mpg frames 0-119, vtest.avi 0-149;
evaluation: cityCC0.mpg frames 130-149, GT crop x 104, y 72, 512 x 256 (LQ 128 x 64), all 20
frames through the network at once. Samples as BasicSR's REDSRecurrentDataset: a random frame
of the training frames, interval 1, start moved back near a clip's end, one random LQ crop and
one set of flips (hflip, vflip, transpose) for all frames. Charbonnier loss (eps 1e-12, mean),
Adam (betas 0.9, 0.99); SPyNet frozen for --fix-iter iterations, then at lr x --flow-lr-mult.

Evaluation: output clamped to [0, 1], rounded to uint8, PSNR on Y (BT.601, as BasicSR's
calculate_psnr test_y_channel) per frame, crop_border 0, averaged over the clip; beside it the
same for MATLAB bicubic x4 of the LQ. Training time excludes evaluation. One line per
evaluation: iteration, training seconds, PSNR-Y of the network and of bicubic, gain.

Paired runs (bench/video/same_iters.sh --paired: both sides from the same initial weights on
the same batches, so what differs is the implementation, not the seed): --init-out FILE writes
the seeded initial state_dict (torch.save, BasicSR's names) and exits; --init-in FILE starts
from one (load_state_dict strict=True); --batches DIR trains iteration i on the batch PixFlow's
worker wrote as DIR/iter_<i>_rank0.u8 (PF_DUMP_BATCHES, worker/worker.c dump_batch: a text line
"pixflow-batch 1 iter I rank R n N frames T gt_frames G lq_h H lq_w W gt_h H2 gt_w W2", then GT
n x G x gt_h x gt_w x 3 and LQ n x T x lq_h x lq_w x 3 uint8) instead of drawing its own.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
import bicubic_baseline as bb  # noqa: E402

SCALE = 4
TRAIN_CLIPS = [('cityCC0.mpg', 0, 120), ('vtest.avi', 0, 150)]
EVAL_CLIP = ('cityCC0.mpg', 130, 150, (104, 72, 512, 256))   # name, first, end, crop x y w h


def read_frames(path, first, end):
    """Frames [first, end) of a video as uint8 (T, H, W, 3), decoded by the ffmpeg CLI."""
    probe = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_entries',
                            'stream=width,height', '-of', 'csv=p=0', path],
                           capture_output=True, text=True, check=True).stdout
    w, h = (int(v) for v in probe.strip().split('\n')[0].split(',')[:2])
    raw = subprocess.run(['ffmpeg', '-v', 'error', '-nostdin', '-i', path, '-vf',
                          'select=between(n\\,%d\\,%d)' % (first, end - 1), '-vsync', '0',
                          '-pix_fmt', 'rgb24', '-f', 'rawvideo', '-'],
                         capture_output=True, check=True).stdout
    frames = np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)
    assert len(frames) == end - first, (path, len(frames), end - first)
    return frames


def modcrop(frames, s):
    h, w = frames.shape[1] - frames.shape[1] % s, frames.shape[2] - frames.shape[2] % s
    return frames[:, :h, :w]


def downscale(frames):
    return np.stack([bb.imresize_u8(f, 1.0 / SCALE) for f in frames])


# ---- the network ------------------------------------------------------------------------------

def flow_warp(x, flow, padding_mode='zeros'):
    """x (N, C, H, W) sampled at (x + flow[:, 0], y + flow[:, 1]) in pixels (flow (N, 2, H, W)),
    bilinear, align_corners=True."""
    n, _, h, w = x.shape
    gy, gx = torch.meshgrid(torch.arange(h, dtype=x.dtype), torch.arange(w, dtype=x.dtype),
                            indexing='ij')
    px = gx + flow[:, 0]
    py = gy + flow[:, 1]
    grid = torch.stack((2.0 * px / max(w - 1, 1) - 1.0, 2.0 * py / max(h - 1, 1) - 1.0), dim=3)
    return F.grid_sample(x, grid, mode='bilinear', padding_mode=padding_mode,
                         align_corners=True)


class SpyLevel(nn.Module):
    """One pyramid level: 8 -> 32 -> 64 -> 32 -> 16 -> 2 channels, 7x7, ReLU between."""

    def __init__(self):
        super().__init__()
        chans = [8, 32, 64, 32, 16, 2]
        layers = []
        for i in range(5):
            layers.append(nn.Conv2d(chans[i], chans[i + 1], 7, 1, 3))
            if i < 4:
                layers.append(nn.ReLU(inplace=False))
        self.basic_module = nn.Sequential(*layers)

    def forward(self, x):
        return self.basic_module(x)


class SpyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.basic_module = nn.ModuleList([SpyLevel() for _ in range(6)])
        self.register_buffer('mean', torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer('std', torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def process(self, ref, supp):
        ref = [(ref - self.mean) / self.std]
        supp = [(supp - self.mean) / self.std]
        for _ in range(5):
            ref.insert(0, F.avg_pool2d(ref[0], 2, 2, count_include_pad=False))
            supp.insert(0, F.avg_pool2d(supp[0], 2, 2, count_include_pad=False))
        n, _, h0, w0 = ref[0].shape
        # BasicSR starts from zeros at floor(1/64) and pads the upsampled zeros by replication
        # to 1/32: the same zeros, taken at 1/32 directly
        flow = ref[0].new_zeros(n, 2, h0, w0)
        for level in range(len(ref)):
            up = flow if level == 0 else F.interpolate(flow, scale_factor=2, mode='bilinear',
                                                       align_corners=True) * 2.0
            warped = flow_warp(supp[level], up, padding_mode='border')
            flow = self.basic_module[level](torch.cat([ref[level], warped, up], 1)) + up
        return flow

    def forward(self, ref, supp):
        h, w = ref.shape[2:]
        h32, w32 = math.ceil(h / 32) * 32, math.ceil(w / 32) * 32
        ref = F.interpolate(ref, size=(h32, w32), mode='bilinear', align_corners=False)
        supp = F.interpolate(supp, size=(h32, w32), mode='bilinear', align_corners=False)
        flow = F.interpolate(self.process(ref, supp), size=(h, w), mode='bilinear',
                             align_corners=False)
        scale = torch.tensor([w / w32, h / h32], dtype=flow.dtype).view(1, 2, 1, 1)
        return flow * scale


class ResidualBlockNoBN(nn.Module):
    def __init__(self, nf):
        super().__init__()
        self.conv1 = nn.Conv2d(nf, nf, 3, 1, 1)
        self.conv2 = nn.Conv2d(nf, nf, 3, 1, 1)

    def forward(self, x):
        return x + self.conv2(F.relu(self.conv1(x)))


class ConvResidualBlocks(nn.Module):
    def __init__(self, cin, nf, nb):
        super().__init__()
        self.main = nn.Sequential(nn.Conv2d(cin, nf, 3, 1, 1), nn.LeakyReLU(0.1),
                                  nn.Sequential(*[ResidualBlockNoBN(nf) for _ in range(nb)]))

    def forward(self, x):
        return self.main(x)


class BasicVSR(nn.Module):
    def __init__(self, num_feat=64, num_block=15):
        super().__init__()
        self.num_feat = num_feat
        self.spynet = SpyNet()
        self.backward_trunk = ConvResidualBlocks(num_feat + 3, num_feat, num_block)
        self.forward_trunk = ConvResidualBlocks(num_feat + 3, num_feat, num_block)
        self.fusion = nn.Conv2d(num_feat * 2, num_feat, 1, 1, 0)
        self.upconv1 = nn.Conv2d(num_feat, num_feat * 4, 3, 1, 1)
        self.upconv2 = nn.Conv2d(num_feat, 64 * 4, 3, 1, 1)
        self.conv_hr = nn.Conv2d(64, 64, 3, 1, 1)
        self.conv_last = nn.Conv2d(64, 3, 3, 1, 1)

    def forward(self, x):
        """x (N, T, 3, h, w) in [0, 1] -> (N, T, 3, 4h, 4w)."""
        n, t, c, h, w = x.shape
        a = x[:, :-1].reshape(-1, c, h, w)
        b = x[:, 1:].reshape(-1, c, h, w)
        flows_backward = self.spynet(a, b).view(n, t - 1, 2, h, w)
        flows_forward = self.spynet(b, a).view(n, t - 1, 2, h, w)
        lrelu = lambda v: F.leaky_relu(v, 0.1)  # noqa: E731
        back = [None] * t
        feat = x.new_zeros(n, self.num_feat, h, w)
        for i in range(t - 1, -1, -1):
            if i < t - 1:
                feat = flow_warp(feat, flows_backward[:, i])
            feat = self.backward_trunk(torch.cat([x[:, i], feat], 1))
            back[i] = feat
        outs = []
        feat = torch.zeros_like(feat)
        for i in range(t):
            if i > 0:
                feat = flow_warp(feat, flows_forward[:, i - 1])
            feat = self.forward_trunk(torch.cat([x[:, i], feat], 1))
            out = lrelu(self.fusion(torch.cat([back[i], feat], 1)))
            out = lrelu(F.pixel_shuffle(self.upconv1(out), 2))
            out = lrelu(F.pixel_shuffle(self.upconv2(out), 2))
            out = self.conv_last(lrelu(self.conv_hr(out)))
            out = out + F.interpolate(x[:, i], scale_factor=4, mode='bilinear',
                                      align_corners=False)
            outs.append(out)
        return torch.stack(outs, 1)


# ---- training -------------------------------------------------------------------------------

def make_batch(clips, rng, batch, frames, lq_patch, n_total):
    """BasicSR REDSRecurrentDataset samples: (N, T, 3, p, p) LQ and (N, T, 3, 4p, 4p) GT."""
    lqs, gts = [], []
    for _ in range(batch):
        k = int(rng.integers(n_total))
        for gt, lq in clips:
            if k < len(gt):
                break
            k -= len(gt)
        n = len(gt)
        if k > n - frames:
            k = int(rng.integers(n - frames + 1))
        top = int(rng.integers(lq.shape[1] - lq_patch + 1))
        left = int(rng.integers(lq.shape[2] - lq_patch + 1))
        hflip, vflip, rot = rng.random(3) < 0.5
        l = lq[k:k + frames, top:top + lq_patch, left:left + lq_patch]
        g = gt[k:k + frames, SCALE * top:SCALE * (top + lq_patch),
               SCALE * left:SCALE * (left + lq_patch)]
        if hflip:
            l, g = l[:, :, ::-1], g[:, :, ::-1]
        if vflip:
            l, g = l[:, ::-1], g[:, ::-1]
        if rot:
            l, g = l.transpose(0, 2, 1, 3), g.transpose(0, 2, 1, 3)
        lqs.append(np.ascontiguousarray(l))
        gts.append(np.ascontiguousarray(g))
    to_t = lambda a: torch.from_numpy(np.stack(a)).permute(0, 1, 4, 2, 3).float() / 255.0  # noqa
    return to_t(lqs), to_t(gts)


def read_batch(folder, it, batch, frames, lq_patch):
    """PixFlow's batch of iteration `it` (rank 0) as make_batch returns one: (N, T, 3, p, p) LQ
    and (N, T, 3, 4p, 4p) GT, float in [0, 1]; an error naming the file when it is missing or
    its shape is not the one asked for."""
    path = os.path.join(folder, 'iter_%d_rank0.u8' % it)
    with open(path, 'rb') as f:
        head = f.readline().decode().split()
        if head[:2] != ['pixflow-batch', '1'] or len(head) % 2:
            sys.exit('%s: not a pixflow-batch 1 file' % path)
        h = {head[i]: int(head[i + 1]) for i in range(2, len(head), 2)}
        want = {'iter': it, 'n': batch, 'frames': frames, 'gt_frames': frames, 'lq_h': lq_patch,
                'lq_w': lq_patch, 'gt_h': SCALE * lq_patch, 'gt_w': SCALE * lq_patch}
        bad = ['%s %s (expected %s)' % (k, h.get(k), v) for k, v in want.items() if h.get(k) != v]
        if bad:
            sys.exit('%s: %s' % (path, ', '.join(bad)))
        gt = np.frombuffer(f.read(batch * frames * h['gt_h'] * h['gt_w'] * 3), np.uint8)
        lq = np.frombuffer(f.read(batch * frames * lq_patch * lq_patch * 3), np.uint8)
        if lq.size != batch * frames * lq_patch * lq_patch * 3 or f.read(1):
            sys.exit('%s: truncated or too long' % path)
    gt = gt.reshape(batch, frames, h['gt_h'], h['gt_w'], 3)
    lq = lq.reshape(batch, frames, lq_patch, lq_patch, 3)
    to_t = lambda a: torch.from_numpy(a.copy()).permute(0, 1, 4, 2, 3).float() / 255.0  # noqa
    return to_t(lq), to_t(gt)


def evaluate(model, gt, lq, bicubic):
    with torch.no_grad():
        x = torch.from_numpy(lq).permute(0, 3, 1, 2).float().unsqueeze(0) / 255.0
        out = model(x)[0].clamp(0, 1).permute(0, 2, 3, 1).numpy()
    out = np.round(out * 255.0).astype(np.uint8)
    net = np.mean([bb.psnr_y(out[i], gt[i], 0) for i in range(len(gt))])
    return float(net), bicubic


def main(make_model=None, label='BasicVSR', add_args=None):
    """Train and evaluate; make_model(args) builds the network (default BasicVSR(--feat,
    --blocks)), label names it in the output, add_args(parser) adds its own options
    (bench/video/torch_basicvsrpp.py)."""
    ap = argparse.ArgumentParser()
    ap.add_argument('--minutes', type=float, default=10)
    ap.add_argument('--iters', type=int, default=0, help='stop after this many (0: time)')
    ap.add_argument('--eval-every', type=float, default=60, help='training seconds')
    ap.add_argument('--eval-iters', type=int, default=0,
                    help='evaluate every this many iterations instead (0: by time)')
    ap.add_argument('--feat', type=int, default=16)
    ap.add_argument('--blocks', type=int, default=2)
    ap.add_argument('--frames', type=int, default=3)
    ap.add_argument('--batch', type=int, default=2)
    ap.add_argument('--lq-patch', type=int, default=64)
    ap.add_argument('--lr', type=float, default=1e-3)
    ap.add_argument('--fix-iter', type=int, default=0)
    ap.add_argument('--flow-lr-mult', type=float, default=1.0)
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--seed', type=int, default=0)
    ap.add_argument('--clips', default=os.path.join(ROOT, 'data', 'demo_video'))
    ap.add_argument('--json', default='')
    ap.add_argument('--steady-from', type=int, default=10,
                    help='steps before this one are warm-up: "steady" is the median of the rest')
    ap.add_argument('--final-eval', type=int, default=1, help='0: no evaluation at the end')
    ap.add_argument('--init-out', default='', help='write the initial state_dict here, exit')
    ap.add_argument('--init-in', default='', help='start from this state_dict (strict)')
    ap.add_argument('--batches', default='', help="PixFlow's dumped batches (PF_DUMP_BATCHES)")
    if add_args:
        add_args(ap)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    if a.init_out:
        model = make_model(a) if make_model else BasicVSR(a.feat, a.blocks)
        torch.save(model.state_dict(), a.init_out)
        print('init: %s (seed %d, %d tensors)' % (a.init_out, a.seed, len(model.state_dict())))
        return

    t0 = time.time()
    clips = []
    for name, first, end in TRAIN_CLIPS:
        gt = modcrop(read_frames(os.path.join(a.clips, name), first, end), SCALE)
        clips.append((gt, downscale(gt)))
    name, first, end, (cx, cy, cw, ch) = EVAL_CLIP
    egt = read_frames(os.path.join(a.clips, name), first, end)[:, cy:cy + ch, cx:cx + cw]
    elq = downscale(egt)
    up = [bb.imresize_u8(f, SCALE) for f in elq]
    bicubic = float(np.mean([bb.psnr_y(up[i], egt[i], 0) for i in range(len(egt))]))
    n_total = sum(len(g) for g, _ in clips)
    print('data: %d training frames, eval %s [%d, %d) crop %dx%d, bicubic PSNR-Y %.2f dB '
          '(%.1f s to load)' % (n_total, name, first, end, cw, ch, bicubic, time.time() - t0),
          flush=True)

    model = make_model(a) if make_model else BasicVSR(a.feat, a.blocks)
    if a.init_in:
        model.load_state_dict(torch.load(a.init_in), strict=True)
        print('init: %s' % a.init_in)
    flow_params = [p for n, p in model.named_parameters() if n.startswith('spynet.')]
    other = [p for n, p in model.named_parameters() if not n.startswith('spynet.')]
    opt = torch.optim.Adam([{'params': other, 'lr': a.lr},
                            {'params': flow_params, 'lr': a.lr * a.flow_lr_mult}],
                           betas=(0.9, 0.99))
    print('model: %s num_feat %d num_block %d, %d parameters (SPyNet %d); %d frames, '
          'batch %d, LQ patch %d, lr %g, fix_iter %d, flow_lr_mult %g, %d threads'
          % (label, a.feat, a.blocks, sum(p.numel() for p in model.parameters()),
             sum(p.numel() for p in flow_params), a.frames, a.batch, a.lq_patch, a.lr,
             a.fix_iter, a.flow_lr_mult, a.threads), flush=True)
    curve = []
    train_s, next_eval, it = 0.0, a.eval_every, 0
    step_s = []                         # seconds of each training step
    losses = []                         # loss of each training step
    limit = a.minutes * 60
    while True:
        if (a.iters and it >= a.iters) or (not a.iters and train_s >= limit):
            break
        t = time.time()
        for p in flow_params:
            p.requires_grad_(it >= a.fix_iter)
        if a.batches:
            lq, gt = read_batch(a.batches, it, a.batch, a.frames, a.lq_patch)
        else:
            lq, gt = make_batch(clips, rng, a.batch, a.frames, a.lq_patch, n_total)
        out = model(lq)
        loss = torch.mean(torch.sqrt((out - gt) ** 2 + 1e-12))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        it += 1
        losses.append(float(loss))
        step_s.append(time.time() - t)
        train_s += step_s[-1]
        if (a.eval_iters and it % a.eval_iters == 0 and it < a.iters) or \
                (not a.eval_iters and train_s >= next_eval):
            model.eval()
            net, bic = evaluate(model, egt, elq, bicubic)
            model.train()
            curve.append({'iter': it, 'train_s': round(train_s, 1), 'psnr_y': round(net, 3),
                          'bicubic': round(bic, 3), 'gain': round(net - bic, 3),
                          'loss': round(float(loss), 5)})
            print('iter %5d  %6.1f s  %.3f s/iter  PSNR-Y %.2f dB  bicubic %.2f  gain %+.2f  '
                  'loss %.4f' % (it, train_s, train_s / it, net, bic, net - bic, float(loss)),
                  flush=True)
            next_eval += a.eval_every
    if a.final_eval:
        model.eval()
        net, bic = evaluate(model, egt, elq, bicubic)
        curve.append({'iter': it, 'train_s': round(train_s, 1), 'psnr_y': round(net, 3),
                      'bicubic': round(bic, 3), 'gain': round(net - bic, 3)})
        print('end: %d iterations in %.1f s (%.3f s/iter): PSNR-Y %.2f dB, bicubic %.2f, gain '
              '%+.2f' % (it, train_s, train_s / max(it, 1), net, bic, net - bic), flush=True)
    else:
        print('end: %d iterations in %.1f s (%.3f s/iter), not evaluated'
              % (it, train_s, train_s / max(it, 1)), flush=True)
    w = a.steady_from
    if len(step_s) > w:                 # torch's first steps warm up: the steady step
        steady = sorted(step_s[w:])
        print('steady: median %.3f s/step over iterations %d..%d (min %.3f, max %.3f)'
              % (steady[len(steady) // 2], w + 1, it, steady[0], steady[-1]), flush=True)
    if a.json:
        with open(a.json, 'w') as f:
            json.dump({'args': vars(a), 'curve': curve, 'losses': losses}, f, indent=1)


if __name__ == '__main__':
    main()
