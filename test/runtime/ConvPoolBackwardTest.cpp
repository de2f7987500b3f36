//===- ConvPoolBackwardTest.cpp - gradients of conv2d and pooling ---------===//
//
// The backward kernels against double references written from the
// definitions (each gradient is the adjoint of the forward sum: every
// product x * w of the forward pass sends dy * w to x and dy * x to w), a
// finite-difference check of both conv gradients against the forward conv2d
// kernel, and determinism across runs.
//
// Tolerances: the data gradient sums at most M/g * KH * KW products, as the
// forward conv does (rtol 1e-5, atol 1e-5). The filter gradient sums
// N * OH * OW products of values in [-1, 1]; its atol grows by 1e-7 per
// product, a loose bound on the f32 rounding of such a sum.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstring>
#include <limits>

namespace trainc::test {
namespace {

namespace tk = trainc::cpu;
using rt::Conv2dDesc;
using rt::Pool2dDesc;

constexpr double kRtol = 1e-5, kAtol = 1e-5;

//===----------------------------------------------------------------------===//
// conv2d references
//===----------------------------------------------------------------------===//

/// Calls body(xIndex, wIndex, yIndex) for every product of the forward
/// ONNX Conv: y[n, m, oh, ow] += x[n, g*C/G + c, oh*sH - padTop + i*dH,
/// ow*sW - padLeft + j*dW] * W[m, c, i, j], taps outside x reading 0.
template <typename Body> void forEachConvProduct(const Conv2dDesc &d, Body body) {
  int64_t cg = d.c / d.groups, mg = d.m / d.groups;
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t m = 0; m < d.m; ++m)
      for (int64_t oh = 0; oh < d.outH; ++oh)
        for (int64_t ow = 0; ow < d.outW; ++ow) {
          int64_t g = m / mg;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < d.kh; ++i)
              for (int64_t j = 0; j < d.kw; ++j) {
                int64_t ih = oh * d.strideH - d.padTop + i * d.dilationH;
                int64_t iw = ow * d.strideW - d.padLeft + j * d.dilationW;
                if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w)
                  continue;
                body(((n * d.c + g * cg + c) * d.h + ih) * d.w + iw,
                     ((m * cg + c) * d.kh + i) * d.kw + j,
                     ((n * d.m + m) * d.outH + oh) * d.outW + ow);
              }
        }
}

/// dx[i] = sum over the outputs that read x[i] of dy * w.
std::vector<double> convBackwardDataReference(const Conv2dDesc &d,
                                              const std::vector<float> &dy,
                                              const std::vector<float> &w) {
  std::vector<double> dx(d.n * d.c * d.h * d.w, 0.0);
  forEachConvProduct(d, [&](int64_t xi, int64_t wi, int64_t yi) {
    dx[xi] += double(dy[yi]) * w[wi];
  });
  return dx;
}

/// dw[k] = sum over the products that use w[k] of dy * x.
std::vector<double> convBackwardFilterReference(const Conv2dDesc &d,
                                                const std::vector<float> &x,
                                                const std::vector<float> &dy) {
  std::vector<double> dw(d.m * (d.c / d.groups) * d.kh * d.kw, 0.0);
  forEachConvProduct(d, [&](int64_t xi, int64_t wi, int64_t yi) {
    dw[wi] += double(dy[yi]) * x[xi];
  });
  return dw;
}

Conv2dDesc withOutputSize(Conv2dDesc d) {
  d.outH = (d.h + d.padTop + d.padBottom - d.dilationH * (d.kh - 1) - 1) /
               d.strideH +
           1;
  d.outW = (d.w + d.padLeft + d.padRight - d.dilationW * (d.kw - 1) - 1) /
               d.strideW +
           1;
  return d;
}

size_t xSize(const Conv2dDesc &d) { return size_t(d.n * d.c * d.h * d.w); }
size_t wSize(const Conv2dDesc &d) {
  return size_t(d.m * (d.c / d.groups) * d.kh * d.kw);
}
size_t ySize(const Conv2dDesc &d) {
  return size_t(d.n * d.m * d.outH * d.outW);
}

