//===- lerp.h - one step of a running average -------------------*- C++ -*-===//
//
// The element rule of Context::lerpTensors on both targets: PyTorch's lerp,
// a + w (v - a) for w < 0.5 and v - (v - a)(1 - w) otherwise, so that w = 1
// gives v exactly (the first update of an SWA average is a copy) and w = 0
// leaves a.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_LERP_H
#define TRAINC_RT_LERP_H

#if defined(__CUDACC__)
#define TRAINC_LERP_HD __host__ __device__ __forceinline__
#else
#define TRAINC_LERP_HD inline
#endif

namespace trainc::rt {

TRAINC_LERP_HD float lerpTowards(float average, float value, float weight) {
  const float difference = value - average;
  return weight < 0.5f ? average + weight * difference
                       : value - difference * (1.0f - weight);
}

} // namespace trainc::rt

#endif // TRAINC_RT_LERP_H
