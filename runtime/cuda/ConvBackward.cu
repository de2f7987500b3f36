//===- ConvBackward.cu - gradients of conv2d on cuDNN ---------------------===//
//
// cudnnConvolutionBackwardData / cudnnConvolutionBackwardFilter, the legacy
// API like conv2d (Conv.cu), with descriptors and algorithm built on the
// first call of a shape and cached in the context.
//
// Asymmetric padding is handled as conv2d handles it: cuDNN pads the
// symmetric part, and the excess of one side is made explicit. For the
// filter gradient the input is copied into a buffer that carries it, as in
// the forward pass; for the data gradient cuDNN writes the gradient of that
// padded buffer and the interior is then copied out into dx.
//
// Algorithms: the _v7 heuristics' best choice that runs in plain fp32 math
// (no TF32, like the forward conv and the GEMM; tensor cores for bf16/f16
// data, which --precision=bf16 gives) within the workspace limit,
// deterministic ones first (the atomics-based variants are kept only as a
// last resort), so gradients are reproducible run to run.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "ConvDescriptors.h"
#include "KernelUtils.cuh"

#include "common/KernelChecks.h"
#include "trainc_rt/kernels.h"

#include <algorithm>
#include <string>

namespace trainc::cuda {
namespace {

using ::trainc::rt::Conv2dDesc;

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

/// values[18] of a conv PlanKey: 0 is conv2d's own plan (Conv.cu leaves it
/// zero), these mark the gradients' plans of the same shape.
enum class Direction : int64_t { BackwardData = 1, BackwardFilter = 2 };

struct ConvBackwardPlan final : CachedPlan, ConvDescriptors {
  cudnnConvolutionBwdDataAlgo_t dataAlgo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  cudnnConvolutionBwdFilterAlgo_t filterAlgo =
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  size_t workspaceBytes = 0;
  cudnnMathType_t mathType = CUDNN_FMA_MATH;
  /// Whether the algorithm search (--cudnn-benchmark) has run for it, and
  /// its key in the choices kept across runs (--cudnn-cache).
  bool searched = false;
  std::string cacheKey;
};

Status noAlgorithm() {
  return Status::error("cuDNN offers no fp32 algorithm for this "
                       "convolution within " +
                       std::to_string(kMaxConvWorkspace >> 20) +
                       " MiB of workspace");
}

/// Runs no kernels (heuristics only), so it is safe under graph capture.
Status chooseAlgorithm(CudaContext &ctx, Direction direction,
                       ConvBackwardPlan &plan, bool half) {
  if (direction == Direction::BackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t
        results[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int returned = 0;
    TRAINC_CUDNN_CALL(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        ctx.cudnn(), plan.filter, plan.output, plan.conv, plan.input,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, results));
    const auto *chosen = pickPerf(results, returned, half, ctx.deterministicConvolutions());
    if (!chosen)
      return noAlgorithm();
    TRAINC_CUDNN_CALL(cudnnSetConvolutionMathType(plan.conv, chosen->mathType));
    plan.dataAlgo = chosen->algo;
    plan.mathType = chosen->mathType;
    TRAINC_CUDNN_CALL(cudnnGetConvolutionBackwardDataWorkspaceSize(
        ctx.cudnn(), plan.filter, plan.output, plan.conv, plan.input,
        plan.dataAlgo, &plan.workspaceBytes));
    return Status();
  }
  cudnnConvolutionBwdFilterAlgoPerf_t
      results[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  int returned = 0;
  TRAINC_CUDNN_CALL(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
      ctx.cudnn(), plan.input, plan.output, plan.conv, plan.filter,
      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, results));
  const auto *chosen = pickPerf(results, returned, half, ctx.deterministicConvolutions());
  if (!chosen)
    return noAlgorithm();
  TRAINC_CUDNN_CALL(cudnnSetConvolutionMathType(plan.conv, chosen->mathType));
  plan.filterAlgo = chosen->algo;
  plan.mathType = chosen->mathType;
  TRAINC_CUDNN_CALL(cudnnGetConvolutionBackwardFilterWorkspaceSize(
      ctx.cudnn(), plan.input, plan.output, plan.conv, plan.filter,
      plan.filterAlgo, &plan.workspaceBytes));
  return Status();
}

Status buildPlan(CudaContext &ctx, const Conv2dDesc &d, Direction direction,
                 cudnnDataType_t type, ConvBackwardPlan &plan) {
  TRAINC_RETURN_IF_ERROR(plan.describe(d, type));
  return chooseAlgorithm(ctx, direction, plan, type != CUDNN_DATA_FLOAT);
}

size_t roundUp256(size_t bytes) { return (bytes + 255) & ~size_t(255); }

/// Checks shared by both gradients, then the cached plan of the shape
/// (built on first use).
Status preparePlan(CudaContext &ctx, const char *kernel, const Conv2dDesc &d,
                   Direction direction, ::trainc::rt::DType dtype,
                   ConvBackwardPlan *&plan) {
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkConv2dDesc(kernel, d));
  // Legacy cuDNN descriptors hold int sizes and strides.
  constexpr int64_t kIntMax = 2147483647;
  int64_t paddedElems = d.n * d.c * (d.h + d.padTop + d.padBottom) *
                        (d.w + d.padLeft + d.padRight);
  if (paddedElems > kIntMax || d.n * d.m * d.outH * d.outW > kIntMax ||
      d.m * (d.c / d.groups) * d.kh * d.kw > kIntMax)
    return invalidArgument(kernel, "a tensor has more than 2^31 elements, "
                                   "beyond cuDNN's 4-D descriptors");
  PlanKey key;
  key.kind = PlanKey::Conv2d;
  key.values = {d.n,       d.c,         d.h,        d.w,         d.m,
                d.kh,      d.kw,        d.strideH,  d.strideW,   d.padTop,
                d.padLeft, d.padBottom, d.padRight, d.dilationH, d.dilationW,
                d.groups,  d.outH,      d.outW,     int64_t(direction),
                int64_t(dtype), d.channelsLast};
  plan = static_cast<ConvBackwardPlan *>(ctx.findPlan(key));
  if (plan)
    return Status();
  auto fresh = std::make_unique<ConvBackwardPlan>();
  Status built = buildPlan(ctx, d, direction, cudnnTypeOf(dtype), *fresh);
  if (!built.ok())
    return Status::error(std::string(kernel) + ": " + built.message());
  fresh->cacheKey = ::trainc::rt::AlgoCache::keyOf(
      direction == Direction::BackwardData ? "data" : "filter",
      std::vector<int64_t>(key.values.begin(), key.values.end()));
  plan = static_cast<ConvBackwardPlan *>(ctx.addPlan(key, std::move(fresh)));
  return Status();
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

namespace {

/// --cudnn-benchmark for a gradient plan (searchAlgorithmOnce).
void searchAlgorithm(CudaContext &ctx, Direction direction, ConvBackwardPlan &plan, bool half,
                     const void *x, const void *w, const void *dy, void *out) {
  if (direction == Direction::BackwardData) {
    searchAlgorithmOnce<cudnnConvolutionBwdDataAlgoPerf_t,
                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
        ctx, plan, plan.dataAlgo, half,
        [&](cudnnConvolutionBwdDataAlgo_t algo, size_t *bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(
              ctx.cudnn(), plan.filter, plan.output, plan.conv, plan.input, algo, bytes);
        },
        [&](cudnnConvolutionBwdDataAlgoPerf_t *results, int *returned, void *scratch) {
          return cudnnFindConvolutionBackwardDataAlgorithmEx(
              ctx.cudnn(), plan.filter, w, plan.output, dy, plan.conv, plan.input, out,
              CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, returned, results, scratch,
              kSearchWorkspace);
        });
    return;
  }
  searchAlgorithmOnce<cudnnConvolutionBwdFilterAlgoPerf_t,
                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
      ctx, plan, plan.filterAlgo, half,
      [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t *bytes) {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            ctx.cudnn(), plan.input, plan.output, plan.conv, plan.filter, algo, bytes);
      },
      [&](cudnnConvolutionBwdFilterAlgoPerf_t *results, int *returned, void *scratch) {
        return cudnnFindConvolutionBackwardFilterAlgorithmEx(
            ctx.cudnn(), plan.input, x, plan.output, dy, plan.conv, plan.filter, out,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, returned, results, scratch,
            kSearchWorkspace);
      });
}


