/* graph.c — recorded stretches of a device's work (wk_graph_*, include/
 * wick.h): the core keeps the device (retained while a graph lives) and
 * hands recording, replay and release to the backend (backend.h's graph_*
 * members; a backend without them records nothing: the cpu). */
#include <stdlib.h>
#include "core.h"

struct wk_graph {
    wk_device *dev;
    void *be;                /* the backend's graph */
};

bool wk_graph_supported(wk_device *dev)
{
    const wk_backend_iface *be = dev->be;
    return be->graph_begin && be->graph_end && be->graph_launch && be->graph_free;
}

/* wk_graph_supported, with an error when not */
static bool graphs_supported(wk_device *dev)
{
    if (wk_graph_supported(dev)) return true;
    wk_error(WK_ERR_UNSUPPORTED, "device %s does not record graphs", dev->name);
    return false;
}

wk_status wk_graph_begin(wk_device *dev)
{
    WK_ENTER("graph_begin");
    wk_status st;
    if (!dev) st = wk_error(WK_ERR_ARGUMENT, "NULL device");
    else if (!graphs_supported(dev)) st = wk_last_status();
    else st = dev->be->graph_begin(dev->ctx);
    WK_LEAVE();
    return st;
}

wk_graph *wk_graph_end(wk_device *dev)
{
    WK_ENTER("graph_end");
    wk_graph *g = NULL;
    void *h = NULL;
    if (!dev) wk_error(WK_ERR_ARGUMENT, "NULL device");
    else if (graphs_supported(dev) && dev->be->graph_end(dev->ctx, &h) == WK_OK) {
        g = calloc(1, sizeof *g);
        if (!g) {
            dev->be->graph_free(dev->ctx, h);
            wk_error(WK_ERR_MEMORY, "out of host memory");
        } else {
            g->be = h;
            g->dev = wk_device_retain(dev);
        }
    }
    WK_LEAVE();
    return g;
}

wk_status wk_graph_launch(wk_graph *g)
{
    WK_ENTER("graph_launch");
    wk_status st = g ? g->dev->be->graph_launch(g->dev->ctx, g->be) : wk_error(WK_ERR_ARGUMENT, "NULL graph");
    WK_LEAVE();
    return st;
}

void wk_graph_free(wk_graph *g)
{
    if (!g) return;
    g->dev->be->graph_free(g->dev->ctx, g->be);
    wk_device_release(g->dev);
    free(g);
}
