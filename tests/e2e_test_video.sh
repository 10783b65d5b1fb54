#!/usr/bin/env bash
# e2e_test_video — `pixflow test CONFIG --checkpoint PATH --video[=CODEC]` on a video test set,
# checked with tools other than PixFlow's: a tiny BasicVSR trained 2 iterations on one clip,
# then tested on three others, an FFV1 file (10 frames/s) and two folders of PNG frames, the
# second (clipD) starting with 3 flat frames whose bicubic upscaling equals the GT (PSNR inf).
#
# Checks: each clip's output frames are PNGs of the GT size, one per source frame; each
# <clip>.mkv decodes with the ffmpeg CLI to exactly the bytes of its PNG frames (FFV1 is
# lossless) at the source's frame rate (10/1 for the video, 25/1 for the folder); results.tsv's
# PSNR per clip is the mean of the per-frame PSNR that numpy computes from the output and GT
# PNGs, and its mean row the mean over clips (BasicSR's order: frames, then clips), within
# 0.001 dB; the same for bicubic, numpy's from tests/reference/imresize_ref.py (MATLAB
# imresize) of the GT down and up; both leave out the frames whose PSNR is inf and count
# them (psnr_inf, psnr_bicubic_inf: numpy's counts, clipD's bicubic 3), and a mean row is
# finite; --workers 3 (3 clips: 3 workers) gives the same table and frames; --video=mpeg4
# writes an MPEG-4 file with every frame. Needs ffmpeg and Debian's
# python3 with numpy and PIL (bash scripts/setup.sh --test-deps); without them, 77.
set -euo pipefail

src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
py=/usr/bin/python3
for p in ffmpeg ffprobe; do
    command -v "$p" > /dev/null || { echo "SKIP: $p not found (scripts/setup.sh --test-deps)"; exit 77; }
done
"$py" -c 'import numpy, PIL' 2> /dev/null ||
    { echo "SKIP: $py with numpy and PIL not found (scripts/setup.sh --test-deps)"; exit 77; }
root=$(mktemp -d /tmp/pixflow_e2e_test_video.XXXXXX)
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # fail, check
trap '[ "$fails" = 0 ] && rm -rf "$root" || echo "kept $root for a look" >&2' EXIT
export OMP_NUM_THREADS=1

gt=$root/gt
mkdir -p "$gt/clipA" "$gt/clipC" "$gt/clipD"
ff() { ffmpeg -v error -nostdin -y "$@"; }
ff -f lavfi -i testsrc=size=96x64:rate=10 -frames:v 12 -start_number 0 "$gt/clipA/%08d.png"
ff -f lavfi -i testsrc2=size=96x64:rate=10 -frames:v 12 -c:v ffv1 "$gt/clipB.mkv"
ff -f lavfi -i "testsrc=size=96x64:rate=10,hflip" -frames:v 9 -start_number 0 "$gt/clipC/%08d.png"
ff -f lavfi -i color=c=0x3060a0:size=96x64:rate=10 -frames:v 3 -start_number 0 "$gt/clipD/%08d.png"
ff -f lavfi -i "testsrc2=size=96x64:rate=10,vflip" -frames:v 5 -start_number 3 "$gt/clipD/%08d.png"
cat > "$root/cfg.yaml" << EOF
$(tiny_basicvsr)
data:
  samples_per_gpu: 1
  train:
    type: REDSRecurrentDataset
    gt_folder: $gt
    clips: [{name: clipA, frames: [0, 12]}]
    num_frame: 3
    gt_patch_size: 32
  test:
    type: VideoRecurrentTestDataset
    gt_folder: $gt
    clips: [{name: clipB.mkv}, {name: clipC}, {name: clipD}]
optimizers: {type: Adam, lr: 1.0e-3}
total_iters: 2
checkpoint_config: {interval: 2}
work_dir: $root/work
seed: 0
EOF
st=0
"$bin" train "$root/cfg.yaml" > "$root/train.out" 2>&1 || st=$?
check "train: 2 iterations, exit 0 (status $st; $root/train.out)" test "$st" = 0
ckpt=$root/work/checkpoints/iter_2.safetensors
st=0
"$bin" test "$root/cfg.yaml" --checkpoint "$ckpt" --video > "$root/test.out" 2>&1 || st=$?
check "test --video: exit 0 (status $st; $root/test.out)" test "$st" = 0
out=$root/work/test/iter_2

