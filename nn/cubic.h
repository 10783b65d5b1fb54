/*  cubic — Keys' cubic convolution weights, shared by the CPU bicubic upsampler (nn/bicubic.c)
    and its CUDA counterpart (nn/cuda/ops.cu) so that both compute the same floats. */
#ifndef PF_CUBIC_H
#define PF_CUBIC_H

#ifdef __CUDACC__
#define PF_HOST_DEVICE __host__ __device__
#else
#define PF_HOST_DEVICE
#endif

/* Weights of the 4 taps floor(s) - 1 .. floor(s) + 2 for fractional offset t = s - floor(s)
   in [0, 1), A = -0.75 (PyTorch's get_cubic_upsample_coefficients). */
static inline PF_HOST_DEVICE void pf_cubic_coeffs(float c[4], float t) {
    const float A = -0.75f;
    float x1 = t + 1.0f, x2 = 1.0f - t, x3 = 2.0f - t;
    c[0] = ((A * x1 - 5.0f * A) * x1 + 8.0f * A) * x1 - 4.0f * A;
    c[1] = ((A + 2.0f) * t - (A + 3.0f)) * t * t + 1.0f;
    c[2] = ((A + 2.0f) * x2 - (A + 3.0f)) * x2 * x2 + 1.0f;
    c[3] = ((A * x3 - 5.0f * A) * x3 + 8.0f * A) * x3 - 4.0f * A;
}

#endif
