/*  ops — PixFlow's own CUDA kernels (see ops.h for each function's contract).

    Every element-wise kernel is a grid-stride loop over size_t indices, launched with
    THREADS threads and at most MAX_BLOCKS blocks, so any count fits one launch. Kernels that
    permute data (layout conversion, pixel shuffle) loop over the OUTPUT so that writes are
    coalesced. The loss reduction uses a fixed grid and fixed-order trees (no atomics), so it
    is deterministic; so are the graph ops' reductions (k_plane_sum: one block per result, each
    thread a fixed stride of elements in double, then the same tree). Adam uses explicitly
    rounded float operations (no FMA contraction), so it computes the same bits as the C loop
    in nn/optim.c compiled without FMA.
*/
#include "nn/cuda/ops.h"
#include "nn/cuda/launch.h"
#include "nn/cubic.h"
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define THREADS 256
#define MAX_BLOCKS 65536
#define LOSS_BLOCKS PF_CUDA_LOSS_SCRATCH /* must be a multiple of THREADS for the final pass */

static unsigned grid_for(size_t count) {
    size_t b = (count + THREADS - 1) / THREADS;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

/* The launch's status (a bad configuration, no device, a sticky earlier error). */
static int check_launch(const char *kernel, char *err, size_t errlen) {
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s: launch failed: %s (%s)", kernel, cudaGetErrorString(e),
                 cudaGetErrorName(e));
        return -1;
    }
    return 0;
}

static int bad_arg(const char *fn, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: %s", fn, what);
    return -1;
}

#define GRID_STRIDE(i, count)                                                                 \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (count);                \
         i += (size_t)gridDim.x * blockDim.x)

/* ---- input conversion and mean shift ------------------------------------------------------ */

__global__ void k_u8_nhwc_to_nchw(float *dst, const uint8_t *src, int n, int h, int w, int c) {
    size_t count = (size_t)n * c * h * w;
    GRID_STRIDE(i, count) {
        size_t x = i % w, t = i / w;
        size_t y = t % h;
        t /= h;
        size_t ch = t % c, b = t / c;
        dst[i] = (float)src[((b * h + y) * w + x) * c + ch] / 255.0f;
    }
}

int pf_cuda_u8_nhwc_to_nchw(float *dst, const uint8_t *src, int n, int h, int w, int c,
                            cudaStream_t stream, char *err, size_t errlen) {
    if (n < 0 || h < 0 || w < 0 || c < 0)
        return bad_arg("pf_cuda_u8_nhwc_to_nchw", "negative dimension", err, errlen);
    size_t count = (size_t)n * c * h * w;
    if (!count) return 0;
    PF_LAUNCH(k_u8_nhwc_to_nchw, grid_for(count), THREADS, 0, stream, dst, src, n, h, w, c);
    return check_launch("k_u8_nhwc_to_nchw", err, errlen);
}

typedef struct {
    float v[PF_CUDA_MAX_MEAN_CHANNELS];
} mean_vec;

/* unshift = 0: y = (x - mean) * range;  unshift = 1: y = x / range + mean. */
__global__ void k_mean_shift(float *y, const float *x, size_t count, int c, size_t hw,
                             mean_vec mean, float range, int unshift) {
    GRID_STRIDE(i, count) {
        float m = mean.v[(i / hw) % c];
        y[i] = unshift ? x[i] / range + m : (x[i] - m) * range;
    }
}

static int mean_shift(const char *fn, float *y, const float *x, int n, int c, int h, int w,
                      const float *mean, float range, int unshift, cudaStream_t stream,
                      char *err, size_t errlen) {
    if (n < 0 || h < 0 || w < 0 || c < 0) return bad_arg(fn, "negative dimension", err, errlen);
    if (c > PF_CUDA_MAX_MEAN_CHANNELS)
        return bad_arg(fn, "more channels than PF_CUDA_MAX_MEAN_CHANNELS", err, errlen);
    if (range == 0.0f) return bad_arg(fn, "range is 0", err, errlen);
    mean_vec mv = {{0}};
    for (int i = 0; mean && i < c; i++) mv.v[i] = mean[i];
    size_t count = (size_t)n * c * h * w;
    if (!count) return 0;
    PF_LAUNCH(k_mean_shift, grid_for(count), THREADS, 0, stream, y, x, count, c, (size_t)h * w, mv,
              range, unshift);
    return check_launch(unshift ? "k_mean_shift (unshift)" : "k_mean_shift", err, errlen);
}

int pf_cuda_mean_shift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                       float range, cudaStream_t stream, char *err, size_t errlen) {
    return mean_shift("pf_cuda_mean_shift", y, x, n, c, h, w, mean, range, 0, stream, err,
                      errlen);
}

int pf_cuda_mean_unshift(float *y, const float *x, int n, int c, int h, int w, const float *mean,
                         float range, cudaStream_t stream, char *err, size_t errlen) {
    return mean_shift("pf_cuda_mean_unshift", y, x, n, c, h, w, mean, range, 1, stream, err,
                      errlen);
}

/* ---- element-wise ------------------------------------------------------------------------- */

__global__ void k_relu_forward(float *y, const float *x, size_t count) {
    GRID_STRIDE(i, count) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void k_relu_backward(float *dx, const float *dy, const float *y, size_t count) {
    GRID_STRIDE(i, count) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void k_add_scaled(float *y, const float *a, const float *b, float s, size_t count) {
    GRID_STRIDE(i, count) y[i] = a[i] + s * b[i];
}

__global__ void k_scale(float *y, const float *x, float s, size_t count) {
    GRID_STRIDE(i, count) y[i] = s * x[i];
}

__global__ void k_axpy(float *y, const float *x, float s, size_t count) {
    GRID_STRIDE(i, count) y[i] += s * x[i];
}

int pf_cuda_relu_forward(float *y, const float *x, size_t count, cudaStream_t stream, char *err,
                         size_t errlen) {
    if (!count) return 0;
    PF_LAUNCH(k_relu_forward, grid_for(count), THREADS, 0, stream, y, x, count);
    return check_launch("k_relu_forward", err, errlen);
}

int pf_cuda_relu_backward(float *dx, const float *dy, const float *y, size_t count,
                          cudaStream_t stream, char *err, size_t errlen) {
    if (!count) return 0;
    PF_LAUNCH(k_relu_backward, grid_for(count), THREADS, 0, stream, dx, dy, y, count);
    return check_launch("k_relu_backward", err, errlen);
}

int pf_cuda_add_scaled(float *y, const float *a, const float *b, float s, size_t count,
                       cudaStream_t stream, char *err, size_t errlen) {
    if (!count) return 0;
    PF_LAUNCH(k_add_scaled, grid_for(count), THREADS, 0, stream, y, a, b, s, count);
    return check_launch("k_add_scaled", err, errlen);
}

int pf_cuda_scale(float *y, const float *x, float s, size_t count, cudaStream_t stream,
                  char *err, size_t errlen) {
    if (!count) return 0;
    PF_LAUNCH(k_scale, grid_for(count), THREADS, 0, stream, y, x, s, count);
    return check_launch("k_scale", err, errlen);
}

int pf_cuda_axpy(float *y, const float *x, float s, size_t count, cudaStream_t stream,
                 char *err, size_t errlen) {
    if (!count) return 0;
    PF_LAUNCH(k_axpy, grid_for(count), THREADS, 0, stream, y, x, s, count);
    return check_launch("k_axpy", err, errlen);
}

/* ---- pixel shuffle ------------------------------------------------------------------------ */

/* One thread per output element (n, c, oy, ox) of N x C x Hr x Wr. */
__global__ void k_pixel_shuffle_forward(float *out, const float *in, int c, int h, int w, int r,
                                        size_t count) {
    size_t wr = (size_t)w * r, hr = (size_t)h * r;
    GRID_STRIDE(i, count) {
        size_t ox = i % wr, t = i / wr;
        size_t oy = t % hr;
        t /= hr; /* t = n * c + ch */
        size_t ch = t % c, b = t / c;
        size_t ic = ch * r * r + (oy % r) * r + ox % r;
        out[i] = in[((b * c * r * r + ic) * h + oy / r) * w + ox / r];
    }
}

/* One thread per element (n, ic, y, x) of din, N x C r^2 x H x W. */
__global__ void k_pixel_shuffle_backward(float *din, const float *dout, int c, int h, int w,
                                         int r, size_t count) {
    size_t cr2 = (size_t)c * r * r;
    GRID_STRIDE(i, count) {
        size_t x = i % w, t = i / w;
        size_t y = t % h;
        t /= h;
        size_t ic = t % cr2, b = t / cr2;
        size_t ch = ic / ((size_t)r * r), di = (ic / r) % r, dj = ic % r;
        din[i] = dout[((b * c + ch) * h * r + y * r + di) * w * r + x * r + dj];
    }
}

int pf_cuda_pixel_shuffle_forward(float *out, const float *in, int n, int c, int h, int w, int r,
                                  cudaStream_t stream, char *err, size_t errlen) {
    if (n < 0 || c < 0 || h < 0 || w < 0 || r < 1)
        return bad_arg("pf_cuda_pixel_shuffle_forward", "bad shape or factor", err, errlen);
    size_t count = (size_t)n * c * h * w * r * r;
    if (!count) return 0;
    PF_LAUNCH(k_pixel_shuffle_forward, grid_for(count), THREADS, 0, stream, out, in, c, h, w, r,
              count);
    return check_launch("k_pixel_shuffle_forward", err, errlen);
}

int pf_cuda_pixel_shuffle_backward(float *din, const float *dout, int n, int c, int h, int w,
                                   int r, cudaStream_t stream, char *err, size_t errlen) {
    if (n < 0 || c < 0 || h < 0 || w < 0 || r < 1)
        return bad_arg("pf_cuda_pixel_shuffle_backward", "bad shape or factor", err, errlen);
    size_t count = (size_t)n * c * h * w * r * r;
    if (!count) return 0;
    PF_LAUNCH(k_pixel_shuffle_backward, grid_for(count), THREADS, 0, stream, din, dout, c, h, w, r,
              count);
    return check_launch("k_pixel_shuffle_backward", err, errlen);
}

/* ---- losses ------------------------------------------------------------------------------- */

enum { LOSS_L1 = 0, LOSS_MSE = 1, LOSS_CHARBONNIER = 2 };

/* Tree sum of THREADS doubles in shared memory, fixed order; the result is in s[0]. */
__device__ void block_sum(double *s) {
    for (int half = THREADS / 2; half > 0; half /= 2) {
        __syncthreads();
        if ((int)threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
    }
    __syncthreads();
}

/* Pass 1, LOSS_BLOCKS blocks: per-element loss summed per block into partial[blockIdx.x];
   the gradient written on the way (grad may be NULL). y NULL: zeros (the gradient norm). */
__global__ void k_loss_partial(double *partial, float *grad, const float *x, const float *y,
                               size_t count, int type, float gscale, float eps) {
    __shared__ double s[THREADS];
    double acc = 0.0;
    GRID_STRIDE(i, count) {
        float d = y ? x[i] - y[i] : x[i];
        float g;
        if (type == LOSS_L1) {
            acc += fabs((double)d);
            g = d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f;
        } else if (type == LOSS_MSE) {
            acc += (double)d * (double)d;
            g = 2.0f * d;
        } else {    /* nn/loss.c: r = sqrtf(d d + eps), each operation rounded on its own */
            float r = __fsqrt_rn(__fadd_rn(__fmul_rn(d, d), eps));
            acc += (double)r;
            g = __fdiv_rn(d, r);
        }
        if (grad) grad[i] = g * gscale;
    }
    s[threadIdx.x] = acc;
    block_sum(s);
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

/* Pass 2, one block: thread t adds partials t, t + THREADS, ... in order, then a tree. */
__global__ void k_loss_final(float *loss, const double *partial, double scale) {
    __shared__ double s[THREADS];
    double acc = 0.0;
    for (int i = threadIdx.x; i < LOSS_BLOCKS; i += THREADS) acc += partial[i];
    s[threadIdx.x] = acc;
    block_sum(s);
    if (threadIdx.x == 0) *loss = (float)(s[0] * scale);
}

static int pixel_loss(const char *fn, int type, float *loss, float *grad, const float *x,
                      const float *y, size_t count, float weight, float eps, double *scratch,
                      cudaStream_t stream, char *err, size_t errlen) {
    if (!count) return bad_arg(fn, "empty input (the mean is undefined)", err, errlen);
    /* the gradient's scale as nn/loss.c computes it: weight / count in float */
    float gscale = weight / (float)count;
    PF_LAUNCH(k_loss_partial, LOSS_BLOCKS, THREADS, 0, stream, scratch, grad, x, y, count, type,
              gscale, eps);
    if (check_launch("k_loss_partial", err, errlen)) return -1;
    PF_LAUNCH(k_loss_final, 1, THREADS, 0, stream, loss, scratch, (double)weight / (double)count);
    return check_launch("k_loss_final", err, errlen);
}

int pf_cuda_l1_loss(float *loss, float *grad, const float *x, const float *y, size_t count,
                    float weight, double *scratch, cudaStream_t stream, char *err,
                    size_t errlen) {
    return pixel_loss("pf_cuda_l1_loss", LOSS_L1, loss, grad, x, y, count, weight, 0.0f,
                      scratch, stream, err, errlen);
}

int pf_cuda_mse_loss(float *loss, float *grad, const float *x, const float *y, size_t count,
                     float weight, double *scratch, cudaStream_t stream, char *err,
                     size_t errlen) {
    return pixel_loss("pf_cuda_mse_loss", LOSS_MSE, loss, grad, x, y, count, weight, 0.0f,
                      scratch, stream, err, errlen);
}

int pf_cuda_charbonnier_loss(float *loss, float *grad, const float *x, const float *y,
                             size_t count, float weight, float eps, double *scratch,
                             cudaStream_t stream, char *err, size_t errlen) {
    if (!(eps >= 0.0f))
        return bad_arg("pf_cuda_charbonnier_loss", "eps must be >= 0", err, errlen);
    return pixel_loss("pf_cuda_charbonnier_loss", LOSS_CHARBONNIER, loss, grad, x, y, count,
                      weight, eps, scratch, stream, err, errlen);
}

int pf_cuda_pixel_loss(const char *type, float *loss, float *grad, const float *x,
                       const float *y, size_t count, float weight, float eps, double *scratch,
                       cudaStream_t stream, char *err, size_t errlen) {
    if (!strcmp(type, "L1Loss"))
        return pf_cuda_l1_loss(loss, grad, x, y, count, weight, scratch, stream, err, errlen);
    if (!strcmp(type, "MSELoss"))
        return pf_cuda_mse_loss(loss, grad, x, y, count, weight, scratch, stream, err, errlen);
    if (!strcmp(type, "CharbonnierLoss"))
        return pf_cuda_charbonnier_loss(loss, grad, x, y, count, weight, eps, scratch, stream,
                                        err, errlen);
    snprintf(err, errlen, "pf_cuda_pixel_loss: unknown loss type '%s' (L1Loss, MSELoss, "
             "CharbonnierLoss)", type);
    return -1;
}

/* ---- optimiser updates ---------------------------------------------------------------------- */

/* nn/optim.c's adam_range, each operation rounded on its own (no contraction into FMA).
   decoupled: AdamW (p *= shrink first, no L2 term); write 0: the moments only. */
__global__ void k_adam(float *p, const float *grads, float *m, float *v, size_t count,
                       float step_size, float bc2_sqrt, float b1, float b2, float eps,
                       float wd, float shrink, int decoupled, int write) {
    GRID_STRIDE(i, count) {
        float g = grads[i];
        if (decoupled) {
            if (write && wd != 0.0f) p[i] = __fmul_rn(p[i], shrink);
        } else if (wd != 0.0f) {
            g = __fadd_rn(g, __fmul_rn(wd, p[i]));
        }
        float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(__fsub_rn(1.0f, b1), g));
        float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(__fsub_rn(1.0f, b2), g), g));
        m[i] = mi;
        v[i] = vi;
        if (write) {
            float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2_sqrt), eps);
            p[i] = __fsub_rn(p[i], __fmul_rn(step_size, __fdiv_rn(mi, denom)));
        }
    }
}

