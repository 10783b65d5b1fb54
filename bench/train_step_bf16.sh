#!/bin/bash
# train_step_bf16 — issue 43's speed bar: PixFlow's bf16 convolutions (bench_train_step
# --precision bf16) against PixFlow fp32 and against PyTorch 1.13's bf16 autocast
# (bench/torch_train_step.py --bf16) at the same threads, for the training steps of
# EDSR-baseline x2, MSRResNet x4, RCAN-small x2 and EDSR x4 inference of a 256 x 256 image
# (bench/train_step's cases; their sizes are in bench/bench_train_step.c).
#
# For each case, ROUNDS interleaved rounds; each round runs four fresh processes in turn:
# PixFlow fp32, PixFlow bf16, PyTorch fp32, PyTorch bf16 (WARMUP warm-up + STEPS timed steps
# each, median). Per round: the bf16 speed-up = PixFlow fp32 s / PixFlow bf16 s, and the
# speed-up over PyTorch = PyTorch bf16 s / PixFlow bf16 s (> 1: PixFlow faster); per case the
# medians of the four, both ratios' median and range over the rounds, PASS when both medians
# are >= GOAL, and GFLOP/s of each beside the CPU's bf16 peak.
#
# GFLOP/s: the convolution FLOPs of one step as bench_train_step counts them from PixFlow's
# description (2 N OC IC K K OH OW per convolution, training = 3 x forward; the PyTorch side
# runs the same networks, and --smoke checks that torch_train_step.py --flops, counting with
# hooks on nn.Conv2d, gets the same number) over each program's median: an effective rate
# where a program does fewer multiplications (PixFlow fp32's Winograd layers).
# bf16 peak: measured by bench/bench_bf16_peak (VDPBF16PS zmm throughput on THREADS threads;
# its fp32 FMA figure is printed beside) when built and the CPU has AVX512_BF16; printed too
# (and used where nothing was measured, e.g. AMX) the assumption
# THREADS (one core each) x clock x FLOPs per cycle per core, where:
#   clock: lscpu's "CPU max MHz" where it has one, else /proc/cpuinfo's "cpu MHz" of the first
#   CPU (the current clock, what a VM reports); the output says which.
#   FLOPs/cycle for AVX512_BF16 (oneDNN's avx512_core_bf16): an ASSUMPTION of 128 = 2
#   VDPBF16PS zmm per cycle x 32 bf16 products (16 fp32 lanes x 2 pairs) x 2 (multiply, add),
#   the Zen 5 figure (full-width 512-bit pipes); Zen 4 runs zmm double-pumped, where 64 is
#   likelier and the percentages printed are then half the truth. AMX (avx512_core_amx): no
#   figure derived here, the peak is printed as unknown.
# A CPU without a bf16 unit (oneDNN's effective ISA, so ONEDNN_MAX_CPU_ISA counts, and lscpu's
# avx512_bf16 / amx_bf16 flags) is refused: exit 2 with the reason (never emulated).
#
# usage: bench/train_step_bf16.sh [--smoke] [BUILD_DIR] [THREADS] [ROUNDS] [STEPS]
#   defaults: build, 2 threads, 3 rounds, 3 steps; environment: WARMUP (1), GOAL (1.5),
#   CASES ("edsr_baseline msrresnet rcan_small edsr_infer").
#   --smoke (ctest bench_smoke.train_step_bf16): each case once at bench_train_step --smoke 1's
#   sizes (batch 2, LQ patch 8; inference 16 x 16), 1 step, no warm-up, 1 thread, output to a
#   temporary file; checks that every program printed its line, that PixFlow's and PyTorch's
#   convolution FLOP counts agree per case, and that ONEDNN_MAX_CPU_ISA=AVX512_CORE makes
#   bench_train_step refuse bf16 (exit 77, "no bf16 unit"). Without a bf16 unit the fp32 side
#   and the counts are still checked, then 77 ("no bf16 unit"); without torch, 77 as well.
# Output also goes to bench/results/bf16_<date>_<commit>_t<THREADS>.txt, with the load average
# (uptime) before and after: the machine may be shared.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; shift; fi
build=${1:-build}
threads=${2:-2}
rounds=${3:-3}
steps=${4:-3}
warmup=${WARMUP:-1}
goal=${GOAL:-1.5}
cases=${CASES:-edsr_baseline msrresnet rcan_small edsr_infer}
size_flags=() torch_flags=()
if [ "$smoke" = 1 ]; then
  threads=1 rounds=1 steps=1 warmup=0
  size_flags=(--smoke 1) torch_flags=(--smoke --flops)
