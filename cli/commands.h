/*  commands — the front-end subcommands (`pixflow train`, `pixflow test`). Role subcommands
    have their entry points in their own folders. */
#ifndef PF_COMMANDS_H
#define PF_COMMANDS_H
/* argv excludes the subcommand. Return the process exit status. */
int pf_train_main(int argc, char **argv);
int pf_test_main(int argc, char **argv);
int pf_monitor_main(int argc, char **argv);     /* cli/monitor.c */
int pf_config_main(int argc, char **argv);      /* cli/config_cmd.c */
int pf_export_main(int argc, char **argv);      /* cli/export.c */
int pf_upscale_main(int argc, char **argv);     /* cli/upscale.c */
int pf_data_main(int argc, char **argv);        /* cli/data.c */
#endif
