#!/usr/bin/python3
"""bf16_autocast_ref — how far PyTorch's own bf16 mixed precision is from fp32 on a zoo network,
in bench/gpu/gpu_check.c's measure (max |bf16 - fp32| / max |fp32| per tensor): the figure
tests/test_bf16_zoo.c and docs/nn.md quote for single gradient tensors going past 2e-2.

One training step (MSELoss against a random uint8 GT) of tests/reference/zoo_archs.py's network
with PyTorch's default initialisation, in fp32 and under torch.autocast("cpu",
dtype=torch.bfloat16), on the same random uint8 batch; prints the loss, the output and every
parameter gradient's error. Defaults: EDSR x2, n_feats 16, n_blocks 2, batch 2 x 13 x 11
(test_bf16_zoo's size), seeds 0 1 2. Measured with torch 1.13 on an AVX512_BF16 EPYC:
body.*.conv1.weight 3.7e-2 .. 7.5e-2, body.*.conv1.bias up to 2.5e-2, every other tensor
below 1e-2 (FSRCNN x2 seed 0: mid_part.0.weight 3.2e-2, first_part.0.weight 2.5e-2).

usage: /usr/bin/python3 tests/reference/bf16_autocast_ref.py [TYPE SCALE [SEED...]]
Not a ctest entry (it checks nothing): a measurement to rerun.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo_archs  # noqa: E402

SMALL = {"EDSR": {"n_feats": 16, "n_blocks": 2}, "MSRResNet": {"n_feats": 16, "n_blocks": 2},
         "RCAN": {"n_feats": 16, "n_blocks": 2, "num_group": 2, "squeeze_factor": 4},
         "RRDBNet": {"n_feats": 16, "n_blocks": 2, "num_grow_ch": 4},
         "FSRCNN": {"d": 8, "s": 4, "m": 2}, "SRCNN": {"channels": (3, 8, 4, 3)}, "ESPCN": {}}


def step(net, x, gt, bf16):
    net.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        y = net(x)
    loss = ((y.float() - gt) ** 2).mean()
    loss.backward()
    return loss.item(), y.detach().float(), {n: p.grad.clone() for n, p in net.named_parameters()}


def rel(a, b):
    return ((a - b).abs().max() / b.abs().max()).item()


def main():
    kind = sys.argv[1] if len(sys.argv) > 1 else "EDSR"
    scale = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    seeds = [int(s) for s in sys.argv[3:]] or [0, 1, 2]
    for seed in seeds:
        torch.manual_seed(seed)
        net = zoo_archs.build(kind, scale, **SMALL.get(kind, {}))
        x = torch.randint(0, 256, (2, 3, 13, 11)).float() / 255
        gt = torch.randint(0, 256, (2, 3, 13 * scale, 11 * scale)).float() / 255
        l32, y32, g32 = step(net, x, gt, False)
        l16, y16, g16 = step(net, x, gt, True)
        print("%s x%d seed %d: loss %.2e, output %.2e" % (kind, scale, seed,
              abs(l16 - l32) / l32, rel(y16, y32)))
        for name in g32:
            print("  %-40s %.2e" % (name, rel(g16[name], g32[name])))


if __name__ == "__main__":
    main()
