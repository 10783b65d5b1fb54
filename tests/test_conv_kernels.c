/*  test_conv_kernels — on whatever CPU this runs (ctest also runs it with ONEDNN_MAX_CPU_ISA
    capped: test_conv_kernels.avx2, .sse41), every network's convolutions get a fast kernel
    and no activation is reordered between layers.

    For each network in its usual widths (a batch of 2 at a small LQ size, then one whole
    image), one training step and one inference run with oneDNN's verbose log captured. From
    what oneDNN itself reports as executed:
      - every convolution that ran a reference or gemm kernel in some direction is probed:
        oneDNN is asked for the same problem on each pair of the four layouts, all
        directions on the same pair as they share their tensors. If some pair
        gets faster kernels in every direction, PixFlow's layouts cost the layer its fast
        kernels: a failure. (A layer with no faster pair on this CPU, e.g. SRCNN's 9x9 on 3
        channels under AVX2, is allowed and listed.)
      - the planner may convert a convolution's input or output to other layouts (nn/cpu/layout.c,
        "layout groups"); each such conversion must buy a faster kernel, which this test
        probes on its own: the convolution on its tensors' layouts ranks lower than on the
        layouts it runs. Every other reorder must be one of a convolution's weights (dims
        O x I x K x K): an activation reorder (N x C x H x W) beyond the conversions means two
        layers that could share a layout did not.
      - weight reorders per training step: at most three per convolution (its weights into
        the forward's layout and, unless oneDNN's backward-data kernel takes that one too,
        into backward-data's, once each; its gradient back to OIHW), printed per network.
    Also: the training step's forward output is bit-identical with 1 and 2 threads.
    Nothing here names an ISA's kernels or layouts: the checks hold on any x86-64 CPU.
*/
#include <dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nn/model.h"
#include "nn/model_internal.h"
#include "tests/pf_test.h"

static const char *isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "other";
    }
}

typedef struct {
    const char *name, *type;
    int scale, h, w;
    int n_feats, n_blocks, fsrcnn_d, fsrcnn_s, fsrcnn_m;
} net_case;

static void make_cfg(pf_config *c, const net_case *k) {
    pf_config_defaults(c);
    snprintf(c->model_type, sizeof c->model_type, "%s", k->type);
    c->scale = k->scale;
    c->n_feats = k->n_feats;
    c->n_blocks = k->n_blocks;
    c->num_group = 1;
    if (k->fsrcnn_d) {
        c->fsrcnn_d = k->fsrcnn_d;
        c->fsrcnn_s = k->fsrcnn_s;
        c->fsrcnn_m = k->fsrcnn_m;
    }
}

/* ---- oneDNN's verbose log of a piece of work ------------------------------------------ */

typedef struct {
    int saved_fd;
    FILE *tmp;
} capture;

static int capture_begin(capture *cp) {
    fflush(stdout);
    cp->tmp = tmpfile();
    cp->saved_fd = dup(1);
    if (!cp->tmp || cp->saved_fd < 0 || dup2(fileno(cp->tmp), 1) < 0) return -1;
    dnnl_set_verbose(1);
    return 0;
}

/* Stops capturing; returns the captured text (malloc'd) or NULL. */
static char *capture_end(capture *cp) {
    fflush(stdout);
    dnnl_set_verbose(0);
    dup2(cp->saved_fd, 1);
    close(cp->saved_fd);
    long len = ftell(cp->tmp);
    char *s = len >= 0 ? malloc((size_t)len + 1) : NULL;
    if (s) {
        rewind(cp->tmp);
        size_t got = fread(s, 1, (size_t)len, cp->tmp);
        s[got] = 0;
    }
    fclose(cp->tmp);
    return s;
}

/* Field i (0-based) of a comma-separated verbose line, copied into out. */
static void field(const char *line, int i, char *out, size_t len) {
    const char *p = line;
    for (int k = 0; k < i && p; k++) {
        p = strchr(p, ',');
        if (p) p++;
    }
    size_t n = 0;
    while (p && p[n] && p[n] != ',' && p[n] != '\n') n++;
    if (n >= len) n = len - 1;
    memcpy(out, p ? p : "", n);
    out[n] = 0;
}

/* 2 JIT kernel, 1 oneDNN's gemm path, 0 reference loop */
static int rank_of_impl(const char *impl) {
    return strstr(impl, "ref") ? 0 : strstr(impl, "gemm") ? 1 : 2;
}

