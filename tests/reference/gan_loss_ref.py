#!/usr/bin/python3
"""Reference for nn/gan_loss.h (BasicSR's GANLoss), run by tests/test_gan_loss.c `torch`
(ctest test_gan_loss.torch) on the folder it writes.

The loss is written here from BasicSR's definitions with torch's own modules (not BasicSR's
code), on the C test's float32 inputs widened to float64, and its gradient is torch's autograd:
  t = real_label_val if real else fake_label_val
  vanilla        nn.BCEWithLogitsLoss()(x, full_like(x, t))
  lsgan          nn.MSELoss()(x, full_like(x, t))
  wgan           -x.mean() if real else x.mean()
  wgan_softplus  F.softplus(-x).mean() if real else F.softplus(x).mean()
  hinge          disc: F.relu(1 - x).mean() if real else F.relu(1 + x).mean(); gen: -x.mean()
  times loss_weight when not disc.
The folder holds params.txt, one line per case:
  I gan_type=.. real=0|1 disc=0|1 real_label_val=.. fake_label_val=.. loss_weight=.. n=N loss=L
and xI.f32 (the N inputs), gradI.f32 (the C gradient, float32). Checks: the loss within 1e-6
relative; every gradient element within 1e-6 relative or, below float32's smallest normal
(1.2e-38, where a float has fewer digits), within that in absolute; every gan_type x real x disc
occurs; the inputs hold both hinge kinks (x = 1 and x = -1). Exit status 1 on any failure.
Run: /usr/bin/python3 tests/reference/gan_loss_ref.py DIR
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from params_line import parse

TOL = 1e-6
FLOAT_MIN = float(np.finfo(np.float32).tiny)
WORST = {"loss": 0.0, "grad": 0.0}  # the largest relative differences seen, for the summary


def gan_loss(gan_type, x, real, disc, real_val, fake_val, weight):
    """BasicSR's GANLoss.forward(x, target_is_real=real, is_disc=disc), in torch."""
    t = real_val if real else fake_val
    if gan_type == "vanilla":
        loss = nn.BCEWithLogitsLoss()(x, torch.full_like(x, t))
    elif gan_type == "lsgan":
        loss = nn.MSELoss()(x, torch.full_like(x, t))
    elif gan_type == "wgan":
        loss = -x.mean() if real else x.mean()
    elif gan_type == "wgan_softplus":
        loss = F.softplus(-x).mean() if real else F.softplus(x).mean()
    elif gan_type == "hinge":
        if disc:
            loss = F.relu(1 - x).mean() if real else F.relu(1 + x).mean()
        else:
            loss = -x.mean()
    else:
        raise ValueError("unknown gan_type %r" % gan_type)
    return loss if disc else loss * weight


def check(folder, rec):
    """Error strings of one case ([] when it matches)."""
    i, n = rec["index"], int(rec["n"])
    x32 = np.fromfile(os.path.join(folder, "x%03d.f32" % i), dtype=np.float32)
    grad = np.fromfile(os.path.join(folder, "grad%03d.f32" % i), dtype=np.float32)
    if x32.size != n or grad.size != n:
        return ["%d values and %d gradients, not %d" % (x32.size, grad.size, n)]
    x = torch.from_numpy(x32.astype(np.float64)).requires_grad_(True)
    loss = gan_loss(rec["gan_type"], x, rec["real"] == "1", rec["disc"] == "1",
                    float(rec["real_label_val"]), float(rec["fake_label_val"]),
                    float(rec["loss_weight"]))
    loss.backward()
    errors = []
    want, got = float(loss), float(rec["loss"])
    WORST["loss"] = max(WORST["loss"], abs(got - want) / abs(want) if want else abs(got))
    if not abs(got - want) <= TOL * abs(want):
        errors.append("loss %.17g, torch %.17g" % (got, want))
    ref = x.grad.numpy()
    diff = np.abs(grad.astype(np.float64) - ref)
    bad = ~(diff <= np.maximum(TOL * np.abs(ref), FLOAT_MIN))
    normal = np.abs(ref) >= FLOAT_MIN
    if normal.any():
        WORST["grad"] = max(WORST["grad"], float((diff[normal] / np.abs(ref[normal])).max()))
    if bad.any():
        j = int(np.argmax(bad))
        errors.append("%d gradients differ, first [%d] = %.9g, torch %.9g"
                      % (int(bad.sum()), j, grad[j], ref[j]))
    return errors


def main(folder):
    failed = 0
    seen, kinks = set(), set()
    with open(os.path.join(folder, "params.txt")) as f:
        lines = [ln for ln in f if ln.strip()]
    for line in lines:
        rec = parse(line)
        seen.add((rec["gan_type"], rec["real"], rec["disc"]))
        x32 = np.fromfile(os.path.join(folder, "x%03d.f32" % rec["index"]), dtype=np.float32)
        kinks.update(v for v in (1.0, -1.0) if (x32 == v).any())
        for e in check(folder, rec):
            failed += 1
            print("gan_loss_ref: case %s: %s" % (line.strip(), e))
    want = {(g, r, d) for g in ("vanilla", "lsgan", "wgan", "wgan_softplus", "hinge")
            for r in "01" for d in "01"}
    if seen != want:
        failed += 1
        print("gan_loss_ref: missing configurations %s" % sorted(want - seen))
    if kinks != {1.0, -1.0}:
        failed += 1
        print("gan_loss_ref: the inputs miss a hinge kink (have %s)" % sorted(kinks))
    print("gan_loss_ref: %d cases against torch %s, %d failures; worst relative difference:"
          " loss %.2g, gradient %.2g" % (len(lines), torch.__version__, failed, WORST["loss"],
                                        WORST["grad"]))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
