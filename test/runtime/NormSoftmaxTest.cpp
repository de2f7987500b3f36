//===- NormSoftmaxTest.cpp - batch/layer norm, softmax, reduce ------------===//
//
// Tolerance rtol 1e-5, atol 1e-6 against double references, except where a
// comment says otherwise.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "cpu/RowMath.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <omp.h>

namespace trainc::test {
namespace {

namespace tk = trainc::cpu;
using rt::ReduceKind;

constexpr double kRtol = 1e-5, kAtol = 1e-6;

TEST(BatchNormInference, MatchesFormula) {
  forEachThreadCount([] {
    auto ctx = makeContext();
    const int64_t n = 3, c = 4, spatial = 10;
    auto x = randomFloats(n * c * spatial, 31, -3, 3);
    auto scale = randomFloats(c, 32), bias = randomFloats(c, 33);
    auto mean = randomFloats(c, 34), var = randomFloats(c, 35, 0.1f, 2.0f);
    const float eps = 1e-5f;
    std::vector<double> want(x.size());
    for (int64_t i = 0; i < n; ++i)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t s = 0; s < spatial; ++s) {
          int64_t at = (i * c + ch) * spatial + s;
          want[at] = (x[at] - double(mean[ch])) /
                         std::sqrt(double(var[ch]) + eps) * scale[ch] +
                     bias[ch];
        }
    std::vector<float> got(x.size());
    EXPECT_OK(tk::batchNormInference(*ctx, n, c, spatial, x.data(),
                                     scale.data(), bias.data(), mean.data(),
                                     var.data(), eps, got.data()));
    EXPECT_TRUE(allClose(got, want, kRtol, kAtol));
    EXPECT_ERROR(tk::batchNormInference(*ctx, n, c, 0, x.data(), scale.data(),
                                        bias.data(), mean.data(), var.data(),
                                        eps, got.data()),
                 "spatial must be positive");
    EXPECT_ERROR(tk::batchNormInference(*ctx, n, c, spatial, x.data(),
                                        scale.data(), bias.data(), nullptr,
                                        var.data(), eps, got.data()),
                 "mean is null");
  });
}

std::vector<double> layerNormReference(int64_t rows, int64_t cols,
                                       const std::vector<float> &x,
                                       const std::vector<float> &scale,
                                       const float *bias, double eps) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < cols; ++i)
      mean += x[r * cols + i];
    mean /= cols;
    for (int64_t i = 0; i < cols; ++i)
      var += (x[r * cols + i] - mean) * (x[r * cols + i] - mean);
    var /= cols; // biased, like PyTorch
    for (int64_t i = 0; i < cols; ++i)
      y[r * cols + i] =
          (x[r * cols + i] - mean) / std::sqrt(var + eps) * scale[i] +
          (bias ? bias[i] : 0.0);
  }
  return y;
}

