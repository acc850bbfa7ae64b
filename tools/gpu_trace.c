/* gpu_trace.c — a device timeline of any program on NVIDIA GPUs, for
 * finding where a step's time goes when kernels overlap (programmatic
 * dependent launch, several GPUs at once), which a per-kernel profiler
 * that serialises kernels cannot show.
 *
 * Built as a preloaded library (LD_PRELOAD) over CUPTI's activity API: it
 * records, for every kernel, copy and fill on every device, its device,
 * start and end (ns, the GPUs' common clock) and name, and writes them at
 * exit as CSV lines "device,start,end,kind,name" to $WICK_TRACE_OUT
 * (default wick-trace.csv). tools/gpu_trace.py sums them by step.
 *
 *   cc -O2 -shared -fPIC tools/gpu_trace.c -o build/libwick_trace.so \
 *      -I$CUDA/include -L$CUDA/lib64 -lcupti
 *   LD_PRELOAD=build/libwick_trace.so WICK_TRACE_OUT=t.csv PROGRAM ...
 *
 * CUPTI hands full buffers back as the program runs; the rest is
 * flushed at exit. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TR_BUF (8u << 20)

static FILE *tr_out;

static void CUPTIAPI tr_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = (uint8_t *)aligned_alloc(8, TR_BUF);
    *size = *buf ? TR_BUF : 0;
    *max_records = 0;
}

static void CUPTIAPI tr_complete(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *r = NULL;
    while (tr_out && cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
            fprintf(tr_out, "%u,%llu,%llu,k,%s\n", k->deviceId, (unsigned long long)k->start,
                    (unsigned long long)k->end, k->name ? k->name : "?");
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
            fprintf(tr_out, "%u,%llu,%llu,c,copy%u_%llu\n", m->deviceId, (unsigned long long)m->start,
                    (unsigned long long)m->end, (unsigned)m->copyKind, (unsigned long long)m->bytes);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
            fprintf(tr_out, "%u,%llu,%llu,s,memset_%llu\n", m->deviceId, (unsigned long long)m->start,
                    (unsigned long long)m->end, (unsigned long long)m->bytes);
        }
    }
    free(buf);
}

__attribute__((constructor)) static void tr_init(void)
{
    const char *path = getenv("WICK_TRACE_OUT");
    tr_out = fopen(path && path[0] ? path : "wick-trace.csv", "w");
    if (!tr_out) {
        fprintf(stderr, "gpu_trace: cannot write %s\n", path ? path : "wick-trace.csv");
        return;
    }
    if (cuptiActivityRegisterCallbacks(tr_request, tr_complete) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
        fprintf(stderr, "gpu_trace: CUPTI refused the activity trace\n");
        fclose(tr_out);
        tr_out = NULL;
        return;
    }
    (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    (void)cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
}

__attribute__((destructor)) static void tr_fini(void)
{
    if (!tr_out) return;
    cuptiActivityFlushAll(1);
    fclose(tr_out);
    tr_out = NULL;
}
