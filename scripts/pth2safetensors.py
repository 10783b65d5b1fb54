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
A 'module.' prefix (DataParallel) is dropped, as BasicSR's load_network does; a name met twice
(with and without it) is an error.

Parameter names (--names auto, the default): PixFlow's are BasicSR's. A BasicVSR++ or BasicVSR
under MMagic's names (mmagic/models/editors/basicvsr_plusplus_net/basicvsr_plusplus_net.py,
basicvsr/basicvsr_net.py: BasicVSRPlusPlusNet, BasicVSRNet), or a SPyNet alone (as
model.spynet_pretrained reads it), is renamed to BasicSR's (basicsr/archs/basicvsrpp_arch.py,
basicvsr_arch.py, spynet_arch.py):
  SPyNet    basic_module.L.basic_module.K.conv.*   -> basic_module.L.basic_module.(2K).*
            (MMagic's ConvModules; BasicSR's Sequential has a ReLU between the convolutions)
  upsample1.upsample_conv.*, upsample2.upsample_conv.*  -> upconv1.*, upconv2.*
            (MMagic's PixelShufflePack)
  BasicVSR  backward_resblocks.*, forward_resblocks.*   -> backward_trunk.*, forward_trunk.*
and every other name (deform_align.*, backbone.*, feat_extract.*, reconstruction.*, fusion,
conv_hr, conv_last, spynet.mean / spynet.std) is the same in both. The renaming is strict: the
file must hold exactly the network's tensors for the mid_channels and num_blocks it implies
(read from feat_extract.main.0 / backward_resblocks.main.0 and the highest residual block), each
of the shape the network gives it; a missing, unknown or mis-shaped name is an error naming it.
MMagic's training state beside the generator ('step_counter', the discriminator, ...) is not
part of 'generator.*' and is left out as above. The name set found is printed and recorded as
__metadata__ 'source_names'. --names keep writes the names as they are. Every floating
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
import re
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
        name = k[len(prefix):]
        name = name[len("module."):] if name.startswith("module.") else name
        if name in out:
            sys.exit("'%s%s': the tensor '%s' is in the file twice (with and without "
                     "'module.')" % (prefix, name, name))
        out[name] = v
    return out


# ---- MMagic's BasicVSR / BasicVSR++ names to BasicSR's (PixFlow's) -------------------------
# Each network's tensors as (BasicSR's name, MMagic's name, shape), in BasicSR's state_dict
# order, for mid_channels c and num_blocks nb; the shapes are those of both implementations.

def _conv(b, m, cout, cin, k):
    return [(b + ".weight", m + ".weight", (cout, cin, k, k)), (b + ".bias", m + ".bias", (cout,))]


def _spynet(prefix):
    """SPyNet: 6 levels of 5 7 x 7 convolutions 8 -> 32 -> 64 -> 32 -> 16 -> 2; its buffers
    (ImageNet mean / std) come first in BasicSR's state_dict."""
    out = [(prefix + n, prefix + n, (1, 3, 1, 1)) for n in ("mean", "std")]
    ch = [8, 32, 64, 32, 16, 2]
    for lv in range(6):
        for k in range(5):
            out += _conv("%sbasic_module.%d.basic_module.%d" % (prefix, lv, 2 * k),
                         "%sbasic_module.%d.basic_module.%d.conv" % (prefix, lv, k),
                         ch[k + 1], ch[k], 7)
    return out


def _resblocks(b, m, cin, c, nb):
    """ConvResidualBlocks (BasicSR) / ResidualBlocksWithInputConv (MMagic): main.0 then nb
    ResidualBlockNoBN (conv1, conv2) as main.2.I; the same suffixes in both."""
    out = _conv(b + ".main.0", m + ".main.0", c, cin, 3)
    for i in range(nb):
        for j in (1, 2):
            out += _conv("%s.main.2.%d.conv%d" % (b, i, j), "%s.main.2.%d.conv%d" % (m, i, j),
                         c, c, 3)
    return out


def _head(c):
    """The x4 upsampler: upconv1 (MMagic's upsample1.upsample_conv) c -> 4c, upconv2 c -> 256,
    conv_hr 64 -> 64, conv_last 64 -> 3."""
    return (_conv("upconv1", "upsample1.upsample_conv", 4 * c, c, 3) +
            _conv("upconv2", "upsample2.upsample_conv", 256, c, 3) +
            _conv("conv_hr", "conv_hr", 64, 64, 3) + _conv("conv_last", "conv_last", 3, 64, 3))


def _basicvsrpp(c, nb):
    out = _spynet("spynet.") + _resblocks("feat_extract", "feat_extract", 3, c, 5)
    branches = ("backward_1", "forward_1", "backward_2", "forward_2")
    for br in branches:
        d = "deform_align." + br
        out += [(d + ".weight", d + ".weight", (c, 2 * c, 3, 3)), (d + ".bias", d + ".bias", (c,))]
        for i, (cout, cin) in enumerate(((c, 3 * c + 4), (c, c), (c, c), (27 * 16, c))):
            out += _conv("%s.conv_offset.%d" % (d, 2 * i), "%s.conv_offset.%d" % (d, 2 * i),
                         cout, cin, 3)
    for i, br in enumerate(branches):
        out += _resblocks("backbone." + br, "backbone." + br, (2 + i) * c, c, nb)
    return out + _resblocks("reconstruction", "reconstruction", 5 * c, c, 5) + _head(c)


def _basicvsr(c, nb):
    return (_spynet("spynet.") +
            _resblocks("backward_trunk", "backward_resblocks", c + 3, c, nb) +
            _resblocks("forward_trunk", "forward_resblocks", c + 3, c, nb) +
            _conv("fusion", "fusion", c, 2 * c, 1) + _head(c))


def _blocks(names, pattern):
    """1 + the highest I of the names matching pattern (a regex with one group for I), 0 if
    none."""
    found = [int(m.group(1)) for m in map(re.compile(pattern).fullmatch, names) if m]
    return 1 + max(found) if found else 0


def detect_names(sd):
    """(MMagic's architecture found, its tensor table) or (None, description) for sd's names."""
    names = set(sd)
    spy = re.compile(r"(spynet\.)?basic_module\.\d+\.basic_module\.\d+\.conv\.(weight|bias)")
    mm_spy = any(spy.fullmatch(n) for n in names)
    mm_up = "upsample1.upsample_conv.weight" in names
    if "deform_align.backward_1.weight" in names and (mm_up or mm_spy):
        if "feat_extract.main.0.weight" not in names:
            sys.exit("MMagic's BasicVSRPlusPlusNet names, but no 'feat_extract.main.0.weight' "
                     "(is_low_res_input False, whose feat_extract is strided convolutions, is "
                     "not PixFlow's)")
        c = sd["feat_extract.main.0.weight"].shape[0]
        nb = _blocks(names, r"backbone\.\w+\.main\.2\.(\d+)\.conv[12]\.(weight|bias)")
        return ("MMagic's BasicVSRPlusPlusNet (mid_channels %d, num_blocks %d)" % (c, nb),
                _basicvsrpp(c, nb))
    if "backward_resblocks.main.0.weight" in names:
        c = sd["backward_resblocks.main.0.weight"].shape[0]
        nb = _blocks(names, r"(?:backward|forward)_resblocks\.main\.2\.(\d+)\.conv[12]\."
                            r"(?:weight|bias)")
        return ("MMagic's BasicVSRNet (mid_channels %d, num_blocks %d)" % (c, nb),
                _basicvsr(c, nb))
    if mm_spy and all(spy.fullmatch(n) or n.split(".")[-1] in ("mean", "std") for n in names):
        prefix = "spynet." if any(n.startswith("spynet.") for n in names) else ""
        table = _spynet(prefix)
        # MMagic's SPyNet loads its pretrained file before it registers mean / std: a SPyNet
        # file of its own has none
        if prefix + "mean" not in names and prefix + "std" not in names:
            table = table[2:]
        return "MMagic's SPyNet", table
    if mm_up or mm_spy:
        sys.exit("MMagic's names (%s) of a network this converter does not rename (it renames "
                 "BasicVSRPlusPlusNet, BasicVSRNet and SPyNet); --names keep writes them as "
                 "they are" % ("upsample1.upsample_conv" if mm_up else "SPyNet's '.conv.'"))
    if "upconv1.weight" in names and ("deform_align.backward_1.weight" in names or
                                      "backward_trunk.main.0.weight" in names):
        return None, "BasicSR's names (PixFlow's), kept"
    return None, "names kept as in the file"


def rename(sd, table, what, path):
    """sd under BasicSR's names by table, strictly: every tensor of the table once, of its
    shape, nothing else; else exits naming the tensors."""
    want = {m: (b, shape) for b, m, shape in table}
    unknown = sorted(n for n in sd if n not in want)
    missing = [m for _, m, _ in table if m not in sd]
    shaped = ["%s %s (wants %s)" % (m, tuple(sd[m].shape), shape) for _, m, shape in table
              if m in sd and tuple(sd[m].shape) != shape]
    bad = []
    for kind, names in (("missing", missing), ("unknown", unknown), ("mis-shaped", shaped)):
        if names:
            bad.append("%d %s: %s%s" % (len(names), kind, ", ".join(names[:6]),
                                       ", ..." if len(names) > 6 else ""))
    if bad:
        sys.exit("%s: %s: the tensors do not make that network: %s" % (path, what,
                                                                        "; ".join(bad)))
    return {b: sd[m] for b, m, _ in table}


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
    ap.add_argument("--names", choices=("auto", "keep"), default="auto",
                    help="auto: rename MMagic's BasicVSR / BasicVSR++ / SPyNet names to "
                    "BasicSR's (PixFlow's), below; keep: write the names as they are")
    ap.add_argument("--trust-pickle", action="store_true",
                    help="load a checkpoint that pickles other objects (runs its code)")
    a = ap.parse_args()
    ck = load(a.pth, a.trust_pickle)
    plain, ema, where = find_weights(ck, a.key, a.pth)
    names = "names kept as in the file (--names keep)"
    if a.names == "auto":
        arch, table = detect_names(plain)
        names = table if arch is None else arch + ", renamed to BasicSR's (PixFlow's)"
        if arch is not None:
            plain = rename(plain, table, arch, a.pth + " " + where)
            if ema:
                ema = rename(ema, table, arch + " (EMA)", a.pth + " " + where)
    print("%s: %s" % (a.pth, names))
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
    meta = {"format": "pt", "source": os.path.basename(a.pth), "source_weights": where,
            "source_names": names}
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
