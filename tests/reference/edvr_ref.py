#!/usr/bin/python3
"""edvr_ref.py — PyTorch reference for tests/test_edvr.c `torch` (ctest test_edvr.torch): EDVR
(Wang et al., "EDVR: Video Restoration with Enhanced Deformable Convolutional Networks",
CVPRW 2019) written here from the paper and the module structure of BasicSR's edvr_arch.py
(PCD alignment, TSA fusion, the predeblur pyramid; x4, or with hr_in the input's size, the
features at 1/4 of it), not its code, with BasicSR's
parameter names and torchvision.ops.deform_conv2d for the modulated deformable convolution
(DCNv2Pack: conv_offset -> (o1, o2, mask) thirds, offset cat(o1, o2), mask sigmoid).

`edvr_ref.py count` prints the parameter count of EDVR-M (num_feat 64, num_frame 5,
deformable_groups 8, num_extract_block 5, num_reconstruct_block 10, TSA) and of the tiny
configurations test_edvr.c checks, sum(p.numel()) over the model's parameters.

`edvr_ref.py DIR`: DIR (written by the C test) holds one sub-folder per case, each with
params.txt (`config N T H W C DG NEXT NREC CENTER TSA DRAW PREDEBLUR HR_IN`, then `param NAME
OFFSET NDIM SHAPE...` per parameter tensor in PixFlow's order), params.f32 (PixFlow's flat
counter-hash weights), lq.u8 / gt.u8 (N T H W 3 and N sH sW 3, s 4, or 1 with hr_in: the center
frame's GT), saved.safetensors (the weights as PixFlow's checkpoint writer saves them) and per
layout k LK.out.f32 (N 3 sH sW), LK.loss.f32, LK.grads.f32. Checked per case:
 - the state_dict's keys, order and shapes equal PixFlow's table, load_state_dict(strict=True)
   takes PixFlow's weights and PixFlow's saved file; torch's state_dict is written back as
   torch.safetensors (PixFlow loads it in the C test's second pass);
 - the output within 1e-5 of float64's largest |value|, the Charbonnier loss (eps 1e-12,
   mean) within 1e-5 relative;
 - every parameter's gradient within 1e-4 of its float64 gradient's largest |value|;
 - the draw rule: the case's data (draw k of the hash: names lq / gt, or lq#k / gt#k for k > 0)
   keep every LeakyReLU / ReLU input and Charbonnier difference of the float64 run at least
   KINK_MIN from 0 and PyTorch float32's gradients within E32_MAX of float64's (rel_err), so no
   kink sits within float32 rounding and a larger error of PixFlow's is its own (as
   gan_step_ref.py's redraws). `edvr_ref.py draws CASEDIR...` (a PF_TEST_KEEP case folder)
   prints draws 0, 1, ... until one meets the rule: test_edvr.c's CASES take that draw. The
   closest kink over about 1M kink inputs per case is 1e-8..1e-7 in every draw, so KINK_MIN
   only rules out the worst; PyTorch float32's error is the measure that tells (draw 0 of the
   T 5, no-TSA case: 7.4e-3, its LeakyReLU input 9.3e-9 from 0).
Exit status 1 on any failure.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.ops import deform_conv2d

import st_io
from basicvsr_ref import hash_units
from layout_check import check_layouts, rel_err, run_charbonnier


# Kinks the float64 run meets (LeakyReLU / ReLU inputs, the Charbonnier difference): (where,
# smallest |x|), recorded while MARGINS is a list
MARGINS = None
KINK_MIN = 2e-8     # the draw rule: no kink input within KINK_MIN of 0 in float64,
E32_MAX = 5e-5      # and PyTorch float32's gradients within E32_MAX of float64's
MAX_DRAWS = 40


def kink(where, x):
    if MARGINS is not None and x.dtype == torch.float64:
        MARGINS.append((where, x.detach().abs().min().item()))


def lrelu(x):
    kink('lrelu', x)
    return F.leaky_relu(x, 0.1)


def up2(x):
    return F.interpolate(x, scale_factor=2, mode='bilinear', align_corners=False)


class ResBlock(nn.Module):
    """x + conv2(relu(conv1(x))) (ResidualBlockNoBN, res_scale 1)."""

    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, 1, 1)
        self.conv2 = nn.Conv2d(c, c, 3, 1, 1)

    def forward(self, x):
        y = self.conv1(x)
        kink('relu', y)
        return x + self.conv2(F.relu(y))


class Predeblur(nn.Module):
    """The pre-deblurring pyramid (BasicSR's PredeblurModule): an lrelu'd 3x3 conv, with hr_in
    two stride-2 convs (the input down by 4), levels at 1/2 and 1/4 by stride-2 convs, merged
    coarse to fine through residual blocks and bilinear x2."""

    def __init__(self, c, hr_in):
        super().__init__()
        self.hr_in = hr_in
        self.conv_first = nn.Conv2d(3, c, 3, 1, 1)
        down = lambda: nn.Conv2d(c, c, 3, 2, 1)  # noqa: E731
        if hr_in:
            self.stride_conv_hr1, self.stride_conv_hr2 = down(), down()
        self.stride_conv_l2, self.stride_conv_l3 = down(), down()
        self.resblock_l3 = ResBlock(c)
        self.resblock_l2_1 = ResBlock(c)
        self.resblock_l2_2 = ResBlock(c)
        self.resblock_l1 = nn.ModuleList([ResBlock(c) for _ in range(5)])

    def forward(self, x):
        l1 = lrelu(self.conv_first(x))
        if self.hr_in:
            l1 = lrelu(self.stride_conv_hr2(lrelu(self.stride_conv_hr1(l1))))
        l2 = lrelu(self.stride_conv_l2(l1))
        l3 = lrelu(self.stride_conv_l3(l2))
        l2 = up2(self.resblock_l2_2(self.resblock_l2_1(l2) + up2(self.resblock_l3(l3))))
        for i, block in enumerate(self.resblock_l1):
            l1 = block(l1 + l2 if i == 2 else l1)
        return l1


class DCNPack(nn.Module):
    """Modulated deformable conv 3x3 pad 1 whose offsets and mask come from conv_offset(feat)."""

    def __init__(self, c, dg):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(c, c, 3, 3))
        self.bias = nn.Parameter(torch.zeros(c))
        self.conv_offset = nn.Conv2d(c, 27 * dg, 3, 1, 1)
        self.dg = dg

    def forward(self, x, feat):
        o = self.conv_offset(feat)
        k = 9 * self.dg
        return deform_conv2d(x, o[:, :2 * k], self.weight, self.bias, padding=1,
                             mask=torch.sigmoid(o[:, 2 * k:]))


class PCD(nn.Module):
    def __init__(self, c, dg):
        super().__init__()
        conv = lambda i: nn.Conv2d(i * c, c, 3, 1, 1)  # noqa: E731
        self.offset_conv1 = nn.ModuleDict({'l%d' % i: conv(2) for i in (3, 2, 1)})
        self.offset_conv2 = nn.ModuleDict({'l%d' % i: conv(1 if i == 3 else 2)
                                           for i in (3, 2, 1)})
        self.offset_conv3 = nn.ModuleDict({'l%d' % i: conv(1) for i in (2, 1)})
        self.dcn_pack = nn.ModuleDict({'l%d' % i: DCNPack(c, dg) for i in (3, 2, 1)})
        self.feat_conv = nn.ModuleDict({'l%d' % i: conv(2) for i in (2, 1)})
        self.cas_offset_conv1 = conv(2)
        self.cas_offset_conv2 = conv(1)
        self.cas_dcnpack = DCNPack(c, dg)

    def forward(self, nbr, ref):
        up_o = up_f = None
        for i in (3, 2, 1):
            lv = 'l%d' % i
            o = lrelu(self.offset_conv1[lv](torch.cat([nbr[i - 1], ref[i - 1]], 1)))
            if i == 3:
                o = lrelu(self.offset_conv2[lv](o))
            else:
                o = lrelu(self.offset_conv3[lv](lrelu(self.offset_conv2[lv](
                    torch.cat([o, up_o], 1)))))
            f = self.dcn_pack[lv](nbr[i - 1], o)
            if i < 3:
                f = self.feat_conv[lv](torch.cat([f, up_f], 1))
            if i > 1:
                f = lrelu(f)
                up_o, up_f = up2(o) * 2, up2(f)
        o = lrelu(self.cas_offset_conv2(lrelu(self.cas_offset_conv1(torch.cat([f, ref[0]], 1)))))
        return lrelu(self.cas_dcnpack(f, o))


class TSA(nn.Module):
    def __init__(self, c, t, center):
        super().__init__()
        self.center = center
        cv = lambda i, o, k: nn.Conv2d(i, o, k, 1, k // 2)  # noqa: E731
        self.temporal_attn1 = cv(c, c, 3)
        self.temporal_attn2 = cv(c, c, 3)
        self.feat_fusion = cv(t * c, c, 1)
        self.spatial_attn1 = cv(t * c, c, 1)
        self.spatial_attn2 = cv(2 * c, c, 1)
        self.spatial_attn3 = cv(c, c, 3)
        self.spatial_attn4 = cv(c, c, 1)
        self.spatial_attn5 = cv(c, c, 3)
        self.spatial_attn_l1 = cv(c, c, 1)
        self.spatial_attn_l2 = cv(2 * c, c, 3)
        self.spatial_attn_l3 = cv(c, c, 3)
        self.spatial_attn_add1 = cv(c, c, 1)
        self.spatial_attn_add2 = cv(c, c, 1)

    def forward(self, a):  # a: (b, t, c, h, w)
        b, t, c, h, w = a.shape
        ref = self.temporal_attn1(a[:, self.center])
        emb = self.temporal_attn2(a.reshape(-1, c, h, w)).view(b, t, c, h, w)
        prob = torch.sigmoid((emb * ref.unsqueeze(1)).sum(2, keepdim=True))  # (b, t, 1, h, w)
        a = (a * prob).reshape(b, t * c, h, w)
        feat = lrelu(self.feat_fusion(a))

        def pool(x):
            return torch.cat([F.max_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 3, 2, 1)], 1)
        attn = lrelu(self.spatial_attn2(pool(lrelu(self.spatial_attn1(a)))))
        lvl = lrelu(self.spatial_attn_l2(pool(lrelu(self.spatial_attn_l1(attn)))))
        lvl = up2(lrelu(self.spatial_attn_l3(lvl)))
        attn = lrelu(self.spatial_attn3(attn)) + lvl
        attn = self.spatial_attn5(up2(lrelu(self.spatial_attn4(attn))))
        add = self.spatial_attn_add2(lrelu(self.spatial_attn_add1(attn)))
        return feat * torch.sigmoid(attn) * 2 + add


class EDVR(nn.Module):
    def __init__(self, c=64, t=5, dg=8, n_ext=5, n_rec=10, center=None, tsa=True, pre=False,
                 hr_in=False):
        super().__init__()
        assert pre or not hr_in
        self.center = t // 2 if center is None else center
        self.pre, self.hr_in = pre, hr_in
        if pre:
            self.predeblur = Predeblur(c, hr_in)
            self.conv_1x1 = nn.Conv2d(c, c, 1, 1)
        else:
            self.conv_first = nn.Conv2d(3, c, 3, 1, 1)
        self.feature_extraction = nn.Sequential(*[ResBlock(c) for _ in range(n_ext)])
        self.conv_l2_1 = nn.Conv2d(c, c, 3, 2, 1)
        self.conv_l2_2 = nn.Conv2d(c, c, 3, 1, 1)
        self.conv_l3_1 = nn.Conv2d(c, c, 3, 2, 1)
        self.conv_l3_2 = nn.Conv2d(c, c, 3, 1, 1)
        self.pcd_align = PCD(c, dg)
        self.tsa = tsa
        self.fusion = TSA(c, t, self.center) if tsa else nn.Conv2d(t * c, c, 1, 1)
        self.reconstruction = nn.Sequential(*[ResBlock(c) for _ in range(n_rec)])
        self.upconv1 = nn.Conv2d(c, 4 * c, 3, 1, 1)
        self.upconv2 = nn.Conv2d(c, 256, 3, 1, 1)
        self.conv_hr = nn.Conv2d(64, 64, 3, 1, 1)
        self.conv_last = nn.Conv2d(64, 3, 3, 1, 1)

    def forward(self, x):  # (b, t, 3, h, w) in [0, 1]
        b, t, _, h, w = x.shape
        frames = x.reshape(-1, 3, h, w)
        if self.pre:
            l1 = self.conv_1x1(self.predeblur(frames))
        else:
            l1 = lrelu(self.conv_first(frames))
        l1 = self.feature_extraction(l1)
        l2 = lrelu(self.conv_l2_2(lrelu(self.conv_l2_1(l1))))
        l3 = lrelu(self.conv_l3_2(lrelu(self.conv_l3_1(l2))))
        feats = [f.view(b, t, -1, f.shape[2], f.shape[3]) for f in (l1, l2, l3)]
        ref = [f[:, self.center] for f in feats]
        a = torch.stack([self.pcd_align([f[:, i] for f in feats], ref) for i in range(t)], 1)
        f = self.fusion(a) if self.tsa else self.fusion(a.flatten(1, 2))
        f = self.reconstruction(f)
        f = lrelu(F.pixel_shuffle(self.upconv1(f), 2))
        f = lrelu(F.pixel_shuffle(self.upconv2(f), 2))
        f = self.conv_last(lrelu(self.conv_hr(f)))
        if self.hr_in:
            return f + x[:, self.center]
        return f + F.interpolate(x[:, self.center], scale_factor=4, mode='bilinear',
                                 align_corners=False)


def count(**kw):
    return sum(p.numel() for p in EDVR(**kw).parameters())


def check_case(folder, bad):
    params = []
    with open(os.path.join(folder, 'params.txt')) as f:
        for line in f:
            p = line.split()
            if p[0] == 'config':
                n, t, h, w, c, dg, n_ext, n_rec, center, tsa, draw, pre, hr = map(int, p[1:])
            elif p[0] == 'param':
                params.append((p[1], int(p[2]), tuple(int(v) for v in p[4:4 + int(p[3])])))
    tag = ('%s (C %d, T %d, dg %d, ext %d, rec %d, center %d, tsa %d, predeblur %d, hr_in %d, '
           '%dx%d, draw %d)' % (os.path.basename(folder), c, t, dg, n_ext, n_rec, center, tsa,
                                pre, hr, h, w, draw))
    kw = dict(c=c, t=t, dg=dg, n_ext=n_ext, n_rec=n_rec, center=center, tsa=bool(tsa),
              pre=bool(pre), hr_in=bool(hr))
    s = 1 if hr else 4
    model = EDVR(**kw)
    flat = np.fromfile(os.path.join(folder, 'params.f32'), dtype=np.float32)
    sd = model.state_dict()
    if [p[0] for p in params] != list(sd.keys()):
        bad.append('%s: parameter names or order differ from the state_dict\'s' % tag)
    pix = {}
    for name, off, shape in params:
        numel = int(np.prod(shape))
        pix[name] = torch.from_numpy(flat[off:off + numel].copy()).view(shape)
        if name in sd and tuple(sd[name].shape) != shape:
            bad.append('%s: %s: shape %s, PyTorch %s' % (tag, name, shape,
                                                       tuple(sd[name].shape)))
    try:
        model.load_state_dict(pix, strict=True)
    except RuntimeError as e:
        bad.append('%s: load_state_dict(strict=True): %s' % (tag, e))
    saved = os.path.join(folder, 'saved.safetensors')
    if os.path.exists(saved):
        st, _ = st_io.read(saved)
        try:
            EDVR(**kw).load_state_dict({k: torch.from_numpy(v) for k, v in st.items()},
                                       strict=True)
        except RuntimeError as e:
            bad.append('%s: PixFlow\'s saved file: load_state_dict(strict=True): %s' % (tag, e))
        if list(st) != list(sd) or any(not np.array_equal(st[k], pix[k].numpy()) for k in pix):
            bad.append('%s: PixFlow\'s saved file differs from its parameters' % tag)
    # torch's own state_dict back to PixFlow: the hash weights plus 0.125, so the C side can
    # tell they came back from torch
    st_io.write(os.path.join(folder, 'torch.safetensors'),
                [(k, v + 0.125) for k, v in model.state_dict().items()], {})
    lq = np.fromfile(os.path.join(folder, 'lq.u8'), dtype=np.uint8)
    gt = np.fromfile(os.path.join(folder, 'gt.u8'), dtype=np.uint8)
    want_lq, want_gt = draw_data(n, t, h, w, s, draw)
    if not (np.array_equal(lq, want_lq) and np.array_equal(gt, want_gt)):
        bad.append('%s: lq.u8 / gt.u8 are not draw %d of the hash (%s, %s)'
                   % ((tag, draw) + data_names(draw)))

    x = torch.from_numpy(lq).view(n, t, h, w, 3).permute(0, 1, 4, 2, 3)
    y = torch.from_numpy(gt).view(n, s * h, s * w, 3).permute(0, 3, 1, 2)
    o64, l64, g64, g32, margin, where, e32 = measure(model, x, y)
    print('%s: closest kink %.2g (%s), PyTorch float32 gradients within %.2g of float64'
          % (tag, margin, where, e32))
    if not (margin >= KINK_MIN and e32 <= E32_MAX):
        bad.append('%s: draw %d breaks the draw rule (closest kink %.2g, %s; float32 %.2g): '
                   'pick the draw `edvr_ref.py draws` prints' % (tag, draw, margin, where, e32))
    k = check_layouts(folder, params, o64, l64, g64, g32, 'edvr_ref: ' + tag, bad, slack=0)
    if k == 0:
        bad.append('%s: no layouts' % tag)


def data_names(draw):
    """The hash names of a case's LQ and GT pixels for draw k (test_edvr.c's tiny_data)."""
    return ('lq', 'gt') if draw == 0 else ('lq#%d' % draw, 'gt#%d' % draw)


def draw_data(n, t, h, w, s, draw):
    """LQ (n t h w 3) and GT (n sh sw 3) uint8 of draw k: floor(256 u(name, i))."""
    nl, ng = data_names(draw)
    lq = np.floor(hash_units(nl, n * t * h * w * 3) * 256).astype(np.uint8)
    gt = np.floor(hash_units(ng, n * s * s * h * w * 3) * 256).astype(np.uint8)
    return lq, gt


def measure(model, x, y):
    """model's float64 and float32 runs on x, y (uint8, the model's layouts): (o64, l64, g64,
    g32, closest kink of the float64 run, where, PyTorch float32's largest gradient error)."""
    global MARGINS
    MARGINS = []
    o64, l64, g64 = run_charbonnier(model, torch.float64, x, y)
    kink('charbonnier', o64 - y.double() / 255.0)
    where, margin = min(MARGINS, key=lambda m: m[1])
    MARGINS = None
    _, _, g32 = run_charbonnier(model, torch.float32, x, y)
    return o64, l64, g64, g32, margin, where, max(rel_err(g32[k], g64[k]) for k in g64)


def draws(folder):
    """Print draws 0, 1, ... of a case folder (its params.txt, params.f32) until one meets the
    draw rule; test_edvr.c's CASES take that draw."""
    params = []
    with open(os.path.join(folder, 'params.txt')) as f:
        for line in f:
            p = line.split()
            if p[0] == 'config':
                n, t, h, w, c, dg, n_ext, n_rec, center, tsa = map(int, p[1:11])
                pre, hr = map(int, p[12:14])
            elif p[0] == 'param':
                params.append((p[1], int(p[2]), tuple(int(v) for v in p[4:4 + int(p[3])])))
    model = EDVR(c=c, t=t, dg=dg, n_ext=n_ext, n_rec=n_rec, center=center, tsa=bool(tsa),
                 pre=bool(pre), hr_in=bool(hr))
    s = 1 if hr else 4
    flat = np.fromfile(os.path.join(folder, 'params.f32'), dtype=np.float32)
    model.load_state_dict({name: torch.from_numpy(flat[off:off + int(np.prod(shape))].copy())
                           .view(shape) for name, off, shape in params}, strict=True)
    for draw in range(MAX_DRAWS):
        lq, gt = draw_data(n, t, h, w, s, draw)
        x = torch.from_numpy(lq).view(n, t, h, w, 3).permute(0, 1, 4, 2, 3)
        y = torch.from_numpy(gt).view(n, s * h, s * w, 3).permute(0, 3, 1, 2)
        margin, where, e32 = measure(model, x, y)[4:]
        ok = margin >= KINK_MIN and e32 <= E32_MAX
        print('%s draw %d: closest kink %.2g (%s), PyTorch float32 gradients within %.2g of '
              'float64%s' % (folder, draw, margin, where, e32, ' <- the draw' if ok else ''))
        if ok:
            return


def main():
    if len(sys.argv) > 1 and sys.argv[1] == 'count':
        print('EDVR-M %d' % count())
        print('EDVR-L deblur %d' % count(c=128, n_rec=40, pre=True, hr_in=True))
        for t in (3, 5):
            for tsa in (1, 0):
                for n_rec in (1, 2):
                    print('tiny C 16 T %d dg 2 ext 1 rec %d tsa %d: %d' % (
                        t, n_rec, tsa, count(c=16, t=t, dg=2, n_ext=1, n_rec=n_rec, tsa=tsa)))
                    for hr in (0, 1):
                        print('  with_predeblur, hr_in %d: %d' % (hr, count(
                            c=16, t=t, dg=2, n_ext=1, n_rec=n_rec, tsa=tsa, pre=True,
                            hr_in=bool(hr))))
        return
    if len(sys.argv) > 2 and sys.argv[1] == 'draws':
        for folder in sys.argv[2:]:
            draws(folder)
        return
    torch.manual_seed(0)
    bad = []
    root = sys.argv[1]
    for case in sorted(os.listdir(root)):
        if os.path.isdir(os.path.join(root, case)):
            check_case(os.path.join(root, case), bad)
    for b in bad:
        print('edvr_ref: FAILED: ' + b)
    sys.exit(1 if bad else 0)


if __name__ == '__main__':
    main()
