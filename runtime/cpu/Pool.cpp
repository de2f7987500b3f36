//===- Pool.cpp - max and average pooling over NCHW -----------------------===//
//
// One OpenMP task per (image, channel) plane. Each window's tap range is
// computed once per output row/column and clipped to the input, so the inner
// loops have no bounds checks. Windows may reach into the padding and, in
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
  const int64_t planes = d.n * d.c;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const float *in = x + p * d.h * d.w;
    float *out = y + p * d.outH * d.outW;
    for (int64_t oh = 0; oh < d.outH; ++oh) {
      const TapRange &r = windows.rows[oh];
      for (int64_t ow = 0; ow < d.outW; ++ow) {
        const TapRange &c = windows.cols[ow];
        // Padding never wins a max (ONNX pads MaxPool with -inf); NaN in
        // the window propagates, as in PyTorch.
        float best = -std::numeric_limits<float>::infinity();
        for (int64_t i = r.begin; i < r.end; ++i) {
          const float *line = in + (r.start + i * d.dilationH) * d.w;
          for (int64_t j = c.begin; j < c.end; ++j) {
            float v = line[c.start + j * d.dilationW];
            if (v > best || v != v)
              best = v;
          }
        }
        out[oh * d.outW + ow] = best;
      }
    }
  }
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
  const int64_t planes = d.n * d.c;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const float *in = x + p * d.h * d.w;
    float *out = y + p * d.outH * d.outW;
    for (int64_t oh = 0; oh < d.outH; ++oh) {
      const TapRange &r = windows.rows[oh];
      for (int64_t ow = 0; ow < d.outW; ++ow) {
        const TapRange &c = windows.cols[ow];
        float sum = 0.0f;
        for (int64_t i = r.begin; i < r.end; ++i) {
          const float *line = in + (r.start + i * d.dilationH) * d.w;
          for (int64_t j = c.begin; j < c.end; ++j)
            sum += line[c.start + j * d.dilationW];
        }
        // count_include_pad counts taps in the padding but not those past
        // the padded edge (ceil mode), like PyTorch and ONNX.
        int64_t count = countIncludePad ? r.padded * c.padded
                                        : (r.end - r.begin) * (c.end - c.begin);
        out[oh * d.outW + ow] = count ? sum / float(count) : 0.0f;
      }
    }
  }
  return Status();
}

} // namespace trainc::cpu
