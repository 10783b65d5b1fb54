/*  `pixflow upscale` on video files (cli/upscale_video.c), checked with the ffmpeg and ffprobe
    CLI and against PixFlow's other paths. The networks are seeded initialisations
    (pf_model_init) written here: an EDSR (8 features, 1 block, x2) and a BasicVSR (8
    features, 1 block, x4, no SPyNet weights).
    (a) an FFV1 + FLAC .mkv and a .mp4 (libx264, else mpeg4) + AAC, 48x32 at 24000/1001, one
        second, through the EDSR with --codec ffv1: each output (a.mkv; b.mkv, as .mp4 does not
        take FFV1) has the source's audio stream (same codec, sample rate, packet count), its
        frame count and rate, 96x64; its frames decoded by the ffmpeg CLI equal, bit for bit,
        `pixflow upscale`'s PNG outputs of the source's frames extracted by the ffmpeg CLI
        (the PNG path); with the default encoder (libx264, when this FFmpeg has it) and
        --crf 12, b.mp4 is H.264 in .mp4 with the AAC stream, its worst frame's PSNR against
        the PNG path no more than 0.5 dB below that of the ffmpeg CLI's own libx264 crf 12
        yuv420p encoding of the PNG path's frames (the encoder's loss: about 21 dB here, not
        30, because a pixel shuffle with random weights draws a 2x2 colour pattern that 4:2:0
        chroma averages away); a folder holding a.mkv and a PNG gives both, the video's
        frames those of a.mkv given alone; an EDSR x3 on a 25x17 clip without --codec writes
        FFV1 (75x51 is odd for libx264's 4:2:0), with a line saying so;
    (b) the BasicVSR on a 6-frame FFV1 clip, eval_cfg windows of 4 frames sharing 2: the
        output's frames equal, bit for bit, `pixflow test`'s output frames of the same clip as
        a folder of PNG frames (VideoRecurrentTestDataset, lq_folder, evaluation's windows);
        a PNG given to the video network is refused, naming it;
    (c) bad input, each with a non-zero exit, a message naming the file, nothing under the
        final name and no .part file: garbage bytes named x.mp4; --crf with ffv1 and --quality
        with libx264 (before any inference); an .mp4's mov_text subtitles into the .mkv of
        --codec ffv1 (the message names --drop-unsupported-streams, which then writes it with
        the audio and without the subtitles); an existing output without --force (left as it was; --force replaces it);
        SIGINT during a long clip (exit 130; skipped with a note if the run ends before the
        signal lands); a full disk (a 64 KiB tmpfs as OUT; root only, else skipped with the
        reason).
    (d) an EDVR (8 features, 5-frame windows, 2 deformable groups, 1 + 1 blocks, TSA, x4) on a
        7-frame 30x18 FFV1 RGB clip of noise (bgr0, so the ffmpeg CLI's frames are the
        decoder's): each output frame equals, bit for bit, this test's own reference: the
        frame's window of the clip's frames (as decoded by the ffmpeg CLI) by BasicSR's
        generate_frame_indices, written out here, with data.test's default padding
        reflection_circle (both ends of the clip, and more frames than the ring of 5 holds),
        each frame edge-padded to 32x20, pf_model_infer_window with the checkpoint's weights,
        cropped, rounded half up, and equals `pixflow test`'s saved frames of the clip as a
        VideoTestDataset (its PNG frames); a 3-frame clip is refused (too few for reflection_circle's windows, naming the file, padding and
        the 5 frames needed, nothing written); with data.test a VideoTestDataset with padding
        replicate it is upscaled, equal to the reference with replicate's windows. The
        comparison tells paddings apart: the reference with another padding's windows
        (replicate, reflection) differs in about 220 bytes (the seeded network leans on the
        center frame), more than 100 required.
    Without the ffmpeg and ffprobe CLI it says so and exits 77. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/image.h"
#include "common/util.h"
#include "pf_test.h"
#include "pf_test_upscale.h"

static char root[256];

/* Run a shell command (output into root/out.txt); 0 when it exited 0. Prints it on failure. */
static int sh(const char *fmt, const char *a, const char *b, const char *c) {
    char *out;
    int st = pf_test_run(root, &out, fmt, a, b, c);
    if (st != 0) fprintf(stderr, "status %d: %s\n", st, out);
    free(out);
    return st;
}

/* The first line of a shell command's output into val ("" on failure). */
static void first_line(char *val, size_t len, const char *fmt, const char *a, const char *b) {
    char *out;
    int st = pf_test_run(root, &out, fmt, a, b, "");
    snprintf(val, len, "%s", st == 0 ? out : "");
    val[strcspn(val, "\r\n")] = '\0';
    free(out);
}

/* ffprobe's value of stream entry `key` for stream `sel` of file (counting frames/packets). */
static void probe(const char *file, const char *sel, const char *key, char *val, size_t len) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ffprobe -v error -count_frames -count_packets -select_streams %s "
             "-show_entries stream=%s -of default=nw=1:nk=1 '%%s'%%s", sel, key);
    first_line(val, len, cmd, file, "");
}