static dnnl_format_tag_t tag_of(int b, int c) {
    return b == 1 ? dnnl_nchw : b == 8 ? dnnl_nChw8c : b == 16 ? dnnl_nChw16c
           : b == c ? dnnl_nhwc : dnnl_format_tag_undef;
}

typedef struct {
    int mb, ic, oc, ih, iw, kh;
    int relu;                   /* fused (Leaky)ReLU post-op, slope alpha */
    float alpha;
    int add;                    /* fused residual add (binary_add post-op) */
} problem_t;

/* The post-ops of a verbose attribute field ("attr-post-ops:eltwise_relu:0.2 ..."). */
static void parse_attrs(const char *attrs, problem_t *p) {
    const char *r = strstr(attrs, "eltwise_relu");
    if (r) {
        p->relu = 1;
        p->alpha = 0.0f;
        if (r[12] == ':') p->alpha = strtof(r + 13, NULL);
    }
    p->add = strstr(attrs, "binary_add") != NULL;
}

static int parse_problem(const char *q, problem_t *p) {
    if (sscanf(q, "mb%dic%doc%d", &p->mb, &p->ic, &p->oc) != 3 &&
        sscanf(q, "mb%d_ic%doc%d", &p->mb, &p->ic, &p->oc) != 3)
        return -1;
    const char *t;
    if ((t = strstr(q, "_ih"))) sscanf(t, "_ih%d", &p->ih);
    if ((t = strstr(q, "kh"))) sscanf(t, "kh%d", &p->kh);
    if ((t = strstr(q, "_iw"))) sscanf(t, "_iw%d", &p->iw);
    return p->ih && p->iw && p->kh ? 0 : -1;
}

/* The rank of this convolution with its input in block bs and its output in bd (direct
   algorithm), over the directions asked for (training: forward_training and backward-weights,
   plus backward-data with bwd_data), the slowest counting; -1 when oneDNN cannot build it. */
static int rank_on(const problem_t *p, int training, int bwd_data, int bs, int bd, char *impl,
                   size_t len) {
    dnnl_engine_t eng;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0)) return -1;
    dnnl_memory_desc_t src, wei, bias, dst;
    dnnl_dims_t sd = { p->mb, p->ic, p->ih, p->iw }, dd = { p->mb, p->oc, p->ih, p->iw },
                wd = { p->oc, p->ic, p->kh, p->kh }, bdim = { p->oc }, st = { 1, 1 },
                pad = { p->kh / 2, p->kh / 2 };
    dnnl_format_tag_t ts = bs ? tag_of(bs, p->ic) : dnnl_format_tag_any;
    dnnl_format_tag_t td = bd ? tag_of(bd, p->oc) : dnnl_format_tag_any;
    int r = -1;
    dnnl_primitive_desc_t f = NULL, b = NULL, w = NULL;
    if (ts == dnnl_format_tag_undef || td == dnnl_format_tag_undef) goto done;
    dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, ts);
    dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, td);
    dnnl_memory_desc_init_by_tag(&wei, 4, wd, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&bias, 1, bdim, dnnl_f32, dnnl_a);
    dnnl_convolution_desc_t cd;
    dnnl_convolution_forward_desc_init(&cd, training ? dnnl_forward_training
                                                     : dnnl_forward_inference,
                                       dnnl_convolution_direct, &src, &wei, &bias, &dst, st, pad,
                                       pad);
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    dnnl_primitive_attr_create(&attr);
    dnnl_post_ops_create(&po);
    if (p->relu) dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, p->alpha, 0.0f);
    if (p->add) dnnl_post_ops_append_binary(po, dnnl_binary_add, &dst);
    dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_status_t st_f = dnnl_primitive_desc_create(&f, &cd, attr, eng, NULL);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    if (st_f) goto done;
    const char *s1 = NULL, *s2 = NULL, *s3 = NULL;
    dnnl_primitive_desc_query(f, dnnl_query_impl_info_str, 0, &s1);
    r = rank_of_impl(s1);
    snprintf(impl, len, "%s", s1);
    if (training) {
        const dnnl_memory_desc_t *sm = dnnl_primitive_desc_query_md(f, dnnl_query_src_md, 0);
        const dnnl_memory_desc_t *dm = dnnl_primitive_desc_query_md(f, dnnl_query_dst_md, 0);
        if (bwd_data) {
            dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, sm, &wei, dm,
                                                     st, pad, pad);
            if (dnnl_primitive_desc_create(&b, &cd, NULL, eng, f)) {
                r = -1;
                goto done;
            }
            dnnl_primitive_desc_query(b, dnnl_query_impl_info_str, 0, &s2);
            if (rank_of_impl(s2) < r) r = rank_of_impl(s2);
        }
        dnnl_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, sm, &wei,
                                                    &bias, dm, st, pad, pad);
        if (dnnl_primitive_desc_create(&w, &cd, NULL, eng, f)) {
            r = -1;
            goto done;
        }
        dnnl_primitive_desc_query(w, dnnl_query_impl_info_str, 0, &s3);
        if (rank_of_impl(s3) < r) r = rank_of_impl(s3);
        snprintf(impl, len, "%s / %s / %s", s1, s2 ? s2 : "-", s3);
    }
