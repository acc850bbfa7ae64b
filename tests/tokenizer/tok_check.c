/* tok_check.c — build/wick-tok-check, the C side of tools/check_tokenizers.py.
 *
 *   wick-tok-check (--gguf FILE | --json FILE) CORPUS IDS OUT
 *
 * CORPUS holds one record per line, escaped as tools/gen_tok_corpus.py
 * writes them; IDS one line of space-separated ids per record (the
 * reference's encoding). For each record OUT gets three lines:
 *   E <wick's ids for the record, bos/eos and special tokens as the file says>
 *   D <wick's decoding of the IDS line, escaped like the corpus>
 *   S <the same with special tokens skipped>
 * Every decoding is also made by the streaming decoder, one id at a time,
 * and must equal the whole one; and the raw decoding of wick's own ids
 * must give the record back where the tokenizer keeps every byte (checked
 * by the caller). The last line of stderr gives the encode time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wick_tokenizer.h"

static size_t unescape(const char *s, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char d = s[i + 1];
            if (d == '\\') { out[o++] = '\\'; i++; continue; }
            if (d == 'n') { out[o++] = '\n'; i++; continue; }
            if (d == 'r') { out[o++] = '\r'; i++; continue; }
            if (d == 'x' && i + 3 < n) {
                char h[3] = { s[i + 2], s[i + 3], 0 };
                out[o++] = (char)strtol(h, NULL, 16);
                i += 3;
                continue;
            }
        }
        out[o++] = s[i];
    }
    return o;
}

/* the corpus escape: valid UTF-8 as it is, but \\ \n \r; other bytes \xNN */
static void escape(FILE *f, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        int len = 0;
        if (c < 0x80) len = 1;
        else if (c >= 0xC2 && c <= 0xDF) len = 2;
        else if (c >= 0xE0 && c <= 0xEF) len = 3;
        else if (c >= 0xF0 && c <= 0xF4) len = 4;
        bool ok = len > 0 && i + (size_t)len <= n;
        for (int k = 1; ok && k < len; k++) ok = (u[i + k] & 0xC0) == 0x80;
        if (ok && len == 3) {
            if (c == 0xE0 && u[i + 1] < 0xA0) ok = false;
            if (c == 0xED && u[i + 1] > 0x9F) ok = false;
        }
        if (ok && len == 4) {
            if (c == 0xF0 && u[i + 1] < 0x90) ok = false;
            if (c == 0xF4 && u[i + 1] > 0x8F) ok = false;
        }
        if (!ok) { fprintf(f, "\\x%02x", c); i++; continue; }
        if (c == '\\') fputs("\\\\", f);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else fwrite(s + i, 1, (size_t)len, f);
        i += (size_t)len;
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int decode_checked(const wk_tokenizer *t, const int32_t *ids, int64_t n, unsigned flags, char **out, size_t *len,
                          long line)
{
    if (wk_tokenizer_decode(t, ids, n, flags, out, len)) {
        fprintf(stderr, "wick-tok-check: line %ld: decode: %s\n", line, wk_last_error());
        return 1;
    }
    wk_tok_stream *s = wk_tok_stream_new(t, flags);
    char *acc = malloc(*len + 16);
    size_t an = 0, cap = *len + 16;
    const char *p;
    size_t m;
    int bad = 0;
    for (int64_t i = 0; i <= n && !bad; i++) {
        wk_status st = i < n ? wk_tok_stream_push(s, ids[i], &p, &m) : wk_tok_stream_flush(s, &p, &m);
        if (st) { bad = 1; break; }
        if (an + m > cap) { bad = 1; break; }
        memcpy(acc + an, p, m);
        an += m;
    }
    if (!bad && (an != *len || memcmp(acc, *out, an))) bad = 1;
    if (bad) fprintf(stderr, "wick-tok-check: line %ld: the streamed decoding (flags %u) differs from the whole one\n", line, flags);
    free(acc);
    wk_tok_stream_free(s);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 6 || (strcmp(argv[1], "--gguf") && strcmp(argv[1], "--json"))) {
        fprintf(stderr, "usage: wick-tok-check (--gguf FILE | --json FILE) CORPUS IDS OUT\n");
        return 2;
    }
    wk_tokenizer *t = !strcmp(argv[1], "--gguf") ? wk_tokenizer_from_gguf_file(argv[2]) : wk_tokenizer_from_json_file(argv[2]);
    if (!t) { fprintf(stderr, "wick-tok-check: %s\n", wk_last_error()); return 1; }
    FILE *fc = fopen(argv[3], "rb"), *fi = fopen(argv[4], "rb"), *fo = fopen(argv[5], "wb");
    if (!fc || !fi || !fo) { fprintf(stderr, "wick-tok-check: cannot open the files\n"); return 1; }
    char *line = NULL, *iline = NULL;
    size_t cap = 0, icap = 0;
    ssize_t n;
    long ln = 0;
    int bad = 0;
    double t_enc = 0;
    size_t bytes = 0;
    while ((n = getline(&line, &cap, fc)) >= 0) {
        ln++;
        if (n && line[n - 1] == '\n') n--;
        char *rec = malloc((size_t)n + 1);
        size_t rn = unescape(line, (size_t)n, rec);
        bytes += rn;
        int32_t *ids;
        int64_t nid;
        double t0 = now();
        if (wk_tokenizer_encode(t, rec, rn, WK_TOK_ADD_SPECIAL | WK_TOK_PARSE_SPECIAL, &ids, &nid)) {
            fprintf(stderr, "wick-tok-check: line %ld: encode: %s\n", ln, wk_last_error());
            return 1;
        }
        t_enc += now() - t0;
        fputc('E', fo);
        for (int64_t i = 0; i < nid; i++) fprintf(fo, " %d", ids[i]);
        fputc('\n', fo);
        free(ids);
        free(rec);
        /* the reference's ids */
        ssize_t in = getline(&iline, &icap, fi);
        if (in < 0) { fprintf(stderr, "wick-tok-check: %s ends at line %ld\n", argv[4], ln); return 1; }
        int64_t cnt = 0, capi = 64;
        int32_t *rids = malloc((size_t)capi * sizeof *rids);
        for (char *p = iline; *p && *p != '\n';) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p) break;
            if (cnt == capi) { capi *= 2; rids = realloc(rids, (size_t)capi * sizeof *rids); }
            rids[cnt++] = (int32_t)v;
            p = end;
        }
        for (int pass = 0; pass < 2; pass++) {
            char *txt;
            size_t tl;
            bad |= decode_checked(t, rids, cnt, pass ? WK_TOK_SKIP_SPECIAL : 0, &txt, &tl, ln);
            fputc(pass ? 'S' : 'D', fo);
            fputc(' ', fo);
            escape(fo, txt, tl);
            fputc('\n', fo);
            free(txt);
        }
        free(rids);
    }
    fprintf(stderr, "wick-tok-check: %ld records, %zu bytes, encoded in %.3f s (%.1f MB/s)\n", ln, bytes, t_enc,
            t_enc > 0 ? bytes / t_enc / 1e6 : 0.0);
    free(line);
    free(iline);
    fclose(fc);
    fclose(fi);
    fclose(fo);
    wk_tokenizer_free(t);
    return bad;
}
