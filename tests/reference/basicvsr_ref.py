#!/usr/bin/python3
"""basicvsr_ref.py — PyTorch 1.13 reference for tests/test_basicvsr.c: BasicVSR x4 (the model of
bench/video/torch_basicvsr.py, BasicSR's names) with num_feat 8, num_block 1 on a clip of T 3
frames, LQ 64 x 64, batch 1; Charbonnier loss (eps 1e-12, mean) against a GT clip; summaries of
the output and of every parameter's gradient into tests/data/basicvsr.safetensors (CI has no
torch).

Weights, LQ and GT come from a counter hash both sides compute (hash_unit below, its C twin in
tests/test_basicvsr.c), so the file holds no weights (SPyNet alone is 1.44M numbers): element j
of tensor NAME is (2 u - 1) * bound, u = hash_unit(NAME, j), bound = 1 / sqrt(fan_in) as
PyTorch's default, except the last conv's bias of each SPyNet level, bound 0.2, so the flows
reach about 2 pixels and about 5 % of the first flow's x samples leave the image. LQ pixel i is floor(256 u("lq", i)),
GT pixel i floor(256 u("gt", i)), both N T H W 3 uint8, network input lq / 255.

Stored (PyTorch in float64): "out.sum", "out.sumsq" per frame (T), "out.sample" (4096 output
elements at indices hash % numel, NCHW of the N T 3 4H 4W output), "loss"; per parameter
NAME: "g.NAME" = [sum, L2 norm, 64 sampled elements at indices hash("idx." NAME, k) % numel],
and "e32.NAME", how far PyTorch's own float32 run is from it (the C test's measure).
usage: /usr/bin/python3 tests/reference/basicvsr_ref.py
"""
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'bench', 'video'))
import st_io  # noqa: E402
import torch_basicvsr as tb  # noqa: E402

N, T, H, W, FEAT, BLOCKS = 1, 3, 64, 64, 8, 1
M64 = (1 << 64) - 1


def fnv1a64(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & M64
    return h


def mix(x):
    """splitmix64's finaliser."""
    x = (x + 0x9e3779b97f4a7c15) & M64
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & M64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & M64
    return x ^ (x >> 31)


def hash_units(name, n):
    """u in [0, 1) for j = 0..n-1: (mix(fnv1a64(name) ^ j) >> 40) / 2^24 (exact in float32)."""
    base = np.uint64(fnv1a64(name))
    j = np.arange(n, dtype=np.uint64)
    with np.errstate(over='ignore'):
        x = (base ^ j) + np.uint64(0x9e3779b97f4a7c15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(40)).astype(np.float64) / float(1 << 24)


def hash_index(name, k, n):
    return [int(mix(fnv1a64(name) ^ i) % n) for i in range(k)]


def build(dtype):
    """The model with the hashed weights, run on the hashed clip in dtype: (model, out, loss)
    after backward."""
    model = tb.BasicVSR(FEAT, BLOCKS)
    sd = model.state_dict()
    with torch.no_grad():
        for name, p in model.named_parameters():
            base = name[:-len('.weight')] if name.endswith('.weight') else name[:-len('.bias')]
            wshape = sd[base + '.weight'].shape
            fan = wshape[1] * wshape[2] * wshape[3]
            bound = 1.0 / math.sqrt(fan)
            if name.startswith('spynet.') and name.endswith('basic_module.8.bias'):
                bound = 0.2
            u = hash_units(name, p.numel())
            p.copy_(torch.from_numpy(((2 * u - 1) * bound).astype(np.float32)).view(p.shape))
    model = model.to(dtype)
    lq = np.floor(hash_units('lq', N * T * H * W * 3) * 256).astype(np.uint8)
    gt = np.floor(hash_units('gt', N * T * 16 * H * W * 3) * 256).astype(np.uint8)
    x = torch.from_numpy(lq).view(N, T, H, W, 3).permute(0, 1, 4, 2, 3).to(dtype) / 255.0
    y = torch.from_numpy(gt).view(N, T, 4 * H, 4 * W, 3).permute(0, 1, 4, 2, 3).to(dtype) / 255.0
    out = model(x)
    loss = torch.mean(torch.sqrt((out - y) ** 2 + 1e-12))
    loss.backward()
    return model, x, out.detach(), loss.detach()


def summary(name, g):
    """[sum, L2 norm, 64 sampled elements] of a gradient, in float64."""
    g = g.double().reshape(-1)
    return [g.sum().item(), g.norm().item()] + g[hash_index('idx.' + name, 64, g.numel())].tolist()


def error(s, ref):
    """The C test's error measure of summary s against ref (relative to ref's norm)."""
    e = max(abs(s[1] - ref[1]) / ref[1], abs(s[0] - ref[0]) / (10 * ref[1]))
    return max([e] + [abs(a - b) / ref[1] for a, b in zip(s[2:], ref[2:])])


def main():
    """The stored values are float64 PyTorch's. PyTorch's own float32 run is compared with
    them the way the C test compares PixFlow's ("e32.NAME"): where SPyNet's gradients are sums
    of many cancelling terms, float32 alone is ~5e-4 off (measured), so the test holds each
    tensor to max(1e-4, 8 x e32)."""
    torch.set_num_threads(2)
    model, x, o, loss = build(torch.float64)
    m32, _, o32, loss32 = build(torch.float32)
    flat = o.reshape(-1)
    tensors = [('out.sum', o.sum(dim=(0, 2, 3, 4))),
               ('out.sumsq', (o ** 2).sum(dim=(0, 2, 3, 4))),
               ('out.sample', flat[hash_index('out', 4096, flat.numel())]),
               ('loss', loss.view(1))]
    e32_max = 0.0
    for (name, p), (_, p32) in zip(model.named_parameters(), m32.named_parameters()):
        ref, s32 = summary(name, p.grad), summary(name, p32.grad)
        e32 = error(s32, ref)
        e32_max = max(e32_max, e32)
        tensors.append(('g.' + name, torch.tensor(ref, dtype=torch.float64)))
        tensors.append(('e32.' + name, torch.tensor([e32], dtype=torch.float64)))
    f_b = model.spynet(x[:, 0], x[:, 1]).detach()
    gx = torch.arange(W, dtype=f_b.dtype).view(1, 1, W) + f_b[:, 0]
    outside = float(((gx < 0) | (gx > W - 1)).double().mean())
    path = os.path.join(ROOT, 'tests', 'data', 'basicvsr.safetensors')
    st_io.write(path, tensors, {'source': 'tests/reference/basicvsr_ref.py',
                                'torch': torch.__version__, 'dtype': 'float64 (stored as F32)',
                                'flow_max': '%.2f' % f_b.abs().max().item(),
                                'outside': '%.3f' % outside})
    print('wrote %s: loss %.6f (float32: %.6f), flow |max| %.2f px, %.1f %% of x samples '
          'outside the image; PyTorch float32 gradients within %.2g of float64' %
          (path, loss.item(), loss32.item(), f_b.abs().max().item(), 100 * outside, e32_max))


if __name__ == '__main__':
    main()
