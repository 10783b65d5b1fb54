#!/usr/bin/python3
"""torch_train.py — the training recipe of a PixFlow config, run in PyTorch 1.13, for
bench/quality/run.sh (PixFlow vs PyTorch training quality).

    /usr/bin/python3 bench/quality/torch_train.py RESOLVED.yaml [--threads 2] [--seed 0]

RESOLVED.yaml is `pixflow config CONFIG`'s output (every key resolved, so the recipe is the one
PixFlow runs). Used from it: model (type, scale, hyper-parameters; the network from
tests/reference/zoo_archs.py, initialised as its reference does: zoo_archs.reference_init), loss (L1Loss / MSELoss, loss_weight),
optimizers (Adam / AdamW: lr, betas, eps, weight_decay), lr_config (Step: step, gamma; Fixed),
total_iters, data.samples_per_gpu, data.train (gt_folder, gt_patch_size, use_flip, use_rot,
repeat; LQ by MATLAB bicubic: lq_folder must be null and no degradation other than BI),
data.eval (gt_folder), evaluation (crop_border, convert_to y).

Sampling as PixFlow's: each epoch visits every training image `repeat` times in a shuffled
order; a sample is a random LQ crop of gt_patch_size / scale and the matching GT crop, then
hflip, vflip, transpose each with probability 1/2 (BasicSR's augment). Evaluation: the whole
LQ through the network, clamp to [0, 1], round to uint8, PSNR on Y (BasicSR's convention,
scripts/bicubic_baseline.py) with crop_border. Prints one line per evaluation and a final
`final PSNR-Y <value>` line.
"""
import argparse
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'reference'))
import bicubic_baseline as bb  # noqa: E402
import zoo_archs  # noqa: E402

NOT_HP = {'type', 'scale', 'in_channels', 'out_channels', 'loss'}


def load_split(folder, scale):
    out = []
    for path in bb.list_pngs(folder):
        gt = bb.modcrop(bb.read_png_rgb8(path), scale)
        out.append((os.path.basename(path), gt, bb.imresize_u8(gt, 1.0 / scale)))
    return out


def sample(item, rng, lq_patch, scale, flip, rot):
    _, gt, lq = item
    h, w = lq.shape[:2]
    y, x = rng.integers(h - lq_patch + 1), rng.integers(w - lq_patch + 1)
    l = lq[y:y + lq_patch, x:x + lq_patch]
    g = gt[y * scale:(y + lq_patch) * scale, x * scale:(x + lq_patch) * scale]
    if flip and rng.random() < 0.5:
        l, g = l[:, ::-1], g[:, ::-1]
    if flip and rng.random() < 0.5:
        l, g = l[::-1], g[::-1]
    if rot and rng.random() < 0.5:
        l, g = l.transpose(1, 0, 2), g.transpose(1, 0, 2)
    return np.ascontiguousarray(l), np.ascontiguousarray(g)


def to_tensor(arrs):
    return torch.from_numpy(np.stack(arrs)).permute(0, 3, 1, 2).float().div_(255.0)


@torch.no_grad()
def evaluate(model, val, crop_border):
    model.eval()
    psnrs = []
    for _, gt, lq in val:
        x = torch.from_numpy(lq).permute(2, 0, 1).unsqueeze(0).float().div_(255.0)
        y = model(x).clamp(0, 1).mul(255.0).squeeze(0).permute(1, 2, 0).double().numpy()
        psnrs.append(bb.psnr_y(np.floor(y + 0.5).astype(np.uint8), gt, crop_border))
    model.train()
    return float(np.mean(psnrs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('config')
    ap.add_argument('--threads', type=int, default=2)
    ap.add_argument('--seed', type=int, default=0)
    args = ap.parse_args()
    cfg = yaml.safe_load(open(args.config))
    mc, data, ev = cfg['model'], cfg['data'], cfg['evaluation']
    tr = data['train']
    scale = int(mc['scale'])
    if tr.get('lq_folder') or any(d.get('type', 'BI') != 'BI' for d in tr.get('degradation') or []):
        raise SystemExit('torch_train: only on-the-fly BI (MATLAB bicubic) LQ is supported')
    if ev.get('convert_to', 'y') != 'y':
        raise SystemExit('torch_train: evaluation.convert_to must be y')
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    hp = {k: v for k, v in mc.items() if k not in NOT_HP}
    model = zoo_archs.reference_init(zoo_archs.build(mc['type'], scale, **hp), mc['type'])
    loss_cfg = mc.get('loss', {'type': 'L1Loss', 'loss_weight': 1.0})
    crit = {'L1Loss': F.l1_loss, 'MSELoss': F.mse_loss}[loss_cfg['type']]
    lw = float(loss_cfg.get('loss_weight', 1.0))
    oc = cfg['optimizers']
    opt_cls = {'Adam': torch.optim.Adam, 'AdamW': torch.optim.AdamW}[oc['type']]
    opt = opt_cls(model.parameters(), lr=float(oc['lr']), betas=tuple(oc['betas']),
                  eps=float(oc['eps']), weight_decay=float(oc.get('weight_decay', 0)))
    lc = cfg.get('lr_config') or {'policy': 'Fixed'}
    if lc['policy'] == 'Step':
        steps = lc['step'] if isinstance(lc['step'], list) else [lc['step']]
        sched = torch.optim.lr_scheduler.MultiStepLR(opt, milestones=steps, gamma=lc['gamma'])
    elif lc['policy'] == 'Fixed':
        sched = None
    else:
        raise SystemExit('torch_train: lr_config.policy %s not supported' % lc['policy'])

    train = load_split(os.path.join(ROOT, tr['gt_folder']) if not os.path.isabs(tr['gt_folder'])
                       else tr['gt_folder'], scale)
    eg = data['eval']['gt_folder']
    val = load_split(eg if os.path.isabs(eg) else os.path.join(ROOT, eg), scale)
    iters, batch = int(cfg['total_iters']), int(data['samples_per_gpu'])
    lq_patch = int(tr['gt_patch_size']) // scale
    repeat = int(tr.get('repeat', 1))
    interval = int(ev.get('interval', 0))
    crop = int(ev.get('crop_border', scale))
    print('%s x%d: %d parameters, %d iters, batch %d, GT patch %d, threads %d' %
          (mc['type'], scale, sum(p.numel() for p in model.parameters()), iters, batch,
           lq_patch * scale, torch.get_num_threads()), flush=True)
    order, pos = [], 0
    start = time.time()
    for it in range(1, iters + 1):
        lqs, gts = [], []
        for _ in range(batch):
            if pos == len(order):
                order, pos = list(rng.permutation(len(train) * repeat) % len(train)), 0
            l, g = sample(train[order[pos]], rng, lq_patch, scale, tr.get('use_flip', True),
                          tr.get('use_rot', True))
            pos += 1
            lqs.append(l)
            gts.append(g)
        loss = lw * crit(model(to_tensor(lqs)), to_tensor(gts))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        if it % 100 == 0:
            print('iter %d loss %.5f %.2f s/iter' % (it, loss.item(), (time.time() - start) / it),
                  flush=True)
        if interval and it % interval == 0 and it != iters:
            print('eval iter %d PSNR-Y %.4f' % (it, evaluate(model, val, crop)), flush=True)
    print('final PSNR-Y %.4f (iter %d, %.0f s)' % (evaluate(model, val, crop), iters,
                                                  time.time() - start), flush=True)


if __name__ == '__main__':
    main()
