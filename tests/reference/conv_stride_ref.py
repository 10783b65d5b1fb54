#!/usr/bin/python3
"""Reference for strided convolutions (pf_net_add_conv_strided, nn/net.h) on the CPU executor,
run by tests/test_graph_video.c `torch` (ctest test_graph_video.torch), which builds the same
network by hand ("strided", build_strided there) and compares its output and every parameter
gradient with the file written here.

The network, in torch.nn.functional.conv2d (PyTorch's own convolution, not BasicSR's code):
  x = lq / 255 (stored as N x H x W x 3, uint8 values)
  head   = leaky_relu(conv2d(x, head.weight, head.bias, padding=1), 0.2)          3 -> 6
  down3b = conv2d(head, down3b.*, stride=2, padding=1)        k 3, bias           6 -> 8
  down4  = leaky_relu(conv2d(down3b, down4.weight, None, stride=2, padding=1), 0.2)
                                                              k 4, no bias        8 -> 8
  down3  = conv2d(down4, down3.weight, None, stride=2, padding=1)   k 3, no bias  8 -> 8
  down4b = conv2d(down3, down4b.*, stride=2, padding=1)       k 4, bias           8 -> 8
  out    = conv2d(down4b, tail.*, padding=1)                  k 3, stride 1       8 -> 3
LQ 16 x 32: 16 x 32 -> 8 x 16 -> 4 x 8 -> 2 x 4 -> 1 x 2 (every stride-2 layer halves it, as
BasicSR's discriminators' k4 s2 p1 and k3 s2 p1 convs). loss = sum(out * gout); autograd's
gradient of every parameter. The gradient at each strided layer's input reaches `head`'s
weights only through that layer's backward-data, so head's gradients check it too.

DIR/strided.safetensors (tests/reference/st_io.py): lq, gout, out, every parameter under its
state_dict name (no down4.bias, no down3.bias) and grad.NAME; metadata n_params.
Run: /usr/bin/python3 tests/reference/conv_stride_ref.py DIR
"""
import os
import sys

import torch
import torch.nn.functional as F

import st_io

N, H, W = 2, 16, 32
# name: (in channels, out channels, kernel, stride, bias)
LAYERS = {"head": (3, 6, 3, 1, True), "down3b": (6, 8, 3, 2, True),
          "down4": (8, 8, 4, 2, False), "down3": (8, 8, 3, 2, False),
          "down4b": (8, 8, 4, 2, True), "tail": (8, 3, 3, 1, True)}


def main():
    torch.manual_seed(41)
    lq = torch.randint(0, 256, (N, H, W, 3)).float()
    params = {}
    for name, (ic, oc, k, _, bias) in LAYERS.items():
        params[name + ".weight"] = (torch.randn(oc, ic, k, k) * (1.0 / (ic * k * k) ** 0.5)
                                    ).requires_grad_()
        if bias:
            params[name + ".bias"] = (torch.randn(oc) * 0.1).requires_grad_()

    def conv(name, x):
        _, _, _, stride, _ = LAYERS[name]
        return F.conv2d(x, params[name + ".weight"], params.get(name + ".bias"), stride=stride,
                        padding=1)

    x = lq.permute(0, 3, 1, 2) / 255.0
    y = F.leaky_relu(conv("head", x), 0.2)
    y = conv("down3b", y)
    y = F.leaky_relu(conv("down4", y), 0.2)
    y = conv("down3", y)
    y = conv("down4b", y)
    out = conv("tail", y)
    if tuple(out.shape) != (N, 3, H // 16, W // 16):
        sys.exit("conv_stride_ref: output shape %s" % (tuple(out.shape),))
    gout = torch.randn(out.shape)
    (out * gout).sum().backward()
    tensors = [("lq", lq), ("gout", gout), ("out", out.detach())]
    for name, t in params.items():
        tensors.append((name, t.detach()))
        tensors.append(("grad." + name, t.grad))
    path = os.path.join(sys.argv[1], "strided.safetensors")
    st_io.write(path, tensors, {"source": "tests/reference/conv_stride_ref.py",
                                "torch": torch.__version__, "n_params": str(len(params))})
    print("conv_stride_ref: wrote %s (%d parameter tensors)" % (path, len(params)))


if __name__ == "__main__":
    main()
