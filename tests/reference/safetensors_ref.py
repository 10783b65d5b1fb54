#!/usr/bin/python3
"""Generate tests/data/safetensors/: small safetensors files written by hand from the format
description (huggingface/safetensors README: u64 little-endian header size N, N bytes of JSON
{name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, padded
with spaces; then the little-endian data; offsets relative to the data), without the
safetensors package (not installed here), plus broken variants and what the parser must say.

Tensor values are exactly representable: element i of the k-th tensor of TENSORS is
((7 * i + k) % 13 - 6) / 4, so the C test recomputes them without reading anything else.

Files:
  valid_hf.safetensors    as the Python library lays a file out: metadata first, JSON keys in
                          another order than the data, a 0-d and an empty tensor
  valid_unaligned.safetensors  header length not a multiple of 4 (data starts unaligned)
  pixflow_layout.safetensors   the exact bytes pf_safetensors_serialize must produce for the same
                          tensors and metadata (order as given, compact JSON, space padding)
  bad_*.safetensors       one defect each; bad_cases.txt: file, then a phrase the error must hold
Run: /usr/bin/python3 tests/reference/safetensors_ref.py
"""
import json
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "safetensors")
TENSORS = [("conv.weight", [2, 1, 3, 3]), ("conv.bias", [2]), ("scale", []),
           ("empty", [0, 3]), ("body.0.w", [3, 4])]
META = {"format": "pt", "iter": "1200"}


def values(k, shape):
    n = int(np.prod(shape)) if shape else 1
    i = np.arange(n)
    return (((7 * i + k) % 13 - 6) / 4).astype("<f4")


def assemble(header_obj, data, pad_to=8, raw_header=None):
    hdr = raw_header if raw_header is not None else json.dumps(
        header_obj, separators=(",", ":")).encode()
    if pad_to:
        hdr += b" " * (-len(hdr) % pad_to)
    return struct.pack("<Q", len(hdr)) + hdr + data


def layout(order, key_order, with_meta=True):
    """Tensors stored in data order `order`; JSON keys in `key_order`."""
    offs, data, at = {}, b"", 0
    for name in order:
        k = [t[0] for t in TENSORS].index(name)
        b = values(k, dict(TENSORS)[name]).tobytes()
        offs[name] = [at, at + len(b)]
        data += b
        at += len(b)
    hdr = {}
    if with_meta:
        hdr["__metadata__"] = META
    for name in key_order:
        hdr[name] = {"dtype": "F32", "shape": dict(TENSORS)[name], "data_offsets": offs[name]}
    return hdr, data


def write(name, blob):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(blob)


def main():
    os.makedirs(OUT, exist_ok=True)
    names = [t[0] for t in TENSORS]
    # the library sorts by dtype then name; JSON keys come out in another order than the data
    hdr, data = layout(sorted(names), names)
    write("valid_hf.safetensors", assemble(hdr, data))
    raw = json.dumps(hdr, separators=(",", ":")).encode()
    if len(raw) % 4 == 0:
        raw += b" "                                 # data now starts at an odd offset
    write("valid_unaligned.safetensors", assemble(None, data, pad_to=0, raw_header=raw))
    hdr, data = layout(names, names)
    write("pixflow_layout.safetensors", assemble(hdr, data))

    good_hdr, good_data = layout(names, names, with_meta=False)
    cases = []

    def bad(name, phrase, hdr=None, data=None, raw=None, blob=None):
        if blob is None:
            blob = assemble(hdr if hdr is not None else good_hdr,
                            good_data if data is None else data, raw_header=raw)
        write("bad_%s.safetensors" % name, blob)
        cases.append((name, phrase))

    def edit(fn):
        h = json.loads(json.dumps(good_hdr))
        fn(h)
        return h

    bad("short", "shorter than the 8-byte", blob=b"\x10\x00\x00\x00\x00")
    bad("hlen_huge", "not a safetensors file", blob=struct.pack("<Q", 1 << 63) + b"{}      ")
    bad("hlen_past_end", "runs past the end", blob=struct.pack("<Q", 4096) + b"{}" + b" " * 62)
    bad("json", "not valid JSON", raw=b'{"a":{"dtype":"F32","shape":[1],')
    bad("not_object", "not a safetensors file", raw=b"[1,2,3]")
    bad("trailing", "trailing bytes", raw=json.dumps(good_hdr).encode() + b" x")
    # data layout of good_hdr: conv.weight [0,72] conv.bias [72,80] scale [80,84]
    # empty [84,84] body.0.w [84,132]
    bad("offsets_out_of_range", "run past the end of the data", data=good_data[:-8])
    bad("overlap", "overlap", hdr=edit(lambda h: h["scale"].update(data_offsets=[76, 80])))
    bad("hole", "hole", hdr=edit(lambda h: h["body.0.w"].update(data_offsets=[88, 136])),
        data=good_data + b"\0" * 4)
    bad("extra_data", "belong to no tensor", data=good_data + b"\0" * 8)
    bad("dtype_f16", "unsupported dtype 'F16'",
        hdr=edit(lambda h: h["conv.bias"].update(dtype="F16")))
    bad("dtype_unknown", "unknown dtype 'Q7'",
        hdr=edit(lambda h: h["conv.bias"].update(dtype="Q7")))
    bad("shape_mismatch", "shape holds",
        hdr=edit(lambda h: h["conv.weight"].update(shape=[2, 1, 3, 2])))
    bad("shape_negative", "shape[0]", hdr=edit(lambda h: h["conv.bias"].update(shape=[-2])))
    bad("shape_5d", "dimensions",
        hdr=edit(lambda h: h["conv.weight"].update(shape=[2, 1, 3, 3, 1])))
    bad("offsets_reversed", "data_offsets must be",
        hdr=edit(lambda h: h["conv.bias"].update(data_offsets=[80, 72])))
    bad("offsets_float", "data_offsets must be",
        hdr=edit(lambda h: h["conv.bias"].update(data_offsets=[72, 80.5])))
    bad("no_dtype", "needs string 'dtype'", hdr=edit(lambda h: h["conv.bias"].pop("dtype")))
    bad("entry_not_object", "not a JSON object", hdr=edit(lambda h: h.update(scale=[1])))
    bad("meta_not_string", "is not a string",
        hdr=edit(lambda h: h.update(__metadata__={"iter": 5})))
    dup = json.dumps(good_hdr, separators=(",", ":")).encode()
    dup = dup[:-1] + b',"conv.bias":' + json.dumps(good_hdr["conv.bias"]).encode() + b"}"
    bad("duplicate", "appears twice", raw=dup)

    with open(os.path.join(OUT, "bad_cases.txt"), "w") as f:
        f.write("# bad_NAME.safetensors must be rejected with an error containing PHRASE\n")
        for name, phrase in cases:
            f.write("%s %s\n" % (name, phrase))


if __name__ == "__main__":
    main()
