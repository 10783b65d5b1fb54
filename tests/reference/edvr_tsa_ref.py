#!/usr/bin/python3
"""edvr_tsa_ref.py — PyTorch reference for tests/test_edvr_tsa.c `torch` (ctest
test_edvr_tsa.torch): EDVR's tsa_iter as BasicSR's EDVRModel.optimize_parameters
(basicsr/models/edvr_model.py) runs it, restated here:

    current_iter 1:         requires_grad False on every parameter without 'fusion' in its name
    current_iter tsa_iter:  requires_grad True on every parameter (an elif of the above)
    then zero_grad, forward, Charbonnier loss (eps 1e-12, mean), backward, (PixFlow's
    optimizer_config.grad_clip: torch.nn.utils.clip_grad_norm_ over the parameters, which skips
    those whose grad is None, as MMCV's OptimizerHook), torch.optim.Adam.step (a parameter whose
    grad is None gets no update, no weight decay, no state; its 'step' starts at its first
    gradient), BasicSR's model_ema (ema = decay ema + (1 - decay) p over every parameter).

`edvr_tsa_ref.py DIR`: DIR (written by the C test) holds params.txt (`config N T H W C DG NEXT
NREC CENTER TSA`, `train K TSA_ITER LR BETA1 BETA2 EPS WEIGHT_DECAY MAX_NORM EMA_DECAY`, then
`param NAME OFFSET NDIM SHAPE...` per tensor in PixFlow's order), params.f32 (the weights
before step 1), lqS.u8 / gtS.u8 (step S's batch: N T H W 3 and N 4H 4W 3) and pfS.f32 /
emaS.f32 (PixFlow's parameters and EMA after step S). The run is made in float64 (the
reference) and float32 (PyTorch's own rounding, printed beside); after every step every PixFlow
tensor, parameters and EMA, must be within 1e-4 of the float64 tensor's largest |value|
(rel_err). Three variants in float64 show the bound tells them apart: MMagic's EDVR boundary
(fusion alone for tsa_iter steps, one more), the clipping norm over the frozen tensors'
gradients too, and no tsa_iter at all must each land beyond 1e-4 from the reference at some
step. Exit status 1 on any failure.
"""
import os
import sys

import numpy as np
import torch

from edvr_ref import EDVR
from layout_check import rel_err

BOUND = 1e-4


def read_case(folder):
    params = []
    with open(os.path.join(folder, 'params.txt')) as f:
        for line in f:
            p = line.split()
            if p[0] == 'config':
                cfg = dict(zip(('n', 't', 'h', 'w', 'c', 'dg', 'n_ext', 'n_rec', 'center', 'tsa'),
                               map(int, p[1:])))
            elif p[0] == 'train':
                tr = dict(k=int(p[1]), tsa_iter=int(p[2]), lr=float(p[3]),
                          betas=(float(p[4]), float(p[5])), eps=float(p[6]), wd=float(p[7]),
                          max_norm=float(p[8]), ema=float(p[9]))
            elif p[0] == 'param':
                params.append((p[1], int(p[2]), tuple(int(v) for v in p[4:4 + int(p[3])])))
    return cfg, tr, params


def unflat(flat, params, dtype):
    return {name: torch.from_numpy(flat[off:off + int(np.prod(shape))].copy()).view(shape)
            .to(dtype) for name, off, shape in params}


def freeze_all_but_fusion(model):
    for name, p in model.named_parameters():
        if 'fusion' not in name:
            p.requires_grad = False


def unfreeze(model):
    for p in model.parameters():
        p.requires_grad = True


