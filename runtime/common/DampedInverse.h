//===- DampedInverse.h - K-FAC's factor inverses on the host ---*- C++ -*-===//
//
// Internal to the runtime: both targets' tk::dampedInverse invert on the
// host, in double, with LAPACK (the CUDA target copies the factor over and
// back: a factor is inverted once every --kfac-inverse-every steps).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_DAMPEDINVERSE_H
#define TRAINC_RT_COMMON_DAMPEDINVERSE_H

#include "trainc_rt/device.h"
#include "trainc_rt/status.h"

#include <cstdint>

namespace trainc::rt::detail {

/// inverse = (matrix + sqrt(damping) I)^-1 for the symmetric n x n `matrix`
/// (row-major; both host memory, which may be the same buffer).
Status dampedInverseOnHost(int64_t n, const float *matrix, double damping, float *inverse);

/// tk::dampedInverse of either target (kernels.inc): the factor is copied
/// to the host, inverted there and copied back (a plain copy on the CPU).
Status dampedInverse(Context &ctx, int64_t n, const float *matrix, float damping, float invert,
                     const float *previous, float *inverse);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_DAMPEDINVERSE_H
