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

namespace {

/// Copies x [planes, h, w] into the centre of y [planes, hp, wp], zeros
/// elsewhere. One thread per element of y with w fastest, so both the reads
/// and the writes of a warp are contiguous runs.
template <typename T>
__global__ void padPlanesKernel(const T *x, T *y, int64_t planes,
                                int64_t h, int64_t w, int64_t hp, int64_t wp,
                                int64_t top, int64_t left) {
  int64_t total = planes * hp * wp;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t col = i % wp - left;
    int64_t row = (i / wp) % hp - top;
    int64_t plane = i / (wp * hp);
    bool inside = row >= 0 && row < h && col >= 0 && col < w;
    y[i] = inside ? x[(plane * h + row) * w + col] : T(0.0f);
  }
}

/// The inverse: copies the [h, w] window at (top, left) of each plane of
/// xp [planes, hp, wp] into x [planes, h, w]. One thread per element of x.
template <typename T>
__global__ void cropPlanesKernel(const T *xp, T *x, int64_t planes,
                                 int64_t h, int64_t w, int64_t hp, int64_t wp,
                                 int64_t top, int64_t left) {
  int64_t total = planes * h * w;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t col = i % w;
    int64_t row = (i / w) % h;
    int64_t plane = i / (w * h);
    x[i] = xp[(plane * hp + row + top) * wp + col + left];
  }
}

} // namespace

Status movePlanes(CudaContext &ctx, bool pad, ::trainc::rt::DType dtype, const void *from,
                  void *to, const ::trainc::rt::Conv2dDesc &d, const ConvDescriptors &plan) {
  using ::trainc::rt::bf16;
  const int64_t total = pad ? d.n * d.c * plan.paddedH * plan.paddedW : d.n * d.c * d.h * d.w;
  const unsigned grid = gridFor(ctx, total, kBlockSize);
  const bool f32 = dtype == ::trainc::rt::DType::F32;
  if (pad && f32)
    padPlanesKernel<<<grid, kBlockSize, 0, ctx.stream()>>>(
        static_cast<const float *>(from), static_cast<float *>(to), d.n * d.c, d.h, d.w,
        plan.paddedH, plan.paddedW, plan.extraTop, plan.extraLeft);
  else if (pad)
    padPlanesKernel<<<grid, kBlockSize, 0, ctx.stream()>>>(
        static_cast<const bf16 *>(from), static_cast<bf16 *>(to), d.n * d.c, d.h, d.w,
        plan.paddedH, plan.paddedW, plan.extraTop, plan.extraLeft);
  else if (f32)
    cropPlanesKernel<<<grid, kBlockSize, 0, ctx.stream()>>>(
        static_cast<const float *>(from), static_cast<float *>(to), d.n * d.c, d.h, d.w,
        plan.paddedH, plan.paddedW, plan.extraTop, plan.extraLeft);
  else
    cropPlanesKernel<<<grid, kBlockSize, 0, ctx.stream()>>>(
        static_cast<const bf16 *>(from), static_cast<bf16 *>(to), d.n * d.c, d.h, d.w,
        plan.paddedH, plan.paddedW, plan.extraTop, plan.extraLeft);
  TRAINC_CHECK_LAUNCH(pad ? "padPlanesKernel" : "cropPlanesKernel");
  return Status();
}

} // namespace trainc::cuda
