//===- PoolBackward.cu - gradients of max and average pooling -------------===//
//
// Own kernels, like the forward pooling (Pool.cu). One thread per input
// element gathers from the windows that contain it, so every dx element is
// written once by one thread: no atomics, and a fixed summation order
// (windows in output order, as the CPU target adds them), hence
// deterministic results.
//
// The windows containing input row ih are those oh with
// oh * strideH - padTop + i * dilationH == ih for a tap i in [0, kh); i is
// walked downwards so that oh rises.
//
// Max: a window's gradient goes to its first maximum in window order (a NaN
// takes it from any number, a later NaN from an earlier one; an all -inf
// window gives it to its first in-bounds tap), PyTorch's rule. Each thread
// recomputes the argmax of each window it is in (kh * kw reads, a handful of
// windows for the usual kernel/stride ratios); pooling is bandwidth-bound
// and those reads hit cache lines its neighbours read too.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include "common/KernelChecks.h"
#include "trainc_rt/kernels.h"

#include <cstdint>

namespace trainc::cuda {
namespace {

using ::trainc::rt::Pool2dDesc;

//===----------------------------------------------------------------------===//
// Window helpers
//===----------------------------------------------------------------------===//

/// Smallest tap k >= 0 with start + k * dilation >= bound.
__device__ __forceinline__ int64_t firstTapAtLeast(int64_t start,
                                                   int64_t dilation,
                                                   int64_t bound) {
  int64_t gap = bound - start;
  return gap <= 0 ? 0 : (gap + dilation - 1) / dilation;
}

/// Taps of a window along one axis that avgPool2d divides by: those inside
/// [0, size), or with `countIncludePad` inside [-padBegin, size + padEnd)
/// (windows never start before -padBegin).
__device__ __forceinline__ int64_t tapCount(int64_t start, int64_t kernel,
                                            int64_t dilation, int64_t size,
                                            int64_t padEnd,
                                            bool countIncludePad) {
  int64_t begin =
      countIncludePad ? 0 : min(kernel, firstTapAtLeast(start, dilation, 0));
  int64_t end = min(kernel, firstTapAtLeast(start, dilation,
                                            countIncludePad ? size + padEnd
                                                            : size));
  return end > begin ? end - begin : 0;
}

/// The plane offset of the tap window (oh, ow) of plane (b, ch) of x sends
/// its gradient to.
__device__ __forceinline__ int64_t windowArgmax(const Pool2dDesc &d,
                                                const float *x, int64_t b, int64_t ch,
                                                int64_t oh, int64_t ow) {
  int64_t h0 = oh * d.strideH - d.padTop;
  int64_t w0 = ow * d.strideW - d.padLeft;
  int64_t best = -1;
  float bestValue = -CUDART_INF_F;
  for (int64_t kh = 0; kh < d.kh; ++kh) {
    int64_t ih = h0 + kh * d.dilationH;
    if (ih < 0)
      continue;
    if (ih >= d.h)
      break;
    for (int64_t kw = 0; kw < d.kw; ++kw) {
      int64_t iw = w0 + kw * d.dilationW;
      if (iw < 0)
        continue;
      if (iw >= d.w)
        break;
      int64_t at = ih * d.w + iw;
      float v = x[elementAt(b, ch, at, d.c, d.h * d.w, d.channelsLast)];
      if (best < 0 || v > bestValue || isnan(v)) {
        best = at;
        bestValue = v;
      }
    }
  }
  return best;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Walks the windows containing input element (ih, iw) in output order and
/// calls visit(oh, ow) for each.
template <typename Visit>
__device__ __forceinline__ void forEachWindow(const Pool2dDesc &d, int64_t ih,
                                              int64_t iw, Visit visit) {
  for (int64_t i = d.kh - 1; i >= 0; --i) {
    int64_t th = ih + d.padTop - i * d.dilationH;
    if (th < 0 || th % d.strideH != 0)
      continue;
    int64_t oh = th / d.strideH;
    if (oh >= d.outH)
      break; // oh only grows as i falls.
    for (int64_t j = d.kw - 1; j >= 0; --j) {
      int64_t tw = iw + d.padLeft - j * d.dilationW;
      if (tw < 0 || tw % d.strideW != 0)
        continue;
      int64_t ow = tw / d.strideW;
      if (ow >= d.outW)
        break;
      visit(oh, ow);
    }
  }
}

/// The input element each output window takes its maximum from (its plane
/// offset, windowArgmax), stored as dy is: the indices the forward does not
/// keep, found once per window instead of once per input element and
/// window that holds it.
__global__ void maxPool2dArgmaxKernel(Pool2dDesc d, const float *x, int32_t *argmax) {
  int64_t total = d.n * d.c * d.outH * d.outW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    ElementIndex e = elementIndex(i, d.c, d.outH * d.outW, d.channelsLast);
    argmax[i] = int32_t(windowArgmax(d, x, e.b, e.ch, e.p / d.outW, e.p % d.outW));
  }
}

/// dx of max pooling, one input element per thread: each adds, in window
/// order, the dy of the windows whose maximum it is (isArgmax(e, oh, ow, o):
/// o is the window's output offset), with no atomics, so the same sums come
/// in the same order on every run.
template <typename IsArgmax>
__device__ __forceinline__ void maxPoolBackwardElements(const Pool2dDesc &d, const float *dy,
                                                        float *dx, IsArgmax isArgmax) {
  int64_t total = d.n * d.c * d.h * d.w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    ElementIndex e = elementIndex(i, d.c, d.h * d.w, d.channelsLast);
    float sum = 0.0f;
    forEachWindow(d, e.p / d.w, e.p % d.w, [&](int64_t oh, int64_t ow) {
      int64_t o = elementAt(e.b, e.ch, oh * d.outW + ow, d.c, d.outH * d.outW, d.channelsLast);
      if (isArgmax(e, oh, ow, o))
        sum += dy[o];
    });
    dx[i] = sum;
  }
}

/// dx from the windows' argmax (maxPool2dArgmaxKernel).
__global__ void maxPool2dBackwardFromArgmaxKernel(Pool2dDesc d, const int32_t *argmax,
                                                  const float *dy, float *dx) {
  maxPoolBackwardElements(d, dy, dx, [&](const ElementIndex &e, int64_t, int64_t, int64_t o) {
    return argmax[o] == e.p;
  });
}

/// The same without scratch: each input element finds the argmax of every
/// window that holds it (planes of 2^31 elements or more).
__global__ void maxPool2dBackwardKernel(Pool2dDesc d, const float *x,
                                        const float *dy, float *dx) {
  maxPoolBackwardElements(d, dy, dx, [&](const ElementIndex &e, int64_t oh, int64_t ow, int64_t) {
    return windowArgmax(d, x, e.b, e.ch, oh, ow) == e.p;
  });
}

__global__ void avgPool2dBackwardKernel(Pool2dDesc d, bool countIncludePad,
                                        const float *dy, float *dx) {
  int64_t total = d.n * d.c * d.h * d.w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    ElementIndex e = elementIndex(i, d.c, d.h * d.w, d.channelsLast);
    int64_t iw = e.p % d.w;
    int64_t ih = e.p / d.w;
    float sum = 0.0f;
    forEachWindow(d, ih, iw, [&](int64_t oh, int64_t ow) {
      int64_t rows =
          tapCount(oh * d.strideH - d.padTop, d.kh, d.dilationH, d.h,
                   d.padBottom, countIncludePad);
      int64_t cols =
          tapCount(ow * d.strideW - d.padLeft, d.kw, d.dilationW, d.w,
                   d.padRight, countIncludePad);
      int64_t count = rows * cols; // >= 1: the window holds (ih, iw).
      sum += dy[elementAt(e.b, e.ch, oh * d.outW + ow, d.c, d.outH * d.outW,
                          d.channelsLast)] /
             float(count);
    });
    dx[i] = sum;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

Status maxPool2dBackward(Context &ctxBase, const Pool2dDesc &d, const float *x,
                         const float *dy, float *dx) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "maxPool2dBackward";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(
      kernel, {{"x", x}, {"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPool2dDesc(kernel, d));
  int64_t total = d.n * d.c * d.h * d.w;
  if (d.h * d.w >= INT32_MAX) {
    maxPool2dBackwardKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0,
                              ctx.stream()>>>(d, x, dy, dx);
    TRAINC_CHECK_LAUNCH("maxPool2dBackwardKernel");
    return Status();
  }
  int64_t outputs = d.n * d.c * d.outH * d.outW;
  void *scratch = nullptr;
  TRAINC_RETURN_IF_ERROR(ctx.workspace(&scratch, size_t(outputs) * sizeof(int32_t)));
  int32_t *argmax = static_cast<int32_t *>(scratch);
  maxPool2dArgmaxKernel<<<gridFor(ctx, outputs, kBlockSize), kBlockSize, 0, ctx.stream()>>>(
      d, x, argmax);
  TRAINC_CHECK_LAUNCH("maxPool2dArgmaxKernel");
  maxPool2dBackwardFromArgmaxKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0,
                                      ctx.stream()>>>(d, argmax, dy, dx);
  TRAINC_CHECK_LAUNCH("maxPool2dBackwardFromArgmaxKernel");
  return Status();
}

Status avgPool2dBackward(Context &ctxBase, const Pool2dDesc &d,
                         bool countIncludePad, const float *dy, float *dx) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "avgPool2dBackward";
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull(kernel, {{"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPool2dDesc(kernel, d));
  int64_t total = d.n * d.c * d.h * d.w;
  avgPool2dBackwardKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0,
                            ctx.stream()>>>(d, countIncludePad, dy, dx);
  TRAINC_CHECK_LAUNCH("avgPool2dBackwardKernel");
  return Status();
}

} // namespace trainc::cuda
