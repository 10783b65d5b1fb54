/*  networks — the network types (`model.type`), one row each: the one list of them.

    A row holds what the rest of PixFlow needs to know of a type without building it: its
    name, the scales its builder takes, whether it trains on images or on clips, which groups
    of `model.*` keys it takes, its `n_blocks` default and limit, and the line docs/models.md
    shows for it. Read by the key table (common/config_keys.c: the choices of `model.type`, the
    types each model key applies to), the config rules (common/config.c: per-type defaults,
    scales, clip sets), the docs generator (common/config_docs.c: docs/models.md's table and
    the per-type parts of docs/config.md) and the network builder (nn/zoo.c maps each name to
    its builder; a row without one is refused there, and test_zoo_configs builds every row).

    The rows are an X-macro so that the key table can make its constant strings from them
    ("EDSR|SRCNN|...", the types with `n_feats`); `pf_networks` (common/networks.c) is the
    same rows as an array of structs for code.
*/
#ifndef PF_NETWORKS_H
#define PF_NETWORKS_H

/* X(name, scales, video, wide, shift, rcan, grow, fsrcnn, srcnn, spynet,
     n_blocks, max_blocks, unshuffle, scale_note, reference), in the order `model.type`
   lists the types:
   name        the `model.type` value, as a C identifier
   scales      bit s set: the builder takes scale s (a config allows 2, 3 or 4 of them)
   video       1: a recurrent video network (trains on clips, gives every frame of its clip:
               evaluates and tests on clip sets); 2: a sliding-window video network (num_frame
               LQ frames in, the center frame's SR out: EDVR; trains on REDSDataset's windows)
   wide ... spynet: 1 when the type takes that group of `model.*` keys:
               wide `n_feats`, `n_blocks` (2: `n_feats` alone, EDVR's `num_feat`); shift the mean shift `res_scale`, `rgb_mean`,
               `img_range`; rcan `num_group`, `squeeze_factor`; grow `num_grow_ch`;
               fsrcnn `d`, `s`, `m`; srcnn `channels`, `kernel_sizes`;
               spynet `spynet_pretrained`, `fix_iter`
   n_blocks    the default of `model.n_blocks` (wide types; 0 for the others)
   max_blocks  the largest `model.n_blocks` (0: the key's range)
   unshuffle   bit s set: at scale s the LQ is pixel-unshuffled by 2 first, so a training
               GT patch is a multiple of 2 * s
   scale_note  after "must be 2 or 4 for NAME" when a config asks another scale ("" none)
   reference   docs/models.md: the implementation it follows and notes on its keys */
#define PF_NETWORKS(X)                                                                        \
    X(EDSR, 1 << 2 | 1 << 3 | 1 << 4, 0, 1, 1, 0, 0, 0, 0, 0, 16, 0, 0, "",                  \
      "BasicSR `EDSR`")                                                                       \
    X(SRCNN, 0x1fe, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, "", "MMagic `SRCNNNet`")                 \
    X(FSRCNN, 1 << 2 | 1 << 3 | 1 << 4, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, "",                 \
      "yjn870/FSRCNN-pytorch `FSRCNN` (RGB)")                                                 \
    X(ESPCN, 1 << 2 | 1 << 3 | 1 << 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "",                  \
      "yjn870/ESPCN-pytorch `ESPCN` (RGB); widths 64, 32 as in the paper")                    \
    X(MSRResNet, 1 << 2 | 1 << 3 | 1 << 4, 0, 1, 0, 0, 0, 0, 0, 0, 16, 0, 0, "",             \
      "BasicSR `MSRResNet`")                                                                  \
    X(RCAN, 1 << 2 | 1 << 3 | 1 << 4, 0, 1, 1, 1, 0, 0, 0, 0, 16, 0, 0, "",                  \
      "BasicSR `RCAN`; `n_blocks` per residual group")                                        \
    X(RRDBNet, 1 << 2 | 1 << 4, 0, 1, 0, 0, 1, 0, 0, 0, 23, 0, 1 << 2, "",                   \
      "BasicSR `RRDBNet` (ESRGAN generator); x2 pixel-unshuffles the LQ by 2 first")          \
    X(BasicVSR, 1 << 4, 1, 1, 0, 0, 0, 0, 0, 1, 15, 31, 0, " (two pixel-shuffle x2 stages)",  \
      "BasicSR `BasicVSR` (video: [video.md](video.md)); `n_blocks` per propagation trunk")    \
    X(BasicVSRPlusPlus, 1 << 4, 1, 1, 0, 0, 0, 0, 0, 1, 7, 31, 0,                             \
      " (two pixel-shuffle x2 stages)",                                                       \
      "BasicSR `BasicVSRPlusPlus`, MMagic `BasicVSRPlusPlusNet` (video: [video.md](video.md); " \
      "BasicSR's parameter names); `n_feats` (MMagic `mid_channels`) a multiple of 8, "       \
      "`n_blocks` per propagation branch")                                                    \
    X(EDVR, 1 << 4, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, " (two pixel-shuffle x2 stages)",       \
      "BasicSR `EDVR` (sliding window: `num_frame` LQ frames in, the center frame's SR out; " \
      "[video.md](video.md)); `n_feats` is BasicSR's `num_feat`, the other keys BasicSR's")

