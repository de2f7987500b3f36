//===- Softmax.cu - softmax, log-softmax and axis reductions --------------===//
//
// All operate on the middle axis of x [outer, axis, inner]. Two layouts get
// two kernels, chosen by where consecutive addresses lie:
// - inner == 1 (the last axis, the common case): the reduced axis is
//   contiguous, so one warp per row reads it with coalesced loads;
// - inner > 1: consecutive addresses belong to different (outer, inner)
//   columns, so one thread per column walks the axis with stride `inner`
//   and a warp's loads at each step are still one contiguous run.
//
// Softmax is numerically stable: an online (max, sum of exp(x - max)) pass,
// then a pass that writes exp(x - max) / sum (or x - max - log(sum)).
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include "common/KernelChecks.h"
#include "trainc_rt/kernels.h"

namespace trainc::cuda {
namespace {

using ::trainc::rt::ReduceKind;

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

__global__ void softmaxRowsKernel(int64_t rows, int64_t axis, const float *x,
                                  float *y, bool logSoftmax) {
  int lane = threadIdx.x % kWarpSize;
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpSize;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarpSize;
  for (int64_t row = warp; row < rows; row += warps) {
    const float *in = x + row * axis;
    float *out = y + row * axis;
    MaxSum acc{-CUDART_INF_F, 0.0f};
    for (int64_t j = lane; j < axis; j += kWarpSize)
      acc = addToMaxSum(acc, in[j]);
    acc = warpMaxSum(acc);
    float logSum = logf(acc.sum);
    float inv = 1.0f / acc.sum;
    for (int64_t j = lane; j < axis; j += kWarpSize) {
      float shifted = in[j] - acc.max;
      out[j] = logSoftmax ? shifted - logSum : expf(shifted) * inv;
    }
  }
}

__global__ void softmaxColumnsKernel(int64_t outer, int64_t axis, int64_t inner,
                                     const float *x, float *y,
                                     bool logSoftmax) {
  int64_t columns = outer * inner;
  for (int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       col < columns; col += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = col / inner, i = col % inner;
    const float *in = x + o * axis * inner + i;
    float *out = y + o * axis * inner + i;
    MaxSum acc{-CUDART_INF_F, 0.0f};
    for (int64_t j = 0; j < axis; ++j)
      acc = addToMaxSum(acc, in[j * inner]);
    float logSum = logf(acc.sum);
    float inv = 1.0f / acc.sum;
    for (int64_t j = 0; j < axis; ++j) {
      float shifted = in[j * inner] - acc.max;
      out[j * inner] = logSoftmax ? shifted - logSum : expf(shifted) * inv;
    }
  }
}

template <typename T>
__global__ void reduceRowsKernel(ReduceKind kind, int64_t rows, int64_t axis,
                                 const T *x, float *y) {
  int lane = threadIdx.x % kWarpSize;
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpSize;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarpSize;
  bool isMax = kind == ReduceKind::Max;
  for (int64_t row = warp; row < rows; row += warps) {
    const T *in = x + row * axis;
    float acc = isMax ? -CUDART_INF_F : 0.0f;
    for (int64_t j = lane; j < axis; j += kWarpSize) {
      float v = float(in[j]);
      acc = isMax ? maxNaN(v, acc) : acc + v;
    }
    acc = isMax ? warpMax(acc) : warpSum(acc);
    if (lane == 0)
      y[row] = kind == ReduceKind::Mean ? acc / float(axis) : acc;
  }
}

template <typename T>
__global__ void reduceColumnsKernel(ReduceKind kind, int64_t outer,
                                    int64_t axis, int64_t inner, const T *x,
                                    float *y) {
  int64_t columns = outer * inner;
  bool isMax = kind == ReduceKind::Max;
  for (int64_t col = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       col < columns; col += int64_t(gridDim.x) * blockDim.x) {
    int64_t o = col / inner, i = col % inner;
    const T *in = x + o * axis * inner + i;
    float acc = isMax ? -CUDART_INF_F : 0.0f;
    for (int64_t j = 0; j < axis; ++j) {
      float v = float(in[j * inner]);
      acc = isMax ? maxNaN(v, acc) : acc + v;
    }
    y[col] = kind == ReduceKind::Mean ? acc / float(axis) : acc;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

/// Few columns of a very long axis (inner > 1, outer * inner small) leave
/// most of the GPU idle in the column kernel; model shapes do not hit this
/// (attention and classifier softmaxes are over the last axis).
Status softmax(Context &ctxBase, int64_t outer, int64_t axis, int64_t inner,
               const float *x, float *y, bool logSoftmax,
               const ::trainc::rt::NormFusion *fusion) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = logSoftmax ? "logSoftmax" : "softmax";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNoHostFusion(kernel, fusion));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPositive(
      kernel, {{"outer", outer}, {"axis", axis}, {"inner", inner}}));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull(kernel, {{"x", x}, {"y", y}}));
  int64_t total = 0;
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkedProduct(kernel, {outer, axis, inner}, total));
  if (inner == 1) {
    softmaxRowsKernel<<<gridFor(ctx, outer, kWarpsPerBlock), kBlockSize, 0,
                        ctx.stream()>>>(outer, axis, x, y, logSoftmax);
    TRAINC_CHECK_LAUNCH("softmaxRowsKernel");
  } else {
    softmaxColumnsKernel<<<gridFor(ctx, outer * inner, kBlockSize), kBlockSize,
                           0, ctx.stream()>>>(outer, axis, inner, x, y,
                                              logSoftmax);
    TRAINC_CHECK_LAUNCH("softmaxColumnsKernel");
  }
  return Status();
}

