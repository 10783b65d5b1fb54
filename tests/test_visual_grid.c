/*  The grid of the visual hook and the TensorBoard images (hooks/visual_grid.c).

    A. A hand-worked grid: 2 samples, LQ 1 x 1, GT and output 2 x 2 (scale 2). A 1 x 1 image
       upscaled by MATLAB's bicubic imresize is that pixel everywhere (every tap mirrors onto
       the one pixel and the weights sum to 1), so the grid (6 x 4 pixels) is known pixel by
       pixel: row block i holds LQ_i repeated | output_i | GT_i.
    B. Scale 3 from a 2 x 1 LQ: the GT and output columns are the frames' bytes at the right
       places, the LQ column is pf_imresize_u8 of the LQ frame, and its two ends are
       hand-checked (mirror padding keeps the top pixel at the top value's side).
    D. pf_visual_fit: a 24 x 24 LQ at x2 fits whole; a 600 x 400 LQ at x2 (GT 2.88 MB) is cut
       to 362 x 241 at (119, 79), worked by hand: 1 MiB / 3 / 4 = 87381 LQ pixels, factor
       sqrt(87381 / 240000) = 0.60340, 600 f = 362.04, 400 f = 241.36; GT 724 x 482 x 3 =
       1,046,904 bytes <= 1,048,576. A 1 x 100000 strip at x4 keeps 1 row and 21845 columns.
    C. pf_visual_check rejects what a bad publisher could send: n = 0, a GT that is not an
       integer multiple of the LQ, a frame one byte short or long, frames over
       PF_MAX_VISUAL_FRAME; and accepts the exact sizes.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/imresize.h"
#include "hooks/visual_grid.h"
#include "pf_test.h"

static pf_msg_visual header(uint32_t n, uint32_t lq_h, uint32_t lq_w, uint32_t gt_h,
                            uint32_t gt_w) {
    pf_msg_visual v;
    memset(&v, 0, sizeof v);
    snprintf(v.tag, sizeof v.tag, "train");
    v.n = n;
    v.lq_h = lq_h;
    v.lq_w = lq_w;
    v.gt_h = gt_h;
    v.gt_w = gt_w;
    return v;
}

static void test_hand_worked(void) {
    pf_msg_visual v = header(2, 1, 1, 2, 2);
    const uint8_t lq[2 * 3] = {10, 20, 30, 200, 100, 50};
    uint8_t out[2 * 4 * 3], gt[2 * 4 * 3];
    for (int i = 0; i < 24; i++) {
        out[i] = (uint8_t)(100 + i);
        gt[i] = (uint8_t)(i * 3);
    }
    char err[256];
    CHECK(pf_visual_check(&v, sizeof lq, sizeof out, sizeof gt, err, sizeof err) == 0, "%s",
          err);
    int w = 0, h = 0;
    uint8_t *g = pf_visual_grid(&v, lq, out, gt, &w, &h, err, sizeof err);
    CHECK(g && w == 6 && h == 4, "grid %dx%d: %s", w, h, g ? "" : err);
    if (!g) return;
    /* want[y][x] written out: sample 0 rows 0-1, sample 1 rows 2-3. */
    uint8_t want[4][6][3];
    for (int i = 0; i < 2; i++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 2; x++)
                for (int c = 0; c < 3; c++) {
                    int p = ((i * 2 + y) * 2 + x) * 3 + c;
                    want[i * 2 + y][x][c] = lq[i * 3 + c];
                    want[i * 2 + y][2 + x][c] = (uint8_t)(100 + p);
                    want[i * 2 + y][4 + x][c] = (uint8_t)(p * 3);
                }
    CHECK(memcmp(g, want, sizeof want) == 0, "hand-worked grid differs");
    CHECK(g[(3 * 6 + 1) * 3 + 0] == 200 && g[(3 * 6 + 3) * 3 + 2] == 100 + 23 &&
          g[(2 * 6 + 4) * 3 + 1] == 3 * 13, "spot checks");
    free(g);
}

