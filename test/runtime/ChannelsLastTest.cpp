//===- ChannelsLastTest.cpp - the NHWC entries of the CPU kernels ---------===//
//
// Each convolution, pooling and batch-norm kernel called channels-last on
// the NHWC copies of random tensors (weights OHWI) gives the NHWC copy of
// what the NCHW call gives, on every convolution path (oneDNN's NHWC
// primitive, im2col) and thread count. The NCHW kernels are checked against
// references in their own tests; tolerance rtol 1e-5, atol 1e-6 (oneDNN may
// sum a channels-last convolution in another order).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

namespace trainc::test {
namespace {

namespace tk = trainc::cpu;
using rt::Conv2dDesc;
using rt::Pool2dDesc;

constexpr double kRtol = 1e-5, kAtol = 1e-6;

/// [n, c, spatial] -> [n, spatial, c].
std::vector<float> toLast(const std::vector<float> &x, int64_t n, int64_t c, int64_t spatial) {
  std::vector<float> y(x.size());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < spatial; ++s)
        y[(b * spatial + s) * c + ch] = x[(b * c + ch) * spatial + s];
  return y;
}

/// The NHWC copy of an NCHW result, as the expected values of allClose.
std::vector<double> expectLast(const std::vector<float> &x, int64_t n, int64_t c,
                               int64_t spatial) {
  std::vector<float> y = toLast(x, n, c, spatial);
  return std::vector<double>(y.begin(), y.end());
}

Conv2dDesc convShape(Conv2dDesc d) {
  d.outH = (d.h + d.padTop + d.padBottom - d.dilationH * (d.kh - 1) - 1) / d.strideH + 1;
  d.outW = (d.w + d.padLeft + d.padRight - d.dilationW * (d.kw - 1) - 1) / d.strideW + 1;
  return d;
}

Conv2dDesc lastOf(Conv2dDesc d) {
  d.channelsLast = true;
  return d;
}

/// Forward, input gradient and filter gradient of one convolution shape.
void runConv(const Conv2dDesc &d) {
  auto ctx = makeContext();
  const int64_t cg = d.c / d.groups, in = d.h * d.w, out = d.outH * d.outW;
  const int64_t taps = d.kh * d.kw;
  auto x = randomFloats(d.n * d.c * in, 31), w = randomFloats(d.m * cg * taps, 32);
  auto bias = randomFloats(d.m, 33), dy = randomFloats(d.n * d.m * out, 34);
  auto xl = toLast(x, d.n, d.c, in), wl = toLast(w, d.m, cg, taps);
  auto dyl = toLast(dy, d.n, d.m, out);
  forEachConvPath(
      [&] {
        std::vector<float> y(d.n * d.m * out), yl(y.size(), std::nanf(""));
        EXPECT_OK(tk::conv2d(*ctx, d, x.data(), w.data(), bias.data(), y.data()));
        EXPECT_OK(tk::conv2d(*ctx, lastOf(d), xl.data(), wl.data(), bias.data(), yl.data()));
        EXPECT_TRUE(allClose(yl, expectLast(y, d.n, d.m, out), kRtol, kAtol)) << "forward";

        std::vector<float> dx(x.size()), dxl(x.size(), std::nanf(""));
        EXPECT_OK(tk::conv2dBackwardData(*ctx, d, dy.data(), w.data(), dx.data()));
        EXPECT_OK(tk::conv2dBackwardData(*ctx, lastOf(d), dyl.data(), wl.data(), dxl.data()));
        EXPECT_TRUE(allClose(dxl, expectLast(dx, d.n, d.c, in), kRtol, kAtol)) << "input grad";

        std::vector<float> dw(w.size()), dwl(w.size(), std::nanf(""));
        EXPECT_OK(tk::conv2dBackwardFilter(*ctx, d, x.data(), dy.data(), dw.data()));
        EXPECT_OK(tk::conv2dBackwardFilter(*ctx, lastOf(d), xl.data(), dyl.data(), dwl.data()));
        EXPECT_TRUE(allClose(dwl, expectLast(dw, d.m, cg, taps), kRtol, kAtol)) << "filter grad";
      },
      /*oneDnnRuns=*/true);
}

//                      n  c  h  w  m  kh kw sH sW pT pL pB pR dH dW g
TEST(ChannelsLast, Conv3x3Padded) {
  forEachThreadCount([] { runConv(convShape({3, 8, 9, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1})); });
}

TEST(ChannelsLast, ConvGroupsStridesDilationAsymmetricPadding) {
  runConv(convShape({2, 8, 11, 10, 12, 3, 2, 2, 1, 2, 0, 1, 1, 2, 1, 4}));
}

TEST(ChannelsLast, ConvDepthwiseAndPointwise) {
  runConv(convShape({2, 16, 6, 6, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 16}));
  runConv(convShape({2, 16, 6, 6, 24, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1}));
}

TEST(ChannelsLast, Pooling) {
  auto ctx = makeContext();
  //          n  c  h  w  kh kw sH sW pT pL pB pR dH dW oH oW
  Pool2dDesc d{2, 5, 9, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 5, 4};
  Pool2dDesc dl = d;
  dl.channelsLast = true;
  const int64_t in = d.h * d.w, out = d.outH * d.outW;
  auto x = randomFloats(d.n * d.c * in, 41), dy = randomFloats(d.n * d.c * out, 42);
  auto xl = toLast(x, d.n, d.c, in), dyl = toLast(dy, d.n, d.c, out);
  std::vector<float> y(dy.size()), yl(dy.size(), std::nanf(""));
  EXPECT_OK(tk::maxPool2d(*ctx, d, x.data(), y.data()));
  EXPECT_OK(tk::maxPool2d(*ctx, dl, xl.data(), yl.data()));
  EXPECT_TRUE(allClose(yl, expectLast(y, d.n, d.c, out), kRtol, kAtol)) << "max";
  for (bool includePad : {false, true}) {
    EXPECT_OK(tk::avgPool2d(*ctx, d, includePad, x.data(), y.data()));
    EXPECT_OK(tk::avgPool2d(*ctx, dl, includePad, xl.data(), yl.data()));
    EXPECT_TRUE(allClose(yl, expectLast(y, d.n, d.c, out), kRtol, kAtol)) << "avg";
  }
  std::vector<float> dx(x.size()), dxl(x.size(), std::nanf(""));
  EXPECT_OK(tk::maxPool2dBackward(*ctx, d, x.data(), dy.data(), dx.data()));
  EXPECT_OK(tk::maxPool2dBackward(*ctx, dl, xl.data(), dyl.data(), dxl.data()));
  EXPECT_TRUE(allClose(dxl, expectLast(dx, d.n, d.c, in), kRtol, kAtol)) << "max backward";
  EXPECT_OK(tk::avgPool2dBackward(*ctx, d, true, dy.data(), dx.data()));
  EXPECT_OK(tk::avgPool2dBackward(*ctx, dl, true, dyl.data(), dxl.data()));
  EXPECT_TRUE(allClose(dxl, expectLast(dx, d.n, d.c, in), kRtol, kAtol)) << "avg backward";
}

TEST(ChannelsLast, BatchNormWithSampleMask) {
  auto ctx = makeContext();
  const int64_t n = 4, c = 6, spatial = 10;
  auto x = randomFloats(n * c * spatial, 51), dy = randomFloats(x.size(), 52);
  auto scale = randomFloats(c, 53), bias = randomFloats(c, 54);
  auto mean = randomFloats(c, 55), var = randomFloats(c, 56, 0.5f, 2.0f);
  auto xl = toLast(x, n, c, spatial), dyl = toLast(dy, n, c, spatial);
  const std::vector<float> mask = {1, 0, 1, 1}; // a padded sample left out
  for (const float *m : {static_cast<const float *>(nullptr), mask.data()}) {
    std::vector<float> y(x.size()), yl(x.size(), std::nanf(""));
    std::vector<float> rm(c), rv(c), rml(c), rvl(c);
    EXPECT_OK(tk::batchNormTraining(*ctx, n, c, spatial, x.data(), scale.data(), bias.data(),
                                    mean.data(), var.data(), m, 1e-5f, 0.9f, y.data(),
                                    rm.data(), rv.data()));
    EXPECT_OK(tk::batchNormTraining(*ctx, n, c, spatial, xl.data(), scale.data(), bias.data(),
                                    mean.data(), var.data(), m, 1e-5f, 0.9f, yl.data(),
                                    rml.data(), rvl.data(), /*channelsLast=*/true));
    EXPECT_TRUE(allClose(yl, expectLast(y, n, c, spatial), kRtol, kAtol)) << "training";
    EXPECT_TRUE(allClose(rml, std::vector<double>(rm.begin(), rm.end()), kRtol, kAtol));
    EXPECT_TRUE(allClose(rvl, std::vector<double>(rv.begin(), rv.end()), kRtol, kAtol));

    std::vector<float> dx(x.size()), dxl(x.size(), std::nanf(""));
    std::vector<float> ds(c), db(c), dsl(c), dbl(c);
    EXPECT_OK(tk::batchNormBackward(*ctx, n, c, spatial, x.data(), scale.data(), dy.data(), m,
                                    1e-5f, dx.data(), ds.data(), db.data()));
    EXPECT_OK(tk::batchNormBackward(*ctx, n, c, spatial, xl.data(), scale.data(), dyl.data(), m,
                                    1e-5f, dxl.data(), dsl.data(), dbl.data(),
                                    /*channelsLast=*/true));
    EXPECT_TRUE(allClose(dxl, expectLast(dx, n, c, spatial), kRtol, kAtol)) << "backward";
    EXPECT_TRUE(allClose(dsl, std::vector<double>(ds.begin(), ds.end()), kRtol, kAtol));
    EXPECT_TRUE(allClose(dbl, std::vector<double>(db.begin(), db.end()), kRtol, kAtol));
  }
  std::vector<float> y(x.size()), yl(x.size(), std::nanf(""));
  EXPECT_OK(tk::batchNormInference(*ctx, n, c, spatial, x.data(), scale.data(), bias.data(),
                                   mean.data(), var.data(), 1e-5f, y.data()));
  EXPECT_OK(tk::batchNormInference(*ctx, n, c, spatial, xl.data(), scale.data(), bias.data(),
                                   mean.data(), var.data(), 1e-5f, yl.data(),
                                   /*channelsLast=*/true));
  EXPECT_TRUE(allClose(yl, expectLast(y, n, c, spatial), kRtol, kAtol)) << "inference";
}

} // namespace
} // namespace trainc::test
