/* rtc_cache.h — the disk cache of kernels compiled at run time (rtc.c):
 * SHA-256, the cache key, the folder, and reading and writing entries.
 * Internal to the core (and its unit tests, tests/test_rtc.c).
 *
 * An entry is one file, <folder>/<key in hex>.wkrtc:
 *   8 bytes   magic "WKRTC01\n"
 *   32 bytes  the key (the file's name, repeated: a renamed file is a miss)
 *   8 bytes   symbol length s (little-endian u64)
 *   8 bytes   code length c (little-endian u64)
 *   32 bytes  SHA-256 of the symbol and the code
 *   s bytes   the kernel's symbol (its lowered name), then c bytes of code
 * An entry whose size, key or checksum do not agree is corrupt: it is
 * compiled again and rewritten, never loaded. Writers write a temporary
 * file in the folder and rename it over the entry, so readers see the
 * old file, the new one, or none, never a part. */
#ifndef WICK_CORE_RTC_CACHE_H
#define WICK_CORE_RTC_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include "wick.h"

typedef struct wk_sha256 {
    uint32_t h[8];
    uint64_t bytes;
    unsigned char buf[64];
    size_t used;
} wk_sha256;
void wk_sha256_init(wk_sha256 *s);
void wk_sha256_update(wk_sha256 *s, const void *data, size_t n);
void wk_sha256_final(wk_sha256 *s, unsigned char out[32]);

/* What a cache key is made of. */
typedef struct wk_rtc_key_parts {
    const char *platform;        /* "cuda", "rocm"                         */
    const char *compiler;        /* "nvrtc", "hiprtc"                      */
    const char *arch;
    int warp_size;
    int driver_version;
    const char *prelude;
    const char *source;
    const char *name;
    const char *const *options;
    int n_options;
} wk_rtc_key_parts;

/* The key (SHA-256 of every part, each with its length, and wick's
 * version), as 32 bytes and as 64 hex digits plus a NUL. */
void wk_rtc_key(const wk_rtc_key_parts *p, unsigned char key[32], char hex[65]);

/* The cache folder: $WICK_RTC_CACHE ("off" or "": none), else
 * $XDG_CACHE_HOME/wick/rtc, else $HOME/.cache/wick/rtc. false when
 * there is none. */
bool wk_rtc_cache_folder(char *out, size_t n);

/* Write an entry (creating the folder, mode 0700). */
wk_status wk_rtc_cache_write(const char *folder, const unsigned char key[32], const char *symbol, const void *code,
                             size_t size);
/* Read an entry: 1 found (*symbol and *code malloc'd), 0 absent, -1
 * corrupt (nothing returned). */
int wk_rtc_cache_read(const char *folder, const unsigned char key[32], char **symbol, void **code, size_t *size);
/* The entry's path. */
void wk_rtc_cache_path(const char *folder, const unsigned char key[32], char *out, size_t n);

#endif /* WICK_CORE_RTC_CACHE_H */
