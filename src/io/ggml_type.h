/* ggml tensor types (GGUF): layouts of every known id, and conversions to
 * and from f32. Values are ggml's type ids so a GGUF tensor type maps 1:1. The block types'
 * layouts and formulas live in kernels/quant.c (m2_dtype), which these conversions call. */
#ifndef M2_IO_GGML_TYPE_H
#define M2_IO_GGML_TYPE_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

typedef enum m2_ggml_type {
    M2_GGML_F32 = 0,
    M2_GGML_F16 = 1,
    M2_GGML_Q4_0 = 2,
    M2_GGML_Q4_1 = 3,
    M2_GGML_Q5_0 = 6,
    M2_GGML_Q5_1 = 7,
    M2_GGML_Q8_0 = 8,
    M2_GGML_Q2_K = 10,
    M2_GGML_Q3_K = 11,
    M2_GGML_Q4_K = 12,
    M2_GGML_Q5_K = 13,
    M2_GGML_Q6_K = 14,
    M2_GGML_IQ4_NL = 20,
    M2_GGML_BF16 = 30,
} m2_ggml_type;

#define M2_GGML_QK 32                    /* values per Q8_0 / Q4_0 block */
#define M2_GGML_Q8_0_BYTES 34
#define M2_GGML_Q4_0_BYTES 18

/* Layout of any ggml type id (also the ones we only skip over): values per block and bytes per
 * block. Returns 0 for unknown ids. name is "F32", "Q4_K", ... ("?" when unknown). */
int m2_ggml_type_info(uint32_t type, int *block_elems, int *block_bytes, const char **name);
/* True for the types this project writes (encodes from f32: m2_dtype_info.quantize): F32, F16,
 * BF16, Q8_0, Q4_0, Q4_K, Q6_K. */
int m2_ggml_supported(uint32_t type);
/* True for the types this project reads (decodes to f32 and computes with): the above and Q4_1,
 * Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL. */
int m2_ggml_readable(uint32_t type);
const char *m2_ggml_type_name(uint32_t type);
/* Parses "f32", "F16", "bf16", "q8_0", "Q4_0", "q4_k", "q6_k" (the types the writers encode).
 * Returns 0 or -1. */
int m2_ggml_type_parse(const char *s, m2_ggml_type *out);
/* Bytes of n values of type t (n a multiple of the block size), overflow-checked: -1 on overflow
 * or when n is not a whole number of blocks. */
int m2_ggml_nbytes(uint32_t type, uint64_t n, uint64_t *out);

uint16_t m2_ggml_f32_to_f16(float f);      /* round to nearest even; overflow -> inf */
float m2_ggml_f16_to_f32(uint16_t h);
uint16_t m2_ggml_f32_to_bf16(float f);     /* round to nearest even; NaN stays NaN */
float m2_ggml_bf16_to_f32(uint16_t h);

/* dst[n] = values of src (type t, n values). src may be unaligned. -1 for a type that is not
 * m2_ggml_readable or n not a whole number of blocks. */
int m2_ggml_dequantize(uint32_t type, const void *src, float *dst, uint64_t n, m2_err *err);
/* dst = src[n] encoded as t (ggml's reference rounding for Q8_0 / Q4_0). */
int m2_ggml_quantize(uint32_t type, const float *src, void *dst, uint64_t n, m2_err *err);

#endif