/* The frames of `file` (a video, or a %04d.png pattern) as raw RGB24 through the ffmpeg CLI;
   *len its size. malloc'd, NULL on failure. */
static uint8_t *frames_of(const char *file, size_t *len) {
    char raw[400], err[256];
    snprintf(raw, sizeof raw, "%s/frames.rgb", root);
    if (sh("ffmpeg -v error -nostdin -y -i '%s' -map 0:v -fps_mode passthrough -f rawvideo "
           "-pix_fmt rgb24 '%s'%s", file, raw, ""))
        return NULL;
    return (uint8_t *)pf_read_file(raw, len, err, sizeof err);
}

/* Frames of a and b: equal (0), worst-frame PSNR otherwise (dB), -1 when counts differ. */
static double compare(const char *a, const char *b, size_t frame) {
    size_t la = 0, lb = 0;
    uint8_t *x = frames_of(a, &la), *y = frames_of(b, &lb);
    double worst = 0;
    if (!x || !y || la != lb || la % frame) {
        fprintf(stderr, "%s: %zu bytes, %s: %zu bytes\n", a, la, b, lb);
        worst = -1;
    }
    for (size_t f = 0; worst >= 0 && f < la / frame; f++) {
        double se = 0;
        for (size_t i = f * frame; i < (f + 1) * frame; i++)
            se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        double psnr = se == 0 ? 0 : 10 * log10(255.0 * 255.0 * frame / se);
        if (se > 0 && (worst == 0 || psnr < worst)) worst = psnr;
    }
    free(x);
    free(y);
    return worst;
}

/* Nothing under `final` and no "<stem>.part.<ext>" beside it. */
static int nothing_left(const char *final) {
    char part[600];
    const char *dot = strrchr(final, '.');
    snprintf(part, sizeof part, "%.*s.part%s", (int)(dot - final), final, dot);
    return access(final, F_OK) != 0 && access(part, F_OK) != 0;
}

static void write_cfg(const char *path, const char *model, const char *data) {
    FILE *f = fopen(path, "w");
    fprintf(f, "model: %s\n%soptimizers: {lr: 1.0e-3}\ntotal_iters: 1\nseed: 3\n"
            "work_dir: %s/wd_%s\n", model, data, root,
            strstr(model, "BasicVSR") ? "vsr" : strstr(model, "EDVR") ? "edvr" : "sr");
    fclose(f);
}

/* A work dir (config.yaml, checkpoints/iter_5.safetensors of seeded weights) into wd. */
static void work_dir(const char *wd, const char *model, const char *data) {
    char path[600], ck[600], err[256];
    snprintf(path, sizeof path, "%s/checkpoints", wd);
    CHECK(pf_mkdirs(path, err, sizeof err) == 0, "%s", err);
    snprintf(path, sizeof path, "%s/config.yaml", wd);
    write_cfg(path, model, data);
    snprintf(ck, sizeof ck, "%s/checkpoints/iter_5.safetensors", wd);
    pf_test_seeded_weights(path, ck, 7);
}

