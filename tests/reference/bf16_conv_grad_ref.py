#!/usr/bin/python3
"""How far bf16 mixed-precision convolutions are from fp32, by themselves: the figure behind
tests/cuda_host/test_model_cuda_host.c's bf16 gradient tolerance (no file written; prints).

Every Conv2d of a small EDSR (x3, 16 feats, 2 blocks, res_scale 0.5, mean-free input in
[-110, 145], output / 255 + 0.45, PyTorch's default init) runs with torch.autocast's
semantics for a convolution as nn/cuda/conv_bf16.c implements them: x and w rounded to bf16
(round to nearest even), the sum exact (float64), y rounded to bf16, bias added in full
precision; backward dy rounded to bf16, dx and dw rounded to bf16, the bias gradient exact.
Everything else float64. Printed: per parameter tensor, max |g_bf16 - g| / max |g| against
the same network in float64, for MSE and L1. Measured (torch 1.13, seed 0): the output 2.2e-3
from float64; weight gradients up to 7.9e-2 (MSE) and 1.1e-1 (L1), the conv1 layers of the
residual blocks worst (their gradients cancel: the ReLU mask and the residual sum).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


def bf(t):
    return t.float().to(torch.bfloat16).to(torch.float64)


class BConv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b):
        xb, wb = bf(x), bf(w)
        ctx.save_for_backward(xb, wb)
        return bf(F.conv2d(xb, wb, None, padding=w.shape[-1] // 2)) + b.view(1, -1, 1, 1)

    @staticmethod
    def backward(ctx, dy):
        xb, wb = ctx.saved_tensors
        dyb, p = bf(dy), wb.shape[-1] // 2
        dx = bf(torch.nn.grad.conv2d_input(xb.shape, wb, dyb, padding=p))
        dw = bf(torch.nn.grad.conv2d_weight(xb, wb.shape, dyb, padding=p))
        return dx, dw, dy.sum((0, 2, 3))


def edsr(params, x, bf16, scale=3, res_scale=0.5):
    if bf16:
        conv = BConv.apply
    else:
        def conv(x, w, b):
            return F.conv2d(x, w, b, padding=w.shape[-1] // 2)
    it = iter(params)
    f = conv(x, next(it), next(it))
    h = f
    for _ in range(2):
        t = F.relu(conv(h, next(it), next(it)))
        h = h + res_scale * conv(t, next(it), next(it))
    h = conv(h, next(it), next(it)) + f
    h = F.pixel_shuffle(conv(h, next(it), next(it)), scale)
    return conv(h, next(it), next(it))


def main():
    torch.manual_seed(0)
    names = ["conv_first", "body.0.conv1", "body.0.conv2", "body.1.conv1", "body.1.conv2",
             "conv_after_body", "upsample.0", "conv_last"]
    shapes = [(16, 3), (16, 16), (16, 16), (16, 16), (16, 16), (16, 16), (16 * 9, 16), (3, 16)]
    params = []
    for o, i in shapes:
        c = nn.Conv2d(i, o, 3, padding=1).double()
        params += [c.weight.detach().clone(), c.bias.detach().clone()]
    x = (torch.rand(2, 3, 17, 13, dtype=torch.float64) * 255).round() - 110
    gt = torch.rand(2, 3, 51, 39, dtype=torch.float64)
    for loss in ["mse", "l1"]:
        res = []
        for bf16 in [False, True]:
            ps = [p.clone().requires_grad_() for p in params]
            out = edsr(ps, x, bf16) / 255 + 0.45
            value = F.mse_loss(out, gt) if loss == "mse" else F.l1_loss(out, gt)
            value.backward()
            res.append((value.item(), out.detach(), [p.grad for p in ps]))
        oe = ((res[1][1] - res[0][1]).abs().max() / res[0][1].abs().max()).item()
        print(f"{loss}: loss {res[0][0]:.8g} (float64) {res[1][0]:.8g} (bf16), output {oe:.3g}")
        for k, (a, b) in enumerate(zip(res[0][2], res[1][2])):
            name = names[k // 2] + (".weight" if k % 2 == 0 else ".bias")
            print(f"  {name:24s} {((b - a).abs().max() / a.abs().max()).item():.3g}")


if __name__ == "__main__":
    main()
