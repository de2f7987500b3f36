//===- ConvBackward.cpp - gradients of conv2d as sgemm + col2im -----------===//
//
// Both gradients reuse conv2d's column matrix col = im2col(x) of one image
// and group, [taps = C/g * KH * KW, OH * OW]:
//
//   forward          y_g  = W_g col                 [M/g, OH * OW]
//   backward data    dcol = W_g^T dy_g, dx_g = col2im(dcol)
//   backward filter  dW_g = sum over images of dy_g col^T
//
// A 1x1, stride-1, unpadded convolution has col = x, so dx_g = W_g^T dy_g
// and dW_g = dy_g x_g^T directly. With few output positions per image
// (batchedGemm, Im2col.h) both gradients are one GEMM per group over all
// images side by side; the filter gradient's sum over images is then the
// GEMM's own reduction.
//
// Threading follows conv2d: with kImagePerThreadMin images or more (a
// choice by shape, not by thread count), one image per thread (serial
// sgemm); otherwise images in sequence with each
// GEMM and the im2col/col2im work split over the threads. col2im is split
// by input channel (the kh * kw rows of a channel all write its plane), so
// no two threads write the same dx element. The filter gradient sums over
// images in fixed, contiguous chunks of images (filterChunks: a function of
// the shape), each into its own buffer, added in chunk order; the GEMMs are
// cut into blocks that depend on the shape only (Blas.h). So the result
// depends neither on the thread count nor on thread timing.
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

bool isPointwise(const Conv2dDesc &d) {
  return d.kh == 1 && d.kw == 1 && d.strideH == 1 && d.strideW == 1 &&
         d.padTop == 0 && d.padLeft == 0 && d.padBottom == 0 &&
         d.padRight == 0;
}

/// Shared argument checks of both gradients.
Status checkConvGemmSizes(const char *kernel, const Conv2dDesc &d) {
  TRAINC_RETURN_IF_ERROR(checkConv2dDesc(kernel, d));
  const int64_t taps = (d.c / d.groups) * d.kh * d.kw;
  if (taps > INT_MAX || d.outH * d.outW > INT_MAX || d.m / d.groups > INT_MAX)
    return Status::error(std::string(kernel) +
                         ": a GEMM dimension exceeds the BLAS int range");
  return Status();
}

/// Images [begin, end) of `n` for chunk `c` of `chunks`: contiguous,
/// fixed ranges, so the summation order of the filter gradient does not
/// depend on scheduling.
void imageRange(int64_t n, int64_t c, int64_t chunks, int64_t &begin, int64_t &end) {
  begin = n * c / chunks;
  end = n * (c + 1) / chunks;
}

/// In the image-per-thread mode the filter gradient sums the images in at
/// most this many chunks, each into its own partial dW: a function of the
/// shape, never of the thread count (so at most 8 threads share the work).
constexpr int64_t kMaxFilterChunks = 8;
/// ... and keeps the partials under this many floats (64 MiB).
constexpr int64_t kMaxPartialFloats = int64_t(16) << 20;

int64_t filterChunks(int64_t images, int64_t dwFloats) {
  const int64_t byMemory = kMaxPartialFloats / std::max<int64_t>(1, dwFloats) + 1;
  return std::max<int64_t>(1, std::min({images, kMaxFilterChunks, byMemory}));
}

} // namespace

