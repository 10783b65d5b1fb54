/*  emu — the host runtime of tests/cuda_emu/cuda_runtime.h: launches, fibers, the barrier,
    launch errors and the record of which kernels ran.

    A launch runs its blocks one after another, in an order drawn from (PF_EMU_SEED, the
    launch's number; PF_EMU_SEED=0: blocks and threads in index order, to show what the
    shuffling catches); each block's threads are fibers (ucontext) on heap stacks. A pass resumes
    every thread that is not finished, in an order drawn the same way, until it reaches
    __syncthreads() or returns; when every thread waits at the barrier the next pass starts.
    A thread that returns while others wait at a barrier (a barrier in divergent code: undefined
    on a GPU) aborts the program naming the kernel. A stack is reused by the next thread once its
    thread has returned, so a kernel without barriers needs one stack.

    Under AddressSanitizer the stack switches are announced (__sanitizer_start_switch_fiber /
    __sanitizer_finish_switch_fiber), so ASan follows the fibers.

    The launch sites that ran ("host_function kernel", one per line) go to the file named by
    PF_EMU_COVERAGE (appended at exit), for tests/cuda_emu/coverage.sh, which requires every
    PF_LAUNCH of nn/cuda/ops.cu among them.
*/
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define PF_EMU_ASAN 1
#else
#define PF_EMU_ASAN 0
#endif

uint3 pf_emu_block_idx;
dim3 pf_emu_block_dim, pf_emu_grid_dim;

/* The context switch. On x86-64 a hand-written one (callee-saved registers, the SSE and x87
   control words, the stack pointer: what the SysV ABI keeps across a call), because glibc's
   swapcontext makes a system call per switch (the signal mask) and AddressSanitizer's clears the
   shadow of the whole stack, which made a 1024-block reduction take seconds. Elsewhere
   ucontext. */
#if defined(__x86_64__)
#define PF_EMU_ASM_SWITCH 1
extern "C" void pf_emu_switch(void **save_sp, void *load_sp);
__asm__(".text\n"
        ".globl pf_emu_switch\n"
        ".type pf_emu_switch, @function\n"
        "pf_emu_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  subq $8, %rsp\n  stmxcsr (%rsp)\n  fnstcw 4(%rsp)\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  ldmxcsr (%rsp)\n  fldcw 4(%rsp)\n  addq $8, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size pf_emu_switch, .-pf_emu_switch\n");
#else
#define PF_EMU_ASM_SWITCH 0
#endif