# frames as raw RGB through the ffmpeg CLI
raw() { ffmpeg -v error -nostdin -i "$1" -f rawvideo -pix_fmt rgb24 -; }
rate() { ffprobe -v error -select_streams v:0 -show_entries stream=r_frame_rate -of csv=p=0 "$1"; }
count() { ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$1"; }
size() { ffprobe -v error -select_streams v:0 -show_entries stream=width,height -of csv=p=0 "$1"; }
for c in clipB:12:10/1 clipC:9:25/1 clipD:8:25/1; do
    IFS=: read -r name n fps <<< "$c"
    pngs=$(find "$out/$name" -name '*.png' | wc -l)
    check "$name: $n output PNG frames ($pngs)" test "$pngs" = "$n"
    check "$name: frames of the GT size, 96x64" test "$(size "$out/$name/00000000.png")" = "96,64"
    check "$name.mkv: $n frames at $fps ($(count "$out/$name.mkv") at $(rate "$out/$name.mkv"))" \
        test "$(count "$out/$name.mkv") $(rate "$out/$name.mkv")" = "$n $fps"
    check "$name.mkv decodes to its PNG frames' bytes" \
        cmp -s <(raw "$out/$name.mkv") <(raw "$out/$name/%08d.png")
done

# PSNR (RGB, 8-bit, crop_border 0) per frame by numpy, of the output and of bicubic (the GT
# down x1/4 and up x4 by imresize_ref.py), mean per clip, then over clips: inf values left out
# of each mean and counted (docs/metrics.md "Identical images")
PYTHONPATH="$src/tests/reference" "$py" - "$out" "$gt" > "$root/psnr.txt" << 'EOF'
import sys, os, subprocess
import numpy as np
from PIL import Image
from imresize_ref import imresize_u8
out, gt = sys.argv[1], sys.argv[2]
def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float('inf') if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)
def mean_finite(v):   # (mean of the finite values, inf if none; count of inf)
    f = [x for x in v if np.isfinite(x)]
    return (float(np.mean(f)) if f else float('inf')), len(v) - len(f)
def frames_of_video(path):
    w, h = 96, 64
    b = subprocess.run(['ffmpeg', '-v', 'error', '-nostdin', '-i', path, '-f', 'rawvideo',
                        '-pix_fmt', 'rgb24', '-'], check=True, capture_output=True).stdout
    return np.frombuffer(b, np.uint8).reshape(-1, h, w, 3)
def frames_of_folder(d):
    return np.stack([np.array(Image.open(os.path.join(gt, d, f)).convert('RGB'))
                     for f in sorted(os.listdir(os.path.join(gt, d)))])
clips = {'clipB.mkv': ('clipB', frames_of_video(os.path.join(gt, 'clipB.mkv'))),
         'clipC': ('clipC', frames_of_folder('clipC')),
         'clipD': ('clipD', frames_of_folder('clipD'))}
means, means_bic, inf, inf_bic = [], [], 0, 0
for name, (d, g) in clips.items():
    o = [np.array(Image.open(os.path.join(out, d, '%08d.png' % t)).convert('RGB'))
         for t in range(len(g))]
    m, k = mean_finite([psnr(x, y) for x, y in zip(o, g)])
    mb, kb = mean_finite([psnr(imresize_u8(imresize_u8(y, 0.25), 4.0), y) for y in g])
    means.append(m)
    means_bic.append(mb)
    inf, inf_bic = inf + k, inf_bic + kb
    print(name, '%.4f' % m, '%.4f' % mb, k, kb)
