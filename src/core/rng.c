#include "core/rng.h"
#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = m2_hash64(*x);
    *x += 0x9e3779b97f4a7c15ULL;
    return z;
}

void m2_rng_seed(m2_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

void m2_rng_seed_stream(m2_rng *r, uint64_t seed, uint64_t stream) {
    uint64_t x = stream;
    m2_rng_seed(r, seed ^ splitmix64(&x));
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t m2_rng_u64(m2_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

uint32_t m2_rng_below(m2_rng *r, uint32_t n) {
    /* Lemire's multiply-shift with rejection: unbiased */
    uint64_t m = (uint64_t)(uint32_t)(m2_rng_u64(r) >> 32) * n;
    uint32_t l = (uint32_t)m;
    if (l < n) {
        uint32_t t = (uint32_t)(-n) % n;
        while (l < t) {
            m = (uint64_t)(uint32_t)(m2_rng_u64(r) >> 32) * n;
            l = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

float m2_rng_uniform(m2_rng *r) { return (float)(m2_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

double m2_rng_uniform_d(m2_rng *r) { return (double)(m2_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }

float m2_rng_normal(m2_rng *r) {
    double u1 = m2_rng_uniform_d(r), u2 = m2_rng_uniform_d(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void m2_rng_shuffle_u32(m2_rng *r, uint32_t *a, uint32_t n) {
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = m2_rng_below(r, i);
        uint32_t t = a[i - 1]; a[i - 1] = a[j]; a[j] = t;
    }
}
