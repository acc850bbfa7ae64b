/* graph.hip — recorded work (backend.h's graph_* members; the public API
 * is wk_graph_* in include/wick.h): stream capture of the context's one
 * stream into a CUDA/HIP graph, instantiated once and launched on that
 * stream.
 *
 * Capture runs in relaxed mode: ops that allocate (a miss of the caching
 * allocator calls hipMalloc) may be recorded; what must not be recorded
 * is refused by the ops themselves while c->recording is set (host
 * transfers, synchronizations: WK_GPU_NOT_RECORDING) or done without a
 * host wait (index.hip's id checks are skipped). The allocator gives the
 * recording's blocks to the graph (allocator.hip, "graphs' blocks"), so
 * a replay never meets memory that was handed to someone else. */
#include "gpu_internal.h"
#include <stdio.h>
#include <stdlib.h>

typedef struct gr_graph {
    hipGraphExec_t exec;
    struct wk_gpu_graph_mem *mem;
} gr_graph;

wk_status wk_gpu_graph_begin(void *ctx)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    WK_GPU_ENTER(c);
    if (c->recording)
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%s:%d is recording a graph already", WK_GPU_PLATFORM, c->device);
    wk_status st = wk_gpu_mem_capture_begin(c);
    if (st != WK_OK) return st;
    const hipError_t e = hipStreamBeginCapture(c->stream, hipStreamCaptureModeRelaxed);
    if (e != hipSuccess) {
        wk_gpu_mem_graph_release(c, wk_gpu_mem_capture_end(c));
        return wk_gpu_fail(c, e, "hipStreamBeginCapture(c->stream, hipStreamCaptureModeRelaxed)", __FILE__, __LINE__);
    }
    c->recording = 1;
    return WK_OK;
}

/* WICK_GRAPH_INFO=1: what a recording became, on stderr (nodes by kind;
 * edges, and on CUDA how many are programmatic: the captured form of a
 * programmatic dependent launch) */
static void gr_info(const wk_gpu_ctx *c, hipGraph_t g)
{
#if defined(WK_GPU_HIP)
    (void)c, (void)g;   /* CUDA only */
#else
    if (!wk_gpu_env.graph_info) return;   /* WICK_GRAPH_INFO=1 */
    size_t n = 0, ne = 0, kinds[4] = { 0, 0, 0, 0 }, prog = 0;
    if (cudaGraphGetNodes(g, NULL, &n) != cudaSuccess) return;
    cudaGraphNode_t *nodes = (cudaGraphNode_t *)calloc(n ? n : 1, sizeof *nodes);
    if (nodes && cudaGraphGetNodes(g, nodes, &n) == cudaSuccess) {
        for (size_t i = 0; i < n; i++) {
            cudaGraphNodeType t;
            if (cudaGraphNodeGetType(nodes[i], &t) != cudaSuccess) continue;
            kinds[t == cudaGraphNodeTypeKernel ? 0 : t == cudaGraphNodeTypeMemcpy ? 1 : t == cudaGraphNodeTypeMemset ? 2 : 3]++;
        }
    }
    free(nodes);
    if (cudaGraphGetEdges(g, NULL, NULL, NULL, &ne) == cudaSuccess && ne) {
        cudaGraphNode_t *from = (cudaGraphNode_t *)calloc(ne, sizeof *from), *to = (cudaGraphNode_t *)calloc(ne, sizeof *to);
        cudaGraphEdgeData *ed = (cudaGraphEdgeData *)calloc(ne, sizeof *ed);
        if (from && to && ed && cudaGraphGetEdges(g, from, to, ed, &ne) == cudaSuccess)
            for (size_t i = 0; i < ne; i++) prog += ed[i].type == cudaGraphDependencyTypeProgrammatic;
        free(from), free(to), free(ed);
    }
    (void)cudaGetLastError();
    fprintf(stderr, "wick graph on %s:%d: %zu nodes (%zu kernels, %zu copies, %zu fills, %zu other), %zu edges, %zu programmatic\n",
            WK_GPU_PLATFORM, c->device, n, kinds[0], kinds[1], kinds[2], kinds[3], ne, prog);
#endif
}

wk_status wk_gpu_graph_end(void *ctx, void **out)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    *out = NULL;
    WK_GPU_ENTER(c);
    if (!c->recording)
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "%s:%d is not recording a graph (wk_graph_begin first)",
                                      WK_GPU_PLATFORM, c->device);
    c->recording = 0;
    struct wk_gpu_graph_mem *mem = wk_gpu_mem_capture_end(c);
    hipGraph_t g = NULL;
    hipError_t e = hipStreamEndCapture(c->stream, &g);
    gr_graph *gr = NULL;
    wk_status st = WK_OK;
    if (e != hipSuccess) {
        st = wk_gpu_fail(c, e, "hipStreamEndCapture(c->stream, &g) (an op between wk_graph_begin and wk_graph_end "
                               "could not be recorded)", __FILE__, __LINE__);
    } else if (!(gr = (gr_graph *)calloc(1, sizeof *gr))) {
        st = wk_gpu_host->set_error(WK_ERR_MEMORY, "out of host memory for a graph");
    } else {
        gr_info(c, g);
        e = hipGraphInstantiateWithFlags(&gr->exec, g, 0);
        if (e != hipSuccess) st = wk_gpu_fail(c, e, "hipGraphInstantiateWithFlags(&gr->exec, g, 0)", __FILE__, __LINE__);
    }
    if (g) (void)hipGraphDestroy(g);
    (void)hipGetLastError();
    if (st != WK_OK) {
        free(gr);
        wk_gpu_mem_graph_release(c, mem);   /* nothing recorded ever ran */
        return st;
    }
    gr->mem = mem;
    *out = gr;
    return WK_OK;
}

wk_status wk_gpu_graph_launch(void *ctx, void *graph)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    WK_GPU_ENTER(c);
    if (c->recording)
        return wk_gpu_host->set_error(WK_ERR_ARGUMENT, "a graph launched on %s:%d while it records another",
                                      WK_GPU_PLATFORM, c->device);
    WK_GPU_CHECK_C(c, hipGraphLaunch(((gr_graph *)graph)->exec, c->stream));
    __atomic_store_n(&c->last_op, (const char *)"graph", __ATOMIC_RELAXED);
    return WK_OK;
}

void wk_gpu_graph_free(void *ctx, void *graph)
{
    wk_gpu_ctx *c = (wk_gpu_ctx *)ctx;
    gr_graph *gr = (gr_graph *)graph;
    if (!gr) return;
    /* its replays end before its memory can go to anyone else */
    if (hipSetDevice(c->device) == hipSuccess) (void)hipStreamSynchronize(c->stream);
    (void)hipGraphExecDestroy(gr->exec);
    (void)hipGetLastError();
    wk_gpu_mem_graph_release(c, gr->mem);
    free(gr);
}