/* (a) for one source: audio, count, rate, size of out/<name> and its frames vs the PNG path. */
static void check_output(const char *src, const char *name, const char *acodec, int x264) {
    char out[400], fr[400], png[400], pat[500], v[256], w[256];
    snprintf(out, sizeof out, "%s/out/%s", root, name);
    snprintf(fr, sizeof fr, "%s/frames_%s", root, name);
    snprintf(png, sizeof png, "%s/png_%s", root, name);
    probe(out, "a:0", "codec_name", v, sizeof v);
    CHECK(!strcmp(v, acodec), "%s: audio codec '%s' (want %s)", out, v, acodec);
    probe(src, "a:0", "sample_rate", v, sizeof v);
    probe(out, "a:0", "sample_rate", w, sizeof w);
    CHECK(v[0] && !strcmp(v, w), "%s: audio sample rate '%s' (source '%s')", out, w, v);
    probe(src, "a:0", "nb_read_packets", v, sizeof v);   /* one entry a call: first_line */
    probe(out, "a:0", "nb_read_packets", w, sizeof w);
    CHECK(atoi(v) > 0 && !strcmp(v, w), "%s: %s audio packets (source %s)", out, w, v);
    probe(src, "v:0", "nb_read_frames", v, sizeof v);
    probe(out, "v:0", "nb_read_frames", w, sizeof w);
    CHECK(atoi(v) >= 23 && !strcmp(v, w), "%s: %s frames (source %s)", out, w, v);
    probe(out, "v:0", "r_frame_rate", v, sizeof v);
    CHECK(!strcmp(v, "24000/1001"), "%s: rate %s (want 24000/1001)", out, v);
    probe(out, "v:0", "width", v, sizeof v);
    probe(out, "v:0", "height", w, sizeof w);
    CHECK(!strcmp(v, "96") && !strcmp(w, "64"), "%s: %sx%s (want 96x64)", out, v, w);
    /* the PNG path: the source's frames as PNGs (ffmpeg CLI), then `pixflow upscale` */
    CHECK(pf_mkdirs(fr, NULL, 0) == 0 && sh("ffmpeg -v error -nostdin -i '%s' '%s/%%04d.png'%s",
                                            src, fr, "") == 0, "extracting %s", src);
    char *o;
    int st = pf_test_run(root, &o, "'%s' upscale '%s/wd' '%s' -o '%s'", pf_test_bin(), root,
                         fr, png);
    CHECK(st == 0, "upscale of %s's frames: status %d: %s", src, st, o);
    free(o);
    snprintf(pat, sizeof pat, "%s/%%04d.png", png);
    double d = compare(out, pat, 96 * 64 * 3);
    CHECK(d == 0, "%s: frames differ from the PNG path (worst PSNR %.2f dB; -1: counts)", out, d);
    if (!x264) return;
    snprintf(out, sizeof out, "%s/out264/b.mp4", root);
    probe(out, "v:0", "codec_name", v, sizeof v);
    probe(out, "a:0", "codec_name", w, sizeof w);
    CHECK(!strcmp(v, "h264") && !strcmp(w, "aac"), "%s: %s + %s (want h264 + aac)", out, v, w);
    d = compare(out, pat, 96 * 64 * 3);
    /* the encoder's loss: the ffmpeg CLI's own libx264 encoding of the PNG path's frames */
    char ref[400];
    snprintf(ref, sizeof ref, "%s/ref264.mp4", root);
    CHECK(sh("ffmpeg -v error -nostdin -y -framerate 24000/1001 -i '%s' -c:v libx264 -crf 12 "
             "-pix_fmt yuv420p '%s'%s", pat, ref, "") == 0, "encoding %s", ref);
    double dref = compare(ref, pat, 96 * 64 * 3);
    CHECK(d > 15 && d >= dref - 0.5, "%s: worst PSNR %.2f dB against the PNG path, the ffmpeg "
          "CLI's own libx264 encoding of those frames %.2f dB (want no more than 0.5 below)",
          out, d, dref);
    printf("libx264 crf 12 against the PNG path: worst frame %.2f dB (the ffmpeg CLI's own "
           "encoding: %.2f dB)\n", d, dref);
}

/* (a) */
static void image_network(int x264) {
    char wd[400], a[400], b[400];
    snprintf(wd, sizeof wd, "%s/wd", root);
    char data[600];
    snprintf(data, sizeof data, "data:\n  test: {type: SingleImageDataset, lq_folder: %s}\n",
             root);
    work_dir(wd, "{type: EDSR, scale: 2, n_feats: 8, n_blocks: 1}", data);
    snprintf(a, sizeof a, "%s/a.mkv", root);
    snprintf(b, sizeof b, "%s/b.mp4", root);
    const char *src = "ffmpeg -v error -nostdin -y -f lavfi -i testsrc=size=48x32:rate=24000/1001 "
                      "-f lavfi -i sine=frequency=440:sample_rate=44100 -t 1 ";
    char cmd[800];
    snprintf(cmd, sizeof cmd, "%s -c:v ffv1 -c:a flac '%%s'%%s%%s", src);
    CHECK(sh(cmd, a, "", "") == 0, "making %s", a);
    snprintf(cmd, sizeof cmd, "%s -c:v %s -pix_fmt yuv420p -c:a aac '%%s'%%s%%s", src,
             x264 ? "libx264" : "mpeg4 -q:v 2");
    CHECK(sh(cmd, b, "", "") == 0, "making %s", b);
    char *o;
    int st = pf_test_run(root, &o, "'%s' upscale '%s' '%s' '%s' -o '%s/out' --codec ffv1",
                         pf_test_bin(), wd, a, b, root);
    CHECK(st == 0 && strstr(o, "frames/s") && strstr(o, "[2/2]"), "upscale --codec ffv1: "
          "status %d:\n%s", st, o);
    free(o);
    if (x264) {
        st = pf_test_run(root, &o, "'%s' upscale '%s' '%s' -o '%s/out264' --crf 12",
                         pf_test_bin(), wd, b, root);
        CHECK(st == 0 && !strstr(o, "x264 @"), "upscale, default encoder: status %d:\n%s",
              st, o);
        free(o);
    }
    check_output(a, "a.mkv", "flac", 0);
    check_output(b, "b.mkv", "aac", x264);
    /* a folder: its video files by extension beside its images */
    char mix[400], mo[400], p[500], q[500];
    snprintf(mix, sizeof mix, "%s/mix", root);
    snprintf(mo, sizeof mo, "%s/mix_out", root);
    CHECK(sh("mkdir -p '%s' && cp '%s' '%s/'", mix, a, mix) == 0 &&
          sh("cp '%s/frames_a.mkv/0001.png' '%s/f.png'%s", root, mix, "") == 0, "making %s", mix);
    st = pf_test_run(root, &o, "'%s' upscale '%s' '%s' -o '%s' --codec ffv1", pf_test_bin(), wd,
                     mix, mo);
    CHECK(st == 0 && strstr(o, "[2/2]"), "a folder with a video and an image: status %d:\n%s",
          st, o);
    free(o);
    snprintf(p, sizeof p, "%s/a.mkv", mo);
    snprintf(q, sizeof q, "%s/out/a.mkv", root);
    CHECK(compare(p, q, 96 * 64 * 3) == 0, "%s differs from %s", p, q);
    snprintf(p, sizeof p, "%s/f.png", mo);
    CHECK(access(p, F_OK) == 0, "%s: not written", p);
}