int pf_cuda_adam_range(float *params, const float *grads, float *m, float *v, size_t count,
                       float lr, float beta1, float beta2, float eps, float weight_decay,
                       int decoupled, int write, int64_t step, cudaStream_t stream, char *err,
                       size_t errlen) {
    if (step < 1) return bad_arg("pf_cuda_adam_range", "step must be >= 1", err, errlen);
    if (!count) return 0;
    double bc1 = 1.0 - pow((double)beta1, (double)step);
    double bc2 = 1.0 - pow((double)beta2, (double)step);
    float step_size = (float)((double)lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    float shrink = (float)(1.0 - (double)lr * (double)weight_decay);
    PF_LAUNCH(k_adam, grid_for(count), THREADS, 0, stream, params, grads, m, v, count, step_size,
              bc2_sqrt, beta1, beta2, eps, weight_decay, shrink, decoupled, write);
    return check_launch("k_adam", err, errlen);
}

int pf_cuda_adam_step(float *params, const float *grads, float *m, float *v, size_t count,
                      float lr, float beta1, float beta2, float eps, float weight_decay,
                      int64_t step, cudaStream_t stream, char *err, size_t errlen) {
    return pf_cuda_adam_range(params, grads, m, v, count, lr, beta1, beta2, eps, weight_decay,
                              0, 1, step, stream, err, errlen);
}

/* nn/optim.c's sgd_range; damp = 1 - dampening (computed in float on the host, as there). */
__global__ void k_sgd(float *p, const float *grads, float *b, size_t count, float lr,
                      float mom, float damp, float wd, int nesterov, int first, int write) {
    GRID_STRIDE(i, count) {
        float g = grads[i];
        if (wd != 0.0f) g = __fadd_rn(g, __fmul_rn(wd, p[i]));
        if (b) {
            float bi = first ? g : __fadd_rn(__fmul_rn(mom, b[i]), __fmul_rn(damp, g));
            b[i] = bi;
            g = nesterov ? __fadd_rn(g, __fmul_rn(mom, bi)) : bi;
        }
        if (write) p[i] = __fsub_rn(p[i], __fmul_rn(lr, g));
    }
}

int pf_cuda_sgd_range(float *params, const float *grads, float *buf, size_t count, float lr,
                      float momentum, float dampening, int nesterov, float weight_decay,
                      int first, int write, cudaStream_t stream, char *err, size_t errlen) {
    if (!count) return 0;
    PF_LAUNCH(k_sgd, grid_for(count), THREADS, 0, stream, params, grads, buf, count, lr, momentum,
              1.0f - dampening, weight_decay, nesterov, first, write);
    return check_launch("k_sgd", err, errlen);
}

/* BasicSR model_ema: ema = ema * decay + (1 - decay) * p, (1 - decay) in double as there. */
__global__ void k_ema(float *e, const float *p, size_t count, float d, float a) {
    GRID_STRIDE(i, count) e[i] = __fadd_rn(__fmul_rn(e[i], d), __fmul_rn(a, p[i]));
}

int pf_cuda_ema_update(float *ema, const float *params, size_t count, float decay,
                       cudaStream_t stream, char *err, size_t errlen) {
    if (!count) return 0;
    PF_LAUNCH(k_ema, grid_for(count), THREADS, 0, stream, ema, params, count, decay,
              (float)(1.0 - (double)decay));
    return check_launch("k_ema", err, errlen);
}

/* Clipping pass 2, one block: the norm from the partial sums of squares (as k_loss_final). */
__global__ void k_norm_final(float *norm, const double *partial) {
    __shared__ double s[THREADS];
    double acc = 0.0;
    for (int i = threadIdx.x; i < LOSS_BLOCKS; i += THREADS) acc += partial[i];
    s[threadIdx.x] = acc;
    block_sum(s);
    if (threadIdx.x == 0) *norm = (float)sqrt(s[0]);
}

/* Pass 3: g *= max_norm / (norm + 1e-6) when that is below 1 (float, as torch's tensors). */
__global__ void k_clip_scale(float *g, size_t count, const float *norm, float max_norm) {
    float coef = __fdiv_rn(max_norm, __fadd_rn(*norm, 1e-6f));
    if (coef < 1.0f) GRID_STRIDE(i, count) g[i] = __fmul_rn(g[i], coef);
}

int pf_cuda_clip_grad_norm(float *grads, size_t count, float max_norm, double *scratch,
                           float *norm, cudaStream_t stream, char *err, size_t errlen) {
    if (!count) {   /* the norm of nothing is 0, as pf_clip_grad_norm says */
        cudaError_t e = cudaMemsetAsync(norm, 0, sizeof(float), stream);
        if (e == cudaSuccess) return 0;
        snprintf(err, errlen, "pf_cuda_clip_grad_norm: cudaMemsetAsync: %s", cudaGetErrorString(e));
        return -1;
    }
    PF_LAUNCH(k_loss_partial, LOSS_BLOCKS, THREADS, 0, stream, scratch, NULL, grads, NULL, count,
              LOSS_MSE, 0.0f, 0.0f);
    if (check_launch("k_loss_partial (gradient norm)", err, errlen)) return -1;
    PF_LAUNCH(k_norm_final, 1, THREADS, 0, stream, norm, scratch);
    if (check_launch("k_norm_final", err, errlen)) return -1;
    PF_LAUNCH(k_clip_scale, grid_for(count), THREADS, 0, stream, grads, count, norm, max_norm);
    return check_launch("k_clip_scale", err, errlen);
}

/* ---- bf16 --------------------------------------------------------------------------------- */

__global__ void k_f32_to_bf16(uint16_t *dst, const float *src, size_t count) {
    GRID_STRIDE(i, count) dst[i] = __bfloat16_as_ushort(__float2bfloat16_rn(src[i]));
}

int pf_cuda_f32_to_bf16(uint16_t *dst, const float *src, size_t count, cudaStream_t stream,
                        char *err, size_t errlen) {
    if (!count) return 0;
    PF_LAUNCH(k_f32_to_bf16, grid_for(count), THREADS, 0, stream, dst, src, count);
    return check_launch("k_f32_to_bf16", err, errlen);
}

__global__ void k_bf16_to_f32(float *dst, const uint16_t *src, size_t count, int acc) {
    GRID_STRIDE(i, count) {
        float v = __bfloat162float(__ushort_as_bfloat16(src[i]));
        dst[i] = acc ? dst[i] + v : v;
    }
}

int pf_cuda_bf16_to_f32(float *dst, const uint16_t *src, size_t count, int acc,
                        cudaStream_t stream, char *err, size_t errlen) {
    if (!count) return 0;
    PF_LAUNCH(k_bf16_to_f32, grid_for(count), THREADS, 0, stream, dst, src, count, acc);
    return check_launch("k_bf16_to_f32", err, errlen);
}

/* ---- graph-network ops -------------------------------------------------------------------- */

/* The graph ops below follow the CPU executor's kernels (nn/cpu/ops.c, and nn/bicubic.c)
   operation for operation on plain NCHW, so that the float results agree with the CPU's up to
   the device's FMA contraction and its tanhf / expf. */

static int negative(int a, int b, int c, int d) { return a < 0 || b < 0 || c < 0 || d < 0; }

static int null_tensor(const char *fn, char *err, size_t errlen) {
    return bad_arg(fn, "NULL tensor", err, errlen);
}

/* Blocks for a kernel with one block per result (grid-stride over results past MAX_BLOCKS). */
static unsigned blocks_for(size_t results) {
    return (unsigned)(results < MAX_BLOCKS ? results : MAX_BLOCKS);
}

enum { ACT_LEAKY = 0, ACT_TANH = 1, ACT_SIGMOID = 2 };

/* y = act(x): LeakyReLU of slope alpha (0: ReLU), tanh or the logistic sigmoid. */
__global__ void k_act_forward(float *y, const float *x, size_t count, int act, float alpha) {
    GRID_STRIDE(i, count) {
        float v = x[i];
        if (act == ACT_LEAKY) y[i] = v > 0.0f ? v : alpha * v;
        else if (act == ACT_TANH) y[i] = tanhf(v);
        else y[i] = 1.0f / (1.0f + expf(-v));
    }
}

/* dx = (acc ? dx : 0) + dy act'(x), the derivative written with the forward's output y. */
__global__ void k_act_backward(float *dx, const float *dy, const float *y, size_t count,
                               int act, float alpha, int acc) {
    GRID_STRIDE(i, count) {
        float v = y[i], d;
        if (act == ACT_LEAKY) d = v > 0.0f ? dy[i] : alpha * dy[i];
        else d = dy[i] * (act == ACT_TANH ? 1.0f - v * v : v * (1.0f - v));
        dx[i] = acc ? dx[i] + d : d;
    }
}

static int act_forward(const char *fn, int act, float alpha, float *y, const float *x,
                       size_t count, cudaStream_t stream, char *err, size_t errlen) {
    if (!(alpha >= 0.0f)) return bad_arg(fn, "negative or NaN slope", err, errlen);
    if (!count) return 0;
    if (!y || !x) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_act_forward, grid_for(count), THREADS, 0, stream, y, x, count, act, alpha);
    return check_launch("k_act_forward", err, errlen);
}

static int act_backward(const char *fn, int act, float alpha, float *dx, const float *dy,
                        const float *y, size_t count, int acc, cudaStream_t stream, char *err,
                        size_t errlen) {
    if (!(alpha >= 0.0f)) return bad_arg(fn, "negative or NaN slope", err, errlen);
    if (!count) return 0;
    if (!dx || !dy || !y) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_act_backward, grid_for(count), THREADS, 0, stream, dx, dy, y, count, act, alpha,
              acc);
    return check_launch("k_act_backward", err, errlen);
}

int pf_cuda_leaky_relu_forward(float *y, const float *x, float alpha, size_t count,
                               cudaStream_t stream, char *err, size_t errlen) {
    return act_forward("pf_cuda_leaky_relu_forward", ACT_LEAKY, alpha, y, x, count, stream, err,
                       errlen);
}

int pf_cuda_leaky_relu_backward(float *dx, const float *dy, const float *y, float alpha,
                                size_t count, cudaStream_t stream, char *err, size_t errlen) {
    return act_backward("pf_cuda_leaky_relu_backward", ACT_LEAKY, alpha, dx, dy, y, count, 0,
                        stream, err, errlen);
}

int pf_cuda_relu_node_backward(float *dx, const float *dy, const float *y, float alpha,
                               size_t count, int acc, cudaStream_t stream, char *err,
                               size_t errlen) {
    return act_backward("pf_cuda_relu_node_backward", ACT_LEAKY, alpha, dx, dy, y, count, acc,
                        stream, err, errlen);
}

int pf_cuda_tanh_forward(float *y, const float *x, size_t count, cudaStream_t stream, char *err,
                         size_t errlen) {
    return act_forward("pf_cuda_tanh_forward", ACT_TANH, 0.0f, y, x, count, stream, err, errlen);
}

int pf_cuda_sigmoid_forward(float *y, const float *x, size_t count, cudaStream_t stream,
                            char *err, size_t errlen) {
    return act_forward("pf_cuda_sigmoid_forward", ACT_SIGMOID, 0.0f, y, x, count, stream, err,
                       errlen);
}

