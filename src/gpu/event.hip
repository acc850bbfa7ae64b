/* event.hip — device events for the public wk_event_* (include/wick.h):
 * one timing hipEvent per wk_event, recorded on the context's stream, so
 * that every op launched on the device before the record comes before
 * the mark. elapsed waits for both marks and reads the runtime's
 * timestamps (float ms, resolution about 0.5 us on NVIDIA).
 *
 * The runtimes document elapsed time for a start recorded before the end
 * only; to give the negative answer the API promises when the marks come
 * the other way round, a result <= 0 is checked against the reverse pair.
 * Destroying an event whose mark is still ahead of the device is allowed
 * by both runtimes (it is released when the device gets there). */
#include "gpu_internal.h"
#include <stdlib.h>

typedef struct ev_event {
    hipEvent_t ev;
} ev_event;

wk_status wk_gpu_event_new(void *ctx, void **out)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    *out = NULL;
    WK_GPU_ENTER(c);
    ev_event *e = (ev_event *)calloc(1, sizeof *e);
    if (!e) return wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory for an event");
    hipError_t err = hipEventCreateWithFlags(&e->ev, hipEventDefault);   /* timing on */
    if (err != hipSuccess) {
        free(e);
        return wk_gpu_fail(c, err, "hipEventCreateWithFlags(&e->ev, hipEventDefault)", __FILE__, __LINE__);
    }
    *out = e;
    return WK_OK;
}

void wk_gpu_event_free(void *ctx, void *ev)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    ev_event *e = (ev_event *)ev;
    if (!e) return;
    if (hipSetDevice(c->device) == hipSuccess) (void)hipEventDestroy(e->ev);
    (void)hipGetLastError();
    free(e);
}

wk_status wk_gpu_event_record(void *ctx, void *ev)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    WK_GPU_ENTER(c);
    WK_GPU_CHECK_C(c, hipEventRecord(((ev_event *)ev)->ev, c->stream));
    return WK_OK;
}

wk_status wk_gpu_event_synchronize(void *ctx, void *ev)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    WK_GPU_ENTER(c);
    WK_GPU_CHECK_C(c, hipEventSynchronize(((ev_event *)ev)->ev));
    return WK_OK;
}

wk_status wk_gpu_event_elapsed_ms(void *ctx, void *start, void *end, double *ms)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    hipEvent_t a = ((ev_event *)start)->ev, b = ((ev_event *)end)->ev;
    *ms = 0;
    WK_GPU_ENTER(c);
    WK_GPU_CHECK_C(c, hipEventSynchronize(a));
    WK_GPU_CHECK_C(c, hipEventSynchronize(b));
    float f = 0;
    WK_GPU_CHECK_C(c, hipEventElapsedTime(&f, a, b));
    if (f <= 0 && a != b) {
        float r = 0;
        if (hipEventElapsedTime(&r, b, a) == hipSuccess && r > 0) f = -r;
        (void)hipGetLastError();
    }
    *ms = (double)f;
    return WK_OK;
}
