/* cli.h — what the files of the `wick` command line share: one entry
 * function per subcommand (argv[0] is the subcommand's name) and the
 * exit statuses they return. The command line is written against the
 * public API (include/wick.h) only; tools/check-layers checks it.
 *
 *   main.c     dispatch, usage, `wick version`
 *   info.c     `wick info`: version, build, every device found
 *   bench.c    `wick bench`: timing of core ops through the public API
 *   inspect.c  `wick inspect`: a GGUF or safetensors file's metadata and tensors
 *   quantize.c `wick quantize`: a model written as a quantized GGUF file
 *   run.c      `wick run`: text generation with a language model; the
 *              default model and device, which `wick serve` shares
 *   serve.c    `wick serve`: an OpenAI-compatible HTTP server (src/server)
 *   template.c `wick template`: a conversation through a chat template
 */
#ifndef WICK_CLI_H
#define WICK_CLI_H

#include <stdbool.h>
#include <stddef.h>

#define WICK_EXIT_OK 0
#define WICK_EXIT_FAIL 1    /* the command ran and something failed      */
#define WICK_EXIT_USAGE 2   /* bad command line                          */

int wick_cmd_info(int argc, char **argv);
int wick_cmd_version(int argc, char **argv);
int wick_cmd_bench(int argc, char **argv);
void wick_bench_usage(void);
int wick_cmd_inspect(int argc, char **argv);
/* inspect.c: whether path is read as GGUF (the magic, or a .gguf name) */
bool wick_cli_is_gguf(const char *path);
void wick_inspect_usage(void);
int wick_cmd_quantize(int argc, char **argv);
void wick_quantize_usage(void);
int wick_cmd_run(int argc, char **argv);
void wick_run_usage(void);
/* run.c: the default model's path in the cache (fetched when absent; who:
 * the command, for messages), 0 or -1 after a message; the best device
 * present ("cuda:0", "rocm:0", else "cpu") */
int wick_default_model(char *path, size_t n, const char *who);
const char *wick_best_device(void);
int wick_cmd_serve(int argc, char **argv);
void wick_serve_usage(void);
int wick_cmd_template(int argc, char **argv);
void wick_template_usage(void);

#endif /* WICK_CLI_H */
