//===- Dnnl.h - oneDNN convolutions and GEMMs of the CPU target -*- C++ -*-===//
//
// oneDNN (Debian's libdnnl 2.6) runs the convolution forward and backward
// data of the CPU target, as it does PyTorch's, in f32 and in bf16
// (AVX512-BF16 where the CPU has it): 2-4x faster than im2col + sgemm on
// LeNet's and ResNet-18's layers (2 cores, AVX-512). The tensors stay NCHW
// for the rest of the runtime; oneDNN's blocked layouts live in this
// thread's scratch buffers for the length of a call. Both give the same
// bits for any thread count (a kernel that would split a sum by the thread
// count, oneDNN's GEMM-based convolution on AVX2, runs on fixed chunks of
// images, each on one thread). The filter gradient stays on im2col + sgemm:
// oneDNN's divides its sum over the images by the thread count, and the CPU
// target's results do not depend on it. Where oneDNN has no kernel for a
// convolution on this CPU (f16 without AVX512-FP16, bf16 without AVX-512),
// `ran` comes back false and the caller runs its own path (im2col + sgemm,
// f32 on widened operands).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CPU_DNNL_H
#define TRAINC_RT_CPU_DNNL_H

#include "trainc_rt/kernels.h"

#include <cstdint>

namespace trainc::cpu::dnnl_conv {

/// y = conv(x, w) + bias; all of `type` (F32, BF16, F16; bias may be null).
::trainc::rt::Status forward(::trainc::rt::DType type, const ::trainc::rt::Conv2dDesc &d,
                             const void *x, const void *w, const void *bias, void *y,
                             bool &ran);
/// dx from dy and w (not for inputs of fewer than 4 channels, nor for f32
/// convolutions with large weights and few output positions, where
/// the weights' reorder would cost as much as the convolution: im2col +
/// sgemm is faster on both).
::trainc::rt::Status backwardData(::trainc::rt::DType type, const ::trainc::rt::Conv2dDesc &d,
                                  const void *dy, const void *w, void *dx, bool &ran);
/// Whether the convolutions go to oneDNN: yes, unless the environment says
/// TRAINC_CPU_CONV=im2col (for A/B runs and the tests of the im2col path).
bool enabled();

/// Convolutions oneDNN has run in this process (the tests check that a
/// path they mean to cover ran).
uint64_t runs();

} // namespace trainc::cpu::dnnl_conv

// The GEMM blocks (DnnlMatmul.cpp): oneDNN's matmul, made for and run on
// the calling thread alone, computes a block of a GEMM that Blas.h cut by
// shape, in f32 or from bf16 operands, into an f32 C.
namespace trainc::cpu::dnnl_matmul {

/// Row-major C = alpha op(A) op(B) + beta C on the calling thread, A and B
/// of `type` (F32 or BF16), C f32. False, with C untouched, where the block
/// is too small to gain from oneDNN (worthIt), oneDNN has only its
/// reference kernel for it on this CPU, or the environment says
/// TRAINC_CPU_GEMM=openblas: the caller computes it another way.
bool gemmSerial(::trainc::rt::DType type, bool transA, bool transB, int64_t m, int64_t n,
                int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                float beta, float *c, int64_t ldc);

/// Whether a block of this shape goes to oneDNN: large enough to gain
/// from it, and not TRAINC_CPU_GEMM=openblas (for A/B runs and the tests
/// of the OpenBLAS path).
bool worthIt(int64_t m, int64_t n, int64_t k);

/// Whether oneDNN has a kernel faster than its reference one for bf16
/// operands on this CPU (AVX-512; AVX512-BF16 for the dot products). Where
/// it has none, bf16 operands are widened to f32 for OpenBLAS.
bool hasFastBf16();

/// GEMM blocks oneDNN has run in this process (for the tests).
uint64_t runs();

/// Of those, the blocks of a strided C that oneDNN computed densely in
/// scratch and that were copied into C (for the tests).
uint64_t denseRuns();

} // namespace trainc::cpu::dnnl_matmul

#endif // TRAINC_RT_CPU_DNNL_H
