#!/usr/bin/python3
"""Reference for nn/perceptual_loss.h (BasicSR's PerceptualLoss on given feature maps), run by
tests/test_perceptual_loss.c `torch` (ctest test_perceptual_loss.torch) on the folder it writes.

The loss is written here from BasicSR's definitions with torch's own modules (not BasicSR's
code), on the C test's float32 features widened to float64; the gradient with respect to the SR
output's features is torch's autograd (the ground truth's features are detached):
  crit      l1: nn.L1Loss()(a, g)   l2: nn.MSELoss()(a, g)   fro: torch.norm(a - g, p='fro')
  gram(f)   F = f.view(n, c, h w); F.bmm(F.transpose(1, 2)) / (c h w)
  percep    perceptual_weight * sum_k w_k crit(fx_k, fgt_k)          (None when the weight is 0)
  style     style_weight * sum_k w_k crit(gram(fx_k), gram(fgt_k))   (None when the weight is 0)
The folder holds params.txt, one line per case:
  I criterion=.. perceptual_weight=.. style_weight=.. n_layers=L w0=.. shape0=NxCxHxW ...
    percep=P style=S        (nan for a term not computed)
and fxI_k.f32, fgtI_k.f32 (the features), dfxI_k.f32 (the C gradient of percep + style).
Checks: a term is nan exactly when its weight is 0; each term within 1e-6 relative; every
gradient element within 1e-5 relative to itself or to 1e-5 of the layer's largest gradient
(so an element near zero by cancellation is judged on the layer's scale); every criterion
occurs with percep only, style only and both. Exit status 1 on any failure.
Run: /usr/bin/python3 tests/reference/perceptual_ref.py DIR
"""
import math
import os
import sys

import numpy as np
import torch
from torch import nn

from params_line import parse

TOL_TERM = 1e-6
TOL_GRAD = 1e-5
WORST = {"term": 0.0, "grad": 0.0}  # the largest relative differences seen, for the summary


def crit(criterion, a, g):
    """BasicSR's criterion of PerceptualLoss, in torch."""
    if criterion == "l1":
        return nn.L1Loss()(a, g)
    if criterion == "l2":
        return nn.MSELoss()(a, g)
    if criterion == "fro":
        return torch.norm(a - g, p="fro")
    raise ValueError("unknown criterion %r" % criterion)


def gram(f):
    """BasicSR's _gram_mat: n x c x c."""
    n, c, h, w = f.shape
    feat = f.reshape(n, c, h * w)
    return feat.bmm(feat.transpose(1, 2)) / (c * h * w)


def load(folder, kind, i, k, shape):
    a = np.fromfile(os.path.join(folder, "%s%03d_%d.f32" % (kind, i, k)), dtype=np.float32)
    if a.size != int(np.prod(shape)):
        raise ValueError("%s%03d_%d.f32: %d values for shape %s" % (kind, i, k, a.size, shape))
    return a.reshape(shape)


def perceptual(rec, fx, fgt):
    """(percep or None, style or None) for the case's options, in torch."""
    pw, sw = float(rec["perceptual_weight"]), float(rec["style_weight"])
    weights = [float(rec["w%d" % k]) for k in range(len(fx))]
    percep = style = None
    if pw > 0:
        percep = sum(crit(rec["criterion"], a, g) * w for a, g, w in zip(fx, fgt, weights)) * pw
    if sw > 0:
        style = sum(crit(rec["criterion"], gram(a), gram(g)) * w
                    for a, g, w in zip(fx, fgt, weights)) * sw
    return percep, style


def check_term(name, got, want):
    """Error strings for one term (want None: got must be nan)."""
    if want is None:
        return [] if math.isnan(got) else ["%s %.17g, torch None" % (name, got)]
    want = float(want)
    rel = abs(got - want) / abs(want) if want else abs(got)
    WORST["term"] = max(WORST["term"], rel)
    if not abs(got - want) <= TOL_TERM * abs(want):
        return ["%s %.17g, torch %.17g" % (name, got, want)]
    return []


def check(folder, rec):
    """Error strings of one case ([] when it matches)."""
    i, n_layers = rec["index"], int(rec["n_layers"])
    shapes = [tuple(int(v) for v in rec["shape%d" % k].split("x")) for k in range(n_layers)]
    fx = [torch.from_numpy(load(folder, "fx", i, k, s).astype(np.float64)).requires_grad_(True)
          for k, s in enumerate(shapes)]
    fgt = [torch.from_numpy(load(folder, "fgt", i, k, s).astype(np.float64))
           for k, s in enumerate(shapes)]
    percep, style = perceptual(rec, fx, [g.detach() for g in fgt])
    errors = check_term("percep", float(rec["percep"]), percep)
    errors += check_term("style", float(rec["style"]), style)
    terms = [t for t in (percep, style) if t is not None]
    if terms:
        sum(terms).backward()
    for k, s in enumerate(shapes):
        got = load(folder, "dfx", i, k, s).astype(np.float64)
        ref = fx[k].grad.numpy() if fx[k].grad is not None else np.zeros(s)
        diff = np.abs(got - ref)
        scale = np.abs(ref).max()
        bad = ~(diff <= TOL_GRAD * np.maximum(np.abs(ref), scale * TOL_GRAD))
        if scale > 0:
            WORST["grad"] = max(WORST["grad"], float((diff / np.maximum(np.abs(ref),
                                                                        scale * TOL_GRAD)).max()))
        if bad.any():
            j = int(np.argmax(bad.ravel()))
            errors.append("layer %d: %d gradients differ, first [%d] = %.9g, torch %.9g"
                          % (k, int(bad.sum()), j, got.ravel()[j], ref.ravel()[j]))
    return errors


def main(folder):
    failed = 0
    seen = set()
    with open(os.path.join(folder, "params.txt")) as f:
        lines = [ln for ln in f if ln.strip()]
    for line in lines:
        rec = parse(line)
        seen.add((rec["criterion"], float(rec["perceptual_weight"]) > 0,
                  float(rec["style_weight"]) > 0))
        for e in check(folder, rec):
            failed += 1
            print("perceptual_ref: case %d (%s pw %s sw %s): %s"
                  % (rec["index"], rec["criterion"], rec["perceptual_weight"],
                     rec["style_weight"], e))
    terms = ((True, False), (False, True), (True, True))   # percep only, style only, both
    missing = {(c,) + t for c in ("l1", "l2", "fro") for t in terms} - seen
    failed += len(missing)
    for m in sorted(missing):
        print("perceptual_ref: no case of criterion %s with percep %s and style %s" % m)
    summary = dict(n=len(lines), torch=torch.__version__, failed=failed, **WORST)
    print("perceptual_ref: {n} cases against torch {torch}, {failed} failures; worst relative"
          " difference: term {term:.2g}, gradient {grad:.2g}".format(**summary))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
