//===- ChannelsLast.h - NHWC calls of the NCHW CPU kernels -----*- C++ -*-===//
//
// The CPU target's own convolution, pooling and batch-norm loops are
// written for NCHW (oneDNN runs channels-last convolutions natively, see
// Dnnl.cpp). A channels-last call of one of them copies its NHWC inputs to
// NCHW, runs the NCHW kernel and copies its outputs back: the same sums in
// the same order, so both layouts give the same bits. The layout phase
// chooses NHWC for CUDA; on the CPU it is the numerics' check.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RUNTIME_CPU_CHANNELSLAST_H
#define TRAINC_RUNTIME_CPU_CHANNELSLAST_H

#include "trainc_rt/kernels.h"
#include "trainc_rt/status.h"

#include "Threading.h"

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace trainc::cpu {

/// One tensor of a channels-last call, [n, spatial, c] as stored: an input
/// (`in`) or an output (`out`); both null for an absent tensor.
struct ChannelsLastTensor {
  const float *in;
  float *out;
  int64_t n, c, spatial;
};

/// [n, spatial, c] -> [n, c, spatial].
inline void toChannelsFirst(const float *in, float *out, int64_t n, int64_t c,
                            int64_t spatial) {
#pragma omp parallel for schedule(static) if (detail::worthThreads(n * c * spatial))
  for (int64_t plane = 0; plane < n * c; ++plane) {
    const int64_t b = plane / c, ch = plane % c;
    const float *src = in + b * spatial * c + ch;
    float *dst = out + plane * spatial;
    for (int64_t i = 0; i < spatial; ++i)
      dst[i] = src[i * c];
  }
}

/// [n, c, spatial] -> [n, spatial, c].
inline void toChannelsLast(const float *in, float *out, int64_t n, int64_t c,
                           int64_t spatial) {
#pragma omp parallel for schedule(static) if (detail::worthThreads(n * c * spatial))
  for (int64_t row = 0; row < n * spatial; ++row) {
    const int64_t b = row / spatial, i = row % spatial;
    const float *src = in + b * c * spatial + i;
    float *dst = out + row * c;
    for (int64_t ch = 0; ch < c; ++ch)
      dst[ch] = src[ch * spatial];
  }
}

/// The NCHW twin of a channels-last descriptor.
template <typename Desc> Desc channelsFirst(Desc d) {
  d.channelsLast = false;
  return d;
}

/// A convolution's input [n, h * w, c], output [n, outH * outW, m] and
/// weights [m, kh * kw, c / groups].
inline ChannelsLastTensor convInput(const ::trainc::rt::Conv2dDesc &d, const float *in,
                                    float *out) {
  return {in, out, d.n, d.c, d.h * d.w};
}
inline ChannelsLastTensor convOutput(const ::trainc::rt::Conv2dDesc &d, const float *in,
                                     float *out) {
  return {in, out, d.n, d.m, d.outH * d.outW};
}
inline ChannelsLastTensor convWeights(const ::trainc::rt::Conv2dDesc &d, const float *in,
                                      float *out) {
  return {in, out, d.m, d.c / d.groups, d.kh * d.kw};
}

/// A pooling's input [n, h * w, c] and output [n, outH * outW, c].
inline ChannelsLastTensor poolInput(const ::trainc::rt::Pool2dDesc &d, const float *in,
                                    float *out) {
  return {in, out, d.n, d.c, d.h * d.w};
}
inline ChannelsLastTensor poolOutput(const ::trainc::rt::Pool2dDesc &d, const float *in,
                                     float *out) {
  return {in, out, d.n, d.c, d.outH * d.outW};
}

/// Runs `kernel(f)` with f[i] the NCHW copy of tensor i (inputs filled,
/// outputs written by the kernel), then copies the outputs back.
template <typename Kernel>
::trainc::rt::Status viaChannelsFirst(std::initializer_list<ChannelsLastTensor> tensors,
                                      Kernel &&kernel) {
  std::vector<std::vector<float>> copies;
  std::vector<float *> pointers;
  for (const ChannelsLastTensor &t : tensors) {
    if (!t.in && !t.out) {
      copies.emplace_back();
      pointers.push_back(nullptr);
      continue;
    }
    copies.emplace_back(static_cast<size_t>(t.n * t.c * t.spatial));
    pointers.push_back(copies.back().data());
    if (t.in)
      toChannelsFirst(t.in, pointers.back(), t.n, t.c, t.spatial);
  }
  ::trainc::rt::Status status = kernel(pointers.data());
  if (!status.ok())
    return status;
  size_t i = 0;
  for (const ChannelsLastTensor &t : tensors) {
    if (t.out)
      toChannelsLast(pointers[i], t.out, t.n, t.c, t.spatial);
    ++i;
  }
  return status;
}

} // namespace trainc::cpu

#endif // TRAINC_RUNTIME_CPU_CHANNELSLAST_H
