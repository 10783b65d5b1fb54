/*  networks — see networks.h: the rows of PF_NETWORKS as an array, and the lookup by name. */
#include "common/networks.h"

#include <string.h>

#define PF_NET_ROW(n, sc, vid, wide, shift, rcan, grow, fsrcnn, srcnn, spynet, nb, max_nb,     \
                   unshuffle, note, ref)                                                       \
    {#n, sc, vid,                                                                              \
     (wide == 1 ? PF_NK_WIDE : 0) | (shift ? PF_NK_SHIFT : 0) | (rcan ? PF_NK_RCAN : 0) |           \
         (grow ? PF_NK_GROW : 0) | (fsrcnn ? PF_NK_FSRCNN : 0) | (srcnn ? PF_NK_SRCNN : 0) |   \
         (spynet ? PF_NK_SPYNET : 0),                                                          \
     nb, max_nb, unshuffle, note, ref},

const pf_network pf_networks[] = {PF_NETWORKS(PF_NET_ROW)};
const int pf_n_networks = (int)(sizeof pf_networks / sizeof pf_networks[0]);

const pf_network *pf_network_find(const char *name) {
    for (int i = 0; i < pf_n_networks; i++)
        if (!strcmp(pf_networks[i].name, name))
            return &pf_networks[i];
    return NULL;
}