int pf_cuda_tanh_backward(float *dx, const float *dy, const float *y, size_t count, int acc,
                          cudaStream_t stream, char *err, size_t errlen) {
    return act_backward("pf_cuda_tanh_backward", ACT_TANH, 0.0f, dx, dy, y, count, acc, stream,
                        err, errlen);
}

int pf_cuda_sigmoid_backward(float *dx, const float *dy, const float *y, size_t count, int acc,
                             cudaStream_t stream, char *err, size_t errlen) {
    return act_backward("pf_cuda_sigmoid_backward", ACT_SIGMOID, 0.0f, dx, dy, y, count, acc,
                        stream, err, errlen);
}

/* ---- per-plane reductions ---- */

enum { RED_SUM = 0, RED_DOT = 1, RED_PRELU = 2 };

/* One block per result o < nout (grid-stride over results): the sum over planes o, o + stride,
   ... (np of them, hw floats each) of a (RED_SUM), a b (RED_DOT) or a b where b <= 0
   (RED_PRELU: dy x where x is not positive), in double. Thread t adds elements t, t + THREADS,
   ... in order, then block_sum's fixed tree: no atomics, the same bits on every run.
   out[o] = (acc ? out[o] : 0) + scale * (float)(sum / div). */
__global__ void k_plane_sum(float *out, const float *a, const float *b, size_t nout,
                            size_t stride, int np, size_t hw, int mode, double div, float scale,
                            int acc) {
    __shared__ double s[THREADS];
    size_t len = (size_t)np * hw;
    for (size_t o = blockIdx.x; o < nout; o += gridDim.x) {
        double sum = 0.0;
        for (size_t j = threadIdx.x; j < len; j += THREADS) {
            size_t e = (j / hw * stride + o) * hw + j % hw;
            if (mode == RED_SUM) sum += a[e];
            else if (mode == RED_DOT || !(b[e] > 0.0f)) sum += (double)a[e] * b[e];
        }
        s[threadIdx.x] = sum;
        /* block_sum ends with a barrier; after it only thread 0 touches s[0], so the next
           result's writes cannot race its read */
        block_sum(s);
        if (threadIdx.x == 0) {
            float v = scale * (float)(s[0] / div);
            out[o] = acc ? out[o] + v : v;
        }
    }
}

/* ---- PReLU ---- */

/* y = x > 0 ? x : alpha[c] x; one thread per element of N x C x H x W. */
__global__ void k_prelu_forward(float *y, const float *x, const float *alpha, int c, size_t hw,
                                size_t count) {
    GRID_STRIDE(i, count) {
        float v = x[i];
        y[i] = v > 0.0f ? v : alpha[(i / hw) % c] * v;
    }
}

/* dx = (acc ? dx : 0) + (x > 0 ? dy : alpha[c] dy). */
__global__ void k_prelu_backward_dx(float *dx, const float *dy, const float *x,
                                    const float *alpha, int c, size_t hw, int acc,
                                    size_t count) {
    GRID_STRIDE(i, count) {
        float d = x[i] > 0.0f ? dy[i] : alpha[(i / hw) % c] * dy[i];
        dx[i] = acc ? dx[i] + d : d;
    }
}

int pf_cuda_prelu_forward(float *y, const float *x, const float *alpha, int n, int c, int h,
                          int w, cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_prelu_forward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw;
    if (!count) return 0;
    if (!y || !x || !alpha) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_prelu_forward, grid_for(count), THREADS, 0, stream, y, x, alpha, c, hw, count);
    return check_launch("k_prelu_forward", err, errlen);
}

int pf_cuda_prelu_backward(float *dx, float *dalpha, const float *dy, const float *x,
                           const float *alpha, int n, int c, int h, int w, int acc,
                           cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_prelu_backward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw;
    if (!c) return 0;
    /* dalpha is written even when there are no elements (a sum over nothing is 0) */
    if (!dalpha || (count && (!dy || !x || (dx && !alpha)))) return null_tensor(fn, err, errlen);
    if (dx && count) {
        PF_LAUNCH(k_prelu_backward_dx, grid_for(count), THREADS, 0, stream, dx, dy, x, alpha, c, hw,
                  acc, count);
        if (check_launch("k_prelu_backward_dx", err, errlen)) return -1;
    }
    PF_LAUNCH(k_plane_sum, blocks_for((size_t)c), THREADS, 0, stream, dalpha, dy, x, (size_t)c,
              (size_t)c, n, hw, RED_PRELU, 1.0, 1.0f, 0);
    return check_launch("k_plane_sum (prelu dalpha)", err, errlen);
}

/* ---- global average pool and channel attention ---- */

int pf_cuda_gap_forward(float *y, const float *x, int n, int c, int h, int w,
                        cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_gap_forward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t planes = (size_t)n * c, hw = (size_t)h * w;
    if (!planes) return 0;
    if (!hw) return bad_arg(fn, "empty plane (the mean is undefined)", err, errlen);
    if (!y || !x) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_plane_sum, blocks_for(planes), THREADS, 0, stream, y, x, NULL, planes, planes, 1,
              hw, RED_SUM, (double)hw, 1.0f, 0);
    return check_launch("k_plane_sum (gap)", err, errlen);
}

/* dx = (acc ? dx : 0) + dy[n][c] inv, inv = 1 / (h w) in float as nn/cpu/ops.c. */
__global__ void k_gap_backward(float *dx, const float *dy, size_t hw, float inv, int acc,
                               size_t count) {
    GRID_STRIDE(i, count) {
        float d = dy[i / hw] * inv;
        dx[i] = acc ? dx[i] + d : d;
    }
}

int pf_cuda_gap_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc,
                         cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_gap_backward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw;
    if (!count) return 0;
    if (!dx || !dy) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_gap_backward, grid_for(count), THREADS, 0, stream, dx, dy, hw, 1.0f / (float)hw,
              acc, count);
    return check_launch("k_gap_backward", err, errlen);
}

/* y = sc (x s[n][c]) [+ res], in nn/cpu/ops.c's order. */
__global__ void k_mul_ch_forward(float *y, const float *x, const float *s, const float *res,
                                 float sc, size_t hw, size_t count) {
    GRID_STRIDE(i, count) {
        float v = sc * (x[i] * s[i / hw]);
        y[i] = res ? v + res[i] : v;
    }
}

/* dx = (acc ? dx : 0) + sc dy s[n][c]. */
__global__ void k_mul_ch_backward_dx(float *dx, const float *dy, const float *s, float sc,
                                     size_t hw, int acc, size_t count) {
    GRID_STRIDE(i, count) {
        float d = sc * dy[i] * s[i / hw];
        dx[i] = acc ? dx[i] + d : d;
    }
}

int pf_cuda_mul_ch_forward(float *y, const float *x, const float *s, const float *res, float sc,
                           int n, int c, int h, int w, cudaStream_t stream, char *err,
                           size_t errlen) {
    const char *fn = "pf_cuda_mul_ch_forward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw;
    if (!count) return 0;
    if (!y || !x || !s) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_mul_ch_forward, grid_for(count), THREADS, 0, stream, y, x, s, res, sc, hw, count);
    return check_launch("k_mul_ch_forward", err, errlen);
}

int pf_cuda_mul_ch_backward(float *dx, float *ds, const float *dy, const float *x,
                            const float *s, float sc, int n, int c, int h, int w, int acc_x,
                            int acc_s, cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_mul_ch_backward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t planes = (size_t)n * c, hw = (size_t)h * w, count = planes * hw;
    if (!planes) return 0;
    if (count && (!dy || (dx && !s) || (ds && !x))) return null_tensor(fn, err, errlen);
    if (dx && count) {
        PF_LAUNCH(k_mul_ch_backward_dx, grid_for(count), THREADS, 0, stream, dx, dy, s, sc, hw,
                  acc_x, count);
        if (check_launch("k_mul_ch_backward_dx", err, errlen)) return -1;
    }
    if (!ds) return 0;
    /* written even for empty planes: (acc_s ? ds : 0) + 0 */
    PF_LAUNCH(k_plane_sum, blocks_for(planes), THREADS, 0, stream, ds, dy, x, planes, planes, 1, hw,
              RED_DOT, 1.0, sc, acc_s);
    return check_launch("k_plane_sum (mul_ch ds)", err, errlen);
}

/* ---- concatenation, nearest upsampling ---- */

/* One thread per copied element (n, k, p) of n x cc x hw. */
__global__ void k_copy_channels(float *dst, int dst_c, int dst_off, const float *src, int src_c,
                                int src_off, int cc, size_t hw, int acc, size_t count) {
    GRID_STRIDE(i, count) {
        size_t p = i % hw, t = i / hw;
        size_t k = t % cc, b = t / cc;
        float v = src[(b * src_c + src_off + k) * hw + p];
        float *d = &dst[(b * dst_c + dst_off + k) * hw + p];
        *d = acc ? *d + v : v;
    }
}

int pf_cuda_copy_channels(float *dst, int dst_c, int dst_off, const float *src, int src_c,
                          int src_off, int cc, int n, int hw, int acc, cudaStream_t stream,
                          char *err, size_t errlen) {
    const char *fn = "pf_cuda_copy_channels";
    if (negative(n, hw, cc, 0) || negative(dst_c, dst_off, src_c, src_off))
        return bad_arg(fn, "negative dimension or offset", err, errlen);
    if (dst_off > dst_c - cc || src_off > src_c - cc)
        return bad_arg(fn, "channel slice out of range", err, errlen);
    size_t count = (size_t)n * cc * hw;
    if (!count) return 0;
    if (!dst || !src) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_copy_channels, grid_for(count), THREADS, 0, stream, dst, dst_c, dst_off, src, src_c,
              src_off, cc, (size_t)hw, acc, count);
    return check_launch("k_copy_channels", err, errlen);
}

/* One thread per output element (plane, Y, X) of N C x hr x wr: y = x[Y / r][X / r]. */
__global__ void k_nearest_forward(float *y, const float *x, int h, int w, int r, size_t count) {
    size_t W = (size_t)w * r, H = (size_t)h * r;
    GRID_STRIDE(i, count) {
        size_t X = i % W, t = i / W;
        size_t Y = t % H, p = t / H;
        y[i] = x[(p * h + Y / r) * w + X / r];
    }
}

/* One thread per input element (plane, y, x): the r x r block of dy above it, summed in float
   row by row as nn/cpu/ops.c. */
__global__ void k_nearest_backward(float *dx, const float *dy, int h, int w, int r, int acc,
                                   size_t count) {
    size_t W = (size_t)w * r;
    GRID_STRIDE(i, count) {
        size_t x = i % w, t = i / w;
        size_t y = t % h, p = t / h;
        const float *src = dy + (p * h + y) * r * W + x * r;
        float sum = 0.0f;
        for (int a = 0; a < r; a++)
            for (int b = 0; b < r; b++) sum += src[a * W + b];
        dx[i] = acc ? dx[i] + sum : sum;
    }
}

int pf_cuda_nearest_forward(float *y, const float *x, int n, int c, int h, int w, int r,
                            cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_nearest_forward";
    if (negative(n, c, h, w) || r < 1) return bad_arg(fn, "bad shape or factor", err, errlen);
    size_t count = (size_t)n * c * h * w * r * r;
    if (!count) return 0;
    if (!y || !x) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_nearest_forward, grid_for(count), THREADS, 0, stream, y, x, h, w, r, count);
    return check_launch("k_nearest_forward", err, errlen);
}

int pf_cuda_nearest_backward(float *dx, const float *dy, int n, int c, int h, int w, int r,
                             int acc, cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_nearest_backward";
    if (negative(n, c, h, w) || r < 1) return bad_arg(fn, "bad shape or factor", err, errlen);
    size_t count = (size_t)n * c * h * w;
    if (!count) return 0;
    if (!dx || !dy) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_nearest_backward, grid_for(count), THREADS, 0, stream, dx, dy, h, w, r, acc, count);
    return check_launch("k_nearest_backward", err, errlen);
}

/* ---- upsampling the uint8 batch: bilinear (MSRResNet's skip), bicubic (SRCNN) ---- */

/* Output element i of N x 3 x (h r) x (w r) as (sample, channel, oy, ox). */
__device__ void upsample_index(size_t i, int h, int w, int r, size_t *b, int *ch, int *oy,
                               int *ox) {
    size_t W = (size_t)w * r, H = (size_t)h * r;
    *ox = (int)(i % W);
    size_t t = i / W;
    *oy = (int)(t % H);
    t /= H;
    *ch = (int)(t % 3);
    *b = t / 3;
}

/* ATen's align_corners=False source of output o along an axis of `size` input pixels: taps i0,
   i1 (the far one clamped to the last pixel) with weights 1 - l1, l1; nn/cpu/ops.c's floats. */
__device__ void bilinear_taps(int o, float inv, int size, int *i0, int *i1, float *l1) {
    float s = ((float)o + 0.5f) * inv - 0.5f;
    if (s < 0) s = 0;
    *i0 = (int)s;
    *i1 = *i0 + (*i0 < size - 1);
    *l1 = s - (float)*i0;
}

