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
  const Windows windows(d);
  if (windows.allFull(d)) {
    // Windows that tile the plane (stride = kernel, no input left over)
    // write each of their taps, 0 and then the winner's dy: no fill first.
    // dx at a window's tap: x's offset is dx's.
    const bool tiles = d.strideH == d.kh && d.strideW == d.kw && d.outH * d.kh == d.h &&
                       d.outW * d.kw == d.w;
    if (tiles) {
      detail::forEachFullWindow(d, x, [](int64_t) {}, [&](const float *win, int64_t o) {
        const int64_t best = detail::fullWindowArgMax(win, d.kh, d.kw, d.w);
        float *taps = dx + (win - x);
        const float g = dy[o];
        for (int64_t i = 0; i < d.kh; ++i)
          for (int64_t j = 0; j < d.kw; ++j)
            taps[i * d.w + j] = 0.0f;
        taps[best] = g; // no compare per tap: it would be a jump
      });
      return Status();
    }
  }
  // Else the plane is zeroed and each window, in output order, adds its dy
  // to its winner; the windows inside the input a row of them at a time,
  // their winners found vectorized across the windows (PoolWindows.h).
  windows.forEachRow(
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
      },
      [&](int64_t p, int64_t oh, int64_t top, int64_t lo, int64_t hi) {
        const float *in = x + p * inSpatial + top;
        float *taps = dx + p * inSpatial + top;
        const float *g = dy + p * outSpatial + oh * d.outW;
        int32_t best[detail::kRowChunk];
        for (int64_t t = lo; t < hi; t += detail::kRowChunk) {
          const int64_t count = std::min(detail::kRowChunk, hi - t);
          detail::windowRowArgMaxima(in + (t - lo) * d.strideW, d.kh, d.kw, d.w, d.strideW,
                                     count, best);
          for (int64_t k = 0; k < count; ++k)
            taps[(t - lo + k) * d.strideW + best[k]] += g[t + k];
        }
      },
      detail::rowWindowsFit(d));
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
  const Windows windows(d);
  if (windows.allFull(d)) {
    const float divisor = float(d.kh * d.kw);
    // Windows read through dx's own plane (forEachFullWindow walks dx as
    // the input: the same offsets).
    detail::forEachFullWindow(
        d, dx, [&](int64_t p) { std::fill(dx + p * inSpatial, dx + (p + 1) * inSpatial, 0.0f); },
        [&](const float *win, int64_t o) {
          float *taps = dx + (win - dx);
          const float share = dy[o] / divisor;
          for (int64_t i = 0; i < d.kh; ++i)
            for (int64_t j = 0; j < d.kw; ++j)
              taps[i * d.w + j] += share;
        });
    return Status();
  }
  windows.forEachWindow(
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
