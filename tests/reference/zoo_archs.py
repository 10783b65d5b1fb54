"""zoo_archs — PyTorch versions of the networks of docs/models.md, with the reference
implementations' module trees, so `state_dict()` names and shapes are exactly theirs.

Re-implemented (not copied) from the reference designs:
  SRCNN      MMagic `SRCNNNet` (mmagic/models/editors/srcnn/srcnn_net.py)
  FSRCNN     yjn870/FSRCNN-pytorch `FSRCNN` (models.py), RGB: num_channels=3
  ESPCN      yjn870/ESPCN-pytorch `ESPCN` (models.py), RGB: num_channels=3
  EDSR       BasicSR basicsr/archs/edsr_arch.py
  MSRResNet  BasicSR basicsr/archs/srresnet_arch.py
  RCAN       BasicSR basicsr/archs/rcan_arch.py
  RRDBNet    BasicSR basicsr/archs/rrdbnet_arch.py
  BasicVSR   BasicSR basicsr/archs/basicvsr_arch.py + spynet_arch.py (bench/video/torch_basicvsr.py,
             SpyNet's `mean` and `std` buffers as BasicSR registers them)
Constructor arguments use the reference names (num_feat, num_block, upscale / scale / scale_factor,
...). Inputs are NCHW float in [0, 1] (lq / 255). Initialisation is PyTorch's default for every
module (the references' own init schemes are not reproduced: parity tests dump the weights).

`build(model_type, scale, **hp)` takes PixFlow's config key names (n_feats, n_blocks, num_group,
squeeze_factor, num_grow_ch, d, s, m, res_scale, img_range, rgb_mean, channels, kernel_sizes)
and returns the module. Importing this file has no side effects.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

RGB_MEAN = (0.4488, 0.4371, 0.4040)  # DIV2K mean, BasicSR's default


class SRCNNNet(nn.Module):
    """MMagic SRCNNNet: bicubic upsampling, conv1 (k9) ReLU, conv2 (k1) ReLU, conv3 (k5)."""

    def __init__(self, channels=(3, 64, 32, 3), kernel_sizes=(9, 1, 5), upscale_factor=4):
        super().__init__()
        self.img_upsampler = nn.Upsample(scale_factor=upscale_factor, mode='bicubic',
                                         align_corners=False)
        self.conv1 = nn.Conv2d(channels[0], channels[1], kernel_sizes[0],
                               padding=kernel_sizes[0] // 2)
        self.conv2 = nn.Conv2d(channels[1], channels[2], kernel_sizes[1],
                               padding=kernel_sizes[1] // 2)
        self.conv3 = nn.Conv2d(channels[2], channels[3], kernel_sizes[2],
                               padding=kernel_sizes[2] // 2)
        self.relu = nn.ReLU()

    def forward(self, x):
        x = self.img_upsampler(x)
        out = self.relu(self.conv1(x))
        out = self.relu(self.conv2(out))
        return self.conv3(out)


class FSRCNN(nn.Module):
    """yjn870 FSRCNN: feature extraction, shrink, m mapping layers, expand (PReLU after each),
    then a transposed convolution that upsamples by scale_factor."""

    def __init__(self, scale_factor, num_channels=3, d=56, s=12, m=4):
        super().__init__()
        self.first_part = nn.Sequential(nn.Conv2d(num_channels, d, 5, padding=2), nn.PReLU(d))
        mid = [nn.Conv2d(d, s, 1), nn.PReLU(s)]
        for _ in range(m):
            mid += [nn.Conv2d(s, s, 3, padding=1), nn.PReLU(s)]
        mid += [nn.Conv2d(s, d, 1), nn.PReLU(d)]
        self.mid_part = nn.Sequential(*mid)
        self.last_part = nn.ConvTranspose2d(d, num_channels, 9, stride=scale_factor, padding=4,
                                            output_padding=scale_factor - 1)

    def forward(self, x):
        return self.last_part(self.mid_part(self.first_part(x)))


class ESPCN(nn.Module):
    """yjn870 ESPCN: conv k5 -> 64, tanh, conv k3 -> 32, tanh, conv k3 -> C scale², shuffle."""

    def __init__(self, scale_factor, num_channels=3):
        super().__init__()
        self.first_part = nn.Sequential(nn.Conv2d(num_channels, 64, 5, padding=2), nn.Tanh(),
                                        nn.Conv2d(64, 32, 3, padding=1), nn.Tanh())
        self.last_part = nn.Sequential(nn.Conv2d(32, num_channels * scale_factor ** 2, 3,
                                                 padding=1),
                                       nn.PixelShuffle(scale_factor))

    def forward(self, x):
        return self.last_part(self.first_part(x))


class ResidualBlockNoBN(nn.Module):
    """BasicSR: x + conv2(relu(conv1(x))) * res_scale."""

    def __init__(self, num_feat=64, res_scale=1.0):
        super().__init__()
        self.res_scale = res_scale
        self.conv1 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv2 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.relu = nn.ReLU()

    def forward(self, x):
        return x + self.conv2(self.relu(self.conv1(x))) * self.res_scale


class Upsample(nn.Sequential):
    """BasicSR: (conv C -> 4C, PixelShuffle(2)) per factor 2, or conv C -> 9C, PixelShuffle(3)."""

    def __init__(self, scale, num_feat):
        m = []
        if scale & (scale - 1) == 0:
            for _ in range(int(math.log2(scale))):
                m += [nn.Conv2d(num_feat, 4 * num_feat, 3, 1, 1), nn.PixelShuffle(2)]
        elif scale == 3:
            m += [nn.Conv2d(num_feat, 9 * num_feat, 3, 1, 1), nn.PixelShuffle(3)]
        else:
            raise ValueError("scale %d is not supported; supported scales: 2^n and 3" % scale)
        super().__init__(*m)


class MeanShiftSR(nn.Module):
    """BasicSR's EDSR/RCAN frame: x = (x - mean) * img_range; conv_first; body; conv_after_body
    plus skip; upsample; conv_last; y / img_range + mean. make_body() builds `body` (modules
    are created in the reference's order, so the default init draws the same numbers)."""

    def __init__(self, num_in_ch, num_out_ch, num_feat, upscale, img_range, rgb_mean, make_body):
        super().__init__()
        self.img_range = img_range
        self.mean = torch.Tensor(rgb_mean).view(1, 3, 1, 1)  # not a buffer: not in state_dict
        self.conv_first = nn.Conv2d(num_in_ch, num_feat, 3, 1, 1)
        self.body = make_body()
        self.conv_after_body = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.upsample = Upsample(upscale, num_feat)
        self.conv_last = nn.Conv2d(num_feat, num_out_ch, 3, 1, 1)

    def forward(self, x):
        mean = self.mean.type_as(x)
        x = (x - mean) * self.img_range
        x = self.conv_first(x)
        res = self.conv_after_body(self.body(x)) + x
        x = self.conv_last(self.upsample(res))
        return x / self.img_range + mean


class EDSR(MeanShiftSR):
    def __init__(self, num_in_ch=3, num_out_ch=3, num_feat=64, num_block=16, upscale=4,
                 res_scale=1.0, img_range=255.0, rgb_mean=RGB_MEAN):
        super().__init__(num_in_ch, num_out_ch, num_feat, upscale, img_range, rgb_mean,
                         lambda: nn.Sequential(*[ResidualBlockNoBN(num_feat, res_scale)
                                                 for _ in range(num_block)]))


class MSRResNet(nn.Module):
    def __init__(self, num_in_ch=3, num_out_ch=3, num_feat=64, num_block=16, upscale=4):
        super().__init__()
        self.upscale = upscale
        self.conv_first = nn.Conv2d(num_in_ch, num_feat, 3, 1, 1)
        self.body = nn.Sequential(*[ResidualBlockNoBN(num_feat) for _ in range(num_block)])
        if upscale in (2, 3):
            self.upconv1 = nn.Conv2d(num_feat, num_feat * upscale * upscale, 3, 1, 1)
            self.pixel_shuffle = nn.PixelShuffle(upscale)
        elif upscale == 4:
            self.upconv1 = nn.Conv2d(num_feat, num_feat * 4, 3, 1, 1)
            self.upconv2 = nn.Conv2d(num_feat, num_feat * 4, 3, 1, 1)
            self.pixel_shuffle = nn.PixelShuffle(2)
        else:
            raise ValueError("MSRResNet: upscale must be 2, 3 or 4")
        self.conv_hr = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_last = nn.Conv2d(num_feat, num_out_ch, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(0.1)

    def forward(self, x):
        feat = self.lrelu(self.conv_first(x))
        out = self.body(feat)
        out = self.lrelu(self.pixel_shuffle(self.upconv1(out)))
        if self.upscale == 4:
            out = self.lrelu(self.pixel_shuffle(self.upconv2(out)))
        out = self.conv_last(self.lrelu(self.conv_hr(out)))
        base = F.interpolate(x, scale_factor=self.upscale, mode='bilinear', align_corners=False)
        return out + base


class ChannelAttention(nn.Module):
    def __init__(self, num_feat, squeeze_factor=16):
        super().__init__()
        self.attention = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Conv2d(num_feat, num_feat // squeeze_factor, 1),
            nn.ReLU(), nn.Conv2d(num_feat // squeeze_factor, num_feat, 1), nn.Sigmoid())

    def forward(self, x):
        return x * self.attention(x)


class RCAB(nn.Module):
    def __init__(self, num_feat, squeeze_factor=16, res_scale=1.0):
        super().__init__()
        self.res_scale = res_scale
        self.rcab = nn.Sequential(nn.Conv2d(num_feat, num_feat, 3, 1, 1), nn.ReLU(),
                                  nn.Conv2d(num_feat, num_feat, 3, 1, 1),
                                  ChannelAttention(num_feat, squeeze_factor))

    def forward(self, x):
        return self.rcab(x) * self.res_scale + x


class ResidualGroup(nn.Module):
    def __init__(self, num_feat, num_block, squeeze_factor=16, res_scale=1.0):
        super().__init__()
        self.residual_group = nn.Sequential(*[RCAB(num_feat, squeeze_factor, res_scale)
                                              for _ in range(num_block)])
        self.conv = nn.Conv2d(num_feat, num_feat, 3, 1, 1)

    def forward(self, x):
        return self.conv(self.residual_group(x)) + x


class RCAN(MeanShiftSR):
    def __init__(self, num_in_ch=3, num_out_ch=3, num_feat=64, num_group=10, num_block=16,
                 squeeze_factor=16, upscale=4, res_scale=1.0, img_range=255.0,
                 rgb_mean=RGB_MEAN):
        super().__init__(num_in_ch, num_out_ch, num_feat, upscale, img_range, rgb_mean,
                         lambda: nn.Sequential(*[ResidualGroup(num_feat, num_block,
                                                               squeeze_factor, res_scale)
                                                 for _ in range(num_group)]))


class ResidualDenseBlock(nn.Module):
    def __init__(self, num_feat=64, num_grow_ch=32):
        super().__init__()
        self.conv1 = nn.Conv2d(num_feat, num_grow_ch, 3, 1, 1)
        self.conv2 = nn.Conv2d(num_feat + num_grow_ch, num_grow_ch, 3, 1, 1)
        self.conv3 = nn.Conv2d(num_feat + 2 * num_grow_ch, num_grow_ch, 3, 1, 1)
        self.conv4 = nn.Conv2d(num_feat + 3 * num_grow_ch, num_grow_ch, 3, 1, 1)
        self.conv5 = nn.Conv2d(num_feat + 4 * num_grow_ch, num_feat, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(0.2)

    def forward(self, x):
        x1 = self.lrelu(self.conv1(x))
        x2 = self.lrelu(self.conv2(torch.cat((x, x1), 1)))
        x3 = self.lrelu(self.conv3(torch.cat((x, x1, x2), 1)))
        x4 = self.lrelu(self.conv4(torch.cat((x, x1, x2, x3), 1)))
        x5 = self.conv5(torch.cat((x, x1, x2, x3, x4), 1))
        return x5 * 0.2 + x


class RRDB(nn.Module):
    def __init__(self, num_feat, num_grow_ch=32):
        super().__init__()
        self.rdb1 = ResidualDenseBlock(num_feat, num_grow_ch)
        self.rdb2 = ResidualDenseBlock(num_feat, num_grow_ch)
        self.rdb3 = ResidualDenseBlock(num_feat, num_grow_ch)

    def forward(self, x):
        return self.rdb3(self.rdb2(self.rdb1(x))) * 0.2 + x


class RRDBNet(nn.Module):
    """BasicSR RRDBNet. Note the argument is `scale` (not `upscale`); x2 (and x1) first
    pixel-unshuffle the input, so the LQ height and width must be even for x2."""

    def __init__(self, num_in_ch=3, num_out_ch=3, scale=4, num_feat=64, num_block=23,
                 num_grow_ch=32):
        super().__init__()
        self.scale = scale
        if scale == 2:
            num_in_ch *= 4
        elif scale == 1:
            num_in_ch *= 16
        self.conv_first = nn.Conv2d(num_in_ch, num_feat, 3, 1, 1)
        self.body = nn.Sequential(*[RRDB(num_feat, num_grow_ch) for _ in range(num_block)])
        self.conv_body = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_up1 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_up2 = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_hr = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.conv_last = nn.Conv2d(num_feat, num_out_ch, 3, 1, 1)
        self.lrelu = nn.LeakyReLU(0.2)

    def forward(self, x):
        if self.scale == 2:
            feat = F.pixel_unshuffle(x, 2)  # channel c*4 + dy*2 + dx, as basicsr pixel_unshuffle
        elif self.scale == 1:
            feat = F.pixel_unshuffle(x, 4)
        else:
            feat = x
        feat = self.conv_first(feat)
        feat = feat + self.conv_body(self.body(feat))
        feat = self.lrelu(self.conv_up1(F.interpolate(feat, scale_factor=2, mode='nearest')))
        feat = self.lrelu(self.conv_up2(F.interpolate(feat, scale_factor=2, mode='nearest')))
        return self.conv_last(self.lrelu(self.conv_hr(feat)))


MODEL_TYPES = ("SRCNN", "FSRCNN", "ESPCN", "EDSR", "MSRResNet", "RCAN", "RRDBNet", "BasicVSR")

DEFAULTS = {
    "SRCNN": {"channels": (3, 64, 32, 3), "kernel_sizes": (9, 1, 5)},
    "FSRCNN": {"d": 56, "s": 12, "m": 4},
    "ESPCN": {},
    "EDSR": {"n_feats": 64, "n_blocks": 16, "res_scale": 1.0, "img_range": 255.0,
             "rgb_mean": RGB_MEAN},
    "MSRResNet": {"n_feats": 64, "n_blocks": 16},
    "RCAN": {"n_feats": 64, "num_group": 10, "n_blocks": 16, "squeeze_factor": 16,
             "res_scale": 1.0, "img_range": 255.0, "rgb_mean": RGB_MEAN},
    "RRDBNet": {"n_feats": 64, "n_blocks": 23, "num_grow_ch": 32},
    "BasicVSR": {"n_feats": 64, "n_blocks": 15},
}


def build(model_type, scale, **hp):
    """The network `model_type` for `scale`, hyper-parameters under PixFlow's config names
    (missing ones take the docs/models.md defaults; unknown ones raise)."""
    if model_type not in DEFAULTS:
        raise ValueError("unknown model_type %r; choices: %s" % (model_type, ", ".join(MODEL_TYPES)))
    unknown = set(hp) - set(DEFAULTS[model_type])
    if unknown:
        raise ValueError("%s: unknown hyper-parameters %s" % (model_type, sorted(unknown)))
    p = dict(DEFAULTS[model_type], **hp)
    scale = int(scale)
    if model_type == "SRCNN":
        return SRCNNNet(tuple(p["channels"]), tuple(p["kernel_sizes"]), scale)
    if model_type == "FSRCNN":
        return FSRCNN(scale, 3, int(p["d"]), int(p["s"]), int(p["m"]))
    if model_type == "ESPCN":
        return ESPCN(scale, 3)
    if model_type == "EDSR":
        return EDSR(3, 3, int(p["n_feats"]), int(p["n_blocks"]), scale, float(p["res_scale"]),
                    float(p["img_range"]), tuple(p["rgb_mean"]))
    if model_type == "MSRResNet":
        return MSRResNet(3, 3, int(p["n_feats"]), int(p["n_blocks"]), scale)
    if model_type == "RCAN":
        return RCAN(3, 3, int(p["n_feats"]), int(p["num_group"]), int(p["n_blocks"]),
                    int(p["squeeze_factor"]), scale, float(p["res_scale"]),
                    float(p["img_range"]), tuple(p["rgb_mean"]))
    if model_type == "BasicVSR":
        # bench/video/torch_basicvsr.py: BasicSR's BasicVSR, SpyNet's mean and std buffers
        # included (imported here only: it is a script of the video benchmark)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sys.path.insert(0, os.path.join(root, "bench", "video"))
        import torch_basicvsr  # noqa: E402
        if scale != 4:
            raise ValueError("BasicVSR: scale must be 4")
        return torch_basicvsr.BasicVSR(int(p["n_feats"]), int(p["n_blocks"]))
    if scale not in (2, 4):
        raise ValueError("RRDBNet: scale must be 2 or 4")
    return RRDBNet(3, 3, scale, int(p["n_feats"]), int(p["n_blocks"]), int(p["num_grow_ch"]))


def reference_init(net, model_type):
    """Re-draw `net`'s weights the way its reference implementation does (PyTorch's default
    init is what the modules above start with): BasicSR's default_init_weights(scale=0.1)
    (kaiming_normal_ fan-in, times 0.1, bias 0) for every conv of MSRResNet and the dense blocks
    of RRDBNet; yjn870's N(0, 2 / (out_channels k^2)) with zero bias for FSRCNN and ESPCN, their
    last layer N(0, 0.001^2). SRCNN, EDSR, RCAN keep PyTorch's default."""
    def basicsr(convs):
        for c in convs:
            nn.init.kaiming_normal_(c.weight)
            c.weight.data.mul_(0.1)
            c.bias.data.zero_()

    def fan_out(conv, std=None):
        s = std if std is not None else \
            math.sqrt(2.0 / (conv.out_channels * conv.weight[0][0].numel()))
        conv.weight.data.normal_(0.0, s)
        conv.bias.data.zero_()

    with torch.no_grad():
        if model_type == "MSRResNet":
            basicsr([m for m in net.modules() if isinstance(m, nn.Conv2d)])
        elif model_type == "RRDBNet":
            for m in net.modules():
                if isinstance(m, ResidualDenseBlock):
                    basicsr([m.conv1, m.conv2, m.conv3, m.conv4, m.conv5])
        elif model_type in ("FSRCNN", "ESPCN"):
            convs = [m for m in net.modules() if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d))]
            for c in convs[:-1]:
                fan_out(c)
            fan_out(convs[-1], 0.001)
    return net
