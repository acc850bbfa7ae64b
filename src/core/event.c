/* event.c — device events (wk_event_*): markers in a device's stream of
 * work, for timing. The core keeps the device and whether the event was
 * recorded; the backend keeps the handle (a GPU event on the device's
 * stream; a host timestamp on the cpu). See include/wick.h. */
#include <stdlib.h>
#include "core.h"

struct wk_event {
    wk_device *dev;          /* retained until wk_event_free            */
    void *be;                /* the backend's handle                    */
    bool recorded;
};

/* The backend of dev implements events (plugins of ABI 2 do; the check
 * keeps a table with NULL members from being called). */
static bool events_supported(wk_device *dev)
{
    const wk_backend_iface *be = dev->be;
    if (be->event_new && be->event_free && be->event_record && be->event_synchronize && be->event_elapsed_ms)
        return true;
    wk_error(WK_ERR_UNSUPPORTED, "device %s has no events", dev->name);
    return false;
}

wk_event *wk_event_new(wk_device *dev)
{
    WK_ENTER("event_new");
    wk_event *ev = NULL;
    if (!dev) {
        wk_error(WK_ERR_ARGUMENT, "NULL device");
    } else if (events_supported(dev)) {
        ev = calloc(1, sizeof *ev);
        if (!ev) {
            wk_error(WK_ERR_MEMORY, "out of host memory");
        } else if (dev->be->event_new(dev->ctx, &ev->be) != WK_OK) {
            free(ev);
            ev = NULL;
        } else {
            ev->dev = wk_device_retain(dev);
        }
    }
    WK_LEAVE();
    return ev;
}

void wk_event_free(wk_event *ev)
{
    if (!ev) return;
    ev->dev->be->event_free(ev->dev->ctx, ev->be);
    wk_device_release(ev->dev);
    free(ev);
}

wk_status wk_event_record(wk_event *ev)
{
    WK_ENTER("event_record");
    wk_status st;
    if (!ev) st = wk_error(WK_ERR_ARGUMENT, "NULL event");
    else {
        st = ev->dev->be->event_record(ev->dev->ctx, ev->be);
        if (st == WK_OK) ev->recorded = true;
    }
    WK_LEAVE();
    return st;
}

wk_status wk_event_synchronize(wk_event *ev)
{
    WK_ENTER("event_synchronize");
    wk_status st;
    if (!ev) st = wk_error(WK_ERR_ARGUMENT, "NULL event");
    else if (!ev->recorded) st = wk_error(WK_ERR_ARGUMENT, "the event of %s was never recorded", ev->dev->name);
    else st = ev->dev->be->event_synchronize(ev->dev->ctx, ev->be);
    WK_LEAVE();
    return st;
}

wk_status wk_event_elapsed_ms(const wk_event *start, const wk_event *end, double *ms)
{
    WK_ENTER("event_elapsed_ms");
    wk_status st;
    if (ms) *ms = 0;
    if (!start || !end || !ms)
        st = wk_error(WK_ERR_ARGUMENT, "NULL %s", !start ? "start event" : !end ? "end event" : "output");
    else if (start->dev != end->dev)
        st = wk_error(WK_ERR_DEVICE, "the start event is of %s, the end event of %s", start->dev->name,
                      end->dev->name);
    else if (!start->recorded || !end->recorded)
        st = wk_error(WK_ERR_ARGUMENT, "%s never recorded",
                      !start->recorded && !end->recorded ? "neither event was"
                      : !start->recorded                 ? "the start event was"
                                                         : "the end event was");
    else
        st = start->dev->be->event_elapsed_ms(start->dev->ctx, start->be, end->be, ms);
    WK_LEAVE();
    return st;
}
