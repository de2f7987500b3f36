//===- GemmConvTest.cpp - gemm and conv2d against naive references --------===//
//
// Tolerances: both kernels sum up to a few hundred f32 products of values in
// [-1, 1]; the f32 rounding error is then well below 1e-5 absolute, so the
// checks use rtol 1e-5, atol 1e-5 against double references.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "cpu/Blas.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace trainc::test {
namespace {

namespace tk = trainc::cpu;
using rt::Conv2dDesc;

constexpr double kRtol = 1e-5, kAtol = 1e-5;

//===----------------------------------------------------------------------===//
// gemm
//===----------------------------------------------------------------------===//

struct GemmCase {
  bool transA, transB;
  int64_t m, n, k, lda, ldb, ldc;
  int64_t strideA, strideB, strideC, batch;
  float alpha, beta;
};

/// C_i = alpha * op(A_i) op(B_i) + beta * C_i, written out index by index.
std::vector<double> gemmReference(const GemmCase &g,
                                  const std::vector<float> &a,
                                  const std::vector<float> &b,
                                  const std::vector<float> &c) {
  std::vector<double> out(c.begin(), c.end());
  for (int64_t t = 0; t < g.batch; ++t)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          double av = g.transA ? a[t * g.strideA + p * g.lda + i]
                               : a[t * g.strideA + i * g.lda + p];
          double bv = g.transB ? b[t * g.strideB + j * g.ldb + p]
                               : b[t * g.strideB + p * g.ldb + j];
          sum += av * bv;
        }
        double &dst = out[t * g.strideC + i * g.ldc + j];
        dst = g.alpha * sum + g.beta * double(c[t * g.strideC + i * g.ldc + j]);
      }
  return out;
}

size_t operandSize(int64_t rows, int64_t ld, int64_t stride, int64_t batch) {
  return size_t((batch - 1) * stride + rows * ld);
}

void runGemm(const GemmCase &g) {
  auto ctx = makeContext();
  int64_t rowsA = g.transA ? g.k : g.m, rowsB = g.transB ? g.n : g.k;
  auto a = randomFloats(operandSize(rowsA, g.lda, g.strideA, g.batch), 1);
  auto b = randomFloats(operandSize(rowsB, g.ldb, g.strideB, g.batch), 2);
  auto c = randomFloats(operandSize(g.m, g.ldc, g.strideC, g.batch), 3);
  std::vector<double> want = gemmReference(g, a, b, c);
  std::vector<float> got = c;
  EXPECT_OK(tk::gemm(*ctx, g.transA, g.transB, g.m, g.n, g.k, g.alpha, a.data(),
                     g.lda, g.strideA, b.data(), g.ldb, g.strideB, g.beta,
                     got.data(), g.ldc, g.strideC, g.batch));
  EXPECT_TRUE(allClose(got, want, kRtol, kAtol * g.k));
}

TEST(Gemm, AllTransposesWithPaddedLeadingDimensions) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("transA=") + (ta ? "1" : "0") +
                   " transB=" + (tb ? "1" : "0"));
      int64_t m = 7, n = 5, k = 9;
      runGemm({ta, tb, m, n, k, (ta ? m : k) + 3, (tb ? k : n) + 1, n + 2, 0, 0,
               0, 1, 1.5f, 0.0f});
    }
}

TEST(Gemm, BetaAccumulates) {
  runGemm({false, false, 4, 6, 3, 3, 6, 6, 0, 0, 0, 1, -0.5f, 0.75f});
}

TEST(Gemm, BatchedSmallMatricesAllThreadCounts) {
  // Small matrices take the batch-parallel path when threads > 1.
  forEachThreadCount([] {
    runGemm({false, true, 6, 4, 5, 5, 5, 4, 30, 20, 24, 9, 1.0f, 0.0f});
    runGemm({true, false, 6, 4, 5, 6, 4, 4, 30, 20, 24, 9, 1.0f, 1.0f});
  });
}

