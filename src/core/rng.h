/* Deterministic pseudo-random numbers: xoshiro256** seeded through splitmix64. Every consumer owns
 * its own m2_rng (no global state), so results depend only on seeds, never on call interleaving.
 * The state is 4 words and is saved verbatim in checkpoints. */
#ifndef M2_RNG_H
#define M2_RNG_H
#include <stdint.h>

typedef struct m2_rng { uint64_t s[4]; } m2_rng;

/* splitmix64's output for state x: a well-mixed 64-bit hash of a counter (seeding, counter-based
 * dropout masks, stable pseudo-ids). Inline so loops over counters vectorise. */
static inline uint64_t m2_hash64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void m2_rng_seed(m2_rng *r, uint64_t seed);
/* An independent stream derived from (seed, stream), e.g. one per worker or per episode. */
void m2_rng_seed_stream(m2_rng *r, uint64_t seed, uint64_t stream);
uint64_t m2_rng_u64(m2_rng *r);
uint32_t m2_rng_below(m2_rng *r, uint32_t n);      /* uniform in [0, n), unbiased; n > 0 */
float m2_rng_uniform(m2_rng *r);                     /* uniform in [0, 1) with 24 bits */
double m2_rng_uniform_d(m2_rng *r);                  /* uniform in [0, 1) with 53 bits */
float m2_rng_normal(m2_rng *r);                      /* standard normal (Box-Muller, no cached pair) */
void m2_rng_shuffle_u32(m2_rng *r, uint32_t *a, uint32_t n); /* Fisher-Yates */

#endif
