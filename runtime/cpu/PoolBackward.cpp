//===- PoolBackward.cpp - gradients of max and average pooling ------------===//
//
// One OpenMP task per (image, channel) plane, as in Pool.cpp: a plane's dx
// is zeroed and then each window, in output order, adds its share of dy, so
// no two threads write the same element and the sums have a fixed order.
//
// Max: the window's gradient goes to one tap, the first maximum in window
// order (row by row); a NaN tap takes it from any number, and a later NaN
// from an earlier one; a window of only -inf gives it to its first in-bounds
// tap. That is PyTorch's max_pool2d_with_indices rule, and the tap whose
// value maxPool2d returns. A dilated window whose taps all miss the input
// (possible with padding, e.g. taps at -2 and 1 of a 1-row input) sends
// nothing anywhere.
//
// Average: every in-bounds tap gets dy / count, count being avgPool2d's
// divisor (with countIncludePad the taps inside the padded input, else the
// in-bounds taps). Padding taps get nothing.
//
//===----------------------------------------------------------------------===//

#include "../common/KernelChecks.h"
#include "ChannelsLast.h"
#include "PoolWindows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace trainc::cpu {
using namespace ::trainc::rt;

using detail::TapRange;
using detail::Windows;

Status maxPool2dBackward(Context &ctx, const Pool2dDesc &d, const float *x,
                         const float *dy, float *dx) {
  (void)ctx;
  const char *kernel = "maxPool2dBackward";
  TRAINC_RETURN_IF_ERROR(
      checkNotNull(kernel, {{"x", x}, {"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(checkPool2dDesc(kernel, d));
  if (d.channelsLast)
    return viaChannelsFirst(
        {poolInput(d, x, nullptr), poolOutput(d, dy, nullptr), poolInput(d, nullptr, dx)},
        [&](float *const *f) {
          return maxPool2dBackward(ctx, channelsFirst(d), f[0], f[1], f[2]);
        });
  const Windows windows(d);
  const int64_t planes = d.n * d.c;
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const float *in = x + p * inSpatial;
    const float *grad = dy + p * outSpatial;
    float *out = dx + p * inSpatial;
    std::fill(out, out + inSpatial, 0.0f);
    for (int64_t oh = 0; oh < d.outH; ++oh) {
      const TapRange &r = windows.rows[oh];
      for (int64_t ow = 0; ow < d.outW; ++ow) {
        const TapRange &c = windows.cols[ow];
        // A dilated window can straddle the input with no tap inside it;
        // its output is the constant -inf and gets no gradient.
        if (r.begin == r.end || c.begin == c.end)
          continue;
        int64_t best = (r.start + r.begin * d.dilationH) * d.w + c.start +
                       c.begin * d.dilationW;
        float bestValue = -std::numeric_limits<float>::infinity();
        for (int64_t i = r.begin; i < r.end; ++i) {
          const int64_t line = (r.start + i * d.dilationH) * d.w;
          for (int64_t j = c.begin; j < c.end; ++j) {
            const int64_t at = line + c.start + j * d.dilationW;
            const float v = in[at];
            if (v > bestValue || std::isnan(v)) {
              bestValue = v;
              best = at;
            }
          }
        }
        out[best] += grad[oh * d.outW + ow];
      }
    }
  }
  return Status();
}

Status avgPool2dBackward(Context &ctx, const Pool2dDesc &d,
                         bool countIncludePad, const float *dy, float *dx) {
  (void)ctx;
  const char *kernel = "avgPool2dBackward";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(checkPool2dDesc(kernel, d));
  if (d.channelsLast)
    return viaChannelsFirst({poolOutput(d, dy, nullptr), poolInput(d, nullptr, dx)},
                            [&](float *const *f) {
                              return avgPool2dBackward(ctx, channelsFirst(d), countIncludePad,
                                                       f[0], f[1]);
                            });
  const Windows windows(d);
  const int64_t planes = d.n * d.c;
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const float *grad = dy + p * outSpatial;
    float *out = dx + p * inSpatial;
    std::fill(out, out + inSpatial, 0.0f);
    for (int64_t oh = 0; oh < d.outH; ++oh) {
      const TapRange &r = windows.rows[oh];
      for (int64_t ow = 0; ow < d.outW; ++ow) {
        const TapRange &c = windows.cols[ow];
        int64_t count = countIncludePad
                            ? r.padded * c.padded
                            : (r.end - r.begin) * (c.end - c.begin);
        if (!count)
          continue;
        const float share = grad[oh * d.outW + ow] / float(count);
        for (int64_t i = r.begin; i < r.end; ++i) {
          const int64_t line = (r.start + i * d.dilationH) * d.w + c.start;
          for (int64_t j = c.begin; j < c.end; ++j)
            out[line + j * d.dilationW] += share;
        }
      }
    }
  }
  return Status();
}

} // namespace trainc::cpu
