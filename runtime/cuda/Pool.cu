//===- Pool.cu - max and average pooling over NCHW ------------------------===//
//
// Own kernels rather than cuDNN pooling: cuDNN has no dilation, pads
// symmetrically and knows no ceil mode, which ONNX MaxPool/AveragePool all
// have. Pooling is bandwidth-bound, so a direct kernel loses little.
//
// One thread per output element, ow fastest: a warp covers consecutive
// outputs of a row, whose windows overlap or abut, so its loads hit the same
// or neighbouring cache lines. Taps of a window are walked row by row for
// the same reason.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include "common/KernelChecks.h"
#include "trainc_rt/kernels.h"

namespace trainc::cuda {
namespace {

using ::trainc::rt::Pool2dDesc;

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Padding taps are skipped (max over what is in bounds), as ONNX and
/// PyTorch define it; NaN propagates. checkPool2dDesc guarantees every
/// window sees at least one input element.
__global__ void maxPool2dKernel(Pool2dDesc d, const float *x, float *y) {
  int64_t total = d.n * d.c * d.outH * d.outW;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    ElementIndex e = elementIndex(i, d.c, d.outH * d.outW, d.channelsLast);
    int64_t ow = e.p % d.outW;
    int64_t oh = e.p / d.outW;
    auto src = [&](int64_t at) {
      return x[elementAt(e.b, e.ch, at, d.c, d.h * d.w, d.channelsLast)];
    };
    int64_t h0 = oh * d.strideH - d.padTop;
    int64_t w0 = ow * d.strideW - d.padLeft;
    float best = -CUDART_INF_F;
    for (int64_t kh = 0; kh < d.kh; ++kh) {
      int64_t ih = h0 + kh * d.dilationH;
      if (ih < 0 || ih >= d.h)
        continue;
      for (int64_t kw = 0; kw < d.kw; ++kw) {
        int64_t iw = w0 + kw * d.dilationW;
        if (iw < 0 || iw >= d.w)
          continue;
        best = maxNaN(src(ih * d.w + iw), best);
      }
    }
    y[i] = best;
  }
}

/// With `countIncludePad` the divisor counts the taps inside the padded
/// input (not those past the end padding that ceil mode adds), which is
/// PyTorch's avg_pool2d rule; otherwise only in-bounds taps count.
__global__ void avgPool2dKernel(Pool2dDesc d, bool countIncludePad,
                                const float *x, float *y) {
  int64_t total = d.n * d.c * d.outH * d.outW;
  int64_t endH = d.h + d.padBottom, endW = d.w + d.padRight;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    ElementIndex e = elementIndex(i, d.c, d.outH * d.outW, d.channelsLast);
    int64_t ow = e.p % d.outW;
    int64_t oh = e.p / d.outW;
    auto src = [&](int64_t at) {
      return x[elementAt(e.b, e.ch, at, d.c, d.h * d.w, d.channelsLast)];
    };
    int64_t h0 = oh * d.strideH - d.padTop;
    int64_t w0 = ow * d.strideW - d.padLeft;
    float sum = 0.0f;
    int64_t inBounds = 0, inPadded = 0;
    for (int64_t kh = 0; kh < d.kh; ++kh) {
      int64_t ih = h0 + kh * d.dilationH;
      if (ih >= endH)
        break;
      bool rowInside = ih >= 0 && ih < d.h;
      for (int64_t kw = 0; kw < d.kw; ++kw) {
        int64_t iw = w0 + kw * d.dilationW;
        if (iw >= endW)
          break;
        ++inPadded;
        if (rowInside && iw >= 0 && iw < d.w) {
          sum += src(ih * d.w + iw);
          ++inBounds;
        }
      }
    }
    int64_t divisor = countIncludePad ? inPadded : inBounds;
    y[i] = sum / float(divisor);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

Status maxPool2d(Context &ctxBase, const Pool2dDesc &d, const float *x,
                 float *y) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPool2dDesc("maxPool2d", d));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull("maxPool2d", {{"x", x}, {"y", y}}));
  int64_t total = d.n * d.c * d.outH * d.outW;
  maxPool2dKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0,
                    ctx.stream()>>>(d, x, y);
  TRAINC_CHECK_LAUNCH("maxPool2dKernel");
  return Status();
}

Status avgPool2d(Context &ctxBase, const Pool2dDesc &d, bool countIncludePad,
                 const float *x, float *y) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPool2dDesc("avgPool2d", d));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull("avgPool2d", {{"x", x}, {"y", y}}));
  int64_t total = d.n * d.c * d.outH * d.outW;
  avgPool2dKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0,
                    ctx.stream()>>>(d, countIncludePad, x, y);
  TRAINC_CHECK_LAUNCH("avgPool2dKernel");
  return Status();
}

} // namespace trainc::cuda
