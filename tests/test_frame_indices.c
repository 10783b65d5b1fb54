/*  test_frame_indices — common/frame_indices.h: the sliding-window neighbours of EDVR's
    VideoTestDataset (BasicSR's generate_frame_indices).

    Plain: BasicSR's docstring examples (frame 0 of a long clip, num_frame 5, every padding),
    one frame at the far end worked by hand per padding, the clip lengths pf_video_min_frames
    gives against every length 1..20 (every frame's window inside the clip from that length
    on, some frame's window refused one frame shorter), bad arguments refused.
    `py` (ctest test_frame_indices.py): every padding, clip length 1..7, num_frame 1, 3, 5, 7
    and every frame against tests/reference/frame_indices_ref.py, BasicSR's rule restated in
    Python (the same windows, the same refusals); 77 without /usr/bin/python3.
*/
#include "common/frame_indices.h"

#include <stdio.h>
#include <string.h>

#include "tests/pf_test.h"
#include "tests/pf_test_ref.h"

static void check_window(int idx, int n, int num_frame, int padding, const int *want) {
    int got[16] = {0};
    int rc = pf_video_frame_indices(idx, n, num_frame, padding, got);
    CHECK(rc == 0 && !memcmp(got, want, sizeof(int) * (size_t)num_frame),
          "%s idx %d n %d num_frame %d: rc %d, got %d %d %d %d %d", pf_frame_padding_name(padding),
          idx, n, num_frame, rc, got[0], got[1], got[2], got[3], got[4]);
}

static void plain(void) {
    /* BasicSR's docstring: current_idx 0, num_frames 5 */
    check_window(0, 100, 5, PF_PAD_REPLICATE, (int[]){0, 0, 0, 1, 2});
    check_window(0, 100, 5, PF_PAD_REFLECTION, (int[]){2, 1, 0, 1, 2});
    check_window(0, 100, 5, PF_PAD_REFLECTION_CIRCLE, (int[]){4, 3, 0, 1, 2});
    check_window(0, 100, 5, PF_PAD_CIRCLE, (int[]){3, 4, 0, 1, 2});
    /* the last frame (99) of 100, by hand: positions 98 99 100 101 -> */
    check_window(99, 100, 5, PF_PAD_REPLICATE, (int[]){97, 98, 99, 99, 99});
    check_window(99, 100, 5, PF_PAD_REFLECTION, (int[]){97, 98, 99, 98, 97});
    check_window(99, 100, 5, PF_PAD_REFLECTION_CIRCLE, (int[]){97, 98, 99, 96, 95});
    check_window(99, 100, 5, PF_PAD_CIRCLE, (int[]){97, 98, 99, 95, 96});
    /* inside the clip every padding is the plain window */
    for (int p = 0; p < PF_PAD_COUNT; p++) check_window(50, 100, 7, p,
                                                        (int[]){47, 48, 49, 50, 51, 52, 53});
    /* pf_video_min_frames against every length */
    for (int p = 0; p < PF_PAD_COUNT; p++)
        for (int nf = 1; nf <= 9; nf += 2) {
            int min = pf_video_min_frames(nf, p), out[9];
            CHECK(min >= 1, "%s num_frame %d: min %d", pf_frame_padding_name(p), nf, min);
            for (int n = 1; n <= 20; n++) {
                int all = 1;
                for (int i = 0; i < n; i++) all &= pf_video_frame_indices(i, n, nf, p, out) == 0;
                CHECK(all == (n >= min), "%s num_frame %d n %d: every window %s, min %d",
                      pf_frame_padding_name(p), nf, n, all ? "fits" : "does not fit", min);
            }
        }
    int out[8];
    CHECK(pf_video_frame_indices(0, 10, 4, PF_PAD_REPLICATE, out) == -1, "even num_frame");
    CHECK(pf_video_frame_indices(0, 10, 0, PF_PAD_REPLICATE, out) == -1, "num_frame 0");
    CHECK(pf_video_frame_indices(10, 10, 3, PF_PAD_REPLICATE, out) == -1, "idx = n");
    CHECK(pf_video_frame_indices(-1, 10, 3, PF_PAD_REPLICATE, out) == -1, "idx -1");
    CHECK(pf_video_frame_indices(0, 10, 3, PF_PAD_COUNT, out) == -1, "bad padding");
    CHECK(pf_video_min_frames(4, PF_PAD_REPLICATE) == 0, "min of an even num_frame");
    for (int p = 0; p < PF_PAD_COUNT; p++)
        CHECK(pf_frame_padding_parse(pf_frame_padding_name(p)) == p, "name %d", p);
    CHECK(pf_frame_padding_parse("mirror") == -1, "unknown padding");
}

/* Every case of the reference's cases.txt against pf_video_frame_indices. */
static void against_python(void) {
    char dir[] = "/tmp/pf_frame_indices.XXXXXX", path[256], line[256];
    if (pf_ref_exec_tmp("frame_indices_ref.py", dir) != 0) return;
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "no %s", path);
    int cases = 0, refused = 0;
    while (f && fgets(line, sizeof line, f)) {
        char mode[32], rest[200];
        int n, nf, idx;
        if (sscanf(line, "%31s %d %d %d: %199[^\n]", mode, &n, &nf, &idx, rest) != 5) {
            CHECK(0, "bad line '%s'", line);
            continue;
        }
        int p = pf_frame_padding_parse(mode), got[8], rc;
        CHECK(p >= 0, "mode %s", mode);
        if (p < 0) continue;
        cases++;
        rc = pf_video_frame_indices(idx, n, nf, p, got);
        if (!strcmp(rest, "refused")) {
            refused++;
            CHECK(rc == -1, "%s n %d num_frame %d idx %d: python refuses, C gives rc %d", mode,
                  n, nf, idx, rc);
            continue;
        }
        char mine[200] = "";
        for (int k = 0; rc == 0 && k < nf; k++)
            snprintf(mine + strlen(mine), sizeof mine - strlen(mine), k ? " %d" : "%d", got[k]);
        CHECK(rc == 0 && !strcmp(mine, rest), "%s n %d num_frame %d idx %d: python '%s', C '%s' "
              "(rc %d)", mode, n, nf, idx, rest, mine, rc);
    }
    if (f) fclose(f);
    /* 4 paddings x 4 sizes x (1 + ... + 7 frames) */
    CHECK(cases == 4 * 4 * 28, "%d cases read", cases);
    printf("test_frame_indices py: %d windows, %d refused by both\n", cases, refused);
    pf_ref_remove(dir);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "py")) {
        if (!pf_ref_have("test_frame_indices py", "os")) return 77;
        against_python();
        return pf_test_end("test_frame_indices py");
    }
    plain();
    return pf_test_end("test_frame_indices");
}
