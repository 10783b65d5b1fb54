#!/usr/bin/python3
"""video_ops_ref — PyTorch references for the layers of nn/video_layers.h, one safetensors file
tests/data/video_ops.safetensors read by tests/test_video_layers.c (CI has no torch).

Each case is one layer as BasicSR's basicvsr_arch.py / spynet_arch.py call it, in float32 on
the CPU, with a random upstream gradient `<case>.gout`; the file holds the inputs, the output
and the gradients of sum(out * gout) with respect to every input that has one:
  warp_*      flow_warp(x, flow) (arch_util.flow_warp: grid_sample of the grid + flow
              normalised by (W - 1), (H - 1), bilinear, align_corners=True) with padding
              'zeros' (the trunks) or 'border' (SPyNet's own warps); flows large enough that
              samples leave the image, and whole-pixel flows (positions on the grid, where the
              bilinear weights change piece)
  resize_*    F.interpolate bilinear: x2 with align_corners=True (SPyNet's flow upsampling),
              to a size with align_corners=False (SPyNet's resize to a multiple of 32 and back),
              x4 with scale_factor (BasicVSR's skip)
  pool        F.avg_pool2d(x, 2, 2)
Names: <case>.x, <case>.flow, <case>.out, <case>.gout, <case>.dx, <case>.dflow (NCHW).
__metadata__: for each case its kind and parameters.

Run from the repository root:  /usr/bin/python3 tests/reference/video_ops_ref.py
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                   "video_ops.safetensors")


def flow_warp(x, flow, padding_mode):
    """BasicSR arch_util.flow_warp, written from its description: flow (n, h, w, 2) in
    pixels, channel 0 horizontal."""
    n, _, h, w = x.size()
    gy, gx = torch.meshgrid(torch.arange(0, h, dtype=x.dtype), torch.arange(0, w, dtype=x.dtype),
                            indexing="ij")
    grid = torch.stack((gx, gy), 2)
    v = grid + flow
    vx = 2.0 * v[..., 0] / max(w - 1, 1) - 1.0
    vy = 2.0 * v[..., 1] / max(h - 1, 1) - 1.0
    return F.grid_sample(x, torch.stack((vx, vy), dim=3), mode="bilinear",
                         padding_mode=padding_mode, align_corners=True)


def warp_case(name, seed, shape, pad, whole):
    g = torch.Generator().manual_seed(seed)
    n, c, h, w = shape
    x = torch.rand(shape, generator=g) * 2 - 1
    if whole:
        flow = torch.randint(-3, 4, (n, 2, h, w), generator=g).float()
    else:
        flow = (torch.rand((n, 2, h, w), generator=g) * 2 - 1) * 6
        flow[:, :, ::3, ::2] = torch.round(flow[:, :, ::3, ::2])   # some whole positions
    x.requires_grad_(True)
    flow.requires_grad_(True)
    out = flow_warp(x, flow.permute(0, 2, 3, 1), pad)
    gout = torch.rand(out.shape, generator=g) * 2 - 1
    (out * gout).sum().backward()
    outside = ((torch.arange(w).view(1, 1, w) + flow[:, 0].detach() < 0) |
               (torch.arange(w).view(1, 1, w) + flow[:, 0].detach() > w - 1)).sum().item()
    print("%-16s %s pad %s: %d of %d samples leave the image horizontally"
          % (name, tuple(shape), pad, outside, n * h * w))
    return [(name + ".x", x.detach()), (name + ".flow", flow.detach()), (name + ".out", out.detach()),
            (name + ".gout", gout), (name + ".dx", x.grad), (name + ".dflow", flow.grad)], \
        {name: "warp %s" % pad}


def resize_case(name, seed, shape, size, align, by_factor):
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(shape, generator=g) * 2 - 1).requires_grad_(True)
    if by_factor:
        out = F.interpolate(x, scale_factor=size[0] // shape[2], mode="bilinear",
                            align_corners=align)
    else:
        out = F.interpolate(x, size=size, mode="bilinear", align_corners=align)
    assert tuple(out.shape[2:]) == tuple(size)
    gout = torch.rand(out.shape, generator=g) * 2 - 1
    (out * gout).sum().backward()
    print("%-16s %s -> %s align_corners %s" % (name, tuple(shape), tuple(size), align))
    return [(name + ".x", x.detach()), (name + ".out", out.detach()), (name + ".gout", gout),
            (name + ".dx", x.grad)], {name: "resize %d" % int(align)}


def pool_case(name, seed, shape):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(shape, generator=g) * 2 - 1
    out = F.avg_pool2d(x, kernel_size=2, stride=2, count_include_pad=False)
    print("%-16s %s -> %s" % (name, tuple(shape), tuple(out.shape)))
    return [(name + ".x", x), (name + ".out", out)], {name: "pool"}


def main():
    torch.set_num_threads(1)
    tensors, meta = [], {}
    for t, m in [
        warp_case("warp_zeros", 1, (2, 5, 7, 9), "zeros", False),
        warp_case("warp_border", 2, (2, 5, 7, 9), "border", False),
        warp_case("warp_zeros_int", 3, (2, 3, 6, 8), "zeros", True),
        warp_case("warp_border_int", 4, (2, 3, 6, 8), "border", True),
        warp_case("warp_flow_only", 5, (1, 2, 5, 4), "border", False),
        resize_case("resize_ac_x2", 6, (2, 2, 4, 5), (8, 10), True, False),
        resize_case("resize_to_size", 7, (2, 2, 8, 10), (7, 13), False, False),
        resize_case("resize_down", 8, (2, 3, 9, 11), (4, 6), False, False),
        resize_case("resize_x4", 9, (2, 3, 5, 6), (20, 24), False, True),
        pool_case("pool", 10, (2, 3, 8, 10)),
    ]:
        tensors += t
        meta.update(m)
    st_io.write(OUT, tensors, meta)
    print("wrote %s (%d tensors, %d bytes)" % (OUT, len(tensors), os.path.getsize(OUT)))


if __name__ == "__main__":
    main()