Status conv2dBackwardData(Context &ctx, const Conv2dDesc &d, const float *dy,
                          const float *w, float *dx) {
  const char *kernel = "conv2dBackwardData";
  TRAINC_RETURN_IF_ERROR(
      checkNotNull(kernel, {{"dy", dy}, {"w", w}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(checkConv2dDesc(kernel, d));
  if (dnnl_conv::enabled()) {
    bool ran = false;
    TRAINC_RETURN_IF_ERROR(dnnl_conv::backwardData(DType::F32, d, dy, w, dx, ran));
    if (ran)
      return Status();
  }
  if (d.channelsLast)
    return viaChannelsFirst({convOutput(d, dy, nullptr), convWeights(d, w, nullptr),
                             convInput(d, nullptr, dx)},
                            [&](float *const *f) {
                              return conv2dBackwardData(ctx, channelsFirst(d), f[0], f[1], f[2]);
                            });
  TRAINC_RETURN_IF_ERROR(checkConvGemmSizes(kernel, d));
  const int64_t cg = d.c / d.groups, mg = d.m / d.groups;
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
  const int64_t taps = cg * d.kh * d.kw;
  const bool pointwise = isPointwise(d);

  // One image: every group's GEMM and col2im. With `splitWork` the GEMM and
  // the col2im channels are spread over the OpenMP threads.
  auto image = [&](int64_t n, float *col, bool splitWork) {
    const float *dyn = dy + n * d.m * outSpatial;
    float *dxn = dx + n * d.c * inSpatial;
    for (int64_t g = 0; g < d.groups; ++g) {
      const float *wg = w + g * mg * taps;
      const float *dyg = dyn + g * mg * outSpatial;
      float *dxg = dxn + g * cg * inSpatial;
      // dcol [taps, outSpatial] = W_g^T [taps, mg] dy_g [mg, outSpatial];
      // pointwise, dcol is dx_g itself.
      float *dcol = pointwise ? dxg : col;
      if (splitWork)
        sgemmParallel(true, false, taps, outSpatial, mg, 1.0f, wg, taps, dyg,
                      outSpatial, 0.0f, dcol, outSpatial);
      else
        sgemmSerial(true, false, taps, outSpatial, mg, 1.0f, wg, taps, dyg,
                    outSpatial, 0.0f, dcol, outSpatial);
      if (pointwise)
        continue;
      const int64_t tapsPerChannel = d.kh * d.kw;
#pragma omp parallel for schedule(static) if (splitWork)
      for (int64_t c = 0; c < cg; ++c) {
        std::memset(dxg + c * inSpatial, 0, inSpatial * sizeof(float));
        for (int64_t t = 0; t < tapsPerChannel; ++t)
          col2imRow(d, col, c * tapsPerChannel + t, dxg);
      }
    }
  };

  useSingleThreadedBlas();
  if (batchedGemm(d)) {
    // Per group, one GEMM over all images: dcol [taps, n * S] = W_g^T dy_g
    // with dy_g packed to [mg, n * S], then col2im per image and channel.
    int64_t columns = 0;
    float *dcol = nullptr, *packed = nullptr;
    TRAINC_RETURN_IF_ERROR(batchedBuffers(ctx, kernel, d, taps, columns, dcol, packed));
    const int64_t tapsPerChannel = d.kh * d.kw;
    for (int64_t g = 0; g < d.groups; ++g) {
      packImages(d.n, d.m, g * mg, mg, outSpatial, dy, packed);
      sgemmParallel(true, false, taps, columns, mg, 1.0f, w + g * mg * taps, taps, packed,
                    columns, 0.0f, dcol, columns);
#pragma omp parallel for collapse(2) schedule(static)
      for (int64_t n = 0; n < d.n; ++n)
        for (int64_t c = 0; c < cg; ++c) {
          float *dxg = dx + (n * d.c + g * cg) * inSpatial;
          std::memset(dxg + c * inSpatial, 0, inSpatial * sizeof(float));
          for (int64_t t = 0; t < tapsPerChannel; ++t)
            col2imRow(d, dcol + n * outSpatial, c * tapsPerChannel + t, dxg, columns);
        }
    }
    return Status();
  }
  const size_t colFloats = pointwise ? 0 : size_t(taps * outSpatial);
  return forEachImage(ctx, d, colFloats, image);
}

Status conv2dBackwardFilter(Context &ctx, const Conv2dDesc &d, const float *x,
                            const float *dy, float *dw) {
  const char *kernel = "conv2dBackwardFilter";
  TRAINC_RETURN_IF_ERROR(
      checkNotNull(kernel, {{"x", x}, {"dy", dy}, {"dw", dw}}));
  if (d.channelsLast) {
    TRAINC_RETURN_IF_ERROR(checkConv2dDesc(kernel, d));
    return viaChannelsFirst({convInput(d, x, nullptr), convOutput(d, dy, nullptr),
                             convWeights(d, nullptr, dw)},
                            [&](float *const *f) {
                              return conv2dBackwardFilter(ctx, channelsFirst(d), f[0], f[1],
                                                          f[2]);
                            });
  }
  TRAINC_RETURN_IF_ERROR(checkConvGemmSizes(kernel, d));
  const int64_t cg = d.c / d.groups, mg = d.m / d.groups;
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
  const int64_t taps = cg * d.kh * d.kw;
  const bool pointwise = isPointwise(d);

  // Adds (or, with `first`, writes) image n's dW = dy_g col^T for every
  // group into `sum` [m, taps].
  auto image = [&](int64_t n, float *col, float *sum, bool first,
                   bool splitWork) {
    const float *xn = x + n * d.c * inSpatial;
    const float *dyn = dy + n * d.m * outSpatial;
    const float beta = first ? 0.0f : 1.0f;
    for (int64_t g = 0; g < d.groups; ++g) {
      const float *xg = xn + g * cg * inSpatial;
      const float *operand = convOperand(d, xg, col, taps, pointwise, splitWork);
      const float *dyg = dyn + g * mg * outSpatial;
      float *sg = sum + g * mg * taps;
      // [mg, taps] (+)= dy_g [mg, outSpatial] col^T [outSpatial, taps].
      if (splitWork)
        sgemmParallel(false, true, mg, taps, outSpatial, 1.0f, dyg, outSpatial,
                      operand, outSpatial, beta, sg, taps);
      else
        sgemmSerial(false, true, mg, taps, outSpatial, 1.0f, dyg, outSpatial,
                    operand, outSpatial, beta, sg, taps);
    }
  };

  useSingleThreadedBlas();
  if (batchedGemm(d)) {
    // Per group, one GEMM over all images: dW_g = dy_g col^T with the
    // images side by side (K = n * S), so the sum over images is inside the
    // GEMM.
    int64_t columns = 0;
    float *col = nullptr, *packed = nullptr;
    TRAINC_RETURN_IF_ERROR(batchedBuffers(ctx, kernel, d, taps, columns, col, packed));
    for (int64_t g = 0; g < d.groups; ++g) {
      im2colImages(d, x, g, taps, col);
      packImages(d.n, d.m, g * mg, mg, outSpatial, dy, packed);
      sgemmParallel(false, true, mg, taps, columns, 1.0f, packed, columns, col, columns, 0.0f,
                    dw + g * mg * taps, taps);
    }
    return Status();
  }
  // With imagePerThread(d), the images go in filterChunks() fixed,
  // contiguous chunks, one chunk per thread at a time: each chunk sums its
  // images in order into its own partial (chunk 0 into dw), and the
  // partials are added in chunk order. Otherwise one chunk: the images in
  // sequence, each GEMM split over the threads. Both depend on the shape
  // only, so the sum is the same with any thread count.
  const int threads = maxThreads();
  const size_t colFloats = pointwise ? 0 : size_t(taps * outSpatial);
  const size_t dwFloats = size_t(d.m * taps);
  const bool chunkPerThread = imagePerThread(d);
  const int64_t chunks = chunkPerThread ? filterChunks(d.n, int64_t(dwFloats)) : 1;
  const size_t colBuffers = chunkPerThread ? size_t(threads) : 1;
  void *workspace = nullptr;
  TRAINC_RETURN_IF_ERROR(ctx.workspace(
      &workspace, (colFloats * colBuffers + dwFloats * size_t(chunks - 1) + 1) * sizeof(float)));
  float *base = static_cast<float *>(workspace);
  auto partial = [&](int64_t c) {
    return c == 0 ? dw : base + colFloats * colBuffers + size_t(c - 1) * dwFloats;
  };
  auto chunk = [&](int64_t c, float *col, bool splitWork) {
    int64_t begin, end;
    imageRange(d.n, c, chunks, begin, end);
    for (int64_t n = begin; n < end; ++n)
      image(n, col, partial(c), /*first=*/n == begin, splitWork);
  };
  if (chunkPerThread) {
#pragma omp parallel num_threads(threads)
    {
      float *col = base + size_t(omp_get_thread_num()) * colFloats;
#pragma omp for schedule(static)
      for (int64_t c = 0; c < chunks; ++c)
        chunk(c, col, /*splitWork=*/false);
    }
  } else {
    for (int64_t c = 0; c < chunks; ++c)
      chunk(c, base, /*splitWork=*/true);
  }
  if (chunks > 1) {
    // Sum the partials in chunk order, each element by one thread.
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < int64_t(dwFloats); ++i) {
      float acc = dw[i];
      for (int64_t c = 1; c < chunks; ++c)
        acc += partial(c)[i];
      dw[i] = acc;
    }
  }
  return Status();
}

} // namespace trainc::cpu
