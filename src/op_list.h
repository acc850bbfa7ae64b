/* op_list.h — every op a backend may implement, in one list. The wk_op
 * enum, the op names, each op's family, the dtypes it takes, and the
 * mapping from the public enums (wk_unary_op, wk_binary_op, wk_cmp_op,
 * wk_reduce_op) are all generated from it, and so are the parts of the
 * backends' op tables and kernel switches that a family shares.
 *
 * Adding an op: append a line at the END (before the closing comment
 * line), so that no existing op is renumbered and a plugin built before
 * the op still loads (its op table is shorter; the core treats the ops it
 * lacks as unsupported). Then write its kernel bodies and its tests: for
 * an elementwise unary op that is all (see WK_OP_SIGMOID: UF_SIGMOID in
 * src/cpu/cpu_elementwise.c, its case in src/gpu/elementwise.hip). A
 * fused op (several ops' work in one launch) is appended the same way, in
 * a family of its own or an existing one (LINEAR: a one-row product and
 * the op after it), so a new fusion changes no struct of backend.h
 * (docs/fused-ops.md).
 *
 Each entry is X(KIND, NAME, "name", P, DTYPES); a user defines X to
 * dispatch on KIND (#define MY(K, N, S, P, D) MY_##K(N, S, P, D)):
 *   U  unary elementwise; P is its wk_unary_op
 *   B  binary arithmetic; P is its wk_binary_op
 *   C  comparison (dst u8); P is its wk_cmp_op
 *   R  reduction; P is its wk_reduce_op
 *   P  unary elementwise with scalar parameters (p[0], p[1]); no public
 *      enum value (P is 0)
 *   O  any other op; P is its family (a wk_op_family without the
 *      WK_FAMILY_ prefix), which says which wk_op_args fields it uses
 *      (backend.h)
 * A reserved op (family RESERVED, no dtypes) may be given its family
 * and dtypes in place when its layer lands: no backend implemented it, so
 * nothing built before sees a change.
 * Static asserts in src/core/ops_table.c check that the public enums have
 * one entry per line of their kind, with the values the lines give.
 * DTYPES is the set the reference (cpu) backend implements and wk_supports
 * answers for it (a wk_dtype_mask of src/dtype_traits.h; WK_DT_NONE for
 * ops reserved for layers still to come). The ops on block-quantized
 * tensors (QCONVERT, QMATMUL, QGATHER families) are filed under the block
 * dtype they take: dst's for QUANTIZE, src[0]'s (the quantized operand)
 * for DEQUANTIZE, QMATMUL and QGATHER; their float side (f32, f16, bf16)
 * is not in the mask. QMATMUL also takes a dense f16/bf16 weight (a model
 * file's matrices as they are, against x of another float dtype: the cpu;
 * GPUs widen such weights at load instead).
 */
#ifndef WICK_OP_LIST_H
#define WICK_OP_LIST_H

#include "dtype_traits.h"

