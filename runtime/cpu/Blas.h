//===- Blas.h - sgemm under one OpenMP thread pool -------------*- C++ -*-===//
//
// Debian's libopenblas is the pthreads build: its threads are a second pool
// beside OpenMP's. On 2 cores, alternating OpenMP regions with threaded
// sgemm calls ran 2-3x slower than either alone (OpenMP workers spin after
// a region and take the cores OpenBLAS's threads need; measured on conv2d,
// see Conv.cpp). So the CPU target uses one pool: OpenBLAS always runs
// single-threaded, and the kernels spread work over OpenMP threads, a large
// GEMM by blocks of C rows or columns. OMP_NUM_THREADS (or --threads)
// governs everything.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CPU_BLAS_H
#define TRAINC_RT_CPU_BLAS_H

#include <cstdint>

namespace trainc::cpu {

/// Number of threads the kernels may use (omp_get_max_threads()).
int maxThreads();

/// Makes OpenBLAS single-threaded in every caller (once per process; cheap
/// afterwards). Call before any cblas function.
void useSingleThreadedBlas();

/// Row-major C = alpha * op(A) op(B) + beta * C for one matrix, on the
/// calling thread only. Sizes must fit in int (checked by the callers).
void sgemmSerial(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc);

/// As sgemmSerial, but a GEMM large enough to pay for it is split into one
/// block of C rows (or columns, when C is wide) per OpenMP thread. Call
/// from outside a parallel region.
void sgemmParallel(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc);

/// Below this many multiply-adds per GEMM, splitting one GEMM over threads
/// costs more than it gains; a batch of such GEMMs is better spread one
/// matrix per thread.
inline constexpr double kSmallGemmMacs = 64.0 * 64.0 * 64.0;

} // namespace trainc::cpu

#endif // TRAINC_RT_CPU_BLAS_H
