//===- Gemm.cpp - batched sgemm on OpenBLAS -------------------------------===//

#include "../common/KernelChecks.h"
#include "Threading.h"

#include <cblas.h>
#include <climits>

namespace trainc::cpu {
using namespace ::trainc::rt;

namespace {

/// Below this many multiply-adds per matrix, OpenBLAS gains little from its
/// own threads (it runs small problems single-threaded anyway), so a batch
/// of such matrices is better spread over OpenMP threads, one matrix each.
constexpr int64_t kSmallGemmMacs = int64_t(128) * 128 * 128;

} // namespace

Status gemm(Context &ctx, bool transA, bool transB, int64_t m, int64_t n,
            int64_t k, float alpha, const float *a, int64_t lda,
            int64_t strideA, const float *b, int64_t ldb, int64_t strideB,
            float beta, float *c, int64_t ldc, int64_t strideC,
            int64_t batch) {
  (void)ctx;
  const char *kernel = "gemm";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"a", a}, {"b", b}, {"c", c}}));
  TRAINC_RETURN_IF_ERROR(checkPositive(
      kernel, {{"m", m}, {"n", n}, {"k", k}, {"batch", batch}}));
  // Row-major: op(A) is m x k, so A is stored m x k (or k x m transposed).
  int64_t minLda = transA ? m : k, minLdb = transB ? k : n;
  if (lda < minLda || ldb < minLdb || ldc < n)
    return Status::error(
        "gemm: leading dimensions lda=" + std::to_string(lda) +
        " ldb=" + std::to_string(ldb) + " ldc=" + std::to_string(ldc) +
        " must be at least " + std::to_string(minLda) + ", " +
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

  CBLAS_TRANSPOSE opA = transA ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE opB = transB ? CblasTrans : CblasNoTrans;
  auto run = [&](int64_t i) {
    cblas_sgemm(CblasRowMajor, opA, opB, int(m), int(n), int(k), alpha,
                a + i * strideA, int(lda), b + i * strideB, int(ldb), beta,
                c + i * strideC, int(ldc));
  };

  if (batch > 1 && maxThreads() > 1 && double(m) * double(n) * double(k) <= kSmallGemmMacs) {
    useSingleThreadedBlas();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < batch; ++i)
      run(i);
  } else {
    syncBlasThreads();
    for (int64_t i = 0; i < batch; ++i)
      run(i);
  }
  return Status();
}

} // namespace trainc::cpu
