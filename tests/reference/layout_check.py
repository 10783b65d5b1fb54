"""layout_check — the comparison the video-network references (basicvsrpp_ref.py, edvr_ref.py)
make of the C test's runs in each layout against PyTorch: the files LK.out.f32, LK.loss.f32 and
LK.grads.f32 (k = 0, 1, ... while they exist) in a folder, against the float64 run's output,
loss and gradients, with the float32 run's gradients giving the tolerance. No side effects on
import."""
import copy
import os

import numpy as np
import torch


def run_charbonnier(model, dtype, x_u8, y_u8):
    """A copy of model in dtype on x_u8 / 255 (uint8 tensor, the model's input layout), the
    Charbonnier loss (eps 1e-12, mean) against y_u8 / 255 and its backward: (output, loss,
    {name: float64 gradient})."""
    m = copy.deepcopy(model).to(dtype)
    out = m(x_u8.to(dtype) / 255.0)
    loss = torch.mean(torch.sqrt((out - y_u8.to(dtype) / 255.0) ** 2 + 1e-12))
    loss.backward()
    return out.detach(), loss.item(), {k: p.grad.double() for k, p in m.named_parameters()}


def rel_err(got, ref):
    """max |got - ref| / max |ref| (the measure every bound below uses)."""
    return (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)


def check_layouts(folder, params, o64, l64, g64, g32, tag, bad, slack=16):
    """params: [(name, offset, shape)] in PixFlow's order; o64, l64, g64: float64's output,
    loss and {name: gradient}; g32: float32's gradients. Per layout: the output within 1e-5 of
    float64's largest |value|, the loss within 1e-5 relative, every gradient within max(1e-4,
    slack e32) of its float64 gradient's largest |value|, e32 float32's own error by the same
    measure (slack 0: 1e-4 for every gradient). Appends each failure to bad; returns how many layouts were read."""
    omax = o64.abs().max().item()
    e32 = {k: rel_err(g32[k], g64[k]) for k in g64}
    k = 0
    while os.path.exists(os.path.join(folder, 'L%d.out.f32' % k)):
        def load(what):
            return np.fromfile(os.path.join(folder, 'L%d.%s.f32' % (k, what)), dtype=np.float32)
        out = torch.from_numpy(load('out').astype(np.float64)).view(o64.shape)
        loss, grads = float(load('loss')[0]), load('grads')
        eo = (out - o64).abs().max().item() / omax
        el = abs(loss - l64) / l64
        if not eo <= 1e-5:
            bad.append('%s L%d: output %.3g from float64\'s' % (tag, k, eo))
        if not el <= 1e-5:
            bad.append('%s L%d: loss %.8f, float64 %.8f' % (tag, k, loss, l64))
        tight, worst, wname = 0, 0.0, ''
        for name, off, shape in params:
            numel = int(np.prod(shape))
            got = torch.from_numpy(grads[off:off + numel].astype(np.float64)).view(shape)
            e = rel_err(got, g64[name])
            tol = max(1e-4, slack * e32[name])
            tight += e <= 1e-4
            if e / tol > worst:
                worst, wname = e / tol, '%s %.3g (float32 %.3g)' % (name, e, e32[name])
            if not e <= tol:
                bad.append('%s L%d: gradient of %s %.3g from float64\'s (PyTorch float32 %.3g)'
                           % (tag, k, name, e, e32[name]))
        print('%s L%d: output within %.2g, loss %.8f (float64 %.8f); %d of %d gradients '
              'within 1e-4 of float64%s (closest to its bound: %s)'
              % (tag, k, eo, loss, l64, tight, len(params),
                 ', the rest within %dx PyTorch float32\'s error' % slack if slack else '', wname))
        k += 1
    return k