fi
bin="$build/bench/bench_train_step"
[ -x "$bin" ] || bin="$build/bench_train_step"
[ -x "$bin" ] || { echo "train_step_bf16: no bench_train_step in $build" >&2; exit 1; }
py=/usr/bin/python3   # Debian's, with torch 1.13
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "train_step_bf16: $py cannot import torch (the PyTorch side of the benchmark)" >&2
  [ "$smoke" = 1 ] && exit 77
  exit 1
fi
export OMP_NUM_THREADS=$threads

# the bf16 unit: oneDNN's view (honours ONEDNN_MAX_CPU_ISA) and the kernel's flags
isa_line=$("$bin" --isa 1)
unit=$(echo "$isa_line" | awk '{ print $NF }')
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512_bf16|amx_bf16|amx_tile)$' |
        tr '\n' ' ' || true)
have_bf16=1
if [ "$unit" = none ]; then
  have_bf16=0
  why="no bf16 unit: bench_train_step says \"$isa_line\"; CPU flags: ${flags:-no avx512_bf16 / amx_bf16}"
  if [ "$smoke" = 0 ]; then
    echo "train_step_bf16: refused: $why (bf16 needs AVX512_BF16 or AMX; never emulated)" >&2
    exit 2
  fi
fi

commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ "$commit" = unknown ] || git -C "$here/.." diff --quiet HEAD -- . ":(exclude)bench/results" || commit="$commit+dirty"
if [ "$smoke" = 1 ]; then
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/pixflow-bf16-smoke.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  out="$tmp/bf16_smoke.txt"
else
  mkdir -p "$here/results"
  out="$here/results/bf16_$(date -u +%F)_${commit}_t${threads}.txt"
fi
exec > >(tee "$out")

# the bf16 peak (GFLOP/s) of THREADS cores, and where the clock came from
mhz=$(lscpu 2>/dev/null | awk -F: '/^CPU max MHz/ { gsub(/ /, "", $2); print $2 }')
mhz_src="lscpu CPU max MHz"
if [ -z "$mhz" ]; then
  mhz=$(awk -F: '/^cpu MHz/ { gsub(/ /, "", $2); print $2; exit }' /proc/cpuinfo)
  mhz_src="/proc/cpuinfo cpu MHz (current clock; no max MHz in lscpu)"
fi
case "$unit" in
avx512_core_bf16) fpc=128 fpc_src="AVX512_BF16: assumed 2 VDPBF16PS zmm/cycle x 32 products x 2 = 128 FLOP/cycle/core (Zen 5; Zen 4: likely 64)" ;;
avx512_core_amx) fpc="" fpc_src="AMX: FLOP/cycle not derived here" ;;
*) fpc="" fpc_src="no bf16 unit" ;;
esac
peak=""
[ -z "$fpc" ] || peak=$(awk -v t="$threads" -v m="$mhz" -v f="$fpc" 'BEGIN { printf "%.1f", t * m * 1e-3 * f }')
assumed_peak=$peak
# the measured peak (bench/bench_bf16_peak.c: VDPBF16PS / VFMADD231PS zmm throughput on THREADS
# threads, best 20 ms window) replaces the assumption where the CPU has AVX512_BF16: the clock a
# VM reports is often not the one the cores run at
peak_bin="$build/bench/bench_bf16_peak"
[ -x "$peak_bin" ] || peak_bin="$build/bench_bf16_peak"
measured=""
if [ -x "$peak_bin" ] && [ "$have_bf16" = 1 ]; then
  measured=$(nice -n -5 "$peak_bin" "$threads" 400 2>/dev/null || true)
  m=$(echo "$measured" | awk '/^bf16 peak measured: [0-9]/ { print $4 }')
  [ -z "$m" ] || peak=$m
