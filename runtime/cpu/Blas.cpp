//===- Blas.cpp - sgemm under one OpenMP thread pool ----------------------===//

#include "Blas.h"
#include "Dnnl.h"

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
  if (dnnl_matmul::gemmSerial(rt::DType::F32, transA, transB, m, n, k, alpha, a, lda, b, ldb,
                              beta, c, ldc))
    return;
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
              transB ? CblasTrans : CblasNoTrans, int(m), int(n), int(k), alpha,
              a, int(lda), b, int(ldb), beta, c, int(ldc));
}

GemmBlocks gemmBlocks(int64_t m, int64_t n, int64_t k) {
  GemmBlocks blocks;
  blocks.byRows = m >= n;
  blocks.extent = blocks.byRows ? m : n;
  if (double(m) * double(n) * double(k) < kSmallGemmMacs) {
    blocks.step = blocks.extent;
    blocks.count = 1;
    return blocks;
  }
  if (m < n && m >= 2 * kMinRowBand && m <= 2 * kGoodGemmBlock &&
      k <= kRowBandMaxBOverC * m && double(k) * double(n) * sizeof(float) <= kRowBandMaxBBytes) {
    // A batch of rows times wider outputs: two bands of rows, the halves
    // the pointwise kernels after it give the same threads.
    blocks.byRows = true;
    blocks.extent = m;
    blocks.step = ((m + 1) / 2 + 15) / 16 * 16;
    blocks.count = (m + blocks.step - 1) / blocks.step;
    return blocks;
  }
  const int64_t wanted = (blocks.extent + kMaxGemmBlocks - 1) / kMaxGemmBlocks;
  const int64_t half = (blocks.extent + 1) / 2;
  blocks.step = (std::max({kMinGemmBlock, wanted, std::min(kGoodGemmBlock, half)}) + 15) / 16 * 16;
  blocks.count = (blocks.extent + blocks.step - 1) / blocks.step;
  return blocks;
}

const SerialGemm &f32Gemm() {
  static const SerialGemm kernel{
      sizeof(float), [](bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                        const void *a, int64_t lda, const void *b, int64_t ldb, float beta,
                        float *c, int64_t ldc) {
        sgemmSerial(transA, transB, m, n, k, alpha, static_cast<const float *>(a), lda,
                    static_cast<const float *>(b), ldb, beta, c, ldc);
      }};
  return kernel;
}

void sgemmParallel(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc,
                   const GemmBlockHook *afterBlock,
                   const GemmBlockHook *beforeBlock) {
  gemmParallel(f32Gemm(), transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
               afterBlock, beforeBlock);
}

void gemmParallel(const SerialGemm &serial, bool transA, bool transB, int64_t m, int64_t n,
                  int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                  int64_t ldb, float beta, float *c, int64_t ldc,
                  const GemmBlockHook *afterBlock, const GemmBlockHook *beforeBlock) {
  useSingleThreadedBlas();
  const GemmBlocks blocks = gemmBlocks(m, n, k);
  if (blocks.count == 1) {
    if (beforeBlock)
      (*beforeBlock)(0, m, 0, n);
    serial.run(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (afterBlock)
      (*afterBlock)(0, m, 0, n);
    return;
  }
  const bool parallel = !omp_in_parallel() && maxThreads() > 1;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t blk = 0; blk < blocks.count; ++blk) {
    const int64_t begin = blk * blocks.step,
                  size = std::min(blocks.step, blocks.extent - begin);
    if (blocks.byRows) {
      // Rows [begin, begin + size) of op(A) and of C.
      const void *aBlock = serial.at(a, transA ? begin : begin * lda);
      if (beforeBlock)
        (*beforeBlock)(begin, size, 0, n);
      serial.run(transA, transB, size, n, k, alpha, aBlock, lda, b, ldb, beta,
                 c + begin * ldc, ldc);
      if (afterBlock)
        (*afterBlock)(begin, size, 0, n);
    } else {
      // Columns [begin, begin + size) of op(B) and of C.
      const void *bBlock = serial.at(b, transB ? begin * ldb : begin);
      if (beforeBlock)
        (*beforeBlock)(0, m, begin, size);
      serial.run(transA, transB, m, size, k, alpha, a, lda, bBlock, ldb, beta, c + begin,
                 ldc);
      if (afterBlock)
        (*afterBlock)(0, m, begin, size);
    }
  }
}

} // namespace trainc::cpu
