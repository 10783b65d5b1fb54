#!/usr/bin/python3
"""compare — one config's verdict for ab_identical (run.sh): two work_dirs, old and new.

usage: compare.py OLD_WORK_DIR NEW_WORK_DIR STEPS

Prints `steps  losses identical yes/no  checkpoint identical yes/no  outputs identical yes/no`
followed by the details of what differs, and exits 1 when anything differs (0 otherwise).
- losses: (iter, loss) of every "train" line of metrics.jsonl, as doubles (cJSON writes the
  digits that read back to the same bits, so equal doubles are equal bits); both sides must
  have STEPS of them.
- checkpoint: every file of checkpoints/ byte for byte; when a safetensors file differs, the
  tensors whose dtype, shape or bytes differ and the metadata keys whose values differ.
- outputs: every file under test/ (PNGs, results.tsv) byte for byte, same file names.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "reference"))
import st_io  # noqa: E402  (tests/reference: safetensors without the package)


def losses(work_dir):
    out = []
    with open(os.path.join(work_dir, "metrics.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            if e.get("kind") == "train":
                out.append((int(e["iter"]), float(e["loss"])))
    return out


def files(top):
    out = {}
    for d, _, names in os.walk(top):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, top)] = p
    return out


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def compare_checkpoints(old, new, detail):
    fo, fn = files(os.path.join(old, "checkpoints")), files(os.path.join(new, "checkpoints"))
    ok = bool(fo) and fo.keys() == fn.keys()
    if fo.keys() != fn.keys():
        detail.append("checkpoint files %s / %s" % (sorted(fo), sorted(fn)))
    for name in sorted(fo.keys() & fn.keys()):
        if same_bytes(fo[name], fn[name]):
            continue
        ok = False
        if not name.endswith(".safetensors"):
            detail.append("%s differs" % name)
            continue
        to, mo = st_io.read_raw(fo[name])
        tn, mn = st_io.read_raw(fn[name])
        keys = sorted(k for k in mo.keys() | mn.keys() if mo.get(k) != mn.get(k))
        diff = sorted(k for k in to.keys() | tn.keys() if to.get(k) != tn.get(k))
        what = []
        if keys:
            what.append("metadata " + ", ".join("%s %s / %s" % (k, mo.get(k), mn.get(k))
                                                for k in keys))
        if diff:
            what.append("%d of %d tensors (%s%s)" % (len(diff), len(to.keys() | tn.keys()),
                                                     ", ".join(diff[:3]),
                                                     ", ..." if len(diff) > 3 else ""))
        detail.append("%s: %s" % (name, "; ".join(what) or "bytes differ"))
    return ok


def compare_outputs(old, new, detail):
    fo, fn = files(os.path.join(old, "test")), files(os.path.join(new, "test"))
    ok = bool(fo) and fo.keys() == fn.keys()
    if not fo:
        detail.append("no test outputs")
    elif fo.keys() != fn.keys():
        detail.append("output files differ: %s" % sorted(fo.keys() ^ fn.keys())[:3])
    differ = [k for k in sorted(fo.keys() & fn.keys()) if not same_bytes(fo[k], fn[k])]
    if differ:
        ok = False
        detail.append("%d of %d outputs differ (%s%s)" % (len(differ), len(fo), ", ".join(differ[:3]),
                                                      ", ..." if len(differ) > 3 else ""))
    return ok


def main():
    old, new, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    detail = []
    lo, ln = losses(old), losses(new)
    loss_ok = len(lo) == steps and lo == ln
    if len(lo) != steps or len(ln) != steps:
        detail.append("train lines %d / %d" % (len(lo), len(ln)))
    for a, b in zip(lo, ln):
        if a != b:
            detail.append("first loss difference at iter %d: %r / %r" % (a[0], a[1], b[1]))
            break
    ckpt_ok = compare_checkpoints(old, new, detail)
    out_ok = compare_outputs(old, new, detail)
    yn = lambda ok: "yes" if ok else "NO"
    n = str(len(lo)) if len(lo) == len(ln) else "%d/%d" % (len(lo), len(ln))
    print("%5s  %-17s  %-20s  %-17s  %s" % (n, yn(loss_ok), yn(ckpt_ok), yn(out_ok),
                                           "; ".join(detail)))
    return 0 if loss_ok and ckpt_ok and out_ok else 1


if __name__ == "__main__":
    sys.exit(main())
