# lib_e2e.sh — sourced by tests/e2e_launch.sh and tests/e2e_slurm.sh (not a test itself).

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

# wait_for SECONDS COMMAND...: until the command succeeds; 1 on timeout.
wait_for() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do [ "$SECONDS" -lt "$end" ] || return 1; sleep 0.2; done
}

# lines FILE N: FILE exists with N lines or more.
lines() { [ -e "$1" ] && [ "$(wc -l < "$1")" -ge "$2" ]; }