TEST(Gemm, StrideZeroBroadcastsAnOperand) {
  forEachThreadCount([] {
    // One weight matrix B for every batch entry (a MatMul by a parameter).
    runGemm({false, false, 3, 4, 5, 5, 4, 4, 15, 0, 12, 6, 1.0f, 0.0f});
    // One A for every entry.
    runGemm({false, false, 3, 4, 5, 5, 4, 4, 0, 20, 12, 6, 1.0f, 0.0f});
  });
}

TEST(Gemm, LargeMatricesAreSplitOverThreads) {
  // Tall C is split by rows, wide C by columns; sizes that are not
  // multiples of the block size leave a short last block. The blocks run
  // on oneDNN (with alpha and beta, padded rows) and on OpenBLAS.
  forEachGemmPath([] { forEachThreadCount([] {
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [m, n] : {std::pair<int64_t, int64_t>{150, 70},
                            std::pair<int64_t, int64_t>{37, 201}}) {
          SCOPED_TRACE("transA=" + std::to_string(ta) +
                       " transB=" + std::to_string(tb) +
                       " m=" + std::to_string(m) + " n=" + std::to_string(n));
          const int64_t k = 90;
          runGemm({ta, tb, m, n, k, (ta ? m : k) + 1, (tb ? k : n) + 2, n + 3,
                   0, 0, 0, 1, 0.5f, 0.25f});
        }
    runGemm({false, true, 150, 140, 160, 160, 160, 140, 150 * 160, 140 * 160,
             150 * 140, 2, 1.0f, 0.0f});
  }); });
}

TEST(Gemm, BlocksFollowTheShapeOnly) {
  using trainc::cpu::gemmBlocks;
  auto expect = [](trainc::cpu::GemmBlocks b, bool byRows, int64_t step, int64_t count) {
    EXPECT_EQ(b.byRows, byRows);
    EXPECT_EQ(b.step, step);
    EXPECT_EQ(b.count, count);
  };
  // A batch of 64 to 256 rows times wider outputs: two bands of rows (an
  // LSTM step's 64x512 gates and its 64x128 hidden-state gradient over 512
  // gates; 100 rows as 64 and 36).
  expect(gemmBlocks(64, 512, 128), true, 32, 2);
  expect(gemmBlocks(64, 128, 512), true, 32, 2);
  expect(gemmBlocks(100, 512, 128), true, 64, 2);
  expect(gemmBlocks(256, 1024, 64), true, 128, 2);
  // Unless B is larger than a core's L2 (each band reads all of it): 64 rows
  // times a 4096x4096 weight in 16 blocks of 256 columns.
  expect(gemmBlocks(64, 4096, 4096), false, 256, 16);
  // Or more than 8 times C (both threads would read all of B, a weight the
  // update writes next): an MLP's 64x128 first layer over 784 inputs in two
  // blocks of 64 columns, each thread with its half of the weight's rows.
  expect(gemmBlocks(64, 128, 784), false, 64, 2);
  expect(gemmBlocks(64, 128, 513), false, 64, 2);
  // Fewer or more rows than that: blocks of 128 columns where the extent
  // has two of them (each block packs its part of B again: an LSTM's
  // 64x512x128 product took 128 us in eight blocks of 64 columns, 87 us in
  // four of 128), else two of at least 64.
  expect(gemmBlocks(32, 512, 256), false, 128, 4);
  expect(gemmBlocks(300, 1024, 64), false, 128, 8);
  expect(gemmBlocks(48, 128, 784), false, 64, 2);
  expect(gemmBlocks(48, 192, 512), false, 96, 2);
  // Never narrower than 64: 70 rows in a block of 64 and one of 6.
  expect(gemmBlocks(70, 64, 1024), true, 64, 2);
  // Tall C by rows of 128; at most 16 blocks.
  expect(gemmBlocks(2048, 512, 64), true, 128, 16);
  expect(gemmBlocks(8192, 64, 64), true, 512, 16);
  // Below 128^3 multiply-adds: one block.
  expect(gemmBlocks(64, 512, 32), false, 512, 1);
}

