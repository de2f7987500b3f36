//===- Softmax.cpp - softmax and log-softmax over a middle axis -----------===//
//
// x is [outer, axis, inner]. With inner == 1 each softmax is a contiguous
// row: its maximum, exps and sum go in lanes that vectorize (RowMath.h;
// GPT's loss and attention softmaxes took 3-4 ns an element one at a time).
// Otherwise the elements of one softmax are `inner` apart, so a block of
// kBlock neighbouring softmaxes is processed together: every load then
// reads kBlock contiguous floats instead of one per cache line.
//
//===----------------------------------------------------------------------===//

#include "../common/KernelChecks.h"
#include "RowMath.h"
#include "Threading.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trainc::cpu {
using namespace ::trainc::rt;

namespace {
constexpr int64_t kBlock = detail::kMaxColumns;


/// A fused softmax's prologue or epilogue over the elements of one task:
/// softmaxes [begin, begin + width) of outer slice `o`.
void overTask(ElementRangeFn fn, const void *env, int64_t o, int64_t axis, int64_t inner,
              int64_t begin, int64_t width) {
  if (!fn)
    return;
  const int64_t base = o * axis * inner;
  if (width == inner) {
    fn(env, base, base + axis * inner);
    return;
  }
  for (int64_t a = 0; a < axis; ++a)
    fn(env, base + a * inner + begin, base + a * inner + begin + width);
}

/// Softmax or log-softmax of one contiguous row of `axis` elements.
void softmaxRow(const float *in, float *out, int64_t axis, bool logSoftmax) {
  // Subtracting the maximum keeps exp() in (0, 1]: no overflow for large
  // logits, and at least one term of the sum is 1. A NaN is the maximum;
  // a NaN, an inf or a row of -inf makes every output NaN, as in PyTorch
  // (exp(inf - inf)).
  const float maximum = detail::rowMax(in, axis);
  if (!std::isfinite(maximum)) {
    std::fill(out, out + axis, std::numeric_limits<float>::quiet_NaN());
    return;
  }
  if (logSoftmax) {
    // (x - max) - log(sum), in this order (see softmax below).
    const float logSum = float(std::log(detail::rowExpSum(in, axis, maximum, nullptr)));
    for (int64_t a = 0; a < axis; ++a)
      out[a] = (in[a] - maximum) - logSum;
    return;
  }
  const float scale = float(1.0 / detail::rowExpSum(in, axis, maximum, out));
  for (int64_t a = 0; a < axis; ++a)
    out[a] *= scale;
}

} // namespace

Status softmax(Context &ctx, int64_t outer, int64_t axis, int64_t inner,
               const float *x, float *y, bool logSoftmax, const NormFusion *fusion) {
  (void)ctx;
  const char *kernel = logSoftmax ? "logSoftmax" : "softmax";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkPositive(
      kernel, {{"outer", outer}, {"axis", axis}, {"inner", inner}}));
  int64_t unused;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {outer, axis, inner}, unused));

  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t tasks = outer * blocks;
#pragma omp parallel for schedule(static) if (detail::worthThreads(outer * axis * inner))
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t o = t / blocks;
    const int64_t begin = (t % blocks) * kBlock;
    const int64_t width = std::min(kBlock, inner - begin);
    if (fusion)
      overTask(fusion->prologue, fusion->prologueEnv, o, axis, inner, begin, width);
    const float *in = x + o * axis * inner + begin;
    float *out = y + o * axis * inner + begin;
    if (inner == 1) {
      softmaxRow(in, out, axis, logSoftmax);
      if (fusion)
        overTask(fusion->epilogue, fusion->epilogueEnv, o, axis, inner, begin, width);
      continue;
    }
    // Subtracting the maximum keeps exp() in (0, 1]: no overflow for large
    // logits, and at least one term of the sum is 1.
    float maxima[kBlock];
    double sums[kBlock] = {};
    if (detail::columnMaxima(in, axis, inner, width, maxima)) {
      // Every maximum finite: the exps vectorize across the softmaxes.
      for (int64_t a = 0; a < axis; ++a)
        for (int64_t i = 0; i < width; ++i) {
          const float e = detail::shiftedExp(in[a * inner + i], maxima[i]);
          sums[i] += e;
          if (!logSoftmax)
            out[a * inner + i] = e;
        }
    } else {
      // A NaN becomes the maximum (std::max would skip it), so every output
      // of its softmax is NaN, as in PyTorch; an inf or an all -inf
      // softmax is NaN too (exp(inf - inf), exp(-inf - -inf)).
      std::fill(maxima, maxima + width, -std::numeric_limits<float>::infinity());
      for (int64_t a = 0; a < axis; ++a)
        for (int64_t i = 0; i < width; ++i) {
          const float v = in[a * inner + i];
          if (v > maxima[i] || v != v)
            maxima[i] = v;
        }
      for (int64_t a = 0; a < axis; ++a)
        for (int64_t i = 0; i < width; ++i) {
          const float e = std::exp(in[a * inner + i] - maxima[i]);
          sums[i] += e;
          if (!logSoftmax)
            out[a * inner + i] = e;
        }
    }
    if (logSoftmax) {
      // (x - max) - log(sum), in this order: x - max is exact for the
      // large entries, whereas x - (max + log(sum)) would round max +
      // log(sum) to the f32 spacing of max (1e-3 for logits near 1e4).
      float logSums[kBlock];
      for (int64_t i = 0; i < width; ++i)
        logSums[i] = float(std::log(sums[i]));
      for (int64_t a = 0; a < axis; ++a)
        for (int64_t i = 0; i < width; ++i)
          out[a * inner + i] = (in[a * inner + i] - maxima[i]) - logSums[i];
    } else {
      float scale[kBlock];
      for (int64_t i = 0; i < width; ++i)
        scale[i] = float(1.0 / sums[i]);
      for (int64_t a = 0; a < axis; ++a)
        for (int64_t i = 0; i < width; ++i)
          out[a * inner + i] *= scale[i];
    }
    if (fusion)
      overTask(fusion->epilogue, fusion->epilogueEnv, o, axis, inner, begin, width);
  }
  return Status();
}

} // namespace trainc::cpu
