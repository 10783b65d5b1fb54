#!/usr/bin/python3
"""torch_train_step — PyTorch 1.13 counterpart of bench/bench_train_step.c, the same cases:
seconds per training step (forward + L1 loss + backward + Adam, lr 1e-4) with inputs uint8
NHWC converted to float NCHW / 255 inside the step as PixFlow does, and seconds per
whole-image inference (model.eval(), torch.inference_mode()). Networks are the BasicSR
re-implementations of tests/reference/zoo_archs.py. Median of --steps after --warmup.

--bf16: each step's forward (and the loss) under torch.autocast("cpu", dtype=torch.bfloat16),
the mixed precision PixFlow's --precision bf16 stands against (issue 43): convolutions in bf16,
the loss in fp32 (the output cast to float before F.l1_loss, what autocast's fp32 list does
for l1_loss), backward and Adam outside autocast on the fp32 master weights; inference likewise
(its output cast to float). Unlike PixFlow's, autocast's convolutions return bf16 tensors, so
the element-wise ops between them run in bf16 too.

--flops: before the steps, one extra untimed forward (torch.no_grad) with a hook on every
nn.Conv2d counts 2 N OC (IC / groups) K K OH OW, and the result line gets "conv G GFLOP/step"
(3 x forward for training), the count bench_train_step prints from PixFlow's description, for
bench/train_step/bf16.sh --smoke to compare.

usage: /usr/bin/python3 bench/torch_train_step.py [--threads T] [--steps N] [--warmup W]
                                                   [--only CASE] [--bf16] [--flops]
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "reference"))
from zoo_archs import build  # noqa: E402

# name: (model_type, scale, hyper-parameters, batch, LQ patch or image side, inference)
CASES = {
    "demo": ("EDSR", 2, dict(n_feats=32, n_blocks=4), 16, 48, False),
    "edsr_baseline": ("EDSR", 2, dict(n_feats=64, n_blocks=16), 16, 48, False),
    "msrresnet": ("MSRResNet", 4, dict(n_feats=64, n_blocks=16), 16, 32, False),
    "rcan_small": ("RCAN", 2, dict(n_feats=64, num_group=2, n_blocks=4, squeeze_factor=16),
                   16, 48, False),
    "edsr_infer": ("EDSR", 4, dict(n_feats=64, n_blocks=16), 1, 256, True),
}


def to_input(u8):
    """uint8 N x H x W x 3 -> float N x 3 x H x W in [0, 1], as PixFlow's step does."""
    return u8.permute(0, 3, 1, 2).float() / 255.0


def conv_flops(net, x):
    """Convolution FLOPs of one forward of net on x (nn.Conv2d modules: 2 N OC IC/g K K OH OW)."""
    total = [0]

    def hook(mod, inp, out):
        kh, kw = mod.kernel_size
        n, oc, oh, ow = out.shape
        total[0] += 2 * n * oc * (mod.in_channels // mod.groups) * kh * kw * oh * ow

    hooks = [m.register_forward_hook(hook) for m in net.modules()
             if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        net(x)
    for h in hooks:
        h.remove()
    return total[0]


def bench(name, warmup, steps, smoke=False, bf16=False, flops=False):
    model_type, scale, hp, batch, patch, infer = CASES[name]
    if smoke:   # bench_train_step --smoke 1's sizes
        batch, patch = (1, 16) if infer else (2, 8)
    torch.manual_seed(0)
    net = build(model_type, scale, **hp)
    g = torch.Generator().manual_seed(1)
    lq = torch.randint(0, 256, (batch, patch, patch, 3), generator=g, dtype=torch.uint8)
    gt = torch.randint(0, 256, (batch, scale * patch, scale * patch, 3), generator=g,
                       dtype=torch.uint8)
    opt = None
    if infer:
        net.eval()
    else:
        opt = torch.optim.Adam(net.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8)
    gflop = ""
    if flops:
        f = conv_flops(net, to_input(lq)) * (1 if infer else 3)
        gflop = ", conv %.3f GFLOP/step" % (1e-9 * f)
    cast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)
    times = []
    loss = None
    for i in range(warmup + steps):
        t0 = time.perf_counter()
        if infer:
            with torch.inference_mode(), cast:
                out = net(to_input(lq)).float().permute(0, 2, 3, 1).contiguous()  # HWC
        else:
            opt.zero_grad()
            with cast:
                loss = F.l1_loss(net(to_input(lq)).float(), to_input(gt))
            loss.backward()
            opt.step()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    median = (times[(steps - 1) // 2] + times[steps // 2]) / 2
    n_params = sum(p.numel() for p in net.parameters())
    print("%-13s torch %s %s x%d %s batch %d patch %d%s: %d params, median %.4f s/step "
          "(min %.4f, max %.4f, %d steps)%s%s"
          % (name, model_type, " ".join("%s %s" % kv for kv in hp.items()), scale,
             "infer" if infer else "train", batch, patch, " bf16 autocast" if bf16 else "",
             n_params, median, times[0], times[-1], steps,
             "" if infer else ", last loss %.4f" % loss.item(), gflop))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default="", choices=[""] + list(CASES))
    ap.add_argument("--smoke", action="store_true",
                    help="batch 2, LQ patch 8 (inference: 16 x 16), for smoke runs")
    ap.add_argument("--bf16", action="store_true",
                    help='forward and loss under torch.autocast("cpu", dtype=torch.bfloat16)')
    ap.add_argument("--flops", action="store_true",
                    help="count the convolution FLOPs (one extra untimed forward)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    print("torch %s, %d threads" % (torch.__version__, torch.get_num_threads()))
    for name in CASES:
        if not a.only or a.only == name:
            bench(name, a.warmup, max(1, a.steps), a.smoke, a.bf16, a.flops)


if __name__ == "__main__":
    main()
