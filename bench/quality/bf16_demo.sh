#!/bin/bash
# bf16_demo.sh — issue 43's quality bar: the image demo (configs/demo.yaml: EDSR x2, 1500
# iterations, every role a process) trained in fp32 and in bf16 (train_cfg.precision, the same
# seed, data and schedule), each final checkpoint tested by `pixflow test` on the held-out
# photos; prints the PSNR-Y / SSIM-Y of both and their difference (bar: within 0.05 dB).
# The bf16 checkpoint is tested twice: test_cfg.precision bf16 (the bf16 demo end to end) and
# fp32 (checkpoints are fp32 and interchangeable). The fp32 run alone is PixFlow's deterministic
# demo: the difference is bf16's effect, not seed noise.
# usage: bench/quality/bf16_demo.sh [CONFIG] [ITERS]   (build/ built, scripts/fetch-demo-data.sh
# run; CONFIG default configs/demo.yaml; ITERS default its total_iters). Exits 77 without a
# bf16 unit (pixflow train refuses bf16 there).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
CONFIG="${1:-configs/demo.yaml}"
ITERS="${2:--}"
PIXFLOW="${PIXFLOW_BIN:-./build/pixflow}"
WORK="$(mktemp -d /tmp/pf_bf16_demo.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
[ "$ITERS" != - ] || ITERS=$("$PIXFLOW" config "$CONFIG" --get total_iters)
for prec in fp32 bf16; do
  sed -e "s|^total_iters:.*|total_iters: $ITERS|" -e "s|^work_dir:.*|work_dir: $WORK/$prec|" \
      "$CONFIG" > "$WORK/$prec.yaml"
  printf 'train_cfg: {precision: %s}\ntest_cfg: {precision: %s}\n' "$prec" "$prec" \
      >> "$WORK/$prec.yaml"
  echo "== pixflow train $CONFIG, train_cfg.precision $prec, $ITERS iterations"
  t0=$(date +%s)
  if ! "$PIXFLOW" train "$WORK/$prec.yaml" > "$WORK/$prec.train" 2>&1; then
    tail -5 "$WORK/$prec.train"
    grep -q "no bf16 unit" "$WORK/$prec.train" && exit 77
    exit 1
  fi
  echo "   training took $(( $(date +%s) - t0 )) s (not a speed measure: bench/train_step_bf16.sh is)"
  grep -h -m1 'precision net_g' "$WORK/$prec"/*.log 2>/dev/null || true
done
test_one() {   # CONFIG CHECKPOINT_DIR -> "psnr_y ssim_y" of the network
  local ck="$2/checkpoints/$(cat "$2/checkpoints/latest")"
  "$PIXFLOW" test "$1" --checkpoint "$ck" > "$WORK/test.out" 2>&1 || { cat "$WORK/test.out"; exit 1; }
  cat "$WORK/test.out" >&2
  awk -F'\t' '$1 == "mean" { print $2, $3 }' "$WORK/test.out" | tail -1
}
read -r p32 s32 < <(test_one "$WORK/fp32.yaml" "$WORK/fp32")
read -r pbf sbf < <(test_one "$WORK/bf16.yaml" "$WORK/bf16")
read -r pbf32 sbf32 < <(test_one "$WORK/fp32.yaml" "$WORK/bf16")
/usr/bin/python3 - "$p32" "$s32" "$pbf" "$sbf" "$pbf32" "$sbf32" <<'PY'
import sys
p32, s32, pbf, sbf, pbf32, sbf32 = map(float, sys.argv[1:])
print('fp32 train, fp32 test: PSNR-Y %.3f dB  SSIM-Y %.4f' % (p32, s32))
print('bf16 train, bf16 test: PSNR-Y %.3f dB  SSIM-Y %.4f' % (pbf, sbf))
print('bf16 train, fp32 test: PSNR-Y %.3f dB  SSIM-Y %.4f' % (pbf32, sbf32))
d = pbf - p32
print('bf16 - fp32: %+.3f dB (issue 43 bar: |diff| <= 0.05): %s' % (d, 'met' if abs(d) <= 0.05 else 'NOT met'))
PY