/* One thread per output element; lq is n x h x w x 3 NHWC. */
__global__ void k_bilinear_u8(float *y, const uint8_t *lq, int h, int w, int r, float inv,
                              size_t count) {
    GRID_STRIDE(i, count) {
        size_t b;
        int ch, oy, ox, y0, y1, x0, x1;
        float ly1, lx1;
        upsample_index(i, h, w, r, &b, &ch, &oy, &ox);
        bilinear_taps(oy, inv, h, &y0, &y1, &ly1);
        bilinear_taps(ox, inv, w, &x0, &x1, &lx1);
        float ly0 = 1.0f - ly1, lx0 = 1.0f - lx1;
        const uint8_t *img = lq + b * h * w * 3 + ch;
#define PX(yy, xx) ((float)img[((size_t)(yy) * w + (xx)) * 3] / 255.0f)
        y[i] = ly0 * (lx0 * PX(y0, x0) + lx1 * PX(y0, x1)) +
               ly1 * (lx0 * PX(y1, x0) + lx1 * PX(y1, x1));
#undef PX
    }
}

/* One thread per output element; nn/bicubic.c's loop: 4 x 4 taps clamped to the image, a row's
   four taps summed first, each pixel / 255 on its own. */
__global__ void k_bicubic_u8(float *y, const uint8_t *lq, int h, int w, int r, float scale,
                             size_t count) {
    GRID_STRIDE(i, count) {
        size_t b;
        int ch, oy, ox;
        upsample_index(i, h, w, r, &b, &ch, &oy, &ox);
        float ry = scale * ((float)oy + 0.5f) - 0.5f, rx = scale * ((float)ox + 0.5f) - 0.5f;
        int iy = (int)floorf(ry), ix = (int)floorf(rx);
        float cy[4], cx[4];
        pf_cubic_coeffs(cy, ry - (float)iy);
        pf_cubic_coeffs(cx, rx - (float)ix);
        const uint8_t *img = lq + b * h * w * 3 + ch;
        float acc = 0.0f;
#pragma unroll
        for (int ky = 0; ky < 4; ky++) {
            int yy = min(max(iy - 1 + ky, 0), h - 1);
            float racc = 0.0f;
#pragma unroll
            for (int kx = 0; kx < 4; kx++) {
                int xx = min(max(ix - 1 + kx, 0), w - 1);
                racc += cx[kx] * ((float)img[((size_t)yy * w + xx) * 3] / 255.0f);
            }
            acc += cy[ky] * racc;
        }
        y[i] = acc;
    }
}

static int upsample_u8(const char *fn, int bicubic, float *y, const uint8_t *lq, int n, int h,
                       int w, int r, cudaStream_t stream, char *err, size_t errlen) {
    if (negative(n, h, w, 0) || r < 1) return bad_arg(fn, "bad shape or factor", err, errlen);
    size_t count = (size_t)n * 3 * h * w * r * r;
    if (!count) return 0;
    if (!y || !lq) return null_tensor(fn, err, errlen);
    float inv = 1.0f / (float)r;
    if (bicubic)
        PF_LAUNCH(k_bicubic_u8, grid_for(count), THREADS, 0, stream, y, lq, h, w, r, inv, count);
    else
        PF_LAUNCH(k_bilinear_u8, grid_for(count), THREADS, 0, stream, y, lq, h, w, r, inv, count);
    return check_launch(bicubic ? "k_bicubic_u8" : "k_bilinear_u8", err, errlen);
}

int pf_cuda_bilinear_u8(float *y, const uint8_t *lq, int n, int h, int w, int r,
                        cudaStream_t stream, char *err, size_t errlen) {
    return upsample_u8("pf_cuda_bilinear_u8", 0, y, lq, n, h, w, r, stream, err, errlen);
}

int pf_cuda_bicubic_u8(float *y, const uint8_t *lq, int n, int h, int w, int r,
                       cudaStream_t stream, char *err, size_t errlen) {
    return upsample_u8("pf_cuda_bicubic_u8", 1, y, lq, n, h, w, r, stream, err, errlen);
}

/* ---- re-indexing ---- */

/* dst[i] = the sum of src over idx[i per .. i per + per) (negative: none), in double in j
   order, rounded once (nn/zoo.c sums the bias gradient in double too). */
__global__ void k_gather_sum(float *dst, const float *src, const int *idx, size_t count,
                             int per) {
    GRID_STRIDE(i, count) {
        const int *ix = idx + i * per;
        double sum = 0.0;
        for (int j = 0; j < per; j++)
            if (ix[j] >= 0) sum += src[ix[j]];
        dst[i] = (float)sum;
    }
}

int pf_cuda_gather_sum(float *dst, const float *src, const int *idx, size_t count, int per,
                       cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_gather_sum";
    if (per < 1) return bad_arg(fn, "per must be >= 1", err, errlen);
    if (!count) return 0;
    if (!dst || !src || !idx) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_gather_sum, grid_for(count), THREADS, 0, stream, dst, src, idx, count, per);
    return check_launch("k_gather_sum", err, errlen);
}

/* ---- video ops (SPyNet / BasicVSR; nn/video_layers.c is the CPU counterpart) ----

   Source positions are computed with explicitly rounded float operations (__fmul_rn, ...,
   never contracted into an FMA), in the CPU code's order, so a position that lands on a whole
   pixel there lands on it here too and both pick the same corners. */

typedef struct {
    float v[PF_CUDA_MAX_AFFINE_CHANNELS];
} ch_vec;

/* y = (acc ? y : 0) + (x - sub[c]) * mul[c] */
__global__ void k_affine_ch(float *y, const float *x, size_t count, int c, size_t hw,
                            ch_vec sub, ch_vec mul, int acc) {
    GRID_STRIDE(i, count) {
        int k = (int)((i / hw) % c);
        float v = __fmul_rn(__fsub_rn(x[i], sub.v[k]), mul.v[k]);
        y[i] = acc ? __fadd_rn(y[i], v) : v;
    }
}

int pf_cuda_affine_ch(float *y, const float *x, int n, int c, int h, int w, const float *sub,
                      const float *mul, int acc, cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_affine_ch";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    if (c > PF_CUDA_MAX_AFFINE_CHANNELS)
        return bad_arg(fn, "more channels than PF_CUDA_MAX_AFFINE_CHANNELS", err, errlen);
    if (!mul) return bad_arg(fn, "mul is NULL", err, errlen);
    ch_vec sv = {{0}}, mv = {{0}};
    for (int i = 0; i < c; i++) {
        sv.v[i] = sub ? sub[i] : 0.0f;
        mv.v[i] = mul[i];
    }
    size_t count = (size_t)n * c * h * w;
    if (!count) return 0;
    if (!y || !x) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_affine_ch, grid_for(count), THREADS, 0, stream, y, x, count, c, (size_t)h * w, sv,
              mv, acc);
    return check_launch("k_affine_ch", err, errlen);
}

/* Source index and weights of output index d along an axis of in -> out (ATen
   area_pixel_compute_source_index, linear; nn/video_layers.c lin_src). */
__device__ void lin_src(int d, int in, int out, int ac, int *i0, int *i1, float *l0,
                        float *l1) {
    float src;
    if (ac)
        src = out > 1 ? __fmul_rn((float)d, __fdiv_rn((float)(in - 1), (float)(out - 1))) : 0.0f;
    else {
        src = __fsub_rn(__fmul_rn(__fdiv_rn((float)in, (float)out), __fadd_rn((float)d, 0.5f)),
                        0.5f);
        if (src < 0) src = 0;
    }
    int i = (int)src;
    if (i > in - 1) i = in - 1;
    *i0 = i;
    *i1 = i < in - 1 ? i + 1 : i;
    *l1 = __fsub_rn(src, (float)i);
    *l0 = __fsub_rn(1.0f, *l1);
}

/* One thread per output element (plane, Y, X). */
__global__ void k_resize_forward(float *y, const float *x, int c, int h, int w, int H, int W,
                                 int ac, ch_vec mult, int use_mult, size_t count) {
    GRID_STRIDE(i, count) {
        int X = (int)(i % W);
        size_t t = i / W;
        int Y = (int)(t % H);
        size_t p = t / H;
        int y0, y1, x0, x1;
        float ly0, ly1, lx0, lx1;
        lin_src(Y, h, H, ac, &y0, &y1, &ly0, &ly1);
        lin_src(X, w, W, ac, &x0, &x1, &lx0, &lx1);
        const float *s = x + p * h * w;
        float top = __fadd_rn(__fmul_rn(lx0, s[(size_t)y0 * w + x0]),
                              __fmul_rn(lx1, s[(size_t)y0 * w + x1]));
        float bot = __fadd_rn(__fmul_rn(lx0, s[(size_t)y1 * w + x0]),
                              __fmul_rn(lx1, s[(size_t)y1 * w + x1]));
        float v = __fadd_rn(__fmul_rn(ly0, top), __fmul_rn(ly1, bot));
        y[i] = use_mult ? __fmul_rn(v, mult.v[(int)(p % c)]) : v;
    }
}

/* The output indices along an axis (in -> out) whose taps may reach input index i: a
   conservative window around i / slope, clamped (every output when in is 1). */
__device__ void taps_window(int i, int in, int out, int ac, int *lo, int *hi) {
    double slope = ac ? (out > 1 ? (double)(in - 1) / (out - 1) : 0.0) : (double)in / out;
    if (slope <= 0.0) {
        *lo = 0;
        *hi = out - 1;
        return;
    }
    double a = floor((i - 1) / slope) - 2, b = ceil((i + 1) / slope) + 2;
    *lo = a < 0 ? 0 : (int)a;
    *hi = b > out - 1 ? out - 1 : (int)b;
}

/* The weight output index d gives input index i along an axis (0 if none; both taps when the
   far one is clamped onto the near). */
__device__ float tap_weight(int d, int i, int in, int out, int ac) {
    int i0, i1;
    float l0, l1;
    lin_src(d, in, out, ac, &i0, &i1, &l0, &l1);
    return (i0 == i ? l0 : 0.0f) + (i1 == i ? l1 : 0.0f);
}

/* One thread per input element (plane, y, x): the output pixels reaching it, in Y then X
   order, summed in double. */
__global__ void k_resize_backward(float *dx, const float *dy, int c, int h, int w, int H,
                                  int W, int ac, ch_vec mult, int use_mult, int acc,
                                  size_t count) {
    GRID_STRIDE(i, count) {
        int xx = (int)(i % w);
        size_t t = i / w;
        int yy = (int)(t % h);
        size_t p = t / h;
        int ylo, yhi, xlo, xhi;
        taps_window(yy, h, H, ac, &ylo, &yhi);
        taps_window(xx, w, W, ac, &xlo, &xhi);
        const float *g = dy + p * H * W;
        double sum = 0.0;
        for (int Y = ylo; Y <= yhi; Y++) {
            float wy = tap_weight(Y, yy, h, H, ac);
            if (wy == 0.0f) continue;
            for (int X = xlo; X <= xhi; X++) {
                float wx = tap_weight(X, xx, w, W, ac);
                if (wx != 0.0f) sum += (double)wy * wx * g[(size_t)Y * W + X];
            }
        }
        float v = (float)(use_mult ? sum * mult.v[(int)(p % c)] : sum);
        dx[i] = acc ? dx[i] + v : v;
    }
}

static int resize_args(const char *fn, int n, int c, int h, int w, int H, int W,
                       const float *mult, ch_vec *mv, char *err, size_t errlen) {
    if (negative(n, c, h, w) || H < 1 || W < 1 || ((size_t)n * c > 0 && (h < 1 || w < 1)))
        return bad_arg(fn, "bad shape", err, errlen);
    if (mult && c > PF_CUDA_MAX_AFFINE_CHANNELS)
        return bad_arg(fn, "more channels than PF_CUDA_MAX_AFFINE_CHANNELS", err, errlen);
    memset(mv, 0, sizeof *mv);
    for (int i = 0; mult && i < c; i++) mv->v[i] = mult[i];
    return 0;
}

int pf_cuda_resize_bilinear_forward(float *y, const float *x, int n, int c, int h, int w, int H,
                                    int W, int ac, const float *mult, cudaStream_t stream,
                                    char *err, size_t errlen) {
    const char *fn = "pf_cuda_resize_bilinear_forward";
    ch_vec mv;
    if (resize_args(fn, n, c, h, w, H, W, mult, &mv, err, errlen)) return -1;
    size_t count = (size_t)n * c * H * W;
    if (!count) return 0;
    if (!y || !x) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_resize_forward, grid_for(count), THREADS, 0, stream, y, x, c, h, w, H, W, ac, mv,
              mult != NULL, count);
    return check_launch("k_resize_forward", err, errlen);
}

int pf_cuda_resize_bilinear_backward(float *dx, const float *dy, int n, int c, int h, int w,
                                     int H, int W, int ac, const float *mult, int acc,
                                     cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_resize_bilinear_backward";
    ch_vec mv;
    if (resize_args(fn, n, c, h, w, H, W, mult, &mv, err, errlen)) return -1;
    size_t count = (size_t)n * c * h * w;
    if (!count) return 0;
    if (!dx || !dy) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_resize_backward, grid_for(count), THREADS, 0, stream, dx, dy, c, h, w, H, W, ac, mv,
              mult != NULL, acc, count);
    return check_launch("k_resize_backward", err, errlen);
}

/* 2x2 pooling of N C x h x w planes (avgpool2, maxpool2). The top-left input pixel of
   output element i (plane, Y, X) of the pooled N C x h/2 x w/2. */
__device__ const float *pool2_window(const float *x, size_t i, int h, int w) {
    int H = h / 2, W = w / 2;
    int X = (int)(i % W);
    size_t t = i / W;
    int Y = (int)(t % H);
    size_t p = t / H;
    return x + (p * h + 2 * (size_t)Y) * w + 2 * (size_t)X;
}

/* Input element i (plane p, row yy, column xx) of N C x h x w planes: the index of its
   window's element in the pooled N C x h/2 x w/2 (its gradient, backward). */
