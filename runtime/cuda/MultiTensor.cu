//===- MultiTensor.cu - kernels over many tensors at once -----------------===//
//
// Context::lerpTensors (the trainer's EMA and SWA averages move toward the
// parameters after an optimizer step) and globalNorm (a step's total
// gradient norm). The tensors go to the kernels by value, up to
// kTensorsPerLaunch at a time (the pointer lists fit the 4 KiB of kernel
// parameters, as in apex's multi_tensor_apply), so N tensors take
// ceil(N / kTensorsPerLaunch) launches, not N, and a CUDA graph records
// the lists with the launch.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include "common/KernelChecks.h"
#include "trainc_rt/lerp.h"

#include <algorithm>
#include <string>
#include <vector>

namespace trainc::cuda {
namespace {

constexpr int kTensorsPerLaunch = 64;

struct LerpList {
  float *averages[kTensorsPerLaunch];
  const float *values[kTensorsPerLaunch];
  int64_t sizes[kTensorsPerLaunch];
  int count;
};

__global__ void lerpTensorsKernel(LerpList list, float weight) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int t = 0; t < list.count; ++t) {
    float *a = list.averages[t];
    const float *v = list.values[t];
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < list.sizes[t];
         i += stride)
      a[i] = ::trainc::rt::lerpTowards(a[i], v[i], weight);
  }
}

/// globalNorm's chunks: each block sums the squares of one chunk of
/// kNormChunk elements of one tensor, in double, into partial[chunk].
constexpr int64_t kNormChunk = 1 << 14;

struct NormList {
  const float *x[kTensorsPerLaunch];
  int64_t size[kTensorsPerLaunch];
  /// The index (in `partial`) of each tensor's first chunk.
  int64_t firstChunk[kTensorsPerLaunch];
  int count;
};

__global__ void sumSquaresKernel(NormList list, int64_t chunks, double *partial) {
  __shared__ double shared[kWarpsPerBlock];
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    // The tensor of chunk c (relative to the list's first), and its part.
    const int64_t global = list.firstChunk[0] + c;
    int t = 0;
    while (t + 1 < list.count && list.firstChunk[t + 1] <= global)
      ++t;
    const int64_t begin = (global - list.firstChunk[t]) * kNormChunk;
    const int64_t end = min(begin + kNormChunk, list.size[t]);
    double sum = 0;
    for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
      const double v = list.x[t][i];
      sum += v * v;
    }
    sum = blockSum(sum, shared);
    if (threadIdx.x == 0)
      partial[global] = sum;
  }
}

__global__ void normOfPartialsKernel(const double *partial, int64_t chunks, float *y) {
  __shared__ double shared[kWarpsPerBlock];
  double sum = 0;
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x)
    sum += partial[c];
  sum = blockSum(sum, shared);
  if (threadIdx.x == 0)
    *y = static_cast<float>(sqrt(sum));
}

} // namespace

Status globalNorm(Context &ctxBase, std::initializer_list<const float *> tensors,
                  std::initializer_list<int64_t> sizes, float *y) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull("globalNorm", {{"y", y}}));
  if (tensors.size() != sizes.size())
    return invalidArgument("globalNorm", std::to_string(tensors.size()) + " tensors but " +
                                             std::to_string(sizes.size()) + " sizes");
  std::vector<const float *> xs(tensors);
  std::vector<int64_t> ns(sizes), first(ns.size() + 1, 0);
  for (size_t t = 0; t < ns.size(); ++t) {
    if (ns[t] < 0 || (ns[t] > 0 && !xs[t]))
      return invalidArgument("globalNorm", "tensor " + std::to_string(t) +
                                               (ns[t] < 0 ? " has a negative size" : " is null"));
    first[t + 1] = first[t] + (ns[t] + kNormChunk - 1) / kNormChunk;
  }
  const int64_t chunks = first.back();
  double *partial = nullptr;
  TRAINC_RETURN_IF_ERROR(ctx.libraryWorkspace(reinterpret_cast<void **>(&partial),
                                              std::max<int64_t>(chunks, 1) * sizeof(double)));
  for (size_t at = 0; at < xs.size(); at += kTensorsPerLaunch) {
    NormList list{};
    list.count = static_cast<int>(std::min<size_t>(kTensorsPerLaunch, xs.size() - at));
    for (int t = 0; t < list.count; ++t) {
      list.x[t] = xs[at + t];
      list.size[t] = ns[at + t];
      list.firstChunk[t] = first[at + t];
    }
    const int64_t launchChunks = first[at + list.count] - first[at];
    if (launchChunks == 0)
      continue;
    sumSquaresKernel<<<static_cast<unsigned>(std::min<int64_t>(launchChunks, 65535)),
                       kBlockSize, 0, ctx.stream()>>>(list, launchChunks, partial);
    TRAINC_RETURN_IF_ERROR(checkLaunch("globalNorm", "sumSquaresKernel"));
  }
  normOfPartialsKernel<<<1, kBlockSize, 0, ctx.stream()>>>(partial, chunks, y);
  return checkLaunch("globalNorm", "normOfPartialsKernel");
}

Status CudaContext::lerpTensors(float *const *averages, const float *const *values,
                                const int64_t *sizes, int count, float weight) {
  for (int first = 0; first < count; first += kTensorsPerLaunch) {
    LerpList list{};
    list.count = std::min(kTensorsPerLaunch, count - first);
    int64_t largest = 0;
    for (int t = 0; t < list.count; ++t) {
      if ((!averages[first + t] || !values[first + t]) && sizes[first + t] > 0)
        return invalidArgument("lerpTensors", "tensor " + std::to_string(first + t) +
                                                  " is null");
      list.averages[t] = averages[first + t];
      list.values[t] = values[first + t];
      list.sizes[t] = sizes[first + t];
      largest = std::max(largest, sizes[first + t]);
    }
    if (largest == 0)
      continue;
    lerpTensorsKernel<<<gridFor(*this, largest, kBlockSize), kBlockSize, 0, computeStream>>>(
        list, weight);
    TRAINC_RETURN_IF_ERROR(checkLaunch("lerpTensors", "lerpTensorsKernel"));
  }
  return Status();
}

} // namespace trainc::cuda
