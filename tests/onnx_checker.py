"""onnx_checker.py DIR — the ONNX side of ctest onnx.checker: every DIR/*.onnx (written by
test_onnx_export) must pass Debian python3-onnx's onnx.checker.check_model(full_check=True)
(which runs shape inference too) and have what docs/export.md promises: IR version 8, opset 17,
input "lq" and output "out" float32 [batch, 3, H, W] (BasicVSR [batch, 3, 3, H, W]: 3 frames)
with dim_param batch/height/width (out_height/out_width), and initializers = the network's parameter tensors under their
state_dict names (DIR/NAME.names, from the description), in that order. Exits 1 on any
failure, printing each."""
import glob
import os
import sys

import onnx

FLOAT = onnx.TensorProto.FLOAT


def dims(vi):
    t = vi.type.tensor_type
    return t.elem_type, [d.dim_param or d.dim_value for d in t.shape.dim]


def check(path):
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    errs = []
    if m.ir_version != 8:
        errs.append(f"ir_version {m.ir_version}")
    ops = {o.domain: o.version for o in m.opset_import}
    if ops.get("", 0) != 17:
        errs.append(f"opset {ops}")
    g = m.graph
    lead = ["batch", 3] if "BasicVSR" not in path else ["batch", 3, 3]   # video: T = 3 frames
    if [i.name for i in g.input] != ["lq"] or dims(g.input[0]) != (FLOAT, lead + ["height", "width"]):
        errs.append(f"input {[(i.name, dims(i)) for i in g.input]}")
    if [o.name for o in g.output] != ["out"] or dims(g.output[0]) != (FLOAT, lead + ["out_height", "out_width"]):
        errs.append(f"output {[(o.name, dims(o)) for o in g.output]}")
    with open(path[:-len(".onnx")] + ".names") as f:
        names = f.read().split()
    got = [t.name for t in g.initializer]
    if got != names:
        errs.append(f"initializers {got[:4]}... != state_dict names {names[:4]}...")
    return errs


def main():
    files = sorted(glob.glob(os.path.join(sys.argv[1], "*.onnx")))
    bad = 0
    for p in files:
        try:
            errs = check(p)
        except Exception as e:          # the checker's own error
            errs = [f"{type(e).__name__}: {e}"]
        bad += bool(errs)
        print(("FAIL " if errs else "ok   ") + os.path.basename(p) + (": " + "; ".join(errs) if errs else ""))
    print(f"onnx_checker: {len(files) - bad} of {len(files)} models pass (onnx {onnx.__version__})")
    sys.exit(1 if bad or not files else 0)


if __name__ == "__main__":
    main()
