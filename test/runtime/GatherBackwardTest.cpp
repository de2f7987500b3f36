//===- GatherBackwardTest.cpp - the embedding gradient --------------------===//
//
// gatherBackward against a naive scatter-add: repeated indices accumulate in
// index order (the same bits for every thread count), negative indices count
// from the end, and slices whose row is the padding row are skipped, as
// PyTorch's embedding backward with padding_idx.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

namespace trainc::test {
namespace {

namespace tk = trainc::cpu;

/// dtable [outer, axis, inner] of dy [outer, n, inner], adding in index order.
std::vector<float> scatterAdd(int64_t outer, int64_t axis, int64_t inner,
                              const std::vector<float> &dy,
                              const std::vector<int64_t> &indices,
                              int64_t paddingRow) {
  int64_t n = int64_t(indices.size());
  std::vector<float> table(outer * axis * inner, 0.0f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) {
      int64_t row = indices[j] < 0 ? indices[j] + axis : indices[j];
      if (row == paddingRow)
        continue;
      for (int64_t i = 0; i < inner; ++i)
        table[(o * axis + row) * inner + i] += dy[(o * n + j) * inner + i];
    }
  return table;
}

TEST(GatherBackward, PaddingRowGetsNothing) {
  auto ctx = makeContext();
  // outer 2, axis 5, inner 3; row 1 is picked directly, as -4, and repeated.
  std::vector<int64_t> indices = {1, 0, -4, 3, 1, 0};
  auto dy = randomFloats(2 * 6 * 3, 17);
  for (int64_t padding : {int64_t(-1), int64_t(1), int64_t(4), int64_t(7)}) {
    std::vector<float> got(2 * 5 * 3, 99.0f);
    EXPECT_OK(tk::gatherBackward(*ctx, 2, 5, 3, dy.data(), indices.data(), 6,
                                 padding, got.data()));
    EXPECT_EQ(got, scatterAdd(2, 5, 3, dy, indices, padding))
        << "padding row " << padding;
    if (padding != 1)
      continue;
    for (int64_t o = 0; o < 2; ++o)
      for (int64_t i = 0; i < 3; ++i) {
        EXPECT_EQ(got[(o * 5 + 1) * 3 + i], 0.0f) << "o=" << o << " i=" << i;
      }
  }
  // Without a padding row (-1), or one outside the axis (7), row 1 gets its
  // three slices.
  std::vector<float> all(2 * 5 * 3);
  EXPECT_OK(tk::gatherBackward(*ctx, 2, 5, 3, dy.data(), indices.data(), 6, -1,
                               all.data()));
  EXPECT_NE(all[3], 0.0f);
}

TEST(GatherBackward, ParallelBlocksGiveTheSameBits) {
  std::vector<float> first;
  forEachThreadCount([&] {
    auto ctx = makeContext();
    const int64_t axis = 50, inner = 300, n = 400; // above the parallel threshold
    std::vector<int64_t> indices(n);
    for (int64_t j = 0; j < n; ++j)
      indices[j] = (j * 7) % axis;
    auto dy = randomFloats(n * inner, 23);
    std::vector<float> got(axis * inner);
    EXPECT_OK(tk::gatherBackward(*ctx, 1, axis, inner, dy.data(),
                                 indices.data(), n, 0, got.data()));
    EXPECT_EQ(got, scatterAdd(1, axis, inner, dy, indices, 0));
    if (first.empty())
      first = got;
    EXPECT_EQ(got, first);
  });
}

TEST(GatherBackward, OutOfRangeIndexIsNamed) {
  auto ctx = makeContext();
  std::vector<float> dy(3), table(5);
  std::vector<int64_t> indices = {0, 1, 5};
  EXPECT_ERROR(tk::gatherBackward(*ctx, 1, 5, 1, dy.data(), indices.data(), 3,
                                  1, table.data()),
               "gatherBackward: index 5 at position 2 is outside [-5, 5)");
}

} // namespace
} // namespace trainc::test
