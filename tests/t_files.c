/* t_files.c — see t_files.h. */
#include <stdio.h>
#include <stdlib.h>
#include "t_files.h"

static int64_t numel(wk_shape s)
{
    int64_t c = 1;
    for (int d = 0; d < s.rank; d++) c *= s.dims[d];
    return c;
}

bool t_write_safetensors(const char *path, const t_tensor *ts, int n)
{
    size_t hcap = 256 + (size_t)n * 160, hl = 0;
    char *hdr = malloc(hcap);
    if (!hdr) return false;
    uint64_t off = 0;
    hl += (size_t)snprintf(hdr + hl, hcap - hl, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (int i = 0; i < n && hl < hcap; i++) {
        hl += (size_t)snprintf(hdr + hl, hcap - hl, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[", ts[i].name);
        for (int d = 0; d < ts[i].shape.rank && hl < hcap; d++)
            hl += (size_t)snprintf(hdr + hl, hcap - hl, "%s%lld", d ? "," : "", (long long)ts[i].shape.dims[d]);
        if (hl < hcap)
            hl += (size_t)snprintf(hdr + hl, hcap - hl, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                                   (unsigned long long)(off + (uint64_t)numel(ts[i].shape) * 4));
        off += (uint64_t)numel(ts[i].shape) * 4;
    }
    if (hl < hcap) hl += (size_t)snprintf(hdr + hl, hcap - hl, "}");
    while (hl < hcap && hl % 8) hdr[hl++] = ' ';
    FILE *f = hl < hcap ? fopen(path, "wb") : NULL;
    bool ok = f != NULL;
    uint64_t h64 = hl;
    ok = ok && fwrite(&h64, 8, 1, f) == 1 && fwrite(hdr, 1, hl, f) == hl;
    for (int i = 0; ok && i < n; i++) ok = fwrite(ts[i].data, 4, (size_t)numel(ts[i].shape), f) == (size_t)numel(ts[i].shape);
    if (f && fclose(f) != 0) ok = false;
    free(hdr);
    return ok;
}
