/* Storage types for frozen weights and their conversion to/from f32. Compute is always f32. */
#ifndef M2_QUANT_H
#define M2_QUANT_H
#include <stddef.h>
#include <stdint.h>

typedef enum m2_dtype {
    M2_DT_F32 = 0,
    M2_DT_F16 = 1,    /* IEEE half */
    M2_DT_BF16 = 2,   /* top 16 bits of an f32 (round-to-nearest-even when converting) */
    M2_DT_Q8_0 = 3,   /* GGUF Q8_0: blocks of 32 values, x = qs[j] * d */
} m2_dtype;

#define M2_Q8_0_BLOCK 32
/* Exactly GGUF's block_q8_0 (34 bytes, 2-byte aligned): f16 scale then 32 int8. */
typedef struct m2_block_q8_0 {
    uint16_t d;
    int8_t qs[M2_Q8_0_BLOCK];
} m2_block_q8_0;

const char *m2_dtype_name(m2_dtype t);                 /* "f32", "f16", "bf16", "q8_0" */
int m2_dtype_parse(const char *s, m2_dtype *out);      /* 0 ok, -1 unknown name */
/* Bytes for n values of type t; 0 when n is not a multiple of the block size (Q8_0: 32). */
size_t m2_dtype_bytes(m2_dtype t, size_t n);

float m2_f16_to_f32(uint16_t h);
uint16_t m2_f32_to_f16(float f);
float m2_bf16_to_f32(uint16_t h);
uint16_t m2_f32_to_bf16(float f);

/* dst[n] = dequantised src (n values of type t; Q8_0 needs n % 32 == 0). */
void m2_dequantize(m2_dtype t, const void *src, float *dst, size_t n);
/* dst = src converted to type t (Q8_0: d = amax/127, qs = round(x/d), as ggml). */
void m2_quantize(m2_dtype t, const float *src, void *dst, size_t n);

#endif