/* "|NAME" when FLAG is 1, nothing when 0: the key table's lists of types (FLAG a 0 / 1
   column of the rows). */
#define PF_NET_IF_0(s)
#define PF_NET_IF_1(s) s
#define PF_NET_IF_2(s) s
#define PF_NET_ONE_0 0          /* a column's value 1 alone (wide 2: not the n_blocks group) */
#define PF_NET_ONE_1 1
#define PF_NET_ONE_2 0
#define PF_NET_IF_(flag, s) PF_NET_IF_##flag(s)
#define PF_NET_IF(flag, s) PF_NET_IF_(flag, s)
#define PF_NET_ALL_(n, sc, vid, wide, shift, rcan, grow, fsrcnn, srcnn, spynet, ...) "|" #n
#define PF_NET_VIDEO_(n, sc, vid, ...) PF_NET_IF(vid, "|" #n)
#define PF_NET_WIDE_(n, sc, vid, wide, ...) PF_NET_IF(wide, "|" #n)
#define PF_NET_BLOCKS_(n, sc, vid, wide, ...) PF_NET_IF(PF_NET_ONE_##wide, "|" #n)
#define PF_NET_SHIFT_(n, sc, vid, wide, shift, ...) PF_NET_IF(shift, "|" #n)
#define PF_NET_RCAN_(n, sc, vid, wide, shift, rcan, ...) PF_NET_IF(rcan, "|" #n)
#define PF_NET_GROW_(n, sc, vid, wide, shift, rcan, grow, ...) PF_NET_IF(grow, "|" #n)
#define PF_NET_FSRCNN_(n, sc, vid, wide, shift, rcan, grow, fsrcnn, ...) PF_NET_IF(fsrcnn, "|" #n)
#define PF_NET_SRCNN_(n, sc, vid, wide, shift, rcan, grow, fsrcnn, srcnn, ...)               \
    PF_NET_IF(srcnn, "|" #n)
#define PF_NET_SPYNET_(n, sc, vid, wide, shift, rcan, grow, fsrcnn, srcnn, spynet, ...)      \
    PF_NET_IF(spynet, "|" #n)
/* "A|B|C": the names of the rows whose column GROUP (ALL, VIDEO, WIDE, SHIFT, RCAN, GROW,
   FSRCNN, SRCNN, SPYNET) is not 0 (BLOCKS: wide is 1, the types with `n_blocks`); a constant string (the leading '|' skipped). */
#define PF_NET_LIST(GROUP) (&(PF_NETWORKS(PF_NET_##GROUP##_) "")[1])

/* A group of `model.*` keys a type takes (pf_network.keys). */
enum {
    PF_NK_WIDE = 1 << 0,        /* n_feats, n_blocks (wide 1; wide 2: n_feats alone, checked
                                   by its builder) */
    PF_NK_SHIFT = 1 << 1,       /* res_scale, rgb_mean, img_range */
    PF_NK_RCAN = 1 << 2,        /* num_group, squeeze_factor */
    PF_NK_GROW = 1 << 3,        /* num_grow_ch */
    PF_NK_FSRCNN = 1 << 4,      /* d, s, m */
    PF_NK_SRCNN = 1 << 5,       /* channels, kernel_sizes */
    PF_NK_SPYNET = 1 << 6,      /* spynet_pretrained, fix_iter */
};

/* One row of PF_NETWORKS as a struct. */
typedef struct {
    const char *name;
    unsigned scales;            /* bit s: scale s */
    int video;                  /* 1: a recurrent video network, 2: a sliding-window one */
    unsigned keys;              /* PF_NK_* */
    int n_blocks, max_blocks;   /* n_blocks default and limit (0: none) */
    unsigned unshuffle;         /* bit s: LQ pixel-unshuffled by 2 at scale s */
    const char *scale_note;
    const char *reference;
} pf_network;

extern const pf_network pf_networks[];
extern const int pf_n_networks;

/* The row of network type `name`, or NULL. */
const pf_network *pf_network_find(const char *name);
#endif
