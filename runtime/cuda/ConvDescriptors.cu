//===- ConvDescriptors.cu - cuDNN descriptors of one convolution ----------===//

#include "ConvDescriptors.h"

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include <algorithm>
#include <string>

namespace trainc::cuda {

using ::trainc::rt::Status;

ConvDescriptors::~ConvDescriptors() {
  if (conv)
    (void)cudnnDestroyConvolutionDescriptor(conv);
  if (filter)
    (void)cudnnDestroyFilterDescriptor(filter);
  if (output)
    (void)cudnnDestroyTensorDescriptor(output);
  if (input)
    (void)cudnnDestroyTensorDescriptor(input);
}

Status ConvDescriptors::describe(const ::trainc::rt::Conv2dDesc &d, cudnnDataType_t type) {
  int64_t padH = std::min(d.padTop, d.padBottom);
  int64_t padW = std::min(d.padLeft, d.padRight);
  extraTop = d.padTop - padH;
  extraLeft = d.padLeft - padW;
  paddedH = d.h + extraTop + (d.padBottom - padH);
  paddedW = d.w + extraLeft + (d.padRight - padW);
  explicitPad = paddedH != d.h || paddedW != d.w;

  TRAINC_CUDNN_CALL(cudnnCreateTensorDescriptor(&input));
  TRAINC_CUDNN_CALL(cudnnSetTensor4dDescriptor(input, layoutOf(d), type, int(d.n), int(d.c),
                                               int(paddedH), int(paddedW)));
  TRAINC_CUDNN_CALL(cudnnCreateFilterDescriptor(&filter));
  TRAINC_CUDNN_CALL(cudnnSetFilter4dDescriptor(filter, type, layoutOf(d), int(d.m),
                                               int(d.c / d.groups), int(d.kh), int(d.kw)));
  TRAINC_CUDNN_CALL(cudnnCreateConvolutionDescriptor(&conv));
  // Cross-correlation is what ONNX Conv (and every framework) calls conv.
  TRAINC_CUDNN_CALL(cudnnSetConvolution2dDescriptor(
      conv, int(padH), int(padW), int(d.strideH), int(d.strideW), int(d.dilationH),
      int(d.dilationW), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  TRAINC_CUDNN_CALL(cudnnSetConvolutionGroupCount(conv, int(d.groups)));
  TRAINC_CUDNN_CALL(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH));

  int on = 0, om = 0, oh = 0, ow = 0;
  TRAINC_CUDNN_CALL(
      cudnnGetConvolution2dForwardOutputDim(conv, input, filter, &on, &om, &oh, &ow));
  if (on != d.n || om != d.m || oh != d.outH || ow != d.outW)
    return Status::error("cuDNN computes output [" + std::to_string(on) + ", " +
                         std::to_string(om) + ", " + std::to_string(oh) + ", " +
                         std::to_string(ow) + "], the descriptor says [" +
                         std::to_string(d.n) + ", " + std::to_string(d.m) + ", " +
                         std::to_string(d.outH) + ", " + std::to_string(d.outW) + "]");
  TRAINC_CUDNN_CALL(cudnnCreateTensorDescriptor(&output));
  TRAINC_CUDNN_CALL(cudnnSetTensor4dDescriptor(output, layoutOf(d), type, int(d.n), int(d.m),
                                               int(d.outH), int(d.outW)));
  return Status();
}

} // namespace trainc::cuda
