//===- PoolWindows.h - pooling window ranges, shared by forward and backward ===//

#ifndef TRAINC_RT_CPU_POOLWINDOWS_H
#define TRAINC_RT_CPU_POOLWINDOWS_H

#include "Threading.h"
#include "trainc_rt/kernels.h"

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <limits>
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

/// Whether a window lies whole inside the input with adjacent taps: its
/// taps are in[(r.start + i) * d.w + c.start + j], i < kh, j < kw.
inline bool isFull(const ::trainc::rt::Pool2dDesc &d, const TapRange &r, const TapRange &c) {
  return d.dilationH == 1 && d.dilationW == 1 && r.begin == 0 && r.end == d.kh &&
         c.begin == 0 && c.end == d.kw;
}

/// Tap ranges of every output row and column of a descriptor.
struct Windows {
  std::vector<TapRange> rows, cols;
  /// The output columns [fullBegin, fullEnd) whose windows have all kw
  /// taps inside the input, adjacent (a window slides right with ow, so
  /// they are one range; empty with dilation).
  int64_t fullBegin = 0, fullEnd = 0;
  explicit Windows(const ::trainc::rt::Pool2dDesc &d) {
    for (int64_t oh = 0; oh < d.outH; ++oh)
      rows.push_back(tapRange(oh, d.strideH, d.padTop, d.padBottom, d.kh, d.dilationH, d.h));
    for (int64_t ow = 0; ow < d.outW; ++ow)
      cols.push_back(tapRange(ow, d.strideW, d.padLeft, d.padRight, d.kw, d.dilationW, d.w));
    auto fullCol = [&](const TapRange &c) {
      return d.dilationW == 1 && c.begin == 0 && c.end == d.kw;
    };
    while (fullBegin < d.outW && !fullCol(cols[size_t(fullBegin)]))
      ++fullBegin;
    fullEnd = fullBegin;
    while (fullEnd < d.outW && fullCol(cols[size_t(fullEnd)]))
      ++fullEnd;
  }

  /// Like forEachWindow, a row of windows at a time: in each output row
  /// whose windows have all kh rows of taps inside (dilation 1), the
  /// windows of columns [fullBegin, fullEnd) go to interior(p, oh, top, lo,
  /// hi) as one run, `top` the offset in the plane of window lo's top-left
  /// tap (window lo + t's at top + t * strideW); the others, before and
  /// after, to window(p, o, r, c). Output order within each plane. Without
  /// `runs`, every window goes to window().
  template <class Plane, class Window, class Interior>
  void forEachRow(const ::trainc::rt::Pool2dDesc &d, Plane plane, Window window,
                  Interior interior, bool runs = true) const {
    const int64_t planes = d.n * d.c;
#pragma omp parallel for schedule(static) if (worthThreads(planes * d.h * d.w))
    for (int64_t p = 0; p < planes; ++p) {
      plane(p);
      for (int64_t oh = 0; oh < d.outH; ++oh) {
        const TapRange &r = rows[size_t(oh)];
        const bool fullRow = runs && d.dilationH == 1 && r.begin == 0 && r.end == d.kh;
        const int64_t lo = fullRow ? fullBegin : d.outW, hi = fullRow ? fullEnd : d.outW;
        for (int64_t ow = 0; ow < lo; ++ow)
          window(p, oh * d.outW + ow, r, cols[size_t(ow)]);
        if (lo < hi)
          interior(p, oh, r.start * d.w + cols[size_t(lo)].start, lo, hi);
        for (int64_t ow = hi; ow < d.outW; ++ow)
          window(p, oh * d.outW + ow, r, cols[size_t(ow)]);
      }
    }
  }

  /// Whether every window lies whole inside the input, its taps adjacent
  /// (no padding reached, no dilation): the fast loops of forEachFullWindow.
  bool allFull(const ::trainc::rt::Pool2dDesc &d) const {
    for (const TapRange &r : rows)
      for (const TapRange &c : cols)
        if (!isFull(d, r, c))
          return false;
    return true;
  }

