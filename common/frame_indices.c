/*  frame_indices — see frame_indices.h. */
#include "common/frame_indices.h"

#include <string.h>

static const char *const names[PF_PAD_COUNT] = {"replicate", "reflection", "reflection_circle",
                                                 "circle"};

int pf_frame_padding_parse(const char *name) {
    for (int p = 0; p < PF_PAD_COUNT; p++)
        if (!strcmp(name, names[p])) return p;
    return -1;
}

const char *pf_frame_padding_name(int padding) {
    return padding >= 0 && padding < PF_PAD_COUNT ? names[padding] : "?";
}

int pf_video_frame_indices(int idx, int n_frames, int num_frame, int padding, int *out) {
    if (num_frame < 1 || num_frame % 2 == 0 || n_frames < 1 || idx < 0 || idx >= n_frames ||
        padding < 0 || padding >= PF_PAD_COUNT)
        return -1;
    int h = num_frame / 2, m = n_frames - 1;
    for (int k = 0; k < num_frame; k++) {
        int i = idx - h + k, j = i;
        if (i < 0) {
            switch (padding) {
            case PF_PAD_REPLICATE: j = 0; break;
            case PF_PAD_REFLECTION: j = -i; break;
            case PF_PAD_REFLECTION_CIRCLE: j = idx + h - i; break;
            default: j = num_frame + i; break;
            }
        } else if (i > m) {
            switch (padding) {
            case PF_PAD_REPLICATE: j = m; break;
            case PF_PAD_REFLECTION: j = 2 * m - i; break;
            case PF_PAD_REFLECTION_CIRCLE: j = (idx - h) - (i - m); break;
            default: j = i - num_frame; break;
            }
        }
        if (j < 0 || j > m) return -1;
        out[k] = j;
    }
    return 0;
}

/* replicate never leaves the clip; reflection reaches h frames from an end, so h + 1 frames
   hold it; reflection_circle (idx 0: up to 2 h) and circle (up to num_frame - 1) need the
   whole window. tests/test_frame_indices checks these against every clip length. */
int pf_video_min_frames(int num_frame, int padding) {
    if (num_frame < 1 || num_frame % 2 == 0) return 0;
    switch (padding) {
    case PF_PAD_REPLICATE: return 1;
    case PF_PAD_REFLECTION: return num_frame / 2 + 1;
    case PF_PAD_REFLECTION_CIRCLE:
    case PF_PAD_CIRCLE: return num_frame;
    default: return 0;
    }
}
