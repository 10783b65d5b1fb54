#!/usr/bin/env bash
# onnx_export.sh checker|runtime TEST_ONNX_EXPORT — ctest onnx.checker and onnx.runtime.
# Both run test_onnx_export (every network of the zoo at every scale, BasicVSR over 3 frames,
# small widths, random weights) into a temporary folder, then:
#   checker: tests/onnx_checker.py with Debian's python3-onnx (onnx.checker full_check, IR 8,
#            opset 17, dynamic lq/out, initializers = state_dict names); and `pixflow export
#            --onnx` on the EDSR x2 and BasicVSR (--num-frame 3) work dirs test_onnx_export
#            wrote gives the same bytes as the library, refuses an existing output without
#            --force, replaces it with --force, and fails with a message and no file for a
#            missing model or a .safetensors without a config. 77 without /usr/bin/python3's
#            onnx module.
#   runtime: tests/onnx_runtime.js: onnxruntime (onnxruntime-node, or onnxruntime-web's
#            WebAssembly build, from scripts/fetch-onnxruntime.sh's cache; PF_ORT_MODULE
#            overrides) on two inputs per model equals PixFlow's float inference within 1e-4.
#            77 without node or the package.
#   upscale: onnxruntime against `pixflow upscale` on real images: the demo's work dir
#            ($PF_DEMO_WORK_DIR, default work_dirs/demo; else test_onnx_export's fixture, an
#            EDSR x2 with random weights) exported by `pixflow export --onnx`, and two images of
#            different sizes (data/demo/val's chelsea.png 451 x 300 and coffee.png 600 x 400;
#            else two generated ones). `pixflow upscale` writes its PNGs; test_onnx_export
#            upscale runs pf_infer as upscale does (its rounded floats must be those PNGs' bytes)
#            and onnx_runtime.js checks onnxruntime's output against those floats (1e-4) and,
#            rounded, against the PNGs (1 grey level). 77 as runtime.
set -u
mode=$1 gen=$2
src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
bin=${PF_BIN:-$src/build/pixflow}
case "$mode" in
checker)
    /usr/bin/python3 -c "import onnx" 2> /dev/null ||
        { echo "SKIP: /usr/bin/python3 has no onnx module (python3-onnx; scripts/setup.sh --test-deps)"; exit 77; } ;;
runtime|upscale)
    command -v node > /dev/null || { echo "SKIP: node not found (nodejs; scripts/setup.sh --test-deps)"; exit 77; }
    cache=${PF_ORT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pixflow/onnxruntime}/node_modules
    ort=${PF_ORT_MODULE:-}
    for pkg in onnxruntime-node onnxruntime-web; do
        [ -z "$ort" ] && timeout 60 node -e "require('$cache/$pkg')" > /dev/null 2>&1 && ort=$cache/$pkg
    done
    [ -n "$ort" ] || { echo "SKIP: onnxruntime for Node not in $cache (scripts/fetch-onnxruntime.sh)"; exit 77; } ;;
*) echo "usage: onnx_export.sh checker|runtime|upscale TEST_ONNX_EXPORT" >&2; exit 2 ;;
esac
root=$(mktemp -d "${TMPDIR:-/tmp}/pf-onnx.XXXXXX")
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
trap 'if [ "$fails" = 0 ]; then rm -rf "$root"; else echo "kept $root for a look" >&2; fi' EXIT
if [ "$mode" = upscale ]; then
    timeout 120 "$gen" fixtures "$root" > /dev/null || fail "test_onnx_export fixtures"
    model=${PF_DEMO_WORK_DIR:-$src/work_dirs/demo}
    [ -f "$model/config.yaml" ] || model=$root/work_upscale
    val=$src/data/demo/val
    imgs=("$val/chelsea.png" "$val/coffee.png")
    [ -f "${imgs[0]}" ] && [ -f "${imgs[1]}" ] || imgs=("$root/images/small.png" "$root/images/large.png")
    echo "onnx.upscale: model $model, images ${imgs[*]}"
    timeout 300 "$bin" export --onnx "$root/upscale.onnx" "$model" || fail "pixflow export --onnx $model"
    timeout 600 "$bin" upscale "$model" "${imgs[@]}" -o "$root/upscaled" || fail "pixflow upscale"
    timeout 600 "$gen" upscale "$root" "$model" "$root/upscaled" "${imgs[@]}" ||
        fail "test_onnx_export upscale (pf_infer against pixflow upscale's PNGs)"
    [ "$fails" = 0 ] && { timeout 600 node "$src/tests/onnx_runtime.js" "$root" "$ort" ||
        fail "onnxruntime against pixflow upscale"; }
    exit $((fails > 0))