TEST(LayerNorm, WithAndWithoutBias) {
  forEachThreadCount([] {
    auto ctx = makeContext();
    const int64_t rows = 7, cols = 33;
    auto x = randomFloats(rows * cols, 41, -2, 2);
    auto scale = randomFloats(cols, 42), bias = randomFloats(cols, 43);
    std::vector<float> got(x.size());
    EXPECT_OK(tk::layerNorm(*ctx, rows, cols, x.data(), scale.data(),
                            bias.data(), 1e-5f, got.data()));
    EXPECT_TRUE(allClose(
        got, layerNormReference(rows, cols, x, scale, bias.data(), 1e-5), kRtol,
        kAtol));
    EXPECT_OK(tk::layerNorm(*ctx, rows, cols, x.data(), scale.data(), nullptr,
                            1e-5f, got.data()));
    EXPECT_TRUE(
        allClose(got, layerNormReference(rows, cols, x, scale, nullptr, 1e-5),
                 kRtol, kAtol));
  });
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  // L = sum(dy * layerNorm(x)): dL/dx by central differences of a double
  // layer norm (h = 1e-4), dscale = sum over rows of dy * xhat, dbias = sum
  // of dy. rtol 1e-4 / atol 1e-5: the kernel's result is f32.
  forEachThreadCount([] {
    auto ctx = makeContext();
    const int64_t rows = 6, cols = 19;
    const double eps = 1e-5;
    auto x = randomFloats(rows * cols, 51, -2, 2);
    auto scale = randomFloats(cols, 52), dy = randomFloats(rows * cols, 53);
    auto rowLoss = [&](std::vector<double> row, int64_t r) {
      double mean = 0, var = 0, loss = 0;
      for (double v : row)
        mean += v;
      mean /= cols;
      for (double v : row)
        var += (v - mean) * (v - mean);
      var /= cols;
      for (int64_t i = 0; i < cols; ++i)
        loss += dy[r * cols + i] * (row[i] - mean) / std::sqrt(var + eps) * scale[i];
      return loss;
    };
    std::vector<double> wantDx(x.size()), wantDscale(cols, 0.0), wantDbias(cols, 0.0);
    const double h = 1e-4;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<double> row(x.begin() + r * cols, x.begin() + (r + 1) * cols);
      for (int64_t i = 0; i < cols; ++i) {
        std::vector<double> up = row, down = row;
        up[i] += h;
        down[i] -= h;
        wantDx[r * cols + i] = (rowLoss(up, r) - rowLoss(down, r)) / (2 * h);
      }
    }
    std::vector<float> ones(cols, 1.0f);
    auto xhat = layerNormReference(rows, cols, x, ones, nullptr, eps);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < cols; ++i) {
        wantDscale[i] += dy[r * cols + i] * xhat[r * cols + i];
        wantDbias[i] += dy[r * cols + i];
      }
    std::vector<float> dx(x.size()), dscale(cols), dbias(cols);
    EXPECT_OK(tk::layerNormBackward(*ctx, rows, cols, x.data(), scale.data(), dy.data(),
                                    float(eps), dx.data(), dscale.data(), dbias.data()));
    EXPECT_TRUE(allClose(dx, wantDx, 1e-4, 1e-5));
    EXPECT_TRUE(allClose(dscale, wantDscale, 1e-4, 1e-5));
    EXPECT_TRUE(allClose(dbias, wantDbias, 1e-4, 1e-5));
    EXPECT_ERROR(tk::layerNormBackward(*ctx, rows, cols, x.data(), scale.data(), nullptr,
                                       float(eps), dx.data(), dscale.data(), dbias.data()),
                 "dy");
  });
}

TEST(LayerNorm, LargeMeanIsStable) {
  // Rows 1000 + noise of 1e-2: a one-pass E[x^2] - E[x]^2 variance in f32
  // would lose every digit, and so would subtracting a mean rounded to f32
  // (its error, 3e-5, is 0.5% of the noise). rtol 1e-5 / atol 1e-5.
  auto ctx = makeContext();
  const int64_t rows = 4, cols = 64;
  auto x = randomFloats(rows * cols, 44, -0.01f, 0.01f);
  for (float &v : x)
    v += 1000.0f;
  std::vector<float> scale(cols, 1.0f), got(x.size());
  EXPECT_OK(tk::layerNorm(*ctx, rows, cols, x.data(), scale.data(), nullptr,
                          1e-12f, got.data()));
  EXPECT_TRUE(allClose(got,
                       layerNormReference(rows, cols, x, scale, nullptr, 1e-12),
                       1e-5, 1e-5));
}

/// softmax(x)_k = exp(x_k) / sum_j exp(x_j) over the middle axis, evaluated
/// with the (mathematically equivalent) shift by the max so that the double
/// reference itself does not overflow.
std::vector<double> softmaxReference(int64_t outer, int64_t axis, int64_t inner,
                                     const std::vector<float> &x,
                                     bool logSoftmax) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return (o * axis + a) * inner + i; };
      double m = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t a = 0; a < axis; ++a)
        m = std::max(m, double(x[at(a)]));
      for (int64_t a = 0; a < axis; ++a)
        sum += std::exp(x[at(a)] - m);
      for (int64_t a = 0; a < axis; ++a)
        y[at(a)] = logSoftmax ? x[at(a)] - m - std::log(sum)
                              : std::exp(x[at(a)] - m) / sum;
    }
  return y;
}