done:
    if (f) dnnl_primitive_desc_destroy(f);
    if (b) dnnl_primitive_desc_destroy(b);
    if (w) dnnl_primitive_desc_destroy(w);
    dnnl_engine_destroy(eng);
    return r;
}

/* The best rank one layout pair gives (the directions share their tensors, so one pair for
   all of them), trying every pair of the four layouts PixFlow carries activations in. (Not
   oneDNN's own choice under `any`: for a 1 x 1 map it may pick a layout that is none of
   them.) */
static int best_rank(const problem_t *p, int training, int bwd_data, char *impl, size_t len) {
    int best = -1;
    int bl[4] = { 1, 8, 16, p->ic }, dl[4] = { 1, 8, 16, p->oc };
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            char tmp[160];
            int r = rank_on(p, training, bwd_data, bl[i], dl[j], tmp, sizeof tmp);
            if (r > best) {
                best = r;
                snprintf(impl, len, "%s", tmp);
            }
        }
    return best;
}

/* Is dims ("64x3x3x3") some convolution's weights in m? */
static int is_weight_dims(const pf_model *m, const char *dims) {
    int a, b, c, d;
    if (sscanf(dims, "%dx%dx%dx%d", &a, &b, &c, &d) != 4) return 0;
    for (int i = 0; i < m->net.n_convs; i++) {
        const pf_conv *cv = &m->train_conv[i];
        if (a == cv->oc && b == cv->ic && c == cv->k && d == cv->k) return 1;
    }
    return 0;
}

/* The problem descriptor (second-to-last field) of a verbose line ending at `end`. */
static void problem_of(const char *line, const char *end, char *out, size_t len) {
    const char *p2 = end;
    int commas = 0;
    while (p2 > line && commas < 2) {
        p2--;
        if (*p2 == ',') commas++;
    }
    size_t plen = (size_t)(end - p2 - 1);
    const char *pe = memchr(p2 + 1, ',', plen);
    size_t n = pe ? (size_t)(pe - p2 - 1) : plen;
    if (n >= len) n = len - 1;
    memcpy(out, p2 + 1, n);
    out[n] = 0;
}

#define MAX_SEEN 128

typedef struct {
    char problem[160];
    char attrs[96];             /* its post-ops (the verbose attribute field) */
    int ran;                    /* the slowest rank among its executions */
    int bwd_data;               /* backward-data ran for it */
    char impl[64];              /* the slowest kernel that ran */
} seen_conv;

/* Checks the verbose log of one piece of work; returns the number of weight reorders, and
   the activation reorders in *act. */
