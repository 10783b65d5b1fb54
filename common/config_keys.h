/*  config_keys — the keys each mapping of the config accepts, and what an unknown key is told.

    common/config.c dispatches on key names section by section; the lists here name the same
    keys (tests/test_config.c checks that every key listed is accepted where it is listed), so
    an unknown key can be answered with the nearest valid key of its section ("did you mean
    'gt_folder'?", Damerau-Levenshtein distance) or, for the names of BasicSR's options files
    and MMagic's configs, with the PixFlow key that means the same or the closest thing and how
    it differs ("PixFlow calls this 'gt_folder'"). Such names are not accepted as aliases: a
    file written for another framework stops at its first foreign key, with the PixFlow name.
*/
#ifndef PF_CONFIG_KEYS_H
#define PF_CONFIG_KEYS_H
#include <stddef.h>

typedef enum {
    PF_SEC_TOP,                 /* "" */
    PF_SEC_MODEL,               /* model */
    PF_SEC_LOSS,                /* model.loss */
    PF_SEC_DATA,                /* data */
    PF_SEC_DATASET,             /* data.train, data.eval, data.test */
    PF_SEC_DEGRADATION,         /* one step of data.*.degradation */
    PF_SEC_OPTIM,               /* optimizers */
    PF_SEC_PARAMWISE,           /* optimizers.paramwise_cfg */
    PF_SEC_CUSTOM_KEY,          /* optimizers.paramwise_cfg.custom_keys.KEY */
    PF_SEC_OPTIMIZER_CONFIG,    /* optimizer_config */
    PF_SEC_GRAD_CLIP,           /* optimizer_config.grad_clip */
    PF_SEC_LR,                  /* lr_config */
    PF_SEC_CKPT,                /* checkpoint_config */
    PF_SEC_LOG,                 /* log_config */
    PF_SEC_VISUAL,              /* visual_config */
    PF_SEC_EVAL,                /* evaluation */
    PF_SEC_EVAL_CFG,            /* eval_cfg */
    PF_SEC_SECURITY,            /* security */
    PF_SEC_COUNT
} pf_config_section_id;

typedef struct {
    const char *path;           /* the section as messages write it ("data.train" stands for
                                   data.train, data.eval and data.test) */
    const char *const *keys;    /* the keys it accepts, NULL-terminated */
} pf_config_section;

extern const pf_config_section pf_config_sections[PF_SEC_COUNT];

/* What follows "unknown key" for key `name` in section `sec`: "; PixFlow calls this 'x' ..."
   for a BasicSR / MMagic name, "; did you mean 'x'?" when a key of the section is within a
   small edit distance (1 for names up to 5 characters, 2 up to 9, else 3), else "" (an
   unknown name with nothing near it). Written into buf (size >= 1); returns buf. */
const char *pf_config_unknown_hint(pf_config_section_id sec, const char *name, char *buf,
                                   size_t size);

/* Optimal-string-alignment distance between a and b (insertions, deletions, substitutions and
   transpositions of neighbours, each 1), for names up to 63 bytes; longer ones give 64. */
int pf_edit_distance(const char *a, const char *b);
#endif