__device__ size_t pool2_output_of(size_t i, int h, int w, size_t *p, int *yy, int *xx) {
    *xx = (int)(i % w);
    size_t t = i / w;
    *yy = (int)(t % h);
    *p = t / h;
    return (*p * (h / 2) + *yy / 2) * (size_t)(w / 2) + *xx / 2;
}

/* The wrappers' checks, in this order: -1 with err for a negative size or an odd h or w; 1
   when there is nothing to do; -1 with err for a NULL tensor (tensors_given 0); else 0 with
   *count the elements a thread each: the pooled output's (pooled = 1, forward) or the
   input's (backward). */
static int pool2_check(const char *fn, int n, int c, int h, int w, int pooled, int tensors_given,
                       size_t *count, char *err, size_t errlen) {
    if (negative(n, c, h, w) || h % 2 || w % 2)
        return bad_arg(fn, "bad shape (h and w must be even)", err, errlen);
    *count = pooled ? (size_t)n * c * (h / 2) * (w / 2) : (size_t)n * c * h * w;
    if (!*count) return 1;
    return tensors_given ? 0 : null_tensor(fn, err, errlen);
}

/* One thread per output element (plane, Y, X) of the pooled N C x h/2 x w/2. */
__global__ void k_avgpool2_forward(float *y, const float *x, int h, int w, size_t count) {
    GRID_STRIDE(i, count) {
        const float *s = pool2_window(x, i, h, w);
        float v = __fadd_rn(__fadd_rn(__fadd_rn(s[0], s[1]), s[w]), s[w + 1]);
        y[i] = __fdiv_rn(v, 4.0f);
    }
}

/* One thread per input element: a quarter of its window's gradient. */
__global__ void k_avgpool2_backward(float *dx, const float *dy, int h, int w, int acc,
                                    size_t count) {
    GRID_STRIDE(i, count) {
        size_t p;
        int yy, xx;
        float v = __fmul_rn(0.25f, dy[pool2_output_of(i, h, w, &p, &yy, &xx)]);
        dx[i] = acc ? __fadd_rn(dx[i], v) : v;
    }
}

