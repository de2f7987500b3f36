//===- Mixed.cu - batch norm and pooling of bf16/f16 tensors on the GPU ---===//
//
// Mixed precision keeps a batch norm's input and output in bf16 (or f16) and
// its statistics, scale and bias in f32, as autocast's cudnn_batch_norm
// does, and pools in the input's type. These entry points widen the 16-bit
// tensors into the library workspace, run the f32 kernels of Norm.cu,
// Pool.cu and PoolBackward.cu and round the result once: the
// same arithmetic as the CPU target (runtime/cpu/Mixed.cpp), at the cost of
// one extra pass over the tensor each way. The GEMMs and convolutions take
// 16-bit data natively (Gemm.cu, Conv.cu, ConvBackward.cu).
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include "common/KernelChecks.h"
#include "trainc_rt/kernels.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace trainc::cuda {
namespace {

using ::trainc::rt::DType;

template <typename From, typename To>
__global__ void convertKernel(const From *in, To *out, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = To(float(in[i]));
}

Status widen(CudaContext &ctx, DType type, const void *in, float *out, int64_t count) {
  unsigned grid = gridFor(ctx, count, kBlockSize);
  if (type == DType::BF16)
    convertKernel<<<grid, kBlockSize, 0, ctx.stream()>>>(
        static_cast<const ::trainc::rt::bf16 *>(in), out, count);
  else
    convertKernel<<<grid, kBlockSize, 0, ctx.stream()>>>(
        static_cast<const ::trainc::rt::f16 *>(in), out, count);
  TRAINC_CHECK_LAUNCH("convertKernel");
  return Status();
}

Status narrow(CudaContext &ctx, DType type, const float *in, void *out, int64_t count) {
  unsigned grid = gridFor(ctx, count, kBlockSize);
  if (type == DType::BF16)
    convertKernel<<<grid, kBlockSize, 0, ctx.stream()>>>(
        in, static_cast<::trainc::rt::bf16 *>(out), count);
  else
    convertKernel<<<grid, kBlockSize, 0, ctx.stream()>>>(
        in, static_cast<::trainc::rt::f16 *>(out), count);
  TRAINC_CHECK_LAUNCH("convertKernel");
  return Status();
}

/// A 16-bit tensor an entry point reads (widened first) or writes (rounded
/// from the f32 kernel's result).
struct Tensor16 {
  const void *in;
  void *out;
  int64_t count;
};

/// Runs `kernel(f32 copies)` on f32 copies of `tensors` in the library
/// workspace (the batch-norm and pooling kernels use none of it), the inputs
/// widened first, then rounds each output into its 16-bit tensor.
template <typename Kernel>
Status viaF32(CudaContext &ctx, const char *name, DType type,
              std::initializer_list<Tensor16> tensors, Kernel &&kernel) {
  TRAINC_RETURN_IF_ERROR(checkHalf(name, type));
  size_t total = 0;
  for (const Tensor16 &t : tensors)
    total += (size_t(t.count) * sizeof(float) + 255) & ~size_t(255);
  void *base = nullptr;
  TRAINC_RETURN_IF_ERROR(ctx.libraryWorkspace(&base, total));
  std::vector<float *> copies;
  size_t offset = 0;
  for (const Tensor16 &t : tensors) {
    float *copy = reinterpret_cast<float *>(static_cast<char *>(base) + offset);
    offset += (size_t(t.count) * sizeof(float) + 255) & ~size_t(255);
    if (t.in)
      TRAINC_RETURN_IF_ERROR(widen(ctx, type, t.in, copy, t.count));
    copies.push_back(copy);
  }
  TRAINC_RETURN_IF_ERROR(kernel(copies.data()));
  size_t i = 0;
  for (const Tensor16 &t : tensors) {
    if (t.out)
      TRAINC_RETURN_IF_ERROR(narrow(ctx, type, copies[i], t.out, t.count));
    ++i;
  }
  return Status();
}

} // namespace

