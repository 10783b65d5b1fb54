#!/usr/bin/python3
"""nn_torch_ref — reference tensors for tests/test_nn_torch_parity.c, computed with PyTorch.

Builds BasicSR's EDSR (basicsr/archs/edsr_arch.py) and MMagic's SRCNNNet from zoo_archs.py
(re-implementations with the same modules and state_dict names), with PyTorch's default init
under torch.manual_seed, runs one tiny uint8 batch through the training step (input / 255, loss vs gt / 255) and dumps
inputs, weights, output, loss, every gradient, and the losses of 3 further torch.optim.Adam
steps. CI has no torch: the committed files in tests/data are what the C test reads.

Run from the repository root:  /usr/bin/python3 tests/reference/nn_torch_ref.py
Writes tests/data/nn_ref_<case>.bin (raw little-endian float32, tensors back to back) and
tests/data/nn_ref_<case>.txt (manifest: "param KEY VALUE" lines, then
"tensor NAME OFFSET_FLOATS NUMEL D0 D1 ..." lines).
"""
import os

import torch
import torch.nn.functional as F

from zoo_archs import EDSR as ZooEDSR, SRCNNNet

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")


def EDSR(num_feat, num_block, upscale, res_scale):
    return ZooEDSR(num_feat=num_feat, num_block=num_block, upscale=upscale, res_scale=res_scale)


def loss_fn(kind, pred, target, weight, eps):
    if kind == "L1Loss":
        return weight * F.l1_loss(pred, target)
    if kind == "MSELoss":
        return weight * F.mse_loss(pred, target)
    return weight * torch.mean(torch.sqrt((pred - target) ** 2 + eps))  # BasicSR charbonnier


def make_case(name, net, params, n, h, w, scale, loss, weight=1.0, eps=1e-12, lr=1e-3):
    g = torch.Generator().manual_seed(1234)
    lq = torch.randint(0, 256, (n, h, w, 3), generator=g, dtype=torch.uint8)
    gt = torch.randint(0, 256, (n, h * scale, w * scale, 3), generator=g, dtype=torch.uint8)
    x = lq.permute(0, 3, 1, 2).float() / 255.0
    y = gt.permute(0, 3, 1, 2).float() / 255.0

    tensors = [("lq", lq.float()), ("gt", gt.float())]
    sd = net.state_dict()
    for k, v in sd.items():
        tensors.append(("param:" + k, v.clone()))
    out = net(x)
    l0 = loss_fn(loss, out, y, weight, eps)
    net.zero_grad()
    l0.backward()
    tensors.append(("output", out.detach().permute(0, 2, 3, 1).contiguous()))  # NHWC
    for k, p in net.named_parameters():
        tensors.append(("grad:" + k, p.grad.clone()))
    opt = torch.optim.Adam(net.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    losses = [l0.item()]
    opt.step()
    for _ in range(3):
        opt.zero_grad()
        li = loss_fn(loss, net(x), y, weight, eps)
        li.backward()
        losses.append(li.item())
        opt.step()
    tensors.append(("losses", torch.tensor(losses, dtype=torch.float32)))
    tensors.append(("loss", torch.tensor([l0.item()], dtype=torch.float32)))

    lines = ["param %s %s" % (k, v) for k, v in params.items()]
    lines += ["param n %d" % n, "param h %d" % h, "param w %d" % w, "param scale %d" % scale,
              "param loss %s" % loss, "param loss_weight %r" % weight,
              "param charbonnier_eps %r" % eps, "param lr %r" % lr]
    blob = bytearray()
    for k, t in tensors:
        t = t.detach().contiguous().float()
        lines.append("tensor %s %d %d %s" % (k, len(blob) // 4, t.numel(),
                                              " ".join(str(d) for d in t.shape)))
        blob += t.numpy().astype("<f4").tobytes()
    with open(os.path.join(OUT, "nn_ref_%s.bin" % name), "wb") as f:
        f.write(bytes(blob))
    with open(os.path.join(OUT, "nn_ref_%s.txt" % name), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(name, "loss", losses, "bytes", len(blob))


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    make_case("edsr_x2", EDSR(8, 2, 2, 1.0), {"model": "EDSR", "n_feats": 8, "n_blocks": 2,
                                              "res_scale": 1.0}, 2, 7, 9, 2, "L1Loss")
    torch.manual_seed(1)
    make_case("edsr_x3", EDSR(8, 2, 3, 0.5), {"model": "EDSR", "n_feats": 8, "n_blocks": 2,
                                              "res_scale": 0.5}, 2, 6, 5, 3, "CharbonnierLoss",
              weight=0.5, eps=1e-6)
    torch.manual_seed(2)
    make_case("edsr_x4", EDSR(8, 1, 4, 1.0), {"model": "EDSR", "n_feats": 8, "n_blocks": 1,
                                              "res_scale": 1.0}, 1, 5, 6, 4, "MSELoss")
    torch.manual_seed(3)
    make_case("srcnn_x2", SRCNNNet((3, 16, 8, 3), (9, 1, 5), 2),
              {"model": "SRCNN", "c1": 16, "c2": 8, "k1": 9, "k2": 1, "k3": 5}, 2, 9, 7, 2,
              "L1Loss")


if __name__ == "__main__":
    main()
