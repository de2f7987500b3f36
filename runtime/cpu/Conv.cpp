//===- Conv.cpp - 2-D convolution as im2col + sgemm -----------------------===//
//
// oneDNN runs the convolution where it has a kernel for it (Dnnl.h); this is
// the path for the rest, and for TRAINC_CPU_CONV=im2col.
//
// For each image and group, im2col unrolls the receptive fields into a
// [C/g * KH * KW, OH * OW] matrix in the context's workspace, and one sgemm
// multiplies the group's weights [M/g, C/g * KH * KW] by it. A 1x1, stride-1,
// unpadded convolution is already a GEMM on the input and skips im2col.
// With few output positions per image (batchedGemm, Im2col.h) the images
// instead go side by side into one GEMM per group.
//
//===----------------------------------------------------------------------===//

#include "../common/KernelChecks.h"
#include "Blas.h"
#include "ChannelsLast.h"
#include "Dnnl.h"
#include "Im2col.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <omp.h>

namespace trainc::cpu {
using namespace ::trainc::rt;

namespace {

/// y[m, :] = bias[m] for one image, so that sgemm can accumulate (beta = 1)
/// instead of a second pass adding the bias.
void fillBias(const float *bias, int64_t m, int64_t spatial, float *y) {
  for (int64_t i = 0; i < m; ++i)
    std::fill(y + i * spatial, y + (i + 1) * spatial, bias[i]);
}

} // namespace

Status conv2d(Context &ctx, const Conv2dDesc &d, const float *x, const float *w,
              const float *bias, float *y) {
  const char *kernel = "conv2d";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x}, {"w", w}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkConv2dDesc(kernel, d));
  if (dnnl_conv::enabled()) {
    bool ran = false;
    TRAINC_RETURN_IF_ERROR(dnnl_conv::forward(DType::F32, d, x, w, bias, y, ran));
    if (ran)
      return Status();
  }
  if (d.channelsLast)
    return viaChannelsFirst({convInput(d, x, nullptr), convWeights(d, w, nullptr),
                             convOutput(d, nullptr, y)},
                            [&](float *const *f) {
                              return conv2d(ctx, channelsFirst(d), f[0], f[1], bias, f[2]);
                            });
  const int64_t cg = d.c / d.groups, mg = d.m / d.groups;
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
  const int64_t taps = cg * d.kh * d.kw; // GEMM k: one column row per tap.
  if (taps > INT_MAX || outSpatial > INT_MAX || mg > INT_MAX)
    return Status::error("conv2d: a GEMM dimension exceeds the BLAS int range");
  const float beta = bias ? 1.0f : 0.0f;
  const bool pointwise = d.kh == 1 && d.kw == 1 && d.strideH == 1 &&
                         d.strideW == 1 && d.padTop == 0 && d.padLeft == 0 &&
                         d.padBottom == 0 && d.padRight == 0;

  // One image: every group's GEMM. `col` is the caller's im2col buffer
  // (unused for pointwise convolutions); with `splitWork` the im2col rows
  // and the GEMM are spread over the OpenMP threads, else this thread does
  // all of it.
  auto convImage = [&](int64_t n, float *col, bool splitWork) {
    const float *xn = x + n * d.c * inSpatial;
    float *yn = y + n * d.m * outSpatial;
    if (bias)
      fillBias(bias, d.m, outSpatial, yn);
    for (int64_t g = 0; g < d.groups; ++g) {
      const float *xg = xn + g * cg * inSpatial;
      const float *operand = convOperand(d, xg, col, taps, pointwise, splitWork);
      const float *wg = w + g * mg * taps;
      float *yg = yn + g * mg * outSpatial;
      if (splitWork)
        sgemmParallel(false, false, mg, outSpatial, taps, 1.0f, wg, taps,
                      operand, outSpatial, beta, yg, outSpatial);
      else
        sgemmSerial(false, false, mg, outSpatial, taps, 1.0f, wg, taps, operand,
                    outSpatial, beta, yg, outSpatial);
    }
  };

  // Threading, measured on 2 cores (GFLOP/s, one image per thread vs
  // images in sequence with im2col and each GEMM split over the threads;
  // one thread alone reaches ~45): ResNet 3x3 layers 64x56x56 85 vs 77,
  // 256x14x14 107 vs 84, 512x7x7 79 vs 75; LeNet 5x5 30 vs 15; 1x1
  // 256x14x14 120 vs 82. One image per thread wins everywhere: im2col, the
  // bias fill and the GEMM then all run in parallel with no barrier between
  // them, and small late-layer GEMMs split poorly. So images go one per
  // thread whenever there are kImagePerThreadMin images or more; with fewer
  // (batch-1 inference) the work inside each image is split. The choice
  // depends on the shape, not on the thread count: the two ways may round
  // differently, and results must not depend on the thread count.
  useSingleThreadedBlas();
  if (batchedGemm(d)) {
    // Few output positions: per group, one GEMM over all images,
    // y_g [mg, n * S] = W_g col, then unpacked (plus the bias) into y.
    int64_t columns = 0;
    float *col = nullptr, *packed = nullptr;
    TRAINC_RETURN_IF_ERROR(batchedBuffers(ctx, kernel, d, taps, columns, col, packed));
    for (int64_t g = 0; g < d.groups; ++g) {
      im2colImages(d, x, g, taps, col);
      sgemmParallel(false, false, mg, columns, taps, 1.0f, w + g * mg * taps, taps, col,
                    columns, 0.0f, packed, columns);
      unpackImages(d.n, d.m, g * mg, mg, outSpatial, packed, bias ? bias + g * mg : nullptr,
                   y);
    }
    return Status();
  }
  const size_t colFloats = pointwise ? 0 : size_t(taps * outSpatial);
  return forEachImage(ctx, d, colFloats, convImage);
}

} // namespace trainc::cpu
