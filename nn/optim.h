/*  optim — Adam over a flat parameter buffer (Kingma & Ba 2015; update identical to
    torch.optim.Adam with amsgrad=False: weight_decay adds wd * p to the gradient; bias
    corrections 1 - beta^t; p -= lr * m_hat / (sqrt(v_hat) + eps)).
*/
#ifndef PF_OPTIM_H
#define PF_OPTIM_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    size_t n;                   /* number of parameters */
    float beta1, beta2, eps, weight_decay;
    int64_t step;               /* steps taken (t) */
    float *exp_avg;             /* m, n floats (torch's state name exp_avg) */
    float *exp_avg_sq;          /* v, n floats */
} pf_adam;

/* Returns 0, or -1 when out of memory. State starts at zero, step 0. */
int pf_adam_init(pf_adam *a, size_t n, float beta1, float beta2, float eps, float weight_decay);
/* One update with learning rate `lr` (increments step first, as torch does). */
void pf_adam_step(pf_adam *a, float *params, const float *grads, float lr);
void pf_adam_free(pf_adam *a);
#endif