def train(folder, cfg, tr, params, dtype, schedule):
    """Train K steps in dtype; schedule 'basicsr' (EDVRModel), 'mmagic' (MMagic's EDVR:
    fusion alone while its 0-based step_counter < tsa_iter), 'clip_all' (BasicSR's boundary,
    but the clipping norm taken over every tensor's gradient, the frozen ones' too, before
    they are dropped) or 'none'. Returns per step ({name: parameter}, {name: ema}) in
    float64."""
    c = cfg
    model = EDVR(c=c['c'], t=c['t'], dg=c['dg'], n_ext=c['n_ext'], n_rec=c['n_rec'],
                 center=c['center'], tsa=bool(c['tsa']))
    flat = np.fromfile(os.path.join(folder, 'params.f32'), dtype=np.float32)
    model.load_state_dict(unflat(flat, params, torch.float32), strict=True)
    model = model.to(dtype)
    ema = {k: v.detach().clone() for k, v in model.named_parameters()}
    opt = torch.optim.Adam(model.parameters(), lr=tr['lr'], betas=tr['betas'], eps=tr['eps'],
                           weight_decay=tr['wd'])
    n, t, h, w = c['n'], c['t'], c['h'], c['w']
    out = []
    for current_iter in range(1, tr['k'] + 1):
        if schedule == 'basicsr' and tr['tsa_iter']:
            if current_iter == 1:
                freeze_all_but_fusion(model)
            elif current_iter == tr['tsa_iter']:
                unfreeze(model)
        if schedule == 'mmagic':
            step_counter = current_iter - 1
            if step_counter == 0:
                freeze_all_but_fusion(model)
            if step_counter == tr['tsa_iter']:
                unfreeze(model)
        lq = np.fromfile(os.path.join(folder, 'lq%d.u8' % current_iter), dtype=np.uint8)
        gt = np.fromfile(os.path.join(folder, 'gt%d.u8' % current_iter), dtype=np.uint8)
        x = torch.from_numpy(lq).view(n, t, h, w, 3).permute(0, 1, 4, 2, 3).to(dtype) / 255.0
        y = torch.from_numpy(gt).view(n, 4 * h, 4 * w, 3).permute(0, 3, 1, 2).to(dtype) / 255.0
        opt.zero_grad()
        loss = torch.mean(torch.sqrt((model(x) - y) ** 2 + 1e-12))
        loss.backward()
        if tr['max_norm'] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), tr['max_norm'])
        # clip_all: nothing frozen through requires_grad, so every gradient is in the norm;
        # the non-fusion ones are dropped after it, and Adam skips them as it does frozen ones
        if schedule == 'clip_all' and current_iter < tr['tsa_iter']:
            for name, p in model.named_parameters():
                if 'fusion' not in name:
                    p.grad = None
        opt.step()
        with torch.no_grad():
            for k, p in model.named_parameters():
                ema[k].mul_(tr['ema']).add_(p, alpha=1 - tr['ema'])
        out.append(({k: p.detach().double().clone() for k, p in model.named_parameters()},
                    {k: v.double().clone() for k, v in ema.items()}))
    return out


def worst(a, b):
    """The largest rel_err over the tensors of a against b ({name: tensor}), and where."""
    return max((rel_err(a[k], b[k]), k) for k in b)


def main():
    folder = sys.argv[1]
    cfg, tr, params = read_case(folder)
    torch.manual_seed(0)
    bad = []
    ref = train(folder, cfg, tr, params, torch.float64, 'basicsr')
    f32 = train(folder, cfg, tr, params, torch.float32, 'basicsr')
    variants = {v: train(folder, cfg, tr, params, torch.float64, v)
                for v in ('mmagic', 'clip_all', 'none')}
    far = {v: 0.0 for v in variants}
    for s in range(1, tr['k'] + 1):
        p64, e64 = ref[s - 1]
        pf = unflat(np.fromfile(os.path.join(folder, 'pf%d.f32' % s), dtype=np.float32), params,
                    torch.float64)
        pe = unflat(np.fromfile(os.path.join(folder, 'ema%d.f32' % s), dtype=np.float32), params,
                    torch.float64)
        ep, wp = worst(pf, p64)
        ee, we = worst(pe, e64)
        tp, _ = worst(f32[s - 1][0], p64)
        te, _ = worst(f32[s - 1][1], e64)
        for v in variants:
            far[v] = max(far[v], worst(variants[v][s - 1][0], p64)[0])
        phase = 'fusion only' if s < tr['tsa_iter'] else 'all'
        print('step %d (%s): PixFlow parameters within %.2g of float64 (worst %s), EMA %.2g '
              '(%s); PyTorch float32 %.2g, %.2g' % (s, phase, ep, wp, ee, we, tp, te))
        if ep > BOUND or ee > BOUND:
            bad.append('step %d: PixFlow %.3g (%s) / EMA %.3g (%s) from float64, bound %g'
                       % (s, ep, wp, ee, we, BOUND))
    for v, d in far.items():
        print('variant %s: up to %.2g from the reference' % (v, d))
        if d <= BOUND:
            bad.append('variant %s lands within the bound (%.3g): the test cannot tell it' % (v, d))
    for b in bad:
        print('edvr_tsa_ref: FAILED: ' + b)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
