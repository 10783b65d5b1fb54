/*  bench_bf16_peak — the multiply-add rate this CPU really reaches, measured, for the speed
    figures of bench/train_step_bf16.sh (issue 43): how far from the ceiling a convolution runs
    decides what a speed-up can still come from.

      bench_bf16_peak [THREADS] [MILLISECONDS]      (defaults 1, 200)

    Each of THREADS threads runs a loop of 16 independent zmm accumulator chains (more than
    latency x issue width of any x86 core so far, so the loop is bound by throughput):
      bf16: VDPBF16PS (AVX512_BF16) zmm: 16 fp32 lanes x 2 bf16 products, 64 FLOP a
            instruction (a multiply and an add each), oneDNN's avx512_core_bf16 inner loop;
      fp32: VFMADD231PS zmm: 16 lanes, 32 FLOP a instruction (oneDNN's avx512_core).
    For each, the best of repeated windows of 20 ms within MILLISECONDS (the best window is
    the one least disturbed by other processes), summed over the threads, which start together
    and run the same windows. Prints one line per kind:
      "bf16 peak measured: G GFLOP/s, THREADS threads (VDPBF16PS zmm, best 20 ms window)".
    AMX tiles are not measured (no AMX here to check it on). Exit status 0; 77 when the CPU (or
    the compiler) has no AVX512_BF16 (the fp32 line is printed first), 2 on bad usage. */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHAINS 16
#define WINDOW_S 0.020

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct {
    int bf16;               /* 1: VDPBF16PS, 0: VFMADD231PS */
    double seconds;         /* how long to keep measuring */
    double best;            /* out: the best window's instructions per second */
    float sink;             /* out: the accumulators' sum (keeps the loop alive) */
} job;

/* n blocks of CHAINS instructions of each kind; returns the accumulators' sum. */
__attribute__((target("avx512f,avx512bf16"))) static float run_bf16(long n) {
    __m512 acc[CHAINS];
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_set1_ps((float)i);
    __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x0001);
    for (long k = 0; k < n; k++)
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    __m512 s = acc[0];
    for (int i = 1; i < CHAINS; i++) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f"))) static float run_fp32(long n) {
    __m512 acc[CHAINS];
    for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_set1_ps((float)i);
    __m512 a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(1e-30f);
    for (long k = 0; k < n; k++)
        for (int i = 0; i < CHAINS; i++) acc[i] = _mm512_fmadd_ps(a, b, acc[i]);
    __m512 s = acc[0];
    for (int i = 1; i < CHAINS; i++) s = _mm512_add_ps(s, acc[i]);
    return _mm512_reduce_add_ps(s);
}

static void *measure(void *arg) {
    job *j = arg;
    long n = 1 << 12;
    double t_end = now() + j->seconds;
    while (now() < t_end) {
        double t = now();
        j->sink += j->bf16 ? run_bf16(n) : run_fp32(n);
        double dt = now() - t;
        if (dt < WINDOW_S / 2) {            /* grow the window to ~20 ms first */
            n *= 2;
            continue;
        }
        double rate = (double)n * CHAINS / dt;
        if (rate > j->best) j->best = rate;
    }
    return NULL;
}

/* Instructions per second summed over `threads` threads running together. */
static double rate_of(int bf16, int threads, double seconds) {
    pthread_t tid[256];
    job jobs[256] = {0};
    double sum = 0;
    for (int i = 0; i < threads; i++) {
        jobs[i] = (job){ .bf16 = bf16, .seconds = seconds };
        pthread_create(&tid[i], NULL, measure, &jobs[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(tid[i], NULL);
        sum += jobs[i].best;
        if (jobs[i].sink == 12345.f) fputc(' ', stderr);   /* use the result */
    }
    return sum;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    int ms = argc > 2 ? atoi(argv[2]) : 200;
    if (argc > 3 || threads < 1 || threads > 256 || ms < 40) {
        fprintf(stderr, "usage: bench_bf16_peak [THREADS 1..256] [MILLISECONDS >= 40]\n");
        return 2;
    }
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx512f")) {
        printf("fp32 peak measured: no AVX-512 on this CPU\nbf16 peak measured: no bf16 unit\n");
        return 77;
    }
    printf("fp32 peak measured: %.1f GFLOP/s, %d threads (VFMADD231PS zmm, best 20 ms window)\n",
           32e-9 * rate_of(0, threads, 1e-3 * ms), threads);
    if (!__builtin_cpu_supports("avx512bf16")) {
        printf("bf16 peak measured: no bf16 unit (no AVX512_BF16)\n");
        return 77;
    }
    printf("bf16 peak measured: %.1f GFLOP/s, %d threads (VDPBF16PS zmm, best 20 ms window)\n",
           64e-9 * rate_of(1, threads, 1e-3 * ms), threads);
    return 0;
}
