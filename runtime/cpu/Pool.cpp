//===- Pool.cpp - max and average pooling over NCHW -----------------------===//
//
// One OpenMP task per (image, channel) plane. Each window's tap range is
// computed once per output row/column and clipped to the input, so the inner
// loops have no bounds checks. Max pooling takes the windows inside the
// input a row of them at a time, vectorized across the windows
// (PoolWindows.h: ResNet's 3x3/2 pool took 0.46 ms a window at a time). Windows may reach into the padding and, in
// ceil mode, past the padded edge; both are clipped (checkPool2dDesc ensures
// every window starts inside the input or the leading padding).
//
//===----------------------------------------------------------------------===//

#include "../common/KernelChecks.h"
#include "ChannelsLast.h"
#include "PoolWindows.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace trainc::cpu {
using namespace ::trainc::rt;

using detail::forEachTap;
using detail::TapRange;
using detail::Windows;

Status maxPool2d(Context &ctx, const Pool2dDesc &d, const float *x, float *y) {
  (void)ctx;
  const char *kernel = "maxPool2d";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkPool2dDesc(kernel, d));
  if (d.channelsLast)
    return viaChannelsFirst({poolInput(d, x, nullptr), poolOutput(d, nullptr, y)},
                            [&](float *const *f) {
                              return maxPool2d(ctx, channelsFirst(d), f[0], f[1]);
                            });
  const Windows windows(d);
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
  windows.forEachRow(
      d, [](int64_t) {},
      [&](int64_t p, int64_t o, const TapRange &r, const TapRange &c) {
        // A window at the edge. Padding never wins a max (ONNX pads
        // MaxPool with -inf); NaN in the window propagates, as in PyTorch.
        const float *in = x + p * inSpatial;
        float best = -std::numeric_limits<float>::infinity();
        forEachTap(d, r, c, [&](int64_t at) {
          if (in[at] > best || in[at] != in[at])
            best = in[at];
        });
        y[p * outSpatial + o] = best;
      },
      [&](int64_t p, int64_t oh, int64_t top, int64_t lo, int64_t hi) {
        const float *in = x + p * inSpatial + top;
        float *out = y + p * outSpatial + oh * d.outW;
        for (int64_t t = lo; t < hi; t += detail::kRowChunk)
          detail::windowRowMaxima(in + (t - lo) * d.strideW, d.kh, d.kw, d.w, d.strideW,
                                  std::min(detail::kRowChunk, hi - t), out + t);
      });
  return Status();
}

Status avgPool2d(Context &ctx, const Pool2dDesc &d, bool countIncludePad,
                 const float *x, float *y) {
  (void)ctx;
  const char *kernel = "avgPool2d";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkPool2dDesc(kernel, d));
  if (d.channelsLast)
    return viaChannelsFirst({poolInput(d, x, nullptr), poolOutput(d, nullptr, y)},
                            [&](float *const *f) {
                              return avgPool2d(ctx, channelsFirst(d), countIncludePad, f[0], f[1]);
                            });
  const Windows windows(d);
  if (windows.allFull(d)) {
    const float divisor = float(d.kh * d.kw);
    detail::forEachFullWindow(d, x, [](int64_t) {}, [&](const float *win, int64_t o) {
      float sum = 0.0f;
      for (int64_t i = 0; i < d.kh; ++i)
        for (int64_t j = 0; j < d.kw; ++j)
          sum += win[i * d.w + j];
      y[o] = sum / divisor;
    });
    return Status();
  }
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
  windows.forEachWindow(
      d, [](int64_t) {},
      [&](int64_t p, int64_t o, const TapRange &r, const TapRange &c) {
        const float *in = x + p * inSpatial;
        float sum = 0.0f;
        forEachTap(d, r, c, [&](int64_t at) { sum += in[at]; });
        const int64_t count = detail::averageCount(r, c, countIncludePad);
        y[p * outSpatial + o] = count ? sum / float(count) : 0.0f;
      });
  return Status();
}

} // namespace trainc::cpu
