//===- Gemm.cpp - batched sgemm on OpenBLAS -------------------------------===//

#include "../common/KernelChecks.h"
#include "Blas.h"

#include <climits>

namespace trainc::cpu {
using namespace ::trainc::rt;

Status gemm(Context &ctx, bool transA, bool transB, int64_t m, int64_t n,
            int64_t k, float alpha, const float *a, int64_t lda,
            int64_t strideA, const float *b, int64_t ldb, int64_t strideB,
            float beta, float *c, int64_t ldc, int64_t strideC, int64_t batch) {
  (void)ctx;
  const char *kernel = "gemm";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"a", a}, {"b", b}, {"c", c}}));
  TRAINC_RETURN_IF_ERROR(
      checkPositive(kernel, {{"m", m}, {"n", n}, {"k", k}, {"batch", batch}}));
  // Row-major: op(A) is m x k, so A is stored m x k (or k x m transposed).
  int64_t minLda = transA ? m : k, minLdb = transB ? k : n;
  if (lda < minLda || ldb < minLdb || ldc < n)
    return Status::error("gemm: leading dimensions lda=" + std::to_string(lda) +
                         " ldb=" + std::to_string(ldb) +
                         " ldc=" + std::to_string(ldc) + " must be at least " +
                         std::to_string(minLda) + ", " +
                         std::to_string(minLdb) + ", " + std::to_string(n));
  if (strideA < 0 || strideB < 0 || strideC < 0)
    return Status::error("gemm: negative batch stride");
  if (batch > 1 && strideC == 0)
    return Status::error("gemm: strideC is 0 with batch " +
                         std::to_string(batch) +
                         ": every entry would overwrite the same output");
  // cblas takes int (LP64 OpenBLAS).
  for (int64_t size : {m, n, k, lda, ldb, ldc})
    if (size > INT_MAX)
      return Status::error("gemm: size " + std::to_string(size) +
                           " exceeds the BLAS int range");

  useSingleThreadedBlas();
  // Small matrices: one whole GEMM per thread. Large ones: one GEMM after
  // the other, each split over the threads (see Blas.h for why OpenBLAS
  // never threads itself).
  const bool small = double(m) * double(n) * double(k) < kSmallGemmMacs;
  if (batch > 1 && small) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < batch; ++i)
      sgemmSerial(transA, transB, m, n, k, alpha, a + i * strideA, lda,
                  b + i * strideB, ldb, beta, c + i * strideC, ldc);
  } else {
    for (int64_t i = 0; i < batch; ++i)
      sgemmParallel(transA, transB, m, n, k, alpha, a + i * strideA, lda,
                    b + i * strideB, ldb, beta, c + i * strideC, ldc);
  }
  return Status();
}

} // namespace trainc::cpu