TEST(Gemm, ColumnBlocksOfATransposedBComputeDenselyAndCopy) {
  // oneDNN's brgemm declines a block of C's columns (rows ldc apart) with
  // B transposed (the first two; the third's bands of rows have ldc > n
  // too); such a block computes into scratch and is copied into C,
  // with alpha, with beta reading C first (and beta 0 not reading it), and
  // the columns between ldc and n left as they were (runGemm checks them).
  forEachGemmPath([] { forEachThreadCount([] {
    const uint64_t before = cpu::dnnl_matmul::denseRuns();
    runGemm({false, true, 64, 128, 784, 784, 784, 131, 0, 0, 0, 1, 0.5f, 0.25f});
    runGemm({false, true, 64, 128, 784, 790, 787, 130, 0, 0, 0, 1, 1.0f, 0.0f});
    runGemm({true, true, 64, 256, 300, 70, 300, 260, 0, 0, 0, 1, -1.5f, 1.0f});
    const char *path = std::getenv("TRAINC_CPU_GEMM");
    if (cpu::dnnl_matmul::denseRuns() == before && !(path && std::string(path) == "openblas"))
      std::printf("note: oneDNN took the strided blocks itself on this CPU\n");
  }); });
}

TEST(Gemm, BetaZeroNeverReadsC) {
  // BLAS's rule, which a oneDNN block keeps by leaving out its sum: with
  // beta 0, a NaN in C is overwritten, not propagated.
  forEachGemmPath([] {
    const int64_t m = 96, n = 80, k = 64;
    auto ctx = makeContext();
    auto a = randomFloats(size_t(m * k), 1), b = randomFloats(size_t(k * n), 2);
    std::vector<float> c(size_t(m * n), std::numeric_limits<float>::quiet_NaN());
    EXPECT_OK(tk::gemm(*ctx, false, false, m, n, k, 1.0f, a.data(), k, 0, b.data(), n, 0, 0.0f,
                       c.data(), n, 0, 1));
    EXPECT_TRUE(std::all_of(c.begin(), c.end(), [](float v) { return std::isfinite(v); }));
  });
}

TEST(Gemm, RejectsBadArguments) {
  auto ctx = makeContext();
  std::vector<float> buf(100);
  float *p = buf.data();
  EXPECT_ERROR(tk::gemm(*ctx, false, false, 2, 2, 2, 1, nullptr, 2, 0, p, 2, 0,
                        0, p, 2, 0, 1),
               "gemm: a is null");
  EXPECT_ERROR(
      tk::gemm(*ctx, false, false, 2, 2, 0, 1, p, 2, 0, p, 2, 0, 0, p, 2, 0, 1),
      "k must be positive, got 0");
  EXPECT_ERROR(
      tk::gemm(*ctx, false, false, 2, 3, 4, 1, p, 3, 0, p, 3, 0, 0, p, 3, 0, 1),
      "leading dimensions");
  EXPECT_ERROR(
      tk::gemm(*ctx, true, false, 5, 3, 4, 1, p, 4, 0, p, 3, 0, 0, p, 3, 0, 1),
      "must be at least 5");
  EXPECT_ERROR(
      tk::gemm(*ctx, false, false, 2, 2, 2, 1, p, 2, 4, p, 2, 4, 0, p, 2, 0, 3),
      "strideC is 0");
  EXPECT_ERROR(tk::gemm(*ctx, false, false, 2, 2, 2, 1, p, 2, -4, p, 2, 4, 0, p,
                        2, 4, 3),
               "negative batch stride");
}

//===----------------------------------------------------------------------===//
// gemmEpilogue
//===----------------------------------------------------------------------===//

/// One epilogue case: C_i = relu?(op(A_i) op(B_i) + addend_i + bias), then
/// a range function that doubles every finished element into `twice` and
/// counts its visits (each element exactly once, after the GEMM wrote it).
struct EpilogueCase {
  bool transA, transB;
  int64_t m, n, k, batch, strideA, strideB;
  bool addend, inPlace, bias, relu, range;
};

struct RangeProbe {
  const float *c;
  float *twice;
  int *visits;
};

void doubleRange(const void *env, int64_t begin, int64_t end) {
  const RangeProbe &p = *static_cast<const RangeProbe *>(env);
  for (int64_t e = begin; e < end; ++e) {
    p.twice[e] = 2.0f * p.c[e];
    ++p.visits[e];
  }
}

