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

#ifndef __CUDACC__
// The CPU target's element loops call these through glibc's vector math
// library (libmvec: 4 floats at a time with SSE2, the programs' baseline),
// as math.h declares them under -ffast-math only; the programs are built
// with -fno-math-errno, which lets the compiler vectorize such calls, and
// nothing else of fast-math. libmvec is within 4 ulp of the scalar
// functions (glibc's manual) and sends the inputs it does not cover
// (inf, NaN, overflow) to them. Which elements take the vector functions
// depends on the element count only (KernelWriter's chunks).
extern "C" {
__attribute__((simd("notinbranch"))) float expf(float) noexcept;
__attribute__((simd("notinbranch"))) float logf(float) noexcept;
__attribute__((simd("notinbranch"))) float powf(float, float) noexcept;
__attribute__((simd("notinbranch"))) float erff(float) noexcept;
__attribute__((simd("notinbranch"))) float tanhf(float) noexcept;
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
TRAINC_HD float geluErf(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
/// GELU with the tanh approximation (PyTorch approximate='tanh').
TRAINC_HD float geluTanh(float x) {
  return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
TRAINC_HD float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
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

} // namespace trainc::gen

#endif // TRAINC_RT_GENERATED_H
