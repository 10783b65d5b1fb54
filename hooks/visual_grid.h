/*  visual_grid — the picture the visual hook saves and the log hook sends to TensorBoard: one
    row per sample, three columns of GT size side by side: LQ upscaled | network output | GT.

    Input is a PF_MSG_VISUAL (proto/proto.h): frames lq (n x lq_h x lq_w x 3), output and gt
    (n x gt_h x gt_w x 3), uint8 NHWC RGB. The LQ column is the LQ frame resized by the integer
    factor s = gt_h / lq_h with MATLAB's bicubic imresize (common/imresize.c), so it is the
    "bicubic" baseline the SR literature compares against.
*/
#ifndef PF_VISUAL_GRID_H
#define PF_VISUAL_GRID_H
#include <stddef.h>
#include <stdint.h>

#include "proto/proto.h"

/* Check that a visual message's frames match its header: 1 <= n <= PF_MAX_VISUAL, gt_h =
   s * lq_h and gt_w = s * lq_w for one integer s >= 1, lq_len = n*lq_h*lq_w*3 and out_len =
   gt_len = n*gt_h*gt_w*3 bytes, each at most PF_MAX_VISUAL_FRAME. Returns 0, or -1 with err
   saying which size is wrong (the caller names the sender). */
int pf_visual_check(const pf_msg_visual *v, size_t lq_len, size_t out_len, size_t gt_len,
                    char *err, size_t errlen);

/* Build the grid of a checked message: RGB8 HWC, *w = 3 * gt_w, *h = n * gt_h pixels; row i
   (pixels i*gt_h .. (i+1)*gt_h - 1) holds sample i: columns [0, gt_w) the LQ upscaled by s,
   [gt_w, 2 gt_w) the output, [2 gt_w, 3 gt_w) the GT. Returns the malloc'd pixels (free
   them), or NULL with err (out of memory). */
uint8_t *pf_visual_grid(const pf_msg_visual *v, const uint8_t *lq, const uint8_t *output,
                        const uint8_t *gt, int *w, int *h, char *err, size_t errlen);

/* The centred crop of an lq_h x lq_w LQ image whose GT (s times larger) fits one visual frame:
   the largest ch x cw with the image's aspect ratio (rounded down) such that
   (s ch) (s cw) 3 <= PF_MAX_VISUAL_FRAME, at y0 = (lq_h - ch) / 2, x0 = (lq_w - cw) / 2; the
   whole image (y0 = x0 = 0) when it fits. The GT and output crops are s times each. */
void pf_visual_fit(int lq_h, int lq_w, int s, int *y0, int *x0, int *ch, int *cw);
#endif
