//===- random.h - counter-based random numbers for both targets -*- C++ -*-===//
//
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011): a bijection of a 128-bit counter under a 64-bit key. A random
// number is a pure function of (key, counter), so every element of a tensor
// draws its own without shared state, the CPU and CUDA targets draw the same
// numbers, and a backward pass redraws a forward pass's mask instead of
// storing it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_RANDOM_H
#define TRAINC_RT_RANDOM_H

#include <cstdint>

#ifdef __CUDACC__
#define TRAINC_RANDOM_HD __host__ __device__ __forceinline__
#else
#define TRAINC_RANDOM_HD static inline
#endif

namespace trainc::random {

struct Philox4x32 {
  uint32_t v[4];
};

/// Philox4x32 with 10 rounds; the key is bumped before rounds 2 to 10.
TRAINC_RANDOM_HD Philox4x32 philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                         uint32_t k0, uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return {{c0, c1, c2, c3}};
}

/// The uniform number in [0, 1) of element `index` of stream `stream` at
/// `step` under `seed`: word index % 4 of Philox4x32-10(counter = [index / 4,
/// stream, step low, step high], key = [seed low, seed high]), as
/// (word >> 8) * 2^-24 (exact in float).
TRAINC_RANDOM_HD float uniform(int64_t seed, int64_t step, uint32_t stream, int64_t index) {
  const uint64_t s = static_cast<uint64_t>(seed), t = static_cast<uint64_t>(step);
  const uint64_t block = static_cast<uint64_t>(index) >> 2;
  Philox4x32 r = philox4x32_10(static_cast<uint32_t>(block), stream, static_cast<uint32_t>(t),
                               static_cast<uint32_t>(t >> 32), static_cast<uint32_t>(s),
                               static_cast<uint32_t>(s >> 32));
  return static_cast<float>(r.v[index & 3] >> 8) * 5.9604644775390625e-8f;
}

/// Whether dropout with probability `ratio` keeps element `index`
/// (`key` = [seed, step]).
TRAINC_RANDOM_HD bool dropoutKeeps(const int64_t *key, uint32_t stream, int64_t index,
                                   float ratio) {
  return uniform(key[0], key[1], stream, index) >= ratio;
}

} // namespace trainc::random

#undef TRAINC_RANDOM_HD

#endif // TRAINC_RT_RANDOM_H
