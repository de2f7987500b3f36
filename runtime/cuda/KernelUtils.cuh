//===- KernelUtils.cuh - device helpers of the CUDA kernels ----*- CUDA -*-===//
//
// Warp/block reductions, grid sizing for grid-stride loops and the device
// side of the error record. Kernels index with int64: activations of a
// large batch pass 2^31 elements.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CUDA_KERNELUTILS_CUH
#define TRAINC_RT_CUDA_KERNELUTILS_CUH

#include "CudaContext.h"
#include "common/AlgoCache.h"

#include "trainc_rt/defaults.h"
#include "trainc_rt/kernels.h"
#include "trainc_rt/program.h"

#include <algorithm>
#include <cstdint>
#include <math_constants.h>
#include <string>
#include <vector>

namespace trainc::cuda {

/// Threads per block of the element-wise and warp-per-row kernels: enough
/// warps per block to hide latency, few enough for full occupancy on sm_80+.
inline constexpr int kBlockSize = 256;
inline constexpr int kWarpSize = 32;
inline constexpr int kWarpsPerBlock = kBlockSize / kWarpSize;

/// Blocks for a grid-stride loop over `work` items of `perBlock` each.
/// Capped: past a few waves of blocks, more blocks only add scheduling cost,
/// and the loop covers the rest.
inline unsigned gridFor(const CudaContext &ctx, int64_t work,
                        int64_t perBlock) {
  int64_t blocks = (work + perBlock - 1) / perBlock;
  int64_t sms = ctx.multiProcessorCount() > 0 ? ctx.multiProcessorCount() : 132;
  int64_t cap = sms * 32;
  if (blocks > cap)
    blocks = cap;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

/// cuDNN's data type of a float DType (F32, BF16, F16).
inline cudnnDataType_t cudnnTypeOf(::trainc::rt::DType t) {
  return t == ::trainc::rt::DType::BF16  ? CUDNN_DATA_BFLOAT16
         : t == ::trainc::rt::DType::F16 ? CUDNN_DATA_HALF
                                         : CUDNN_DATA_FLOAT;
}

/// The cuDNN format of a convolution's activations and filter: NHWC (the
/// filter KRSC) for a channels-last descriptor. The explicit-padding path
/// copies NCHW planes, so the layout phase leaves asymmetrically padded
/// convolutions channels-first.
inline cudnnTensorFormat_t layoutOf(const ::trainc::rt::Conv2dDesc &d) {
  return d.channelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

/// The math types a convolution's algorithm is taken from, in order: plain
/// fp32 FMA before TF32 for f32 data; tensor cores first for 16-bit data.
inline std::vector<cudnnMathType_t> convMathOrder(bool half) {
  if (half)
    return {CUDNN_TENSOR_OP_MATH, CUDNN_DEFAULT_MATH, CUDNN_FMA_MATH};
  return {CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH};
}

/// Algorithms needing more cuDNN workspace than this are skipped.
inline constexpr size_t kMaxConvWorkspace = size_t(::trainc::rt::kCudnnMaxWorkspaceBytes);
/// The workspace the algorithm search (--cudnn-benchmark) offers cuDNN.
/// The compiler's --report-memory counts it (trainc_rt/defaults.h).
inline constexpr size_t kSearchWorkspace = size_t(::trainc::rt::kCudnnSearchWorkspaceBytes);

/// The first usable entry of cuDNN's results (the heuristic's in its order
/// of preference, a search's fastest first): status success within the
/// workspace limit, by the math types of convMathOrder, deterministic
/// algorithms first, and with `deterministicOnly` (--deterministic) no
/// other.
template <typename Perf>
const Perf *pickPerf(const Perf *results, int returned, bool half, bool deterministicOnly) {
  for (cudnnMathType_t math : convMathOrder(half))
    for (bool deterministic : {true, false}) {
      if (!deterministic && deterministicOnly)
        continue;
      for (int i = 0; i < returned; ++i)
        if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].mathType == math &&
            (!deterministic || results[i].determinism == CUDNN_DETERMINISTIC) &&
            results[i].memory <= kMaxConvWorkspace)
          return &results[i];
    }
  return nullptr;
}

/// Within this factor of the fastest algorithm a search found, a
/// deterministic one is taken instead (reproducible gradients nearly free).
inline constexpr float kDeterministicSlack = 1.1f;

/// The choice among a search's results (cudnnFind*, timed): the fastest
/// usable algorithm (status success, within the workspace limit, in a math
/// type of convMathOrder, only deterministic ones with `deterministicOnly`),
/// or the fastest deterministic one when it is within kDeterministicSlack of
/// that. For f32 data the first math type of convMathOrder (plain FMA, no
/// TF32) is chosen from whenever it offers any algorithm; 16-bit data takes
/// the fastest over every math type. The heuristic's order (pickPerf) is a
/// preference, not a time: taking its first deterministic entry can cost a
/// factor of several on a gradient (cuDNN's grouped direct kernels), which a
/// search sees.
template <typename Perf>
const Perf *pickTimedPerf(const Perf *results, int returned, bool half, bool deterministicOnly) {
  std::vector<cudnnMathType_t> order = convMathOrder(half);
  auto usable = [&](const Perf &r, cudnnMathType_t math) {
    return r.status == CUDNN_STATUS_SUCCESS && r.time >= 0.0f &&
           r.memory <= kMaxConvWorkspace &&
           (!deterministicOnly || r.determinism == CUDNN_DETERMINISTIC) &&
           (half ? std::find(order.begin(), order.end(), r.mathType) != order.end()
                 : r.mathType == math);
  };
  for (cudnnMathType_t math : order) {
    const Perf *fastest = nullptr, *deterministic = nullptr;
    for (int i = 0; i < returned; ++i) {
      if (!usable(results[i], math))
        continue;
      if (!fastest || results[i].time < fastest->time)
        fastest = &results[i];
      if (results[i].determinism == CUDNN_DETERMINISTIC &&
          (!deterministic || results[i].time < deterministic->time))
        deterministic = &results[i];
    }
    if (deterministic && deterministic->time <= fastest->time * kDeterministicSlack)
      return deterministic;
    if (fastest)
      return fastest;
    if (half)
      break; // every math type was looked at already
  }
  return pickPerf(results, returned, half, deterministicOnly);
}

/// Takes algorithm `algo` in math `math` for a convolution plan (forward or
/// a gradient: `planAlgo` is its algorithm field) when `math` is one
/// convMathOrder allows and cuDNN sizes the workspace (`sizeOf(algo,
/// &bytes)`) within kMaxConvWorkspace; otherwise the plan keeps its
/// algorithm and math. Returns whether it was taken.
template <typename Plan, typename Algo, typename SizeOf>
bool adoptAlgorithm(Plan &plan, Algo &planAlgo, Algo algo, cudnnMathType_t math, bool half,
                    SizeOf sizeOf) {
  std::vector<cudnnMathType_t> allowed = convMathOrder(half);
  size_t bytes = 0;
  if (std::find(allowed.begin(), allowed.end(), math) == allowed.end() ||
      cudnnSetConvolutionMathType(plan.conv, math) != CUDNN_STATUS_SUCCESS)
    return false;
  if (sizeOf(algo, &bytes) != CUDNN_STATUS_SUCCESS || bytes > kMaxConvWorkspace) {
    (void)cudnnSetConvolutionMathType(plan.conv, plan.mathType);
    return false;
  }
  planAlgo = algo;
  plan.mathType = math;
  plan.workspaceBytes = bytes;
  return true;
}

/// --cudnn-benchmark for one plan, on its first call (which a step graph
/// never records): the choice an earlier run kept (--cudnn-cache, under
/// the plan's `cacheKey`) when cuDNN still takes it; else the search,
/// `find(results, &returned, scratch)` (cudnnFind*Ex on the call's own
/// tensors, with kSearchWorkspace of scratch; it writes the call's output,
/// which the call then overwrites), and pickTimedPerf's choice among the
/// results, fastest first, which is kept for later runs. Any failure keeps
/// the heuristic's choice.
template <typename Perf, int Count, typename Plan, typename Algo, typename SizeOf,
          typename Find>
void searchAlgorithmOnce(CudaContext &ctx, Plan &plan, Algo &planAlgo, bool half,
                         SizeOf sizeOf, Find find) {
  plan.searched = true;
  ::trainc::rt::AlgoCache *cache = ctx.algorithmChoices();
  if (cache)
    if (const ::trainc::rt::AlgoChoice *kept = cache->find(plan.cacheKey))
      if (kept->algo >= 0 && kept->algo < Count &&
          adoptAlgorithm(plan, planAlgo, static_cast<Algo>(kept->algo),
                         static_cast<cudnnMathType_t>(kept->mathType), half, sizeOf))
        return;
  void *scratch = nullptr;
  if (!ctx.libraryWorkspace(&scratch, kSearchWorkspace).ok())
    return;
  Perf results[Count];
  int returned = 0;
  if (find(results, &returned, scratch) != CUDNN_STATUS_SUCCESS)
    return;
  const Perf *chosen = pickTimedPerf(results, returned, half, ctx.deterministicConvolutions());
  if (chosen && adoptAlgorithm(plan, planAlgo, chosen->algo, chosen->mathType, half, sizeOf) &&
      cache)
    cache->insert(plan.cacheKey, {int(chosen->algo), int(chosen->mathType)});
}

/// The element type check of the *Mixed convolution entry points.
inline ::trainc::rt::Status checkHalf(const char *kernel, ::trainc::rt::DType t) {
  if (t == ::trainc::rt::DType::BF16 || t == ::trainc::rt::DType::F16)
    return ::trainc::rt::Status();
  return ::trainc::rt::Status::error(std::string(kernel) + ": elements of type " +
                                     ::trainc::rt::dtypeName(t) +
                                     " (the mixed-precision entry takes f16 or bf16)");
}

template <typename T> __device__ __forceinline__ T warpSum(T value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    value += __shfl_xor_sync(0xffffffffu, value, offset);
  return value;
}

/// Where element (sample b, channel ch, spatial position p) of a tensor
/// [n, c, spatial] lies, or of a channels-last [n, spatial, c] when `last`.
__device__ __forceinline__ int64_t elementAt(int64_t b, int64_t ch, int64_t p, int64_t c,
                                             int64_t spatial, bool last) {
  return last ? (b * spatial + p) * c + ch : (b * c + ch) * spatial + p;
}

/// The sample, channel and spatial position of the element at `i` (the
/// inverse of elementAt).
struct ElementIndex {
  int64_t b, ch, p;
};
__device__ __forceinline__ ElementIndex elementIndex(int64_t i, int64_t c, int64_t spatial,
                                                     bool last) {
  if (last)
    return {i / (spatial * c), i % c, (i / c) % spatial};
  return {i / (spatial * c), (i / spatial) % c, i % spatial};
}

/// Max that propagates NaN, like torch.max / ONNX ReduceMax: fmaxf would
/// drop it.
__device__ __forceinline__ float maxNaN(float a, float b) {
  return (a > b || isnan(a)) ? a : b;
}

__device__ __forceinline__ float warpMax(float value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    value = maxNaN(value, __shfl_xor_sync(0xffffffffu, value, offset));
  return value;
}

/// Running (max, sum of exp(x - max)) of an online softmax.
struct MaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ MaxSum mergeMaxSum(MaxSum a, MaxSum b) {
  float m = maxNaN(a.max, b.max);
  // exp(-inf - -inf) is NaN: an empty side (max -inf) contributes nothing.
  float sa = a.max == -CUDART_INF_F ? 0.0f : a.sum * expf(a.max - m);
  float sb = b.max == -CUDART_INF_F ? 0.0f : b.sum * expf(b.max - m);
  return {m, sa + sb};
}

/// Adds one element with a single expf (the general merge needs two).
__device__ __forceinline__ MaxSum addToMaxSum(MaxSum acc, float x) {
  if (x == -CUDART_INF_F) // exp(-inf) adds nothing (and -inf - -inf is NaN).
    return acc;
  if (x <= acc.max) // Also false for NaN x, which the merge propagates.
    return {acc.max, acc.sum + expf(x - acc.max)};
  return mergeMaxSum(acc, MaxSum{x, 1.0f});
}

__device__ __forceinline__ MaxSum warpMaxSum(MaxSum value) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    MaxSum other{__shfl_xor_sync(0xffffffffu, value.max, offset),
                 __shfl_xor_sync(0xffffffffu, value.sum, offset)};
    value = mergeMaxSum(value, other);
  }
  return value;
}

/// Sum over the block; every thread gets the result. `shared` holds one
/// value per warp; blockDim.x must be a multiple of 32. Ends with a barrier
/// so `shared` can be reused at once.
template <typename T>
__device__ __forceinline__ T blockSum(T value, T *shared) {
  int lane = threadIdx.x % kWarpSize;
  int warp = threadIdx.x / kWarpSize;
  int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  value = warpSum(value);
  if (lane == 0)
    shared[warp] = value;
  __syncthreads();
  value = lane < warps ? shared[lane] : T(0);
  value = warpSum(value);
  __syncthreads();
  return value;
}

/// Records the first device error; later ones are dropped so the report
/// names the earliest failure that won the race.
__device__ __forceinline__ void recordDeviceError(DeviceErrorRecord *record,
                                                  DeviceErrorCode code,
                                                  int64_t value, int64_t bound,
                                                  int64_t position) {
  if (atomicCAS(&record->code, 0, static_cast<int32_t>(code)) == 0) {
    record->value = value;
    record->bound = bound;
    record->position = position;
  }
}

} // namespace trainc::cuda

#endif // TRAINC_RT_CUDA_KERNELUTILS_CUH
