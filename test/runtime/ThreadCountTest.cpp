//===- ThreadCountTest.cpp - results do not depend on the thread count ----===//
//
// Every kernel that sums must give the same bits with any number of OpenMP
// threads (a run resumed on a machine with another core count continues
// bit-identically): GEMMs large enough to be split, convolution and both
// its gradients on each path (one image per thread, images in sequence
// with each GEMM split, all images in one GEMM), the losses' reductions.
// Each kernel runs with 1, 2, 3, 4, 5, 8 and 16 threads and is compared
// byte for byte with the one-thread result.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <functional>

namespace trainc::test {
namespace {

namespace tk = trainc::cpu;
using rt::Conv2dDesc;

/// Runs `kernel` (which fills its output and returns it) with each thread
/// count and expects the same bytes as with one thread.
void expectSameForEveryThreadCount(const std::function<std::vector<float>()> &kernel) {
  omp_set_num_threads(1);
  const std::vector<float> reference = kernel();
  ASSERT_FALSE(reference.empty());
  for (int threads : {2, 3, 4, 5, 8, 16}) {
    SCOPED_TRACE("threads=" + std::to_string(threads));
    omp_set_num_threads(threads);
    const std::vector<float> got = kernel();
    ASSERT_EQ(got.size(), reference.size());
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (std::memcmp(&got[i], &reference[i], sizeof(float)) != 0 && !differ++)
        first = i;
    EXPECT_EQ(differ, 0u) << "first at " << first << ": " << got[first] << " vs "
                          << reference[first];
  }
  omp_set_num_threads(omp_get_num_procs());
}

TEST(ThreadCount, Gemm) {
  // The digits MLP's layers (a 64-column split) and a conv-sized GEMM.
  struct Shape {
    bool transA, transB;
    int64_t m, n, k;
  };
  for (Shape s : {Shape{false, true, 32, 128, 64}, Shape{true, false, 128, 64, 32},
                  Shape{false, false, 64, 1000, 300}, Shape{false, true, 700, 96, 80}}) {
    SCOPED_TRACE("gemm " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                 std::to_string(s.k));
    const std::vector<float> a = randomFloats(size_t(s.m * s.k), 1);
    const std::vector<float> b = randomFloats(size_t(s.k * s.n), 2);
    const std::vector<float> c0 = randomFloats(size_t(s.m * s.n), 3);
    auto ctx = makeContext();
    expectSameForEveryThreadCount([&] {
      std::vector<float> c = c0;
      Status st = tk::gemm(*ctx, s.transA, s.transB, s.m, s.n, s.k, 1.0f, a.data(),
                           s.transA ? s.m : s.k, 0, b.data(), s.transB ? s.k : s.n, 0, 1.0f,
                           c.data(), s.n, 0, 1);
      EXPECT_TRUE(st.ok()) << st.message();
      return c;
    });
  }
}

TEST(ThreadCount, GemmOfBF16Operands) {
  // oneDNN's bf16 blocks (or, without them, the widened operands), with a
  // bias epilogue and a bf16 result, and a batch of small entries.
  const int64_t m = 300, n = 70, k = 90;
  std::vector<rt::bf16> a, b;
  for (float v : randomFloats(size_t(m * k), 4))
    a.push_back(v);
  for (float v : randomFloats(size_t(k * n), 5))
    b.push_back(v);
  const std::vector<float> bias = randomFloats(size_t(n), 6);
  auto ctx = makeContext();
  expectSameForEveryThreadCount([&] {
    std::vector<float> c(size_t(m * n));
    rt::GemmEpilogue e{nullptr, bias.data(), rt::GemmActivation::None, nullptr, nullptr};
    Status st = tk::gemmEpilogue(*ctx, false, true, m, n, k, a.data(), k, 0, b.data(), k, 0,
                                 c.data(), n, 0, 1, e);
    EXPECT_TRUE(st.ok()) << st.message();
    std::vector<rt::bf16> c16(size_t(m * n));
    st = tk::gemm(*ctx, true, false, 30, 70, 30, 1.0f, a.data(), 30, 900, b.data(), 70, 2100,
                  0.0f, c16.data(), 70, 2100, 3);
    EXPECT_TRUE(st.ok()) << st.message();
    c.insert(c.end(), c16.begin(), c16.begin() + 3 * 2100);
    return c;
  });
}

Conv2dDesc convDesc(int64_t n, int64_t hw) {
  Conv2dDesc d{};
  d.n = n, d.c = 6, d.h = hw, d.w = hw, d.m = 8, d.kh = 3, d.kw = 3;
  d.strideH = d.strideW = 1;
  d.padTop = d.padLeft = d.padBottom = d.padRight = 1;
  d.dilationH = d.dilationW = 1;
  d.groups = 2;
  d.outH = d.outW = hw;
  return d;
}

TEST(ThreadCount, ConvolutionAndGradients) {
  // 16 images of 12x12 (one image per thread; 144 positions), 2 images
  // (each GEMM split over the threads), 16 images of 6x6 (all in one GEMM).
  for (auto [n, hw] : {std::pair<int64_t, int64_t>{16, 12}, {2, 12}, {16, 6}}) {
    const Conv2dDesc d = convDesc(n, hw);
    SCOPED_TRACE("conv n=" + std::to_string(n) + " " + std::to_string(hw) + "x" +
                 std::to_string(hw));
    const std::vector<float> x = randomFloats(size_t(d.n * d.c * d.h * d.w), 4);
    const std::vector<float> w = randomFloats(size_t(d.m * (d.c / d.groups) * 9), 5);
    const std::vector<float> bias = randomFloats(size_t(d.m), 6);
    const std::vector<float> dy = randomFloats(size_t(d.n * d.m * d.outH * d.outW), 7);
    auto ctx = makeContext();
    expectSameForEveryThreadCount([&] {
      std::vector<float> y(dy.size());
      Status st = tk::conv2d(*ctx, d, x.data(), w.data(), bias.data(), y.data());
      EXPECT_TRUE(st.ok()) << st.message();
      return y;
    });
    expectSameForEveryThreadCount([&] {
      std::vector<float> dx(x.size());
      Status st = tk::conv2dBackwardData(*ctx, d, dy.data(), w.data(), dx.data());
      EXPECT_TRUE(st.ok()) << st.message();
      return dx;
    });
    expectSameForEveryThreadCount([&] {
      std::vector<float> dw(w.size());
      Status st = tk::conv2dBackwardFilter(*ctx, d, x.data(), dy.data(), dw.data());
      EXPECT_TRUE(st.ok()) << st.message();
      return dw;
    });
  }
}

TEST(ThreadCount, LossReductions) {
  // More samples than one partial sum holds, so the chunks are combined.
  const int64_t n = 5000, c = 7;
  const std::vector<float> logits = randomFloats(size_t(n * c), 8, -4.0f, 4.0f);
  std::vector<int64_t> labels(n);
  for (int64_t i = 0; i < n; ++i)
    labels[i] = (i * 5) % c;
  const std::vector<float> target = randomFloats(size_t(n * c), 9);
  auto ctx = makeContext();
  for (auto reduction : {rt::Reduction::Mean, rt::Reduction::Sum}) {
    expectSameForEveryThreadCount([&] {
      std::vector<float> out(1);
      Status st = tk::softmaxCrossEntropy(*ctx, n, c, 1, logits.data(), labels.data(), false,
                                          0, reduction, out.data());
      EXPECT_TRUE(st.ok()) << st.message();
      return out;
    });
    expectSameForEveryThreadCount([&] {
      std::vector<float> out(1);
      Status st = tk::mseLoss(*ctx, n * c, logits.data(), target.data(), reduction, out.data());
      EXPECT_TRUE(st.ok()) << st.message();
      return out;
    });
  }
}

} // namespace
} // namespace trainc::test
