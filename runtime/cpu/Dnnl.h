//===- Dnnl.h - the CPU target's convolutions on oneDNN ---------*- C++ -*-===//
//
// oneDNN (Debian's libdnnl 2.6) runs the convolution forward and backward
// data of the CPU target, as it does PyTorch's, in f32 and in bf16
// (AVX512-BF16 where the CPU has it): 2-4x faster than im2col + sgemm on
// LeNet's and ResNet-18's layers (2 cores, AVX-512). The tensors stay NCHW
// for the rest of the runtime; oneDNN's blocked layouts live in this
// thread's scratch buffers for the length of a call. Both give the same
// bits for any thread count. The filter gradient stays on im2col + sgemm:
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
/// dx from dy and w (not for inputs of fewer than 4 channels, where
/// im2col + sgemm is faster).
::trainc::rt::Status backwardData(::trainc::rt::DType type, const ::trainc::rt::Conv2dDesc &d,
                                  const void *dy, const void *w, void *dx, bool &ran);
/// Whether the convolutions go to oneDNN: yes, unless the environment says
/// TRAINC_CPU_CONV=im2col (for A/B runs and the tests of the im2col path).
bool enabled();

/// Convolutions oneDNN has run in this process (the tests check that a
/// path they mean to cover ran).
uint64_t runs();

} // namespace trainc::cpu::dnnl_conv

#endif // TRAINC_RT_CPU_DNNL_H