#define WK_OP_LIST(X)                                                              \
    X(U, EXP, "exp", WK_EXP, WK_DT_FLOATS)                                         \
    X(U, LOG, "log", WK_LOG, WK_DT_FLOATS)                                         \
    X(U, SIN, "sin", WK_SIN, WK_DT_FLOATS)                                         \
    X(U, COS, "cos", WK_COS, WK_DT_FLOATS)                                         \
    X(U, TANH, "tanh", WK_TANH, WK_DT_FLOATS)                                      \
    X(U, ABS, "abs", WK_ABS, WK_DT_DENSE)                                          \
    X(U, NEG, "neg", WK_NEG, WK_DT_DENSE)                                          \
    X(U, RECIP, "recip", WK_RECIP, WK_DT_FLOATS)                                   \
    X(U, SQR, "sqr", WK_SQR, WK_DT_DENSE)                                          \
    X(U, SQRT, "sqrt", WK_SQRT, WK_DT_FLOATS)                                      \
    X(U, GELU, "gelu", WK_GELU, WK_DT_FLOATS)                                      \
    X(U, GELU_ERF, "gelu_erf", WK_GELU_ERF, WK_DT_FLOATS)                          \
    X(U, ERF, "erf", WK_ERF, WK_DT_FLOATS)                                         \
    X(U, RELU, "relu", WK_RELU, WK_DT_DENSE)                                       \
    X(U, SILU, "silu", WK_SILU, WK_DT_FLOATS)                                      \
    X(U, FLOOR, "floor", WK_FLOOR, WK_DT_DENSE)                                    \
    X(U, CEIL, "ceil", WK_CEIL, WK_DT_DENSE)                                       \
    X(U, ROUND, "round", WK_ROUND, WK_DT_DENSE)                                    \
    X(U, SIGN, "sign", WK_SIGN, WK_DT_DENSE)                                       \
    X(P, AFFINE, "affine", 0, WK_DT_DENSE)  /* p[0] mul, p[1] add */           \
    X(P, POWF, "powf", 0, WK_DT_FLOATS)  /* p[0] exponent      */              \
    X(P, ELU, "elu", 0, WK_DT_FLOATS)  /* p[0] alpha         */                \
    X(B, ADD, "add", WK_ADD, WK_DT_DENSE)                                          \
    X(B, SUB, "sub", WK_SUB, WK_DT_DENSE)                                          \
    X(B, MUL, "mul", WK_MUL, WK_DT_DENSE)                                          \
    X(B, DIV, "div", WK_DIV, WK_DT_DENSE)                                          \
    X(B, MINIMUM, "minimum", WK_MINIMUM, WK_DT_DENSE)                              \
    X(B, MAXIMUM, "maximum", WK_MAXIMUM, WK_DT_DENSE)                              \
    X(C, EQ, "eq", WK_EQ, WK_DT_DENSE)                                             \
    X(C, NE, "ne", WK_NE, WK_DT_DENSE)                                             \
    X(C, LT, "lt", WK_LT, WK_DT_DENSE)                                             \
    X(C, LE, "le", WK_LE, WK_DT_DENSE)                                             \
    X(C, GT, "gt", WK_GT, WK_DT_DENSE)                                             \
    X(C, GE, "ge", WK_GE, WK_DT_DENSE)                                             \
    X(O, WHERE, "where_cond", WHERE, WK_DT_DENSE)                                  \
    X(R, SUM, "sum", WK_SUM, WK_DT_DENSE)                                          \
    X(R, MIN, "min", WK_MIN, WK_DT_DENSE)                                          \
    X(R, MAX, "max", WK_MAX, WK_DT_DENSE)                                          \
    X(R, ARGMIN, "argmin", WK_ARGMIN, WK_DT_DENSE)                                 \
    X(R, ARGMAX, "argmax", WK_ARGMAX, WK_DT_DENSE)                                 \
    X(O, MATMUL, "matmul", MATMUL, WK_DT_MATMUL)                                   \
    X(O, INDEX_SELECT, "index_select", INDEX_SELECT, WK_DT_DENSE)                  \
    X(O, GATHER, "gather", GATHER, WK_DT_DENSE)                                    \
    X(O, SCATTER_SET, "scatter_set", SCATTER, WK_DT_DENSE)                         \
    X(O, SCATTER_ADD, "scatter_add", SCATTER, WK_DT_DENSE)                         \
    X(O, INDEX_ADD, "index_add", INDEX_ADD, WK_DT_DENSE)                           \
    X(O, COPY, "copy", COPY, WK_DT_DENSE)                                          \
    X(O, COPY2D, "copy2d", COPY2D, WK_DT_DENSE)                                    \
    X(O, CONST_SET, "const_set", CONST_SET, WK_DT_DENSE)                           \
    X(O, RAND_UNIFORM, "rand_uniform", RAND, WK_DT_FLOATS)                         \
    X(O, RAND_NORMAL, "rand_normal", RAND, WK_DT_FLOATS)                           \
    X(O, CONV1D, "conv1d", CONV, WK_DT_NN)                                         \
    X(O, CONV_TRANSPOSE1D, "conv_transpose1d", CONV, WK_DT_NN)                     \
    X(O, CONV2D, "conv2d", CONV, WK_DT_NN)                                         \
    X(O, CONV_TRANSPOSE2D, "conv_transpose2d", CONV, WK_DT_NN)                     \
    X(O, AVG_POOL2D, "avg_pool2d", POOL, WK_DT_NN)                                 \
    X(O, MAX_POOL2D, "max_pool2d", POOL, WK_DT_NN)                                 \
    X(O, UPSAMPLE_NEAREST1D, "upsample_nearest1d", UPSAMPLE, WK_DT_NN)             \
    X(O, UPSAMPLE_NEAREST2D, "upsample_nearest2d", UPSAMPLE, WK_DT_NN)             \
    X(O, UPSAMPLE_BILINEAR2D, "upsample_bilinear2d", UPSAMPLE, WK_DT_NN)           \
    X(O, ARG_SORT, "arg_sort", SORT, WK_DT_DENSE)                                  \
    X(O, SOFTMAX, "softmax", SOFTMAX, WK_DT_NN)                                    \
    X(O, RMS_NORM, "rms_norm", NORM, WK_DT_NN)                                     \
    X(O, LAYER_NORM, "layer_norm", NORM, WK_DT_NN)                                 \
    X(O, ROPE, "rope", ROPE, WK_DT_NN)                                             \
    X(O, ATTENTION, "attention", ATTENTION, WK_DT_NN)                              \
    X(O, QMATMUL, "qmatmul", QMATMUL, WK_DT_QUANTS | WK_DT_HALVES)                 \
    X(O, CUSTOM, "custom", RESERVED, WK_DT_NONE)                                   \
    X(U, SIGMOID, "sigmoid", WK_SIGMOID, WK_DT_FLOATS)                             \
    X(O, LOG_SOFTMAX, "log_softmax", SOFTMAX, WK_DT_NN)                            \
    X(O, ROPE_I, "rope_i", ROPE, WK_DT_NN)                                         \
    X(O, ROPE_THD, "rope_thd", ROPE, WK_DT_NN)                                     \
    X(O, SILU_MUL, "silu_mul", BINARY, WK_DT_NN)                                   \
    X(O, ADD_RMS_NORM, "add_rms_norm", NORM, WK_DT_NN)                             \
    X(O, DEQUANTIZE, "dequantize", QCONVERT, WK_DT_QUANTS)                         \
    X(O, QUANTIZE, "quantize", QCONVERT, WK_DT_QUANTIZABLE)                             \
    X(O, QGATHER, "qgather", QGATHER, WK_DT_QUANTS)                                \
    X(O, ROPE_KV, "rope_kv", ROPE_KV, WK_DT_NN)                                    \
    X(O, LINEAR_SILU_MUL, "linear_silu_mul", LINEAR, WK_DT_NN)                     \
    X(O, LINEAR_ROPE_KV, "linear_rope_kv", LINEAR, WK_DT_NN)                       \
    X(O, PAGED_ATTENTION, "paged_attention", PAGED_ATTENTION, WK_DT_NN)            \
    /* append new ops above this line */

/* Family of an entry (a wk_op_family value): WK_OP_FAMILY(K, P) */
#define WK_OP_FAMILY(K, P) WK_OP_FAMILY_##K(P)
#define WK_OP_FAMILY_U(P) WK_FAMILY_UNARY
#define WK_OP_FAMILY_P(P) WK_FAMILY_UNARY
#define WK_OP_FAMILY_B(P) WK_FAMILY_BINARY
#define WK_OP_FAMILY_C(P) WK_FAMILY_CMP
#define WK_OP_FAMILY_R(P) WK_FAMILY_REDUCE
#define WK_OP_FAMILY_O(P) WK_FAMILY_##P

#endif /* WICK_OP_LIST_H */