print('mean', '%.4f' % mean_finite(means)[0], '%.4f' % mean_finite(means_bic)[0], inf, inf_bic)
EOF
close() {  # NAME: results.tsv's row NAME: PSNR and bicubic PSNR finite and within 0.001 dB of
           # numpy's, and the same counts of identical frames
    local want got
    want=$(awk -v n="$1" '$1 == n { print $2, $3, $4, $5 }' "$root/psnr.txt")
    got=$(awk -F'\t' -v n="$1" '$1 == n { print $2, $4, $6, $7 }' "$out/results.tsv")
    echo "    $1: results.tsv $got, numpy $want (PSNR, bicubic, identical frames of each)"
    [ -n "$want" ] && [ -n "$got" ] && awk -v a="$got" -v b="$want" 'BEGIN {
        split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= 2; i++) { d = x[i] - y[i]; if (!(d < 0.001 && d > -0.001)) exit 1 }
        exit !(x[3] == y[3] && x[4] == y[4]) }'
}
for r in clipB.mkv clipC clipD mean; do
    check "results.tsv of $r: PSNR and bicubic's = numpy's means of finite per-frame PSNR, inf counted" close "$r"
done
check "clipD: its 3 flat frames left out of bicubic's mean" \
    test "$(awk -F'\t' '$1 == "clipD" { print $7 }' "$out/results.tsv")" = 3
check "test: the closing line counts them" \
    grep -qF "(bicubic: 3 identical frames left out)" "$root/test.out"

# the same with the clips split over worker processes (clip i to worker i mod N; 3 asked,
# 3 clips: 3 run): the same table and the same output frames
cp "$out/results.tsv" "$root/results1.tsv"
mv "$out/clipB" "$root/clipB1"
mv "$out/clipC" "$root/clipC1"
mv "$out/clipD" "$root/clipD1"
st=0
"$bin" test "$root/cfg.yaml" --checkpoint "$ckpt" --workers 3 > "$root/test3.out" 2>&1 || st=$?
check "test --workers 3: exit 0 on 3 workers (status $st; $root/test3.out)" eval \
    '[ "$st" = 0 ] && grep -q "3 clips (29 frames; .*) in .* on 3 workers" "$root/test3.out"'
check "test --workers 3: results.tsv equals one worker's" cmp -s "$out/results.tsv" "$root/results1.tsv"
check "test --workers 3: every output frame equals one worker's" eval \
    'diff -r -q "$out/clipB" "$root/clipB1" && diff -r -q "$out/clipC" "$root/clipC1" &&
     diff -r -q "$out/clipD" "$root/clipD1"'

st=0
"$bin" test "$root/cfg.yaml" --checkpoint "$ckpt" --video=mpeg4 > "$root/test2.out" 2>&1 || st=$?
check "test --video=mpeg4: exit 0 (status $st)" test "$st" = 0
check "clipB.mkv as MPEG-4: 12 frames ($(count "$out/clipB.mkv"))" \
    eval '[ "$(count "$out/clipB.mkv")" = 12 ] && ffprobe -v error -show_entries stream=codec_name -of csv=p=0 "$out/clipB.mkv" | grep -qx mpeg4'

# a test config (issue 33): model, data.test and work_dir only, no optimiser, runner or
# training set, as BasicSR's test options: the same table; `pixflow train` names what it lacks
cat > "$root/tcfg.yaml" << EOF
$(tiny_basicvsr | grep -v loss:)
data:
  test:
    type: VideoRecurrentTestDataset
    gt_folder: $gt
    clips: [{name: clipB.mkv}, {name: clipC}, {name: clipD}]
work_dir: $root/work
EOF
st=0
"$bin" test "$root/tcfg.yaml" --checkpoint "$ckpt" > "$root/test4.out" 2>&1 || st=$?
check "test on a config with model, data.test and work_dir only: exit 0 (status $st; $root/test4.out)" test "$st" = 0
check "test config: results.tsv equals the training config's" cmp -s "$out/results.tsv" "$root/results1.tsv"
st=0
"$bin" train "$root/tcfg.yaml" > "$root/train4.out" 2>&1 || st=$?
check "train on the test config: exit 2 naming optimizers, total_iters, data.train (status $st; $root/train4.out)" \
    eval '[ "$st" = 2 ] && grep -q "needs optimizers, total_iters (or total_epochs), data.train, missing" "$root/train4.out"'

if [ "$fails" -gt 0 ]; then
    echo "e2e_test_video: $fails check(s) failed" >&2
    exit 1
fi
echo "e2e_test_video: all checks passed"
