//===- PoolTest.cpp - max and average pooling -----------------------------===//
//
// Random cases against a per-tap reference of the ONNX definitions, plus a
// ceil-mode case with values computed by PyTorch 1.13 (F.avg_pool2d /
// F.max_pool2d), which pins down the divisor of windows that hang past the
// padded edge. Tolerance rtol 1e-5, atol 1e-6 (averages of <= 9 values).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <limits>

namespace trainc::test {
namespace {

namespace tk = trainc::cpu;
using rt::Pool2dDesc;

constexpr double kRtol = 1e-5, kAtol = 1e-6;

enum class PoolKind { Max, AvgIncludePad, AvgExcludePad };

/// ONNX MaxPool / AveragePool, one tap at a time: tap (i, j) of output
/// (oh, ow) reads x[oh*sH - padTop + i*dH, ow*sW - padLeft + j*dW]. Taps
/// outside x are padding: ignored by max, counted by count_include_pad
/// averages only when inside the padded extent.
std::vector<double> poolReference(const Pool2dDesc &d, PoolKind kind,
                                  const std::vector<float> &x) {
  std::vector<double> y(d.n * d.c * d.outH * d.outW);
  for (int64_t p = 0; p < d.n * d.c; ++p)
    for (int64_t oh = 0; oh < d.outH; ++oh)
      for (int64_t ow = 0; ow < d.outW; ++ow) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t inside = 0, padded = 0;
        for (int64_t i = 0; i < d.kh; ++i)
          for (int64_t j = 0; j < d.kw; ++j) {
            int64_t ih = oh * d.strideH - d.padTop + i * d.dilationH;
            int64_t iw = ow * d.strideW - d.padLeft + j * d.dilationW;
            if (ih >= -d.padTop && ih < d.h + d.padBottom && iw >= -d.padLeft &&
                iw < d.w + d.padRight)
              ++padded;
            if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w)
              continue;
            double v = x[(p * d.h + ih) * d.w + iw];
            best = std::max(best, v);
            sum += v;
            ++inside;
          }
        double &out = y[(p * d.outH + oh) * d.outW + ow];
        out = kind == PoolKind::Max             ? best
              : kind == PoolKind::AvgIncludePad ? sum / padded
                                                : sum / inside;
      }
  return y;
}

/// outH/outW for floor or ceil mode; ceil mode drops a last window that
/// would start in the end padding (PyTorch, ONNX opset 19).
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

void runPool(const Pool2dDesc &d, PoolKind kind) {
  auto ctx = makeContext();
  auto x = randomFloats(d.n * d.c * d.h * d.w, 21);
  std::vector<double> want = poolReference(d, kind, x);
  std::vector<float> got(want.size(), std::nanf(""));
  if (kind == PoolKind::Max)
    EXPECT_OK(tk::maxPool2d(*ctx, d, x.data(), got.data()));
  else
    EXPECT_OK(tk::avgPool2d(*ctx, d, kind == PoolKind::AvgIncludePad, x.data(),
                            got.data()));
  EXPECT_TRUE(allClose(got, want, kRtol, kAtol));
}

// Descriptors: {n, c, h, w, kh, kw, sH, sW, pT, pL, pB, pR, dH, dW}.
const Pool2dDesc kCases[] = {
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 0, 0},  // plain 2x2/2
    {1, 2, 9, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},  // padded 3x3/2
    {2, 2, 10, 9, 3, 2, 2, 3, 2, 0, 1, 1, 1, 1, 0, 0}, // asymmetric padding
    {1, 3, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},  // ceil overhang
    {1, 2, 7, 8, 2, 3, 3, 2, 0, 1, 0, 1, 1, 1, 0, 0},  // strides > kernel
};

TEST(MaxPool2d, FloorAndCeilModeWithPadding) {
  forEachThreadCount([] {
    for (bool ceilMode : {false, true})
      for (const Pool2dDesc &d : kCases) {
        SCOPED_TRACE(std::string(ceilMode ? "ceil" : "floor") + " h=" +
                     std::to_string(d.h) + " kh=" + std::to_string(d.kh));
        runPool(withOutputSize(d, ceilMode), PoolKind::Max);
      }
  });
}

