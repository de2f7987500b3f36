//===- KernelChecks.h - argument checks shared by all targets --*- C++ -*-===//
//
// Every library kernel validates its arguments before touching memory; the
// checks depend only on sizes and descriptors, so the CPU and CUDA targets
// share them and report the same messages.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_KERNELCHECKS_H
#define TRAINC_RT_COMMON_KERNELCHECKS_H

#include "trainc_rt/kernels.h"

#include <initializer_list>
#include <string>
#include <utility>

namespace trainc::rt {

/// Fails with "<kernel>: <name> must be positive, got <value>" for the first
/// non-positive size.
Status
checkPositive(const char *kernel,
              std::initializer_list<std::pair<const char *, int64_t>> sizes);

/// Fails with "<kernel>: <name> is null" for the first null pointer.
Status checkNotNull(
    const char *kernel,
    std::initializer_list<std::pair<const char *, const void *>> pointers);

/// Checks sizes, strides, paddings, dilations, groups and that outH/outW are
/// the ONNX Conv output sizes.
Status checkConv2dDesc(const char *kernel, const Conv2dDesc &d);

/// Checks sizes and that outH/outW are the floor- or ceil-mode output sizes,
/// with no window starting past the input (ceil mode drops such a window,
/// like PyTorch and ONNX opset 19+).
Status checkPool2dDesc(const char *kernel, const Pool2dDesc &d);

/// Element counts of a checked Conv2dDesc or Pool2dDesc.
inline int64_t poolInputCount(const Pool2dDesc &d) { return d.n * d.c * d.h * d.w; }
inline int64_t poolOutputCount(const Pool2dDesc &d) { return d.n * d.c * d.outH * d.outW; }
inline int64_t inputCount(const Conv2dDesc &d) { return d.n * d.c * d.h * d.w; }
inline int64_t weightCount(const Conv2dDesc &d) {
  return d.m * (d.c / (d.groups > 0 ? d.groups : 1)) * d.kh * d.kw;
}
inline int64_t outputCount(const Conv2dDesc &d) { return d.n * d.m * d.outH * d.outW; }

Status checkReduction(const char *kernel, Reduction reduction);

/// Batch norm over x [n, c, spatial]: positive sizes whose product fits int64.
Status checkBatchNormShape(const char *kernel, int64_t n, int64_t c, int64_t spatial);

/// The CUDA target's refusal of a NormFusion's host range functions (the
/// generated program launches a fused norm's prologue and epilogue kernels
/// around the library call there).
Status checkNoHostFusion(const char *kernel, const NormFusion *fusion);

/// The product of `sizes`, failing if it overflows int64.
Status checkedProduct(const char *kernel, std::initializer_list<int64_t> sizes,
                      int64_t &product);

} // namespace trainc::rt

#endif // TRAINC_RT_COMMON_KERNELCHECKS_H
