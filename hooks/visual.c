/*  visual hook — `pixflow hook visual --connect ADDR`: pictures of training as it goes.

    Subscribes to topic "visual" only. Rank 0's worker publishes, every visual_config.interval
    iterations, the first few samples of the batch it just trained on (LQ, the network's output
    of that step, GT); this hook turns each such "train" message into a grid (one row per
    sample: LQ upscaled by bicubic imresize | output | GT, hooks/visual_grid.c) and writes it to
    OUTPUT_DIR/iter_<N>.png, N = iterations completed, OUTPUT_DIR = visual_config.output_dir or
    work_dir/visuals. Files are written to a temporary name and renamed, so a reader never sees
    half a PNG. "eval" messages (the eval hook's samples) are for TensorBoard: ignored here.

    A malformed message is logged and dropped (hooks/hook.c); a failed write is logged and the
    hook goes on: pictures are a convenience, training must not stop for them.
*/
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/image.h"
#include "common/log.h"
#include "common/util.h"
#include "hooks/hook.h"
#include "hooks/visual_grid.h"

typedef struct {
    char dir[PF_PATH_MAX + 16];         /* where iter_N.png go */
    int64_t written;                    /* grids written */
} visual_state;

static int visual_start(pf_hook *h, char *err, size_t errlen) {
    const pf_config *cfg = &h->client.cfg;
    visual_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    h->state = s;
    if (cfg->visual_output_dir[0])
        snprintf(s->dir, sizeof s->dir, "%s", cfg->visual_output_dir);
    else
        snprintf(s->dir, sizeof s->dir, "%s/visuals", cfg->work_dir);
    if (pf_mkdirs(s->dir, err, errlen) != 0) return -1;
    pf_info("visual hook: grids every %" PRId64 " iterations to %s", cfg->visual_interval,
            s->dir);
    return 0;
}

static int visual_take(pf_hook *h, const pf_msg_visual *v, const uint8_t *lq,
                       const uint8_t *output, const uint8_t *gt, char *err, size_t errlen) {
    visual_state *s = h->state;
    if (strcmp(v->tag, "train") != 0) return 0;
    char e2[512], path[PF_PATH_MAX + 64];
    int w, gh;
    uint8_t *grid = pf_visual_grid(v, lq, output, gt, &w, &gh, e2, sizeof e2);
    snprintf(path, sizeof path, "%s/iter_%" PRId64 ".png", s->dir, v->iter);
    if (!grid || pf_image_write_png(path, grid, w, gh, e2, sizeof e2) != 0)
        pf_warn("visual hook: grid of iter %" PRId64 " from %s not written: %s", v->iter,
                v->source, e2);
    else
        s->written++;
    free(grid);
    (void)err;
    (void)errlen;
    return 0;
}

static int visual_stop(pf_hook *h, const char *reason, char *err, size_t errlen) {
    visual_state *s = h->state;
    pf_info("visual hook: %" PRId64 " grids written to %s (%s)", s->written, s->dir, reason);
    (void)err;
    (void)errlen;
    return 0;
}

static void visual_destroy(pf_hook *h) {
    free(h->state);
    h->state = NULL;
}

static const pf_hook_ops visual_ops = {
    .role = PF_ROLE_VISUAL,
    .name = "visual",
    .kinds = (const char *const[]){ "visual", NULL },
    .start = visual_start,
    .visual = visual_take,
    .stop = visual_stop,
    .destroy = visual_destroy,
};

int pf_hook_visual_main(int argc, char **argv) {
    return pf_hook_run(&visual_ops, argc, argv);
}