  /// Calls window(p, o, r, c) for every (image, channel) plane p of an
  /// NCHW descriptor (one OpenMP task each, plane(p) first) and each of its
  /// windows in output order: o = oh * outW + ow, with its row and column
  /// tap ranges. No two tasks share a plane, so each writes its own.
  template <class Plane, class Window>
  void forEachWindow(const ::trainc::rt::Pool2dDesc &d, Plane plane, Window window) const {
    const int64_t planes = d.n * d.c;
#pragma omp parallel for schedule(static) if (worthThreads(planes * d.h * d.w))
    for (int64_t p = 0; p < planes; ++p) {
      plane(p);
      for (int64_t oh = 0; oh < d.outH; ++oh)
        for (int64_t ow = 0; ow < d.outW; ++ow)
          window(p, oh * d.outW + ow, rows[oh], cols[ow]);
    }
  }
};

/// For descriptors whose windows are all full (Windows::allFull): calls
/// window(in, o) for every plane's windows in output order, `in` pointing
/// at the window's top-left tap (its taps at in[i * d.w + j], i < kh, j <
/// kw) and `o` the output's offset from the first plane's; plane(p) first,
/// one OpenMP task a plane. No clipping, no tap ranges: loops the compiler
/// unrolls.
template <class Plane, class Window>
void forEachFullWindow(const ::trainc::rt::Pool2dDesc &d, const float *x, Plane plane,
                       Window window) {
  const int64_t planes = d.n * d.c, inSpatial = d.h * d.w, outSpatial = d.outH * d.outW;
  const int64_t outH = d.outH, outW = d.outW, w = d.w, sh = d.strideH, sw = d.strideW;
#pragma omp parallel for schedule(static) if (worthThreads(planes * inSpatial))
  for (int64_t p = 0; p < planes; ++p) {
    plane(p);
    const float *in = x + p * inSpatial;
    for (int64_t oh = 0; oh < outH; ++oh) {
      const float *top = in + oh * sh * w;
      const int64_t o = p * outSpatial + oh * outW;
      for (int64_t ow = 0; ow < outW; ++ow)
        window(top + ow * sw, o + ow);
    }
  }
}

/// The maximum of a full window, NaN where it holds one (PyTorch's max
/// pooling); `nan` says which. No branch on the values (random data would
/// mispredict half of them): a running max and a NaN flag.
/// A float's bits (std::bit_cast before C++20).
inline uint32_t floatBits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

inline float fullWindowMax(const float *win, int64_t kh, int64_t kw, int64_t w, bool &nan) {
  float m = win[0];
  bool seen = false;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      const float v = win[i * w + j];
      m = v > m ? v : m;
      seen |= v != v;
    }
  nan = seen;
  return seen ? std::numeric_limits<float>::quiet_NaN() : m;
}

/// The tap that wins a full window, as its offset from the top-left tap:
/// the first maximum in window order, or the last NaN where the window
/// holds one (PyTorch's max_pool2d_with_indices: a NaN takes it from any
/// number, and a later NaN from an earlier one). Selects, not branches.
inline int64_t fullWindowArgMax(const float *win, int64_t kh, int64_t kw, int64_t w) {
  bool nan;
  const float m = fullWindowMax(win, kh, kw, w, nan);
  // best += (tap - best) & mask: a select the compiler keeps as arithmetic.
  int64_t best = 0;
  if (nan) {
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        const float v = win[i * w + j];
        best += (i * w + j - best) & -static_cast<int64_t>(v != v);
      }
  } else {
    // The running max is the first maximum's own value: the first tap with
    // its bits (+0 and -0 told apart, as the max kept the first of them).
    // Compared as integers, which the compiler does not turn into jumps
    // (a float == needs two flags, and it branched on them).
    const uint32_t bits = floatBits(m);
    for (int64_t i = kh - 1; i >= 0; --i)
      for (int64_t j = kw - 1; j >= 0; --j)
        best += (i * w + j - best) &
                -static_cast<int64_t>(floatBits(win[i * w + j]) == bits);
  }
  return best;
}

