/*  frame_indices — the LQ neighbours of a frame in a sliding-window video set (EDVR's
    VideoTestDataset): BasicSR's basicsr/data/data_util.py generate_frame_indices, with its
    four paddings at the clip's ends. docs/video.md ("Sliding windows").

    Frame idx of a clip of n frames gets the num_frame (odd) indices idx - h .. idx + h,
    h = num_frame / 2; an index i outside [0, n - 1] (m = n - 1 the last frame) becomes
      replicate          i < 0: 0                 i > m: m
      reflection         i < 0: -i                i > m: 2 m - i
      reflection_circle  i < 0: idx + h - i       i > m: (idx - h) - (i - m)
      circle             i < 0: num_frame + i     i > m: i - num_frame
    (BasicSR's docstring, idx 0 of num_frame 5: replicate [0, 0, 0, 1, 2], reflection
    [2, 1, 0, 1, 2], reflection_circle [4, 3, 0, 1, 2], circle [3, 4, 0, 1, 2].)
    reflection_circle is BasicSR's choice for EDVR's REDS4 and Vid4 tests.

    A clip too short for the window can make the rule give an index outside [0, n) (BasicSR
    then reads past the clip or wraps a negative Python index); PixFlow refuses it instead:
    pf_video_frame_indices returns -1 and pf_video_min_frames says how long a clip must be.
*/
#ifndef PF_FRAME_INDICES_H
#define PF_FRAME_INDICES_H

typedef enum {
    PF_PAD_REPLICATE = 0,
    PF_PAD_REFLECTION,
    PF_PAD_REFLECTION_CIRCLE,
    PF_PAD_CIRCLE,
    PF_PAD_COUNT
} pf_frame_padding;

/* "replicate" | "reflection" | "reflection_circle" | "circle" -> the mode, -1 for another. */
int pf_frame_padding_parse(const char *name);
/* The mode's name as above ("?" out of range). */
const char *pf_frame_padding_name(int padding);

/* The num_frame frame indices of frame idx's window in a clip of n_frames frames into
   out[0 .. num_frame - 1] (out[num_frame / 2] = idx), by the rule at the top of this file.
   Returns 0, or -1 (out unspecified) when num_frame is not odd and positive, n_frames < 1,
   idx is outside [0, n_frames), padding is not a mode, or an index falls outside
   [0, n_frames) (the clip is too short for the window with this padding). */
int pf_video_frame_indices(int idx, int n_frames, int num_frame, int padding, int *out);

/* The fewest frames n such that every clip of n or more frames gives every frame a window
   inside the clip (pf_video_frame_indices returns 0 for all idx in [0, n')), n' >= n; 0 for a
   bad num_frame or padding. */
int pf_video_min_frames(int num_frame, int padding);
#endif
