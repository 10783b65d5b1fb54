#!/usr/bin/env python3
"""make_run.py WORK_DIR [ITERS] — a synthetic finished run for the dashboard benchmark
(bench/dashboard/run.sh): WORK_DIR/config.yaml and WORK_DIR/metrics.jsonl as the coordinator and
the log hook write them (hooks/log.c, hooks/event_json.c; read back by cli/monitor.c's
load_run), for an EDSR x2 job of ITERS iterations (default 100000) logged every iteration
(log_config.interval 1: one train line per iteration, the most a run can write):

- a train line per iteration (iter, epoch, lr, loss, time, data_time, n, skipped), the loss
  decaying with noise and a spike (x5..x20) about every 2000 iterations, time and data_time
  with their own spikes (a slow step, a loader restart);
- an eval line (PSNR/SSIM beside bicubic, best so far) and a checkpoint line every 5000;
- peer joins, status lines, and the loaders' and the worker's events every 2 s of the run's
  simulated time (2 loaders), as a real job's metrics.jsonl has them; a final `done`.

Deterministic (seeded): the same ITERS gives the same file. Prints the number of train lines
and the largest loss, which the benchmark checks the page drew."""
import json
import math
import os
import random
import sys
import time

EVAL_EVERY = 5000
LOADERS = ("loader1", "loader2")

CONFIG = """model:
  type: EDSR
  scale: 2
  in_channels: 3
  out_channels: 3
  n_feats: 64
  n_blocks: 16
  res_scale: 1
  rgb_mean: [0.4488, 0.4371, 0.404]
  img_range: 255
  loss:
    type: L1Loss
    loss_weight: 1
data:
  loaders: 2
  samples_per_gpu: 16
  prefetch: 4
  train:
    type: PairedImageDataset
    gt_folder: '{wd}/train'
    lq_folder: null
    filename_tmpl: '{{}}'
    gt_patch_size: 96
    use_flip: true
    use_rot: true
    repeat: 100
optimizers:
  type: Adam
  lr: 0.0002
  betas: [0.9, 0.999]
  eps: 1e-08
  weight_decay: 0
lr_config:
  policy: Step
  step: [{s1}, {s2}]
  gamma: 0.5
total_iters: {iters}
checkpoint_config:
  interval: {every}
  max_keep_ckpts: 3
log_config:
  interval: 1
work_dir: '{wd}'
load_from: null
resume_from: null
seed: 0
"""


def main():
    wd = sys.argv[1]
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 100000
    os.makedirs(wd, exist_ok=True)
    s1, s2 = iters // 2, iters * 3 // 4
    with open(os.path.join(wd, "config.yaml"), "w") as f:
        f.write(CONFIG.format(wd=wd, iters=iters, s1=s1, s2=s2, every=EVAL_EVERY))
    rnd = random.Random(37)
    t = time.mktime((2026, 12, 1, 0, 0, 0, 0, 0, -1))
    seq = [0]
    out = open(os.path.join(wd, "metrics.jsonl"), "w")

    def line(kind, source, **fields):
        d = {"kind": kind, "source": source,
             "time_stamp": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))}
        d.update(fields)
        out.write(json.dumps(d, separators=(",", ":")) + "\n")
        seq[0] += 1

    for name, role, rank in (("loader1", "loader", -1), ("loader2", "loader", -1),
                             ("checkpoint", "checkpoint hook", -1), ("eval", "eval hook", -1),
                             ("log", "log hook", -1), ("worker0", "worker", 0)):
        line("peer", "coordinator", name=name, role=role, rank=rank, host="node1",
             pid=1000 + seq[0], state="joined")
    line("status", "coordinator", text="training starts: %d iterations, 800 per epoch" % iters)
    line("status", "worker0", text="worker0 training from iteration 0, global batch 16 "
                                   "(1 workers x 16)")
    best, best_iter, max_loss, next_tick = -1.0, 0, 0.0, t + 2
    for i in range(1, iters + 1):
        lr = 2e-4 * (0.5 if i > s1 else 1) * (0.5 if i > s2 else 1)
        loss = 0.018 + 0.09 * math.exp(-i / (iters / 6)) + abs(rnd.gauss(0, 0.004))
        if rnd.random() < 1 / 2000:
            loss *= rnd.uniform(5, 20)                  # a bad batch
        step = 0.25 + rnd.gauss(0, 0.01)
        data_time = 0.0008 + abs(rnd.gauss(0, 0.0003))
        if rnd.random() < 1 / 5000:
            step += rnd.uniform(1, 4)                   # a slow step (checkpoint I/O, GC)
        if rnd.random() < 1 / 20000:
            data_time += rnd.uniform(2, 8)              # a loader restarted
            step += data_time
        max_loss = max(max_loss, loss)
        t += step
        line("train", "worker0", iter=i, epoch=(i - 1) // 800, lr=lr, loss=loss, time=step,
             data_time=data_time, n=1, skipped=0)
        while t >= next_tick:                           # every 2 s: loaders' and worker's events
            for k, name in enumerate(LOADERS):
                line("loader", name, host="node%d" % (2 + k), interval=2.0,
                     patches_per_s=64 + rnd.gauss(0, 2), bytes_per_s=6.1e6 + rnd.gauss(0, 2e5),
                     hit_rate=min(1.0, i / 8000), cache_bytes=min(i, 8000) * 110592,
                     queue_depth=rnd.randint(2, 4), skipped=0)
            line("worker", "worker0", iter=i, rank=0, host="node1", pid=1005, device="cuda:0",
                 mem_bytes=3400000000 + rnd.randint(0, 10000000))
            next_tick += 2
        if i % EVAL_EVERY == 0 or i == iters:
            ckpt = "%s/checkpoints/iter_%d.safetensors" % (wd, i)
            line("checkpoint", "checkpoint", iter=i, path=ckpt)
            psnr = 33.0 + 1.6 * (1 - math.exp(-i / (iters / 4))) + rnd.gauss(0, 0.03)
            if psnr > best:
                best, best_iter = psnr, i
            line("eval", "eval", iter=i, psnr=psnr, ssim=0.92 + (psnr - 33) * 0.004,
                 psnr_bicubic=31.9841, ssim_bicubic=0.9102, psnr_inf=0, psnr_bicubic_inf=0,
                 best_psnr=best, best_iter=best_iter, checkpoint=ckpt)
    for name in LOADERS:
        line("loader", name, host="node2", interval=1.0, patches_per_s=60.0, bytes_per_s=6e6,
             hit_rate=1.0, cache_bytes=8000 * 110592, queue_depth=0, skipped=0, final=True)
    line("done", "coordinator", text="finished: %d iterations" % iters)
    line("summary", "log", skipped=0, files=[])
    out.close()
    print(json.dumps({"train_lines": iters, "lines": seq[0], "max_loss": max_loss,
                      "evals": iters // EVAL_EVERY + (iters % EVAL_EVERY != 0)}))


if __name__ == "__main__":
    main()