static int check_log(const net_case *k, const pf_model *m, int training, const char *log,
                     int *act) {
    const char *what = training ? "training" : "inference";
    seen_conv seen[MAX_SEEN];
    int n_seen = 0, reorders = 0;
    *act = 0;
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        const char *last = end ? end : line + strlen(line);
        if (!strncmp(line, "onednn_verbose,exec,cpu,", 24)) {
            char kind[32], impl[64], prop[32], problem[160], attrs[96];
            field(line, 7, attrs, sizeof attrs);
            field(line, 3, kind, sizeof kind);
            field(line, 4, impl, sizeof impl);
            field(line, 5, prop, sizeof prop);
            problem_of(line, last, problem, sizeof problem);
            if (!strcmp(kind, "reorder")) {
                if (is_weight_dims(m, problem)) reorders++;
                else (*act)++;
            } else if (!strcmp(kind, "convolution")) {
                int i = 0;
                /* the forward's post-ops tell the layer apart (backward records have none) */
                while (i < n_seen && (strcmp(seen[i].problem, problem) ||
                                      (prop[0] == 'f' && strcmp(seen[i].attrs, attrs))))
                    i++;
                if (i == n_seen && n_seen < MAX_SEEN) {
                    snprintf(seen[i].problem, sizeof seen[i].problem, "%s", problem);
                    snprintf(seen[i].attrs, sizeof seen[i].attrs, "%s", attrs);
                    seen[i].ran = 3;
                    seen[i].bwd_data = 0;
                    n_seen++;
                }
                if (i < n_seen) {
                    if (rank_of_impl(impl) < seen[i].ran) {
                        seen[i].ran = rank_of_impl(impl);
                        snprintf(seen[i].impl, sizeof seen[i].impl, "%s", impl);
                    }
                    if (!strcmp(prop, "backward_data")) seen[i].bwd_data = 1;
                }
            }
        }
        line = end ? end + 1 : NULL;
    }
    for (int i = 0; i < n_seen; i++) {
        problem_t p = { 0 };
        char best_impl[160] = "";
        if (parse_problem(seen[i].problem, &p)) continue;
        parse_attrs(seen[i].attrs, &p);
        int best = best_rank(&p, training, seen[i].bwd_data, best_impl, sizeof best_impl);
        CHECK(seen[i].ran >= best, "%s %s: convolution %s runs %s where one layout pair gets %s",
              k->name, what, seen[i].problem, seen[i].impl, best_impl);
        if (seen[i].ran < 2 && seen[i].ran >= best)
            printf("  %s %s: %s runs %s: oneDNN has no faster kernel for it here\n", k->name,
                   what, seen[i].problem, seen[i].impl);
    }
    return reorders;
}

/* Every conversion the plan made must buy a faster kernel: the convolution on its tensors'
   own layouts ranks lower than on the layouts it runs (probed here, independently of the
   planner). Returns the number of converted sides (each is one reorder a forward, one a
   backward). */
static int check_conversions(const net_case *k, pf_model *m, int training, int h, int w) {
    pf_gconversion cv[64];
    int n = pf_graph_conversions(&m->net, (training ? &m->train : &m->infer)->g, cv, 64), sides = 0;
    for (int i = 0; i < n && i < 64; i++) {
        const pf_conv *c = &(training ? m->train_conv : m->infer_conv)[cv[i].conv];
        problem_t p = { c->n, c->ic, c->oc, c->h, c->w, c->k, c->relu, c->alpha,
                        c->add_fused };
        char own[160], run[160];
        int bwdd = training && c->need_bwd_data;
        int r_own = rank_on(&p, training, bwdd, cv[i].in_block, cv[i].out_block, own, sizeof own);
        int r_run = rank_on(&p, training, bwdd, cv[i].run_src ? cv[i].run_src : cv[i].in_block,
                            cv[i].run_dst ? cv[i].run_dst : cv[i].out_block, run, sizeof run);
        CHECK(r_run > r_own, "%s %s: %s converts %d -> %d / %d -> %d without a faster kernel "
              "(%s against %s)", k->name, training ? "training" : "inference", c->name,
              cv[i].in_block, cv[i].run_src, cv[i].run_dst, cv[i].out_block, run, own);
        printf("  %s %s: %s runs on blocks %d -> %d (its tensors: %d -> %d): %s, not %s\n",
               k->name, training ? "training" : "inference", c->name,
               cv[i].run_src ? cv[i].run_src : cv[i].in_block,
               cv[i].run_dst ? cv[i].run_dst : cv[i].out_block, cv[i].in_block,
               cv[i].out_block, run, own);
        sides += (cv[i].run_src != 0) + (cv[i].run_dst != 0);
    }
    (void)h;
    (void)w;
    return sides;
}

