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

using detail::forEachTap;
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
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
  Windows(d).forEachWindow(
      d, [&](int64_t p) { std::fill(dx + p * inSpatial, dx + (p + 1) * inSpatial, 0.0f); },
      [&](int64_t p, int64_t o, const TapRange &r, const TapRange &c) {
        // A dilated window can straddle the input with no tap inside it;
        // its output is the constant -inf and gets no gradient.
        if (r.begin == r.end || c.begin == c.end)
          return;
        const float *in = x + p * inSpatial;
        int64_t best = -1;
        float bestValue = -std::numeric_limits<float>::infinity();
        forEachTap(d, r, c, [&](int64_t at) {
          if (best < 0) // a window of only -inf gives it to its first tap
            best = at;
          if (in[at] > bestValue || std::isnan(in[at])) {
            bestValue = in[at];
            best = at;
          }
        });
        dx[p * inSpatial + best] += dy[p * outSpatial + o];
      });
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
  const int64_t inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
  Windows(d).forEachWindow(
      d, [&](int64_t p) { std::fill(dx + p * inSpatial, dx + (p + 1) * inSpatial, 0.0f); },
      [&](int64_t p, int64_t o, const TapRange &r, const TapRange &c) {
        const int64_t count = detail::averageCount(r, c, countIncludePad);
        if (!count)
          return;
        const float share = dy[p * outSpatial + o] / float(count);
        forEachTap(d, r, c, [&](int64_t at) { dx[p * inSpatial + at] += share; });
      });
  return Status();
}

} // namespace trainc::cpu