int pf_cuda_avgpool2_forward(float *y, const float *x, int n, int c, int h, int w,
                             cudaStream_t stream, char *err, size_t errlen) {
    size_t count;
    int rc = pool2_check("pf_cuda_avgpool2_forward", n, c, h, w, 1, y && x, &count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    PF_LAUNCH(k_avgpool2_forward, grid_for(count), THREADS, 0, stream, y, x, h, w, count);
    return check_launch("k_avgpool2_forward", err, errlen);
}

int pf_cuda_avgpool2_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc,
                              cudaStream_t stream, char *err, size_t errlen) {
    size_t count;
    int rc = pool2_check("pf_cuda_avgpool2_backward", n, c, h, w, 0, dx && dy, &count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    PF_LAUNCH(k_avgpool2_backward, grid_for(count), THREADS, 0, stream, dx, dy, h, w, acc, count);
    return check_launch("k_avgpool2_backward", err, errlen);
}

/* Index 0..3 of the maximum of the 2 x 2 window at s (row stride w): the first in row-major
   order, a NaN winning (PyTorch's max_pool2d, nn/cpu/ops.c). */
__device__ int max_of_window(const float *s, int w) {
    int best = 0;
    float m = s[0];
    for (int k = 1; k < 4; k++) {
        float v = s[(k / 2) * w + k % 2];
        if (v > m || v != v) {
            m = v;
            best = k;
        }
    }
    return best;
}

/* One thread per output element (plane, Y, X) of the pooled N C x h/2 x w/2. */
__global__ void k_maxpool2_forward(float *y, const float *x, int h, int w, size_t count) {
    GRID_STRIDE(i, count) {
        const float *s = pool2_window(x, i, h, w);
        int k = max_of_window(s, w);
        y[i] = s[(k / 2) * w + k % 2];
    }
}

/* One thread per input element: its window's gradient if it is the window's argmax, else 0
   (a gather: no atomics, deterministic). */
__global__ void k_maxpool2_backward(float *dx, const float *dy, const float *x, int h, int w,
                                    int acc, size_t count) {
    GRID_STRIDE(i, count) {
        size_t p;
        int yy, xx;
        size_t o = pool2_output_of(i, h, w, &p, &yy, &xx);
        const float *s = x + (p * h + (size_t)(yy & ~1)) * w + (size_t)(xx & ~1);
        int k = max_of_window(s, w);
        float v = k == (yy & 1) * 2 + (xx & 1) ? dy[o] : 0.0f;
        dx[i] = acc ? __fadd_rn(dx[i], v) : v;
    }
}

int pf_cuda_maxpool2_forward(float *y, const float *x, int n, int c, int h, int w,
                             cudaStream_t stream, char *err, size_t errlen) {
    size_t count;
    int rc = pool2_check("pf_cuda_maxpool2_forward", n, c, h, w, 1, y && x, &count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    PF_LAUNCH(k_maxpool2_forward, grid_for(count), THREADS, 0, stream, y, x, h, w, count);
    return check_launch("k_maxpool2_forward", err, errlen);
}

int pf_cuda_maxpool2_backward(float *dx, const float *dy, const float *x, int n, int c, int h,
                              int w, int acc, cudaStream_t stream, char *err, size_t errlen) {
    size_t count;
    int rc = pool2_check("pf_cuda_maxpool2_backward", n, c, h, w, 0, dx && dy && x, &count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    PF_LAUNCH(k_maxpool2_backward, grid_for(count), THREADS, 0, stream, dx, dy, x, h, w, acc,
              count);
    return check_launch("k_maxpool2_backward", err, errlen);
}

/* ---- flow warp ---- */

/* The sample position along an axis of `size` at pixel p with flow f, as BasicSR's flow_warp
   normalises it and grid_sample (align_corners=True) unnormalises it (nn/video_layers.c
   sample_pos); *grad = d position / d f (0 where border-clamped or size 1). */
__device__ float sample_pos(int p, float f, int size, int pad, float *grad) {
    if (size == 1) {
        *grad = 0;
        return 0;
    }
    float sm1 = (float)(size - 1);
    float g = __fsub_rn(__fdiv_rn(__fmul_rn(2.0f, __fadd_rn((float)p, f)), sm1), 1.0f);
    float v = __fmul_rn(__fadd_rn(g, 1.0f), __fdiv_rn(sm1, 2.0f));
    *grad = 1;
    if (pad == 1) {
        if (v <= 0) {
            *grad = 0;
            return 0;
        }
        if (v >= sm1) {
            *grad = 0;
            return sm1;
        }
    }
    return v;
}

typedef struct {
    int x0, y0;
    float e, s;             /* east and south fractions */
    float gx, gy;
    float wt[4];            /* nw, ne, sw, se */
} corners_t;

__device__ void corners(corners_t *q, int x, int y, const float *flow, size_t a, int h, int w,
                        int pad) {
    size_t hw = (size_t)h * w, px = (size_t)y * w + x;
    float fx = flow[(a * 2) * hw + px], fy = flow[(a * 2 + 1) * hw + px];
    float ix = sample_pos(x, fx, w, pad, &q->gx), iy = sample_pos(y, fy, h, pad, &q->gy);
    float x0 = floorf(ix), y0 = floorf(iy);
    q->x0 = (int)x0;
    q->y0 = (int)y0;
    q->e = __fsub_rn(ix, x0);
    q->s = __fsub_rn(iy, y0);
    float e1 = __fsub_rn(1.0f, q->e), s1 = __fsub_rn(1.0f, q->s);
    q->wt[0] = __fmul_rn(e1, s1);
    q->wt[1] = __fmul_rn(q->e, s1);
    q->wt[2] = __fmul_rn(e1, q->s);
    q->wt[3] = __fmul_rn(q->e, q->s);
}

__device__ int inside(int x, int y, int w, int h) { return x >= 0 && x < w && y >= 0 && y < h; }

/* One thread per output pixel (n, y, x), every channel. */
__global__ void k_warp_forward(float *out, const float *x, const float *flow, int c, int h,
                               int w, int pad, size_t pixels) {
    size_t hw = (size_t)h * w;
    GRID_STRIDE(i, pixels) {
        int xx = (int)(i % w), yy = (int)(i / w % h);
        size_t a = i / hw;
        corners_t q;
        corners(&q, xx, yy, flow, a, h, w, pad);
        for (int k = 0; k < c; k++) {
            const float *s = x + (a * c + k) * hw;
            float v = 0;
            for (int j = 0; j < 4; j++) {
                int cx = q.x0 + (j & 1), cy = q.y0 + (j >> 1);
                if (inside(cx, cy, w, h))
                    v = __fadd_rn(v, __fmul_rn(s[(size_t)cy * w + cx], q.wt[j]));
            }
            out[(a * c + k) * hw + (i % hw)] = v;
        }
    }
}

int pf_cuda_flow_warp_forward(float *y, const float *x, const float *flow, int n, int c, int h,
                              int w, int pad, cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_flow_warp_forward";
    if (negative(n, c, h, w) || pad < 0 || pad > 1)
        return bad_arg(fn, "bad shape or padding", err, errlen);
    size_t pixels = (size_t)n * h * w;
    if (!pixels || !c) return 0;
    if (!y || !x || !flow) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_warp_forward, grid_for(pixels), THREADS, 0, stream, y, x, flow, c, h, w, pad,
              pixels);
    return check_launch("k_warp_forward", err, errlen);
}

/* Scratch: the max |dy| bits, padding, then one 64-bit sum per element of x. */
#define WARP_HEADER 16

size_t pf_cuda_flow_warp_scratch_bytes(size_t count) {
    return WARP_HEADER + count * sizeof(unsigned long long);
}

/* max |dy| as the bits of a non-negative float (their order is the floats' order; NaN sorts
   above infinity), into *bits (zeroed before). */
__global__ void k_absmax_bits(unsigned *bits, const float *dy, size_t count) {
    unsigned m = 0;
    GRID_STRIDE(i, count) {
        unsigned b = __float_as_uint(fabsf(dy[i]));
        if (b > m) m = b;
    }
    atomicMax(bits, m);
}

/* The fixed-point scale 2^e for the call: every sum stays below 2^62 in magnitude (a plane of
   h w outputs gives an input element at most h w max |dy|). 0: nothing to add (max 0) or
   not finite. */
__device__ double warp_fixed_scale(unsigned bits, size_t hw) {
    if (bits == 0 || bits >= 0x7f800000u) return 0.0;
    int e;
    frexp((double)__uint_as_float(bits) * (double)hw, &e);   /* max hw < 2^e */
    return ldexp(1.0, 62 - e);
}

/* One thread per output pixel: dflow by a gather over channels (float, the CPU order), dx's
   contributions added into the fixed-point sums. */
__global__ void k_warp_backward(unsigned long long *sums, const unsigned *bits, float *dflow,
                                const float *dy, const float *x, const float *flow, int c,
                                int h, int w, int pad, int acc_f, size_t pixels) {
    size_t hw = (size_t)h * w;
    double scale = sums ? warp_fixed_scale(*bits, hw) : 0.0;
    GRID_STRIDE(i, pixels) {
        int xx = (int)(i % w), yy = (int)(i / w % h);
        size_t a = i / hw, px = i % hw;
        corners_t q;
        corners(&q, xx, yy, flow, a, h, w, pad);
        float gix = 0, giy = 0;
        for (int k = 0; k < c; k++) {
            size_t plane = (a * c + k) * hw;
            float g = dy[plane + px];
            for (int j = 0; j < 4; j++) {
                int cx = q.x0 + (j & 1), cy = q.y0 + (j >> 1);
                if (!inside(cx, cy, w, h)) continue;
                size_t at = plane + (size_t)cy * w + cx;
                if (sums && scale != 0.0)
                    atomicAdd(&sums[at], (unsigned long long)__double2ll_rn(
                                             (double)q.wt[j] * (double)g * scale));
                if (dflow) {
                    float v = __fmul_rn(x[at], g);
                    float sy = (j >> 1) ? q.s : __fsub_rn(1.0f, q.s);
                    float ex = (j & 1) ? q.e : __fsub_rn(1.0f, q.e);
                    float dwx = (j & 1) ? sy : -sy, dwy = (j >> 1) ? ex : -ex;
                    gix = __fadd_rn(gix, __fmul_rn(v, dwx));
                    giy = __fadd_rn(giy, __fmul_rn(v, dwy));
                }
            }
        }
        if (dflow) {
            float *f0 = &dflow[(a * 2) * hw + px], *f1 = &dflow[(a * 2 + 1) * hw + px];
            float v0 = __fmul_rn(gix, q.gx), v1 = __fmul_rn(giy, q.gy);
            *f0 = acc_f ? __fadd_rn(*f0, v0) : v0;
            *f1 = acc_f ? __fadd_rn(*f1, v1) : v1;
        }
    }
}

/* dx = (acc ? dx : 0) + sum / scale; NaN when dy was not finite. */
__global__ void k_warp_fixed_to_float(float *dx, const unsigned long long *sums,
                                      const unsigned *bits, size_t hw, int acc, size_t count) {
    double scale = warp_fixed_scale(*bits, hw);
    int bad = *bits >= 0x7f800000u;
    GRID_STRIDE(i, count) {
        float v = bad ? __int_as_float(0x7fc00000)
                      : scale != 0.0 ? (float)((double)(long long)sums[i] / scale) : 0.0f;
        dx[i] = acc ? dx[i] + v : v;
    }
}

int pf_cuda_flow_warp_backward(float *dx, float *dflow, const float *dy, const float *x,
                               const float *flow, int n, int c, int h, int w, int pad,
                               int acc_x, int acc_f, void *scratch, cudaStream_t stream,
                               char *err, size_t errlen) {
    const char *fn = "pf_cuda_flow_warp_backward";
    if (negative(n, c, h, w) || pad < 0 || pad > 1)
        return bad_arg(fn, "bad shape or padding", err, errlen);
    size_t pixels = (size_t)n * h * w, count = pixels * c;
    if (!pixels || (!dx && !dflow)) return 0;
    if (!dy || !x || !flow) return null_tensor(fn, err, errlen);
    if (dx && !scratch) return bad_arg(fn, "no scratch for dx", err, errlen);
    if (!c) {       /* no channels: the flow gets nothing */
        if (dflow && !acc_f) {
            cudaError_t e = cudaMemsetAsync(dflow, 0, pixels * 2 * sizeof(float), stream);
            if (e != cudaSuccess) return bad_arg(fn, cudaGetErrorString(e), err, errlen);
        }
        return 0;
    }
    unsigned *bits = (unsigned *)scratch;
    unsigned long long *sums =
        dx ? (unsigned long long *)((char *)scratch + WARP_HEADER) : NULL;
    if (dx) {
        cudaError_t e = cudaMemsetAsync(scratch, 0, pf_cuda_flow_warp_scratch_bytes(count),
                                        stream);
        if (e != cudaSuccess) {
            snprintf(err, errlen, "%s: cudaMemsetAsync: %s", fn, cudaGetErrorString(e));
            return -1;
        }
        PF_LAUNCH(k_absmax_bits, grid_for(count), THREADS, 0, stream, bits, dy, count);
        if (check_launch("k_absmax_bits", err, errlen)) return -1;
    }
    PF_LAUNCH(k_warp_backward, grid_for(pixels), THREADS, 0, stream, sums, bits, dflow, dy, x, flow,
              c, h, w, pad, acc_f, pixels);
    if (check_launch("k_warp_backward", err, errlen)) return -1;
    if (!dx) return 0;
    PF_LAUNCH(k_warp_fixed_to_float, grid_for(count), THREADS, 0, stream, dx, sums, bits,
              (size_t)h * w, acc_x, count);
    return check_launch("k_warp_fixed_to_float", err, errlen);
}

/* ---- modulated deformable convolution: the sampling and its adjoint ---- */

/* Tap t's sample position for output pixel (oy, ox) of sample n, deform group d, and its mask
   (nn/cpu/dcn.c position). */
__device__ void dcn_position(const pf_cuda_dcn_shape s, const float *off, const float *mask,
                             int n, int d, int t, int oy, int ox, float *py, float *px,
                             float *m) {
    int kk = s.k * s.k, i = t / s.k, j = t % s.k;
    size_t P = (size_t)s.ho * s.wo, p = (size_t)oy * s.wo + ox, ch = (size_t)d * kk + t;
    float dy = off[((size_t)n * 2 * s.dg * kk + 2 * ch) * P + p];
    float dx = off[((size_t)n * 2 * s.dg * kk + 2 * ch + 1) * P + p];
    *py = (float)(oy * s.stride - s.pad + i * s.dil) + dy;
    *px = (float)(ox * s.stride - s.pad + j * s.dil) + dx;
    *m = mask[((size_t)n * s.dg * kk + ch) * P + p];
}

/* The four neighbours of (py, px) in the cell of floor(py), floor(px) with their bilinear
   weights (0 outside the image) and the fractional parts; 0 when py < -1, py >= H, px < -1
   or px >= W (nn/cpu/dcn.c corners: at -1 exactly the value is 0, the slope is not). */
__device__ int dcn_corners(float py, float px, int H, int W, int cy[4], int cx[4], float wt[4],
                           float *ly, float *lx) {
    if (py < -1.0f || py >= (float)H || px < -1.0f || px >= (float)W) return 0;
    int y0 = (int)floorf(py), x0 = (int)floorf(px);
    *ly = __fsub_rn(py, (float)y0);
    *lx = __fsub_rn(px, (float)x0);
    float hy = __fsub_rn(1.0f, *ly), hx = __fsub_rn(1.0f, *lx);
    float w[4] = { __fmul_rn(hy, hx), __fmul_rn(hy, *lx), __fmul_rn(*ly, hx),
                   __fmul_rn(*ly, *lx) };
    for (int q = 0; q < 4; q++) {
        cy[q] = y0 + (q >> 1);
        cx[q] = x0 + (q & 1);
        wt[q] = cy[q] >= 0 && cy[q] < H && cx[q] >= 0 && cx[q] < W ? w[q] : 0.0f;
    }
    return 1;
}

/* One thread per column element (row c kk + t, column (n H_out + oy) W_out + ox). */
__global__ void k_dcn_columns(float *col, const float *x, const float *off, const float *mask,
                              pf_cuda_dcn_shape s, size_t count) {
    int kk = s.k * s.k, cpd = s.cin / s.dg;
    size_t P = (size_t)s.ho * s.wo, NP = (size_t)s.n * P;
    GRID_STRIDE(i, count) {
        int r = (int)(i / NP), c = r / kk, t = r % kk;
        size_t j = i % NP, p = j % P;
        int n = (int)(j / P), oy = (int)(p / s.wo), ox = (int)(p % s.wo);
        float py, px, m, ly, lx, wt[4], v = 0.0f;
        int cy[4], cx[4];
        dcn_position(s, off, mask, n, c / cpd, t, oy, ox, &py, &px, &m);
        const float *xc = x + ((size_t)n * s.cin + c) * s.h * s.w;
        if (dcn_corners(py, px, s.h, s.w, cy, cx, wt, &ly, &lx))
            for (int q = 0; q < 4; q++)
                if (wt[q] != 0.0f)
                    v = __fadd_rn(v, __fmul_rn(wt[q], xc[(size_t)cy[q] * s.w + cx[q]]));
        col[i] = __fmul_rn(m, v);
    }
}

static int dcn_shape_bad(const pf_cuda_dcn_shape *s) {
    return !s || s->n < 0 || s->cin < 0 || s->h < 1 || s->w < 1 || s->k < 1 || s->stride < 1 ||
           s->pad < 0 || s->dil < 1 || s->dg < 1 || s->cin % s->dg || s->ho < 0 || s->wo < 0;
}

int pf_cuda_dcn_columns(float *col, const float *x, const float *off, const float *mask,
                        const pf_cuda_dcn_shape *s, cudaStream_t stream, char *err,
                        size_t errlen) {
    const char *fn = "pf_cuda_dcn_columns";
    if (dcn_shape_bad(s)) return bad_arg(fn, "bad shape", err, errlen);
    size_t count = (size_t)s->cin * s->k * s->k * s->n * s->ho * s->wo;
    if (!count) return 0;
    if (!col || !x || !off || !mask) return null_tensor(fn, err, errlen);
    pf_cuda_dcn_shape sh = *s;    /* a value for the launch */
    PF_LAUNCH(k_dcn_columns, grid_for(count), THREADS, 0, stream, col, x, off, mask, sh, count);
    return check_launch("k_dcn_columns", err, errlen);
}

size_t pf_cuda_dcn_scratch_bytes(const pf_cuda_dcn_shape *s) {
    return pf_cuda_flow_warp_scratch_bytes((size_t)s->n * s->cin * s->h * s->w);
}

/* One thread per (n, deform group, tap, output pixel): doff and dmask by a gather over the
   group's channels in double (nn/cpu/dcn.c columns_doff, get_coordinate_weight's slopes). */
__global__ void k_dcn_doff(float *doff, float *dmask, const float *dcol, const float *x,
                           const float *off, const float *mask, pf_cuda_dcn_shape s,
                           int acc_off, int acc_mask, size_t count) {
    int kk = s.k * s.k, cpd = s.cin / s.dg;
    size_t P = (size_t)s.ho * s.wo, NP = (size_t)s.n * P;
    GRID_STRIDE(i, count) {
        size_t p = i % P, ndt = i / P;
        int t = (int)(ndt % kk), d = (int)(ndt / kk % s.dg), n = (int)(ndt / kk / s.dg);
        int oy = (int)(p / s.wo), ox = (int)(p % s.wo);
        float py, px, m, ly, lx, wt[4];
        int cy[4], cx[4];
        dcn_position(s, off, mask, n, d, t, oy, ox, &py, &px, &m);
        int ok = dcn_corners(py, px, s.h, s.w, cy, cx, wt, &ly, &lx);
        double sy = 0, sx = 0, sm = 0;
        for (int c = d * cpd; ok && c < (d + 1) * cpd; c++) {
            const float *xc = x + ((size_t)n * s.cin + c) * s.h * s.w;
            float g = dcol[((size_t)c * kk + t) * NP + (size_t)n * P + p], v[4], val = 0.0f;
            for (int q = 0; q < 4; q++) {
                int in = cy[q] >= 0 && cy[q] < s.h && cx[q] >= 0 && cx[q] < s.w;
                v[q] = in ? xc[(size_t)cy[q] * s.w + cx[q]] : 0.0f;
                val = __fadd_rn(val, __fmul_rn(wt[q], v[q]));
            }
            float gy = __fadd_rn(__fmul_rn(lx, __fsub_rn(v[3], v[1])),
                                 __fmul_rn(__fsub_rn(1.0f, lx), __fsub_rn(v[2], v[0])));
            float gx = __fadd_rn(__fmul_rn(ly, __fsub_rn(v[3], v[2])),
                                 __fmul_rn(__fsub_rn(1.0f, ly), __fsub_rn(v[1], v[0])));
            sm += (double)g * val;
            sy += (double)g * gy;
            sx += (double)g * gx;
        }
        size_t ch = (size_t)d * kk + t;
        if (dmask) {
            float *dm = &dmask[((size_t)n * s.dg * kk + ch) * P + p];
            *dm = acc_mask ? __fadd_rn(*dm, (float)sm) : (float)sm;
        }
        if (doff) {
            float *d0 = &doff[((size_t)n * 2 * s.dg * kk + 2 * ch) * P + p], *d1 = d0 + P;
            float v0 = (float)(sy * m), v1 = (float)(sx * m);
            *d0 = acc_off ? __fadd_rn(*d0, v0) : v0;
            *d1 = acc_off ? __fadd_rn(*d1, v1) : v1;
        }
    }
}

/* dcol *= the mask of its (deform group, tap, sample, pixel): the gradient that reaches x. */
__global__ void k_dcn_mask_cols(float *dcol, const float *mask, pf_cuda_dcn_shape s,
                                size_t count) {
    int kk = s.k * s.k, cpd = s.cin / s.dg;
    size_t P = (size_t)s.ho * s.wo, NP = (size_t)s.n * P;
    GRID_STRIDE(i, count) {
        int r = (int)(i / NP), c = r / kk, t = r % kk;
        size_t j = i % NP, ch = (size_t)(c / cpd) * kk + t;
        dcol[i] = __fmul_rn(dcol[i], mask[((j / P) * s.dg * kk + ch) * P + j % P]);
    }
}

/* One thread per column element: its masked gradient scattered into the fixed-point sums of
   its four neighbours (scale: warp_fixed_scale over k k H_out W_out contributions). */
__global__ void k_dcn_dx_scatter(unsigned long long *sums, const unsigned *bits,
                                 const float *gcol, const float *off, const float *mask,
                                 pf_cuda_dcn_shape s, size_t count) {
    int kk = s.k * s.k, cpd = s.cin / s.dg;
    size_t P = (size_t)s.ho * s.wo, NP = (size_t)s.n * P;
    double scale = warp_fixed_scale(*bits, (size_t)kk * P);
    GRID_STRIDE(i, count) {
        float gm = gcol[i], py, px, m, ly, lx, wt[4];
        int r = (int)(i / NP), c = r / kk, t = r % kk, cy[4], cx[4];
        size_t j = i % NP, p = j % P;
        int n = (int)(j / P);
        if (gm == 0.0f || scale == 0.0) continue;
        dcn_position(s, off, mask, n, c / cpd, t, (int)(p / s.wo), (int)(p % s.wo), &py, &px,
                     &m);
        if (!dcn_corners(py, px, s.h, s.w, cy, cx, wt, &ly, &lx)) continue;
        size_t plane = ((size_t)n * s.cin + c) * s.h * s.w;
        for (int q = 0; q < 4; q++)
            if (wt[q] != 0.0f)
                atomicAdd(&sums[plane + (size_t)cy[q] * s.w + cx[q]],
                          (unsigned long long)__double2ll_rn((double)wt[q] * (double)gm * scale));
    }
}

int pf_cuda_dcn_columns_backward(float *dx, float *doff, float *dmask, float *dcol,
                                 const float *x, const float *off, const float *mask,
                                 const pf_cuda_dcn_shape *s, int acc_x, int acc_off,
                                 int acc_mask, void *scratch, cudaStream_t stream, char *err,
                                 size_t errlen) {
    const char *fn = "pf_cuda_dcn_columns_backward";
    if (dcn_shape_bad(s)) return bad_arg(fn, "bad shape", err, errlen);
    int kk = s->k * s->k;
    size_t P = (size_t)s->ho * s->wo, count = (size_t)s->cin * kk * s->n * P;
    size_t nxs = (size_t)s->n * s->cin * s->h * s->w, ndt = (size_t)s->n * s->dg * kk * P;
    if (!ndt || (!dx && !doff && !dmask)) return 0;
    if (!dcol || !x || !off || !mask) return null_tensor(fn, err, errlen);
    if (dx && !scratch) return bad_arg(fn, "no scratch for dx", err, errlen);
    pf_cuda_dcn_shape sh = *s;    /* a value for the launches */
    if (doff || dmask) {
        PF_LAUNCH(k_dcn_doff, grid_for(ndt), THREADS, 0, stream, doff, dmask, dcol, x, off, mask,
                  sh, acc_off, acc_mask, ndt);
        if (check_launch("k_dcn_doff", err, errlen)) return -1;
    }
    if (!dx || !nxs) return 0;
    unsigned *bits = (unsigned *)scratch;
    unsigned long long *sums = (unsigned long long *)((char *)scratch + WARP_HEADER);
    cudaError_t e = cudaMemsetAsync(scratch, 0, pf_cuda_dcn_scratch_bytes(s), stream);
    if (e != cudaSuccess) {
        snprintf(err, errlen, "%s: cudaMemsetAsync: %s", fn, cudaGetErrorString(e));
        return -1;
    }
    if (count) {
        PF_LAUNCH(k_dcn_mask_cols, grid_for(count), THREADS, 0, stream, dcol, mask, sh, count);
        if (check_launch("k_dcn_mask_cols", err, errlen)) return -1;
        PF_LAUNCH(k_absmax_bits, grid_for(count), THREADS, 0, stream, bits, dcol, count);
        if (check_launch("k_absmax_bits (dcn)", err, errlen)) return -1;
        PF_LAUNCH(k_dcn_dx_scatter, grid_for(count), THREADS, 0, stream, sums, bits, dcol, off,
                  mask, sh, count);
        if (check_launch("k_dcn_dx_scatter", err, errlen)) return -1;
    }
    PF_LAUNCH(k_warp_fixed_to_float, grid_for(nxs), THREADS, 0, stream, dx, sums, bits,
              (size_t)kk * P, acc_x, nxs);
    return check_launch("k_warp_fixed_to_float (dcn)", err, errlen);
}

/* y += bias[c] over N x C x H x W. */
__global__ void k_bias_add(float *y, const float *bias, int c, size_t hw, size_t count) {
    GRID_STRIDE(i, count) y[i] = __fadd_rn(y[i], bias[(i / hw) % c]);
}

int pf_cuda_bias_add(float *y, const float *bias, int n, int c, int h, int w,
                     cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_bias_add";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw;
    if (!count) return 0;
    if (!y || !bias) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_bias_add, grid_for(count), THREADS, 0, stream, y, bias, c, hw, count);
    return check_launch("k_bias_add", err, errlen);
}

int pf_cuda_bias_backward(float *dbias, const float *dy, int n, int c, int h, int w, int acc,
                          cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_bias_backward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    if (!c) return 0;
    if (!dbias || !dy) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_plane_sum, blocks_for((size_t)c), THREADS, 0, stream, dbias, dy, NULL, (size_t)c,
              (size_t)c, n, (size_t)h * w, RED_SUM, 1.0, 1.0f, acc);
    return check_launch("k_plane_sum (bias)", err, errlen);
}

