/*  optim — the optimiser over the flat parameter buffer: Adam, AdamW, SGD (momentum, Nesterov),
    weight decay, per-tensor learning-rate and weight-decay multipliers, gradient clipping by
    global norm, and an exponential moving average (EMA) of the parameters.

    Each update is the formula of the torch 1.13 single-tensor path (amsgrad=False,
    maximize=False, foreach=False); the multipliers are MMCV `paramwise_cfg` semantics (a
    parameter group with lr = lr * lr_mult, weight_decay = weight_decay * decay_mult); the
    clipping is torch.nn.utils.clip_grad_norm_ as MMCV's OptimizerHook calls it; the EMA is
    BasicSR's BaseModel.model_ema. tests/reference/optim_ref.py computes the same with torch.
*/
#ifndef PF_OPTIM_H
#define PF_OPTIM_H
#include <stddef.h>
#include <stdint.h>

typedef enum { PF_OPTIM_ADAM, PF_OPTIM_ADAMW, PF_OPTIM_SGD } pf_optim_kind;

/* Hyper-parameters (config section `optimizers`, less lr, which comes with every step). */
typedef struct {
    pf_optim_kind kind;
    float beta1, beta2, eps;    /* Adam, AdamW */
    float weight_decay;         /* Adam, SGD: L2 added to the gradient; AdamW: decoupled */
    float momentum, dampening;  /* SGD; momentum 0 = plain SGD, no buffer */
    int nesterov;               /* SGD: needs momentum > 0 and dampening 0 */
} pf_optim_settings;

/* A contiguous range of the flat buffer (one model tensor) with its multipliers. */
typedef struct {
    size_t offset, numel;       /* floats */
    float lr_mult;              /* 0 freezes the range: its parameters are never written */
    float decay_mult;
    int64_t start;              /* > 0: the range takes no part in steps 1..start (no update,
                                   no state change: a parameter without a gradient in torch,
                                   BasicVSR's fix_iter) and its own step count (bias
                                   correction, SGD's first step) is step - start */
} pf_optim_group;

typedef struct {
    pf_optim_settings s;
    size_t n;                   /* number of parameters */
    int64_t step;               /* steps taken (torch's state 'step'; the same for all tensors) */
    float *exp_avg;             /* Adam/AdamW m, n floats (torch's state name); else NULL */
    float *exp_avg_sq;          /* Adam/AdamW v, n floats; else NULL */
    float *momentum_buffer;     /* SGD with momentum > 0, n floats; else NULL */
    pf_optim_group *groups;     /* covering [0, n) in order; n_groups 0 = one group, mult 1 */
    int n_groups;
    float ema_decay;            /* 0 = no EMA */
    float *ema;                 /* EMA of the parameters, n floats, when ema_decay > 0 */
} pf_optim;

/* Returns 0, or -1 when out of memory. State starts at zero, step 0, no groups, no EMA. */
int pf_optim_init(pf_optim *o, size_t n, const pf_optim_settings *s);
/* Replace the groups by a copy of `g` (n_groups ranges, in order, covering [0, n) exactly).
   Returns 0, or -1 when they do not cover the buffer or out of memory. */
int pf_optim_set_groups(pf_optim *o, const pf_optim_group *g, int n_groups);
/* Turn the EMA on with `decay` in (0, 1), starting as a copy of `params` (n floats).
   Returns 0, or -1 when out of memory. */
int pf_optim_ema_init(pf_optim *o, float decay, const float *params);
/* One update with learning rate `lr` (increments step first, as torch does), then the EMA:
   ema = decay * ema + (1 - decay) * p, skipped for groups with lr_mult 0 so that a frozen
   tensor's EMA stays bit-identical to it (decay * p + (1 - decay) * p may round off p). */
void pf_optim_step(pf_optim *o, float *params, const float *grads, float lr);
/* The EMA update of pf_optim_step alone (nothing when the EMA is off), at the optimiser's
   current step: BasicSR's RealESRGANModel runs model_ema every iteration, also those whose
   generator step is skipped (net_d_iters, net_d_init_iters), and then params did not move. */
void pf_optim_ema_update(pf_optim *o, const float *params);
void pf_optim_free(pf_optim *o);
/* "Adam" / "AdamW" / "SGD", the config and checkpoint name of a kind. */
const char *pf_optim_kind_name(pf_optim_kind k);

/* torch.nn.utils.clip_grad_norm_(norm_type=2) over the flat gradient buffer (n floats): the
   total L2 norm of all gradients, summed in double; when max_norm / (norm + 1e-6) < 1 every
   gradient is multiplied by that factor. Returns the norm before clipping. */
double pf_clip_grad_norm(float *grads, size_t n, float max_norm);

/* Plain Adam with one group, the shorthand tests and benches use. */
typedef pf_optim pf_adam;
int pf_adam_init(pf_adam *a, size_t n, float beta1, float beta2, float eps, float weight_decay);
void pf_adam_step(pf_adam *a, float *params, const float *grads, float lr);
void pf_adam_free(pf_adam *a);
#endif