fi

# median_of: the "median S" figure of a bench line on stdin; gflop_of: its "conv G GFLOP/step".
median_of() { awk '{ for (i = 1; i <= NF; i++) if ($i == "median") print $(i + 1) }'; }
gflop_of() { awk '{ for (i = 2; i <= NF; i++) if ($i == "GFLOP/step" || $i == "GFLOP/step,") print $(i - 1) }'; }
# stats: "median min max" of the numbers on stdin, one a line.
stats() {
  sort -g | awk '{ v[NR] = $1 }
    END { med = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "%s %s %s\n", med, v[1], v[NR] }'
}
# rate GFLOP SECONDS: "G GFLOP/s (P% of bf16 peak)"
rate() {
  awk -v g="$1" -v s="$2" -v p="$peak" 'BEGIN {
    r = g / s; printf "%.1f GFLOP/s", r
    if (p != "") printf " (%.1f%% of bf16 peak)", 100 * r / p }'
}

echo "train_step_bf16: $(date -u '+%F %T') UTC, commit $commit, threads $threads, rounds $rounds," \
     "warm-up $warmup + $steps timed steps per process"
echo "CPU: $(lscpu | awk -F: '/^Model name/ { gsub(/^ +/, "", $2); print $2 }'), family" \
     "$(awk -F: '/^cpu family/ { gsub(/ /, "", $2); print $2; exit }' /proc/cpuinfo)," \
     "$(getconf _NPROCESSORS_ONLN) CPUs; flags: ${flags:-none of avx512_bf16 amx_bf16 amx_tile}"
echo "bf16 unit: $isa_line"
echo "bf16 peak (assumed): ${assumed_peak:-unknown} GFLOP/s = $threads cores x $mhz MHz ($mhz_src) x ${fpc:-?} ($fpc_src)"
if [ -n "$measured" ]; then
  echo "$measured"
  echo "percentages below: of the measured bf16 peak, ${peak} GFLOP/s"
fi
echo "GFLOP/s: direct-convolution FLOPs per step (bench_train_step's count) / median s: an" \
     "effective rate where a program runs Winograd (PixFlow fp32's 3x3 layers: fewer multiplications)"
