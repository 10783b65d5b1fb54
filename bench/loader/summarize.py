#!/usr/bin/python3
"""summarize — medians and ratios of the lines bench/loader/run.sh collected.

usage: /usr/bin/python3 bench/loader/summarize.py LINES_FILE

Input: `--- round N` lines, each followed by that round's measurement lines `KIND key=value
...` from bench_loader_sink (`sink`), torch_loader.py (`torch`) or bench_zmq_pair (`zmq_pair`).
A measurement is named by kind, variant, loaders or workers, GT patch and flips.

Figures per measurement are medians over the rounds. Ratios are taken within each round (its
measurements ran minutes apart, so they share the machine's state more than different rounds
do) and their median is printed with the range over the rounds.

Bytes/s: PixFlow's payload (GT + LQ frames) into the sink against the bare pair's (zero-copy
sends like the loader's, and copying ones), and the same per CPU-second of the processes that
move the bytes (PixFlow: loaders, sink, coordinator; the pair: pusher and puller), which depends
less on what else runs on the machine.

Per-core figures, PixFlow against PyTorch at the same number of loader processes:
  cpu       patches per CPU-second of the loader processes (PixFlow loaders; DataLoader workers),
            the figure that least depends on what else runs on the machine
  pipeline  patches per CPU-second of every process of the pipeline (PixFlow: loaders,
            coordinator, sink, hooks; PyTorch: workers and the main process)
  process   patches/s divided by the number of loader processes (needs free cores)
"""
import statistics
import sys


def parse(path):
    """[{name: row}] per round, row = {key: value} with numbers as floats where they parse."""
    rounds = []
    with open(path) as f:
        for line in f:
            words = line.split()
            if words[:2] == ['---', 'round']:
                rounds.append({})
                continue
            if not words or words[0] not in ('sink', 'torch', 'zmq_pair') or not rounds:
                continue
            row = {}
            for w in words[1:]:
                k, _, v = w.partition('=')
                try:
                    row[k] = float(v)
                except ValueError:
                    row[k] = v
            if words[0] == 'sink':
                cpu = sum(v for k, v in row.items() if k.endswith('_cpu_s') and
                          not k.startswith('patches_per'))
                row['per_pipeline_cpu_s'] = row['patches_per_s'] * row['window_s'] / cpu
                row['per_process'] = row['patches_per_s'] / row['loaders']
                row['per_cpu_s'] = row['patches_per_loader_cpu_s']
                row['MB_per_cpu_s'] = row['payload_MB_per_s'] * row['window_s'] / (
                    row['loader_cpu_s'] + row['sink_cpu_s'] + row['coordinator_cpu_s'])
                name = 'pixflow %d %d %s' % (row['loaders'], row['gt_patch'],
                                             'flip' if row['flip'] else 'noflip')
            elif words[0] == 'torch':
                cpu = row['worker_cpu_s'] + row['main_cpu_s']
                row['per_pipeline_cpu_s'] = row['patches_per_s'] * row['window_s'] / cpu
                row['per_process'] = row['patches_per_s'] / row['workers']
                row['per_cpu_s'] = row['patches_per_worker_cpu_s']
                name = 'torch %s %d' % (row['variant'], row['workers'])
            else:
                row['MB_per_cpu_s'] = row['payload_MB_per_s'] * row['window_s'] / (
                    row['push_cpu_s'] + row['pull_cpu_s'])
                name = 'zmq_pair copy' if row['copy'] else 'zmq_pair'
            rounds[-1][name] = row
    return rounds


def med(rounds, name, field):
    vals = [r[name][field] for r in rounds if name in r]
    return statistics.median(vals) if vals else None


def ratio(rounds, a, fa, b, fb):
    """Median, min and max over the rounds of a.fa / b.fb, or None."""
    vals = [r[a][fa] / r[b][fb] for r in rounds if a in r and b in r and r[b][fb] > 0]
    if not vals:
        return None
    return statistics.median(vals), min(vals), max(vals)


def fmt(q):
    if q is None:
        return 'n/a'
    digits = 2 if q[0] < 10 else 0
    return 'x%.*f (%.*f..%.*f)' % (digits, q[0], digits, q[1], digits, q[2])


def cores(rounds, name, field):
    return med(rounds, name, field) / med(rounds, name, 'window_s')


