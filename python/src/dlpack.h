/* dlpack.h — the DLPack structures (the data-exchange ABI of dlpack.h,
 * versions 0.8 and 1.x) that the Python bindings export and import.
 * Only what _wick.c uses; field order and types are the ABI and must
 * match the protocol's header exactly. */
#ifndef WICK_PY_DLPACK_H
#define WICK_PY_DLPACK_H

#include <stdint.h>

enum {
    WKDL_CPU = 1,
    WKDL_CUDA = 2,
    WKDL_CUDA_HOST = 3,
    WKDL_ROCM = 10,
    WKDL_ROCM_HOST = 11,
    WKDL_CUDA_MANAGED = 13,
};

enum {
    WKDL_INT = 0,
    WKDL_UINT = 1,
    WKDL_FLOAT = 2,
    WKDL_BFLOAT = 4,
    WKDL_BOOL = 6,
    WKDL_FLOAT8_E4M3FN = 10,
};

#define WKDL_FLAG_READ_ONLY (1ULL << 0)
#define WKDL_FLAG_IS_COPIED (1ULL << 1)

typedef struct {
    int32_t device_type;
    int32_t device_id;
} WKDLDevice;

typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} WKDLDataType;

typedef struct {
    void *data;
    WKDLDevice device;
    int32_t ndim;
    WKDLDataType dtype;
    int64_t *shape;
    int64_t *strides;        /* in elements; NULL: row-major */
    uint64_t byte_offset;
} WKDLTensor;

/* "dltensor" capsules (before 1.0) */
typedef struct WKDLManagedTensor {
    WKDLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct WKDLManagedTensor *self);
} WKDLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} WKDLPackVersion;

/* "dltensor_versioned" capsules (1.0 and later) */
typedef struct WKDLManagedTensorVersioned {
    WKDLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct WKDLManagedTensorVersioned *self);
    uint64_t flags;
    WKDLTensor dl_tensor;
} WKDLManagedTensorVersioned;

#endif /* WICK_PY_DLPACK_H */