TEST(MaxPool2d, Dilation) {
  runPool(
      withOutputSize({2, 2, 11, 10, 3, 2, 1, 2, 2, 1, 2, 1, 2, 3, 0, 0}, false),
      PoolKind::Max);
  runPool(
      withOutputSize({1, 2, 9, 9, 2, 2, 2, 2, 1, 1, 1, 1, 3, 2, 0, 0}, true),
      PoolKind::Max);
}

TEST(AvgPool2d, CountIncludePadBothWays) {
  forEachThreadCount([] {
    for (PoolKind kind : {PoolKind::AvgIncludePad, PoolKind::AvgExcludePad})
      for (bool ceilMode : {false, true})
        for (const Pool2dDesc &d : kCases) {
          SCOPED_TRACE(
              std::string(ceilMode ? "ceil" : "floor") +
              (kind == PoolKind::AvgIncludePad ? " include" : " exclude") +
              " h=" + std::to_string(d.h));
          runPool(withOutputSize(d, ceilMode), kind);
        }
  });
}

TEST(Pool2d, CeilModeMatchesPyTorch) {
  // x = arange(36) * 0.5 - 3 as [1, 1, 6, 6]; kernel 3, stride 2, padding 1,
  // ceil_mode=True: 4x4 outputs, the last row/column of windows covers input
  // 5, padding 6 and the position 7 past the padded edge.
  auto ctx = makeContext();
  std::vector<float> x(36);
  for (int i = 0; i < 36; ++i)
    x[i] = i * 0.5f - 3.0f;
  Pool2dDesc d{1, 1, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 4, 4};
  const std::vector<double> includePad = {-0.5555555820465088,
                                          -0.3333333432674408,
                                          0.3333333432674408,
                                          0.3333333432674408,
                                          2.1666667461395264,
                                          4.0,
                                          5.0,
                                          2.75,
                                          6.166666507720947,
                                          10.0,
                                          11.0,
                                          5.75,
                                          4.083333492279053,
                                          6.5,
                                          7.0,
                                          3.625};
  const std::vector<double> excludePad = {-1.25, -0.5, 0.5,  1.0,  3.25, 4.0,
                                          5.0,   5.5,  9.25, 10.0, 11.0, 11.5,
                                          12.25, 13.0, 14.0, 14.5};
  const std::vector<double> maximum = {0.5,  1.5,  2.5,  2.5,  6.5,  7.5,
                                       8.5,  8.5,  12.5, 13.5, 14.5, 14.5,
                                       12.5, 13.5, 14.5, 14.5};
  std::vector<float> y(16);
  EXPECT_OK(tk::avgPool2d(*ctx, d, true, x.data(), y.data()));
  EXPECT_TRUE(allClose(y, includePad, kRtol, kAtol));
  EXPECT_OK(tk::avgPool2d(*ctx, d, false, x.data(), y.data()));
  EXPECT_TRUE(allClose(y, excludePad, kRtol, kAtol));
  EXPECT_OK(tk::maxPool2d(*ctx, d, x.data(), y.data()));
  EXPECT_TRUE(allClose(y, maximum, kRtol, kAtol));

  // Unpadded: kernel 3, stride 2, ceil mode gives 3x3 with clipped windows.
  Pool2dDesc u{1, 1, 6, 6, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, 3, 3};
  y.resize(9);
  EXPECT_OK(tk::avgPool2d(*ctx, u, true, x.data(), y.data()));
  EXPECT_TRUE(allClose(y, {0.5, 1.5, 2.25, 6.5, 7.5, 8.25, 11.0, 12.0, 12.75},
                       kRtol, kAtol));
}

