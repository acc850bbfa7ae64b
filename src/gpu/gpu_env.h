/* gpu_env.h — the environment knobs the GPU backend consults on its ops'
 * paths (switches for comparisons, launch shapes for tuning runs), read
 * once: when the plugin's entry point runs, and again by its env_refresh
 * (backend.h; wk_env_refresh), which a test or bench that sets one at run
 * time calls. Never read per op. Knobs read when something is opened
 * (WICK_GPU_STREAM_BLOCK, WICK_GPU_SYNC, WICK_GPU_COUNT_LAUNCHES at a
 * device's open; WICK_NCCL_LIB, WICK_RTC_LIB with their libraries;
 * WICK_COMM_P2P with a communicator) are read then and are not here.
 * Part of the GPU backend's shared headers: include gpu_internal.h. */
#ifndef WICK_GPU_ENV_H
#define WICK_GPU_ENV_H

/* WICK_MATVEC */
enum { WK_MATVEC_AUTO, WK_MATVEC_WICK, WK_MATVEC_BLAS, WK_MATVEC_OTHER };
/* WICK_GPU_ATTN */
enum { WK_ATTN_ENV_NONE, WK_ATTN_ENV_PORTABLE, WK_ATTN_ENV_DECODE_FMA, WK_ATTN_ENV_DECODE, WK_ATTN_ENV_MMA };
/* WICK_CONV */
enum { WK_CONV_ENV_NONE, WK_CONV_ENV_DIRECT, WK_CONV_ENV_GEMM };

typedef struct wk_gpu_knobs {
    /* gemv.hip */
    bool gemv_off;               /* WICK_GEMV=0: no one-row kernel                  */
    int matvec;                  /* WICK_MATVEC: WK_MATVEC_* (unset, "", "auto": AUTO) */
    long long matvec_max_kib;    /* WICK_MATVEC_MAX_KIB (8192)                      */
    bool glu_off;                /* WICK_GPU_GLU=0: linear_silu_mul as two ops      */
    bool rope_fuse_off;          /* WICK_GPU_ROPE_FUSE=0: linear_rope_kv as two ops */
    /* quant.hip */
    bool qmatmul_dequant;        /* WICK_QMATMUL=dequant                            */
    bool qmatvec_f32;            /* WICK_QMATVEC=f32                                */
    int qmv_x;                   /* WICK_QMV_X (8192)                               */
    bool qmv_bps_set;            /* WICK_QMV_BPS given (else chosen by k)           */
    int qmv_bps;
    int qmv_tr;                  /* WICK_QMV_TR (0: chosen)                         */
    int qmvq_local;              /* WICK_QMVQ_LOCAL (1)                             */
    int qmvq_r;                  /* WICK_QMVQ_R (0: chosen)                         */
    /* matmul.hip */
    bool gemm_tiled;             /* WICK_GEMM=tiled                                 */
    /* attention.hip */
    int attn;                    /* WICK_GPU_ATTN: WK_ATTN_ENV_*                    */
    int attn_mt;                 /* WICK_GPU_ATTN_MT: 1, 2, or 0 (chosen)           */
    long long attn_decode_keys;  /* WICK_ATTN_DECODE_KEYS (0: unset)                */
    long long attn_decode_splits;/* WICK_ATTN_DECODE_SPLITS (0: unset)              */
    /* paged_attention.hip */
    bool paged_mma;              /* the matrix-core kernel (WICK_GPU_PAGED=portable: off) */
    /* conv.hip */
    int conv;                    /* WICK_CONV: WK_CONV_ENV_*                        */
    bool conv_dw3_off;           /* WICK_CONV_DW3=0                                 */
    long long conv_col_mb;       /* WICK_CONV_COL_MB (0: unset)                     */
    /* pool.hip */
    bool pool_generic;           /* WICK_POOL_GENERIC set (to anything)             */
    /* nn.hip */
    int nn_units;                /* WICK_GPU_NN_UNITS (0: unset)                    */
    /* launches (compat.h), graphs, collectives */
    bool pdl_off;                /* WICK_GPU_PDL=0                                  */
    bool graph_info;             /* WICK_GRAPH_INFO=1                               */
    bool comm_fuse_off;          /* WICK_COMM_FUSE=0                                */
} wk_gpu_knobs;

/* runtime.hip: the knobs, and their (re)reading */
extern wk_gpu_knobs wk_gpu_env;
void wk_gpu_env_read(void);

#endif /* WICK_GPU_ENV_H */