namespace {

enum { READY, WAITING, DONE };

/* ASan's swapcontext clears the shadow of the whole stack at every switch: small stacks keep
   that cheap. A kernel's frames are a few hundred bytes. */
const size_t STACK_BYTES = 64 * 1024;
const size_t STACK_TOP_BYTES = 8 * 1024;    /* where fiber_main's frames lie */

struct Fiber {
#if PF_EMU_ASM_SWITCH
    void *sp;                   /* its saved stack pointer while suspended */
#else
    ucontext_t ctx;             /* its saved registers while suspended */
#endif
    char *stack;                /* STACK_BYTES of heap, from the pool */
    uint3 tid;                  /* threadIdx */
    int state;                  /* READY (not started or resumed next), WAITING, DONE */
    int started;
};

struct Emu {
    cudaError_t last_error = cudaSuccess;   /* for cudaGetLastError */
    unsigned long long seed = 1;            /* PF_EMU_SEED */
    unsigned long long launches = 0;
#if PF_EMU_ASM_SWITCH
    void *sched_sp = nullptr;               /* the scheduler's stack pointer */
#else
    ucontext_t sched;                       /* the scheduler's context */
#endif
    Fiber *cur = nullptr;                   /* the running fiber */
    const std::function<void()> *body = nullptr;
    std::vector<char *> pool;               /* free stacks */
    std::set<std::string> ran;              /* launch sites run: "function kernel" */
    const void *sched_bottom = nullptr;     /* the scheduler's stack, for ASan */
    size_t sched_size = 0;
    uint3 host_tid = {0, 0, 0};             /* threadIdx outside a kernel */
    bool direct = false;                    /* running a launch without fibers */
    uint3 direct_tid = {0, 0, 0};           /* its thread */
    bool barrier_seen = false;              /* some thread of this launch reached a barrier */
    std::map<std::string, bool> barriers;   /* kernels launched: whether they used a barrier */
};

Emu &emu() {
    static Emu *e = new Emu;    /* never destroyed: write_coverage runs at exit */
    return *e;
}

/* splitmix64: the seeded orders. */
unsigned long long mix(unsigned long long x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* 0..n-1 in an order drawn from key (Fisher-Yates); in order with PF_EMU_SEED=0. */
void shuffled(std::vector<unsigned> &order, size_t n, unsigned long long key) {
    order.resize(n);
    for (size_t i = 0; i < n; i++) order[i] = (unsigned)i;
    if (emu().seed == 0) return;
    for (size_t i = n; i > 1; i--) {
        key = mix(key);
        size_t j = (size_t)(key % i);
        unsigned t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

void switch_to_fiber(Fiber *f) {
    Emu &e = emu();
    e.cur = f;
#if PF_EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f->stack, STACK_BYTES);
#endif
#if PF_EMU_ASM_SWITCH
    pf_emu_switch(&e.sched_sp, f->sp);
#else
    swapcontext(&e.sched, &f->ctx);
#endif
#if PF_EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
    e.cur = nullptr;
}

/* From the running fiber back to the scheduler; `dying`: the fiber will not be resumed. */
void switch_to_scheduler(bool dying) {
    Emu &e = emu();
    Fiber *f = e.cur;
#if PF_EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(dying ? nullptr : &fake, e.sched_bottom, e.sched_size);
#endif
#if PF_EMU_ASM_SWITCH
    void *discard;
    pf_emu_switch(dying ? &discard : &f->sp, e.sched_sp);
    if (dying) abort();                     /* not reached: a finished fiber is not resumed */
#else
    if (dying) {
        setcontext(&e.sched);
        abort();                            /* not reached */
    }
    swapcontext(&f->ctx, &e.sched);
#endif
#if PF_EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

void fiber_main() {
    Emu &e = emu();
#if PF_EMU_ASAN
    __sanitizer_finish_switch_fiber(nullptr, &e.sched_bottom, &e.sched_size);
#endif
    (*e.body)();
    e.cur->state = DONE;
    switch_to_scheduler(true);
}

/* f's first switch enters fiber_main on its own stack. */
void start_fiber(Fiber *f) {
#if PF_EMU_ASAN
    /* A stack from the pool: the frames its last fiber never left (fiber_main and the switch
       out of it, at the top) still have their redzones poisoned. The kernel's own frames below
       returned and cleaned theirs. */
    ASAN_UNPOISON_MEMORY_REGION(f->stack + STACK_BYTES - STACK_TOP_BYTES, STACK_TOP_BYTES);
#endif
#if PF_EMU_ASM_SWITCH
    /* what pf_emu_switch pops: the control words, r15..rbp, then `ret` to fiber_main with the
       stack as a call leaves it (16-byte aligned before the return address) */
    uintptr_t top = ((uintptr_t)f->stack + STACK_BYTES) & ~(uintptr_t)15;
    void **slot = (void **)(top - 16);
    slot[1] = nullptr;                      /* fiber_main's return address: it never returns */
    slot[0] = (void *)fiber_main;
    for (int r = 1; r <= 6; r++) slot[-r] = nullptr;
    uint32_t *ctl = (uint32_t *)(slot - 7);
    ctl[0] = 0x1f80;                        /* MXCSR: round to nearest, exceptions masked */
    ctl[1] = 0x037f;                        /* x87 control word, the same */
    f->sp = slot - 7;
#else
    getcontext(&f->ctx);
    f->ctx.uc_stack.ss_sp = f->stack;
    f->ctx.uc_stack.ss_size = STACK_BYTES;
    f->ctx.uc_link = nullptr;
    makecontext(&f->ctx, fiber_main, 0);
#endif
}

char *take_stack() {
    Emu &e = emu();
    if (!e.pool.empty()) {
        char *s = e.pool.back();
        e.pool.pop_back();
        return s;
    }
    char *s = (char *)malloc(STACK_BYTES);
    if (!s) {
        fprintf(stderr, "cuda_emu: out of memory for a fiber stack\n");
        abort();
    }
    return s;
}

/* One block: every thread to its end, meeting at barriers. */
void run_block(const char *name, std::vector<Fiber> &threads, unsigned long long key) {
    Emu &e = emu();
    std::vector<unsigned> order;
    for (unsigned pass = 0;; pass++) {
        shuffled(order, threads.size(), mix(key ^ (0x51ed27ull * (pass + 1))));
        for (unsigned k : order) {
            Fiber *f = &threads[k];
            if (f->state == DONE) continue;
            if (!f->started) {
                f->stack = take_stack();
                start_fiber(f);
                f->started = 1;
            }
            f->state = READY;
            switch_to_fiber(f);
            if (f->state == DONE) e.pool.push_back(f->stack);
        }
        size_t waiting = 0, done = 0;
        for (const Fiber &f : threads) {
            waiting += f.state == WAITING;
            done += f.state == DONE;
        }
        if (!waiting) return;
        if (done) {
            fprintf(stderr, "cuda_emu: %s: block (%u, %u, %u): %zu threads returned while %zu "
                    "wait at __syncthreads() (a barrier in divergent code)\n", name,
                    pf_emu_block_idx.x, pf_emu_block_idx.y, pf_emu_block_idx.z, done, waiting);
            abort();
        }
    }
}

void write_coverage() {
    const char *path = getenv("PF_EMU_COVERAGE");
    if (!path || !*path) return;
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "cuda_emu: cannot append to %s\n", path);
        return;
    }
    for (const std::string &k : emu().ran) fprintf(f, "%s\n", k.c_str());
    fclose(f);
}

struct CoverageAtExit {
    CoverageAtExit() {
        const char *s = getenv("PF_EMU_SEED");
        if (s && *s) emu().seed = strtoull(s, nullptr, 0);
        atexit(write_coverage);
    }
} coverage_at_exit;

} // namespace

const uint3 &pf_emu_thread_idx(void) {
    Emu &e = emu();
    return e.cur ? e.cur->tid : e.direct ? e.direct_tid : e.host_tid;
}

void __syncthreads(void) {
    Emu &e = emu();
    if (e.direct) {
        fprintf(stderr, "cuda_emu: __syncthreads() in a kernel whose earlier launch reached no "
                "barrier (a data-dependent barrier): the emulation ran it without fibers\n");
        abort();
    }
    e.barrier_seen = true;
    if (!e.cur) {
        fprintf(stderr, "cuda_emu: __syncthreads() outside a kernel\n");
        abort();
    }
    e.cur->state = WAITING;
    switch_to_scheduler(false);
}

void pf_emu_launch(const char *site, const char *name, dim3 grid, dim3 block,
                   size_t shared_bytes, cudaStream_t stream, const std::function<void()> &body) {
    (void)stream;                           /* every stream is synchronous here */
    Emu &e = emu();
    unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
    if (!grid.x || !grid.y || !grid.z || !threads || threads > 1024 || block.x > 1024 ||
        block.y > 1024 || block.z > 64 || grid.x > 2147483647u || grid.y > 65535 ||
        grid.z > 65535 || shared_bytes > 48 * 1024) {
        e.last_error = cudaErrorInvalidConfiguration;
        return;
    }
    if (e.cur) {
        fprintf(stderr, "cuda_emu: %s launched from a kernel\n", name);
        abort();
    }
    e.ran.insert(std::string(site) + " " + name);
    unsigned long long key = mix(e.seed ^ mix(++e.launches));
    pf_emu_grid_dim = grid;
    pf_emu_block_dim = block;
    e.body = &body;
    /* A kernel whose first launch reached no barrier runs its threads as plain calls, one
       after another in a seeded order (fibers would cost a context switch per thread). */
    auto known = e.barriers.find(name);
    e.direct = known != e.barriers.end() && !known->second;
    e.barrier_seen = false;
    std::vector<Fiber> fibers(e.direct ? 0 : (size_t)threads);
    std::vector<unsigned> blocks, order;
    size_t n_blocks = (size_t)grid.x * grid.y * grid.z;
    shuffled(blocks, n_blocks, key);
    for (unsigned b : blocks) {
        pf_emu_block_idx.x = b % grid.x;
        pf_emu_block_idx.y = (b / grid.x) % grid.y;
        pf_emu_block_idx.z = b / ((size_t)grid.x * grid.y);
        if (e.direct) {
            shuffled(order, (size_t)threads, mix(key ^ b));
            for (unsigned t : order) {
                e.direct_tid.x = t % block.x;
                e.direct_tid.y = (t / block.x) % block.y;
                e.direct_tid.z = t / (block.x * block.y);
                body();
            }
            continue;
        }
        for (size_t t = 0; t < fibers.size(); t++) {
            fibers[t] = Fiber();
            fibers[t].tid.x = (unsigned)(t % block.x);
            fibers[t].tid.y = (unsigned)((t / block.x) % block.y);
            fibers[t].tid.z = (unsigned)(t / ((size_t)block.x * block.y));
            fibers[t].state = READY;
        }
        run_block(name, fibers, mix(key ^ b));
    }
    if (!e.direct) e.barriers[name] = e.barrier_seen;
    e.direct = false;
    e.body = nullptr;
}

extern "C" {

cudaError_t cudaGetLastError(void) {
    cudaError_t e = emu().last_error;
    emu().last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return emu().last_error; }

/* One "device": this host. */
cudaError_t cudaGetDeviceCount(int *count) {
    *count = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
    if (device != 0) return cudaErrorInvalidDevice;
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "cuda_emu (kernels on the host, tests/cuda_emu)");
    prop->totalGlobalMem = (size_t)1 << 34;
    prop->maxThreadsPerBlock = 1024;
    prop->sharedMemPerBlock = 48 * 1024;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v) {
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) {
    *v = 0;                                 /* no driver */
    return cudaSuccess;
}

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    default: return "cudaErrorUnknown";
    }
}

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    default: return "unknown error";
    }
}

} // extern "C"
