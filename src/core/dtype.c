/* dtype.c — the public dtype functions (names, sizes, classes: all read
 * from src/dtype_traits.h), and the conversion of a host double to one
 * element of any dense dtype (scalar.h rules). */
#include <string.h>
#include "core.h"
#include "scalar.h"

/* the public enum and the traits list (src/dtype_traits.h) agree */
#define DT_ORDER_(ID, NM, CL, SG, B, BB) _Static_assert((int)ID == (int)DT_INDEX_##ID, "dtype list order");
enum {
#define DT_INDEX_(ID, NM, CL, SG, B, BB) DT_INDEX_##ID,
    WK_DTYPE_LIST(DT_INDEX_)
#undef DT_INDEX_
    DT_LISTED_
};
_Static_assert((int)DT_LISTED_ == (int)WK_DTYPE_COUNT, "one traits entry per dtype");
WK_DTYPE_LIST(DT_ORDER_)
_Static_assert(WK_DENSE_DTYPE_COUNT == 10 && WK_DT_DENSE == (WK_DT_BIT(WK_DENSE_DTYPE_COUNT) - 1),
               "the dense dtypes come first");

bool wk_dtype_valid(wk_dtype dt) { return wk_dt_valid(dt); }
const char *wk_dtype_name(wk_dtype dt) { return wk_dt_name(dt); }
size_t wk_dtype_size(wk_dtype dt) { return (size_t)wk_dt_elem_bytes(dt); }
size_t wk_dtype_block_size(wk_dtype dt) { return (size_t)wk_dt_block(dt); }
size_t wk_dtype_block_bytes(wk_dtype dt) { return (size_t)wk_dt_block_bytes(dt); }
bool wk_dtype_is_float(wk_dtype dt) { return wk_dt_is_float(dt); }
bool wk_dtype_is_quantized(wk_dtype dt) { return wk_dt_is_quant(dt); }

bool wk_dtype_from_name(const char *name, wk_dtype *out)
{
    if (!name) return false;
    for (int i = 0; i < WK_DTYPE_COUNT; i++) {
        if (strcmp(name, wk_dt_name((wk_dtype)i)) == 0) {
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
