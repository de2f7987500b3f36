//===- ConvDescriptors.h - cuDNN descriptors of one convolution -*- C++ -*-===//
//
// What the forward and both backward plans of a convolution describe to
// cuDNN alike: the (possibly padded) input, the filter, the convolution
// (cross-correlation, groups, fp32 accumulation) and the output, checked
// against the descriptor's output shape. cuDNN pads symmetrically; the
// asymmetric rest (ONNX's pads may differ per side) is explicit padding the
// plans copy in and out.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CUDA_CONVDESCRIPTORS_H
#define TRAINC_RUNTIME_CUDA_CONVDESCRIPTORS_H

#include "trainc_rt/kernels.h"
#include "trainc_rt/status.h"

#include <cudnn.h>

#include <cstdint>

namespace trainc::cuda {

struct ConvDescriptors {
  cudnnTensorDescriptor_t input = nullptr; // The (possibly padded) input.
  cudnnTensorDescriptor_t output = nullptr;
  cudnnFilterDescriptor_t filter = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  /// Explicit padding: the extra rows/columns before the input, and the
  /// padded input's height and width.
  bool explicitPad = false;
  int64_t extraTop = 0, extraLeft = 0, paddedH = 0, paddedW = 0;

  ConvDescriptors() = default;
  ConvDescriptors(const ConvDescriptors &) = delete;
  ConvDescriptors &operator=(const ConvDescriptors &) = delete;
  ~ConvDescriptors();

  /// Creates the descriptors of `d` with data of `type`.
  ::trainc::rt::Status describe(const ::trainc::rt::Conv2dDesc &d, cudnnDataType_t type);
};

class CudaContext;

/// Explicit padding on the stream: pads the input's planes [n*c, h, w] into
/// the padded input [n*c, paddedH, paddedW] (`pad`), or crops the padded
/// input's gradient back to the input's shape. f32 or 16-bit elements (only
/// moved, so one kernel serves bf16 and f16).
::trainc::rt::Status movePlanes(CudaContext &ctx, bool pad, ::trainc::rt::DType dtype,
                                const void *from, void *to, const ::trainc::rt::Conv2dDesc &d,
                                const ConvDescriptors &plan);

} // namespace trainc::cuda

#endif // TRAINC_RUNTIME_CUDA_CONVDESCRIPTORS_H
