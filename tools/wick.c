/* wick.c — the `wick` command line: dispatch to subcommands, usage, and
 * `wick info` (version, build, and every device found with its model,
 * memory, compute units and warp size; for a GPU kind whose plugin did not
 * load, the reason). `wick bench` lives in wick_bench.c.
 *
 * Exit statuses: 0 success, 1 the command failed, 2 bad command line.
 */
#include <stdio.h>
#include <string.h>
#include "wick.h"
#include "wick_tool.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wick <command> [options]\n"
            "\n"
            "commands:\n"
            "  info             version, build, and every device found\n"
            "  bench [options]  time core ops on one device (wick bench --help)\n"
            "  version          print the version\n"
            "  help             print this text\n");
}

static void print_bytes(uint64_t bytes)
{
    double gib = (double)bytes / (1024.0 * 1024.0 * 1024.0);
    if (gib >= 1.0) printf("%.1f GiB", gib);
    else printf("%.0f MiB", (double)bytes / (1024.0 * 1024.0));
}

/* Opens one device by name and prints its description. Returns 0 on
 * success, 1 when the device could not be opened or described. */
static int print_device(const char *name)
{
    wk_device *dev = wk_device_open(name);
    if (!dev) {
        printf("  %-8s error: %s\n", name, wk_last_error());
        return 1;
    }
    wk_device_info info;
    int rc = 0;
    if (wk_device_info_get(dev, &info) != WK_OK) {
        printf("  %-8s error: %s\n", name, wk_last_error());
        rc = 1;
    } else {
        printf("  %-8s %s\n", info.name[0] ? info.name : name, info.model);
        printf("  %-8s memory ", "");
        print_bytes(info.total_memory);
        printf(" total, ");
        print_bytes(info.free_memory);
        printf(" free; %d compute unit%s; warp size %d\n", info.compute_units,
               info.compute_units == 1 ? "" : "s", info.warp_size);
    }
    wk_device_close(dev);
    return rc;
}

/* The GPU devices of one kind ("cuda" or "rocm"), or why there are none. */
static int print_gpu_kind(const char *kind)
{
    int n = wk_device_count(kind);
    if (n <= 0) {
        const char *why = wk_plugin_status(kind);
        if (why && why[0]) printf("  %-8s not available: %s\n", kind, why);
        else printf("  %-8s no devices found\n", kind);
        return 0;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%s:%d", kind, i);
        rc |= print_device(name);
    }
    return rc;
}

int wick_cmd_info(int argc, char **argv)
{
    if (argc > 1) {
        if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
            printf("usage: wick info\n"
                   "Prints the version and build of wick and every device it finds.\n");
            return WICK_EXIT_OK;
        }
        fprintf(stderr, "wick info: unexpected argument '%s' (wick info takes none)\n", argv[1]);
        return WICK_EXIT_USAGE;
    }
    printf("wick %d.%d.%d\n", WK_VERSION_MAJOR, WK_VERSION_MINOR, WK_VERSION_PATCH);
    const char *build = wk_build_info();
    printf("build: %s\n", build ? build : "?");
    printf("\ndevices:\n");
    int rc = print_device("cpu");
    rc |= print_gpu_kind("cuda");
    rc |= print_gpu_kind("rocm");
    return rc ? WICK_EXIT_FAIL : WICK_EXIT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return WICK_EXIT_OK;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || !strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        if (argc > 2 && !strcmp(argv[2], "bench")) wick_bench_usage();
        else usage(stdout);
        return WICK_EXIT_OK;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("wick %d.%d.%d\n", WK_VERSION_MAJOR, WK_VERSION_MINOR, WK_VERSION_PATCH);
        return WICK_EXIT_OK;
    }
    if (!strcmp(cmd, "info")) return wick_cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return wick_cmd_bench(argc - 1, argv + 1);
    fprintf(stderr, "wick: unknown command '%s'\n", cmd);
    usage(stderr);
    return WICK_EXIT_USAGE;
}
