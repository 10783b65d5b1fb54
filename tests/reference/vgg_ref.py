#!/usr/bin/python3
"""Reference for the VGG19 feature extractor (nn/vgg.h, pf_net_build_vgg19_features), run by
tests/test_vgg.c `torch` (ctest test_vgg.torch), which builds the same cuts in PixFlow, loads
the weights written here with pf_vgg_load and compares the features and every parameter
gradient.

The reference is torchvision's own vgg19 (Debian's python3-torchvision; random init, no
download: torchvision.models.vgg19() with weights=None, pretrained=False on older versions),
its `features` Sequential cut after the layer asked for, as BasicSR's VGGFeatureExtractor
does (features[:idx + 1], idx the layer's index in NAMES['vgg19'], which layer_names derives
from torchvision's modules), with BasicSR's input normalisation
written here in torch (not BasicSR's code):
  range_norm:     x = (x + 1) / 2
  use_input_norm: x = (x - mean) / std, mean [0.485, 0.456, 0.406], std [0.229, 0.224, 0.225]
Every conv weight is redrawn N(0, 1 / fan_in) and every bias N(0, 0.1) from a seeded
generator (torchvision's own init gives zero biases, which would not test them).

One case per layer of Real-ESRGAN's perceptual loss, with (use_input_norm, range_norm):
  conv1_2 (1, 1)  conv2_2 (1, 0)  conv3_4 (1, 0)  conv4_4 (0, 0)  conv5_4 (1, 0)
on x N x 3 x 32 x 32 (conv5_4 at 1/16: 2 x 2), x uniform in [0, 1] ([-1, 1] with range_norm);
loss = sum(features * gout), gout standard normal; autograd's gradient of every parameter of
the cut.

Kinks: a ReLU input within float rounding of 0, or a pooling window whose two largest values
are that close, may go the other way in PixFlow (another summation order, another CPU), and
the gradient behind it then moves by a whole dy (measured: one such flip in 600k activations
put conv5_4's first-layer gradients 2-7 % off). So x is redrawn (up to MAX_DRAWS) until every
ReLU input is at least MARGIN times its layer's largest |value| away from 0 and every pooling
window with a positive maximum has its two largest values at least MARGIN times the layer's
largest value apart (MARGIN 1e-6; the features agree to about 1e-6 of their largest value and
earlier layers closer); the margin found is in the metadata (margin.CASE).

DIR/vgg.safetensors (tests/reference/st_io.py): every tensor of torchvision's
vgg19().features state_dict (features.N.weight / .bias, torchvision's names) and one of its
classifier's (classifier.6.bias: the file is a superset of every cut, as a converted
torchvision file is); per case C: C.x (N x H x W x 3, NHWC as the executor's float input),
C.gout and C.out (N x C x h x w) and C.grad.NAME per parameter of the cut; metadata cases
("conv1_2:1:1,...") and n_params.CASE (the cut's parameter tensors).
Run: /usr/bin/python3 tests/reference/vgg_ref.py DIR
"""
import os
import sys

import torch
import torchvision

import st_io

CASES = [("conv1_2", 1, 1), ("conv2_2", 1, 0), ("conv3_4", 1, 0), ("conv4_4", 0, 0),
         ("conv5_4", 1, 0)]
N, H, W = 2, 32, 32
MARGIN = 1e-6
MAX_DRAWS = 200
MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def layer_names(features):
    """BasicSR's names of torchvision's feature modules, derived here from the modules
    themselves: convB_K / reluB_K for the K-th conv / ReLU of block B, poolB ending block B."""
    names, block, k = [], 1, 0
    for m in features:
        if isinstance(m, torch.nn.Conv2d):
            k += 1
            names.append("conv%d_%d" % (block, k))
        elif isinstance(m, torch.nn.ReLU):
            names.append("relu%d_%d" % (block, k))
        else:
            names.append("pool%d" % block)
            block, k = block + 1, 0
    return names


def vgg19():
    try:
        return torchvision.models.vgg19(weights=None)
    except TypeError:   # torchvision before 0.13
        return torchvision.models.vgg19(pretrained=False)


def kink_margin(cut, y):
    """The smallest distance to a kink over the cut on input y, relative to each layer's largest
    value: min |v| at every ReLU's input, the gap between the two largest values of every
    pooling window whose maximum is positive (a window of zeros has no gradient to route)."""
    worst = 1.0
    with torch.no_grad():
        for m in cut:
            if isinstance(m, torch.nn.ReLU):
                worst = min(worst, (y.abs().min() / y.abs().max()).item())
            elif isinstance(m, torch.nn.MaxPool2d):
                n, c, h, w = y.shape
                win = y.reshape(n, c, h // 2, 2, w // 2, 2).permute(0, 1, 2, 4, 3, 5)
                top = win.reshape(-1, 4).topk(2, dim=1).values
                live = top[:, 0] > 0
                if live.any():
                    gap = (top[live, 0] - top[live, 1]).min() / y.max()
                    worst = min(worst, gap.item())
            y = m(y)
    return worst


def main():
    torch.manual_seed(41)
    net = vgg19()
    names = layer_names(net.features)
    if len(names) != 37 or names[34] != "conv5_4":
        sys.exit("vgg_ref: torchvision's vgg19 features: %s" % names)
    with torch.no_grad():
        for m in net.features:
            if isinstance(m, torch.nn.Conv2d):
                fan_in = m.weight.shape[1] * 9
                m.weight.copy_(torch.randn(m.weight.shape) / fan_in ** 0.5)
                m.bias.copy_(torch.randn(m.bias.shape) * 0.1)
    sd = net.state_dict()
    tensors = [(k, v) for k, v in sd.items() if k.startswith("features.")]
    tensors.append(("classifier.6.bias", sd["classifier.6.bias"]))
    meta = {"source": "tests/reference/vgg_ref.py", "torch": torch.__version__,
            "torchvision": torchvision.__version__,
            "cases": ",".join("%s:%d:%d" % c for c in CASES)}
    mean = torch.tensor(MEAN).view(1, 3, 1, 1)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    for layer, use_input_norm, range_norm in CASES:
        idx = names.index(layer)
        cut = net.features[:idx + 1]
        params = [(n, p) for n, p in net.features.named_parameters()
                  if int(n.split(".")[0]) <= idx]
        for _, p in params:
            p.grad = None

        def normalised(x):
            y = (x + 1) / 2 if range_norm else x
            return (y - mean) / std if use_input_norm else y

        for _ in range(MAX_DRAWS):
            x = torch.rand(N, 3, H, W) * (2 if range_norm else 1) - (1 if range_norm else 0)
            margin = kink_margin(cut, normalised(x))
            if margin >= MARGIN:
                break
        else:
            sys.exit("vgg_ref: %s: no input of %d kept every kink %g away" %
                     (layer, MAX_DRAWS, MARGIN))
        meta["margin." + layer] = "%.3g" % margin
        out = cut(normalised(x))
        gout = torch.randn(out.shape)
        (out * gout).sum().backward()
        tensors += [(layer + ".x", x.permute(0, 2, 3, 1)), (layer + ".gout", gout),
                    (layer + ".out", out.detach())]
        tensors += [("%s.grad.features.%s" % (layer, n), p.grad) for n, p in params]
        meta["n_params." + layer] = str(len(params))
    path = os.path.join(sys.argv[1], "vgg.safetensors")
    st_io.write(path, tensors, meta)
    print("vgg_ref: wrote %s (%d tensors)" % (path, len(tensors)))


if __name__ == "__main__":
    main()
