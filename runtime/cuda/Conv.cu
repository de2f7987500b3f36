//===- Conv.cu - 2-D convolution on cuDNN ---------------------------------===//
//
// cudnnConvolutionForward (the legacy API: the cudnn-frontend headers are
// not installed, and the legacy API is still shipped, deprecated, in cuDNN
// 9). Groups map to cudnnSetConvolutionGroupCount, bias to cudnnAddTensor.
//
// cuDNN pads symmetrically. For asymmetric ONNX pads (SAME_UPPER/LOWER) the
// input is copied into a buffer that carries the excess padding of one side,
// and cuDNN pads the symmetric remainder.
//
// Precision: for f32 the algorithm is restricted to plain fp32 math (no
// TF32), like the GEMM, so the CUDA and CPU targets agree to fp32 rounding.
// bf16/f16 data (mixed precision) convolve with f32 compute on tensor cores.
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

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

struct ConvPlan final : CachedPlan, ConvDescriptors {
  cudnnTensorDescriptor_t bias = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t mathType = CUDNN_FMA_MATH;
  size_t workspaceBytes = 0;
  /// Whether the algorithm search (--cudnn-benchmark) has run for it, and
  /// its key in the choices kept across runs (--cudnn-cache).
  bool searched = false;
  std::string cacheKey;

  ~ConvPlan() override {
    if (bias)
      (void)cudnnDestroyTensorDescriptor(bias);
  }
};

/// Picks the heuristic's best algorithm that succeeds in plain fp32 math
/// within the workspace limit (CUDNN_DEFAULT_MATH admits TF32 on sm_80+, so
/// FMA-only results are preferred); for 16-bit data, tensor-core math first.
/// The heuristic runs no kernels, so this is safe under CUDA graph capture.
Status chooseAlgorithm(CudaContext &ctx, ConvPlan &plan, bool half) {
  cudnnConvolutionFwdAlgoPerf_t results[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  TRAINC_CUDNN_CALL(cudnnGetConvolutionForwardAlgorithm_v7(
      ctx.cudnn(), plan.input, plan.filter, plan.conv, plan.output,
      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, results));
  const cudnnConvolutionFwdAlgoPerf_t *chosen =
      pickPerf(results, returned, half, ctx.deterministicConvolutions());
  if (!chosen)
    return Status::error("cuDNN offers no fp32 algorithm for this "
                         "convolution within " +
                         std::to_string(kMaxConvWorkspace >> 20) +
                         " MiB of workspace");
  TRAINC_CUDNN_CALL(cudnnSetConvolutionMathType(plan.conv, chosen->mathType));
  plan.algo = chosen->algo;
  plan.mathType = chosen->mathType;
  // The heuristic's `memory` is an estimate; the exact size comes from here.
  TRAINC_CUDNN_CALL(cudnnGetConvolutionForwardWorkspaceSize(
      ctx.cudnn(), plan.input, plan.filter, plan.conv, plan.output, plan.algo,
      &plan.workspaceBytes));
  return Status();
}

Status buildConvPlan(CudaContext &ctx, const ::trainc::rt::Conv2dDesc &d,
                     cudnnDataType_t type, ConvPlan &plan) {
  TRAINC_RETURN_IF_ERROR(plan.describe(d, type));
  TRAINC_CUDNN_CALL(cudnnCreateTensorDescriptor(&plan.bias));
  TRAINC_CUDNN_CALL(cudnnSetTensor4dDescriptor(
      plan.bias, CUDNN_TENSOR_NCHW, type, 1, int(d.m), 1, 1));
  return chooseAlgorithm(ctx, plan, type != CUDNN_DATA_FLOAT);
}

size_t roundUp256(size_t bytes) { return (bytes + 255) & ~size_t(255); }

/// --cudnn-benchmark for a forward plan (searchAlgorithmOnce).
void searchAlgorithm(CudaContext &ctx, ConvPlan &plan, bool half, const void *x,
                     const void *w, void *y) {
  searchAlgorithmOnce<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
      ctx, plan, plan.algo, half,
      [&](cudnnConvolutionFwdAlgo_t algo, size_t *bytes) {
        return cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn(), plan.input, plan.filter,
                                                       plan.conv, plan.output, algo, bytes);
      },
      [&](cudnnConvolutionFwdAlgoPerf_t *results, int *returned, void *scratch) {
        return cudnnFindConvolutionForwardAlgorithmEx(
            ctx.cudnn(), plan.input, x, plan.filter, w, plan.conv, plan.output, y,
            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, returned, results, scratch, kSearchWorkspace);
      });
}

} // namespace

