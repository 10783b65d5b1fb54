#!/usr/bin/python3
"""graph_video_ref — the PyTorch reference for tests/test_graph_video.c: a small network made of
every video node of nn/net.h (PF_G_SLICE, _AFFINE, _RESIZE, _AVGPOOL2, _WARP, _ZERO), a rounded
tensor size and one convolution applied twice with the same weights, written as BasicSR's
spynet_arch.py / basicvsr_arch.py write those steps, in float32 on the CPU. One safetensors
file tests/data/graph_video.safetensors (CI has no torch) holds the LQ clip, the weights, a
random upstream gradient `gout`, the output and the gradient of sum(out * gout) for every
weight.

The network (LQ N 2 x T 2 frames x H 6 x W 7, the graph input 3 T = 6 channels, frame t's
colour c in channel 3 t + c):
  x = lq / 255 (stored as N T x H x W x 3);  f0, f1 = x[:, 0:3], x[:, 3:6]                              (SLICE)
  n_i = (f_i - mean) / std, ImageNet mean / std as SPyNet                    (AFFINE)
  r_i = interpolate(n_i, size=(8, 8), bilinear, align_corners=False)         (RESIZE to the
        size rounded up to a multiple of 8, SPyNet's ceil(h / 32) * 32 in small)
  p_i = avg_pool2d(r_i, 2, 2)                                                (AVGPOOL2)
  z = zeros(N, 2, 4, 4)                                                      (ZERO: level-0 flow)
  c = cat(p0, flow_warp(p1, z, 'border'), z)                                 (WARP border)
  fl = flow.1(relu(flow.0(c)))                        8 -> 8 -> 2 channels, 3 x 3
  fu = interpolate(fl, scale_factor=2, bilinear, align_corners=True) * 2     (RESIZE, flow)
  fw = interpolate(fu, size=(6, 7), bilinear, align_corners=False);
       fw[:, 0] *= 7 / 8; fw[:, 1] *= 6 / 8                                  (RESIZE back, flow)
  fb = fw * (2.5, 2.0)                                                       (AFFINE: a flow
       large enough that samples leave the image)
  feat = leaky_relu(feat(f0), 0.1)                    3 -> 4
  wf = flow_warp(feat, fb, 'zeros')                                          (WARP zeros)
  s1 = body(wf); s2 = body(s1 + feat)                 4 -> 4, one weight used twice
  out = last(s2)                                      4 -> 6 (3 T channels)

Run from the repository root:  /usr/bin/python3 tests/reference/graph_video_ref.py
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                   "graph_video.safetensors")
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]
N, T, H, W, ROUND = 2, 2, 6, 7, 8


def flow_warp(x, flow, padding_mode):
    """BasicSR arch_util.flow_warp (interp_mode bilinear, align_corners=True); flow N x 2 x H x W
    here (BasicSR takes N x H x W x 2)."""
    n, _, h, w = x.size()
    gy, gx = torch.meshgrid(torch.arange(0, h, dtype=x.dtype), torch.arange(0, w, dtype=x.dtype),
                            indexing="ij")
    grid = torch.stack((gx, gy), 2)
    vgrid = grid + flow.permute(0, 2, 3, 1)
    vx = 2.0 * vgrid[..., 0] / max(w - 1, 1) - 1.0
    vy = 2.0 * vgrid[..., 1] / max(h - 1, 1) - 1.0
    return F.grid_sample(x, torch.stack((vx, vy), dim=3), mode="bilinear",
                         padding_mode=padding_mode, align_corners=True)


def main():
    torch.manual_seed(17)
    lq = torch.randint(0, 256, (N, T, H, W, 3)).float()
    layers = {"flow.0": (8, 8), "flow.1": (8, 2), "feat": (3, 4), "body": (4, 4),
              "last": (4, 6)}
    params = {}
    for name, (ic, oc) in layers.items():
        params[name + ".weight"] = (torch.randn(oc, ic, 3, 3) * (0.6 / (ic * 9) ** 0.5)
                                    ).requires_grad_()
        params[name + ".bias"] = (torch.randn(oc) * 0.1).requires_grad_()

    def conv(name, x):
        return F.conv2d(x, params[name + ".weight"], params[name + ".bias"], padding=1)

    x = lq.permute(0, 1, 4, 2, 3).reshape(N, 3 * T, H, W) / 255.0
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    f0, f1 = x[:, 0:3], x[:, 3:6]
    hr, wr = (H + ROUND - 1) // ROUND * ROUND, (W + ROUND - 1) // ROUND * ROUND
    p = [F.avg_pool2d(F.interpolate((f - mean) / std, size=(hr, wr), mode="bilinear",
                                    align_corners=False), 2, 2) for f in (f0, f1)]
    z = torch.zeros(N, 2, hr // 2, wr // 2)
    c = torch.cat([p[0], flow_warp(p[1], z, "border"), z], 1)
    fl = conv("flow.1", F.relu(conv("flow.0", c)))
    fu = F.interpolate(fl, scale_factor=2, mode="bilinear", align_corners=True) * 2.0
    fw = F.interpolate(fu, size=(H, W), mode="bilinear", align_corners=False)
    fw = torch.cat([fw[:, 0:1] * (float(W) / float(wr)), fw[:, 1:2] * (float(H) / float(hr))], 1)
    fb = fw * torch.tensor([2.5, 2.0]).view(1, 2, 1, 1)
    feat = F.leaky_relu(conv("feat", f0), 0.1)
    wf = flow_warp(feat, fb, "zeros")
    s1 = conv("body", wf)
    s2 = conv("body", s1 + feat)
    out = conv("last", s2)
    gout = torch.randn(out.shape)
    (out * gout).sum().backward()
    outside = ((torch.arange(W).view(1, 1, W) + fb[:, 0] < 0) |
               (torch.arange(W).view(1, 1, W) + fb[:, 0] > W - 1) |
               (torch.arange(H).view(1, H, 1) + fb[:, 1] < 0) |
               (torch.arange(H).view(1, H, 1) + fb[:, 1] > H - 1)).float().mean().item()
    tensors = [("lq", lq.reshape(N * T, H, W, 3)), ("gout", gout), ("out", out.detach()), ("flow", fb.detach())]
    for name, t in params.items():
        tensors.append((name, t.detach()))
        tensors.append(("grad." + name, t.grad))
    st_io.write(OUT, tensors, {"source": "tests/reference/graph_video_ref.py",
                               "torch": torch.__version__, "outside": "%.3f" % outside})
    print("wrote %s (flow |max| %.2f px, %.0f %% of samples outside the image)" %
          (OUT, fb.abs().max().item(), 100 * outside))


if __name__ == "__main__":
    main()
