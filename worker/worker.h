/*  worker — `pixflow worker --connect ADDR` (see worker.c). */
#ifndef PF_WORKER_H
#define PF_WORKER_H
/* Entry point; argv excludes the subcommand. Returns 0 when training finished or stopped with
   a checkpoint, 1 on failure. */
int pf_worker_main(int argc, char **argv);
#endif
