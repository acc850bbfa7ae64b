/* t_files.h — model files for the LLM tests: a safetensors file of f32
 * tensors, written here from the format's definition (u64 header size, a
 * JSON header with dtype, shape and data offsets, the data). */
#ifndef WICK_T_FILES_H
#define WICK_T_FILES_H

#include <stdbool.h>
#include "wick.h"

typedef struct t_tensor {
    char name[64];
    wk_shape shape;
    float *data;
} t_tensor;

/* path: the .safetensors file; false when it cannot be written */
bool t_write_safetensors(const char *path, const t_tensor *ts, int n);

#endif /* WICK_T_FILES_H */
