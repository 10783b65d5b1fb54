#!/usr/bin/python3
"""state_dict_check — PixFlow's checkpoint key lists against the reference modules' state_dict.

For each CASE, reads DIR/CASE.safetensors (a checkpoint weights file written by
tests/test_state_dict.c through pf_ckpt_serialize, with its EMA copy) and DIR/CASE.yaml (the
resolved config; its model: section names the network), builds the network of
tests/reference/zoo_archs.py (the reference implementations' module trees: BasicSR's classes,
MMagic's SRCNNNet, yjn870's FSRCNN/ESPCN; BasicVSR with SpyNet's `mean`/`std` buffers) and
checks:
  - the file's tensor names, in file order, are exactly list(module.state_dict().keys()),
    parameters and buffers in state_dict order, with the same shapes; the EMA copy
    (params_ema.*) likewise;
  - load_state_dict(strict=True) takes the plain weights and the EMA copy, and the module then
    holds the file's bits;
then writes DIR/CASE.torch.safetensors: the state_dict of a freshly initialised module
(torch.manual_seed(1), PyTorch's own initialisation, buffers included) in state_dict order, for
the C side to load (a state_dict saved from BasicSR's BasicVSR looks like this).

usage: /usr/bin/python3 tests/reference/state_dict_check.py DIR CASE...
Exit 0 when every case matches, 1 otherwise (each difference printed), 77 without torch.
"""
import os
import sys

try:
    import numpy as np
    import torch
    import yaml
except ImportError as e:  # the ctest entry reports this as skipped, not passed
    print("state_dict_check: %s: needs Debian's python3-torch, python3-numpy, python3-yaml" % e)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
import zoo_archs  # noqa: E402

EMA = "params_ema."
ALIASES = {"num_feat": "n_feats", "num_block": "n_blocks"}


def network(config_path):
    """The zoo_archs module of a PixFlow config, its hyper-parameters from the model: section
    (only the keys zoo_archs takes for that type: the rest do not shape a tensor)."""
    with open(config_path) as f:
        model = yaml.safe_load(f)["model"]
    kind = model["type"]
    want = zoo_archs.DEFAULTS[kind]
    hp = {}
    for k, v in model.items():
        k = ALIASES.get(k, k)
        if k in want:
            hp[k] = tuple(v) if isinstance(v, list) else v
    return zoo_archs.build(kind, int(model["scale"]), **hp)


def compare(case, what, names, tensors, ref_sd):
    """Names (file order) against ref_sd's keys (state_dict order) and shapes; prints each
    difference; returns the number of differences."""
    ref = list(ref_sd.keys())
    bad = 0
    if names != ref:
        bad += 1
        for i in range(max(len(names), len(ref))):
            a = names[i] if i < len(names) else "(none)"
            b = ref[i] if i < len(ref) else "(none)"
            if a != b:
                print("%s: %s: key %d is %r, the reference's state_dict has %r" %
                      (case, what, i, a, b))
                break
        missing = [k for k in ref if k not in names]
        extra = [k for k in names if k not in ref]
        print("%s: %s: %d keys vs the reference's %d; not in the file: %s; not in the "
              "reference: %s" % (case, what, len(names), len(ref), missing[:4], extra[:4]))
    for k in names:
        if k in ref_sd and tuple(ref_sd[k].shape) != tuple(tensors[k].shape):
            bad += 1
            print("%s: %s: %s has shape %s, the reference %s" %
                  (case, what, k, tuple(tensors[k].shape), tuple(ref_sd[k].shape)))
    return bad


def check(directory, case):
    tensors, _ = st_io.read(os.path.join(directory, case + ".safetensors"))
    net = network(os.path.join(directory, case + ".yaml"))
    ref_sd = net.state_dict()
    plain = [k for k in tensors if not k.startswith(EMA)]
    ema = [k[len(EMA):] for k in tensors if k.startswith(EMA)]
    bad = compare(case, "weights", plain, tensors, ref_sd)
    if ema:
        bad += compare(case, "EMA copy", ema, {k[len(EMA):]: v for k, v in tensors.items()
                                               if k.startswith(EMA)}, ref_sd)
    else:
        bad += 1
        print("%s: the checkpoint has no EMA copy (the test writes one)" % case)
    n_buffers = len(list(net.buffers()))
    if bad:
        return bad
    for what, prefix in (("weights", ""), ("EMA copy", EMA)):
        sd = {k: torch.from_numpy(tensors[prefix + k].copy()) for k in ref_sd}
        net.load_state_dict(sd, strict=True)
        for k, v in net.state_dict().items():
            if v.numpy().tobytes() != tensors[prefix + k].tobytes():
                bad += 1
                print("%s: %s: %s differs after load_state_dict" % (case, what, k))
    torch.manual_seed(1)
    fresh = network(os.path.join(directory, case + ".yaml"))
    out = os.path.join(directory, case + ".torch.safetensors")
    st_io.write(out, fresh.state_dict().items(), {"format": "pt"})
    print("%s: %d keys (%d buffers) in state_dict order, shapes equal, load_state_dict("
          "strict=True) of weights and EMA copy bit-identical; torch's state_dict written to %s"
          % (case, len(ref_sd), n_buffers, out))
    return bad


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    bad = sum(check(sys.argv[1], case) for case in sys.argv[2:])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