/// What both backward convolutions run with: the plan (its algorithm
/// searched once where the trainer asks), and one library workspace holding
/// the padded input or its gradient (explicit padding only) and then
/// cuDNN's scratch, 256-byte aligned.
struct BackwardLaunch {
  ConvBackwardPlan *plan = nullptr;
  char *scratch = nullptr;
  size_t paddedBytes = 0;
  int64_t paddedElems = 0;
  void *cudnnScratch() const { return plan->workspaceBytes ? scratch + paddedBytes : nullptr; }
};

Status prepareBackward(CudaContext &ctx, const char *kernel, Direction direction,
                       ::trainc::rt::DType dtype, const Conv2dDesc &d, const void *x,
                       const void *w, const void *dy, void *out, BackwardLaunch &launch) {
  TRAINC_RETURN_IF_ERROR(preparePlan(ctx, kernel, d, direction, dtype, launch.plan));
  ConvBackwardPlan &plan = *launch.plan;
  if (ctx.searchConvolutions() && !plan.searched && !plan.explicitPad)
    searchAlgorithm(ctx, direction, plan, dtype != ::trainc::rt::DType::F32, x, w, dy, out);
  const size_t element = dtype == ::trainc::rt::DType::F32 ? 4 : 2;
  launch.paddedElems = d.n * d.c * plan.paddedH * plan.paddedW;
  launch.paddedBytes = plan.explicitPad ? roundUp256(size_t(launch.paddedElems) * element) : 0;
  if (launch.paddedBytes + plan.workspaceBytes > 0)
    TRAINC_RETURN_IF_ERROR(ctx.libraryWorkspace(reinterpret_cast<void **>(&launch.scratch),
                                                launch.paddedBytes + plan.workspaceBytes));
  return Status();
}