void runSoftmax(int64_t outer, int64_t axis, int64_t inner, float low,
                float high) {
  auto ctx = makeContext();
  auto x = randomFloats(outer * axis * inner, 51, low, high);
  for (bool logSoftmax : {false, true}) {
    SCOPED_TRACE(logSoftmax ? "log-softmax" : "softmax");
    std::vector<float> got(x.size(), std::nanf(""));
    EXPECT_OK(tk::softmax(*ctx, outer, axis, inner, x.data(), got.data(),
                          logSoftmax));
    EXPECT_TRUE(allClose(got,
                         softmaxReference(outer, axis, inner, x, logSoftmax),
                         kRtol, kAtol));
  }
}

TEST(Softmax, LastAxisAndMiddleAxis) {
  forEachThreadCount([] {
    runSoftmax(5, 10, 1, -3, 3); // contiguous rows
    runSoftmax(3, 7, 70, -3, 3); // strided; 70 = one full and one partial block
    runSoftmax(1, 1, 5, -3, 3);  // axis of length 1: all ones / zeros
  });
}

TEST(Softmax, LargeLogitsDoNotOverflow) {
  // exp(1e4) overflows f32 and f64; the max shift must keep it finite.
  runSoftmax(4, 9, 1, 9990, 10000);
  runSoftmax(2, 5, 3, -10000, -9990);
  auto ctx = makeContext();
  std::vector<float> x = {1e30f, 1e30f, -1e30f}, y(3);
  EXPECT_OK(tk::softmax(*ctx, 1, 3, 1, x.data(), y.data(), false));
  EXPECT_TRUE(allClose(y, {0.5, 0.5, 0.0}, kRtol, kAtol));
}

// Contiguous rows go through RowMath.h's lanes: every length around the
// 8 lanes and the 256-value blocks of the log-softmax's sum.
TEST(Softmax, RowLengthsAroundLanesAndBlocks) {
  for (int64_t axis : {1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 256, 257, 600})
    for (int threads : {1, 2}) {
      SCOPED_TRACE("axis=" + std::to_string(axis) + " threads=" + std::to_string(threads));
      omp_set_num_threads(threads);
      runSoftmax(3, axis, 1, -20, 20);
    }
  omp_set_num_threads(omp_get_num_procs());
}

// A row's special values: -inf (an attention mask) gets exactly 0, as does
// a logit more than 87 below the maximum (its true value is under f32's
// smallest normal); a NaN anywhere (a lane or the tail), a +inf, or a row
// of only -inf makes the whole row NaN, as in PyTorch.
TEST(Softmax, RowSpecialValues) {
  auto ctx = makeContext();
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t axis = 11; // one group of 8 lanes and a tail of 3
  std::vector<float> masked(axis, 0.5f);
  masked[2] = masked[9] = -inf;
  masked[4] = -90.0f; // e^-90.5 relative to the maximum
  for (bool logSoftmax : {false, true}) {
    std::vector<float> y(axis);
    EXPECT_OK(tk::softmax(*ctx, 1, axis, 1, masked.data(), y.data(), logSoftmax));
    if (!logSoftmax) {
      EXPECT_EQ(0.0f, y[2]);
      EXPECT_EQ(0.0f, y[9]);
      EXPECT_EQ(0.0f, y[4]);
      EXPECT_NEAR(1.0 / 8, y[0], 1e-7);
    } else {
      EXPECT_EQ(-inf, y[2]);
      EXPECT_NEAR(-std::log(8.0), y[0], 1e-6);
      EXPECT_NEAR(-90.5 - std::log(8.0), y[4], 1e-4);
    }
  }
  for (int64_t at : {3, 9}) // in a lane, in the tail
    for (float special : {nan, inf}) {
      std::vector<float> x(axis, 0.5f), y(axis, 0.0f);
      x[at] = special;
      EXPECT_OK(tk::softmax(*ctx, 1, axis, 1, x.data(), y.data(), false));
      for (float v : y)
        EXPECT_TRUE(std::isnan(v)) << "special value at " << at;
    }
  std::vector<float> allMasked(axis, -inf), y(axis, 0.0f);
  EXPECT_OK(tk::softmax(*ctx, 1, axis, 1, allMasked.data(), y.data(), false));
  for (float v : y)
    EXPECT_TRUE(std::isnan(v));
}

