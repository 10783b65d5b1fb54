/*  number — strict text-to-number conversion, one rule for the config file and the command
    line.

    A whole number is an optional sign and decimal digits, nothing else: no spaces, no "0x",
    no "1.0", no "12abc", no empty text. A number (floating point) is what strtod reads from
    the whole text, made only of digits, sign, '.', 'e' or 'E' (so no "inf", "nan" or hex
    floats), finite as a double and as a float. common/config_get.c uses these for every integer
    and number key; the pf_arg_* helpers use them for every numeric option of every `pixflow`
    subcommand, so `--loaders abc` is refused as `loaders: abc` is.
*/
#ifndef PF_NUMBER_H
#define PF_NUMBER_H
#include <stddef.h>
#include <stdint.h>

typedef enum {
    PF_NUM_OK = 0,      /* converted, in range */
    PF_NUM_SYNTAX,      /* not a number of the kind asked for */
    PF_NUM_RANGE        /* a number, outside lo..hi (or beyond int64) */
} pf_num_status;

/* The `len` bytes at `s` (not necessarily NUL-terminated; at most 31 bytes are considered a
   number) as a whole number in lo..hi into *out. *out is set with PF_NUM_OK, and with
   PF_NUM_RANGE to the value, saturated to INT64_MIN / INT64_MAX beyond 64 bits (so a caller
   can tell "below lo" from "above hi"). */
pf_num_status pf_parse_int(const char *s, size_t len, int64_t lo, int64_t hi, int64_t *out);

/* The `len` bytes at `s` (at most 63) as a finite number into *out (no range check: callers
   state their own open or closed bounds). PF_NUM_OK or PF_NUM_SYNTAX. */
pf_num_status pf_parse_double(const char *s, size_t len, double *out);

/* Command-line values. `cmd` names the command for the message ("pixflow train"), `opt` the
   option ("--loaders"), `value` is its argument as given. On a bad value they print
   "CMD: OPT VALUE: expected a whole number LO..HI" (resp. "expected seconds in (0, HI]") to
   stderr and return -1; the caller then exits with status 2 like any usage error. 0 on
   success with *out set. */
int pf_arg_int(const char *cmd, const char *opt, const char *value, int lo, int hi, int *out);
/* A duration in seconds, 0 < value <= hi. */
#define PF_MAX_WAIT_S (7 * 86400.0)   /* the longest --join-timeout: a week */
int pf_arg_seconds(const char *cmd, const char *opt, const char *value, double hi, double *out);
/* "I/N" (an instance or shard of a group): N in 1..max_n, I in 0..N-1, each a whole number. */
int pf_arg_part(const char *cmd, const char *opt, const char *value, int max_n, int *index,
                int *count);

#endif
