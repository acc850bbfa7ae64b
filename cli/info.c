/* info.c — `wick info [-v]`: version, build, and every device found with
 * its model, memory, compute units and warp size; for a GPU kind with no
 * devices, one short line saying why (no devices, plugin not built, no
 * driver), the loader's own words under -v. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "wick.h"
#include "cli.h"

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
static int print_gpu_kind(const char *kind, bool verbose)
{
    int n = wk_device_count(kind);
    if (n <= 0) {
        /* one short line; the loader's words under -v */
        const char *why = wk_plugin_status(kind);
        if (!why || !why[0]) printf("  %-8s no devices found\n", kind);
        else if (!strncmp(why, "not built", 9)) printf("  %-8s not built (no libwick_%s.so found)\n", kind, kind);
        else if (!strncmp(why, "no driver", 9)) printf("  %-8s no driver (the plugin needs a library this machine lacks)\n", kind);
        else if (!strncmp(why, "not loadable", 12)) printf("  %-8s not loadable (the plugin file found is not a usable plugin; -v says why)\n", kind);
        else if (!strncmp(why, "not loaded: ", 12)) {
            const char *end = strstr(why, " cannot be loaded");
            printf("  %-8s not loaded: %.*s cannot be loaded\n", kind, end ? (int)(end - why - 12) : 0, why + 12);
        } else printf("  %-8s plugin not loaded (wick info -v says why)\n", kind);
        if (verbose && why && why[0]) printf("  %-8s   %s\n", "", why);
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
    bool verbose = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: wick info [-v]\n"
                   "Prints the version and build of wick and every device it finds;\n"
                   "-v adds why a GPU plugin did not load.\n");
            return WICK_EXIT_OK;
        }
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
            verbose = true;
            continue;
        }
        fprintf(stderr, "wick info: unexpected argument '%s' (usage: wick info [-v])\n", argv[i]);
        return WICK_EXIT_USAGE;
    }
    printf("wick %d.%d.%d\n", WK_VERSION_MAJOR, WK_VERSION_MINOR, WK_VERSION_PATCH);
    const char *build = wk_build_info();
    printf("build: %s\n", build ? build : "?");
    printf("\ndevices:\n");
    int rc = print_device("cpu");
    rc |= print_gpu_kind("cuda", verbose);
    rc |= print_gpu_kind("rocm", verbose);
    return rc ? WICK_EXIT_FAIL : WICK_EXIT_OK;
}

