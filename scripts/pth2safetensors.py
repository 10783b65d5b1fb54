#!/usr/bin/python3
"""pth2safetensors — convert a PyTorch checkpoint (.pth, torch.save) to safetensors for PixFlow.

The file written is what load_from, resume_from, `pixflow test --checkpoint` and eval read.

  python3 scripts/pth2safetensors.py EDSR_Lx2.pth EDSR_Lx2.safetensors

Where the weights are found (the first that applies; --key picks one entry by hand):
  BasicSR   {'params': state_dict, 'params_ema': state_dict}: 'params' under its names,
            'params_ema' (when present) as 'params_ema.<name>', PixFlow's EMA copy, which
            evaluation and `pixflow test` prefer and load_from leaves out;
  MMagic    {'state_dict': {'generator.<name>': ..., 'generator_ema.<name>': ...}}: the same,
            without the prefixes (other modules, e.g. the discriminator, are left out);
  else      a plain state_dict {name: tensor}.
A 'module.' prefix (DataParallel) is dropped, as BasicSR's load_network does. Every floating
tensor is stored as F32; BatchNorm's int64 NAME.num_batches_tracked as I64 (a BasicSR net_d_N.pth
of VGGStyleDiscriminator loads strictly with gan.load_from_d); other tensors are left out and
named.

Needs only torch and numpy (Debian 12 has no python3-safetensors): the format is written here
(huggingface/safetensors: u64 little-endian header length N, N bytes of JSON {name: {dtype,
shape, data_offsets}, "__metadata__": {str: str}} padded with spaces to a multiple of 8, then
the little-endian tensor bytes back to back). The file is loaded with weights_only=True (no
code from the file runs); a checkpoint that also pickles other Python objects (MMagic's
training state) needs --trust-pickle, which runs whatever the file asks for: only for files
you trust. Exit status 0, 1 on an error (said on stderr), 2 on bad usage.
"""
import argparse
import json
import os
import pickle
import struct
import sys

import numpy as np
import torch

EMA_PREFIX = "params_ema."


def load(path, trust):
    try:
        return torch.load(path, map_location="cpu", weights_only=not trust)
    except TypeError:               # torch < 1.13: no weights_only
        if not trust:
            sys.exit("%s: this torch (%s) cannot load without running the file's pickle code; "
                     "add --trust-pickle if you trust the file" % (path, torch.__version__))
        return torch.load(path, map_location="cpu")
    except pickle.UnpicklingError as e:
        why = str(e).split("WeightsUnpickler error: ")[-1].splitlines()[0][:200]
        sys.exit("%s: holds Python objects besides tensors (%s); if you trust the file, run "
                 "again with --trust-pickle" % (path, why))


def is_state_dict(d):
    return isinstance(d, dict) and d and all(torch.is_tensor(v) for v in d.values())


def strip(d, prefix):
    """Entries of d whose name starts with prefix, without it (and without 'module.')."""
    out = {}
    for k, v in d.items():
        if not k.startswith(prefix):
            continue
        k = k[len(prefix):]
        out[k[len("module."):] if k.startswith("module.") else k] = v
    return out


def find_weights(ck, key, path):
    """(plain state_dict, EMA state_dict or None, description of where they were)."""
    if key:
        if not isinstance(ck, dict) or key not in ck or not is_state_dict(ck[key]):
            sys.exit("%s: --key %s: no state_dict there (top-level keys: %s)"
                     % (path, key, sorted(ck) if isinstance(ck, dict) else type(ck).__name__))
        return strip(ck[key], ""), None, "'%s'" % key
    if isinstance(ck, dict) and ("params" in ck or "params_ema" in ck):
        plain = ck.get("params", ck.get("params_ema"))
        ema = ck.get("params_ema") if "params" in ck else None
        where = "'params'" if "params" in ck else "'params_ema' (no 'params')"
        return strip(plain, ""), strip(ema, "") if ema is not None else None, where
    if isinstance(ck, dict) and is_state_dict(ck.get("state_dict")):
        sd = ck["state_dict"]
        if any(k.startswith("generator.") for k in sd):
            ema = strip(sd, "generator_ema.")
            return strip(sd, "generator."), ema or None, "'state_dict' 'generator.*'"
        return strip(sd, ""), None, "'state_dict'"
    if is_state_dict(ck):
        return strip(ck, ""), None, "the file's state_dict"
    sys.exit("%s: no weights found: expected BasicSR's 'params' / 'params_ema', MMagic's "
             "'state_dict', or a state_dict; top-level keys: %s (pick one with --key)"
             % (path, sorted(ck) if isinstance(ck, dict) else type(ck).__name__))


def write_safetensors(path, tensors, meta):
    """tensors: list of (name, float32 or int64 numpy array) in file order; meta: {str: str}."""
    header, at = {"__metadata__": meta}, 0
    for name, a in tensors:
        header[name] = {"dtype": "I64" if a.dtype == np.int64 else "F32", "shape": list(a.shape),
                        "data_offsets": [at, at + a.nbytes]}
        at += a.nbytes
    hdr = json.dumps(header, separators=(",", ":")).encode()
    hdr += b" " * (-len(hdr) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for _, a in tensors:
            f.write(a.tobytes())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[2:]))
    ap.add_argument("pth", help="the PyTorch checkpoint")
    ap.add_argument("out", help="the safetensors file to write")
    ap.add_argument("--key", help="take the state_dict under this top-level key only, under "
                    "plain names (e.g. params_ema to train from the EMA weights)")
    ap.add_argument("--trust-pickle", action="store_true",
                    help="load a checkpoint that pickles other objects (runs its code)")
    a = ap.parse_args()
    ck = load(a.pth, a.trust_pickle)
    plain, ema, where = find_weights(ck, a.key, a.pth)
    out, skipped = [], []
    for prefix, sd in (("", plain), (EMA_PREFIX, ema or {})):
        for k, v in sd.items():
            if k.endswith("num_batches_tracked") and v.dtype == torch.int64:
                arr = v.detach().contiguous().numpy()
                # np.array keeps the 0-dim shape (ascontiguousarray would make it [1])
                out.append((prefix + k, np.array(arr, dtype="<i8", order="C")))
                continue
            if not v.is_floating_point():
                skipped.append(prefix + k)
                continue
            arr = v.detach().to(torch.float32).contiguous().numpy()
            out.append((prefix + k, np.ascontiguousarray(arr, dtype="<f4")))
    if not out:
        sys.exit("%s: %s holds no floating-point tensors" % (a.pth, where))
    meta = {"format": "pt", "source": os.path.basename(a.pth), "source_weights": where}
    write_safetensors(a.out, out, meta)
    n_plain = len(plain) - sum(1 for s in skipped if not s.startswith(EMA_PREFIX))
    print("%s: %d tensors from %s%s, %d parameters" % (
        a.out, n_plain, where,
        " + %d EMA tensors as %s*" % (len(out) - n_plain, EMA_PREFIX) if ema else "",
        sum(t.size for n, t in out if not n.startswith(EMA_PREFIX))))
    if skipped:
        print("left out (not floating point): %s" % ", ".join(skipped))


if __name__ == "__main__":
    main()