echo "PyTorch: $($py -c 'import torch; print(torch.__version__)')"
echo "load before: $(uptime)"
summary=""
programs="pf_fp32 pf_bf16 pt_fp32 pt_bf16"
for c in $cases; do
  declare -A t=([pf_fp32]="" [pf_bf16]="" [pt_fp32]="" [pt_bf16]="")
  gf_pf="" gf_pt=""
  r_self=() r_torch=()
  for ((r = 1; r <= rounds; r++)); do
    for p in $programs; do
      case $p in
      pf_fp32) line=$("$bin" --only "$c" --steps "$steps" --warmup "$warmup" "${size_flags[@]}" --precision fp32) ;;
      pf_bf16) [ "$have_bf16" = 1 ] || continue
               line=$("$bin" --only "$c" --steps "$steps" --warmup "$warmup" "${size_flags[@]}" --precision bf16) ;;
      pt_fp32) line=$($py "$here/torch_train_step.py" --only "$c" --threads "$threads" --steps "$steps" \
                        --warmup "$warmup" "${torch_flags[@]}" | grep -v '^torch ') ;;
      pt_bf16) [ "$have_bf16" = 1 ] || continue
               line=$($py "$here/torch_train_step.py" --only "$c" --threads "$threads" --steps "$steps" \
                        --warmup "$warmup" --bf16 "${torch_flags[@]}" | grep -v '^torch ') ;;
      esac
      echo "$line" | sed "s/^/round $r $p: /"
      t[$p]+="$(echo "$line" | median_of) "
      case $p in
      pf_*) gf_pf=$(echo "$line" | gflop_of | tail -1) ;;
      pt_*) gf_pt=$(echo "$line" | gflop_of | tail -1) ;;
      esac
    done
    [ "$have_bf16" = 1 ] || continue
    read -r a b _ d <<< "$(for p in $programs; do echo "${t[$p]}" | awk -v r="$r" '{ print $r }'; done | tr '\n' ' ')"
    r_self+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", a / b }')")
    r_torch+=("$(awk -v b="$b" -v d="$d" 'BEGIN { printf "%.3f", d / b }')")
  done
  if [ -z "$gf_pf" ]; then
    echo "train_step_bf16: bench_train_step printed no conv GFLOP/step for $c" >&2
    exit 1
  fi
  if [ "$smoke" = 1 ] && [ "$gf_pf" != "$gf_pt" ]; then
    echo "train_step_bf16: $c: convolution GFLOP/step PixFlow $gf_pf, PyTorch $gf_pt (hooks): they differ" >&2
    exit 1
  fi
  line="$(printf '%-13s %s GFLOP/step' "$c" "$gf_pf")"
  for p in $programs; do
    [ -n "${t[$p]}" ] || continue
    read -r med _ <<< "$(echo "${t[$p]}" | tr ' ' '\n' | grep . | stats)"
    line+="$(printf '\n  %-8s %.4f s  %s' "$p" "$med" "$(rate "$gf_pf" "$med")")"
  done
  if [ "$have_bf16" = 1 ]; then
    read -r sm slo shi <<< "$(printf '%s\n' "${r_self[@]}" | stats)"
    read -r tm tlo thi <<< "$(printf '%s\n' "${r_torch[@]}" | stats)"
    line+="$(awk -v sm="$sm" -v slo="$slo" -v shi="$shi" -v tm="$tm" -v tlo="$tlo" -v thi="$thi" \
        -v g="$goal" -v n="$rounds" -v smoke="$smoke" 'BEGIN {
          printf "\n  bf16 speed-up over PixFlow fp32 x%.2f (%.2f-%.2f), over PyTorch bf16 x%.2f (%.2f-%.2f), %d rounds: %s",
                 sm, slo, shi, tm, tlo, thi, n,
                 (smoke ? "(smoke run: not a measurement)" : sm >= g && tm >= g ? "PASS" : "below goal x" g) }')"
  fi
  echo "$line"
  summary+="$line"$'\n'
  unset t
done
echo "load after: $(uptime)"
echo
echo "summary (threads $threads; speed-ups per round, median and range; goal x$goal both):"
printf '%s' "$summary"
if [ "$smoke" = 1 ]; then
  n=$(echo $cases | wc -w)
  per=$((have_bf16 ? 4 : 2))
  lines=$(grep -cE "^round 1 p[ft]_(fp32|bf16): .*median" "$out" || true)
  reports=$(grep -cE "^round 1 pf_(fp32|bf16): .* precision (fp32|bf16): " "$out" || true)
  if [ "$lines" != $((n * per)) ] || [ "$reports" != $((n * per / 2)) ]; then
    echo "train_step_bf16 --smoke: $lines result lines ($((n * per)) wanted), $reports precision" \
         "reports ($((n * per / 2)) wanted) for $n cases" >&2
    exit 1
  fi
  rc=0
  msg=$(ONEDNN_MAX_CPU_ISA=AVX512_CORE "$bin" --only demo --smoke 1 --steps 1 --warmup 0 \
          --precision bf16 2>&1) || rc=$?
  if [ "$rc" != 77 ] || ! echo "$msg" | grep -q "no bf16 unit"; then
    echo "train_step_bf16 --smoke: ONEDNN_MAX_CPU_ISA=AVX512_CORE bench_train_step --precision bf16" \
         "exited $rc, wanted 77 and \"no bf16 unit\": $msg" >&2
    exit 1
  fi
  echo "train_step_bf16 --smoke: capped at AVX512_CORE, bf16 refused: $msg"
  if [ "$have_bf16" = 0 ]; then
    echo "train_step_bf16 --smoke: bf16 side skipped: $why"
    exit 77
  fi
  echo "train_step_bf16 --smoke: $n cases ran in all four, FLOP counts agree"
fi
