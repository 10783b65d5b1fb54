/*  pixflow — one executable, one subcommand per role (see docs/architecture.md). */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    fprintf(stderr, "usage: pixflow train|test|coordinator|loader|worker|hook ...\n");
    return 2;
}
