//===- DampedInverse.cpp - K-FAC's factor inverses on the host ------------===//

#include "DampedInverse.h"

#include <climits>
#include <cmath>
#include <string>
#include <vector>

// LAPACK's Fortran entry points (OpenBLAS carries them).
extern "C" {
void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
void dpotri_(const char *uplo, const int *n, double *a, const int *lda, int *info);
}

namespace trainc::rt::detail {

Status dampedInverseOnHost(int64_t n, const float *matrix, double damping, float *inverse) {
  if (n <= 0 || n > 46340) // n * n fits an int, as LAPACK counts
    return Status::error("K-FAC: a factor of " + std::to_string(n) + " rows cannot be inverted");
  if (!(damping >= 0) || !std::isfinite(damping))
    return Status::error("K-FAC: the damping must be finite and >= 0");
  const int size = static_cast<int>(n);
  const double shift = std::sqrt(damping);
  // Symmetric: the row-major matrix is its own column-major transpose.
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (int64_t i = 0; i < n * n; ++i)
    a[i] = matrix[i];
  for (int64_t i = 0; i < n; ++i)
    a[i * n + i] += shift;
  int info = 0;
  const char lower = 'L';
  dpotrf_(&lower, &size, a.data(), &size, &info);
  if (info > 0)
    return Status::error("K-FAC: a factor of " + std::to_string(n) + " rows is not positive "
                         "definite after adding sqrt(damping) to its diagonal (leading minor " +
                         std::to_string(info) + "); raise --kfac-damping");
  if (info == 0)
    dpotri_(&lower, &size, a.data(), &size, &info);
  if (info != 0)
    return Status::error("K-FAC: inverting a factor of " + std::to_string(n) +
                         " rows failed (LAPACK info " + std::to_string(info) + ")");
  // dpotri leaves the lower triangle (column-major), the upper one of the
  // row-major view: mirror it.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double v = j >= i ? a[i * n + j] : a[j * n + i];
      inverse[i * n + j] = static_cast<float>(v);
    }
  return Status();
}

Status dampedInverse(Context &ctx, int64_t n, const float *matrix, float damping, float invert,
                     const float *previous, float *inverse) {
  if (!matrix || !previous || !inverse)
    return Status::error("dampedInverse: a null matrix");
  const size_t bytes = static_cast<size_t>(n) * static_cast<size_t>(n) * sizeof(float);
  if (invert == 0.0f)
    return inverse == previous ? Status() : ctx.copyOnDeviceAsync(inverse, previous, bytes);
  std::vector<float> host(bytes / sizeof(float));
  TRAINC_RETURN_IF_ERROR(ctx.copyToHost(host.data(), matrix, bytes));
  TRAINC_RETURN_IF_ERROR(dampedInverseOnHost(n, host.data(), damping, host.data()));
  return ctx.copyToDevice(inverse, host.data(), bytes);
}

} // namespace trainc::rt::detail
