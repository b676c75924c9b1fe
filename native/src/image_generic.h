/* Includes IM_GENERIC_FILE three times: for bytes, floats and doubles, with
 *   real      the element type,  temp_t  the arithmetic type (float for bytes),
 *   IM_(f)    f_byte / f_float / f_double,  IM_IS_BYTE  1 for the byte pass.
 * No include guard: each kernel file includes it once. */
#define IM_CAT_(a, b) a##_##b
#define IM_CAT(a, b) IM_CAT_(a, b)

#define real uint8_t
#define temp_t float
#define IM_(name) IM_CAT(name, byte)
#define IM_IS_BYTE 1
#include IM_GENERIC_FILE
#undef real
#undef temp_t
#undef IM_
#undef IM_IS_BYTE

#define real float
#define temp_t float
#define IM_(name) IM_CAT(name, float)
#define IM_IS_BYTE 0
#include IM_GENERIC_FILE
#undef real
#undef temp_t
#undef IM_
#undef IM_IS_BYTE

#define real double
#define temp_t double
#define IM_(name) IM_CAT(name, double)
#define IM_IS_BYTE 0
#include IM_GENERIC_FILE
#undef real
#undef temp_t
#undef IM_
#undef IM_IS_BYTE

#undef IM_GENERIC_FILE
