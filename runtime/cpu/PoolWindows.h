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
};

} // namespace trainc::cpu::detail

#endif // TRAINC_RT_CPU_POOLWINDOWS_H
