//===- RowMath.h - sums in double lanes, and the exps of softmax rows -----===//
//
// One running double sum waits a double add's latency for every term (a
// batch norm's backward over a U-Net activation of 1M values took 1.8 ms);
// kLanes independent partial sums (term i in lane i % kLanes), added in one
// fixed order at the end, overlap and vectorize. The order depends on the
// count alone, never on the threads: one thread sums a channel or a row
// whole.
//
// A softmax row's exps (softmax, log-softmax, cross entropy) come from
// softmaxExp, a polynomial the compiler inlines and vectorizes. glibc's
// scalar expf costs some 2.5 ns a value and libmvec's is a call per 4
// values through the vector ABI, which does not pay for rows of 16 to 64
// (GPT's attention and loss: 3-4 ns an element either way). The kernel's
// exps need not be those of generated kernels (trainc_expf): a softmax is
// one kernel, fused or not.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CPU_ROWMATH_H
#define TRAINC_RT_CPU_ROWMATH_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace trainc::cpu::detail {

inline constexpr int kLanes = 8;

inline double laneTotal(const double *lane, double tail) {
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7])) +
         tail;
}

/// The sum of term(i) over [0, count) in kLanes lanes.
template <typename Term> double laneSum(int64_t count, Term term) {
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lane[l] += term(i + l);
  double tail = 0;
  for (; i < count; ++i)
    tail += term(i);
  return laneTotal(lane, tail);
}

/// The maximum of x[0, n), n > 0, NaN where it holds one (as PyTorch's
/// softmax: std::max would skip a NaN). In kLanes lanes of selects and a
/// NaN flag, which vectorize (random logits mispredict a branch half the
/// time).
inline float rowMax(const float *x, int64_t n) {
  float lane[kLanes];
  for (int l = 0; l < kLanes; ++l)
    lane[l] = x[0];
  int32_t nan = 0;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float v = x[i + l];
      lane[l] = v > lane[l] ? v : lane[l];
      nan |= int32_t(v != v);
    }
  float m = x[0];
  for (; i < n; ++i) {
    m = x[i] > m ? x[i] : m;
    nan |= int32_t(x[i] != x[i]);
  }
  for (int l = 0; l < kLanes; ++l)
    m = lane[l] > m ? lane[l] : m;
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

/// Below this, shiftedExp gives 0: e^-87 is 1.6e-38, next to f32's smallest
/// normal, and such a term cannot change a softmax's sum, which holds a 1.
inline constexpr float kExpFloor = -87.0f;

/// exp(d) for d in [kExpFloor, 0]: Cephes' expf (S. Moshier), with d = n ln 2
/// + r, |r| <= ln 2 / 2, a degree-6 polynomial in r and 2^n from its bits.
/// Over every float of that range its relative error is at most 8.2e-8
/// (0.7 of f32's 2^-23; NormSoftmaxTest samples it). Round to nearest by
/// adding and subtracting 1.5 * 2^23 (no SSE4.1 round on baseline x86-64).
inline float softmaxExp(float d) {
  constexpr float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f,
                  kLn2Lo = -2.12194440e-4f, kRound = 12582912.0f;
  const float n = (d * kLog2e + kRound) - kRound;
  const float r = (d - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const int32_t bits = (int32_t(n) + 127) << 23; // 2^n, n in [-126, 0]
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/// exp(x - shift) for a finite shift >= x (x finite or -inf): softmaxExp,
/// 0 below kExpFloor. No calls or branches, so that a loop of it
/// vectorizes: the clamp and the zero work on the bits (d <= 0, so a larger
/// d's bits are a smaller integer, and an integer min is no branch; a float
/// select let g++ split the loop into a path per side, which does not
/// vectorize).
inline float shiftedExp(float x, float shift) {
  uint32_t floorBits;
  std::memcpy(&floorBits, &kExpFloor, sizeof floorBits);
  const float d = x - shift;
  uint32_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  const uint32_t clamped = bits < floorBits ? bits : floorBits;
  float c;
  std::memcpy(&c, &clamped, sizeof c);
  const float v = softmaxExp(c);
  uint32_t out;
  std::memcpy(&out, &v, sizeof out);
  out &= -uint32_t(bits <= floorBits); // 0 below the floor
  float e;
  std::memcpy(&e, &out, sizeof e);
  return e;
}

/// e[i] = shiftedExp(x[i], shift) over [0, n): shift is a row's finite
/// maximum.
inline void rowExps(const float *x, int64_t n, float shift, float *e) {
  for (int64_t i = 0; i < n; ++i)
    e[i] = shiftedExp(x[i], shift);
}

/// The most softmaxes columnMaxima takes side by side.
inline constexpr int64_t kMaxColumns = 64;

/// The maxima of `width` softmaxes side by side, element a of softmax i at
/// x[a * stride + i] (a < axis, i < width <= kMaxColumns): true where every maximum
/// is finite (no NaN, inf, or softmax of only -inf), which shiftedExp needs.
inline bool columnMaxima(const float *x, int64_t axis, int64_t stride, int64_t width,
                         float *maxima) {
  int32_t nan[kMaxColumns] = {};
  for (int64_t i = 0; i < width; ++i)
    maxima[i] = x[i];
  for (int64_t a = 1; a < axis; ++a)
    for (int64_t i = 0; i < width; ++i) {
      const float v = x[a * stride + i];
      maxima[i] = v > maxima[i] ? v : maxima[i];
      nan[i] |= int32_t(v != v);
    }
  bool finite = true;
  for (int64_t i = 0; i < width; ++i)
    finite &= !nan[i] && std::isfinite(maxima[i]);
  return finite;
}

/// The sum in double of exp(x[i] - shift) over [0, n) (rowExps' values,
/// in lanes: term i in lane i % kLanes, the last n % kLanes in the tail, as
/// laneSum); `e`, if given, receives them, else a block at a time goes
/// through a buffer on the stack.
inline double rowExpSum(const float *x, int64_t n, float shift, float *e) {
  constexpr int64_t kBlock = 256; // a multiple of kLanes
  float block[kBlock];
  double lane[kLanes] = {}, tail = 0;
  for (int64_t i = 0; i < n; i += kBlock) {
    const int64_t count = std::min(kBlock, n - i);
    float *exps = e ? e + i : block;
    rowExps(x + i, count, shift, exps);
    int64_t j = 0;
    for (; j + kLanes <= count; j += kLanes)
      for (int l = 0; l < kLanes; ++l)
        lane[l] += double(exps[j + l]);
    for (; j < count; ++j) // only in the last block
      tail += double(exps[j]);
  }
  return laneTotal(lane, tail);
}

} // namespace trainc::cpu::detail

#endif // TRAINC_RT_CPU_ROWMATH_H
