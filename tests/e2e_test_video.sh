#!/usr/bin/env bash
# e2e_test_video — `pixflow test CONFIG --checkpoint PATH --video[=CODEC]` on a video test set,
# checked with tools other than PixFlow's: a tiny BasicVSR trained 2 iterations on one clip,
# then tested on two others, an FFV1 file (10 frames/s) and a folder of PNG frames.
#
# Checks: each clip's output frames are PNGs of the GT size, one per source frame; each
# <clip>.mkv decodes with the ffmpeg CLI to exactly the bytes of its PNG frames (FFV1 is
# lossless) at the source's frame rate (10/1 for the video, 25/1 for the folder); results.tsv's
# PSNR per clip is the mean of the per-frame PSNR that numpy computes from the output and GT
# PNGs, and its mean row the mean over clips (BasicSR's order: frames, then clips), within
# 0.001 dB; --workers 3 (2 clips: 2 workers) gives the same table and frames; --video=mpeg4
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
mkdir -p "$gt/clipA" "$gt/clipC"
ff() { ffmpeg -v error -nostdin -y "$@"; }
ff -f lavfi -i testsrc=size=96x64:rate=10 -frames:v 12 -start_number 0 "$gt/clipA/%08d.png"
ff -f lavfi -i testsrc2=size=96x64:rate=10 -frames:v 12 -c:v ffv1 "$gt/clipB.mkv"
ff -f lavfi -i "testsrc=size=96x64:rate=10,hflip" -frames:v 9 -start_number 0 "$gt/clipC/%08d.png"
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
    clips: [{name: clipB.mkv}, {name: clipC}]
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
for c in clipB:12:10/1 clipC:9:25/1; do
    IFS=: read -r name n fps <<< "$c"
    pngs=$(find "$out/$name" -name '*.png' | wc -l)
    check "$name: $n output PNG frames ($pngs)" test "$pngs" = "$n"
    check "$name: frames of the GT size, 96x64" test "$(size "$out/$name/00000000.png")" = "96,64"
    check "$name.mkv: $n frames at $fps ($(count "$out/$name.mkv") at $(rate "$out/$name.mkv"))" \
        test "$(count "$out/$name.mkv") $(rate "$out/$name.mkv")" = "$n $fps"
    check "$name.mkv decodes to its PNG frames' bytes" \
        cmp -s <(raw "$out/$name.mkv") <(raw "$out/$name/%08d.png")
done

# PSNR (RGB, 8-bit, crop_border 0) per frame by numpy, mean per clip, then over clips
"$py" - "$out" "$gt" > "$root/psnr.txt" << 'EOF'
import sys, os, subprocess
import numpy as np
from PIL import Image
out, gt = sys.argv[1], sys.argv[2]
def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 10 * np.log10(255.0 ** 2 / mse)
def frames_of_video(path):
    w, h = 96, 64
    b = subprocess.run(['ffmpeg', '-v', 'error', '-nostdin', '-i', path, '-f', 'rawvideo',
                        '-pix_fmt', 'rgb24', '-'], check=True, capture_output=True).stdout
    return np.frombuffer(b, np.uint8).reshape(-1, h, w, 3)
clips = {'clipB.mkv': ('clipB', frames_of_video(os.path.join(gt, 'clipB.mkv'))),
         'clipC': ('clipC', np.stack([np.array(Image.open(os.path.join(gt, 'clipC', f)).convert('RGB'))
                                      for f in sorted(os.listdir(os.path.join(gt, 'clipC')))]))}
means = []
for name, (d, g) in clips.items():
    o = [np.array(Image.open(os.path.join(out, d, '%08d.png' % t)).convert('RGB')) for t in range(len(g))]
    m = float(np.mean([psnr(x, y) for x, y in zip(o, g)]))
    means.append(m)
    print(name, '%.4f' % m)
print('mean', '%.4f' % float(np.mean(means)))
EOF
close() {  # NAME: results.tsv's PSNR of row NAME within 0.001 dB of numpy's
    local want got
    want=$(awk -v n="$1" '$1 == n { print $2 }' "$root/psnr.txt")
    got=$(awk -F'\t' -v n="$1" '$1 == n { print $2 }' "$out/results.tsv")
    echo "    $1: results.tsv $got, numpy $want"
    [ -n "$want" ] && [ -n "$got" ] && awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(d < 0.001 && d > -0.001) }'
}
for r in clipB.mkv clipC mean; do
    check "results.tsv PSNR of $r = numpy's mean of per-frame PSNR" close "$r"
done

# the same with the clips split over worker processes (clip i to worker i mod N; 3 asked,
# 2 clips: 2 run): the same table and the same output frames
cp "$out/results.tsv" "$root/results1.tsv"
mv "$out/clipB" "$root/clipB1"
mv "$out/clipC" "$root/clipC1"
st=0
"$bin" test "$root/cfg.yaml" --checkpoint "$ckpt" --workers 3 > "$root/test3.out" 2>&1 || st=$?
check "test --workers 3: exit 0 on 2 workers (status $st; $root/test3.out)" eval \
    '[ "$st" = 0 ] && grep -q "2 clips (21 frames; .*) in .* on 2 workers" "$root/test3.out"'
check "test --workers 3: results.tsv equals one worker's" cmp -s "$out/results.tsv" "$root/results1.tsv"
check "test --workers 3: every output frame equals one worker's" eval \
    'diff -r -q "$out/clipB" "$root/clipB1" && diff -r -q "$out/clipC" "$root/clipC1"'

st=0
"$bin" test "$root/cfg.yaml" --checkpoint "$ckpt" --video=mpeg4 > "$root/test2.out" 2>&1 || st=$?
check "test --video=mpeg4: exit 0 (status $st)" test "$st" = 0
check "clipB.mkv as MPEG-4: 12 frames ($(count "$out/clipB.mkv"))" \
    eval '[ "$(count "$out/clipB.mkv")" = 12 ] && ffprobe -v error -show_entries stream=codec_name -of csv=p=0 "$out/clipB.mkv" | grep -qx mpeg4'

if [ "$fails" -gt 0 ]; then
    echo "e2e_test_video: $fails check(s) failed" >&2
    exit 1
fi
echo "e2e_test_video: all checks passed"
