/* data: a sample's random stream in C (lt_data_stream_uniforms, see lt_data.h) — the uniforms
 * numpy.random.default_rng([seed, epoch, index]).random(n) gives, bit for bit, so that a worker thread
 * draws a whole batch's samples without Python. Written from the published definitions: numpy's
 * SeedSequence (entropy words hashed into a pool of four 32-bit words, then into the state words) and
 * O'Neill's PCG64 (128-bit LCG, XSL-RR output), doubles as the top 53 bits of each output. The tests
 * compare it with numpy itself on fresh seeds. */
#include "lt_internal.h"

#define SS_POOL 4
#define SS_INIT_A 0x43b0d7e5u
#define SS_MULT_A 0x931e8875u
#define SS_INIT_B 0x8b51f9ddu
#define SS_MULT_B 0x58f38dedu
#define SS_MIX_L 0xca01f9ddu
#define SS_MIX_R 0x4973f715u
#define SS_XSHIFT 16

static uint32_t ss_hashmix(uint32_t value, uint32_t *hash_const) {
  value ^= *hash_const;
  *hash_const *= SS_MULT_A;
  value *= *hash_const;
  return value ^ (value >> SS_XSHIFT);
}

static uint32_t ss_mix(uint32_t x, uint32_t y) {
  uint32_t r = SS_MIX_L * x - SS_MIX_R * y;
  return r ^ (r >> SS_XSHIFT);
}

/* SeedSequence(entropy).generate_state(4, uint64) for entropy given as its 32-bit words. */
static void ss_state(const uint32_t *words, int n, uint64_t state[4]) {
  uint32_t pool[SS_POOL], h = SS_INIT_A;
  for (int i = 0; i < SS_POOL; i++) pool[i] = ss_hashmix(i < n ? words[i] : 0, &h);
  for (int s = 0; s < SS_POOL; s++)
    for (int d = 0; d < SS_POOL; d++)
      if (s != d) pool[d] = ss_mix(pool[d], ss_hashmix(pool[s], &h));
  for (int s = SS_POOL; s < n; s++)
    for (int d = 0; d < SS_POOL; d++) pool[d] = ss_mix(pool[d], ss_hashmix(words[s], &h));
  uint32_t out[8], hb = SS_INIT_B;
  for (int i = 0; i < 8; i++) {
    uint32_t v = pool[i % SS_POOL] ^ hb;
    hb *= SS_MULT_B;
    v *= hb;
    out[i] = v ^ (v >> SS_XSHIFT);
  }
  for (int i = 0; i < 4; i++) state[i] = (uint64_t)out[2 * i] | (uint64_t)out[2 * i + 1] << 32;
}

/* A non-negative integer as numpy coerces it: little-endian 32-bit words, at least one. */
static int ss_words(uint64_t v, uint32_t *w) {
  w[0] = (uint32_t)v;
  if (v >> 32) {
    w[1] = (uint32_t)(v >> 32);
    return 2;
  }
  return 1;
}

typedef unsigned __int128 pcg128;
#define PCG_MULT (((pcg128)0x2360ed051fc65da4ull << 64) | 0x4385df649fccf645ull)

static uint64_t pcg_next(pcg128 *state, pcg128 inc) {
  *state = *state * PCG_MULT + inc;
  uint64_t hi = (uint64_t)(*state >> 64), lo = (uint64_t)*state;
  unsigned rot = (unsigned)(hi >> 58);
  uint64_t x = hi ^ lo;
  return (x >> rot) | (x << ((64 - rot) & 63));
}

int lt_data_stream_uniforms(uint64_t seed, uint64_t epoch, uint64_t index, double *u, int64_t n) {
  if (!u || n < 0) return lt_fail("data: no room for the stream's uniforms");
  uint32_t words[6];
  int k = ss_words(seed, words);
  k += ss_words(epoch, words + k);
  k += ss_words(index, words + k);
  uint64_t s[4];
  ss_state(words, k, s);
  pcg128 initstate = (pcg128)s[0] << 64 | s[1], initseq = (pcg128)s[2] << 64 | s[3];
  pcg128 inc = initseq << 1 | 1, state = 0;
  pcg_next(&state, inc);
  state += initstate;
  pcg_next(&state, inc);
  for (int64_t i = 0; i < n; i++) u[i] = (double)(pcg_next(&state, inc) >> 11) * (1.0 / 9007199254740992.0);
  return 0;
}
