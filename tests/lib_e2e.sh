# lib_e2e.sh — sourced by the tests/e2e_*.sh scripts (not a test itself), after they set src
# (the source tree).

bin=${PF_BIN:-$src/build/pixflow}        # the pixflow binary under test
data=${PF_TEST_DATA:-$src/tests/data}    # tests/data

# write_config FILE WORK_DIR TOTAL_ITERS [CHECKPOINT_INTERVAL] [LOG_INTERVAL]: the tiny EDSR
# job of the multi-host tests, on the four images in $root/train (the caller sets root).
write_config() {
    cat > "$1" << EOF
model: {type: EDSR, scale: 2, n_feats: 16, n_blocks: 2, loss: {type: L1Loss}}
data:
  samples_per_gpu: 4
  prefetch: 3
  train: {type: PairedImageDataset, gt_folder: $root/train, gt_patch_size: 32,
          use_flip: true, use_rot: true, repeat: 8}
optimizers: {type: Adam, lr: 1.0e-3}
total_iters: $3
checkpoint_config: {interval: ${4:-100}, max_keep_ckpts: 2}
log_config: {interval: ${5:-20}}
work_dir: $2
seed: 7
EOF
}

# tiny_basicvsr: the `model:` block of the video e2e tests, a BasicVSR of 4 features, 1 block
# (x4, no SPyNet weights), for a config's heredoc.
tiny_basicvsr() {
    cat << EOF
model:
  type: BasicVSR
  scale: 4
  num_feat: 4
  num_block: 1
  spynet_pretrained: null
  loss: {type: CharbonnierLoss, loss_weight: 1.0, eps: 1.0e-12}
EOF
}

# eval_job_config ROOT TOTAL: ROOT/cfg.yaml, write_config's tiny EDSR job (work_dir ROOT/wd, TOTAL
# iterations, checkpoints every 1000) on four test images (ROOT/train), with an eval set
# (ROOT/val) evaluated every 1000 iterations, outputs saved (eval_visuals). The caller adds
# its visual_config.
eval_job_config() {
    mkdir -p "$1/train" "$1/val"
    cp "$data"/jpeg/{gray,photo,progressive,s444}.png "$1/train/"
    cp "$data"/jpeg/{gray,photo}.png "$1/val/"
    write_config "$1/cfg.yaml" "$1/wd" "$2" 1000 1
    sed -i "/repeat: 8}/a\\  eval: {type: PairedImageDataset, gt_folder: $1/val}" "$1/cfg.yaml"
    echo "evaluation: {interval: 1000, metrics: [PSNR, SSIM], crop_border: 2, convert_to: y," \
         "save_image: true}" >> "$1/cfg.yaml"
}

# cleanup_pids: for `trap cleanup_pids EXIT`: kill the processes in the caller's pids array,
# remove its $root when nothing failed, else keep it and say where.
cleanup_pids() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
    if [ "$fails" = 0 ]; then rm -rf "$root"; else echo "kept $root for a look" >&2; fi
}

# free_port: a TCP port free on 127.0.0.1 now (python3).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_for SECONDS COMMAND...: until the command succeeds; 1 on timeout.
wait_for() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do [ "$SECONDS" -lt "$end" ] || return 1; sleep 0.2; done
}

# lines FILE N: FILE exists with N lines or more.
lines() { [ -e "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }

# fail WHAT / check WHAT COMMAND...: report a check (fails counts the failed ones).
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@"; then echo "ok: $what"; else fail "$what"; fi; }

# batches WORK_DIR RANK: iteration, epoch, sample ids and pixel digest of each batch of a rank
# (the loader that served it may differ between runs).
batches() { cut -d' ' -f1-4 "$1/samples_rank$2.log"; }
# losses WORK_DIR: iteration, lr and loss of every train line of metrics.jsonl, the last line
# per iteration (a resumed run logs some twice).
losses() {
    grep '"kind":"train"' "$1/metrics.jsonl" |
        sed -E 's/.*"iter":([0-9]+).*"lr":([^,]*).*"loss":([^,]*).*/\1 \2 \3/' |
        awk '{ v[$1] = $0 } END { for (k in v) print v[k] }' | sort -n
}

# cluster_up DIR: scripts/test-cluster.sh up DIR; exits 77 (skip) where it cannot run here.
cluster_up() {
    local st=0
    bash "$src/scripts/test-cluster.sh" up "$1" || st=$?
    [ "$st" != 77 ] || { echo "SKIP: the test cluster cannot run here (reason above)"; exit 77; }
    [ "$st" = 0 ] || { fail "the test cluster did not come up"; exit 1; }
}

# all_gone PID...: none of the processes is alive.
all_gone() { local p; for p in "$@"; do ! kill -0 "$p" 2> /dev/null || return 1; done; }

# sigkill_launcher WHAT PID PIDS...: SIGKILL the launcher PID (a child of this shell), then
# check that every process of PIDS ends within 10 s; t_kill is the moment of the kill.
sigkill_launcher() {
    local what=$1 pid=$2 st=0
    shift 2
    kill -KILL "$pid"
    wait "$pid" 2> /dev/null || true
    t_kill=$SECONDS
    wait_for 10 all_gone "$@" || st=1
    check "$what: every process started ended within 10 s (after $((SECONDS - t_kill)) s)" \
        test "$st" = 0
}
