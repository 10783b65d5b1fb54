/*  pf_test_naive — naive reference loops in double that several tests check the executors
    against (independent of oneDNN and of the executors' kernels). */
#ifndef PF_TEST_NAIVE_H
#define PF_TEST_NAIVE_H

/* torch.nn.functional.conv2d(x, wt, b, stride=s, padding=p) in double: y (n x oc x ho x wo,
   ho = (h + 2 p - k) / s + 1, likewise wo) from x (n x ic x h x w) and wt (oc x ic x k x k);
   b (oc) NULL: no bias. */
static inline void pf_naive_conv2d(double *y, const double *x, int n_batch, int ic, int h,
                                   int w, const double *wt, const double *b, int oc, int k,
                                   int s, int p) {
    int ho = (h + 2 * p - k) / s + 1, wo = (w + 2 * p - k) / s + 1;
    for (int n = 0; n < n_batch; n++)
        for (int o = 0; o < oc; o++)
            for (int yy = 0; yy < ho; yy++)
                for (int xx = 0; xx < wo; xx++) {
                    double v = b ? b[o] : 0;
                    for (int i = 0; i < ic; i++)
                        for (int ky = 0; ky < k; ky++)
                            for (int kx = 0; kx < k; kx++) {
                                int sy = yy * s + ky - p, sx = xx * s + kx - p;
                                if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;
                                v += wt[((o * ic + i) * k + ky) * k + kx] *
                                     x[((n * ic + i) * h + sy) * w + sx];
                            }
                    y[((n * oc + o) * ho + yy) * wo + xx] = v;
                }
}
#endif