/* ---- spectral normalisation (torch.nn.utils.spectral_norm; nn/spectral_norm.h) ----------- */
/* The CPU's sums (nn/spectral_norm.c) in double, with float stores at the same points; only
   the order of the row sums differs (strands and a tree here), so results agree with it to
   float rounding (test_sn_cuda_host.emu measured no difference at all). nvcc may fuse a double
   multiply-add, which moves only a double's last bit. */

/* v[c] = (float) sum over r (ascending) of W[r][c] u[r] in double: one thread per column, the
   CPU's order (nn/spectral_norm.c's power_iteration), so a gather with no reduction tree. */
__global__ void k_sn_mv_t(float *v, const float *w, const float *u, int rows, int cols) {
    GRID_STRIDE(c, (size_t)cols) {
        double s = 0.0;
        for (int r = 0; r < rows; r++) s += (double)w[(size_t)r * cols + c] * u[r];
        v[c] = (float)s;
    }
}

/* One block per row r < rows (grid-stride over rows): sum over c of a[r][c] b[r bstride + c] in
   double (bstride 0: b is one vector, the product W v; cols: b is a matrix of a's shape, the
   dot product's row part), thread t adding c = t, t + THREADS, ... in order, then block_sum's
   tree. out[r] = the sum; outf (NULL: not wanted) [r] = (float) the sum. */
__global__ void k_sn_rows(double *out, float *outf, const float *a, const float *b, int rows,
                          int cols, size_t bstride) {
    __shared__ double s[THREADS];
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {
        const float *ar = a + (size_t)r * cols, *br = b + (size_t)r * bstride;
        double sum = 0.0;
        for (int c = threadIdx.x; c < cols; c += THREADS) sum += (double)ar[c] * br[c];
        s[threadIdx.x] = sum;
        block_sum(s);   /* ends with a barrier; only thread 0 reads s[0] before the next row */
        if (threadIdx.x == 0) {
            out[r] = s[0];
            if (outf) outf[r] = (float)s[0];
        }
    }
}

/* ---- BatchNorm2d (torch.nn.BatchNorm2d; nn/cpu/batchnorm.c the CPU counterpart) ---- */

/* Element j (0 .. N hw - 1) of channel ch: sample j / hw, pixel j % hw. */
__device__ size_t bn_at(size_t j, int ch, int c, size_t hw) {
    return (j / hw * (size_t)c + (size_t)ch) * hw + j % hw;
}

/* One block per channel (grid-stride over channels): mean, biased variance, y, save, the
   running statistics. Every thread reads s[0] after block_sum's closing barrier; the barrier
   after that read keeps the next pass's writes from racing it. */
__global__ void k_bn_train_forward(float *y, const float *x, const float *weight,
                                   const float *bias, float *running, double *save, int c,
                                   int n, size_t hw, double eps, double momentum) {
    __shared__ double s[THREADS];
    size_t len = (size_t)n * hw;
    double M = (double)len;
    for (int ch = blockIdx.x; ch < c; ch += gridDim.x) {
        double sum = 0.0;
        for (size_t j = threadIdx.x; j < len; j += THREADS) sum += x[bn_at(j, ch, c, hw)];
        s[threadIdx.x] = sum;
        block_sum(s);
        double mean = s[0] / M;
        __syncthreads();
        double sq = 0.0;
        for (size_t j = threadIdx.x; j < len; j += THREADS) {
            double d = (double)x[bn_at(j, ch, c, hw)] - mean;
            sq += d * d;
        }
        s[threadIdx.x] = sq;
        block_sum(s);
        double var = s[0] / M, inv = 1.0 / sqrt(var + eps);
        __syncthreads();
        double sc = (double)weight[ch] * inv, sh = (double)bias[ch] - mean * sc;
        for (size_t j = threadIdx.x; j < len; j += THREADS) {
            size_t e = bn_at(j, ch, c, hw);
            y[e] = (float)((double)x[e] * sc + sh);
        }
        if (threadIdx.x == 0) {
            save[ch] = mean;
            save[c + ch] = inv;
            running[ch] = (float)((1.0 - momentum) * running[ch] + momentum * mean);
            running[c + ch] = (float)((1.0 - momentum) * running[c + ch] +
                                      momentum * var * M / (M - 1.0));
        }
    }
}

/* One block: x /= max(||x||_2, eps) over n floats (F.normalize), the norm in double (thread t
   squares x[t], x[t + THREADS], ... in order, then block_sum's tree), each element divided in
   double and stored as float, as nn/spectral_norm.c's normalize. */
__global__ void k_sn_normalize(float *x, int n, float eps) {
    __shared__ double s[THREADS];
    double ss = 0.0;
    for (int i = threadIdx.x; i < n; i += THREADS) ss += (double)x[i] * x[i];
    s[threadIdx.x] = ss;
    block_sum(s);       /* ends with a barrier: every thread may read s[0] */
    double norm = fmax(sqrt(s[0]), (double)eps);
    for (int i = threadIdx.x; i < n; i += THREADS) x[i] = (float)((double)x[i] / norm);
}

/* One block: sum over r < n of x[r] (u ? u[r] : 1) in double, block_sum's tree over the
   threads' in-order partials; outf (sigma = u . (W v)) gets it as float, outd (the gradient's
   dot product) as double; either may be NULL. */
__global__ void k_sn_sum(float *outf, double *outd, const double *x, const float *u, int n) {
    __shared__ double s[THREADS];
    double acc = 0.0;
    for (int r = threadIdx.x; r < n; r += THREADS) acc += u ? x[r] * u[r] : x[r];
    s[threadIdx.x] = acc;
    block_sum(s);
    if (threadIdx.x == 0) {
        if (outf) *outf = (float)s[0];
        if (outd) *outd = s[0];
    }
}

/* weight = weight_orig / sigma, float division as the C loop. */
__global__ void k_sn_div(float *weight, const float *weight_orig, const float *sigma,
                         size_t count) {
    float sg = *sigma;
    GRID_STRIDE(i, count) weight[i] = __fdiv_rn(weight_orig[i], sg);
}

/* d weight_orig[r][c] = (float)(d weight[r][c] / sigma + (d_sigma u[r]) v[c]) in double, with
   d_sigma = -dot / sigma^2 (dot: *dot, the sum of d weight * weight_orig); each element read
   before it is written, so dwo may be dw. */
__global__ void k_sn_grad(float *dwo, const float *dw, const float *u, const float *v,
                          const float *sigma, const double *dot, int cols, size_t count) {
    double sg = *sigma, d_sigma = -*dot / (sg * sg);
    GRID_STRIDE(i, count) {
        double du = d_sigma * u[i / cols];
        dwo[i] = (float)((double)dw[i] / sg + du * v[i % cols]);
    }
}

static int sn_args(const char *fn, int rows, int cols, const void *a, const void *b,
                   const void *c, const void *d, const void *e, const void *f, char *err,
                   size_t errlen) {
    if (rows < 1 || cols < 1) return bad_arg(fn, "rows and cols must be >= 1", err, errlen);
    if (!a || !b || !c || !d || !e || !f) return null_tensor(fn, err, errlen);
    return 0;
}

int pf_cuda_sn_forward(float *weight, float *u, float *v, float *sigma,
                       const float *weight_orig, int rows, int cols, float eps, int training,
                       double *scratch, cudaStream_t stream, char *err, size_t errlen) {
    if (sn_args("pf_cuda_sn_forward", rows, cols, weight, u, v, sigma, weight_orig, scratch,
                err, errlen))
        return -1;
    size_t count = (size_t)rows * cols;
    if (training) {     /* v = normalize(W^T u), then u = normalize(W v) with that v */
        PF_LAUNCH(k_sn_mv_t, grid_for((size_t)cols), THREADS, 0, stream, v, weight_orig, u, rows,
                  cols);
        if (check_launch("k_sn_mv_t", err, errlen)) return -1;
        PF_LAUNCH(k_sn_normalize, 1, THREADS, 0, stream, v, cols, eps);
        if (check_launch("k_sn_normalize (v)", err, errlen)) return -1;
    }
    /* W v (double) into scratch; in training also the new u before its normalisation */
    PF_LAUNCH(k_sn_rows, blocks_for((size_t)rows), THREADS, 0, stream, scratch,
              training ? u : NULL, weight_orig, v, rows, cols, (size_t)0);
    if (check_launch("k_sn_rows (W v)", err, errlen)) return -1;
    if (training) {
        PF_LAUNCH(k_sn_normalize, 1, THREADS, 0, stream, u, rows, eps);
        if (check_launch("k_sn_normalize (u)", err, errlen)) return -1;
    }
    PF_LAUNCH(k_sn_sum, 1, THREADS, 0, stream, sigma, NULL, scratch, u, rows);
    if (check_launch("k_sn_sum (sigma)", err, errlen)) return -1;
    PF_LAUNCH(k_sn_div, grid_for(count), THREADS, 0, stream, weight, weight_orig, sigma, count);
    return check_launch("k_sn_div", err, errlen);
}

int pf_cuda_sn_backward(float *d_weight_orig, const float *d_weight, const float *weight_orig,
                        const float *u, const float *v, const float *sigma, int rows, int cols,
                        double *scratch, cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_sn_backward";
    if (sn_args(fn, rows, cols, d_weight_orig, d_weight, weight_orig, u, v, sigma, err,
                errlen))
        return -1;
    if (!scratch) return null_tensor(fn, err, errlen);
    size_t count = (size_t)rows * cols;
    /* dot = sum of d weight * weight_orig: per row into scratch, then over rows */
    PF_LAUNCH(k_sn_rows, blocks_for((size_t)rows), THREADS, 0, stream, scratch, NULL, d_weight,
              weight_orig, rows, cols, (size_t)cols);
    if (check_launch("k_sn_rows (dot)", err, errlen)) return -1;
    PF_LAUNCH(k_sn_sum, 1, THREADS, 0, stream, NULL, scratch + rows, scratch, NULL, rows);
    if (check_launch("k_sn_sum (dot)", err, errlen)) return -1;
    PF_LAUNCH(k_sn_grad, grid_for(count), THREADS, 0, stream, d_weight_orig, d_weight, u, v,
              sigma, scratch + rows, cols, count);
    return check_launch("k_sn_grad", err, errlen);
}

/* y = (x - running_mean) / sqrt(running_var + eps) weight + bias, one thread per element. */
__global__ void k_bn_eval_forward(float *y, const float *x, const float *weight,
                                  const float *bias, const float *running, int c, size_t hw,
                                  double eps, size_t count) {
    GRID_STRIDE(i, count) {
        int ch = (int)((i / hw) % c);
        double inv = 1.0 / sqrt((double)running[c + ch] + eps);
        double sc = (double)weight[ch] * inv, sh = (double)bias[ch] - running[ch] * sc;
        y[i] = (float)((double)x[i] * sc + sh);
    }
}

