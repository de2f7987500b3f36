//===- Im2col.h - im2col and col2im rows of a convolution ------*- C++ -*-===//
//
// Shared by conv2d (Conv.cpp) and its gradients (ConvBackward.cpp). The
// column matrix of one image's group of channels x [cg, h, w] is
// [cg * kh * kw, outH * outW]: row (c, ki, kj) holds tap (ki, kj) of channel
// c for every output position. im2colRow fills one row; col2imRow adds one
// row back into the input plane it was read from (the adjoint of im2col).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CPU_IM2COL_H
#define TRAINC_RT_CPU_IM2COL_H

#include "Blas.h"
#include "trainc_rt/device.h"
#include "trainc_rt/kernels.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include <omp.h>

namespace trainc::cpu {

/// The output columns of tap column kj that read inside the input: input
/// column ow * strideW + offW for ow in [begin, end).
struct Im2colColumns {
  int64_t offW, begin, end;
};

inline Im2colColumns im2colColumns(const ::trainc::rt::Conv2dDesc &d,
                                   int64_t kj) {
  Im2colColumns r;
  r.offW = kj * d.dilationW - d.padLeft;
  r.begin = r.offW >= 0
                ? 0
                : std::min(d.outW, (-r.offW + d.strideW - 1) / d.strideW);
  r.end = d.w - r.offW <= 0
              ? 0
              : std::min(d.outW, (d.w - r.offW + d.strideW - 1) / d.strideW);
  r.end = std::max(r.end, r.begin);
  return r;
}

/// Unrolls row `row` of the column matrix of x [cg, h, w] into col. The
/// inner loop walks an output row with a constant input stride and padding
/// is handled per row segment, not per element.
/// Rows of col are `ld` floats apart (default: outH * outW, one image).
inline void im2colRow(const ::trainc::rt::Conv2dDesc &d, const float *x,
                      int64_t row, float *col, int64_t ld = 0) {
  int64_t kj = row % d.kw;
  int64_t ki = (row / d.kw) % d.kh;
  int64_t c = row / (d.kw * d.kh);
  const float *plane = x + c * d.h * d.w;
  float *out = col + row * (ld ? ld : d.outH * d.outW);
  const Im2colColumns cols = im2colColumns(d, kj);
  for (int64_t oh = 0; oh < d.outH; ++oh, out += d.outW) {
    int64_t ih = oh * d.strideH + ki * d.dilationH - d.padTop;
    if (ih < 0 || ih >= d.h) {
      std::memset(out, 0, d.outW * sizeof(float));
      continue;
    }
    const float *in = plane + ih * d.w + cols.offW;
    std::fill(out, out + cols.begin, 0.0f);
    if (d.strideW == 1)
      std::memcpy(out + cols.begin, in + cols.begin,
                  (cols.end - cols.begin) * sizeof(float));
    else
      for (int64_t ow = cols.begin; ow < cols.end; ++ow)
        out[ow] = in[ow * d.strideW];
    std::fill(out + cols.end, out + d.outW, 0.0f);
  }
}

/// conv2d and its gradients run one image per thread (each GEMM whole, on
/// one thread) with at least this many images, else the images in sequence
/// with each GEMM split over the threads. A function of the shape, not of
/// the thread count: the two ways round differently (Blas.h).
inline constexpr int64_t kImagePerThreadMin = 4;

inline bool imagePerThread(const ::trainc::rt::Conv2dDesc &d) {
  return d.n >= kImagePerThreadMin;
}

/// Runs `image(n, col, splitWork)` for every image of the batch with an
/// im2col buffer `col` of `colFloats` floats (null for a pointwise
/// convolution, which needs none): one image per thread, each thread with
/// its own buffer, when imagePerThread(d); else the images in sequence,
/// each split over the threads (`splitWork`).
template <typename ImageFn>
::trainc::rt::Status forEachImage(::trainc::rt::Context &ctx, const ::trainc::rt::Conv2dDesc &d,
                                  size_t colFloats, ImageFn &&image) {
  void *workspace = nullptr;
  if (imagePerThread(d)) {
    const int threads = maxThreads();
    if (colFloats)
      TRAINC_RETURN_IF_ERROR(ctx.workspace(&workspace, colFloats * sizeof(float) * threads));
#pragma omp parallel num_threads(threads)
    {
      float *col = colFloats
                       ? static_cast<float *>(workspace) + omp_get_thread_num() * colFloats
                       : nullptr;
#pragma omp for schedule(static)
      for (int64_t n = 0; n < d.n; ++n)
        image(n, col, /*splitWork=*/false);
    }
    return ::trainc::rt::Status();
  }
  if (colFloats)
    TRAINC_RETURN_IF_ERROR(ctx.workspace(&workspace, colFloats * sizeof(float)));
  for (int64_t n = 0; n < d.n; ++n)
    image(n, static_cast<float *>(workspace), /*splitWork=*/true);
  return ::trainc::rt::Status();
}

/// The GEMM operand for one image and group: x itself for a pointwise
/// convolution (it is already [cg, outSpatial]), otherwise its im2col in
/// `col` ([taps, outSpatial]), filled by all threads when `parallel`.
inline const float *convOperand(const ::trainc::rt::Conv2dDesc &d, const float *xg,
                                float *col, int64_t taps, bool pointwise, bool parallel) {
  if (pointwise)
    return xg;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t row = 0; row < taps; ++row)
    im2colRow(d, xg, row, col);
  return col;
}