// Strided softmaxes (inner > 1) go 64 at a time: a block with a NaN, an
// inf or a softmax of only -inf takes the one-at-a-time path (those
// softmaxes NaN, the others exact); a block whose maxima are all finite
// vectorizes its exps, and a single -inf (a masked logit) gets exactly 0.
TEST(Softmax, StridedBlocksWithSpecialValues) {
  auto ctx = makeContext();
  const int64_t axis = 5, inner = 140; // blocks [0, 64), [64, 128), [128, 140)
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = randomFloats(axis * inner, 61, -3, 3);
  auto at = [&](int64_t a, int64_t i) -> float & { return x[a * inner + i]; };
  at(2, 3) = std::nanf("");
  at(1, 30) = inf;
  for (int64_t a = 0; a < axis; ++a)
    at(a, 10) = -inf;
  at(0, 20) = at(4, 70) = at(3, 130) = -inf;
  for (bool logSoftmax : {false, true}) {
    SCOPED_TRACE(logSoftmax ? "log-softmax" : "softmax");
    std::vector<float> y(x.size());
    EXPECT_OK(tk::softmax(*ctx, 1, axis, inner, x.data(), y.data(), logSoftmax));
    const std::vector<double> want = softmaxReference(1, axis, inner, x, logSoftmax);
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t a = 0; a < axis; ++a) {
        const float got = y[a * inner + i];
        if (i == 3 || i == 10 || i == 30) {
          EXPECT_TRUE(std::isnan(got)) << "softmax " << i;
        } else if (std::isinf(want[a * inner + i])) {
          EXPECT_EQ(float(want[a * inner + i]), got) << a << ", " << i;
        } else {
          EXPECT_NEAR(want[a * inner + i], got, 1e-6 + 1e-5 * std::fabs(want[a * inner + i]))
              << a << ", " << i;
        }
      }
    if (!logSoftmax) {
      EXPECT_EQ(0.0f, y[4 * inner + 70]);
    }
  }
}

// softmaxExp against exp in double over [-87, 0]: a spread of 10^6 floats
// and both ends (every float of the range: at most 8.2e-8).
TEST(Softmax, ExpPolynomialWithinAnUlp) {
  double worst = 0;
  auto check = [&](float d) {
    const double want = std::exp(double(d));
    worst = std::max(worst, std::fabs(double(tk::detail::softmaxExp(d)) - want) / want);
  };
  for (int i = 0; i <= 1000000; ++i)
    check(-87.0f * float(i) / 1e6f);
  check(-0.0f);
  check(std::nextafter(0.0f, -1.0f));
  check(std::nextafter(-87.0f, 0.0f));
  EXPECT_LT(worst, 1.0e-7);
}

TEST(Softmax, RejectsBadArguments) {
  auto ctx = makeContext();
  float v = 0;
  EXPECT_ERROR(tk::softmax(*ctx, 1, 0, 1, &v, &v, false),
               "softmax: axis must be positive");
  EXPECT_ERROR(tk::softmax(*ctx, 1, 1, 1, &v, nullptr, true),
               "logSoftmax: y is null");
}

