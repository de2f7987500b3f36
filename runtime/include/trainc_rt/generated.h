//===- generated.h - what every generated program includes -----*- C++ -*-===//
//
// Pulls in the runtime interface and the helpers generated kernels use:
// TRAINC_HD marks element functions that run on the host and on the device,
// and the math below has one definition for both targets.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_GENERATED_H
#define TRAINC_RT_GENERATED_H

#include "trainc_rt/device.h"
#include "trainc_rt/half.h"
#include "trainc_rt/kernels.h"
#include "trainc_rt/program.h"
#include "trainc_rt/random.h"

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#include <cuda_runtime.h>
#define TRAINC_HD __host__ __device__ __forceinline__
#else
#define TRAINC_HD static inline
#endif

// The f32 exp, log, pow, erf and tanh of generated kernels. On the CPU the
// runtime's (runtime/cpu/VectorMath.cpp: glibc's vector math library, with
// the same bits for an element whether its loop was vectorized or not),
// declared with the simd attribute so that g++ vectorizes the loops that
// call them; on CUDA the device's own functions.
#ifdef __CUDACC__
TRAINC_HD float trainc_expf(float x) { return expf(x); }
TRAINC_HD float trainc_logf(float x) { return logf(x); }
TRAINC_HD float trainc_powf(float x, float y) { return powf(x, y); }
TRAINC_HD float trainc_erff(float x) { return erff(x); }
TRAINC_HD float trainc_tanhf(float x) { return tanhf(x); }
#else
extern "C" {
__attribute__((simd("notinbranch"), const)) float trainc_expf(float) noexcept;
__attribute__((simd("notinbranch"), const)) float trainc_logf(float) noexcept;
__attribute__((simd("notinbranch"), const)) float trainc_powf(float, float) noexcept;
__attribute__((simd("notinbranch"), const)) float trainc_erff(float) noexcept;
__attribute__((simd("notinbranch"), const)) float trainc_tanhf(float) noexcept;
}
#endif

#ifdef __CUDACC__
namespace trainc::cuda {
/// The compute stream of a CUDA context (generated launches use it).
cudaStream_t stream(::trainc::rt::Context &ctx);
/// The error of the last kernel launch, named after the kernel.
::trainc::rt::Status checkLaunch(const char *kernel);
} // namespace trainc::cuda
#endif

namespace trainc::gen {

/// GELU, exact: x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)).
TRAINC_HD float geluErf(float x) {
  return 0.5f * x * (1.0f + trainc_erff(x * 0.70710678118654752f));
}
/// GELU with the tanh approximation (PyTorch approximate='tanh').
TRAINC_HD float geluTanh(float x) {
  return 0.5f * x * (1.0f + trainc_tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
TRAINC_HD float sigmoid(float x) { return 1.0f / (1.0f + trainc_expf(-x)); }
/// Neither inf nor NaN (x - x is NaN for both), with one definition for
/// the host and the device.
TRAINC_HD bool isFinite(float x) { return x - x == 0.0f; }
/// Sets *flag to +inf: a thread found what the flag reports (the loss
/// scaler's inf/NaN gradient element). Every thread that does stores the
/// same value; on the host the store is atomic (OpenMP threads).
TRAINC_HD void raiseFlag(float *flag) {
#if !defined(__CUDA_ARCH__) && defined(_OPENMP)
#pragma omp atomic write
  *flag = INFINITY;
#else
  *flag = INFINITY;
#endif
}

#ifdef __CUDACC__
/// Sums `a` and `b` over the block's kThreads threads (blockDim.x, a power
/// of two) by a tree in shared memory: a fixed order, the same bits on
/// every run. Every thread of the block calls it; thread 0 gets the sums.
template <int kThreads> __device__ __forceinline__ void blockSum2(double &a, double &b) {
  __shared__ double sums[2][kThreads];
  sums[0][threadIdx.x] = a;
  sums[1][threadIdx.x] = b;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      sums[0][threadIdx.x] += sums[0][threadIdx.x + half];
      sums[1][threadIdx.x] += sums[1][threadIdx.x + half];
    }
    __syncthreads();
  }
  a = sums[0][0];
  b = sums[1][0];
}
#endif

} // namespace trainc::gen

#endif // TRAINC_RT_GENERATED_H
