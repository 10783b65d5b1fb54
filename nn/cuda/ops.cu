/*  ops — PixFlow's own CUDA kernels (see ops.h for each function's contract).

    Every element-wise kernel is a grid-stride loop over size_t indices, launched with
    THREADS threads and at most MAX_BLOCKS blocks, so any count fits one launch. Kernels that
    permute data (layout conversion, pixel shuffle) loop over the OUTPUT so that writes are
    coalesced. The loss reduction uses a fixed grid and fixed-order trees (no atomics), so it
    is deterministic. Adam uses explicitly rounded float operations (no FMA contraction), so it
    computes the same bits as the C loop in nn/optim.c compiled without FMA.
*/
#include "nn/cuda/ops.h"
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>

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
    k_u8_nhwc_to_nchw<<<grid_for(count), THREADS, 0, stream>>>(dst, src, n, h, w, c);
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
    k_mean_shift<<<grid_for(count), THREADS, 0, stream>>>(y, x, count, c, (size_t)h * w, mv,
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
    k_relu_forward<<<grid_for(count), THREADS, 0, stream>>>(y, x, count);
    return check_launch("k_relu_forward", err, errlen);
}

int pf_cuda_relu_backward(float *dx, const float *dy, const float *y, size_t count,
                          cudaStream_t stream, char *err, size_t errlen) {
    if (!count) return 0;
    k_relu_backward<<<grid_for(count), THREADS, 0, stream>>>(dx, dy, y, count);
    return check_launch("k_relu_backward", err, errlen);
}

int pf_cuda_add_scaled(float *y, const float *a, const float *b, float s, size_t count,
                       cudaStream_t stream, char *err, size_t errlen) {
    if (!count) return 0;
    k_add_scaled<<<grid_for(count), THREADS, 0, stream>>>(y, a, b, s, count);
    return check_launch("k_add_scaled", err, errlen);
}

int pf_cuda_scale(float *y, const float *x, float s, size_t count, cudaStream_t stream,
                  char *err, size_t errlen) {
    if (!count) return 0;
    k_scale<<<grid_for(count), THREADS, 0, stream>>>(y, x, s, count);
    return check_launch("k_scale", err, errlen);
}

int pf_cuda_axpy(float *y, const float *x, float s, size_t count, cudaStream_t stream,
                 char *err, size_t errlen) {
    if (!count) return 0;
    k_axpy<<<grid_for(count), THREADS, 0, stream>>>(y, x, s, count);
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
    k_pixel_shuffle_forward<<<grid_for(count), THREADS, 0, stream>>>(out, in, c, h, w, r, count);
    return check_launch("k_pixel_shuffle_forward", err, errlen);
}

int pf_cuda_pixel_shuffle_backward(float *din, const float *dout, int n, int c, int h, int w,
                                   int r, cudaStream_t stream, char *err, size_t errlen) {
    if (n < 0 || c < 0 || h < 0 || w < 0 || r < 1)
        return bad_arg("pf_cuda_pixel_shuffle_backward", "bad shape or factor", err, errlen);
    size_t count = (size_t)n * c * h * w * r * r;
    if (!count) return 0;
    k_pixel_shuffle_backward<<<grid_for(count), THREADS, 0, stream>>>(din, dout, c, h, w, r,
                                                                      count);
    return check_launch("k_pixel_shuffle_backward", err, errlen);
}

/* ---- losses ------------------------------------------------------------------------------- */

enum { LOSS_L1 = 0, LOSS_MSE = 1 };

