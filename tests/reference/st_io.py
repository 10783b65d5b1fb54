"""st_io — read and write safetensors files of float32 tensors (and int64 ones: I64, torch's
BatchNorm2d num_batches_tracked) without the safetensors package
(not installed for torch 1.13 here), from the format description (huggingface/safetensors):
u64 little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets},
"__metadata__": {str: str}} padded with spaces (here to a multiple of 8), then the
little-endian data, tensors back to back in header order. No side effects on import."""
import json
import struct

import numpy as np

DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8"}


def write(path, tensors, meta):
    """tensors: iterable of (name, array-like: numpy array or torch tensor) in file order;
    meta: {str: str}. Integer tensors are stored as I64, everything else as F32."""
    header, blobs, at = {"__metadata__": meta}, [], 0
    for name, t in tensors:
        arr = t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)
        i64 = np.issubdtype(arr.dtype, np.integer)
        b = np.ascontiguousarray(arr, dtype="<i8" if i64 else "<f4").tobytes()
        header[name] = {"dtype": "I64" if i64 else "F32", "shape": list(arr.shape),
                        "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    hdr = json.dumps(header, separators=(",", ":")).encode()
    hdr += b" " * (-len(hdr) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)) + hdr + b"".join(blobs))


def read_raw(path):
    """({name: (dtype string, shape list, bytes)} in data order, metadata dict): the stored
    bytes as they are, any dtype (bench/ab_identical compares them bit for bit)."""
    with open(path, "rb") as f:
        buf = f.read()
    (n,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = buf[8 + n:]
    tensors = {}
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        begin, end = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"], data[begin:end])
    return tensors, meta


def read(path):
    """({name: float32 numpy array; int64 for I64} in data order, metadata dict)."""
    raw, meta = read_raw(path)
    tensors = {name: np.frombuffer(b, dtype=DTYPES[dtype]).reshape(shape).astype(
                   np.int64 if dtype == "I64" else np.float32)
               for name, (dtype, shape, b) in raw.items()}
    return tensors, meta