/* (a) an odd output size (x3 of 25x17) without --codec: FFV1, not libx264's 4:2:0. */
static void odd_size(void) {
    char wd[400], src[400], out[400], data[600], v[64], w[64], *o;
    snprintf(wd, sizeof wd, "%s/wd_x3", root);
    snprintf(src, sizeof src, "%s/odd.mkv", root);
    snprintf(out, sizeof out, "%s/odd_out/odd.mkv", root);
    snprintf(data, sizeof data, "data:\n  test: {type: SingleImageDataset, lq_folder: %s}\n",
             root);
    work_dir(wd, "{type: EDSR, scale: 3, n_feats: 8, n_blocks: 1}", data);
    CHECK(sh("ffmpeg -v error -nostdin -y -f lavfi -i testsrc=size=25x17:rate=25 -frames:v 3 "
             "-c:v ffv1 '%s'%s%s", src, "", "") == 0, "making %s", src);
    int st = pf_test_run(root, &o, "'%s' upscale '%s' '%s' -o '%s/odd_out'", pf_test_bin(), wd,
                         src, root);
    CHECK(st == 0 && strstr(o, "odd-sized"), "odd size: status %d:\n%s", st, o);
    free(o);
    probe(out, "v:0", "codec_name", v, sizeof v);
    probe(out, "v:0", "nb_read_frames", w, sizeof w);
    CHECK(!strcmp(v, "ffv1") && !strcmp(w, "3"), "%s: %s, %s frames (want ffv1, 3)", out, v, w);
}

/* (b) */
static void video_network(void) {
    char wd[400], lq[400], gt[400], clip[400], data[1200], *o;
    snprintf(wd, sizeof wd, "%s/wd_vsr", root);
    snprintf(lq, sizeof lq, "%s/vlq", root);
    snprintf(gt, sizeof gt, "%s/vgt", root);
    snprintf(clip, sizeof clip, "%s/c.mkv", root);
    CHECK(sh("ffmpeg -v error -nostdin -y -f lavfi -i testsrc2=size=32x24:rate=10 -frames:v 6 "
             "-c:v ffv1 '%s'%s%s", clip, "", "") == 0, "making %s", clip);
    /* `pixflow test`'s set: the clip's frames (ffmpeg CLI), and a GT of the right size */
    CHECK(pf_mkdirs(lq, NULL, 0) == 0 && pf_mkdirs(gt, NULL, 0) == 0, "mkdir");
    CHECK(sh("mkdir -p '%s/c' '%s/c'%s", lq, gt, "") == 0 &&
          sh("ffmpeg -v error -nostdin -i '%s' -start_number 0 '%s/c/%%08d.png'%s", clip, lq,
             "") == 0 &&
          sh("ffmpeg -v error -nostdin -i '%s' -vf scale=128:96 -start_number 0 "
             "'%s/c/%%08d.png'%s", clip, gt, "") == 0, "making the test set");
    snprintf(data, sizeof data, "data:\n  test: {type: VideoRecurrentTestDataset, gt_folder: %s,"
             " lq_folder: %s}\neval_cfg: {clip_window: 4, clip_overlap: 2}\n", gt, lq);
    work_dir(wd, "{type: BasicVSR, scale: 4, num_feat: 8, num_block: 1, "
             "spynet_pretrained: null}", data);
    int st = pf_test_run(root, &o, "'%s' test '%s/config.yaml' --checkpoint "
                         "'%s/checkpoints/iter_5.safetensors'", pf_test_bin(), wd, wd);
    CHECK(st == 0, "pixflow test (BasicVSR): status %d:\n%s", st, o);
    free(o);
    st = pf_test_run(root, &o, "'%s' upscale '%s' '%s' -o '%s/vout' --codec ffv1", pf_test_bin(),
                     wd, clip, root);
    CHECK(st == 0 && strstr(o, "windows of 4 sharing 2"), "upscale (BasicVSR): status %d:\n%s",
          st, o);
    free(o);
    char out[400], pat[500];
    snprintf(out, sizeof out, "%s/vout/c.mkv", root);
    snprintf(pat, sizeof pat, "%s/test/iter_5/c/%%08d.png", wd);
    double d = compare(out, pat, 128 * 96 * 3);
    CHECK(d == 0, "BasicVSR: %s differs from pixflow test's frames (worst %.2f dB; -1: counts)",
          out, d);
    st = pf_test_run(root, &o, "'%s' upscale '%s' '%s/c/00000000.png' -o '%s/vimg'",
                     pf_test_bin(), wd, lq, root);
    CHECK(st != 0 && strstr(o, "00000000.png") && strstr(o, "video network"),
          "a PNG for the video network: status %d:\n%s", st, o);
    free(o);
}