/* One block per channel: db, dw (two trees), then dx from them. */
__global__ void k_bn_backward(float *dx, float *dweight, float *dbias, const float *dy,
                              const float *x, const float *weight, const double *save, int c,
                              int n, size_t hw, int acc) {
    __shared__ double s[THREADS], s2[THREADS];
    size_t len = (size_t)n * hw;
    double M = (double)len;
    for (int ch = blockIdx.x; ch < c; ch += gridDim.x) {
        double mean = save[ch], inv = save[c + ch], db = 0.0, dw = 0.0;
        for (size_t j = threadIdx.x; j < len; j += THREADS) {
            size_t e = bn_at(j, ch, c, hw);
            double g = dy[e];
            db += g;
            dw += g * ((double)x[e] - mean) * inv;
        }
        s[threadIdx.x] = db;
        s2[threadIdx.x] = dw;
        block_sum(s);
        block_sum(s2);
        db = s[0];
        dw = s2[0];
        __syncthreads();
        if (threadIdx.x == 0) {
            if (dweight) dweight[ch] = (float)dw;
            if (dbias) dbias[ch] = (float)db;
        }
        if (!dx) continue;
        double k = (double)weight[ch] * inv;
        for (size_t j = threadIdx.x; j < len; j += THREADS) {
            size_t e = bn_at(j, ch, c, hw);
            double xh = ((double)x[e] - mean) * inv;
            float v = (float)(k * ((double)dy[e] - db / M - xh * dw / M));
            dx[e] = acc ? dx[e] + v : v;
        }
    }
}

int pf_cuda_batchnorm_train_forward(float *y, const float *x, const float *weight,
                                    const float *bias, float *running, double *save, int n,
                                    int c, int h, int w, double eps, double momentum,
                                    cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_batchnorm_train_forward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t hw = (size_t)h * w;
    if (!c || !n || !hw) return 0;
    if ((size_t)n * hw < 2)
        return bad_arg(fn, "a training batch of one value per channel (N H W < 2)", err,
                       errlen);
    if (!y || !x || !weight || !bias || !running || !save) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_bn_train_forward, blocks_for((size_t)c), THREADS, 0, stream, y, x, weight, bias,
              running, save, c, n, hw, eps, momentum);
    return check_launch("k_bn_train_forward", err, errlen);
}

int pf_cuda_batchnorm_eval_forward(float *y, const float *x, const float *weight,
                                   const float *bias, const float *running, int n, int c, int h,
                                   int w, double eps, cudaStream_t stream, char *err,
                                   size_t errlen) {
    const char *fn = "pf_cuda_batchnorm_eval_forward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw;
    if (!count) return 0;
    if (!y || !x || !weight || !bias || !running) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_bn_eval_forward, grid_for(count), THREADS, 0, stream, y, x, weight, bias,
              running, c, hw, eps, count);
    return check_launch("k_bn_eval_forward", err, errlen);
}

int pf_cuda_batchnorm_backward(float *dx, float *dweight, float *dbias, const float *dy,
                               const float *x, const float *weight, const double *save, int n,
                               int c, int h, int w, int acc, cudaStream_t stream, char *err,
                               size_t errlen) {
    const char *fn = "pf_cuda_batchnorm_backward";
    if (negative(n, c, h, w)) return bad_arg(fn, "negative dimension", err, errlen);
    size_t hw = (size_t)h * w;
    if (!c || (!dx && !dweight && !dbias)) return 0;
    if (!dy || !x || !save || (dx && !weight)) return null_tensor(fn, err, errlen);
    PF_LAUNCH(k_bn_backward, blocks_for((size_t)c), THREADS, 0, stream, dx, dweight, dbias, dy,
              x, weight, save, c, n, hw, acc);
    return check_launch("k_bn_backward", err, errlen);
}

/* ---- EDVR's TSA-fusion ops (PF_G_MUL, PF_G_CHSUM, PF_G_MAXPOOL3, PF_G_AVGPOOL3) ---------- */

/* Shape and tensors of a TSA op: count elements (0: nothing to do, returns 1). */
static int tsa_check(const char *fn, int n, int c, int h, int w, int tensors_given,
                     size_t count, char *err, size_t errlen) {
    if (negative(n, c, h, w)) return bad_arg(fn, "bad shape", err, errlen);
    if (!count) return 1;
    return tensors_given ? 0 : null_tensor(fn, err, errlen);
}

/* One thread per output element; i1 the factor's element (the plane's pixel when c1 = 1). */
__global__ void k_mul_forward(float *y, const float *x0, const float *x1, const float *r,
                              float sc, int c, int c1, size_t hw, size_t count) {
    GRID_STRIDE(i, count) {
        size_t i1 = c1 == 1 ? i / ((size_t)c * hw) * hw + i % hw : i;
        float v = __fmul_rn(sc, __fmul_rn(x0[i], x1[i1]));
        y[i] = r ? __fadd_rn(v, r[i]) : v;
    }
}

int pf_cuda_mul_forward(float *y, const float *x0, const float *x1, const float *r, float sc,
                        int n, int c, int c1, int h, int w, cudaStream_t stream, char *err,
                        size_t errlen) {
    size_t count = (size_t)n * c * h * w;
    if (c1 != c && c1 != 1) return bad_arg("pf_cuda_mul_forward", "c1 not c or 1", err, errlen);
    int rc = tsa_check("pf_cuda_mul_forward", n, c, h, w, y && x0 && x1, count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    PF_LAUNCH(k_mul_forward, grid_for(count), THREADS, 0, stream, y, x0, x1, r, sc, c, c1,
              (size_t)h * w, count);
    return check_launch("k_mul_forward", err, errlen);
}

/* dx0 = [dx0 +] sc dy x1, one thread per element of x0 */
__global__ void k_mul_backward_x0(float *dx0, const float *dy, const float *x1, float sc, int c,
                                  int c1, size_t hw, int acc, size_t count) {
    GRID_STRIDE(i, count) {
        size_t i1 = c1 == 1 ? i / ((size_t)c * hw) * hw + i % hw : i;
        float g = __fmul_rn(__fmul_rn(sc, dy[i]), x1[i1]);
        dx0[i] = acc ? __fadd_rn(dx0[i], g) : g;
    }
}

/* dx1 = [dx1 +] sc dy x0, one thread per element of x1: c1 = 1 sums the c channels of its
   pixel in order, in double */
__global__ void k_mul_backward_x1(float *dx1, const float *dy, const float *x0, float sc, int c,
                                  int c1, size_t hw, int acc, size_t count1) {
    GRID_STRIDE(i, count1) {
        float g;
        if (c1 == 1) {
            size_t base = i / hw * c * hw + i % hw;
            double s = 0;
            for (int k = 0; k < c; k++) s += (double)dy[base + k * hw] * x0[base + k * hw];
            g = (float)(sc * s);
        } else {
            g = (float)(sc * ((double)dy[i] * x0[i]));
        }
        dx1[i] = acc ? __fadd_rn(dx1[i], g) : g;
    }
}

int pf_cuda_mul_backward(float *dx0, float *dx1, const float *dy, const float *x0,
                         const float *x1, float sc, int n, int c, int c1, int h, int w,
                         int acc0, int acc1, cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_mul_backward";
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw, count1 = (size_t)n * c1 * hw;
    if (c1 != c && c1 != 1) return bad_arg(fn, "c1 not c or 1", err, errlen);
    int rc = tsa_check(fn, n, c, h, w, dy && x0 && x1, count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    if (dx0) {
        PF_LAUNCH(k_mul_backward_x0, grid_for(count), THREADS, 0, stream, dx0, dy, x1, sc, c,
                  c1, hw, acc0, count);
        if (check_launch("k_mul_backward_x0", err, errlen)) return -1;
    }
    if (!dx1) return 0;
    PF_LAUNCH(k_mul_backward_x1, grid_for(count1), THREADS, 0, stream, dx1, dy, x0, sc, c, c1,
              hw, acc1, count1);
    return check_launch("k_mul_backward_x1", err, errlen);
}

/* One thread per output pixel (n, p): the channels summed in order, in double. */
__global__ void k_chsum_forward(float *y, const float *x, int c, size_t hw, size_t count) {
    GRID_STRIDE(i, count) {
        size_t base = i / hw * c * hw + i % hw;
        double s = 0;
        for (int k = 0; k < c; k++) s += x[base + k * hw];
        y[i] = (float)s;
    }
}

int pf_cuda_chsum_forward(float *y, const float *x, int n, int c, int h, int w,
                          cudaStream_t stream, char *err, size_t errlen) {
    size_t hw = (size_t)h * w, count = (size_t)n * hw;
    int rc = tsa_check("pf_cuda_chsum_forward", n, c, h, w, y && x, count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    PF_LAUNCH(k_chsum_forward, grid_for(count), THREADS, 0, stream, y, x, c, hw, count);
    return check_launch("k_chsum_forward", err, errlen);
}

/* One thread per input element: its pixel's dy. */
__global__ void k_chsum_backward(float *dx, const float *dy, int c, size_t hw, int acc,
                                 size_t count) {
    GRID_STRIDE(i, count) {
        float g = dy[i / ((size_t)c * hw) * hw + i % hw];
        dx[i] = acc ? __fadd_rn(dx[i], g) : g;
    }
}

int pf_cuda_chsum_backward(float *dx, const float *dy, int n, int c, int h, int w, int acc,
                           cudaStream_t stream, char *err, size_t errlen) {
    size_t hw = (size_t)h * w, count = (size_t)n * c * hw;
    int rc = tsa_check("pf_cuda_chsum_backward", n, c, h, w, dx && dy, count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    PF_LAUNCH(k_chsum_backward, grid_for(count), THREADS, 0, stream, dx, dy, c, hw, acc, count);
    return check_launch("k_chsum_backward", err, errlen);
}

/* Offset in plane p (h x w) of the maximum of 3 x 3 window (Y, X) (rows 2 Y - 1 .. 2 Y + 1
   inside the plane): the first in row-major order, a NaN winning (nn/cpu/ops.c's rule). */
__device__ int max3_of_window(const float *p, int h, int w, int Y, int X) {
    int best = -1;
    float m = 0.0f;
    for (int i = 2 * Y - 1; i <= 2 * Y + 1; i++)
        for (int j = 2 * X - 1; j <= 2 * X + 1; j++) {
            if (i < 0 || j < 0 || i >= h || j >= w) continue;
            float v = p[i * w + j];
            if (best < 0 || v > m || v != v) {
                m = v;
                best = i * w + j;
            }
        }
    return best;
}

/* One thread per output element (plane, Y, X) of the pooled N C x h/2 x w/2. */
__global__ void k_pool3_forward(float *y, const float *x, int max, int h, int w, size_t count) {
    int H = h / 2, W = w / 2;
    GRID_STRIDE(i, count) {
        int X = (int)(i % W), Y = (int)(i / W % H);
        const float *p = x + i / ((size_t)H * W) * h * w;
        if (max) {
            y[i] = p[max3_of_window(p, h, w, Y, X)];
            continue;
        }
        double s = 0;
        for (int r = 2 * Y - 1; r <= 2 * Y + 1; r++)
            for (int q = 2 * X - 1; q <= 2 * X + 1; q++)
                if (r >= 0 && q >= 0 && r < h && q < w) s += p[r * w + q];
        y[i] = (float)(s / 9.0);
    }
}

int pf_cuda_pool3_forward(float *y, const float *x, int max, int n, int c, int h, int w,
                          cudaStream_t stream, char *err, size_t errlen) {
    const char *fn = "pf_cuda_pool3_forward";
    if (h % 2 || w % 2) return bad_arg(fn, "bad shape (h and w must be even)", err, errlen);
    size_t count = (size_t)n * c * (h / 2) * (w / 2);
    int rc = tsa_check(fn, n, c, h, w, y && x, count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    PF_LAUNCH(k_pool3_forward, grid_for(count), THREADS, 0, stream, y, x, max, h, w, count);
    return check_launch("k_pool3_forward", err, errlen);
}

/* One thread per input element (plane, r, q): the windows holding it (rows Y with 2 Y - 1 <=
   r <= 2 Y + 1), in row-major window order as the CPU's scatter adds them. */
__global__ void k_pool3_backward(float *dx, const float *dy, const float *x, int max, int h,
                                 int w, int acc, size_t count) {
    int H = h / 2, W = w / 2;
    GRID_STRIDE(i, count) {
        int q = (int)(i % w), r = (int)(i / w % h);
        size_t plane = i / ((size_t)h * w);
        const float *p = x + plane * h * w, *g = dy + plane * H * W;
        float v = acc ? dx[i] : 0.0f;
        for (int Y = r / 2; Y <= (r + 1) / 2 && Y < H; Y++)
            for (int X = q / 2; X <= (q + 1) / 2 && X < W; X++) {
                if (!max) v = __fadd_rn(v, __fdiv_rn(g[Y * W + X], 9.0f));
                else if (max3_of_window(p, h, w, Y, X) == r * w + q)
                    v = __fadd_rn(v, g[Y * W + X]);
            }
        dx[i] = v;
    }
}

int pf_cuda_pool3_backward(float *dx, const float *dy, const float *x, int max, int n, int c,
                           int h, int w, int acc, cudaStream_t stream, char *err,
                           size_t errlen) {
    const char *fn = "pf_cuda_pool3_backward";
    if (h % 2 || w % 2) return bad_arg(fn, "bad shape (h and w must be even)", err, errlen);
    size_t count = (size_t)n * c * h * w;
    int rc = tsa_check(fn, n, c, h, w, dx && dy && (x || !max), count, err, errlen);
    if (rc) return rc < 0 ? -1 : 0;
    PF_LAUNCH(k_pool3_backward, grid_for(count), THREADS, 0, stream, dx, dy, x, max, h, w, acc,
              count);
    return check_launch("k_pool3_backward", err, errlen);
}
