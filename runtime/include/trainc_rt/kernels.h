//===- kernels.h - library kernels that generated code calls ---*- C++ -*-===//
//
// Declared once, implemented per target: trainc::cpu (OpenBLAS, OpenMP,
// im2col convolution) and trainc::cuda (cuBLASLt, cuDNN, own kernels). The
// generated code writes `namespace tk = trainc::cpu;` (or cuda) and then calls
// `tk::gemm(...)`, so both targets share one emitter.
//
// All tensors are dense row-major f32 on the context's device unless noted.
// Every function checks its arguments and returns a Status naming the
// problem; none keeps pointers after returning.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_KERNELS_H
#define TRAINC_RT_KERNELS_H

#include "trainc_rt/device.h"
#include "trainc_rt/half.h"
#include "trainc_rt/program.h"

#include <cstdint>
#include <initializer_list>

namespace trainc::rt {

/// Convolution over NCHW, weights [M, C/groups, KH, KW]; with
/// `channelsLast`, over NHWC with weights [M, KH, KW, C/groups] (the sizes
/// keep their names).
struct Conv2dDesc {
  int64_t n, c, h, w;
  int64_t m, kh, kw;
  int64_t strideH, strideW;
  int64_t padTop, padLeft, padBottom, padRight;
  int64_t dilationH, dilationW;
  int64_t groups;
  int64_t outH, outW;
  bool channelsLast = false;
};

/// Pooling over NCHW, or NHWC with `channelsLast`.
struct Pool2dDesc {
  int64_t n, c, h, w;
  int64_t kh, kw;
  int64_t strideH, strideW;
  int64_t padTop, padLeft, padBottom, padRight;
  int64_t dilationH, dilationW;
  int64_t outH, outW;
  bool channelsLast = false;
};

enum class Reduction : int32_t { None = 0, Mean = 1, Sum = 2 };
enum class ReduceKind : int32_t { Sum = 0, Mean = 1, Max = 2 };

/// The activation a GEMM epilogue applies last.
enum class GemmActivation : int32_t { None = 0, Relu = 1 };

/// A function over the elements [begin, end) of a GEMM's output (linear
/// indices into C as stored: entry * strideC + row * ldc + column).
using ElementRangeFn = void (*)(const void *env, int64_t begin, int64_t end);

/// What gemmEpilogue does to each element of op(A) op(B): `addend` (same
/// layout as C) and `bias[column]` (one vector for every row of every
/// entry) are added as BLAS's beta = 1 does (the CPU writes them into C
/// before the GEMM accumulates, as PyTorch's addmm rounds; an addend that is
/// C itself is there already), then `activation` is applied; then, on the
/// CPU only, `range(env, begin, end)` runs over the finished elements while
/// they are still in cache (the generated pointwise group that follows).
struct GemmEpilogue {
  const float *addend = nullptr;
  const float *bias = nullptr;
  GemmActivation activation = GemmActivation::None;
  ElementRangeFn range = nullptr;
  const void *env = nullptr;
};

/// The pointwise ops a normalization kernel runs around itself (a tc.fused
/// group that a norm heads), on the CPU: before it reads a plane (batch
/// norm: one sample's channel, [n, c, spatial]) or a row (layer norm) of
/// its streamed operand (a forward norm's input, a backward norm's result
/// gradient), `prologue` writes it; after it wrote that plane or row of its
/// first result, `epilogue` finishes it. Both take linear indices of the
/// tensors as stored (channels-last: the whole tensor, before and after).
/// The CUDA target refuses them (the generated code launches its kernels
/// around the norm's).
struct NormFusion {
  ElementRangeFn prologue = nullptr;
  const void *prologueEnv = nullptr;
  ElementRangeFn epilogue = nullptr;
  const void *epilogueEnv = nullptr;
};

/// The DType of a storage type, for the mixed-precision overloads.
template <typename T> struct ElementType;
template <> struct ElementType<float> { static constexpr DType value = DType::F32; };
template <> struct ElementType<bf16> { static constexpr DType value = DType::BF16; };
template <> struct ElementType<f16> { static constexpr DType value = DType::F16; };

/// T itself, in a context that does not deduce T (a bias that is nullptr).
template <typename T> struct Same { using type = T; };

} // namespace trainc::rt

namespace trainc::cpu {
using ::trainc::rt::Context;
using ::trainc::rt::Status;
#include "trainc_rt/kernels.inc"
} // namespace trainc::cpu

namespace trainc::cuda {
using ::trainc::rt::Context;
using ::trainc::rt::Status;
#include "trainc_rt/kernels.inc"
} // namespace trainc::cuda

#endif // TRAINC_RT_KERNELS_H