Status backwardData(Context &ctxBase, ::trainc::rt::DType dtype, const Conv2dDesc &d,
                    const void *dy, const void *w, void *dx) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "conv2dBackwardData";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(
      kernel, {{"dy", dy}, {"w", w}, {"dx", dx}}));
  BackwardLaunch launch;
  TRAINC_RETURN_IF_ERROR(
      prepareBackward(ctx, kernel, Direction::BackwardData, dtype, d, nullptr, w, dy, dx, launch));
  const ConvBackwardPlan &plan = *launch.plan;
  // With explicit padding cuDNN writes the padded input's gradient, cropped
  // into dx after.
  void *target = plan.explicitPad ? static_cast<void *>(launch.scratch) : dx;
  const float one = 1.0f, zero = 0.0f;
  TRAINC_CUDNN_CALL(cudnnConvolutionBackwardData(
      ctx.cudnn(), &one, plan.filter, w, plan.output, dy, plan.conv, plan.dataAlgo,
      launch.cudnnScratch(), plan.workspaceBytes, &zero, plan.input, target));
  if (plan.explicitPad)
    return movePlanes(ctx, /*pad=*/false, dtype, target, dx, d, plan);
  return Status();
}

Status backwardFilter(Context &ctxBase, ::trainc::rt::DType dtype, const Conv2dDesc &d,
                      const void *x, const void *dy, void *dw) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "conv2dBackwardFilter";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(
      kernel, {{"x", x}, {"dy", dy}, {"dw", dw}}));
  BackwardLaunch launch;
  TRAINC_RETURN_IF_ERROR(prepareBackward(ctx, kernel, Direction::BackwardFilter, dtype, d, x,
                                         nullptr, dy, dw, launch));
  const ConvBackwardPlan &plan = *launch.plan;
  // With explicit padding cuDNN reads the input padded into the workspace.
  const void *input = x;
  if (plan.explicitPad) {
    TRAINC_RETURN_IF_ERROR(movePlanes(ctx, /*pad=*/true, dtype, x, launch.scratch, d, plan));
    input = launch.scratch;
  }
  const float one = 1.0f, zero = 0.0f;
  TRAINC_CUDNN_CALL(cudnnConvolutionBackwardFilter(
      ctx.cudnn(), &one, plan.input, input, plan.output, dy, plan.conv, plan.filterAlgo,
      launch.cudnnScratch(), plan.workspaceBytes, &zero, plan.filter, dw));
  return Status();
}

} // namespace

Status conv2dBackwardData(Context &ctx, const Conv2dDesc &d, const float *dy,
                          const float *w, float *dx) {
  return backwardData(ctx, ::trainc::rt::DType::F32, d, dy, w, dx);
}

Status conv2dBackwardFilter(Context &ctx, const Conv2dDesc &d, const float *x,
                            const float *dy, float *dw) {
  return backwardFilter(ctx, ::trainc::rt::DType::F32, d, x, dy, dw);
}

Status conv2dBackwardDataMixed(Context &ctx, ::trainc::rt::DType type,
                               const Conv2dDesc &d, const void *dy,
                               const void *w, void *dx) {
  TRAINC_RETURN_IF_ERROR(checkHalf("conv2dBackwardData", type));
  return backwardData(ctx, type, d, dy, w, dx);
}

Status conv2dBackwardFilterMixed(Context &ctx, ::trainc::rt::DType type,
                                 const Conv2dDesc &d, const void *x,
                                 const void *dy, void *dw) {
  TRAINC_RETURN_IF_ERROR(checkHalf("conv2dBackwardFilter", type));
  return backwardFilter(ctx, type, d, x, dy, dw);
}

} // namespace trainc::cuda
