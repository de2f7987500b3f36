//===- ShapeLogicTest.cpp - shared shape arithmetic -----------------------===//

#include "ir/ShapeLogic.h"

#include <gtest/gtest.h>

using namespace trainc;
using llvm::SmallVector;

TEST(ShapeLogic, BroadcastAlignsRight) {
  auto r = shape::broadcast({2, 3, 4}, {4});
  ASSERT_TRUE(r);
  EXPECT_EQ(SmallVector<int64_t>(*r), (SmallVector<int64_t>{2, 3, 4}));
  r = shape::broadcast({2, 1, 4}, {3, 1});
  ASSERT_TRUE(r);
  EXPECT_EQ(SmallVector<int64_t>(*r), (SmallVector<int64_t>{2, 3, 4}));
  EXPECT_FALSE(shape::broadcast({2, 3}, {4}));
  // A zero-size dimension broadcasts against 1 but not against 2 (numpy).
  EXPECT_TRUE(shape::broadcast({0, 3}, {1, 3}));
  EXPECT_FALSE(shape::broadcast({0, 3}, {2, 3}));
}

TEST(ShapeLogic, NumElementsRejectsNegativeAndOverflow) {
  EXPECT_EQ(shape::numElements({2, 3, 4}), 24);
  EXPECT_EQ(shape::numElements({}), 1);
  EXPECT_FALSE(shape::numElements({-1, 3}));
  EXPECT_FALSE(shape::numElements({int64_t(1) << 40, int64_t(1) << 40}));
}

// Reference values from torch.nn.functional.conv2d / max_pool2d output sizes.
TEST(ShapeLogic, WindowOutputSize) {
  // ResNet stem: 224, k7 s2 p3 -> 112; its max pool k3 s2 p1 -> 56.
  EXPECT_EQ(shape::windowOutputSize(224, 7, 2, 3, 3, 1, false), 112);
  EXPECT_EQ(shape::windowOutputSize(112, 3, 2, 1, 1, 1, false), 56);
  // Dilation 2 widens a 3-tap kernel to 5.
  EXPECT_EQ(shape::windowOutputSize(10, 3, 1, 0, 0, 2, false), 6);
  // ceil_mode: 6 with k3 s2 -> floor 2, ceil 3 (PyTorch max_pool2d).
  EXPECT_EQ(shape::windowOutputSize(6, 3, 2, 0, 0, 1, false), 2);
  EXPECT_EQ(shape::windowOutputSize(6, 3, 2, 0, 0, 1, true), 3);
  // ceil_mode never starts a window in the right padding: 5, k2 s2 p1 ceil ->
  // 3 windows, not 4.
  EXPECT_EQ(shape::windowOutputSize(5, 2, 2, 1, 1, 1, true), 3);
  // Window larger than the padded input does not fit.
  EXPECT_LT(shape::windowOutputSize(2, 5, 1, 0, 0, 1, false), 1);
}

TEST(ShapeLogic, MatmulNumpySemantics) {
  std::string error;
  auto r = shape::matmul({2, 16, 32}, {32, 64}, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(SmallVector<int64_t>(*r), (SmallVector<int64_t>{2, 16, 64}));
  r = shape::matmul({32}, {32, 64}, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(SmallVector<int64_t>(*r), (SmallVector<int64_t>{64}));
  r = shape::matmul({5, 32}, {32}, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(SmallVector<int64_t>(*r), (SmallVector<int64_t>{5}));
  r = shape::matmul({7, 1, 4, 5}, {3, 5, 6}, error);
  ASSERT_TRUE(r);
  EXPECT_EQ(SmallVector<int64_t>(*r), (SmallVector<int64_t>{7, 3, 4, 6}));
  EXPECT_FALSE(shape::matmul({4, 5}, {6, 7}, error));
  EXPECT_NE(error.find("contraction"), std::string::npos);
}

// Reference: Python slicing, len(range(10)[start:end:step]).
TEST(ShapeLogic, SliceMatchesPython) {
  auto length = [](int64_t dim, int64_t start, int64_t end, int64_t step) {
    shape::clampSliceBounds(dim, step, start, end);
    return shape::sliceLength(start, end, step);
  };
  EXPECT_EQ(length(10, 2, 8, 1), 6);   // [2:8]
  EXPECT_EQ(length(10, -3, 100, 1), 3); // [-3:]
  EXPECT_EQ(length(10, 0, 10, 3), 4);  // [::3]
  EXPECT_EQ(length(10, -1, INT64_MIN, -1), 10); // [::-1]
  EXPECT_EQ(length(10, 8, 2, -2), 3);  // [8:2:-2]
  EXPECT_EQ(length(10, 5, 5, 1), 0);
  EXPECT_EQ(length(10, INT64_MAX, INT64_MAX, 1), 0);
}

TEST(ShapeLogic, ChannelsFirstAndLastViews) {
  using V = llvm::SmallVector<int64_t>;
  EXPECT_EQ(trainc::shape::channelsFirst({2, 8, 9, 3}), (V{2, 3, 8, 9}));
  EXPECT_EQ(trainc::shape::channelsLast({2, 3, 8, 9}), (V{2, 8, 9, 3}));
  EXPECT_EQ(trainc::shape::channelsFirst({2, 5, 4}), (V{2, 4, 5}));
  EXPECT_EQ(trainc::shape::channelsLast(trainc::shape::channelsFirst({4, 1, 7, 6, 5})),
            (V{4, 1, 7, 6, 5}));
  EXPECT_EQ(trainc::shape::channelsFirst({6, 4}), (V{6, 4})); // rank < 3: unchanged
}