enum { REPLICATE, REFLECTION, REFLECTION_CIRCLE };

/* BasicSR's generate_frame_indices (basicsr/data/data_util.py) for three of its paddings:
   frame i's num_frame neighbours in a clip of n frames. 0, or -1 when one falls outside the
   clip (BasicSR would read past it). */
static int basicsr_indices(int i, int n, int num_frame, int padding, int *out) {
    int h = num_frame / 2, m = n - 1;
    for (int k = 0; k < num_frame; k++) {
        int j = i - h + k, v = j;
        if (j < 0) v = padding == REPLICATE ? 0 : padding == REFLECTION ? -j : i + h - j;
        else if (j > m) v = padding == REPLICATE ? m : padding == REFLECTION ? 2 * m - j
                                                                             : (i - h) - (j - m);
        if (v < 0 || v > m) return -1;
        out[k] = v;
    }
    return 0;
}

/* (d) The reference of `pixflow upscale`'s EDVR output of `clip` (n frames w x h): each frame
   from its window of the clip's frames (ffmpeg CLI), edge-padded to multiples of 4,
   pf_model_infer_window with the weights of `ckpt`, cropped, clamped, rounded half up.
   Compared with the frames of `out`; returns the number of bytes that differ (-1: frame counts
   or sizes differ). */
static long window_reference(const char *cfg_path, const char *ckpt, const char *clip,
                             const char *out, int n, int w, int h, int padding) {
    static pf_config cfg;
    char err[1024];
    CHECK(pf_config_load(&cfg, cfg_path, err, sizeof err) == 0, "%s", err);
    pf_model *m = pf_model_new(&cfg, err, sizeof err);
    int ema = 0;
    CHECK(m && pf_ckpt_load_eval_weights(m, ckpt, &ema, err, sizeof err) == 0, "%s", err);
    int T = 5, ph = (h + 3) / 4 * 4, pw = (w + 3) / 4 * 4, idx[5];
    size_t in_len = 0, out_len = 0, frame = (size_t)w * h * 3, sr = frame * 16;
    uint8_t *lq = frames_of(clip, &in_len), *got = frames_of(out, &out_len);
    uint8_t *win = malloc((size_t)T * ph * pw * 3);
    float *y = malloc((size_t)ph * pw * 16 * 3 * sizeof *y);
    long diff = 0;
    if (!lq || !got || in_len != n * frame || out_len != n * sr) {
        fprintf(stderr, "%s: %zu bytes (want %zu), %s: %zu bytes (want %zu)\n", clip, in_len,
                n * frame, out, out_len, n * sr);
        diff = -1;
    }
    for (int f = 0; diff >= 0 && f < n; f++) {
        CHECK(basicsr_indices(f, n, T, padding, idx) == 0, "frame %d of %d: no window", f, n);
        for (int t = 0; t < T; t++)
            for (int r = 0; r < ph; r++)
                for (int x = 0; x < pw; x++)
                    memcpy(win + (((size_t)t * ph + r) * pw + x) * 3,
                           lq + idx[t] * frame + ((size_t)(r < h ? r : h - 1) * w +
                                                  (x < w ? x : w - 1)) * 3, 3);
        int rc = pf_model_infer_window(m, win, ph, pw, y, err, sizeof err);
        CHECK(rc == 0, "pf_model_infer_window: %s", err);
        for (int r = 0; rc == 0 && r < h * 4; r++)
            for (int x = 0; x < w * 4 * 3; x++) {
                double v = y[(size_t)r * pw * 4 * 3 + x] * 255.0;
                int want = v <= 0 ? 0 : v >= 255 ? 255 : (int)floor(v + 0.5);
                diff += got[f * sr + (size_t)r * w * 4 * 3 + x] != want;
            }
    }
    free(lq);
    free(got);
    free(win);
    free(y);
    pf_model_destroy(&m);
    return diff;
}

