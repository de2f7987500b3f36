//===- Blas.cpp - sgemm under one OpenMP thread pool ----------------------===//

#include "Blas.h"

#include <algorithm>
#include <cblas.h>
#include <mutex>
#include <omp.h>

namespace trainc::cpu {

int maxThreads() { return omp_get_max_threads(); }

void useSingleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

void sgemmSerial(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), alpha,
              a, int(lda), b, int(ldb), beta, c, int(ldc));
}

void sgemmParallel(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc) {
  useSingleThreadedBlas();
  const int threads = maxThreads();
  if (threads == 1 || double(m) * double(n) * double(k) < kSmallGemmMacs) {
    sgemmSerial(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // Split the longer side of C, in multiples of 16 so that every block but
  // the last keeps OpenBLAS's micro-kernel tiles full.
  const bool byRows = m >= n;
  const int64_t extent = byRows ? m : n;
  const int64_t step =
      std::max<int64_t>(16, (extent + threads - 1) / threads + 15) / 16 * 16;
  const int64_t blocks = (extent + step - 1) / step;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t begin = blk * step, size = std::min(step, extent - begin);
    if (byRows) {
      // Rows [begin, begin + size) of op(A) and of C.
      const float *aBlock = transA ? a + begin : a + begin * lda;
      sgemmSerial(transA, transB, size, n, k, alpha, aBlock, lda, b, ldb, beta,
                  c + begin * ldc, ldc);
    } else {
      // Columns [begin, begin + size) of op(B) and of C.
      const float *bBlock = transB ? b + begin * ldb : b + begin;
      sgemmSerial(transA, transB, m, size, k, alpha, a, lda, bBlock, ldb, beta,
                  c + begin, ldc);
    }
  }
}

} // namespace trainc::cpu