/// How many windows of a row the interior kernels take at a time.
inline constexpr int64_t kRowChunk = 64;

/// The maxima of `count` <= kRowChunk full windows side by side, window t's
/// taps at win[i * w + t * stride + j] (i < kh, j < kw): fullWindowMax's
/// values (the same compares in the same order), NaN where a window holds
/// one. The taps go outermost, the windows innermost, so the compares
/// vectorize across the windows where the stride is a constant (Stride 1
/// or 2; 0 takes `stride` as given, and g++ leaves that loop scalar).
template <int64_t Stride>
void rowWindowMaxima(const float *win, int64_t kh, int64_t kw, int64_t w, int64_t stride,
                     int64_t count, float *out) {
  const int64_t step = Stride ? Stride : stride;
  float m[kRowChunk];
  int32_t nan[kRowChunk];
  for (int64_t t = 0; t < count; ++t) {
    m[t] = win[t * step];
    nan[t] = 0;
  }
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      const float *tap = win + i * w + j;
      for (int64_t t = 0; t < count; ++t) {
        const float v = tap[t * step];
        m[t] = v > m[t] ? v : m[t];
        nan[t] |= int32_t(v != v);
      }
    }
  for (int64_t t = 0; t < count; ++t)
    out[t] = nan[t] ? std::numeric_limits<float>::quiet_NaN() : m[t];
}

/// The winning taps of `count` <= kRowChunk full windows side by side (as
/// rowWindowMaxima), as offsets from each window's top-left tap: the taps
/// in window order, a tap taking the window where it is NaN or greater
/// than the best so far, which is fullWindowArgMax's rule (the first
/// maximum; the last NaN). Offsets are int32 (kh * w < 2^31: see
/// rowWindowsFit), which vectorize beside the floats.
template <int64_t Stride>
void rowWindowArgMaxima(const float *win, int64_t kh, int64_t kw, int64_t w, int64_t stride,
                        int64_t count, int32_t *best) {
  const int64_t step = Stride ? Stride : stride;
  float value[kRowChunk];
  for (int64_t t = 0; t < count; ++t) {
    value[t] = win[t * step];
    best[t] = 0;
  }
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      const float *tap = win + i * w + j;
      const int32_t at = int32_t(i * w + j);
      for (int64_t t = 0; t < count; ++t) {
        const float v = tap[t * step];
        const bool take = (v != v) | (v > value[t]);
        value[t] = take ? v : value[t];
        best[t] = take ? at : best[t];
      }
    }
}

/// Whether a window's tap offsets fit rowWindowArgMaxima's int32.
inline bool rowWindowsFit(const ::trainc::rt::Pool2dDesc &d) {
  return d.kh * d.w < (int64_t(1) << 31);
}

/// rowWindowMaxima and rowWindowArgMaxima with the stride a constant
/// where it is 1 or 2.
inline void windowRowMaxima(const float *win, int64_t kh, int64_t kw, int64_t w,
                            int64_t stride, int64_t count, float *out) {
  if (stride == 1)
    rowWindowMaxima<1>(win, kh, kw, w, stride, count, out);
  else if (stride == 2)
    rowWindowMaxima<2>(win, kh, kw, w, stride, count, out);
  else
    rowWindowMaxima<0>(win, kh, kw, w, stride, count, out);
}
inline void windowRowArgMaxima(const float *win, int64_t kh, int64_t kw, int64_t w,
                               int64_t stride, int64_t count, int32_t *best) {
  if (stride == 1)
    rowWindowArgMaxima<1>(win, kh, kw, w, stride, count, best);
  else if (stride == 2)
    rowWindowArgMaxima<2>(win, kh, kw, w, stride, count, best);
  else
    rowWindowArgMaxima<0>(win, kh, kw, w, stride, count, best);
}

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
