/*  srcnn — SRCNN (Dong et al., "Image Super-Resolution Using Deep Convolutional Networks",
    ECCV 2014) as MMagic's SRCNNNet (mmagic/models/editors/srcnn/srcnn_net.py):

      x = Upsample(scale_factor=scale, mode='bicubic', align_corners=False)(lq)
      y = conv3(ReLU(conv2(ReLU(conv1(x)))))     channels (3, c1, c2, 3), kernels (k1, k2, k3),
                                                 padding k // 2, biases
    No mean shift: lq and y are in [0, 1] units. The upsampler has no parameters and the input
    needs no gradient, so backward stops at conv1's weights.
*/
#include <stdio.h>
#include "nn/layers.h"
#include "nn/model_internal.h"

#define TRY(x) do { if (x) return -1; } while (0)
#define ALLOC(ptr, count) do { if (!((ptr) = pf_plan_alloc(p, (count)))) goto oom; } while (0)

int pf_srcnn_plan(pf_model *m, pf_plan *p, pf_conv *convs, int n, int h, int w, int training,
                  char *err, size_t errlen) {
    int s = m->scale, H = h * s, W = w * s;
    const int *ch = m->cfg.srcnn_channels;
    pf_dnnl *ctx = &m->dnnl;
    TRY(pf_conv_setup(&convs[0], ctx, n, H, W, -1, -1, training, 0, err, errlen));
    TRY(pf_conv_setup(&convs[1], ctx, n, H, W, convs[0].dst_block, -1, training, 1, err,
                      errlen));
    TRY(pf_conv_setup(&convs[2], ctx, n, H, W, convs[1].dst_block, -1, training, 1, err,
                      errlen));
    p->in_block = convs[0].src_block;
    p->block = convs[0].dst_block;
    p->out_block = convs[2].dst_block;
    p->a = (float **)pf_plan_alloc(p, 2 * sizeof(float *) / sizeof(float) + 1);
    if (!p->a) goto oom;
    size_t f1 = pf_blk_numel(n, ch[1], H, W, convs[0].dst_block);
    size_t f2 = pf_blk_numel(n, ch[2], H, W, convs[1].dst_block);
    size_t fo = pf_blk_numel(n, 3, H, W, p->out_block);
    ALLOC(p->x, pf_blk_numel(n, 3, H, W, p->in_block));
    ALLOC(p->a[0], f1);
    ALLOC(p->a[1], f2);
    ALLOC(p->out, fo);
    if (training) {
        ALLOC(p->d_out, fo);
        ALLOC(p->d_a, f2);
        ALLOC(p->d_t, f1);
    }
    return 0;
oom:
    snprintf(err, errlen, "SRCNN: out of memory for activations of a %d x %d x %d batch", n, H,
             W);
    return -1;
}

int pf_srcnn_forward(pf_model *m, pf_plan *p, pf_conv *convs, const uint8_t *lq, char *err,
                     size_t errlen) {
    pf_bicubic_upsample_image(p->x, lq, p->n, p->h, p->w, m->scale, p->in_block);
    TRY(pf_conv_forward(&convs[0], p->x, p->a[0], err, errlen));
    TRY(pf_conv_forward(&convs[1], p->a[0], p->a[1], err, errlen));
    TRY(pf_conv_forward(&convs[2], p->a[1], p->out, err, errlen));
    return 0;
}

int pf_srcnn_backward(pf_model *m, pf_plan *p, pf_conv *convs, char *err, size_t errlen) {
    float *g = m->grads;
    TRY(pf_conv_backward_weights(&convs[2], p->a[1], p->d_out, pf_model_conv_w(m, g, 2),
                                 pf_model_conv_b(m, g, 2), err, errlen));
    TRY(pf_conv_backward_data(&convs[2], p->d_out, p->d_a, err, errlen));
    TRY(pf_op_relu_backward(&p->ops[0], &m->dnnl, p->d_a, p->a[1],
                            pf_blk_numel(p->n, m->cfg.srcnn_channels[2], p->h * m->scale,
                                         p->w * m->scale, convs[1].dst_block),
                            err, errlen));
    TRY(pf_conv_backward_weights(&convs[1], p->a[0], p->d_a, pf_model_conv_w(m, g, 1),
                                 pf_model_conv_b(m, g, 1), err, errlen));
    TRY(pf_conv_backward_data(&convs[1], p->d_a, p->d_t, err, errlen));
    TRY(pf_op_relu_backward(&p->ops[1], &m->dnnl, p->d_t, p->a[0],
                            pf_blk_numel(p->n, m->cfg.srcnn_channels[1], p->h * m->scale,
                                         p->w * m->scale, convs[0].dst_block),
                            err, errlen));
    TRY(pf_conv_backward_weights(&convs[0], p->x, p->d_t, pf_model_conv_w(m, g, 0),
                                 pf_model_conv_b(m, g, 0), err, errlen));
    return 0;
}