//===----------------------------------------------------------------------===//
// Launcher
//===----------------------------------------------------------------------===//

namespace {

/// The plan (descriptors, algorithm, workspace size) is built on the first
/// call of a shape and element type and cached in the context; later calls
/// only enqueue.
Status conv2dImpl(Context &ctxBase, ::trainc::rt::DType dtype,
                  const ::trainc::rt::Conv2dDesc &d, const void *x,
                  const void *w, const void *bias, void *y) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkConv2dDesc("conv2d", d));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull("conv2d", {{"x", x}, {"w", w}, {"y", y}}));
  // Legacy cuDNN descriptors hold int sizes and strides.
  constexpr int64_t kIntMax = 2147483647;
  int64_t paddedElems = d.n * d.c * (d.h + d.padTop + d.padBottom) *
                        (d.w + d.padLeft + d.padRight);
  if (paddedElems > kIntMax || d.n * d.m * d.outH * d.outW > kIntMax ||
      d.m * (d.c / d.groups) * d.kh * d.kw > kIntMax)
    return invalidArgument("conv2d", "a tensor has more than 2^31 elements, "
                                     "beyond cuDNN's 4-D descriptors");

  PlanKey key;
  key.kind = PlanKey::Conv2d;
  key.values = {d.n,       d.c,         d.h,        d.w,         d.m,
                d.kh,      d.kw,        d.strideH,  d.strideW,   d.padTop,
                d.padLeft, d.padBottom, d.padRight, d.dilationH, d.dilationW,
                d.groups,  d.outH,      d.outW,     0,           int64_t(dtype),
                d.channelsLast};
  auto *plan = static_cast<ConvPlan *>(ctx.findPlan(key));
  if (!plan) {
    auto fresh = std::make_unique<ConvPlan>();
    Status built = buildConvPlan(ctx, d, cudnnTypeOf(dtype), *fresh);
    if (!built.ok())
      return Status::error("conv2d: " + built.message());
    fresh->cacheKey = ::trainc::rt::AlgoCache::keyOf(
        "fwd", std::vector<int64_t>(key.values.begin(), key.values.end()));
    plan = static_cast<ConvPlan *>(ctx.addPlan(key, std::move(fresh)));
  }

  // The padded path searches nothing: its input is padded into the
  // workspace only below.
  if (ctx.searchConvolutions() && !plan->searched && !plan->explicitPad)
    searchAlgorithm(ctx, *plan, dtype != ::trainc::rt::DType::F32, x, w, y);

  // One library workspace holds the padded input (if any) and then cuDNN's
  // scratch, 256-byte aligned.
  const size_t element = dtype == ::trainc::rt::DType::F32 ? 4 : 2;
  size_t paddedBytes =
      plan->explicitPad
          ? roundUp256(size_t(d.n * d.c * plan->paddedH * plan->paddedW) *
                       element)
          : 0;
  char *scratch = nullptr;
  if (paddedBytes + plan->workspaceBytes > 0)
    TRAINC_RETURN_IF_ERROR(
        ctx.libraryWorkspace(reinterpret_cast<void **>(&scratch),
                             paddedBytes + plan->workspaceBytes));

  const void *input = x;
  if (plan->explicitPad) {
    TRAINC_RETURN_IF_ERROR(movePlanes(ctx, /*pad=*/true, dtype, x, scratch, d, *plan));
    input = scratch;
  }

  const float one = 1.0f, zero = 0.0f;
  TRAINC_CUDNN_CALL(cudnnConvolutionForward(
      ctx.cudnn(), &one, plan->input, input, plan->filter, w, plan->conv,
      plan->algo, plan->workspaceBytes ? scratch + paddedBytes : nullptr,
      plan->workspaceBytes, &zero, plan->output, y));
  if (bias)
    TRAINC_CUDNN_CALL(cudnnAddTensor(ctx.cudnn(), &one, plan->bias, bias, &one,
                                     plan->output, y));
  return Status();
}

} // namespace

Status conv2d(Context &ctx, const ::trainc::rt::Conv2dDesc &d, const float *x,
              const float *w, const float *bias, float *y) {
  return conv2dImpl(ctx, ::trainc::rt::DType::F32, d, x, w, bias, y);
}

Status conv2dMixed(Context &ctx, ::trainc::rt::DType type,
                   const ::trainc::rt::Conv2dDesc &d, const void *x,
                   const void *w, const void *bias, void *y) {
  TRAINC_RETURN_IF_ERROR(checkHalf("conv2d", type));
  return conv2dImpl(ctx, type, d, x, w, bias, y);
}

} // namespace trainc::cuda