/* (d) EDVR: a 7-frame clip (reflection_circle), a 3-frame one refused, then with replicate. */
static void window_network(void) {
    char wd[400], wd2[400], clip[400], clip3[400], out[400], cfg[500], ck[500], data[1000], *o;
    snprintf(wd, sizeof wd, "%s/wd_edvr", root);
    snprintf(wd2, sizeof wd2, "%s/wd_edvr_rep", root);
    snprintf(clip, sizeof clip, "%s/e.mkv", root);
    snprintf(clip3, sizeof clip3, "%s/e3.mkv", root);
    /* uniform noise, every frame its own: the windows' frames differ everywhere */
    static const char *noise = "ffmpeg -v error -nostdin -y -f lavfi -i nullsrc=size=30x18:"
        "rate=10,format=gbrp,geq=r='random(1)*255':g='random(2)*255':b='random(3)*255' "
        "-frames:v %s -c:v ffv1 -pix_fmt bgr0 '%s'%s";
    CHECK(sh(noise, "7", clip, "") == 0, "making %s", clip);
    CHECK(sh(noise, "3", clip3, "") == 0, "making %s", clip3);
    static const char *model = "{type: EDVR, scale: 4, num_feat: 8, num_frame: 5, "
                               "deformable_groups: 2, num_extract_block: 1, "
                               "num_reconstruct_block: 1, with_tsa: true}";
    /* data.test a VideoTestDataset of the clip's frames (ffmpeg CLI) and a GT of the right
       size, without padding: the default, reflection_circle */
    CHECK(sh("mkdir -p '%s/elq/e' '%s/egt/e'%s", root, root, "") == 0 &&
          sh("ffmpeg -v error -nostdin -i '%s' -start_number 0 '%s/elq/e/%%08d.png'%s", clip,
             root, "") == 0 &&
          sh("ffmpeg -v error -nostdin -i '%s' -vf scale=120:72 -start_number 0 "
             "'%s/egt/e/%%08d.png'%s", clip, root, "") == 0, "making the EDVR test set");
    snprintf(data, sizeof data, "data:\n  test: {type: VideoTestDataset, gt_folder: %s/egt, "
             "lq_folder: %s/elq, num_frame: 5}\n", root, root);
    work_dir(wd, model, data);
    snprintf(cfg, sizeof cfg, "%s/config.yaml", wd);
    snprintf(ck, sizeof ck, "%s/checkpoints/iter_5.safetensors", wd);
    int st = pf_test_run(root, &o, "'%s' upscale '%s' '%s' -o '%s/eout' --codec ffv1",
                         pf_test_bin(), wd, clip, root);
    CHECK(st == 0 && strstr(o, "windows of 5 frames, padding reflection_circle"),
          "upscale (EDVR): status %d:\n%s", st, o);
    free(o);
    snprintf(out, sizeof out, "%s/eout/e.mkv", root);
    long d = window_reference(cfg, ck, clip, out, 7, 30, 18, REFLECTION_CIRCLE);
    CHECK(d == 0, "EDVR, reflection_circle: %ld bytes of %s differ from the reference (-1: "
          "counts)", d, out);
    /* and `pixflow test`'s saved frames of the same clip as a VideoTestDataset */
    st = pf_test_run(root, &o, "'%s' test '%s' --checkpoint '%s'", pf_test_bin(), cfg, ck);
    CHECK(st == 0, "pixflow test (EDVR): status %d:\n%s", st, o);
    free(o);
    char pat[500];
    snprintf(pat, sizeof pat, "%s/test/iter_5/e/%%08d.png", wd);
    double q = compare(out, pat, 120 * 72 * 3);
    CHECK(q == 0, "EDVR: %s differs from pixflow test's frames (worst %.2f dB; -1: counts)",
          out, q);
    /* the comparison tells paddings apart: replicate's windows (other frames at both ends) */
    long other = window_reference(cfg, ck, clip, out, 7, 30, 18, REPLICATE);
    printf("EDVR on 7 frames: 0 bytes differ from the reflection_circle reference, %ld from "
           "replicate's\n", other);
    CHECK(other > 100, "replicate's reference differs from the reflection_circle output in %ld "
          "bytes only", other);
    snprintf(out, sizeof out, "%s/eout/e3.mkv", root);
    st = pf_test_run(root, &o, "'%s' upscale '%s' '%s' -o '%s/eout' --codec ffv1",
                     pf_test_bin(), wd, clip3, root);
    CHECK(st != 0 && strstr(o, "e3.mkv: 3 frames: too few") && strstr(o, "reflection_circle") &&
          strstr(o, "5 frames at least") && nothing_left(out),
          "EDVR on 3 frames with reflection_circle: status %d:\n%s", st, o);
    free(o);
    /* the same weights, data.test a VideoTestDataset with padding replicate */
    snprintf(data, sizeof data, "data:\n  test: {type: VideoTestDataset, gt_folder: %s, "
             "num_frame: 5, padding: replicate}\n", root);
    work_dir(wd2, model, data);
    snprintf(cfg, sizeof cfg, "%s/config.yaml", wd2);
    st = pf_test_run(root, &o, "'%s' upscale '%s' '%s' -o '%s/eout' --codec ffv1 "
                     "--config '%s'", pf_test_bin(), ck, clip3, root, cfg);
    CHECK(st == 0 && strstr(o, "windows of 5 frames, padding replicate"),
          "upscale (EDVR, replicate, 3 frames): status %d:\n%s", st, o);
    free(o);
    d = window_reference(cfg, ck, clip3, out, 3, 30, 18, REPLICATE);
    CHECK(d == 0, "EDVR, replicate: %ld bytes of %s differ from the reference (-1: counts)", d,
          out);
    other = window_reference(cfg, ck, clip3, out, 3, 30, 18, REFLECTION);
    printf("EDVR on 3 frames: 0 bytes differ from the replicate reference, %ld from "
           "reflection's\n", other);
    CHECK(other > 100, "reflection's reference differs from the replicate output in %ld bytes "
          "only", other);
}

