//===- Conv.cpp - 2-D convolution as im2col + sgemm -----------------------===//
//
// For each image and group, im2col unrolls the receptive fields into a
// [C/g * KH * KW, OH * OW] matrix in the context's workspace, and one sgemm
// multiplies the group's weights [M/g, C/g * KH * KW] by it. A 1x1, stride-1,
// unpadded convolution is already a GEMM on the input and skips im2col.
//
//===----------------------------------------------------------------------===//

#include "../common/KernelChecks.h"
#include "Threading.h"

#include <algorithm>
#include <cblas.h>
#include <climits>
#include <cstring>
#include <omp.h>

namespace trainc::cpu {
using namespace ::trainc::rt;

namespace {

/// Unrolls one image's group of channels x [cg, h, w] into col
/// [cg * kh * kw, outH * outW]. Each column row is one tap (c, ki, kj) over
/// all output positions, so the inner loop walks the output row with a
/// constant input stride and the padding is handled per row segment, not
/// per element.
void im2colRow(const Conv2dDesc &d, const float *x, int64_t row, float *col) {
  int64_t kj = row % d.kw;
  int64_t ki = (row / d.kw) % d.kh;
  int64_t c = row / (d.kw * d.kh);
  const float *plane = x + c * d.h * d.w;
  float *out = col + row * d.outH * d.outW;
  // Input column of output column ow is ow * strideW + offW; the valid
  // output columns form one range [owBegin, owEnd).
  int64_t offW = kj * d.dilationW - d.padLeft;
  int64_t owBegin =
      offW >= 0 ? 0 : std::min(d.outW, (-offW + d.strideW - 1) / d.strideW);
  int64_t owEnd =
      d.w - offW <= 0
          ? 0
          : std::min(d.outW, (d.w - offW + d.strideW - 1) / d.strideW);
  owEnd = std::max(owEnd, owBegin);
  for (int64_t oh = 0; oh < d.outH; ++oh, out += d.outW) {
    int64_t ih = oh * d.strideH + ki * d.dilationH - d.padTop;
    if (ih < 0 || ih >= d.h) {
      std::memset(out, 0, d.outW * sizeof(float));
      continue;
    }
    const float *in = plane + ih * d.w + offW;
    std::fill(out, out + owBegin, 0.0f);
    if (d.strideW == 1)
      std::memcpy(out + owBegin, in + owBegin,
                  (owEnd - owBegin) * sizeof(float));
    else
      for (int64_t ow = owBegin; ow < owEnd; ++ow)
        out[ow] = in[ow * d.strideW];
    std::fill(out + owEnd, out + d.outW, 0.0f);
  }
}

/// y[m, :] = bias[m] for one image, so that sgemm can accumulate (beta = 1)
/// instead of a second pass adding the bias.
void fillBias(const float *bias, int64_t m, int64_t spatial, float *y) {
  for (int64_t i = 0; i < m; ++i)
    std::fill(y + i * spatial, y + (i + 1) * spatial, bias[i]);
}

} // namespace

Status conv2d(Context &ctx, const Conv2dDesc &d, const float *x,
              const float *w, const float *bias, float *y) {
  const char *kernel = "conv2d";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x}, {"w", w}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkConv2dDesc(kernel, d));
  const int64_t cg = d.c / d.groups, mg = d.m / d.groups;
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
  const int64_t taps = cg * d.kh * d.kw; // GEMM k: one column row per tap.
  if (taps > INT_MAX || outSpatial > INT_MAX || mg > INT_MAX)
    return Status::error("conv2d: a GEMM dimension exceeds the BLAS int range");
  const float beta = bias ? 1.0f : 0.0f;
  const bool pointwise = d.kh == 1 && d.kw == 1 && d.strideH == 1 &&
                         d.strideW == 1 && d.padTop == 0 && d.padLeft == 0 &&
                         d.padBottom == 0 && d.padRight == 0;

  // One image: every group's GEMM; `col` is this thread's im2col buffer
  // (unused for pointwise convolutions).
  auto convImage = [&](int64_t n, float *col, bool parallelIm2col) {
    const float *xn = x + n * d.c * inSpatial;
    float *yn = y + n * d.m * outSpatial;
    if (bias)
      fillBias(bias, d.m, outSpatial, yn);
    for (int64_t g = 0; g < d.groups; ++g) {
      const float *xg = xn + g * cg * inSpatial;
      const float *operand = xg;
      if (!pointwise) {
#pragma omp parallel for schedule(static) if (parallelIm2col)
        for (int64_t row = 0; row < taps; ++row)
          im2colRow(d, xg, row, col);
        operand = col;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(mg),
                  int(outSpatial), int(taps), 1.0f, w + g * mg * taps,
                  int(taps), operand, int(outSpatial), beta,
                  yn + g * mg * outSpatial, int(outSpatial));
    }
  };

  // Threading (measured on 2 cores, see test/runtime/README.md): with at
  // least one image per thread, one image per thread with single-threaded
  // sgemm wins, because im2col and the bias fill are then parallel too and
  // the small per-image GEMMs of late layers scale poorly inside OpenBLAS.
  // With fewer images than threads, the images run one after the other and
  // OpenBLAS threads each GEMM (im2col is split over rows).
  const int threads = maxThreads();
  const size_t colBytes = pointwise ? 0 : size_t(taps * outSpatial) * 4;
  if (d.n >= threads && threads > 1) {
    void *workspace = nullptr;
    if (colBytes)
      TRAINC_RETURN_IF_ERROR(ctx.workspace(&workspace, colBytes * threads));
    useSingleThreadedBlas();
#pragma omp parallel num_threads(threads)
    {
      float *col = colBytes ? static_cast<float *>(workspace) +
                                  omp_get_thread_num() * (colBytes / 4)
                            : nullptr;
#pragma omp for schedule(static)
      for (int64_t n = 0; n < d.n; ++n)
        convImage(n, col, /*parallelIm2col=*/false);
    }
  } else {
    void *workspace = nullptr;
    if (colBytes)
      TRAINC_RETURN_IF_ERROR(ctx.workspace(&workspace, colBytes));
    syncBlasThreads();
    for (int64_t n = 0; n < d.n; ++n)
      convImage(n, static_cast<float *>(workspace), /*parallelIm2col=*/true);
  }
  return Status();
}

} // namespace trainc::cpu
