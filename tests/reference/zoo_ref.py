#!/usr/bin/python3
"""zoo_ref — PyTorch reference training steps for tests/test_zoo_parity.c, one safetensors
file per case: tests/data/zoo/<case>.safetensors.

Each case builds one network of docs/models.md (tests/reference/zoo_archs.py, the reference
state_dict names) in a small configuration with PyTorch's default init under
torch.manual_seed(case seed) (PReLU slopes drawn as 0.25 + 0.1 randn so that the per-channel
slope matters), draws a uint8 batch (n = 2, non-square LQ), runs the training step in float32
as PixFlow does (forward on lq / 255, L1 loss (mean) against gt / 255, backward) and then 10
torch.optim.Adam steps (lr 1e-3, betas (0.9, 0.999), eps 1e-8) from the same weights on the
same batch.

File layout (safetensors: u64 LE header length, JSON header padded with spaces to a multiple
of 8, F32 little-endian data; tensors tile the data section in header order):
  lq, gt              F32 holding the uint8 values 0..255, (n, h, w, 3) NHWC
  <state_dict name>   every parameter, its exact reference name and shape
  ref.out             network output (n, H, W, 3) NHWC, before any clamp
  ref.loss            (1,) the L1 loss
  ref.grad.<name>     gradient of every parameter
  ref.adam_losses     (10,) loss before each of 10 Adam steps; [0] = ref.loss
  __metadata__        model_type, scale, the hyper-parameters under PixFlow's config key names
                      (lists as "a,b,c"), loss_type, learning_rate, betas, eps, seed
CI has no torch: the committed files are what the C test reads.

Run from the repository root:  /usr/bin/python3 tests/reference/zoo_ref.py
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
import zoo_archs  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "zoo")
ADAM_STEPS = 10
LR, BETAS, EPS = 1e-3, (0.9, 0.999), 1e-8

# name, seed, model_type, scale, hyper-parameters (PixFlow keys), LQ (h, w)
CASES = [
    ("srcnn_x3", 10, "SRCNN", 3, {"channels": (3, 16, 8, 3), "kernel_sizes": (9, 1, 5)}, (6, 7)),
    ("fsrcnn_x2", 11, "FSRCNN", 2, {"d": 8, "s": 4, "m": 2}, (6, 7)),
    ("fsrcnn_x3", 12, "FSRCNN", 3, {"d": 8, "s": 4, "m": 2}, (7, 6)),
    ("espcn_x3", 13, "ESPCN", 3, {}, (6, 7)),
    ("edsr_x2", 14, "EDSR", 2, {"n_feats": 8, "n_blocks": 2, "res_scale": 0.1,
                                "img_range": 255.0, "rgb_mean": (0.4, 0.5, 0.6)}, (6, 7)),
    ("msrresnet_x2", 15, "MSRResNet", 2, {"n_feats": 8, "n_blocks": 2}, (6, 7)),
    ("msrresnet_x3", 16, "MSRResNet", 3, {"n_feats": 8, "n_blocks": 2}, (6, 7)),
    ("msrresnet_x4", 17, "MSRResNet", 4, {"n_feats": 8, "n_blocks": 1}, (6, 7)),
    ("rcan_x2", 18, "RCAN", 2, {"n_feats": 16, "num_group": 2, "n_blocks": 2,
                                "squeeze_factor": 4, "res_scale": 0.5, "img_range": 255.0,
                                "rgb_mean": (0.4488, 0.4371, 0.4040)}, (6, 7)),
    ("rrdbnet_x4", 19, "RRDBNet", 4, {"n_feats": 8, "n_blocks": 1, "num_grow_ch": 4}, (6, 7)),
    # x2 pixel-unshuffles the LQ first: height and width must be even
    ("rrdbnet_x2", 20, "RRDBNet", 2, {"n_feats": 8, "n_blocks": 1, "num_grow_ch": 4}, (6, 8)),
]


def meta_value(v):
    if isinstance(v, (tuple, list)):
        return ",".join(meta_value(x) for x in v)
    return repr(v) if isinstance(v, float) else str(v)


def count_negative_inputs(net, x):
    """Per activation module with a negative slope (PReLU, LeakyReLU): how many inputs are < 0
    in one forward pass (so the slope is exercised)."""
    counts, hooks = {}, []
    for name, mod in net.named_modules():
        if isinstance(mod, (nn.PReLU, nn.LeakyReLU)):
            def hook(m, inp, out, name=name):
                counts[name] = counts.get(name, 0) + int((inp[0] < 0).sum())
            hooks.append(mod.register_forward_hook(hook))
    with torch.no_grad():
        net(x)
    for h in hooks:
        h.remove()
    return counts


def make_case(name, seed, model_type, scale, hp, lq_hw):
    torch.manual_seed(seed)
    net = zoo_archs.build(model_type, scale, **hp)
    with torch.no_grad():
        for mod in net.modules():
            if isinstance(mod, nn.PReLU):
                mod.weight.copy_(0.25 + 0.1 * torch.randn_like(mod.weight))
    n, (h, w) = 2, lq_hw
    lq = torch.randint(0, 256, (n, h, w, 3), dtype=torch.uint8)
    gt = torch.randint(0, 256, (n, h * scale, w * scale, 3), dtype=torch.uint8)
    x = lq.permute(0, 3, 1, 2).float() / 255.0
    y = gt.permute(0, 3, 1, 2).float() / 255.0

    negatives = count_negative_inputs(net, x)
    assert all(c > 0 for c in negatives.values()), (name, negatives)

    params = [(k, v.detach().clone()) for k, v in net.state_dict().items()]
    assert [k for k, _ in params] == [k for k, _ in net.named_parameters()], "buffers in " + name
    out = net(x)
    loss = torch.nn.functional.l1_loss(out, y)
    net.zero_grad()
    loss.backward()
    grads = [("ref.grad." + k, p.grad.detach().clone()) for k, p in net.named_parameters()]
    ref_out = out.detach().permute(0, 2, 3, 1).contiguous()

    opt = torch.optim.Adam(net.parameters(), lr=LR, betas=BETAS, eps=EPS)
    losses = [loss.item()]
    opt.step()
    for _ in range(ADAM_STEPS - 1):
        opt.zero_grad()
        li = torch.nn.functional.l1_loss(net(x), y)
        li.backward()
        losses.append(li.item())
        opt.step()

    tensors = [("lq", lq.float()), ("gt", gt.float())] + params + [
        ("ref.out", ref_out), ("ref.loss", torch.tensor([loss.item()])),
    ] + grads + [("ref.adam_losses", torch.tensor(losses, dtype=torch.float32))]
    meta = {"model_type": model_type, "scale": str(scale), "loss_type": "L1Loss",
            "learning_rate": repr(LR), "betas": meta_value(BETAS), "eps": repr(EPS),
            "adam_steps": str(ADAM_STEPS), "seed": str(seed)}
    meta.update({k: meta_value(v) for k, v in hp.items()})
    path = os.path.join(OUT, name + ".safetensors")
    st_io.write(path, tensors, meta)
    print("%-13s params %6d  loss %.6f -> %.6f  negative activation inputs %s  %d bytes"
          % (name, sum(v.numel() for _, v in params), losses[0], losses[-1],
             min(negatives.values()) if negatives else "-", os.path.getsize(path)))


def main():
    torch.set_num_threads(1)
    os.makedirs(OUT, exist_ok=True)
    only = set(sys.argv[1:])
    for case in CASES:
        if not only or case[0] in only:
            make_case(*case)


if __name__ == "__main__":
    main()
