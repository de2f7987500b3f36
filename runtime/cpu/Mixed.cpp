//===- Mixed.cpp - the f16/bf16 library kernels of the CPU target ---------===//
//
// GEMMs with bf16 operands and the convolution forward and backward data
// run on oneDNN in their own type where it has a kernel for them (AVX-512,
// AVX512-BF16's dot products; DnnlMatmul.cpp, Dnnl.h). Otherwise, and for
// the rest (f16, small GEMMs, the filter gradient: see Dnnl.h), the 16-bit
// operands are widened to f32 (exactly), the f32 kernel runs, and a 16-bit
// result is rounded to nearest even once: the arithmetic of a tensor-core
// GEMM with f32 accumulation (Debian's OpenBLAS 0.3.21 has no sbgemm).
//
// The staging buffers are this thread's own and separate from the context's
// workspace, which the f32 convolution uses for im2col.
//
//===----------------------------------------------------------------------===//

#include "../common/KernelChecks.h"
#include "Blas.h"
#include "Dnnl.h"
#include "trainc_rt/kernels.h"

#include <initializer_list>
#include <string>
#include <vector>

namespace trainc::cpu {
using namespace ::trainc::rt;

namespace {

bool isHalf(DType t) { return t == DType::BF16 || t == DType::F16; }

/// Widens `count` elements of `type` (F32, BF16 or F16) into `out`.
void widen(DType type, const void *in, float *out, int64_t count) {
  if (type == DType::F32) {
    const float *src = static_cast<const float *>(in);
#pragma omp parallel for schedule(static) if (count > (int64_t(1) << 16))
    for (int64_t i = 0; i < count; ++i)
      out[i] = src[i];
  } else if (type == DType::BF16) {
    const bf16 *src = static_cast<const bf16 *>(in);
#pragma omp parallel for schedule(static) if (count > (int64_t(1) << 16))
    for (int64_t i = 0; i < count; ++i)
      out[i] = src[i];
  } else {
    const f16 *src = static_cast<const f16 *>(in);
#pragma omp parallel for schedule(static) if (count > (int64_t(1) << 16))
    for (int64_t i = 0; i < count; ++i)
      out[i] = src[i];
  }
}

/// Rounds `count` f32 elements into `out` of type BF16 or F16.
void narrow(DType type, const float *in, void *out, int64_t count) {
  if (type == DType::BF16) {
    bf16 *dst = static_cast<bf16 *>(out);
#pragma omp parallel for schedule(static) if (count > (int64_t(1) << 16))
    for (int64_t i = 0; i < count; ++i)
      dst[i] = in[i];
  } else {
    f16 *dst = static_cast<f16 *>(out);
#pragma omp parallel for schedule(static) if (count > (int64_t(1) << 16))
    for (int64_t i = 0; i < count; ++i)
      dst[i] = in[i];
  }
}

/// This thread's f32 copy number `slot` of a 16-bit operand.
float *staging(int slot, int64_t count) {
  thread_local std::vector<float> buffers[5];
  std::vector<float> &buffer = buffers[slot];
  if (buffer.size() < size_t(count))
    buffer.resize(size_t(count));
  return buffer.data();
}

/// A 16-bit tensor an entry point reads (widened first) or writes (rounded
/// from the f32 kernel's result).
struct Tensor16 {
  const void *in;
  void *out;
  int64_t count;
};

/// Runs `kernel(f32 copies)` on f32 copies of `tensors` in order (the
/// inputs widened, the outputs written by the kernel), then rounds each
/// output into its 16-bit tensor. A null tensor (an absent bias) passes null.
template <typename Kernel>
Status viaF32(const char *name, DType type, std::initializer_list<Tensor16> tensors,
              Kernel &&kernel) {
  if (!isHalf(type))
    return Status::error(std::string(name) + ": elements of type " + dtypeName(type) +
                         " (the mixed-precision entry takes f16 or bf16)");
  std::vector<float *> copies;
  int slot = 0;
  for (const Tensor16 &t : tensors) {
    if (!t.in && !t.out) {
      copies.push_back(nullptr);
      continue;
    }
    float *copy = staging(slot++, t.count);
    if (t.in)
      widen(type, t.in, copy, t.count);
    copies.push_back(copy);
  }
  TRAINC_RETURN_IF_ERROR(kernel(copies.data()));
  size_t i = 0;
  for (const Tensor16 &t : tensors) {
    if (t.out)
      narrow(type, copies[i], t.out, t.count);
    ++i;
  }
  return Status();
}

/// Elements a (batched, strided) row-major matrix spans.
int64_t extent(int64_t rows, int64_t cols, int64_t ld, int64_t stride, int64_t batch) {
  return (batch - 1) * stride + (rows - 1) * ld + cols;
}

Status checkTypes(const char *kernel, DType operands, DType result, bool resultMayBeF32) {
  if (!isHalf(operands))
    return Status::error(std::string(kernel) + ": operands of type " + dtypeName(operands) +
                         " (the mixed-precision entry takes f16 or bf16)");
  if (result != operands && !(resultMayBeF32 && result == DType::F32))
    return Status::error(std::string(kernel) + ": a result of type " + dtypeName(result) +
                         " for " + dtypeName(operands) + " operands");
  return Status();
}

/// The blocks of a GEMM with bf16 operands: oneDNN's bf16 matmul, or
/// (where oneDNN declines a block's shape or strides) the block's operands
/// widened for sgemmSerial.
const SerialGemm &bf16Gemm() {
  static const SerialGemm kernel{
      sizeof(bf16), [](bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                       const void *a, int64_t lda, const void *b, int64_t ldb, float beta,
                       float *c, int64_t ldc) {
        if (dnnl_matmul::gemmSerial(DType::BF16, transA, transB, m, n, k, alpha, a, lda, b, ldb,
                                    beta, c, ldc))
          return;
        int64_t countA = extent(transA ? k : m, transA ? m : k, lda, 0, 1);
        int64_t countB = extent(transB ? n : k, transB ? k : n, ldb, 0, 1);
        float *a32 = staging(3, countA), *b32 = staging(4, countB);
        widen(DType::BF16, a, a32, countA);
        widen(DType::BF16, b, b32, countB);
        sgemmSerial(transA, transB, m, n, k, alpha, a32, lda, b32, ldb, beta, c, ldc);
      }};
  return kernel;
}

} // namespace

Status gemmMixed(Context &ctx, DType ab, DType c, bool transA, bool transB, int64_t m,
                 int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
                 int64_t strideA, const void *b, int64_t ldb, int64_t strideB, float beta,
                 void *cOut, int64_t ldc, int64_t strideC, int64_t batch,
                 const GemmEpilogue *epilogue) {
  const char *kernel = epilogue ? "gemmEpilogue" : "gemm";
  TRAINC_RETURN_IF_ERROR(checkTypes(kernel, ab, c, /*resultMayBeF32=*/true));
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"a", a}, {"b", b}, {"c", cOut}}));
  TRAINC_RETURN_IF_ERROR(
      checkPositive(kernel, {{"m", m}, {"n", n}, {"k", k}, {"batch", batch}}));
  if (lda <= 0 || ldb <= 0 || ldc <= 0 || strideA < 0 || strideB < 0 || strideC < 0)
    return Status::error(std::string(kernel) + ": leading dimensions and strides");
  if (epilogue && epilogue->range && c != DType::F32)
    return Status::error(std::string(kernel) + ": a range function needs an f32 C");
  (void)ctx;
  float *c32 = static_cast<float *>(cOut);
  int64_t countC = extent(m, n, ldc, strideC, batch);
  if (c != DType::F32) {
    c32 = staging(2, countC);
    if (!epilogue && beta != 0.0f)
      widen(c, cOut, c32, countC);
  }
  // bf16 operands go to oneDNN as they are where it has a fast kernel and
  // the GEMM is large enough (a choice by shape: the same for every call);
  // otherwise they are widened to f32 (exactly) for the f32 blocks. The
  // checks of gemmWith see the shapes against the leading dimensions.
  const void *aIn = a, *bIn = b;
  const SerialGemm *serial = &bf16Gemm();
  if (ab != DType::BF16 || !dnnl_matmul::hasFastBf16() || !dnnl_matmul::worthIt(m, n, k)) {
    int64_t countA = extent(transA ? k : m, transA ? m : k, lda, strideA, batch);
    int64_t countB = extent(transB ? n : k, transB ? k : n, ldb, strideB, batch);
    float *a32 = staging(0, countA), *b32 = staging(1, countB);
    widen(ab, a, a32, countA);
    widen(ab, b, b32, countB);
    aIn = a32;
    bIn = b32;
    serial = &f32Gemm();
  }
  Status status =
      epilogue ? gemmEpilogueWith(*serial, transA, transB, m, n, k, aIn, lda, strideA, bIn, ldb,
                                  strideB, c32, ldc, strideC, batch, *epilogue)
               : gemmWith(*serial, transA, transB, m, n, k, alpha, aIn, lda, strideA, bIn, ldb,
                          strideB, beta, c32, ldc, strideC, batch);
  TRAINC_RETURN_IF_ERROR(status);
  if (c != DType::F32)
    narrow(c, c32, cOut, countC);
  return Status();
}

