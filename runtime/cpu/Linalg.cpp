//===- Linalg.cpp - the CPU target's dense linear algebra -----------------===//

#include "../common/DampedInverse.h"
#include "trainc_rt/kernels.h"

namespace trainc::cpu {

Status dampedInverse(Context &ctx, int64_t n, const float *matrix, float damping, float invert,
                     const float *previous, float *inverse) {
  return rt::detail::dampedInverse(ctx, n, matrix, damping, invert, previous, inverse);
}

} // namespace trainc::cpu