/// Adds row `row` of col into the plane of dx [cg, h, w] that im2colRow read
/// it from; entries that came from padding are dropped. Rows of the same
/// channel write the same plane, so callers that split rows over threads
/// must give all kh * kw rows of a channel to one thread.
inline void col2imRow(const ::trainc::rt::Conv2dDesc &d, const float *col,
                      int64_t row, float *dx, int64_t ld = 0) {
  int64_t kj = row % d.kw;
  int64_t ki = (row / d.kw) % d.kh;
  int64_t c = row / (d.kw * d.kh);
  float *plane = dx + c * d.h * d.w;
  const float *in = col + row * (ld ? ld : d.outH * d.outW);
  const Im2colColumns cols = im2colColumns(d, kj);
  for (int64_t oh = 0; oh < d.outH; ++oh, in += d.outW) {
    int64_t ih = oh * d.strideH + ki * d.dilationH - d.padTop;
    if (ih < 0 || ih >= d.h)
      continue;
    float *line = plane + ih * d.w;
    for (int64_t ow = cols.begin; ow < cols.end; ++ow)
      line[ow * d.strideW + cols.offW] += in[ow];
  }
}

//===----------------------------------------------------------------------===//
// All images in one GEMM
//===----------------------------------------------------------------------===//
//
// Late layers of a CNN have few output positions (a 2x2 map in ResNet's last
// stage), so one GEMM per image has a tiny dimension and runs far below the
// machine's speed. Side by side, the images make one GEMM of n * outH * outW
// columns: the column matrix of group g is [taps, n * S] (image i's columns
// at i * S, S = outH * outW), and activations of group g are packed from
// [n, c, S] to [c/g, n * S].

/// Whether conv2d and its gradients put all images in one GEMM: when an
/// image has at most this many output positions.
inline constexpr int64_t kBatchedGemmMaxSpatial = 64;

inline bool batchedGemm(const ::trainc::rt::Conv2dDesc &d) {
  return d.outH * d.outW <= kBatchedGemmMaxSpatial && d.n > 1;
}

/// The workspace of the all-images path, [taps + m/g, n * S]: the column
/// matrix `col` and a packed activation `packed`; `columns` = n * S.
inline ::trainc::rt::Status batchedBuffers(::trainc::rt::Context &ctx, const char *kernel,
                                           const ::trainc::rt::Conv2dDesc &d, int64_t taps,
                                           int64_t &columns, float *&col, float *&packed) {
  columns = d.n * d.outH * d.outW;
  if (columns > INT_MAX)
    return ::trainc::rt::Status::error(std::string(kernel) +
                                       ": a GEMM dimension exceeds the BLAS int range");
  void *workspace = nullptr;
  TRAINC_RETURN_IF_ERROR(
      ctx.workspace(&workspace, size_t(taps + d.m / d.groups) * columns * sizeof(float)));
  col = static_cast<float *>(workspace);
  packed = col + taps * columns;
  return ::trainc::rt::Status();
}

/// The column matrix of group g of every image of x [n, c, h, w].
inline void im2colImages(const ::trainc::rt::Conv2dDesc &d, const float *x, int64_t g,
                         int64_t taps, float *col) {
  const int64_t spatial = d.outH * d.outW, cg = d.c / d.groups;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t n = 0; n < d.n; ++n)
    for (int64_t row = 0; row < taps; ++row)
      im2colRow(d, x + (n * d.c + g * cg) * d.h * d.w, row, col + n * spatial, d.n * spatial);
}

/// packed [channels, n * spatial] = t[:, first : first + channels, :] of
/// t [n, total, spatial].
inline void packImages(int64_t n, int64_t total, int64_t first, int64_t channels,
                       int64_t spatial, const float *t, float *packed) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < channels; ++ch)
      std::memcpy(packed + (ch * n + i) * spatial, t + (i * total + first + ch) * spatial,
                  spatial * sizeof(float));
}

/// The inverse of packImages: t[:, first : first + channels, :] = packed,
/// plus bias[ch] when `bias` is set.
inline void unpackImages(int64_t n, int64_t total, int64_t first, int64_t channels,
                         int64_t spatial, const float *packed, const float *bias, float *t) {
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < channels; ++ch) {
      const float *from = packed + (ch * n + i) * spatial;
      float *to = t + (i * total + first + ch) * spatial;
      if (bias)
        for (int64_t s = 0; s < spatial; ++s)
          to[s] = from[s] + bias[ch];
      else
        std::memcpy(to, from, spatial * sizeof(float));
    }
}

} // namespace trainc::cpu

#endif // TRAINC_RT_CPU_IM2COL_H
