#!/usr/bin/env bash
# e2e_video_cut — a training video cut short is seen at start-up (common/video.h, "Truncation";
# docs/video.md), before `pixflow train` starts any process, and data.on_bad_sample decides:
#   - fail (the default): the job is refused at once, exit status 2, with a message naming
#     the file, the frames its header announces and the frames that are whole; nothing is
#     started (no log of any role in work_dir, no "what will run" line);
#   - skip: a warning saying the same comes before the line that says what will run (the
#     last line before the coordinator is spawned), the clip keeps its whole frames, the
#     sampler counts those frames only, and 3 iterations train with no sample skipped.
# The clip is an FFV1 AVI of 30 frames (96x64) made by the ffmpeg CLI, cut to 30 % of its
# bytes with head -c. The numbers the messages must show come from ffprobe, not PixFlow: the
# header's frame count (ffprobe -count_frames on the whole file: 30) and the whole frames (the
# whole file's packets that end at or before the cut). Needs ffmpeg/ffprobe
# (scripts/setup.sh --test-deps); without them, 77.
set -euo pipefail

src=${PF_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
for p in ffmpeg ffprobe; do
    command -v "$p" > /dev/null || { echo "SKIP: $p not found (scripts/setup.sh --test-deps)"; exit 77; }
done
root=$(mktemp -d /tmp/pixflow_e2e_video_cut.XXXXXX)
# shellcheck source=tests/lib_e2e.sh
. "$src/tests/lib_e2e.sh"  # bin, fail, check
trap '[ "$fails" = 0 ] && rm -rf "$root" || echo "kept $root for a look" >&2' EXIT
export OMP_NUM_THREADS=1
not_grep() { ! grep -q "$@"; }

gt=$root/gt
mkdir -p "$gt"
whole=$root/whole.avi
ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=96x64:rate=10 -frames:v 30 -c:v ffv1 "$whole"
bytes=$(stat -c %s "$whole")
cut=$((bytes * 30 / 100))
head -c "$cut" "$whole" > "$gt/cut.avi"
# independent numbers: the frames ffprobe decodes from the whole file, and its packets that
# lie wholly in the first $cut bytes (FFV1 is intra-only: each such packet is a whole frame)
announced=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames \
    -of csv=p=0 "$whole")
whole_frames=$(ffprobe -v error -select_streams v:0 -show_entries packet=pos,size -of csv=p=0 "$whole" |
    awk -F, -v cut="$cut" '$2 + $1 <= cut { n++ } END { print n + 0 }')
echo "made: $whole, $bytes bytes, $announced frames; cut to $cut bytes: $whole_frames whole frames"
check "the whole file has 30 frames (ffprobe: $announced)" test "$announced" = 30
check "the cut leaves some whole frames, not all (ffprobe: $whole_frames)" \
    test "$whole_frames" -ge 3 -a "$whole_frames" -lt 30

# config ON_BAD_SAMPLE WORK_DIR: a tiny BasicVSR on the cut clip
config() {
    cat << EOF
$(tiny_basicvsr)
data:
  samples_per_gpu: 2
  on_bad_sample: $1
  train:
    type: REDSRecurrentDataset
    gt_folder: $gt
    num_frame: 3
    gt_patch_size: 32
optimizers: {type: Adam, lr: 1.0e-3}
total_iters: 3
log_config: {interval: 1}
checkpoint_config: {interval: 3}
work_dir: $2
seed: 0
EOF
}

# --- fail: refused before anything starts
config fail "$root/work_fail" > "$root/fail.yaml"
st=0
t0=$SECONDS
timeout 120 "$bin" train "$root/fail.yaml" > "$root/fail.out" 2>&1 || st=$?
echo "--- pixflow train, on_bad_sample: fail (status $st, $((SECONDS - t0)) s):"
cat "$root/fail.out"
check "fail: exit status 2 (a refused config), not a job that ran" test "$st" = 2
check "fail: the message names the file" grep -q "$gt/cut.avi is cut short" "$root/fail.out"
check "fail: the header's $announced frames and the $whole_frames whole frames" \
    grep -q "the header announces $announced frames, $whole_frames of the [0-9]* frames it holds are whole" \
    "$root/fail.out"
check "fail: says why it refuses (on_bad_sample: fail)" \
    grep -q "refused at start-up (data.on_bad_sample: fail" "$root/fail.out"
check "fail: no 'what will run' line (printed just before the spawn)" \
    not_grep "BasicVSR x4" "$root/fail.out"
logs=0
[ ! -d "$root/work_fail" ] || logs=$(find "$root/work_fail" -name '*.log' | wc -l)
check "fail: no process started: no role log in work_dir ($logs)" test "$logs" = 0

# --- skip: a warning before the spawn, the clip shrunk to its whole frames, training runs
config skip "$root/work_skip" > "$root/skip.yaml"
st=0
timeout 300 "$bin" train "$root/skip.yaml" > "$root/skip.out" 2>&1 || st=$?
echo "--- pixflow train, on_bad_sample: skip (status $st), first lines:"
head -5 "$root/skip.out"
check "skip: 3 iterations, exit 0 (status $st; $root/skip.out)" test "$st" = 0
# stderr lines are written as they happen (stdout's plan line is buffered, so not a marker):
# the front end's warning ("pixflow WARNING") must come before any line of a process it
# started (coordinator, loaderN, workerN, the hooks), and the started processes say it too
warn=$(grep -n "pixflow WARNING .*cut short" "$root/skip.out" | head -1 | cut -d: -f1)
first=$(grep -nE "^[0-9-]+ [0-9:.]+ (coordinator|loader[0-9]*|worker[0-9]*|[a-z]+ hook)" \
    "$root/skip.out" | head -1 | cut -d: -f1)
check "skip: the front end's warning (line ${warn:-none}) comes before the first line of a started process (${first:-none})" \
    test -n "$warn" -a -n "$first" -a "${warn:-0}" -lt "${first:-0}"
check "skip: the warning names the file, the header's and the whole frames" \
    grep -q "$gt/cut.avi is cut short.*the header announces $announced frames, $whole_frames of" \
    "$root/skip.out"
check "skip: the clip keeps frames [0, $whole_frames)" \
    grep -q "the clip keeps frames \[0, $whole_frames) (data.on_bad_sample: skip)" "$root/skip.out"
check "skip: the sampler counts the $whole_frames whole frames" \
    grep -q "BasicVSR x4, $whole_frames frames of 1 clip" "$root/skip.out"
check "skip: no sample skipped mid-run (no frame past the cut was read)" \
    not_grep -r "skipped sample" "$root/skip.out" "$root/work_skip"
check "skip: a checkpoint at iteration 3" test -e "$root/work_skip/checkpoints/iter_3.safetensors"

echo "ran: pixflow train on a video cut to 30 % with data.on_bad_sample fail and skip"
[ "$fails" = 0 ] && echo "e2e_video_cut: all checks passed" || echo "e2e_video_cut: $fails failed"
[ "$fails" = 0 ]