void runConvBackward(const Conv2dDesc &d) {
  auto ctx = makeContext();
  auto x = randomFloats(xSize(d), 31);
  auto w = randomFloats(wSize(d), 32);
  auto dy = randomFloats(ySize(d), 33);
  forEachConvPath([&] {
    // Poisoned outputs: the kernels must overwrite every element.
    std::vector<float> dx(xSize(d), std::nanf("")), dw(wSize(d), std::nanf(""));
    EXPECT_OK(tk::conv2dBackwardData(*ctx, d, dy.data(), w.data(), dx.data()));
    EXPECT_TRUE(
        allClose(dx, convBackwardDataReference(d, dy, w), kRtol, kAtol));
    EXPECT_OK(tk::conv2dBackwardFilter(*ctx, d, x.data(), dy.data(), dw.data()));
    double filterAtol = kAtol + 1e-7 * double(d.n * d.outH * d.outW);
    EXPECT_TRUE(allClose(dw, convBackwardFilterReference(d, x, dy), kRtol,
                         filterAtol));
  }, /*oneDnnRuns=*/d.c >= 4);
}

//===----------------------------------------------------------------------===//
// conv2d gradients
//===----------------------------------------------------------------------===//

//                n  c  h  w  m  kh kw sH sW pT pL pB pR dH dW g
TEST(Conv2dBackward, Basic3x3Padded) {
  forEachThreadCount([] {
    for (int64_t n : {1, 4}) {
      SCOPED_TRACE("n=" + std::to_string(n));
      runConvBackward(
          withOutputSize({n, 3, 9, 8, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
    }
  });
}

TEST(Conv2dBackward, GroupsStridesDilationAsymmetricPadding) {
  // n = 1 splits each image's work over the threads; n = 3 and 5 give the
  // threads whole images (5 over 2 or 3 threads: uneven ranges).
  forEachThreadCount([] {
    for (int64_t n : {1, 3, 5}) {
      SCOPED_TRACE("n=" + std::to_string(n));
      // Groups 2, stride 2x3, dilation 2x1, pads 1/0/2/1.
      runConvBackward(
          withOutputSize({n, 4, 11, 10, 6, 3, 2, 2, 3, 1, 0, 2, 1, 2, 1, 2}));
      // Groups 3, stride 1x2, dilation 2x3, pads 0/2/1/0.
      runConvBackward(
          withOutputSize({n, 6, 9, 12, 9, 2, 3, 1, 2, 0, 2, 1, 0, 2, 3, 3}));
      // Stride 2 and dilation 2 on both axes: taps skip input rows that
      // no output reads (their gradient is 0).
      runConvBackward(
          withOutputSize({n, 2, 10, 9, 4, 3, 3, 2, 2, 0, 1, 2, 0, 2, 2, 1}));
    }
  });
}

TEST(Conv2dBackward, FewOutputPositionsShareOneGemmAcrossImages) {
  // The all-images GEMM path (see the conv2d test of the same name).
  forEachThreadCount([] {
    runConvBackward(withOutputSize({5, 4, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2}));
    runConvBackward(withOutputSize({3, 8, 4, 4, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1}));
    runConvBackward(withOutputSize({4, 6, 2, 2, 8, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}));
  });
}

TEST(Conv2dBackward, Depthwise) {
  forEachThreadCount([] {
    runConvBackward(
        withOutputSize({2, 8, 7, 7, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8}));
  });
}

TEST(Conv2dBackward, Pointwise) {
  forEachThreadCount([] {
    for (int64_t n : {1, 3}) {
      SCOPED_TRACE("n=" + std::to_string(n));
      runConvBackward(
          withOutputSize({n, 6, 5, 7, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}));
      runConvBackward(
          withOutputSize({n, 6, 5, 7, 4, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 2}));
      // 1x1 but strided or padded: not a plain GEMM.
      runConvBackward(
          withOutputSize({n, 3, 6, 6, 4, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1}));
      runConvBackward(
          withOutputSize({n, 3, 6, 6, 4, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1}));
    }
  });
}

// Large weights and few output positions (ResNet's last stage): the input
// gradient skips oneDNN, whose weight reorder would cost as much as the
// convolution, for the batched GEMM; with 4x as many positions (128 per
// weight, as ResNet's stage 3) or small weights it stays on oneDNN. Both
// agree with the float64 reference.
TEST(Conv2dBackward, WeightReorderOutweighsOneDnn) {
  struct Case {
    Conv2dDesc d;
    bool oneDnn;
  };
  //                            n  c    h  w  m    kh kw sH sW pT pL pB pR dH dW g
  const Case cases[] = {
      {withOutputSize({2, 128, 4, 4, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}), false},
      {withOutputSize({8, 128, 4, 4, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}), true},
      {withOutputSize({2, 16, 4, 4, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}), true},
  };
  for (const Case &c : cases) {
    const Conv2dDesc &d = c.d;
    SCOPED_TRACE("n=" + std::to_string(d.n) + " c=" + std::to_string(d.c));
    auto ctx = makeContext();
    auto w = randomFloats(wSize(d), 52);
    auto dy = randomFloats(ySize(d), 53);
    std::vector<float> dx(xSize(d), std::nanf(""));
    const uint64_t before = tk::dnnl_conv::runs();
    EXPECT_OK(tk::conv2dBackwardData(*ctx, d, dy.data(), w.data(), dx.data()));
    EXPECT_EQ(c.oneDnn, tk::dnnl_conv::runs() > before);
    EXPECT_TRUE(allClose(dx, convBackwardDataReference(d, dy, w), kRtol, kAtol));
  }
}

TEST(Conv2dBackward, PaddingLargerThanKernel) {
  forEachThreadCount([] {
    runConvBackward(
        withOutputSize({2, 2, 3, 3, 2, 2, 2, 1, 1, 3, 3, 3, 3, 1, 1, 1}));
  });
}

TEST(Conv2dBackward, DeterministicAcrossRuns) {
  // Enough images for every thread to sum several into its partial dW.
  Conv2dDesc d =
      withOutputSize({7, 4, 12, 11, 6, 3, 3, 1, 2, 1, 1, 2, 1, 1, 1, 2});
  auto ctx = makeContext();
  auto x = randomFloats(xSize(d), 41);
  auto w = randomFloats(wSize(d), 42);
  auto dy = randomFloats(ySize(d), 43);
  forEachConvPath([&] {
  forEachThreadCount([&] {
    std::vector<float> dx1(xSize(d)), dx2(xSize(d));
    std::vector<float> dw1(wSize(d)), dw2(wSize(d));
    for (int run = 0; run < 3; ++run) {
      auto &dx = run == 0 ? dx1 : dx2;
      auto &dw = run == 0 ? dw1 : dw2;
      EXPECT_OK(
          tk::conv2dBackwardData(*ctx, d, dy.data(), w.data(), dx.data()));
      EXPECT_OK(
          tk::conv2dBackwardFilter(*ctx, d, x.data(), dy.data(), dw.data()));
      if (run > 0) {
        EXPECT_EQ(0, std::memcmp(dx1.data(), dx2.data(),
                                 dx1.size() * sizeof(float)));
        EXPECT_EQ(0, std::memcmp(dw1.data(), dw2.data(),
                                 dw1.size() * sizeof(float)));
      }
    }
  });
  });
}

/// Central differences of L = sum(r * conv2d(x, w)) through the forward
/// kernel, summed in double. L is linear in x and in w, so the difference
/// quotient is exact up to rounding for any step; a large step keeps the
/// f32 rounding of the forward outputs small against it.
TEST(Conv2dBackward, MatchesFiniteDifferencesOfForwardConv) {
  //                          n  c  h  w  m  kh kw sH sW pT pL pB pR dH dW g
  Conv2dDesc d = withOutputSize({2, 4, 6, 7, 4, 3, 2, 2, 1, 1, 0, 0, 2, 1, 2, 2});
  // One thread: ~800 tiny forward calls, each not worth a parallel region.
  omp_set_num_threads(1);
  auto ctx = makeContext();
  auto x = randomFloats(xSize(d), 51);
  auto w = randomFloats(wSize(d), 52);
  auto r = randomFloats(ySize(d), 53);
  std::vector<float> y(ySize(d));
  auto loss = [&](const std::vector<float> &xs, const std::vector<float> &ws) {
    EXPECT_OK(tk::conv2d(*ctx, d, xs.data(), ws.data(), nullptr, y.data()));
    double sum = 0;
    for (size_t i = 0; i < y.size(); ++i)
      sum += double(r[i]) * y[i];
    return sum;
  };
  const float step = 0.25f;
  auto difference = [&](std::vector<float> &v, size_t i) {
    float saved = v[i];
    v[i] = saved + step;
    double up = loss(x, w);
    v[i] = saved - step;
    double down = loss(x, w);
    v[i] = saved;
    return (up - down) / (2.0 * double(step));
  };

  std::vector<double> fdX(x.size()), fdW(w.size());
  for (size_t i = 0; i < x.size(); ++i)
    fdX[i] = difference(x, i);
  for (size_t i = 0; i < w.size(); ++i)
    fdW[i] = difference(w, i);

  std::vector<float> dx(x.size()), dw(w.size());
  EXPECT_OK(tk::conv2dBackwardData(*ctx, d, r.data(), w.data(), dx.data()));
  EXPECT_OK(tk::conv2dBackwardFilter(*ctx, d, x.data(), r.data(), dw.data()));
  // atol only for gradients near 0 (e.g. inputs no output reads).
  EXPECT_TRUE(allClose(dx, fdX, 1e-3, 1e-5));
  EXPECT_TRUE(allClose(dw, fdW, 1e-3, 1e-5));
  omp_set_num_threads(omp_get_num_procs());
}

TEST(Conv2dBackward, RejectsBadArguments) {
  auto ctx = makeContext();
  std::vector<float> buf(4096);
  float *p = buf.data();
  Conv2dDesc good =
      withOutputSize({1, 4, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2});
  EXPECT_OK(tk::conv2dBackwardData(*ctx, good, p, p + 1024, p + 2048));
  EXPECT_OK(tk::conv2dBackwardFilter(*ctx, good, p, p + 1024, p + 2048));
  EXPECT_ERROR(tk::conv2dBackwardData(*ctx, good, nullptr, p, p),
               "conv2dBackwardData: dy is null");
  EXPECT_ERROR(tk::conv2dBackwardFilter(*ctx, good, p, p, nullptr),
               "conv2dBackwardFilter: dw is null");
  Conv2dDesc d = good;
  d.outH += 1;
  EXPECT_ERROR(tk::conv2dBackwardData(*ctx, d, p, p, p),
               "conv2dBackwardData: axis H: output size 9");
  d = good;
  d.groups = 3;
  EXPECT_ERROR(tk::conv2dBackwardFilter(*ctx, d, p, p, p),
               "conv2dBackwardFilter: groups 3 must divide");
}

//===----------------------------------------------------------------------===//
// Pooling references
//===----------------------------------------------------------------------===//

enum class PoolKind { Max, AvgIncludePad, AvgExcludePad };

/// Gradients of ONNX MaxPool / AveragePool, window by window: tap (i, j)
/// of output (oh, ow) reads x[oh*sH - padTop + i*dH, ow*sW - padLeft +
/// j*dW]. Max sends dy to the first in-bounds tap holding the window's
/// maximum (taps in row order; a NaN beats everything, a later NaN an
/// earlier one). Averages send dy / divisor to every in-bounds tap, the
/// divisor counting the in-bounds taps, or with count_include_pad those
/// inside the padded extent.
std::vector<double> poolBackwardReference(const Pool2dDesc &d, PoolKind kind,
                                          const std::vector<float> &x,
                                          const std::vector<float> &dy) {
  std::vector<double> dx(d.n * d.c * d.h * d.w, 0.0);
  for (int64_t p = 0; p < d.n * d.c; ++p)
    for (int64_t oh = 0; oh < d.outH; ++oh)
      for (int64_t ow = 0; ow < d.outW; ++ow) {
        std::vector<int64_t> taps; // In-bounds taps, in window order.
        int64_t padded = 0;
        for (int64_t i = 0; i < d.kh; ++i)
          for (int64_t j = 0; j < d.kw; ++j) {
            int64_t ih = oh * d.strideH - d.padTop + i * d.dilationH;
            int64_t iw = ow * d.strideW - d.padLeft + j * d.dilationW;
            if (ih >= -d.padTop && ih < d.h + d.padBottom &&
                iw >= -d.padLeft && iw < d.w + d.padRight)
              ++padded;
            if (ih >= 0 && ih < d.h && iw >= 0 && iw < d.w)
              taps.push_back((p * d.h + ih) * d.w + iw);
          }
        double g = dy[(p * d.outH + oh) * d.outW + ow];
        if (taps.empty()) // A dilated window that misses the input.
          continue;
        if (kind == PoolKind::Max) {
          int64_t best = taps.front();
          double bestValue = -std::numeric_limits<double>::infinity();
          for (int64_t t : taps) {
            double v = x[t];
            if (v > bestValue || std::isnan(v)) {
              bestValue = v;
              best = t;
            }
          }
          dx[best] += g;
        } else {
          double divisor =
              kind == PoolKind::AvgIncludePad ? padded : double(taps.size());
          for (int64_t t : taps)
            dx[t] += g / divisor;
        }
      }
  return dx;
}

Pool2dDesc withOutputSize(Pool2dDesc d, bool ceilMode) {
  auto size = [&](int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1,
                  int64_t dil) {
    int64_t span = in + p0 + p1 - dil * (k - 1) - 1;
    int64_t out = (ceilMode ? (span + s - 1) / s : span / s) + 1;
    if (ceilMode && (out - 1) * s >= in + p0)
      --out;
    return out;
  };
  d.outH = size(d.h, d.kh, d.strideH, d.padTop, d.padBottom, d.dilationH);
  d.outW = size(d.w, d.kw, d.strideW, d.padLeft, d.padRight, d.dilationW);
  return d;
}

void runPoolBackward(const Pool2dDesc &d, PoolKind kind,
                     const std::vector<float> &x) {
  auto ctx = makeContext();
  auto dy = randomFloats(d.n * d.c * d.outH * d.outW, 61);
  std::vector<double> want = poolBackwardReference(d, kind, x, dy);
  std::vector<float> got(want.size(), std::nanf(""));
  if (kind == PoolKind::Max)
    EXPECT_OK(tk::maxPool2dBackward(*ctx, d, x.data(), dy.data(), got.data()));
  else
    EXPECT_OK(tk::avgPool2dBackward(*ctx, d, kind == PoolKind::AvgIncludePad,
                                    dy.data(), got.data()));
  EXPECT_TRUE(allClose(got, want, kRtol, 1e-6));
}

/// Values from {-1, 0, 1}: most windows hold several equal maxima.
std::vector<float> tiedFloats(size_t count, unsigned seed) {
  std::vector<float> v = randomFloats(count, seed, -1.5f, 1.5f);
  for (float &f : v)
    f = std::round(f);
  return v;
}

// Descriptors: {n, c, h, w, kh, kw, sH, sW, pT, pL, pB, pR, dH, dW}.
const Pool2dDesc kCases[] = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 0, 0},  // plain 2x2/2
    {1, 2, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},  // padded 3x3/2
    {2, 2, 10, 9, 3, 2, 2, 3, 2, 0, 1, 1, 1, 1, 0, 0}, // asymmetric padding
    {1, 3, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},  // ceil overhang
    {1, 2, 7, 8, 2, 3, 3, 2, 0, 1, 0, 1, 1, 1, 0, 0},  // strides > kernel
    {2, 2, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},  // overlapping 3x3/1
    {2, 2, 11, 10, 3, 2, 1, 2, 2, 1, 2, 1, 2, 3, 0, 0}, // dilation
    {1, 2, 9, 9, 2, 2, 2, 2, 1, 1, 1, 1, 3, 2, 0, 0},  // dilation, stride 2
};

//===----------------------------------------------------------------------===//
// Pooling gradients
//===----------------------------------------------------------------------===//

TEST(MaxPool2dBackward, FloorAndCeilModeWithPaddingAndDilation) {
  forEachThreadCount([] {
    for (bool ceilMode : {false, true})
      for (const Pool2dDesc &c : kCases) {
        Pool2dDesc d = withOutputSize(c, ceilMode);
        SCOPED_TRACE(std::string(ceilMode ? "ceil" : "floor") +
                     " h=" + std::to_string(d.h) +
                     " kh=" + std::to_string(d.kh));
        runPoolBackward(d, PoolKind::Max,
                        randomFloats(d.n * d.c * d.h * d.w, 62));
      }
  });
}

TEST(MaxPool2dBackward, TiesGoToTheFirstMaximum) {
  forEachThreadCount([] {
    for (bool ceilMode : {false, true})
      for (const Pool2dDesc &c : kCases) {
        Pool2dDesc d = withOutputSize(c, ceilMode);
        SCOPED_TRACE(std::string(ceilMode ? "ceil" : "floor") +
                     " h=" + std::to_string(d.h) +
                     " kh=" + std::to_string(d.kh));
        runPoolBackward(d, PoolKind::Max, tiedFloats(d.n * d.c * d.h * d.w, 63));
      }
  });

  // Constant input, 2x2 windows at stride 1 over 3x3: each window's first
  // tap is its top-left, so dx[i, j] = dy[i, j] for i, j < 2.
  auto ctx = makeContext();
  Pool2dDesc d{1, 1, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 2, 2};
  std::vector<float> x(9, 5.0f), dy = {1, 2, 3, 4}, dx(9, std::nanf(""));
  EXPECT_OK(tk::maxPool2dBackward(*ctx, d, x.data(), dy.data(), dx.data()));
  EXPECT_TRUE(allClose(dx, {1, 2, 0, 3, 4, 0, 0, 0, 0}, 0, 0));

  // Whole windows tiling the plane (the kernels' fast path): -0 and +0 tie
  // as equals, and the first of them wins whichever sign it has.
  Pool2dDesc tiled{1, 1, 2, 4, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 2};
  x = {-0.0f, 0.0f, 0.0f, -0.0f, 0.0f, -0.0f, -1.0f, -0.0f};
  dy = {7, 9};
  dx.assign(8, std::nanf(""));
  EXPECT_OK(tk::maxPool2dBackward(*ctx, tiled, x.data(), dy.data(), dx.data()));
  EXPECT_TRUE(allClose(dx, {7, 0, 9, 0, 0, 0, 0, 0}, 0, 0));
}

// Rows of 150 windows (two chunks of 64 and a partial one between padded
// edge windows, as the kernel takes them): random values, ties, and NaNs
// sprinkled in (a window's last NaN wins), against the reference.
TEST(MaxPool2dBackward, RowsOfWindowsWiderThanAChunk) {
  forEachThreadCount([] {
    //                    n  c  h  w    kh kw sH sW pT pL pB pR dH dW
    for (Pool2dDesc c : {Pool2dDesc{1, 2, 5, 300, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},
                         Pool2dDesc{2, 1, 4, 140, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0}}) {
      const Pool2dDesc d = withOutputSize(c, false);
      SCOPED_TRACE("w=" + std::to_string(d.w));
      runPoolBackward(d, PoolKind::Max, randomFloats(d.n * d.c * d.h * d.w, 64));
      runPoolBackward(d, PoolKind::Max, tiedFloats(d.n * d.c * d.h * d.w, 65));
      std::vector<float> x = randomFloats(d.n * d.c * d.h * d.w, 66);
      for (size_t i = 5; i < x.size(); i += 89)
        x[i] = std::nanf("");
      runPoolBackward(d, PoolKind::Max, x);
    }
  });
}

TEST(MaxPool2dBackward, NaNAndInfinityFollowPyTorch) {
  auto ctx = makeContext();
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  Pool2dDesc d{1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
  std::vector<float> dy = {1.5f}, dx(4);
  // torch.nn.functional.max_pool2d(..., return_indices=True) picks the last
  // NaN of [1, nan, 3, nan]: a NaN always replaces the running maximum.
  std::vector<float> x = {1, nan, 3, nan};
  EXPECT_OK(tk::maxPool2dBackward(*ctx, d, x.data(), dy.data(), dx.data()));
  EXPECT_TRUE(allClose(dx, {0, 0, 0, 1.5}, 0, 0));
  // All -inf: nothing beats the initial -inf, so the first tap keeps it.
  x = {-inf, -inf, -inf, -inf};
  EXPECT_OK(tk::maxPool2dBackward(*ctx, d, x.data(), dy.data(), dx.data()));
  EXPECT_TRUE(allClose(dx, {1.5, 0, 0, 0}, 0, 0));
  // Padding never wins: with one row of top padding, the first window's
  // gradient goes to its first in-bounds tap, even if that is -inf.
  Pool2dDesc padded{1, 1, 2, 2, 2, 2, 1, 1, 1, 0, 0, 0, 1, 1, 2, 1};
  std::vector<float> dy2 = {2, 3};
  x = {-inf, -inf, 1, -inf};
  EXPECT_OK(
      tk::maxPool2dBackward(*ctx, padded, x.data(), dy2.data(), dx.data()));
  EXPECT_TRUE(allClose(dx, {2, 0, 3, 0}, 0, 0));
}

TEST(Pool2dBackward, DilatedWindowsThatMissTheInput) {
  // h = 1, kh = 2, dilation 3, padding 2/1: the only window row has taps at
  // rows -2 and 1, both padding, so no input element gets its gradient.
  // Columns: kw = 2, stride 1, dilation 2, no padding.
  Pool2dDesc d{2, 2, 1, 5, 2, 2, 1, 1, 2, 0, 1, 0, 3, 2, 0, 0};
  d = withOutputSize(d, false);
  ASSERT_EQ(d.outH, 1);
  forEachThreadCount([&] {
    for (PoolKind kind :
         {PoolKind::Max, PoolKind::AvgIncludePad, PoolKind::AvgExcludePad})
      runPoolBackward(d, kind, randomFloats(d.n * d.c * d.h * d.w, 64));
  });
  // And a mix: h = 4 with dilation 3 and padding 2 (taps -2/1, 0/3, ...).
  Pool2dDesc mixed{1, 2, 4, 4, 2, 2, 1, 1, 2, 1, 1, 2, 3, 3, 0, 0};
  for (bool ceilMode : {false, true}) {
    Pool2dDesc m = withOutputSize(mixed, ceilMode);
    for (PoolKind kind :
         {PoolKind::Max, PoolKind::AvgIncludePad, PoolKind::AvgExcludePad})
      runPoolBackward(m, kind, tiedFloats(m.n * m.c * m.h * m.w, 65));
  }
}

TEST(AvgPool2dBackward, CountIncludePadBothWays) {
  forEachThreadCount([] {
    for (PoolKind kind : {PoolKind::AvgIncludePad, PoolKind::AvgExcludePad})
      for (bool ceilMode : {false, true})
        for (const Pool2dDesc &c : kCases) {
          Pool2dDesc d = withOutputSize(c, ceilMode);
          SCOPED_TRACE(
              std::string(ceilMode ? "ceil" : "floor") +
              (kind == PoolKind::AvgIncludePad ? " include" : " exclude") +
              " h=" + std::to_string(d.h) + " kh=" + std::to_string(d.kh));
          runPoolBackward(d, kind, {});
        }
  });
}

TEST(Pool2dBackward, RejectsBadArguments) {
  auto ctx = makeContext();
  std::vector<float> buf(1024);
  float *p = buf.data();
  Pool2dDesc d{1, 1, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 2, 2};
  EXPECT_OK(tk::maxPool2dBackward(*ctx, d, p, p + 256, p + 512));
  EXPECT_OK(tk::avgPool2dBackward(*ctx, d, true, p + 256, p + 512));
  EXPECT_ERROR(tk::maxPool2dBackward(*ctx, d, nullptr, p, p),
               "maxPool2dBackward: x is null");
  EXPECT_ERROR(tk::avgPool2dBackward(*ctx, d, false, p, nullptr),
               "avgPool2dBackward: dx is null");
  d.outH = 3;
  EXPECT_ERROR(tk::maxPool2dBackward(*ctx, d, p, p, p + 512),
               "starts past the input");
  d.outH = 4;
  EXPECT_ERROR(tk::avgPool2dBackward(*ctx, d, true, p, p + 512),
               "avgPool2dBackward: axis H: output size 4");
}

} // namespace
} // namespace trainc::test
