/* dtype.c — names, sizes and classes of wick's dtypes, and the conversion
 * of a host double to one element of any dtype (scalar.h rules). */
#include <string.h>
#include "core.h"
#include "scalar.h"

static const char *const dtype_names[] = {
    "u8", "u32", "i16", "i32", "i64", "bf16", "f16", "f32", "f64", "f8e4m3",
};
static const unsigned char dtype_sizes[] = { 1, 4, 2, 4, 8, 2, 2, 4, 8, 1 };
_Static_assert(sizeof dtype_names / sizeof dtype_names[0] == WK_DTYPE_COUNT, "dtype names");
_Static_assert(sizeof dtype_sizes == WK_DTYPE_COUNT, "dtype sizes");

bool wk_dtype_valid(wk_dtype dt) { return (unsigned)dt < WK_DTYPE_COUNT; }
const char *wk_dtype_name(wk_dtype dt) { return wk_dtype_valid(dt) ? dtype_names[dt] : "?"; }
size_t wk_dtype_size(wk_dtype dt) { return wk_dtype_valid(dt) ? dtype_sizes[dt] : 0; }

bool wk_dtype_is_float(wk_dtype dt)
{
    return dt == WK_BF16 || dt == WK_F16 || dt == WK_F32 || dt == WK_F64 || dt == WK_F8E4M3;
}

bool wk_dtype_from_name(const char *name, wk_dtype *out)
{
    if (!name) return false;
    for (int i = 0; i < WK_DTYPE_COUNT; i++) {
        if (strcmp(name, dtype_names[i]) == 0) {
            if (out) *out = (wk_dtype)i;
            return true;
        }
    }
    return false;
}

void wk_scalar_to_bytes(double v, wk_dtype dt, void *buf)
{
    switch (dt) {
    case WK_U8: { uint8_t x = wk_f64_to_u8(v); memcpy(buf, &x, 1); break; }
    case WK_U32: { uint32_t x = wk_f64_to_u32(v); memcpy(buf, &x, 4); break; }
    case WK_I16: { int16_t x = wk_f64_to_i16(v); memcpy(buf, &x, 2); break; }
    case WK_I32: { int32_t x = wk_f64_to_i32(v); memcpy(buf, &x, 4); break; }
    case WK_I64: { int64_t x = wk_f64_to_i64(v); memcpy(buf, &x, 8); break; }
    case WK_BF16: { uint16_t x = wk_f64_to_bf16(v); memcpy(buf, &x, 2); break; }
    case WK_F16: { uint16_t x = wk_f64_to_f16(v); memcpy(buf, &x, 2); break; }
    case WK_F32: { float x = (float)v; memcpy(buf, &x, 4); break; }
    case WK_F64: memcpy(buf, &v, 8); break;
    case WK_F8E4M3: { uint8_t x = wk_f64_to_f8e4m3(v); memcpy(buf, &x, 1); break; }
    default: break;
    }
}