/* One refused command: non-zero (want_status if > 0), `name` in the message, nothing left
   under final. */
static void refused(const char *what, const char *name, const char *final, int want_status,
                    const char *cmd) {
    char *o;
    int st = pf_test_run(root, &o, "%s", cmd);
    CHECK(st != 0 && st != -1 && (want_status <= 0 || st == want_status),
          "%s: status %d:\n%s", what, st, o);
    CHECK(strstr(o, name) != NULL, "%s: the message does not name %s:\n%s", what, name, o);
    CHECK(!final || nothing_left(final), "%s: %s or its .part file is there", what, final);
    printf("%s: status %d\n", what, st);
    free(o);
}

/* SIGINT after the first progress line of a 400-frame clip. */
static void interrupt(const char *wd) {
    char src[400], final[400], log[400], cmd[1200], err[256];
    snprintf(src, sizeof src, "%s/long.mkv", root);
    snprintf(final, sizeof final, "%s/int/long.mkv", root);
    snprintf(log, sizeof log, "%s/int.txt", root);
    CHECK(sh("ffmpeg -v error -nostdin -y -f lavfi -i testsrc=size=64x48:rate=25 -frames:v 400 "
             "-c:v ffv1 '%s'%s%s", src, "", "") == 0, "making %s", src);
    pid_t pid = fork();
    if (pid == 0) {
        snprintf(cmd, sizeof cmd, "exec '%s' upscale '%s' '%s' -o '%s/int' --codec ffv1 "
                 "--threads 1 > '%s' 2>&1", pf_test_bin(), wd, src, root, log);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int seen = 0, st = 0, ended = 0;
    for (int i = 0; i < 6000 && !seen && !ended; i++) {     /* up to 60 s */
        char *text = pf_read_file(log, NULL, err, sizeof err);
        seen = text && strstr(text, "frame 1/400");
        free(text);
        ended = !seen && waitpid(pid, &st, WNOHANG) == pid;
        if (!seen && !ended) {
            struct timespec ts = { 0, 10000000 };
            nanosleep(&ts, NULL);
        }
    }
    if (!ended) {
        kill(pid, SIGINT);
        waitpid(pid, &st, 0);
    }
    char *text = pf_read_file(log, NULL, err, sizeof err);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        printf("SIGINT case not checked: the run ended before the signal landed\n");
    } else {
        CHECK(seen && WIFEXITED(st) && WEXITSTATUS(st) == 130 && text &&
              strstr(text, "long.mkv"), "SIGINT: status %d:\n%s", st, text ? text : "");
        CHECK(nothing_left(final), "SIGINT: %s or its .part file is there", final);
        printf("SIGINT: status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    free(text);
}

/* A 64 KiB tmpfs as OUT (root only). */
static void full_disk(const char *wd, const char *src) {
    char mnt[400], cmd[1200], final[500], *o;
    if (geteuid() != 0) {
        printf("full-disk case skipped: mounting a tmpfs needs root\n");
        return;
    }
    snprintf(mnt, sizeof mnt, "%s/tiny", root);
    mkdir(mnt, 0755);
    if (pf_test_run(root, &o, "mount -t tmpfs -o size=64k tmpfs '%s'", mnt) != 0) {
        printf("full-disk case skipped: mount -t tmpfs failed (no CAP_SYS_ADMIN?): %s\n", o);
        free(o);
        return;
    }
    free(o);
    snprintf(final, sizeof final, "%s/a.mkv", mnt);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s' --codec ffv1", pf_test_bin(), wd,
             src, mnt);
    refused("a full disk (64 KiB tmpfs)", final, final, 0, cmd);
    snprintf(cmd, sizeof cmd, "umount '%s'", mnt);
    CHECK(system(cmd) == 0, "%s", cmd);
}

/* (c) */
static void bad_input(int x264) {
    char wd[400], p[400], final[500], cmd[1500], err[256];
    snprintf(wd, sizeof wd, "%s/wd", root);
    snprintf(p, sizeof p, "%s/x.mp4", root);
    FILE *f = fopen(p, "w");
    for (int i = 0; f && i < 4000; i++) fputc((i * 7919) % 251, f);
    if (f) fclose(f);
    snprintf(final, sizeof final, "%s/bad/x.mp4", root);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s/bad'", pf_test_bin(), wd, p, root);
    refused("garbage bytes named x.mp4", p, final, 0, cmd);
    snprintf(p, sizeof p, "%s/a.mkv", root);
    snprintf(final, sizeof final, "%s/bad/a.mkv", root);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s/bad' --codec ffv1 --crf 10",
             pf_test_bin(), wd, p, root);
    refused("--crf with ffv1", "crf", final, 0, cmd);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s/bad' --codec libx264 --quality 5",
             pf_test_bin(), wd, p, root);
    if (x264) refused("--quality with libx264", "quality", final, 0, cmd);
    /* an existing output: refused and untouched; --force replaces it */
    snprintf(final, sizeof final, "%s/out/a.mkv", root);
    size_t n0 = 0, n1 = 0;
    char *before = pf_read_file(final, &n0, err, sizeof err);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s/out' --codec mpeg4", pf_test_bin(),
             wd, p, root);
    refused("an existing output without --force", final, NULL, 0, cmd);
    char *after = pf_read_file(final, &n1, err, sizeof err);
    CHECK(before && after && n0 == n1 && !memcmp(before, after, n0), "%s changed", final);
    free(after);
    char *o, v[64];
    int st = pf_test_run(root, &o, "%s --force", cmd);
    CHECK(st == 0, "--force: status %d:\n%s", st, o);
    free(o);
    probe(final, "v:0", "codec_name", v, sizeof v);
    CHECK(!strcmp(v, "mpeg4"), "--force: %s is '%s' (want mpeg4)", final, v);
    /* put the FFV1 output back as it was (a later case reads nothing from it; tidy anyway) */
    if (before) pf_write_file_atomic(final, before, n0, err, sizeof err);
    free(before);
    interrupt(wd);
    full_disk(wd, p);
}

