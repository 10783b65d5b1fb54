#!/usr/bin/python3
"""optim_ref — reference trajectories for tests/test_optim.c, computed with torch 1.13.

A parameter vector of three tensors (sizes 5, 4, 3) takes 10 optimiser steps with fixed
gradients and a changing learning rate, as PixFlow's worker does (MMCV OptimizerHook +
BasicSR model_ema):
  clip_grad_norm_(all params, max_norm)        (MMCV optimizer_config.grad_clip)
  optimizer.step()                             (torch.optim.Adam / AdamW / SGD)
  ema = ema * decay + p * (1 - decay)          (BasicSR BaseModel.model_ema)
The tensors are torch param groups with lr = lr * lr_mult and weight_decay = weight_decay *
decay_mult (MMCV DefaultOptimizerConstructor with paramwise_cfg.custom_keys); the third one
has lr_mult 0 (frozen). CI has no torch: the committed tests/data/optim_ref.txt is what the C
test reads.

Run from the repository root:  /usr/bin/python3 tests/reference/optim_ref.py
Output: "case NAME key=value ...", then lines "NAME v0 v1 ..." (float32 values, %.9g):
init, grad_T (T = 1..10, raw gradients before clipping), lr_T, then after the last step
params, ema, norm_T (total norm returned by clip_grad_norm_) and the optimiser state
(exp_avg, exp_avg_sq or momentum_buffer).
"""
import math
import os

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "optim_ref.txt")
SIZES = [5, 4, 3]
MULTS = [(1.0, 1.0), (0.5, 2.0), (0.0, 0.0)]   # (lr_mult, decay_mult) per tensor
STEPS = 10


def f32(x):
    return float(torch.tensor(x, dtype=torch.float32))


def fmt(name, values):
    return name + " " + " ".join("%.9g" % f32(v) for v in values) + "\n"


def run(name, kind, opts, max_norm, ema_decay):
    g = torch.Generator().manual_seed(1234)
    init = [torch.randn(n, generator=g) for n in SIZES]
    grads = [[torch.randn(n, generator=g) * (0.2 + 0.3 * t) for n in SIZES]
             for t in range(STEPS)]
    lrs = [f32(opts["lr"] * (1 - 0.07 * t)) for t in range(STEPS)]
    params = [torch.nn.Parameter(p.clone()) for p in init]
    wd = opts.get("weight_decay", 0.0)
    groups = [{"params": [p], "lr": opts["lr"] * lm, "weight_decay": wd * dm}
              for p, (lm, dm) in zip(params, MULTS)]
    rest = {k: v for k, v in opts.items() if k not in ("lr", "weight_decay")}
    opt = getattr(torch.optim, kind)(groups, lr=opts["lr"], **rest)
    ema = [p.detach().clone() for p in params]
    norms = []
    for t in range(STEPS):
        for p, gr in zip(params, grads[t]):
            p.grad = gr.clone()
        for grp, (lm, _) in zip(opt.param_groups, MULTS):
            grp["lr"] = lrs[t] * lm
        if max_norm > 0:
            norms.append(float(torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=2)))
        opt.step()
        if ema_decay > 0:
            with torch.no_grad():
                for e, p in zip(ema, params):
                    e.mul_(ema_decay).add_(p.detach(), alpha=1 - ema_decay)
    cat = lambda ts: torch.cat([x.detach().flatten() for x in ts]).tolist()
    keys = " ".join("%s=%r" % (k, v) for k, v in sorted(opts.items()))
    s = "case %s type=%s max_norm=%r ema_decay=%r %s\n" % (name, kind, max_norm, ema_decay, keys)
    s += fmt("init", cat(init))
    for t in range(STEPS):
        s += fmt("grad_%d" % (t + 1), cat(grads[t]))
    s += fmt("lr", lrs)
    s += fmt("params", cat(params))
    s += fmt("ema", cat(ema))
    if norms:
        s += fmt("norm", norms)
    for key in ("exp_avg", "exp_avg_sq", "momentum_buffer"):
        st = [opt.state[p].get(key) for p in params]
        if all(x is not None for x in st):
            s += fmt(key, cat(st))
    return s


def main():
    assert torch.__version__.startswith("1.13"), torch.__version__
    text = "# written by tests/reference/optim_ref.py with torch %s\n" % torch.__version__
    text += run("adam", "Adam", {"lr": 1e-2, "betas": (0.9, 0.999), "eps": 1e-8,
                                 "weight_decay": 0.01}, 1.5, 0.9)
    text += run("adamw", "AdamW", {"lr": 1e-2, "betas": (0.8, 0.99), "eps": 1e-6,
                                   "weight_decay": 0.05}, 0.0, 0.99)
    text += run("sgd", "SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1,
                               "weight_decay": 1e-3}, 1.0, 0.0)
    text += run("sgd_nesterov", "SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True,
                                        "weight_decay": 1e-2}, 0.0, 0.5)
    text += run("sgd_plain", "SGD", {"lr": 0.1, "weight_decay": 0.0}, 2.0, 0.0)
    with open(OUT, "w") as f:
        f.write(text)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
