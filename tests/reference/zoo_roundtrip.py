#!/usr/bin/python3
"""zoo_roundtrip — PixFlow weights into the reference PyTorch module and back.

Reads a PixFlow weights file (a checkpoint's iter_N.safetensors, or any safetensors of F32
tensors under the reference state_dict names; `params_ema.*` tensors are left out unless
--ema) and the PixFlow config that describes the network (its `model:` section: type, scale,
hyper-parameters, BasicSR's num_feat / num_block accepted), builds the network of
tests/reference/zoo_archs.py, loads the weights with load_state_dict(strict=True), writes the
module's state_dict back as safetensors, and checks that the file written holds the same names,
shapes and bits as the one read. With --ref (a tests/data/zoo/<case>.safetensors file) it also
runs the module on that file's lq and compares with its ref.out.

torch 1.13 has no safetensors package: the format is read and written here (u64 LE header
length, JSON header, little-endian data).

  PF_ZOO_EXPORT=/tmp/zoo build/tests/test_zoo_parity edsr_x2      # writes edsr_x2.{safetensors,yaml}
  /usr/bin/python3 tests/reference/zoo_roundtrip.py /tmp/zoo/edsr_x2.safetensors \\
      /tmp/zoo/edsr_x2.yaml -o /tmp/zoo/edsr_x2.torch.safetensors \\
      --ref tests/data/zoo/edsr_x2.safetensors
Exit status 0 when everything matches, 1 otherwise (load_state_dict errors name the tensors).
"""
import argparse
import os
import sys

import numpy as np
import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
import zoo_archs  # noqa: E402

# config key -> zoo_archs.build name (BasicSR spellings accepted)
ALIASES = {"num_feat": "n_feats", "num_block": "n_blocks"}
NOT_HP = {"type", "scale", "in_channels", "out_channels", "loss"}


def model_from_config(path):
    with open(path) as f:
        model = yaml.safe_load(f)["model"]
    hp = {ALIASES.get(k, k): v for k, v in model.items() if k not in NOT_HP}
    for k in ("rgb_mean", "channels", "kernel_sizes"):
        if k in hp:
            hp[k] = tuple(hp[k])
    return model["type"], int(model["scale"]), hp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("weights", help="PixFlow weights .safetensors")
    ap.add_argument("config", help="PixFlow config YAML (its model: section is used)")
    ap.add_argument("-o", "--output", required=True, help="state_dict written back here")
    ap.add_argument("--ema", action="store_true", help="load params_ema.* instead")
    ap.add_argument("--ref", help="tests/data/zoo case file: compare the forward on its lq")
    a = ap.parse_args()

    model_type, scale, hp = model_from_config(a.config)
    net = zoo_archs.build(model_type, scale, **hp)
    tensors, meta = st_io.read(a.weights)
    prefix = "params_ema."
    if a.ema:
        sd = {k[len(prefix):]: v for k, v in tensors.items() if k.startswith(prefix)}
    else:
        sd = {k: v for k, v in tensors.items() if not k.startswith(prefix)}
    net.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in sd.items()}, strict=True)
    out_sd = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    st_io.write(a.output, out_sd.items(),
                {"format": "pt", "model": model_type, "scale": str(scale)})

    back, _ = st_io.read(a.output)
    ok = set(back) == set(sd)
    for k, v in sd.items():
        same = k in back and back[k].shape == v.shape and back[k].tobytes() == v.tobytes()
        ok = ok and same
        if not same:
            print("differs after the round trip: %s" % k)
    print("%s %s x%d: %d tensors, %d parameters loaded with strict=True and written back to "
          "%s: %s" % (a.weights, model_type, scale, len(sd), sum(v.size for v in sd.values()),
                      a.output, "bit-identical" if ok else "NOT identical"))
    if a.ref:
        ref, _ = st_io.read(a.ref)
        x = torch.from_numpy(ref["lq"].copy()).permute(0, 3, 1, 2) / 255.0
        with torch.no_grad():
            y = net(x).permute(0, 2, 3, 1).numpy()
        err = np.abs(y - ref["ref.out"]).max() / max(np.abs(ref["ref.out"]).max(), 1e-6)
        print("forward on %s's lq: relative error %.3g vs ref.out" % (a.ref, err))
        ok = ok and err <= 1e-5
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
