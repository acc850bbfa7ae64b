/* wick_tool.h — what the files of the `wick` command line share: one entry
 * function per subcommand (argv[0] is the subcommand's name) and the
 * exit statuses they return.
 *
 *   wick.c        main: dispatch, usage, `wick info`, `wick version`
 *   wick_bench.c  `wick bench`: timing of core ops through the public API
 */
#ifndef WICK_TOOL_H
#define WICK_TOOL_H

#define WICK_EXIT_OK 0
#define WICK_EXIT_FAIL 1    /* the command ran and something failed      */
#define WICK_EXIT_USAGE 2   /* bad command line                          */

int wick_cmd_info(int argc, char **argv);
int wick_cmd_bench(int argc, char **argv);
void wick_bench_usage(void);

#endif /* WICK_TOOL_H */
