/*  loader — `pixflow loader --connect ADDR` (see loader.c). */
#ifndef PF_LOADER_H
#define PF_LOADER_H
/* Entry point; argv excludes the subcommand. Returns 0 when told to stop, 1 on failure. */
int pf_loader_main(int argc, char **argv);
#endif