void runEpilogue(const EpilogueCase &g) {
  auto ctx = makeContext();
  const int64_t lda = g.transA ? g.m : g.k, ldb = g.transB ? g.k : g.n;
  GemmCase plain{g.transA, g.transB, g.m, g.n, g.k, lda, ldb, g.n,
                 g.strideA, g.strideB, g.m * g.n, g.batch, 1.0f, g.addend ? 1.0f : 0.0f};
  int64_t rowsA = g.transA ? g.k : g.m, rowsB = g.transB ? g.n : g.k;
  auto a = randomFloats(operandSize(rowsA, lda, g.strideA, g.batch), 1);
  auto b = randomFloats(operandSize(rowsB, ldb, g.strideB, g.batch), 2);
  auto addend = randomFloats(size_t(g.batch * g.m * g.n), 3);
  auto bias = randomFloats(size_t(g.n), 4);
  std::vector<double> want = gemmReference(plain, a, b, addend);
  for (size_t e = 0; e < want.size(); ++e) {
    if (g.bias)
      want[e] += bias[e % g.n];
    if (g.relu)
      want[e] = std::max(want[e], 0.0);
  }
  std::vector<float> c(addend.size(), -7.0f), twice(addend.size(), 0.0f);
  if (g.inPlace)
    c = addend;
  std::vector<int> visits(addend.size(), 0);
  RangeProbe probe{c.data(), twice.data(), visits.data()};
  rt::GemmEpilogue ep;
  ep.addend = g.addend ? (g.inPlace ? c.data() : addend.data()) : nullptr;
  ep.bias = g.bias ? bias.data() : nullptr;
  ep.activation = g.relu ? rt::GemmActivation::Relu : rt::GemmActivation::None;
  if (g.range) {
    ep.range = doubleRange;
    ep.env = &probe;
  }
  EXPECT_OK(tk::gemmEpilogue(*ctx, g.transA, g.transB, g.m, g.n, g.k, a.data(), lda,
                             g.strideA, b.data(), ldb, g.strideB, c.data(), g.n,
                             g.m * g.n, g.batch, ep));
  EXPECT_TRUE(allClose(c, want, kRtol, kAtol * g.k));
  if (!g.range)
    return;
  std::vector<double> doubled(want.size());
  for (size_t e = 0; e < want.size(); ++e)
    doubled[e] = 2.0 * want[e];
  EXPECT_TRUE(allClose(twice, doubled, kRtol, 2 * kAtol * g.k));
  EXPECT_TRUE(std::all_of(visits.begin(), visits.end(), [](int v) { return v == 1; }));
}

TEST(GemmEpilogue, BiasReluAddendAndRangeOnEveryPath) {
  // Small batched (one GEMM per thread), a shared B (the batch folds into
  // rows), tall C cut by rows, wide C cut by columns.
  forEachThreadCount([] {
    for (bool relu : {false, true})
      for (bool range : {false, true}) {
        SCOPED_TRACE(std::string("relu=") + (relu ? "1" : "0") + " range=" + (range ? "1" : "0"));
        runEpilogue({false, true, 6, 4, 5, 9, 30, 20, false, false, true, relu, range});
        runEpilogue({false, false, 40, 30, 20, 3, 800, 0, false, false, true, relu, range});
        runEpilogue({true, false, 150, 70, 90, 1, 0, 0, false, false, true, relu, range});
        runEpilogue({false, true, 37, 201, 90, 2, 37 * 90, 201 * 90, false, false, true, relu,
                     range});
      }
  });
}

TEST(GemmEpilogue, AccumulatesAnAddendSeparateOrInPlace) {
  forEachThreadCount([] {
    for (bool inPlace : {false, true}) {
      SCOPED_TRACE(std::string("inPlace=") + (inPlace ? "1" : "0"));
      runEpilogue({false, true, 150, 70, 90, 1, 0, 0, true, inPlace, false, false, true});
      runEpilogue({false, false, 16, 32, 64, 2, 16 * 64, 0, true, inPlace, true, true, false});
    }
  });
}