/* Tree sum of THREADS doubles in shared memory, fixed order; the result is in s[0]. */
__device__ void block_sum(double *s) {
    for (int half = THREADS / 2; half > 0; half /= 2) {
        __syncthreads();
        if ((int)threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
    }
    __syncthreads();
}

/* Pass 1, LOSS_BLOCKS blocks: per-element loss summed per block into partial[blockIdx.x];
   the gradient written on the way (grad may be NULL). */
__global__ void k_loss_partial(double *partial, float *grad, const float *x, const float *y,
                               size_t count, int type, float gscale) {
    __shared__ double s[THREADS];
    double acc = 0.0;
    GRID_STRIDE(i, count) {
        float d = x[i] - y[i];
        float g;
        if (type == LOSS_L1) {
            acc += fabs((double)d);
            g = d > 0.0f ? 1.0f : d < 0.0f ? -1.0f : 0.0f;
        } else {
            acc += (double)d * (double)d;
            g = 2.0f * d;
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
                      const float *y, size_t count, float weight, double *scratch,
                      cudaStream_t stream, char *err, size_t errlen) {
    if (!count) return bad_arg(fn, "empty input (the mean is undefined)", err, errlen);
    /* the gradient's scale as nn/loss.c computes it: weight / count in float */
    float gscale = weight / (float)count;
    k_loss_partial<<<LOSS_BLOCKS, THREADS, 0, stream>>>(scratch, grad, x, y, count, type,
                                                        gscale);
    if (check_launch("k_loss_partial", err, errlen)) return -1;
    k_loss_final<<<1, THREADS, 0, stream>>>(loss, scratch, (double)weight / (double)count);
    return check_launch("k_loss_final", err, errlen);
}

int pf_cuda_l1_loss(float *loss, float *grad, const float *x, const float *y, size_t count,
                    float weight, double *scratch, cudaStream_t stream, char *err,
                    size_t errlen) {
    return pixel_loss("pf_cuda_l1_loss", LOSS_L1, loss, grad, x, y, count, weight, scratch,
                      stream, err, errlen);
}

int pf_cuda_mse_loss(float *loss, float *grad, const float *x, const float *y, size_t count,
                     float weight, double *scratch, cudaStream_t stream, char *err,
                     size_t errlen) {
    return pixel_loss("pf_cuda_mse_loss", LOSS_MSE, loss, grad, x, y, count, weight, scratch,
                      stream, err, errlen);
}

/* ---- Adam --------------------------------------------------------------------------------- */

/* nn/optim.c's loop, each operation rounded on its own (no contraction into FMA). */
__global__ void k_adam(float *p, const float *grads, float *m, float *v, size_t count,
                       float step_size, float bc2_sqrt, float b1, float b2, float eps,
                       float wd) {
    GRID_STRIDE(i, count) {
        float g = grads[i];
        if (wd != 0.0f) g = __fadd_rn(g, __fmul_rn(wd, p[i]));
        float mi = __fadd_rn(__fmul_rn(b1, m[i]), __fmul_rn(__fsub_rn(1.0f, b1), g));
        float vi = __fadd_rn(__fmul_rn(b2, v[i]), __fmul_rn(__fmul_rn(__fsub_rn(1.0f, b2), g), g));
        m[i] = mi;
        v[i] = vi;
        float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), bc2_sqrt), eps);
        p[i] = __fsub_rn(p[i], __fmul_rn(step_size, __fdiv_rn(mi, denom)));
    }
}

int pf_cuda_adam_step(float *params, const float *grads, float *m, float *v, size_t count,
                      float lr, float beta1, float beta2, float eps, float weight_decay,
                      int64_t step, cudaStream_t stream, char *err, size_t errlen) {
    if (step < 1) return bad_arg("pf_cuda_adam_step", "step must be >= 1", err, errlen);
    if (!count) return 0;
    double bc1 = 1.0 - pow((double)beta1, (double)step);
    double bc2 = 1.0 - pow((double)beta2, (double)step);
    float step_size = (float)((double)lr / bc1);
    float bc2_sqrt = (float)sqrt(bc2);
    k_adam<<<grid_for(count), THREADS, 0, stream>>>(params, grads, m, v, count, step_size,
                                                    bc2_sqrt, beta1, beta2, eps, weight_decay);
    return check_launch("k_adam", err, errlen);
}

/* ---- bf16 --------------------------------------------------------------------------------- */

__global__ void k_f32_to_bf16(uint16_t *dst, const float *src, size_t count) {
    GRID_STRIDE(i, count) dst[i] = __bfloat16_as_ushort(__float2bfloat16_rn(src[i]));
}

int pf_cuda_f32_to_bf16(uint16_t *dst, const float *src, size_t count, cudaStream_t stream,
                        char *err, size_t errlen) {
    if (!count) return 0;
    k_f32_to_bf16<<<grid_for(count), THREADS, 0, stream>>>(dst, src, count);
    return check_launch("k_f32_to_bf16", err, errlen);
}