TEST(Pool2d, NaNPropagatesThroughMax) {
  auto ctx = makeContext();
  std::vector<float> x = {1, 2, std::nanf(""), 4};
  std::vector<float> y(1);
  Pool2dDesc d{1, 1, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
  EXPECT_OK(tk::maxPool2d(*ctx, d, x.data(), y.data()));
  EXPECT_TRUE(std::isnan(y[0]));
}

// Max pooling takes the windows inside the input a row at a time, up to 64
// side by side: rows of 150 windows (two full chunks and a partial one,
// between padded edge windows), with NaNs sprinkled into some windows,
// against the reference (NaN where a window holds one).
TEST(MaxPool2d, RowsOfWindowsWiderThanAChunk) {
  forEachThreadCount([] {
    //                    n  c  h  w    kh kw sH sW pT pL pB pR dH dW
    for (Pool2dDesc c : {Pool2dDesc{1, 2, 5, 300, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},
                         Pool2dDesc{2, 1, 4, 140, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0}}) {
      const Pool2dDesc d = withOutputSize(c, false);
      SCOPED_TRACE("w=" + std::to_string(d.w));
      auto ctx = makeContext();
      auto x = randomFloats(d.n * d.c * d.h * d.w, 23);
      for (size_t i = 7; i < x.size(); i += 97)
        x[i] = std::nanf("");
      std::vector<double> want = poolReference(d, PoolKind::Max, x);
      // poolReference's std::max skips a NaN: a window holding one is NaN.
      for (int64_t p = 0; p < d.n * d.c; ++p)
        for (int64_t oh = 0; oh < d.outH; ++oh)
          for (int64_t ow = 0; ow < d.outW; ++ow)
            for (int64_t i = 0; i < d.kh; ++i)
              for (int64_t j = 0; j < d.kw; ++j) {
                const int64_t ih = oh * d.strideH - d.padTop + i;
                const int64_t iw = ow * d.strideW - d.padLeft + j;
                if (ih >= 0 && ih < d.h && iw >= 0 && iw < d.w &&
                    std::isnan(x[(p * d.h + ih) * d.w + iw]))
                  want[(p * d.outH + oh) * d.outW + ow] = std::nan("");
              }
      std::vector<float> got(want.size(), 0.0f);
      EXPECT_OK(tk::maxPool2d(*ctx, d, x.data(), got.data()));
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i]))
          EXPECT_TRUE(std::isnan(got[i])) << i;
        else
          EXPECT_EQ(float(want[i]), got[i]) << i;
      }
    }
  });
}

TEST(Pool2d, RejectsInconsistentDescriptors) {
  auto ctx = makeContext();
  std::vector<float> buf(1024);
  float *p = buf.data();
  // h = 3, kernel 2, stride 2, padding 1: floor 2, ceil 3, but the third
  // window would start at 3, past the input: PyTorch drops it.
  Pool2dDesc d{1, 1, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 2, 2};
  EXPECT_OK(tk::maxPool2d(*ctx, d, p, p + 512));
  d.outH = 3;
  EXPECT_ERROR(tk::maxPool2d(*ctx, d, p, p + 512), "starts past the input");
  d.outH = 4;
  EXPECT_ERROR(tk::avgPool2d(*ctx, d, true, p, p + 512),
               "avgPool2d: axis H: output size 4");
  d = {1, 1, 6, 6, 2, 2, 1, 1, 2, 0, 0, 0, 1, 1, 7, 5};
  EXPECT_ERROR(tk::maxPool2d(*ctx, d, p, p + 512),
               "must be smaller than the window extent");
  d = {1, 1, 6, 6, 2, 2, 1, 1, 0, 0, 0, 0, 0, 1, 5, 5};
  EXPECT_ERROR(tk::maxPool2d(*ctx, d, p, p + 512),
               "dilationH must be positive");
  d = {1, 1, 6, 6, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1, 5, 5};
  EXPECT_ERROR(tk::maxPool2d(*ctx, d, nullptr, p), "maxPool2d: x is null");
}

} // namespace
} // namespace trainc::test
