#!/usr/bin/python3
"""torch_step.py — the PyTorch side of bench/gan/run.sh: the time of Real-ESRGAN's training
step (BasicSR's RealESRGANModel.optimize_parameters, as tests/reference/gan_step_ref.py writes
it: generator step with net_d frozen, discriminator step on the real and the detached fake,
and with --optim both Adam steps and the EMA) on the CPU, float32: net_g MSRResNet (scale,
num_feat, num_block as given; bench_gan_step's case is x4 64 / 16, the demo's x2 32 / 4), the
full UNetDiscriminatorSN (num_feat 64, skip connections) and VGG19 to conv5_4 with
Real-ESRGAN's layer weights, random weights and images (the time does not depend on them).
The VGG's parameters do not require gradients and net_d's are frozen in the generator step,
as BasicSR's, so PyTorch skips their weight gradients there. Without --optim it times what
bench_gan_step's pf_gan_compute computes: both networks' gradients of one iteration.

usage: torch_step.py THREADS BATCH GT_PATCH WARMUP ITERS [SCALE FEAT BLOCKS] [--optim]
prints: "torch: median M s, min m s over ITERS steps ..."
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'reference'))
import gan_step_ref as R  # noqa: E402
import zoo_archs  # noqa: E402


def main():
    optim = '--optim' in sys.argv
    args = [int(a) for a in sys.argv[1:] if a != '--optim']
    threads, batch, patch, warmup, iters = args[:5]
    scale, feat, blocks = args[5:8] if len(args) >= 8 else (4, 64, 16)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    net_g = zoo_archs.build('MSRResNet', scale, n_feats=feat, n_blocks=blocks).train()
    net_d = R.UNetDiscriminatorSN(3, 64, True).train()
    vgg = R.VGGFeatures(R.LAYER_WEIGHTS).eval()
    for p in vgg.parameters():
        p.requires_grad = False
    ema = {k: v.detach().clone() for k, v in net_g.state_dict().items()}
    opt_g = torch.optim.Adam(net_g.parameters(), lr=1e-4, betas=(0.9, 0.99))
    opt_d = torch.optim.Adam(net_d.parameters(), lr=1e-4, betas=(0.9, 0.99))
    lq = torch.rand(batch, 3, patch // scale, patch // scale)
    gt, gt_usm = torch.rand(batch, 3, patch, patch), torch.rand(batch, 3, patch, patch)
    times = []
    for it in range(warmup + iters):
        t0 = time.perf_counter()
        for p in net_d.parameters():
            p.requires_grad = False
        opt_g.zero_grad()
        out = net_g(lq)
        l_pix = F.l1_loss(out, gt_usm)
        fo, fg = vgg(out), vgg(gt_usm)
        l_percep = sum(w * F.l1_loss(fo[n], fg[n]) for n, w in R.LAYER_WEIGHTS.items())
        l_gan = R.gan_loss(net_d(out), True, False)
        (l_pix + l_percep + l_gan).backward()
        if optim:
            opt_g.step()
        for p in net_d.parameters():
            p.requires_grad = True
        opt_d.zero_grad()
        R.gan_loss(net_d(gt), True, True).backward()
        R.gan_loss(net_d(out.detach().clone()), False, True).backward()
        if optim:
            opt_d.step()
            with torch.no_grad():
                for name, v in net_g.state_dict().items():
                    ema[name].mul_(0.999).add_(v, alpha=0.001)
        if it >= warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    print('torch: median %.3f s, min %.3f s over %d steps (%d warm-up, %d threads; batch %d, '
          'GT %d, MSRResNet x%d %d / %d%s)' %
          (statistics.median(times) / 1e3, min(times) / 1e3, iters, warmup, threads, batch,
           patch, scale, feat, blocks, ', optimisers and EMA' if optim else ''))


if __name__ == '__main__':
    main()
