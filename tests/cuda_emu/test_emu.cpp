/*  test_emu — the host runtime of tests/cuda_emu itself, on small kernels written here, each
    result computed independently in plain loops:

    - launch configurations the driver refuses (no threads, 1025 threads, block.z 65, a grid
      dimension of 0, 49 KiB of dynamic shared memory) run nothing and make cudaGetLastError
      return cudaErrorInvalidConfiguration once (then cudaSuccess); 1024 threads run;
    - __syncthreads() is a barrier: each thread writes its slot of a __shared__ array, waits,
      then reads its neighbour's, over 3 rounds, with 256 and 1000 threads a block;
    - __shared__ is one array per block: a block sum with a tree of barriers over 7 blocks;
    - geometry: 3-D blocks and grids give every (block, thread) index exactly once;
    - block order: the seeded order differs from index order and between launches, and
      PF_EMU_SEED=0 (run in a child) keeps index order;
    - atomics, __double2ll_rn's ties to even, the rounded float intrinsics;
    - a barrier in divergent code (half the threads return while the others wait) aborts,
      naming the kernel (in a child process).
*/
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "nn/cuda/launch.h"

static int g_pass, g_fail;
#define CHECK(cond, ...)                                                                      \
    do {                                                                                      \
        if (cond) {                                                                           \
            g_pass++;                                                                         \
        } else {                                                                              \
            g_fail++;                                                                         \
            printf("%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);                  \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
        }                                                                                     \
    } while (0)

__global__ void k_count(int *n) { atomicAdd(n, 1); }

/* out[b * T + t] = value read from the neighbour's slot after a barrier, 3 rounds. */
__global__ void k_neighbours(int *out, int rounds) {
    __shared__ int s[1024];
    int t = (int)threadIdx.x, T = (int)blockDim.x;
    int v = t + 1000 * (int)blockIdx.x;
    for (int r = 0; r < rounds; r++) {
        s[t] = v;
        __syncthreads();
        v = s[(t + 1) % T];
        __syncthreads();
    }
    out[blockIdx.x * T + t] = v;
}

/* Tree sum of x over each block of 256 threads, per block into sums[blockIdx.x]. */
__global__ void k_block_sum(long long *sums, const int *x) {
    __shared__ long long s[256];
    int t = (int)threadIdx.x;
    s[t] = x[blockIdx.x * 256 + t];
    for (int half = 128; half > 0; half /= 2) {
        __syncthreads();
        if (t < half) s[t] += s[t + half];
    }
    if (t == 0) sums[blockIdx.x] = s[0];
}

/* hits[linear block][linear thread] += 1 */
__global__ void k_geometry(int *hits) {
    size_t b = blockIdx.x + (size_t)gridDim.x * (blockIdx.y + (size_t)gridDim.y * blockIdx.z);
    size_t t = threadIdx.x + (size_t)blockDim.x * (threadIdx.y + (size_t)blockDim.y * threadIdx.z);
    size_t per = (size_t)blockDim.x * blockDim.y * blockDim.z;
    hits[b * per + t] += 1;
}

/* order[k] = the k-th block to run (thread 0 of each block appends). */
__global__ void k_order(int *order, int *at) {
    if (threadIdx.x == 0) order[atomicAdd(at, 1)] = (int)blockIdx.x;
}

/* Undefined on a GPU: the odd threads return, the even ones wait at the barrier. */
__global__ void k_divergent(int *x) {
    if (threadIdx.x % 2 == 0) {
        x[threadIdx.x] = 1;
        __syncthreads();
    }
}

static std::vector<int> block_order(int blocks) {
    std::vector<int> order(blocks, -1);
    int at = 0, *d_order = order.data(), *d_at = &at;
    PF_LAUNCH(k_order, blocks, 2, 0, 0, d_order, d_at);
    return order;
}

static void test_config_errors(void) {
    int n = 0, *d_n = &n;
    struct {
        dim3 grid, block;
        size_t smem;
        const char *what;
    } bad[] = {
        {dim3(1), dim3(0), 0, "no threads"},
        {dim3(1), dim3(1025), 0, "1025 threads"},
        {dim3(1), dim3(32, 33), 0, "32 x 33 threads"},
        {dim3(1), dim3(1, 1, 65), 0, "block.z 65"},
        {dim3(0), dim3(32), 0, "grid.x 0"},
        {dim3(1, 65536), dim3(32), 0, "grid.y 65536"},
        {dim3(1), dim3(32), 49 * 1024, "49 KiB of shared memory"},
    };
    for (auto &b : bad) {
        PF_LAUNCH(k_count, b.grid, b.block, b.smem, 0, d_n);
        cudaError_t e = cudaGetLastError();
        CHECK(e == cudaErrorInvalidConfiguration && n == 0, "%s: error %d (%s), %d threads ran",
              b.what, (int)e, cudaGetErrorName(e), n);
        CHECK(cudaGetLastError() == cudaSuccess, "%s: the error is read once", b.what);
    }
    PF_LAUNCH(k_count, dim3(2, 3), dim3(8, 8, 16), 48 * 1024, 0, d_n);
    CHECK(cudaGetLastError() == cudaSuccess && n == 2 * 3 * 1024,
          "1024 threads, 48 KiB: ran %d of %d", n, 2 * 3 * 1024);
    printf("launch configurations: 7 refused as the driver does, the largest allowed runs\n");
}

static void test_barrier(int threads, int blocks) {
    const int rounds = 3;
    std::vector<int> out((size_t)threads * blocks, -1);
    int *d_out = out.data();
    PF_LAUNCH(k_neighbours, blocks, threads, 0, 0, d_out, rounds);
    int bad = 0;
    for (int b = 0; b < blocks; b++)
        for (int t = 0; t < threads; t++)
            bad += out[(size_t)b * threads + t] != (t + rounds) % threads + 1000 * b;
    CHECK(bad == 0, "%d threads x %d blocks: %d threads read a value not written before the "
          "barrier", threads, blocks, bad);
    printf("barrier: %d threads x %d blocks, %d rounds of write, wait, read the neighbour\n",
           threads, blocks, rounds);
}

static void test_block_sum(void) {
    const int blocks = 7;
    std::vector<int> x(256 * blocks);
    for (size_t i = 0; i < x.size(); i++) x[i] = (int)((i * 2654435761u) % 1000) - 500;
    std::vector<long long> sums(blocks, 0);
    long long *d_sums = sums.data();
    const int *d_x = x.data();
    PF_LAUNCH(k_block_sum, blocks, 256, 0, 0, d_sums, d_x);
    for (int b = 0; b < blocks; b++) {
        long long want = 0;
        for (int t = 0; t < 256; t++) want += x[b * 256 + t];
        CHECK(sums[b] == want, "block %d: tree sum %lld, loop %lld", b, sums[b], want);
    }
    printf("shared memory: %d block tree sums equal plain loops\n", blocks);
}

static void test_geometry(void) {
    dim3 grid(3, 2, 2), block(4, 3, 5);
    size_t n = (size_t)3 * 2 * 2 * 4 * 3 * 5;
    std::vector<int> hits(n, 0);
    int *d_hits = hits.data();
    PF_LAUNCH(k_geometry, grid, block, 0, 0, d_hits);
    size_t once = 0;
    for (int h : hits) once += h == 1;
    CHECK(once == n, "3-D grid and block: %zu of %zu (block, thread) indices hit once", once, n);
}

static void test_block_order(void) {
    const int blocks = 64;
    std::vector<int> a = block_order(blocks), b = block_order(blocks);
    std::vector<int> seen(blocks, 0);
    int in_order = 1;
    for (int k = 0; k < blocks; k++) {
        if (a[k] >= 0 && a[k] < blocks) seen[a[k]]++;
        in_order &= a[k] == k;
    }
    int each_once = 1;
    for (int s : seen) each_once &= s == 1;
    CHECK(each_once, "every block ran once");
    CHECK(!in_order, "the seeded order is not the index order");
    CHECK(a != b, "two launches run their blocks in different orders");
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("PF_EMU_SEED", "0", 1);
        execl("/proc/self/exe", "test_emu", "in-order", (char *)NULL);
        _exit(3);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "PF_EMU_SEED=0 runs blocks in index order "
          "(child status %d)", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    printf("block order: seeded (differs from index order and between launches); "
           "PF_EMU_SEED=0: index order\n");
}

static void test_divergent_barrier(void) {
    fflush(stdout);
    int fd[2];
    if (pipe(fd)) return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        execl("/proc/self/exe", "test_emu", "divergent", (char *)NULL);
        _exit(3);
    }
    close(fd[1]);
    char buf[4096];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof buf - 1 && (r = read(fd[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = 0;
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT &&
              strstr(buf, "k_divergent: block (0, 0, 0): 16 threads returned while 16 wait at "
                          "__syncthreads() (a barrier in divergent code)"),
          "a divergent barrier aborts naming the kernel: status %d, stderr '%s'", st, buf);
    printf("divergent barrier: aborts, naming the kernel\n");
}

static void test_intrinsics(void) {
    CHECK(__double2ll_rn(2.5) == 2 && __double2ll_rn(3.5) == 4 && __double2ll_rn(-2.5) == -2 &&
              __double2ll_rn(-3.7) == -4 && __double2ll_rn(1e15 + 0.5) == 1000000000000000ll,
          "__double2ll_rn rounds to nearest, ties to even");
    volatile float a = 16777216.0f, b = 1.0f;
    CHECK(__fadd_rn(a, b) == 16777216.0f, "__fadd_rn rounds (2^24 + 1 = 2^24)");
    CHECK(__float_as_uint(1.0f) == 0x3f800000u && __uint_as_float(0x40490fdbu) == 3.14159274f &&
              __int_as_float(-1082130432) == -1.0f, "bit casts");
    unsigned m = 5;
    CHECK(atomicMax(&m, 3u) == 5u && m == 5 && atomicMax(&m, 9u) == 5u && m == 9, "atomicMax");
    unsigned long long s = 1;
    CHECK(atomicAdd(&s, 2ull) == 1 && s == 3, "atomicAdd returns the old value");
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "divergent")) {
        std::vector<int> x(32, 0);
        int *d_x = x.data();
        PF_LAUNCH(k_divergent, 1, 32, 0, 0, d_x);
        return 0;                           /* not reached: the launch aborts */
    }
    if (argc > 1 && !strcmp(argv[1], "in-order")) {
        std::vector<int> o = block_order(64);
        for (int k = 0; k < 64; k++)
            if (o[k] != k) return 1;
        return 0;
    }
    test_config_errors();
    test_barrier(256, 3);
    test_barrier(1000, 2);
    test_block_sum();
    test_geometry();
    test_block_order();
    test_divergent_barrier();
    test_intrinsics();
    printf("test_emu: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