TEST(GemmEpilogue, RejectsAnEnvironmentWithoutRange) {
  auto ctx = makeContext();
  std::vector<float> buf(16);
  float *p = buf.data();
  rt::GemmEpilogue ep;
  ep.env = p;
  EXPECT_ERROR(tk::gemmEpilogue(*ctx, false, false, 2, 2, 2, p, 2, 0, p, 2, 0, p, 2, 0, 1, ep),
               "an environment without a range function");
  EXPECT_ERROR(tk::gemmEpilogue(*ctx, false, false, 2, 2, 2, nullptr, 2, 0, p, 2, 0, p, 2, 0, 1,
                                rt::GemmEpilogue{}),
               "gemmEpilogue: a is null");
}

//===----------------------------------------------------------------------===//
// conv2d
//===----------------------------------------------------------------------===//

/// ONNX Conv: y[n, m, oh, ow] = B[m] + sum over the group's input channels
/// c and taps (i, j) of x[n, g*C/G + c, oh*sH - padTop + i*dH,
/// ow*sW - padLeft + j*dW] * W[m, c, i, j], reading 0 outside x.
std::vector<double> convReference(const Conv2dDesc &d,
                                  const std::vector<float> &x,
                                  const std::vector<float> &w,
                                  const float *bias) {
  int64_t cg = d.c / d.groups, mg = d.m / d.groups;
  std::vector<double> y(d.n * d.m * d.outH * d.outW);
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t m = 0; m < d.m; ++m)
      for (int64_t oh = 0; oh < d.outH; ++oh)
        for (int64_t ow = 0; ow < d.outW; ++ow) {
          double sum = bias ? bias[m] : 0.0;
          int64_t g = m / mg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < d.kh; ++i)
              for (int64_t j = 0; j < d.kw; ++j) {
                int64_t ih = oh * d.strideH - d.padTop + i * d.dilationH;
                int64_t iw = ow * d.strideW - d.padLeft + j * d.dilationW;
                if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w)
                  continue;
                sum +=
                    double(x[((n * d.c + g * cg + c) * d.h + ih) * d.w + iw]) *
                    w[((m * cg + c) * d.kh + i) * d.kw + j];
              }
          y[((n * d.m + m) * d.outH + oh) * d.outW + ow] = sum;
        }
  return y;
}

/// Fills in outH/outW with the ONNX formula.
Conv2dDesc withOutputSize(Conv2dDesc d) {
  d.outH = (d.h + d.padTop + d.padBottom - d.dilationH * (d.kh - 1) - 1) /
               d.strideH +
           1;
  d.outW = (d.w + d.padLeft + d.padRight - d.dilationW * (d.kw - 1) - 1) /
               d.strideW +
           1;
  return d;
}

void runConv(const Conv2dDesc &d, bool withBias) {
  auto ctx = makeContext();
  auto x = randomFloats(d.n * d.c * d.h * d.w, 11);
  auto w = randomFloats(d.m * (d.c / d.groups) * d.kh * d.kw, 12);
  auto bias = randomFloats(d.m, 13);
  const float *b = withBias ? bias.data() : nullptr;
  std::vector<double> want = convReference(d, x, w, b);
  forEachConvPath([&] {
    // Poison the output: the kernel must write every element.
    std::vector<float> got(want.size(), std::nanf(""));
    EXPECT_OK(tk::conv2d(*ctx, d, x.data(), w.data(), b, got.data()));
    EXPECT_TRUE(allClose(got, want, kRtol, kAtol));
  });
}

//                n  c  h  w  m  kh kw sH sW pT pL pB pR dH dW g
TEST(Conv2d, Basic3x3Padded) {
  forEachThreadCount([] {
    runConv(withOutputSize({4, 3, 9, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}),
            true);
  });
}

TEST(Conv2d, GroupsStridesDilationAsymmetricPadding) {
  forEachThreadCount([] {
    for (int64_t n : {1, 3}) {
      SCOPED_TRACE("n=" + std::to_string(n));
      runConv(
          withOutputSize({n, 4, 11, 10, 6, 3, 2, 2, 3, 1, 0, 2, 1, 2, 1, 2}),
          true);
      runConv(withOutputSize({n, 6, 9, 12, 9, 2, 3, 1, 2, 0, 2, 1, 0, 2, 3, 3}),
              false);
    }
  });
}

