#!/usr/bin/env python3
"""dnnl_profile — where a PixFlow training step (or inference) goes, from oneDNN's own timings.

Reads the stdout of `ONEDNN_VERBOSE=1 bench_train_step --only CASE --mark 1 ...` (file
arguments or stdin). The "pf_mark" lines bench_train_step prints after each step split the
oneDNN `exec` records into steps; warm-up steps are dropped and the rest averaged. Prints per
timed step: wall time of the model call and of Adam, oneDNN exec time by primitive kind and
propagation kind, the remainder of the model call outside oneDNN (PixFlow's own C: input
conversion, element-wise graph ops, pixel shuffle, loss, layout copies, and whatever
time oneDNN spends outside its primitives' exec), the heaviest layer shapes, and every
implementation whose name contains "ref" (oneDNN's slow reference kernels).

usage: ONEDNN_VERBOSE=1 OMP_NUM_THREADS=T build/bench/bench_train_step --only CASE \\
           --warmup 1 --steps 2 --mark 1 | bench/dnnl_profile.py [--top N]
"""
import argparse
import collections
import fileinput
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--top", type=int, default=12, help="layer shapes to list")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()

    step_recs = []                      # exec records of the step in progress
    kept = []                           # (records, model_ms, adam_ms) of timed steps
    title = ""
    for line in fileinput.input(a.files or ["-"]):
        line = line.rstrip("\n")
        if line.startswith("onednn_verbose,exec,"):
            f = line.split(",")
            # exec,engine,kind,impl,prop,mem descs,attrs,aux,problem,time (oneDNN 2.6)
            step_recs.append((f[3], f[4], f[5], f[6], f[7], f[-2], float(f[-1])))
        elif line.startswith("pf_mark "):
            w = line.split()
            v = dict(zip(w[1::2], w[2::2]))
            if v["warmup"] == "0":
                kept.append((step_recs, float(v["model_ms"]), float(v["adam_ms"])))
            step_recs = []
        elif "median" in line:
            title = line
    if not kept:
        sys.exit("dnnl_profile: no timed step (no 'pf_mark ... warmup 0' line in the input)")
    n = len(kept)
    print(title)
    model_ms = sum(k[1] for k in kept) / n
    adam_ms = sum(k[2] for k in kept) / n
    by_kind = collections.Counter()
    calls = collections.Counter()
    by_shape = collections.Counter()
    shape_calls = collections.Counter()
    refs = collections.Counter()
    for recs, _, _ in kept:
        for kind, impl, prop, mds, attrs, prob, ms in recs:
            key = (kind, prop)
            by_kind[key] += ms / n
            calls[key] += 1.0 / n
            sk = (kind, prop, prob, attrs.strip())
            by_shape[sk] += ms / n
            shape_calls[sk] += 1.0 / n
            if "ref" in impl:
                refs[(kind, impl, prop, prob)] += ms / n
    dnnl_ms = sum(by_kind.values())
    print("per timed step (%d averaged): model call %.1f ms + Adam %.1f ms = %.1f ms"
          % (n, model_ms, adam_ms, model_ms + adam_ms))
    print("  oneDNN exec %.1f ms (%.0f%% of the model call); outside oneDNN %.1f ms"
          % (dnnl_ms, 100 * dnnl_ms / model_ms, model_ms - dnnl_ms))
    print("by primitive (ms/step, calls/step):")
    for (kind, prop), ms in by_kind.most_common():
        print("  %-14s %-18s %9.1f  %5.0f" % (kind, prop, ms, calls[(kind, prop)]))
    print("heaviest layer shapes (ms/step, calls/step):")
    for (kind, prop, prob, attrs), ms in by_shape.most_common(a.top):
        print("  %9.1f %4.0f  %s %s %s %s" % (ms, shape_calls[(kind, prop, prob, attrs)], kind,
                                            prop, prob, attrs))
    print("reference (ref) implementations: %s" % ("none" if not refs else ""))
    for (kind, impl, prop, prob), ms in refs.most_common():
        print("  %9.1f  %s %s %s %s" % (ms, kind, impl, prop, prob))


if __name__ == "__main__":
    main()
