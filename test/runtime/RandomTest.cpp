//===- RandomTest.cpp - Philox4x32-10 and the dropout draw ----------------===//
//
// Philox4x32-10 against the known-answer vectors of Random123
// (tests/kat_vectors: counter, key, expected). The dropout draw: the kept
// fraction over 2^20 elements within 5 standard deviations of 1 - ratio, and
// distinct (stream, step, seed) giving different masks.
//
//===----------------------------------------------------------------------===//

#include "trainc_rt/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace {

using trainc::random::dropoutKeeps;
using trainc::random::philox4x32_10;
using trainc::random::uniform;

TEST(Philox, KnownAnswers) {
  struct Case {
    uint32_t ctr[4], key[2], want[4];
  } cases[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Case &c : cases) {
    auto r = philox4x32_10(c.ctr[0], c.ctr[1], c.ctr[2], c.ctr[3], c.key[0], c.key[1]);
    for (int k = 0; k < 4; ++k)
      EXPECT_EQ(r.v[k], c.want[k]) << "word " << k;
  }
}

TEST(Philox, UniformUsesTheDocumentedCounter) {
  // Element 6 of stream 3 at step 2^32 + 5 under seed 2^33 + 7: word 2 of
  // Philox(counter [1, 3, 5, 1], key [7, 2]).
  auto r = philox4x32_10(1, 3, 5, 1, 7, 2);
  float want = static_cast<float>(r.v[2] >> 8) / 16777216.0f;
  EXPECT_EQ(uniform((int64_t{1} << 33) + 7, (int64_t{1} << 32) + 5, 3, 6), want);
}

TEST(Dropout, KeptFractionAndIndependence) {
  const int64_t n = int64_t{1} << 20;
  const int64_t key[2] = {1234, 1}, nextStep[2] = {1234, 2}, otherSeed[2] = {1235, 1};
  for (float ratio : {0.1f, 0.5f, 0.9f}) {
    int64_t kept = 0, sameStream = 0, sameStep = 0, sameSeed = 0;
    for (int64_t i = 0; i < n; ++i) {
      bool k = dropoutKeeps(key, 0, i, ratio);
      kept += k;
      sameStream += k == dropoutKeeps(key, 1, i, ratio);
      sameStep += k == dropoutKeeps(nextStep, 0, i, ratio);
      sameSeed += k == dropoutKeeps(otherSeed, 0, i, ratio);
    }
    double p = 1.0 - ratio, sigma = std::sqrt(n * p * (1 - p));
    EXPECT_LT(std::fabs(kept - n * p), 5 * sigma) << "ratio " << ratio;
    // Independent masks agree on p^2 + (1-p)^2 of the elements.
    double agree = p * p + (1 - p) * (1 - p), agreeSigma = std::sqrt(n * agree * (1 - agree));
    for (int64_t same : {sameStream, sameStep, sameSeed})
      EXPECT_LT(std::fabs(same - n * agree), 5 * agreeSigma) << "ratio " << ratio;
  }
}

TEST(Dropout, RatioZeroKeepsEverything) {
  const int64_t key[2] = {0, 0};
  for (int64_t i = 0; i < 4096; ++i)
    EXPECT_TRUE(dropoutKeeps(key, 0, i, 0.0f));
}

} // namespace