TEST(Reduce, SumMeanMax) {
  forEachThreadCount([] {
    auto ctx = makeContext();
    for (int64_t inner : {int64_t(1), int64_t(3), int64_t(65)}) {
      SCOPED_TRACE("inner=" + std::to_string(inner));
      const int64_t outer = 4, axis = 11;
      auto x = randomFloats(outer * axis * inner, 61, -5, 5);
      for (ReduceKind kind :
           {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max}) {
        std::vector<double> want(outer * inner);
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double acc = kind == ReduceKind::Max
                             ? -std::numeric_limits<double>::infinity()
                             : 0.0;
            for (int64_t a = 0; a < axis; ++a) {
              double v = x[(o * axis + a) * inner + i];
              acc = kind == ReduceKind::Max ? std::max(acc, v) : acc + v;
            }
            want[o * inner + i] = kind == ReduceKind::Mean ? acc / axis : acc;
          }
        std::vector<float> got(want.size(), std::nanf(""));
        EXPECT_OK(
            tk::reduce(*ctx, kind, outer, axis, inner, x.data(), got.data()));
        EXPECT_TRUE(allClose(got, want, kRtol, kAtol));
      }
    }
  });
}

TEST(Reduce, MaxPropagatesNaNAndRejectsBadKind) {
  auto ctx = makeContext();
  std::vector<float> x = {1, std::nanf(""), 3}, y(1);
  EXPECT_OK(tk::reduce(*ctx, ReduceKind::Max, 1, 3, 1, x.data(), y.data()));
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_ERROR(
      tk::reduce(*ctx, static_cast<ReduceKind>(7), 1, 3, 1, x.data(), y.data()),
      "invalid kind 7");
  EXPECT_ERROR(tk::reduce(*ctx, ReduceKind::Sum, -1, 3, 1, x.data(), y.data()),
               "outer must be positive, got -1");
}

TEST(GlobalNorm, NormOfAllTensorsForEveryThreadCount) {
  // Small tensors (the serial path) and ones of many chunks (the parallel
  // path), an empty one among them: the norm within 1e-7 of float64's, and
  // the same bits for every thread count.
  auto ctx = makeContext();
  for (int64_t big : {int64_t(100), int64_t(300000)}) {
    SCOPED_TRACE("big=" + std::to_string(big));
    auto a = randomFloats(size_t(big), 41, -3, 3), b = randomFloats(7, 42, -1, 1);
    auto c = randomFloats(size_t(big / 3 + 1), 43, -1e3f, 1e3f);
    double want = 0;
    for (const auto *v : {&a, &b, &c})
      for (float x : *v)
        want += double(x) * double(x);
    want = std::sqrt(want);
    float first = 0;
    for (int threads : {1, 2, 3, 8}) {
      omp_set_num_threads(threads);
      float got = -1;
      EXPECT_OK(tk::globalNorm(*ctx, {a.data(), nullptr, b.data(), c.data()},
                               {int64_t(a.size()), 0, int64_t(b.size()), int64_t(c.size())},
                               &got));
      EXPECT_NEAR(got, want, 1e-7 * want);
      if (threads == 1)
        first = got;
      EXPECT_EQ(std::memcmp(&got, &first, sizeof(float)), 0) << threads << " threads";
    }
    omp_set_num_threads(omp_get_num_procs());
  }
  // Squares in double: elements whose f32 square would overflow.
  std::vector<float> huge = {3e20f, -4e20f};
  float got = 0;
  EXPECT_OK(tk::globalNorm(*ctx, {huge.data()}, {2}, &got));
  EXPECT_NEAR(got, 5e20f, 1e14f);
  EXPECT_ERROR(tk::globalNorm(*ctx, {huge.data(), nullptr}, {2, 3}, &got), "tensor 1 is null");
  EXPECT_ERROR(tk::globalNorm(*ctx, {huge.data()}, {2, 3}, &got), "1 tensors but 2 sizes");
}

} // namespace
} // namespace trainc::test