Status batchNormInferenceMixed(Context &ctxBase, DType type, int64_t n, int64_t c,
                               int64_t spatial, const void *x, const float *scale,
                               const float *bias, const float *mean, const float *var,
                               float epsilon, void *y, bool channelsLast) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull("batchNormInference", {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkBatchNormShape("batchNormInference", n, c, spatial));
  const int64_t count = n * c * spatial;
  return viaF32(ctx, "batchNormInference", type, {{x, nullptr, count}, {nullptr, y, count}},
                [&](float *const *f) {
                  return batchNormInference(ctx, n, c, spatial, f[0], scale, bias, mean, var,
                                            epsilon, f[1], channelsLast);
                });
}

Status batchNormTrainingMixed(Context &ctxBase, DType type, int64_t n, int64_t c,
                              int64_t spatial, const void *x, const float *scale,
                              const float *bias, const float *runningMean,
                              const float *runningVar, const float *mask, float epsilon,
                              float momentum, void *y, float *newMean, float *newVar,
                              bool channelsLast) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull("batchNormTraining", {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkBatchNormShape("batchNormTraining", n, c, spatial));
  const int64_t count = n * c * spatial;
  return viaF32(ctx, "batchNormTraining", type, {{x, nullptr, count}, {nullptr, y, count}},
                [&](float *const *f) {
                  return batchNormTraining(ctx, n, c, spatial, f[0], scale, bias, runningMean,
                                           runningVar, mask, epsilon, momentum, f[1], newMean,
                                           newVar, channelsLast);
                });
}

Status batchNormBackwardMixed(Context &ctxBase, DType type, int64_t n, int64_t c,
                              int64_t spatial, const void *x, const float *scale,
                              const void *dy, const float *mask, float epsilon, void *dx,
                              float *dscale, float *dbias, bool channelsLast) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull("batchNormBackward",
                                                    {{"x", x}, {"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkBatchNormShape("batchNormBackward", n, c, spatial));
  const int64_t count = n * c * spatial;
  return viaF32(ctx, "batchNormBackward", type,
                {{x, nullptr, count}, {dy, nullptr, count}, {nullptr, dx, count}},
                [&](float *const *f) {
                  return batchNormBackward(ctx, n, c, spatial, f[0], scale, f[1], mask,
                                           epsilon, f[2], dscale, dbias, channelsLast);
                });
}

Status maxPool2dMixed(Context &ctxBase, DType type, const ::trainc::rt::Pool2dDesc &d,
                      const void *x, void *y) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull("maxPool2d", {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPool2dDesc("maxPool2d", d));
  return viaF32(ctx, "maxPool2d", type,
                {{x, nullptr, poolInputCount(d)}, {nullptr, y, poolOutputCount(d)}},
                [&](float *const *f) { return maxPool2d(ctx, d, f[0], f[1]); });
}

Status avgPool2dMixed(Context &ctxBase, DType type, const ::trainc::rt::Pool2dDesc &d,
                      bool countIncludePad, const void *x, void *y) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull("avgPool2d", {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPool2dDesc("avgPool2d", d));
  return viaF32(ctx, "avgPool2d", type,
                {{x, nullptr, poolInputCount(d)}, {nullptr, y, poolOutputCount(d)}},
                [&](float *const *f) { return avgPool2d(ctx, d, countIncludePad, f[0], f[1]); });
}

Status maxPool2dBackwardMixed(Context &ctxBase, DType type, const ::trainc::rt::Pool2dDesc &d,
                              const void *x, const void *dy, void *dx) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull("maxPool2dBackward", {{"x", x}, {"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPool2dDesc("maxPool2dBackward", d));
  return viaF32(ctx, "maxPool2dBackward", type,
                {{x, nullptr, poolInputCount(d)}, {dy, nullptr, poolOutputCount(d)},
                 {nullptr, dx, poolInputCount(d)}},
                [&](float *const *f) { return maxPool2dBackward(ctx, d, f[0], f[1], f[2]); });
}

Status avgPool2dBackwardMixed(Context &ctxBase, DType type, const ::trainc::rt::Pool2dDesc &d,
                              bool countIncludePad, const void *dy, void *dx) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull("avgPool2dBackward", {{"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPool2dDesc("avgPool2dBackward", d));
  return viaF32(ctx, "avgPool2dBackward", type,
                {{dy, nullptr, poolOutputCount(d)}, {nullptr, dx, poolInputCount(d)}},
                [&](float *const *f) {
                  return avgPool2dBackward(ctx, d, countIncludePad, f[0], f[1]);
                });
}

} // namespace trainc::cuda