def main():
    rounds = parse(sys.argv[1])
    print('Summary: medians of %d rounds; ratios: median (range) of per-round ratios; '
          'patches = GT/LQ pairs; MB = 1e6 bytes' % len(rounds))
    for n in (1, 2):
        name = 'pixflow %d 96 flip' % n
        if med(rounds, name, 'patches_per_s') is None:
            continue
        print('  PixFlow %d loader%s   GT 96: %8.0f patches/s  %7.0f per loader CPU-s  '
              '%7.0f per pipeline CPU-s  (coordinator %.2f, sink %.2f cores)' %
              (n, ' ' if n == 1 else 's', med(rounds, name, 'patches_per_s'),
               med(rounds, name, 'per_cpu_s'), med(rounds, name, 'per_pipeline_cpu_s'),
               cores(rounds, name, 'coordinator_cpu_s'), cores(rounds, name, 'sink_cpu_s')))
    for variant in ('disk', 'memory'):
        for n in (1, 2):
            name = 'torch %s %d' % (variant, n)
            if med(rounds, name, 'patches_per_s') is None:
                continue
            print('  PyTorch %-6s %d worker%s GT 96: %8.1f patches/s  %7.1f per worker CPU-s  '
                  '%7.1f per pipeline CPU-s' %
                  (variant, n, ' ' if n == 1 else 's', med(rounds, name, 'patches_per_s'),
                   med(rounds, name, 'per_cpu_s'), med(rounds, name, 'per_pipeline_cpu_s')))
    print('PixFlow scaling 1 -> 2 loaders: patches/s %s; per loader CPU-s %s' %
          (fmt(ratio(rounds, 'pixflow 2 96 flip', 'patches_per_s',
                     'pixflow 1 96 flip', 'patches_per_s')),
           fmt(ratio(rounds, 'pixflow 2 96 flip', 'per_cpu_s', 'pixflow 1 96 flip', 'per_cpu_s'))))
    print('PixFlow per core / PyTorch per core (goal >= 3):')
    for variant in ('disk', 'memory'):
        for n in (1, 2):
            pf, pt = 'pixflow %d 96 flip' % n, 'torch %s %d' % (variant, n)
            print('  vs %-6s at %d: cpu %s, pipeline %s, process %s' %
                  (variant, n, fmt(ratio(rounds, pf, 'per_cpu_s', pt, 'per_cpu_s')),
                   fmt(ratio(rounds, pf, 'per_pipeline_cpu_s', pt, 'per_pipeline_cpu_s')),
                   fmt(ratio(rounds, pf, 'per_process', pt, 'per_process'))))
    pairs = [(p, what) for p, what in (('zmq_pair', 'zero-copy pair'),
                                       ('zmq_pair copy', 'copying pair'))
             if med(rounds, p, 'payload_MB_per_s') is not None]
    if not pairs:
        return 0
    mb = next(r[p]['message_MB'] for r in rounds for p, _ in pairs if p in r)
    print('Bytes/s to one worker, GT 224 batches of %.3f MB (TCP loopback; goal: ratio >= 0.5):'
          % mb)
    for p, what in pairs:
        print('  bare libzmq, %-18s %7.1f MB/s  %6.0f MB per CPU-s  (pusher %.2f, puller %.2f '
              'cores)' % (what, med(rounds, p, 'payload_MB_per_s'), med(rounds, p, 'MB_per_cpu_s'),
                          cores(rounds, p, 'push_cpu_s'), cores(rounds, p, 'pull_cpu_s')))
    for name, what in (('pixflow 1 224 flip', '1 loader'), ('pixflow 2 224 flip', '2 loaders'),
                       ('pixflow 1 224 noflip', '1 loader, no flips')):
        if med(rounds, name, 'payload_MB_per_s') is None:
            continue
        print('  PixFlow, %-18s    %7.1f MB/s  %6.0f MB per CPU-s  (loaders %.2f, sink %.2f '
              'cores)' % (what, med(rounds, name, 'payload_MB_per_s'),
                          med(rounds, name, 'MB_per_cpu_s'), cores(rounds, name, 'loader_cpu_s'),
                          cores(rounds, name, 'sink_cpu_s')))
        for p, pwhat in pairs:
            print('      / %-14s MB/s %s; MB per CPU-s %s' %
                  (pwhat + ':', fmt(ratio(rounds, name, 'payload_MB_per_s', p, 'payload_MB_per_s')),
                   fmt(ratio(rounds, name, 'MB_per_cpu_s', p, 'MB_per_cpu_s'))))
    return 0


if __name__ == '__main__':
    sys.exit(main())
