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
#include "Threading.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

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
#pragma omp parallel for schedule(static) if (detail::worthThreads(outer * axis * inner))
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

namespace {

/// The sum of squares of x[0, n) (at most one chunk): eight running sums
/// (lane k takes elements k mod 8), which the compiler keeps in vector
/// registers, added in a fixed tree.
double chunkSquares(const float *x, int64_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) {
      const double v = x[i + k];
      lane[k] += v * v;
    }
  for (int k = 0; i < n; ++i, ++k) {
    const double v = x[i];
    lane[k] += v * v;
  }
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

} // namespace

Status globalNorm(Context &ctx, std::initializer_list<const float *> tensors,
                  std::initializer_list<int64_t> sizes, float *y) {
  (void)ctx;
  TRAINC_RETURN_IF_ERROR(checkNotNull("globalNorm", {{"y", y}}));
  if (tensors.size() != sizes.size())
    return Status::error("globalNorm: " + std::to_string(tensors.size()) + " tensors but " +
                         std::to_string(sizes.size()) + " sizes");
  // Fixed chunks of every tensor (independent of the thread count), each
  // summed alone; the chunks' sums then added in order.
  constexpr int64_t kChunk = 1 << 14, kSerialChunks = 8;
  int64_t chunks = 0;
  auto size = sizes.begin();
  for (const float *x : tensors) {
    const int64_t n = *size++;
    if (n < 0 || (n > 0 && !x))
      return Status::error("globalNorm: tensor " + std::to_string(size - sizes.begin() - 1) +
                           (n < 0 ? " has a negative size" : " is null"));
    chunks += (n + kChunk - 1) / kChunk;
  }
  double total = 0;
  if (chunks <= kSerialChunks) {
    // Small: in this thread, in the same order, without a parallel region.
    size = sizes.begin();
    for (const float *x : tensors) {
      const int64_t n = *size++;
      for (int64_t at = 0; at < n; at += kChunk)
        total += chunkSquares(x + at, std::min(kChunk, n - at));
    }
    *y = static_cast<float>(std::sqrt(total));
    return Status();
  }
  struct Chunk {
    const float *x;
    int64_t count;
  };
  std::vector<Chunk> list;
  list.reserve(chunks);
  size = sizes.begin();
  for (const float *x : tensors) {
    const int64_t n = *size++;
    for (int64_t at = 0; at < n; at += kChunk)
      list.push_back({x + at, std::min(kChunk, n - at)});
  }
  std::vector<double> partial(chunks);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c)
    partial[c] = chunkSquares(list[c].x, list[c].count);
  for (double sum : partial)
    total += sum;
  *y = static_cast<float>(std::sqrt(total));
  return Status();
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
