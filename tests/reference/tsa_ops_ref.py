#!/usr/bin/python3
"""Reference for EDVR's TSA-fusion ops (PF_G_MUL, PF_G_CHSUM, PF_G_MAXPOOL3, PF_G_AVGPOOL3;
nn/net.h) on the CPU executor, run by tests/test_graph_video.c `torch` (ctest
test_graph_video.torch), which builds the same network by hand ("tsa", build_tsa there) and
compares its output and every parameter gradient with the file written here.

The network, in torch.nn.functional and autograd in float64 (BasicSR's edvr_arch.py
TSAFusion uses these same calls: torch.sum(emb * emb_ref, 1), aligned_feat * corr_prob,
F.max_pool2d / F.avg_pool2d(x, 3, stride=2, padding=1), feat * attn * 2 + attn_add):
  x        = lq / 255 (stored as N x H x W x 3, uint8 values)
  feat     = leaky_relu(conv(x, feat), 0.1)                      3 -> 20
  emb      = conv(feat, emb); emb_ref = conv(feat, emb_ref)      20 -> 20 each
  corr     = torch.sum(emb * emb_ref, 1, keepdim=True)           1 channel
  prob     = sigmoid(corr)
  att      = leaky_relu(conv(feat * prob, att), 0.1)             prob broadcast over 20
  pooled   = cat(max_pool2d(att, 3, 2, 1), avg_pool2d(att, 3, 2, 1))   40 at H / 2
  half     = conv(pooled, half)                                  40 -> 20, no activation
  gate     = sigmoid(conv(half, gate)); add = conv(half, att_add)
  out      = conv(half * gate * 2 + add, last)                   20 -> 3
conv: 3 x 3, padding 1, with bias. loss = sum(out * gout); autograd's gradient of every
parameter. The parameters are drawn in float32 (what PixFlow stores), the arithmetic is
float64 (lq integer-valued, so x is exact).

DIR/tsa.safetensors (tests/reference/st_io.py): lq, gout, out, every parameter under its
name and grad.NAME (float32); metadata n_params.
Run: /usr/bin/python3 tests/reference/tsa_ops_ref.py DIR
"""
import os
import sys

import torch
import torch.nn.functional as F

import st_io

N, H, W = 2, 8, 12
LAYERS = {"feat": (3, 20), "emb": (20, 20), "emb_ref": (20, 20), "att": (20, 20),
          "half": (40, 20), "gate": (20, 20), "att_add": (20, 20), "last": (20, 3)}


def main():
    torch.manual_seed(42)
    lq = torch.randint(0, 256, (N, H, W, 3)).float()
    params = {}
    for name, (ic, oc) in LAYERS.items():
        w = (torch.rand(oc, ic, 3, 3) * 2 - 1) / (ic * 9) ** 0.5
        params[name + ".weight"] = w.double().requires_grad_()
        params[name + ".bias"] = (torch.randn(oc) * 0.1).double().requires_grad_()

    def conv(name, x):
        return F.conv2d(x, params[name + ".weight"], params[name + ".bias"], padding=1)

    x = lq.double().permute(0, 3, 1, 2) / 255.0
    feat = F.leaky_relu(conv("feat", x), 0.1)
    corr = torch.sum(conv("emb", feat) * conv("emb_ref", feat), 1, keepdim=True)
    prob = torch.sigmoid(corr)
    att = F.leaky_relu(conv("att", feat * prob), 0.1)
    pooled = torch.cat([F.max_pool2d(att, 3, stride=2, padding=1),
                        F.avg_pool2d(att, 3, stride=2, padding=1)], dim=1)
    half = conv("half", pooled)
    gate = torch.sigmoid(conv("gate", half))
    out = conv("last", half * gate * 2 + conv("att_add", half))
    if tuple(out.shape) != (N, 3, H // 2, W // 2):
        sys.exit("tsa_ops_ref: output shape %s" % (tuple(out.shape),))
    gout = torch.randn(out.shape).double()
    (out * gout).sum().backward()
    tensors = [("lq", lq), ("gout", gout.float()), ("out", out.detach().float())]
    for name, t in params.items():
        tensors.append((name, t.detach().float()))
        tensors.append(("grad." + name, t.grad.float()))
    path = os.path.join(sys.argv[1], "tsa.safetensors")
    st_io.write(path, tensors, {"source": "tests/reference/tsa_ops_ref.py",
                                "torch": torch.__version__, "n_params": str(len(params))})
    print("tsa_ops_ref: wrote %s (%d parameter tensors)" % (path, len(params)))


if __name__ == "__main__":
    main()
