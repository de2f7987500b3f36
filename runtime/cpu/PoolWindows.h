//===- PoolWindows.h - pooling window ranges, shared by forward and backward ===//

#ifndef TRAINC_RT_CPU_POOLWINDOWS_H
#define TRAINC_RT_CPU_POOLWINDOWS_H

#include "trainc_rt/kernels.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace trainc::cpu::detail {

/// The taps of one window along one axis: k in [begin, end) read input
/// start + k * dilation, all inside [0, size). `padded` counts the taps
/// inside [-padBegin, size + padEnd), the divisor of count_include_pad.
struct TapRange {
  int64_t start, begin, end, padded;
};

inline TapRange tapRange(int64_t out, int64_t stride, int64_t padBegin, int64_t padEnd,
                         int64_t kernel, int64_t dilation, int64_t size) {
  TapRange r;
  r.start = out * stride - padBegin;
  auto firstAtLeast = [&](int64_t bound) { // smallest k: start + k*d >= bound
    int64_t gap = bound - r.start;
    return gap <= 0 ? 0 : (gap + dilation - 1) / dilation;
  };
  r.begin = std::min(kernel, firstAtLeast(0));
  r.end = std::max(r.begin, std::min(kernel, firstAtLeast(size)));
  int64_t paddedBegin = std::min(kernel, firstAtLeast(-padBegin));
  int64_t paddedEnd = std::min(kernel, firstAtLeast(size + padEnd));
  r.padded = std::max<int64_t>(0, paddedEnd - paddedBegin);
  return r;
}

/// Tap ranges of every output row and column of a descriptor.
struct Windows {
  std::vector<TapRange> rows, cols;
  explicit Windows(const ::trainc::rt::Pool2dDesc &d) {
    for (int64_t oh = 0; oh < d.outH; ++oh)
      rows.push_back(tapRange(oh, d.strideH, d.padTop, d.padBottom, d.kh, d.dilationH, d.h));
    for (int64_t ow = 0; ow < d.outW; ++ow)
      cols.push_back(tapRange(ow, d.strideW, d.padLeft, d.padRight, d.kw, d.dilationW, d.w));
  }

  /// Calls window(p, o, r, c) for every (image, channel) plane p of an
  /// NCHW descriptor (one OpenMP task each, plane(p) first) and each of its
  /// windows in output order: o = oh * outW + ow, with its row and column
  /// tap ranges. No two tasks share a plane, so each writes its own.
  template <class Plane, class Window>
  void forEachWindow(const ::trainc::rt::Pool2dDesc &d, Plane plane, Window window) const {
    const int64_t planes = d.n * d.c;
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p) {
      plane(p);
      for (int64_t oh = 0; oh < d.outH; ++oh)
        for (int64_t ow = 0; ow < d.outW; ++ow)
          window(p, oh * d.outW + ow, rows[oh], cols[ow]);
    }
  }
};

/// Calls tap(at) for the in-bounds taps of a window, row by row: `at` is
/// the tap's offset in its H x W plane.
template <class Tap>
inline void forEachTap(const ::trainc::rt::Pool2dDesc &d, const TapRange &r, const TapRange &c,
                       Tap tap) {
  for (int64_t i = r.begin; i < r.end; ++i) {
    const int64_t line = (r.start + i * d.dilationH) * d.w + c.start;
    for (int64_t j = c.begin; j < c.end; ++j)
      tap(line + j * d.dilationW);
  }
}

/// avgPool2d's divisor: with count_include_pad the taps inside the padded
/// input (not those past its edge in ceil mode), else the in-bounds taps,
/// as PyTorch and ONNX.
inline int64_t averageCount(const TapRange &r, const TapRange &c, bool countIncludePad) {
  return countIncludePad ? r.padded * c.padded : (r.end - r.begin) * (c.end - c.begin);
}

} // namespace trainc::cpu::detail

#endif // TRAINC_RT_CPU_POOLWINDOWS_H
