/* main.c — the `wick` command line: dispatch to the subcommands (one file
 * each: info.c, bench.c, inspect.c, quantize.c, run.c, serve.c, template.c),
 * usage, and `wick version`.
 *
 * Exit statuses: 0 success, 1 the command failed, 2 bad command line
 * (no command, an unknown one, an argument a command does not take).
 */
#include <stdio.h>
#include <string.h>
#include "wick.h"
#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wick <command> [options]\n"
            "\n"
            "commands:\n"
            "  info             version, build, and every device found\n"
            "  bench [options]  time core ops on one device (wick bench --help)\n"
            "  inspect FILE     a GGUF or safetensors file's metadata and tensors\n"
            "  quantize IN OUT TYPE  write a model as a quantized GGUF file (q4_k_m, q8_0, ...)\n"
            "  run [MODEL]      generate text with a language model (wick run --help)\n"
            "  serve [MODEL]    an OpenAI-compatible HTTP server on a model (wick serve --help)\n"
            "  template ...     a conversation through a chat template (wick template --help)\n"
            "  version          print the version\n"
            "  help             print this text\n");
}

int wick_cmd_version(int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "wick version: unexpected argument '%s' (wick version takes none)\n", argv[1]);
        return WICK_EXIT_USAGE;
    }
    printf("wick %d.%d.%d\n", WK_VERSION_MAJOR, WK_VERSION_MINOR, WK_VERSION_PATCH);
    return WICK_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return WICK_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        if (argc > 2 && !strcmp(argv[2], "bench")) wick_bench_usage();
        else if (argc > 2 && !strcmp(argv[2], "inspect")) wick_inspect_usage();
        else if (argc > 2 && !strcmp(argv[2], "quantize")) wick_quantize_usage();
        else if (argc > 2 && !strcmp(argv[2], "run")) wick_run_usage();
        else if (argc > 2 && !strcmp(argv[2], "serve")) wick_serve_usage();
        else if (argc > 2 && !strcmp(argv[2], "template")) wick_template_usage();
        else if (argc > 2) {
            fprintf(stderr, "wick help: unknown command '%s'\n", argv[2]);
            usage(stderr);
            return WICK_EXIT_USAGE;
        } else usage(stdout);
        return WICK_EXIT_OK;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) return wick_cmd_version(argc - 1, argv + 1);
    if (!strcmp(cmd, "info")) return wick_cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return wick_cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "inspect")) return wick_cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "quantize")) return wick_cmd_quantize(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return wick_cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) return wick_cmd_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "template")) return wick_cmd_template(argc - 1, argv + 1);
    fprintf(stderr, "wick: unknown command '%s'\n", cmd);
    usage(stderr);
    return WICK_EXIT_USAGE;
}