static void test_scale3(void) {
    pf_msg_visual v = header(1, 2, 1, 6, 3);
    const uint8_t lq[2 * 3] = {0, 0, 0, 255, 255, 255};
    uint8_t out[18 * 3], gt[18 * 3], up[18 * 3];
    for (int i = 0; i < 54; i++) {
        out[i] = (uint8_t)(i + 1);
        gt[i] = (uint8_t)(250 - i);
    }
    char err[256];
    CHECK(pf_visual_check(&v, sizeof lq, sizeof out, sizeof gt, err, sizeof err) == 0, "%s",
          err);
    int w = 0, h = 0;
    uint8_t *g = pf_visual_grid(&v, lq, out, gt, &w, &h, err, sizeof err);
    CHECK(g && w == 9 && h == 6, "grid %dx%d", w, h);
    CHECK(pf_imresize_u8(lq, 2, 1, 3, 3.0, up) == 0, "imresize");
    if (!g) return;
    int ok = 1;
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 3; x++)
            for (int c = 0; c < 3; c++) {
                const uint8_t *px = g + ((size_t)y * 9) * 3;
                ok &= px[x * 3 + c] == up[(y * 3 + x) * 3 + c];
                ok &= px[(3 + x) * 3 + c] == out[(y * 3 + x) * 3 + c];
                ok &= px[(6 + x) * 3 + c] == gt[(y * 3 + x) * 3 + c];
            }
    CHECK(ok, "scale-3 grid columns");
    /* Top row: the output pixel centre y = 1/6 in LQ rows sits in the black half -> near 0;
       bottom row the white half -> near 255; monotone in between. */
    CHECK(g[0] < 20 && g[5 * 27] > 235 && g[2 * 27] < g[3 * 27], "bicubic column shape %d %d",
          g[0], g[5 * 27]);
    free(g);
}

static void test_check(void) {
    char err[256];
    pf_msg_visual v = header(2, 4, 4, 8, 8);
    size_t lq = 2 * 16 * 3, gt = 2 * 64 * 3;
    CHECK(pf_visual_check(&v, lq, gt, gt, err, sizeof err) == 0, "exact sizes: %s", err);
    CHECK(pf_visual_check(&v, lq - 1, gt, gt, err, sizeof err) < 0 && strstr(err, "do not match"),
          "short lq: %s", err);
    CHECK(pf_visual_check(&v, lq, gt + 1, gt, err, sizeof err) < 0, "long output");
    CHECK(pf_visual_check(&v, lq, gt, gt - 3, err, sizeof err) < 0, "short gt");
    pf_msg_visual bad = header(0, 4, 4, 8, 8);
    CHECK(pf_visual_check(&bad, 0, 0, 0, err, sizeof err) < 0, "n = 0");
    bad = header(1, 4, 4, 9, 8);
    CHECK(pf_visual_check(&bad, 48, 216, 216, err, sizeof err) < 0 && strstr(err, "multiple"),
          "gt 9x8 from lq 4x4: %s", err);
    bad = header(1, 4, 4, 8, 12);
    CHECK(pf_visual_check(&bad, 48, 288, 288, err, sizeof err) < 0, "two scales");
    bad = header(1, 300, 300, 600, 600);          /* 1,080,000 bytes > 1 MiB */
    CHECK(pf_visual_check(&bad, 270000, 1080000, 1080000, err, sizeof err) < 0 &&
          strstr(err, "exceed"), "oversized frames: %s", err);
}

static void test_fit(void) {
    int y0, x0, ch, cw;
    pf_visual_fit(24, 24, 2, &y0, &x0, &ch, &cw);
    CHECK(y0 == 0 && x0 == 0 && ch == 24 && cw == 24, "24x24 fits: %d %d %dx%d", y0, x0, ch, cw);
    pf_visual_fit(600, 400, 2, &y0, &x0, &ch, &cw);
    CHECK(y0 == 119 && x0 == 79 && ch == 362 && cw == 241, "600x400 x2: (%d, %d) %dx%d", y0, x0,
          ch, cw);
    CHECK((size_t)ch * 2 * cw * 2 * 3 <= PF_MAX_VISUAL_FRAME, "fits a frame");
    pf_visual_fit(1, 100000, 4, &y0, &x0, &ch, &cw);
    CHECK(ch == 1 && cw == 21845 && y0 == 0 && x0 == (100000 - 21845) / 2,
          "strip: (%d, %d) %dx%d", y0, x0, ch, cw);
}

int main(void) {
    test_hand_worked();
    test_scale3();
    test_check();
    test_fit();
    return pf_test_end("test_visual_grid");
}
