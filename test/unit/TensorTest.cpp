//===- TensorTest.cpp - host tensors of the importer ----------------------===//

#include "frontend/Tensor.h"

#include <gtest/gtest.h>

#include <vector>

using namespace trainc::frontend;

TEST(Tensor, HalfPrecisionRoundTrip) {
  Tensor h(DType::F16, {3});
  h.setReal(0, 1.0);
  h.setReal(1, 65504.0);  // largest f16
  h.setReal(2, 1.0 / 3.0);
  EXPECT_EQ(h.real(0), 1.0);
  EXPECT_EQ(h.real(1), 65504.0);
  EXPECT_NEAR(h.real(2), 0.333251953125, 0); // nearest f16 to 1/3
  Tensor b(DType::BF16, {1});
  b.setReal(0, 3.140625);
  EXPECT_EQ(b.real(0), 3.140625);
}

TEST(Tensor, CastTruncatesTowardZero) {
  Tensor f(DType::F32, {4});
  f.setReal(0, 2.7);
  f.setReal(1, -2.7);
  f.setReal(2, 0.0);
  f.setReal(3, 1e30);
  Tensor i = f.castTo(DType::I64);
  EXPECT_EQ(i.integer(0), 2);
  EXPECT_EQ(i.integer(1), -2);
  EXPECT_EQ(i.integer(2), 0);
  EXPECT_EQ(i.integer(3), INT64_MAX); // saturates instead of UB
  Tensor b = f.castTo(DType::I1);
  EXPECT_EQ(b.integers(), (std::vector<int64_t>{1, 1, 0, 1}));
}

TEST(Tensor, BroadcastOffsets) {
  // out[2,3] = a[2,1] + b[3]: offsets follow numpy broadcasting.
  std::vector<std::pair<int64_t, int64_t>> seen;
  forEachBroadcast({2, 3}, {{2, 1}, {3}}, [&](int64_t, llvm::ArrayRef<int64_t> off) {
    seen.emplace_back(off[0], off[1]);
  });
  std::vector<std::pair<int64_t, int64_t>> expected = {{0, 0}, {0, 1}, {0, 2},
                                                       {1, 0}, {1, 1}, {1, 2}};
  EXPECT_EQ(seen, expected);
}

TEST(Tensor, ScalarBroadcast) {
  int calls = 0;
  forEachBroadcast({}, {{}, {}}, [&](int64_t n, llvm::ArrayRef<int64_t> off) {
    EXPECT_EQ(n, 0);
    EXPECT_EQ(off[0], 0);
    ++calls;
  });
  EXPECT_EQ(calls, 1);
}