static void one_case(const net_case *k) {
    pf_config cfg;
    make_cfg(&cfg, k);
    char err[1024];
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    CHECK(m != NULL, "%s: %s", k->name, err);
    if (!m) return;
    pf_model_init(m, 1);
    int n = 2, h = k->h, w = k->w, s = k->scale;
    size_t nl = (size_t)n * h * w * 3, ng = nl * s * s;
    uint8_t *lq = malloc(nl), *gt = malloc(ng);
    float *out[2] = { malloc(ng * sizeof(float)), malloc(ng * sizeof(float)) };
    float *io = malloc((size_t)h * w * 3 * s * s * sizeof(float));
    for (size_t i = 0; i < nl; i++) lq[i] = (uint8_t)(i * 37 + 11);
    for (size_t i = 0; i < ng; i++) gt[i] = (uint8_t)(i * 53 + 7);
    float loss;
    /* the first step builds the primitives; the second is the one whose log is read */
    CHECK(pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err) == 0, "%s: %s",
          k->name, err);
    capture cp;
    CHECK(capture_begin(&cp) == 0, "%s: cannot capture oneDNN's log", k->name);
    int rc = pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err);
    char *log = capture_end(&cp);
    CHECK(rc == 0, "%s: %s", k->name, err);
    int act = 0;
    int reorders = log ? check_log(k, m, 1, log, &act) : -1;
    free(log);
    int sides = check_conversions(k, m, 1, h, w);
    /* a converted input or output: one reorder forward, one for its gradient (the input's
       only where it needs one) */
    CHECK(act <= 2 * sides, "%s: %d activation reorders in a training step for %d converted "
          "sides: two layers disagree on a layout", k->name, act, sides);
    CHECK(reorders <= 3 * m->net.n_convs, "%s: %d weight reorders in a training step for %d convs",
          k->name, reorders, m->net.n_convs);
    CHECK(pf_model_infer(m, lq, h, w, io, err, sizeof err) == 0, "%s: %s", k->name, err);
    CHECK(capture_begin(&cp) == 0, "%s: cannot capture oneDNN's log", k->name);
    rc = pf_model_infer(m, lq, h, w, io, err, sizeof err);
    log = capture_end(&cp);
    CHECK(rc == 0, "%s: %s", k->name, err);
    int act_i = 0;
    if (log) check_log(k, m, 0, log, &act_i);
    free(log);
    int sides_i = check_conversions(k, m, 0, h, w);
    CHECK(act_i <= sides_i, "%s: %d activation reorders in an inference for %d converted sides",
          k->name, act_i, sides_i);
    int wino = 0;
    for (int i = 0; i < m->net.n_convs; i++) wino += m->train_conv[i].algo == dnnl_convolution_winograd;
    printf("%-12s %3d convs, %3d weight reorders a training step, %2d Winograd; first conv "
           "%s / %s / %s\n",
           k->name, m->net.n_convs, reorders, wino, pf_conv_impl(&m->train_conv[1]),
           pf_conv_impl_bwd_data(&m->train_conv[1]), pf_conv_impl_bwd_weights(&m->train_conv[1]));

    int nt = omp_get_max_threads();
    for (int t = 0; t < 2; t++) {
        omp_set_num_threads(t + 1);
        CHECK(pf_model_train_step(m, lq, gt, n, h, w, &loss, err, sizeof err) == 0, "%s: %s",
              k->name, err);
        pf_model_train_output(m, n, out[t]);
    }
    omp_set_num_threads(nt);
    CHECK(!memcmp(out[0], out[1], ng * sizeof(float)),
          "%s: forward output differs between 1 and 2 threads", k->name);
    free(io);
    free(lq);
    free(gt);
    free(out[0]);
    free(out[1]);
    pf_model_destroy(&m);
}

int main(void) {
    /* usual widths; small LQ sizes keep it quick */
    static const net_case cases[] = {
        { "EDSR x2", "EDSR", 2, 12, 10, 64, 2, 0, 0, 0 },
        { "EDSR x3", "EDSR", 3, 12, 10, 64, 1, 0, 0, 0 },
        { "SRCNN x3", "SRCNN", 3, 12, 10, 64, 1, 0, 0, 0 },
        { "FSRCNN x3", "FSRCNN", 3, 12, 10, 64, 1, 56, 12, 4 },
        { "FSRCNN-s x3", "FSRCNN", 3, 12, 10, 64, 1, 32, 5, 1 },
        { "ESPCN x2", "ESPCN", 2, 12, 10, 64, 1, 0, 0, 0 },
        { "MSRResNet x4", "MSRResNet", 4, 12, 10, 64, 2, 0, 0, 0 },
        { "RCAN x2", "RCAN", 2, 12, 10, 64, 2, 0, 0, 0 },
        { "RRDBNet x2", "RRDBNet", 2, 12, 10, 64, 1, 0, 0, 0 },
        { "RRDBNet x4", "RRDBNet", 4, 12, 10, 64, 1, 0, 0, 0 },
    };
    const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
    printf("oneDNN %d.%d, effective ISA %s (ONEDNN_MAX_CPU_ISA %s)\n", dnnl_version()->major,
           dnnl_version()->minor, isa_name(dnnl_get_effective_cpu_isa()), cap ? cap : "unset");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) one_case(&cases[i]);
    return pf_test_end("test_conv_kernels");
}