Status conv2dMixed(Context &ctx, DType type, const Conv2dDesc &d, const void *x,
                   const void *w, const void *bias, void *y) {
  TRAINC_RETURN_IF_ERROR(checkNotNull("conv2d", {{"x", x}, {"w", w}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkConv2dDesc("conv2d", d));
  if (dnnl_conv::enabled()) {
    bool ran = false;
    TRAINC_RETURN_IF_ERROR(dnnl_conv::forward(type, d, x, w, bias, y, ran));
    if (ran)
      return Status();
  }
  return viaF32("conv2d", type,
                {{x, nullptr, inputCount(d)}, {w, nullptr, weightCount(d)},
                 {bias, nullptr, bias ? d.m : 0}, {nullptr, y, outputCount(d)}},
                [&](float *const *f) { return conv2d(ctx, d, f[0], f[1], f[2], f[3]); });
}

Status conv2dBackwardDataMixed(Context &ctx, DType type, const Conv2dDesc &d,
                               const void *dy, const void *w, void *dx) {
  TRAINC_RETURN_IF_ERROR(
      checkNotNull("conv2dBackwardData", {{"dy", dy}, {"w", w}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(checkConv2dDesc("conv2dBackwardData", d));
  if (dnnl_conv::enabled()) {
    bool ran = false;
    TRAINC_RETURN_IF_ERROR(dnnl_conv::backwardData(type, d, dy, w, dx, ran));
    if (ran)
      return Status();
  }
  return viaF32("conv2dBackwardData", type,
                {{dy, nullptr, outputCount(d)}, {w, nullptr, weightCount(d)},
                 {nullptr, dx, inputCount(d)}},
                [&](float *const *f) { return conv2dBackwardData(ctx, d, f[0], f[1], f[2]); });
}

Status conv2dBackwardFilterMixed(Context &ctx, DType type, const Conv2dDesc &d,
                                 const void *x, const void *dy, void *dw) {
  TRAINC_RETURN_IF_ERROR(
      checkNotNull("conv2dBackwardFilter", {{"x", x}, {"dy", dy}, {"dw", dw}}));
  TRAINC_RETURN_IF_ERROR(checkConv2dDesc("conv2dBackwardFilter", d));
  return viaF32("conv2dBackwardFilter", type,
                {{x, nullptr, inputCount(d)}, {dy, nullptr, outputCount(d)},
                 {nullptr, dw, weightCount(d)}},
                [&](float *const *f) { return conv2dBackwardFilter(ctx, d, f[0], f[1], f[2]); });
}

Status batchNormInferenceMixed(Context &ctx, DType type, int64_t n, int64_t c,
                               int64_t spatial, const void *x, const float *scale,
                               const float *bias, const float *mean, const float *var,
                               float epsilon, void *y, bool channelsLast) {
  TRAINC_RETURN_IF_ERROR(checkNotNull("batchNormInference", {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkBatchNormShape("batchNormInference", n, c, spatial));
  const int64_t count = n * c * spatial;
  return viaF32("batchNormInference", type, {{x, nullptr, count}, {nullptr, y, count}},
                [&](float *const *f) {
                  return batchNormInference(ctx, n, c, spatial, f[0], scale, bias, mean, var,
                                            epsilon, f[1], channelsLast);
                });
}

Status batchNormTrainingMixed(Context &ctx, DType type, int64_t n, int64_t c, int64_t spatial,
                              const void *x, const float *scale, const float *bias,
                              const float *runningMean, const float *runningVar,
                              const float *mask, float epsilon, float momentum, void *y,
                              float *newMean, float *newVar, bool channelsLast) {
  TRAINC_RETURN_IF_ERROR(checkNotNull("batchNormTraining", {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkBatchNormShape("batchNormTraining", n, c, spatial));
  const int64_t count = n * c * spatial;
  return viaF32("batchNormTraining", type, {{x, nullptr, count}, {nullptr, y, count}},
                [&](float *const *f) {
                  return batchNormTraining(ctx, n, c, spatial, f[0], scale, bias, runningMean,
                                           runningVar, mask, epsilon, momentum, f[1], newMean,
                                           newVar, channelsLast);
                });
}

Status batchNormBackwardMixed(Context &ctx, DType type, int64_t n, int64_t c, int64_t spatial,
                              const void *x, const float *scale, const void *dy,
                              const float *mask, float epsilon, void *dx, float *dscale,
                              float *dbias, bool channelsLast) {
  TRAINC_RETURN_IF_ERROR(
      checkNotNull("batchNormBackward", {{"x", x}, {"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(checkBatchNormShape("batchNormBackward", n, c, spatial));
  const int64_t count = n * c * spatial;
  return viaF32("batchNormBackward", type,
                {{x, nullptr, count}, {dy, nullptr, count}, {nullptr, dx, count}},
                [&](float *const *f) {
                  return batchNormBackward(ctx, n, c, spatial, f[0], scale, f[1], mask, epsilon,
                                           f[2], dscale, dbias, channelsLast);
                });
}

Status maxPool2dMixed(Context &ctx, DType type, const Pool2dDesc &d, const void *x, void *y) {
  TRAINC_RETURN_IF_ERROR(checkNotNull("maxPool2d", {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkPool2dDesc("maxPool2d", d));
  return viaF32("maxPool2d", type,
                {{x, nullptr, poolInputCount(d)}, {nullptr, y, poolOutputCount(d)}},
                [&](float *const *f) { return maxPool2d(ctx, d, f[0], f[1]); });
}

Status avgPool2dMixed(Context &ctx, DType type, const Pool2dDesc &d, bool countIncludePad,
                      const void *x, void *y) {
  TRAINC_RETURN_IF_ERROR(checkNotNull("avgPool2d", {{"x", x}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkPool2dDesc("avgPool2d", d));
  return viaF32("avgPool2d", type,
                {{x, nullptr, poolInputCount(d)}, {nullptr, y, poolOutputCount(d)}},
                [&](float *const *f) { return avgPool2d(ctx, d, countIncludePad, f[0], f[1]); });
}

Status maxPool2dBackwardMixed(Context &ctx, DType type, const Pool2dDesc &d, const void *x,
                              const void *dy, void *dx) {
  TRAINC_RETURN_IF_ERROR(checkNotNull("maxPool2dBackward", {{"x", x}, {"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(checkPool2dDesc("maxPool2dBackward", d));
  return viaF32("maxPool2dBackward", type,
                {{x, nullptr, poolInputCount(d)}, {dy, nullptr, poolOutputCount(d)},
                 {nullptr, dx, poolInputCount(d)}},
                [&](float *const *f) { return maxPool2dBackward(ctx, d, f[0], f[1], f[2]); });
}

Status avgPool2dBackwardMixed(Context &ctx, DType type, const Pool2dDesc &d,
                              bool countIncludePad, const void *dy, void *dx) {
  TRAINC_RETURN_IF_ERROR(checkNotNull("avgPool2dBackward", {{"dy", dy}, {"dx", dx}}));
  TRAINC_RETURN_IF_ERROR(checkPool2dDesc("avgPool2dBackward", d));
  return viaF32("avgPool2dBackward", type,
                {{dy, nullptr, poolOutputCount(d)}, {nullptr, dx, poolInputCount(d)}},
                [&](float *const *f) {
                  return avgPool2dBackward(ctx, d, countIncludePad, f[0], f[1]);
                });
}

} // namespace trainc::cpu