namespace {

/// Sums accumulate in fp32 in a fixed order per (grid, shape), so results
/// are deterministic run to run. T: f32, or f16/bf16 widened as read.
template <typename T>
Status reduceOf(Context &ctxBase, ReduceKind kind, int64_t outer, int64_t axis,
                int64_t inner, const T *x, float *y) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "reduce";
  if (kind != ReduceKind::Sum && kind != ReduceKind::Mean &&
      kind != ReduceKind::Max)
    return invalidArgument(kernel, "invalid reduce kind " +
                                       std::to_string(static_cast<int>(kind)));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPositive(
      kernel, {{"outer", outer}, {"axis", axis}, {"inner", inner}}));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull(kernel, {{"x", x}, {"y", y}}));
  int64_t total = 0;
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkedProduct(kernel, {outer, axis, inner}, total));
  if (inner == 1) {
    reduceRowsKernel<<<gridFor(ctx, outer, kWarpsPerBlock), kBlockSize, 0,
                       ctx.stream()>>>(kind, outer, axis, x, y);
    TRAINC_CHECK_LAUNCH("reduceRowsKernel");
  } else {
    reduceColumnsKernel<<<gridFor(ctx, outer * inner, kBlockSize), kBlockSize,
                          0, ctx.stream()>>>(kind, outer, axis, inner, x, y);
    TRAINC_CHECK_LAUNCH("reduceColumnsKernel");
  }
  return Status();
}

} // namespace

Status reduce(Context &ctx, ::trainc::rt::ReduceKind kind, int64_t outer,
              int64_t axis, int64_t inner, const float *x, float *y) {
  return reduceOf(ctx, kind, outer, axis, inner, x, y);
}

Status reduceMixed(Context &ctx, ::trainc::rt::DType type,
                   ::trainc::rt::ReduceKind kind, int64_t outer, int64_t axis,
                   int64_t inner, const void *x, float *y) {
  if (type == ::trainc::rt::DType::BF16)
    return reduceOf(ctx, kind, outer, axis, inner,
                    static_cast<const ::trainc::rt::bf16 *>(x), y);
  if (type == ::trainc::rt::DType::F16)
    return reduceOf(ctx, kind, outer, axis, inner,
                    static_cast<const ::trainc::rt::f16 *>(x), y);
  return invalidArgument("reduce", std::string("the mixed-precision entry takes f16 or bf16, got ") +
                                       ::trainc::rt::dtypeName(type));
}

} // namespace trainc::cuda