/* (d) an .mp4's mov_text subtitles: the .mkv that --codec ffv1 falls back to cannot hold
   them, an error naming the way out; --drop-unsupported-streams leaves them out, audio kept. */
static void unsupported_stream(void) {
    char wd[400], srt[400], sub[400], subout[500], final[500], cmd[1500];
    snprintf(wd, sizeof wd, "%s/wd", root);
    snprintf(srt, sizeof srt, "%s/subs.srt", root);
    FILE *f = fopen(srt, "w");
    if (f) fputs("1\n00:00:00,000 --> 00:00:00,500\nhello\n\n", f), fclose(f);
    snprintf(sub, sizeof sub, "%s/sub.mp4", root);
    CHECK(sh("ffmpeg -v error -nostdin -y -f lavfi -i testsrc=size=48x32:rate=10 -f lavfi -i "
             "sine=sample_rate=44100 -i '%s' -t 1 -map 0 -map 1 -map 2 -c:v mpeg4 -c:a aac "
             "-c:s mov_text '%s'%s", srt, sub, "") == 0, "making %s", sub);
    snprintf(final, sizeof final, "%s/subout/sub.mkv", root);
    snprintf(cmd, sizeof cmd, "'%s' upscale '%s' '%s' -o '%s/subout' --codec ffv1",
             pf_test_bin(), wd, sub, root);
    refused("mov_text into .mkv", "--drop-unsupported-streams", final, 0, cmd);
    char *o;
    int st = pf_test_run(root, &o, "%s --drop-unsupported-streams", cmd);
    CHECK(st == 0 && strstr(o, "dropped"), "--drop-unsupported-streams: status %d:\n%s", st, o);
    free(o);
    probe(final, "s", "codec_name", subout, sizeof subout);
    CHECK(subout[0] == '\0', "%s: a subtitle stream '%s' was kept", final, subout);
    probe(final, "a:0", "codec_name", subout, sizeof subout);
    CHECK(!strcmp(subout, "aac"), "%s: audio '%s' (want aac)", final, subout);
}

int main(void) {
    if (system("ffmpeg -version > /dev/null 2>&1 && ffprobe -version > /dev/null 2>&1") != 0) {
        printf("test_upscale_video: the ffmpeg and ffprobe CLI are needed (scripts/setup.sh "
               "--test-deps)\n");
        return 77;
    }
    snprintf(root, sizeof root, "/tmp/pf_test_upscale_video_%d", (int)getpid());
    char err[256];
    CHECK(pf_mkdirs(root, err, sizeof err) == 0, "%s", err);
    int x264 = system("ffmpeg -hide_banner -encoders 2>/dev/null | grep -q libx264") == 0;
    if (!x264) printf("this FFmpeg has no libx264: the default encoder case is skipped\n");
    image_network(x264);
    odd_size();
    video_network();
    window_network();
    bad_input(x264);
    unsupported_stream();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (!getenv("PF_TEST_KEEP") && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return pf_test_end("test_upscale_video");
}