fi
timeout 600 "$gen" "$root" || fail "test_onnx_export"
if [ "$mode" = runtime ]; then
    timeout 600 node "$src/tests/onnx_runtime.js" "$root" "$ort" || fail "onnxruntime against PixFlow"
    exit $((fails > 0))
fi
timeout 600 /usr/bin/python3 "$src/tests/onnx_checker.py" "$root" || fail "onnx.checker"
# the command line on a work dir: the same model as the library wrote
w=$root/work_EDSR_x2
timeout 120 "$bin" export --onnx "$root/cli.onnx" "$w" || fail "pixflow export on a work dir"
cmp -s "$root/cli.onnx" "$root/EDSR_x2.onnx" || fail "pixflow export: not the library's bytes"
timeout 120 "$bin" export --onnx "$root/cli.onnx" "$w" 2> "$root/err" && fail "existing output replaced without --force"
grep -q "exists (--force replaces it)" "$root/err" || fail "no 'exists' message: $(cat "$root/err")"
timeout 120 "$bin" export --onnx "$root/cli2.onnx" "$w/checkpoints/iter_1.safetensors" ||
    fail "pixflow export on checkpoints/iter_1.safetensors (../config.yaml)"
cmp -s "$root/cli2.onnx" "$root/EDSR_x2.onnx" || fail "export of the .safetensors differs"
timeout 120 "$bin" export --onnx "$root/cli.onnx" "$w" --force || fail "--force"
cp "$w/checkpoints/iter_1.safetensors" "$root/loose.safetensors"
timeout 120 "$bin" export --onnx "$root/bad.onnx" "$root/loose.safetensors" 2> "$root/err" && fail "no config accepted"
grep -q "give --config CONFIG" "$root/err" || fail "no --config message: $(cat "$root/err")"
timeout 120 "$bin" export --onnx "$root/bad.onnx" "$root/missing" 2> "$root/err" && fail "missing model accepted"
grep -q "missing: no such file or work dir" "$root/err" || fail "no message for a missing model: $(cat "$root/err")"
[ -e "$root/bad.onnx" ] && fail "a failed export left bad.onnx"
ls -a "$root" | grep -q '^\.bad' && fail "a failed export left a temp file"
timeout 120 "$bin" export --onnx "$root/cfg.onnx" "$root/loose.safetensors" --config "$w/config.yaml" ||
    fail "--config"
cmp -s "$root/cfg.onnx" "$root/EDSR_x2.onnx" || fail "export with --config differs"
# a video network: unrolled over --num-frame frames, the library's bytes
timeout 300 "$bin" export --onnx "$root/vsr.onnx" "$root/work_BasicVSR_x4" --num-frame 3 ||
    fail "pixflow export BasicVSR --num-frame 3"
cmp -s "$root/vsr.onnx" "$root/BasicVSR_x4.onnx" || fail "BasicVSR export differs"
timeout 60 "$bin" export --onnx "$root/vsr0.onnx" "$root/work_BasicVSR_x4" --num-frame 0 2> /dev/null
[ $? = 2 ] || fail "--num-frame 0 not refused as a usage error"
[ "$fails" = 0 ] && echo "onnx.checker: every model passes; pixflow export checked"
exit $((fails > 0))