TEST(Conv2d, FewOutputPositionsShareOneGemmAcrossImages) {
  // At most kBatchedGemmMaxSpatial output positions and several images: one
  // GEMM per group over all images (a ResNet's last stages); 8x8 = 64 is the
  // largest such map, 9x8 takes the per-image path (Basic3x3Padded).
  forEachThreadCount([] {
    runConv(withOutputSize({5, 4, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}), true);
    runConv(withOutputSize({3, 8, 4, 4, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}), false);
    runConv(withOutputSize({4, 6, 2, 2, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}), true);
  });
}

TEST(Conv2d, Depthwise) {
  forEachThreadCount([] {
    runConv(withOutputSize({2, 8, 7, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8}),
            true);
  });
}

TEST(Conv2d, PointwiseSkipsIm2col) {
  forEachThreadCount([] {
    runConv(withOutputSize({3, 6, 5, 7, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}),
            true);
    runConv(withOutputSize({1, 6, 5, 7, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2}),
            false);
    // 1x1 but strided or padded: not a plain GEMM.
    runConv(withOutputSize({2, 3, 6, 6, 4, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1}),
            true);
    runConv(withOutputSize({2, 3, 6, 6, 4, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1}),
            true);
  });
}

TEST(Conv2d, PaddingLargerThanKernel) {
  // ONNX allows it; the border outputs are just the bias.
  runConv(withOutputSize({1, 2, 3, 3, 2, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1, 1}),
          true);
}

TEST(Conv2d, WorkspaceGrowsAcrossCalls) {
  // A small conv then a large one on the same context: the workspace must
  // grow, and the results of both must be right.
  auto ctx = makeContext();
  for (const Conv2dDesc &d :
       {withOutputSize({1, 1, 4, 4, 1, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1}),
        withOutputSize({2, 16, 20, 20, 8, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1, 1})}) {
    auto x = randomFloats(d.n * d.c * d.h * d.w, 5);
    auto w = randomFloats(d.m * d.c * d.kh * d.kw, 6);
    std::vector<float> got(d.n * d.m * d.outH * d.outW);
    EXPECT_OK(tk::conv2d(*ctx, d, x.data(), w.data(), nullptr, got.data()));
    EXPECT_TRUE(allClose(got, convReference(d, x, w, nullptr), kRtol, kAtol));
  }
}

TEST(Conv2d, RejectsInconsistentDescriptors) {
  auto ctx = makeContext();
  std::vector<float> buf(4096);
  float *p = buf.data();
  Conv2dDesc good =
      withOutputSize({1, 4, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2});
  EXPECT_OK(tk::conv2d(*ctx, good, p, p, nullptr, p + 2048));

  Conv2dDesc d = good;
  d.outH += 1;
  EXPECT_ERROR(tk::conv2d(*ctx, d, p, p, nullptr, p), "axis H: output size 9");
  d = good;
  d.outW = 6;
  EXPECT_ERROR(tk::conv2d(*ctx, d, p, p, nullptr, p), "expected 8");
  d = good;
  d.groups = 3;
  EXPECT_ERROR(tk::conv2d(*ctx, d, p, p, nullptr, p), "groups 3 must divide");
  d = good;
  d.strideW = 0;
  EXPECT_ERROR(tk::conv2d(*ctx, d, p, p, nullptr, p),
               "strideW must be positive");
  d = good;
  d.padLeft = -1;
  EXPECT_ERROR(tk::conv2d(*ctx, d, p, p, nullptr, p), "negative padding");
  d = good;
  d.kh = 20;
  EXPECT_ERROR(tk::conv2d(*ctx, d, p, p, nullptr, p), "window extent 20");
  EXPECT_ERROR(tk::conv2d(*ctx, good, p, nullptr, nullptr, p),
               "conv2d: w is null");
}

} // namespace
} // namespace trainc::test
