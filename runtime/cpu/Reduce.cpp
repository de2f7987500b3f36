//===- Reduce.cpp - sum, mean and max over a middle axis ------------------===//
//
// x is [outer, axis, inner], y is [outer, inner]. As in Softmax.cpp, blocks
// of neighbouring outputs are reduced together so loads stay contiguous when
// inner > 1. Sums accumulate in double: reductions over long axes (a mean
// over a whole feature map) would otherwise lose digits. An f16/bf16 x
// (reduceMixed: a bias gradient under --precision) is widened as it is read,
// so no f32 copy of it is ever stored.
//
//===----------------------------------------------------------------------===//

#include "../common/KernelChecks.h"

#include <algorithm>
#include <limits>

namespace trainc::cpu {
using namespace ::trainc::rt;

namespace {
constexpr int64_t kBlock = 64;

/// x of storage type T (f32, or f16/bf16 widened as it is read).
template <typename T>
Status reduceOf(ReduceKind kind, int64_t outer, int64_t axis, int64_t inner, const T *x,
                float *y) {
  const char *kernel = "reduce";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkPositive(
      kernel, {{"outer", outer}, {"axis", axis}, {"inner", inner}}));
  if (kind != ReduceKind::Sum && kind != ReduceKind::Mean &&
      kind != ReduceKind::Max)
    return Status::error("reduce: invalid kind " +
                         std::to_string(static_cast<int32_t>(kind)));
  int64_t unused;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {outer, axis, inner}, unused));

  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int64_t tasks = outer * blocks;
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t o = t / blocks;
    const int64_t begin = (t % blocks) * kBlock;
    const int64_t width = std::min(kBlock, inner - begin);
    const T *in = x + o * axis * inner + begin;
    float *out = y + o * inner + begin;
    if (kind == ReduceKind::Max) {
      float maxima[kBlock];
      std::fill(maxima, maxima + width,
                -std::numeric_limits<float>::infinity());
      for (int64_t a = 0; a < axis; ++a)
        for (int64_t i = 0; i < width; ++i) {
          float v = float(in[a * inner + i]);
          // NaN propagates, as in PyTorch's max.
          if (v > maxima[i] || v != v)
            maxima[i] = v;
        }
      std::copy(maxima, maxima + width, out);
      continue;
    }
    double sums[kBlock] = {};
    for (int64_t a = 0; a < axis; ++a)
      for (int64_t i = 0; i < width; ++i)
        sums[i] += float(in[a * inner + i]);
    const double divisor = kind == ReduceKind::Mean ? double(axis) : 1.0;
    for (int64_t i = 0; i < width; ++i)
      out[i] = float(sums[i] / divisor);
  }
  return Status();
}

} // namespace

Status reduce(Context &ctx, ReduceKind kind, int64_t outer, int64_t axis,
              int64_t inner, const float *x, float *y) {
  (void)ctx;
  return reduceOf(kind, outer, axis, inner, x, y);
}

Status reduceMixed(Context &ctx, DType type, ReduceKind kind, int64_t outer,
                   int64_t axis, int64_t inner, const void *x, float *y) {
  (void)ctx;
  if (type == DType::BF16)
    return reduceOf(kind, outer, axis, inner, static_cast<const bf16 *>(x), y);
  if (type == DType::F16)
    return reduceOf(kind, outer, axis, inner, static_cast<const f16 *>(x), y);
  return Status::error(std::string("reduce: the mixed-precision entry takes f16 or bf16, got ") +
                       dtypeName(type));
}

} // namespace trainc::cpu
