//===- Blas.h - GEMM blocks under one OpenMP thread pool -------*- C++ -*-===//
//
// Debian's libopenblas is the pthreads build: its threads are a second pool
// beside OpenMP's. On 2 cores, alternating OpenMP regions with threaded
// sgemm calls ran 2-3x slower than either alone (OpenMP workers spin after
// a region and take the cores OpenBLAS's threads need; measured on conv2d,
// see Conv.cpp). So the CPU target uses one pool: each block runs on one
// thread (a one-thread oneDNN matmul where it gains, DnnlMatmul.cpp, else
// single-threaded OpenBLAS), and the kernels spread work over OpenMP
// threads, a large GEMM by blocks of C rows or columns. OMP_NUM_THREADS
// (or --threads) governs everything. Which blocks, and every other split that decides a
// rounding, depends on the shapes only: results are bit-identical with any
// thread count (test/lit/train/threads.test).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CPU_BLAS_H
#define TRAINC_RT_CPU_BLAS_H

#include "trainc_rt/kernels.h"

#include <cstddef>
#include <cstdint>
#include <functional>

namespace trainc::cpu {

/// Number of threads the kernels may use (omp_get_max_threads()).
int maxThreads();

/// Makes OpenBLAS single-threaded in every caller (once per process; cheap
/// afterwards). Call before any cblas function.
void useSingleThreadedBlas();

/// Row-major C = alpha * op(A) op(B) + beta * C for one matrix, on the
/// calling thread only: on oneDNN where it gains (dnnl_matmul::worthIt),
/// else on OpenBLAS. Sizes must fit in int (checked by the callers).
void sgemmSerial(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                 float alpha, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float beta, float *c, int64_t ldc);

/// A GEMM on the calling thread with an f32 C and A and B of
/// `elementBytes` bytes an element: sgemmSerial's f32 one, or the mixed
/// precision entries' bf16 one (Mixed.cpp).
struct SerialGemm {
  size_t elementBytes;
  /// Element `i` of an A or B operand of this kernel's type.
  const void *at(const void *base, int64_t i) const {
    return static_cast<const char *>(base) + i * int64_t(elementBytes);
  }
  std::function<void(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                     const void *a, int64_t lda, const void *b, int64_t ldb, float beta,
                     float *c, int64_t ldc)>
      run;
};

/// sgemmSerial as a SerialGemm.
const SerialGemm &f32Gemm();

/// As sgemmSerial, but a GEMM large enough to pay for it is split into
/// blocks of C rows (or columns, when C is wide) that depend on the shape
/// only (gemmBlocks), never on the thread count, so the result is the same
/// with any number of threads (OpenBLAS's kernels for a tail block or a
/// small matrix may round differently from those of a full one, so where C
/// is cut matters). Outside a parallel region the blocks are spread over
/// the OpenMP threads; inside one (an image per thread) the calling thread
/// runs them in order, with the same result.
/// Runs on the thread that computes a block of C, right before or after its
/// sgemm: rows
/// [row, row + rows) and columns [col, col + cols).
using GemmBlockHook =
    std::function<void(int64_t row, int64_t rows, int64_t col, int64_t cols)>;

void sgemmParallel(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b,
                   int64_t ldb, float beta, float *c, int64_t ldc,
                   const GemmBlockHook *afterBlock = nullptr,
                   const GemmBlockHook *beforeBlock = nullptr);

/// sgemmParallel with the blocks computed by `serial`.
void gemmParallel(const SerialGemm &serial, bool transA, bool transB, int64_t m, int64_t n,
                  int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                  int64_t ldb, float beta, float *c, int64_t ldc,
                  const GemmBlockHook *afterBlock = nullptr,
                  const GemmBlockHook *beforeBlock = nullptr);

/// The batched entry points of kernels.h (gemm, gemmEpilogue) with the
/// blocks computed by `serial`: the f32 kernels, and the bf16 ones of
/// Mixed.cpp, which so share every split and rounding step but the blocks'.
::trainc::rt::Status gemmWith(const SerialGemm &serial, bool transA, bool transB, int64_t m,
                              int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
                              int64_t strideA, const void *b, int64_t ldb, int64_t strideB,
                              float beta, float *c, int64_t ldc, int64_t strideC,
                              int64_t batch);
::trainc::rt::Status gemmEpilogueWith(const SerialGemm &serial, bool transA, bool transB,
                                      int64_t m, int64_t n, int64_t k, const void *a,
                                      int64_t lda, int64_t strideA, const void *b, int64_t ldb,
                                      int64_t strideB, float *c, int64_t ldc, int64_t strideC,
                                      int64_t batch, const ::trainc::rt::GemmEpilogue &epilogue);

/// How sgemmParallel cuts C: `count` blocks of `step` rows (byRows) or
/// columns of the `extent` ones, the last one possibly shorter.
struct GemmBlocks {
  bool byRows;
  int64_t extent, step, count;
};
GemmBlocks gemmBlocks(int64_t m, int64_t n, int64_t k);

/// Below this many multiply-adds per GEMM (2M: ~10-20 us on one core),
/// splitting one GEMM over threads costs more than it gains: waking the team
/// takes tens of microseconds where the other core sleeps (the digits MLP's
/// 64x128x64 GEMMs took 70-90 us on two threads, 8-19 us on one). A batch of
/// such GEMMs is better spread one matrix per thread.
inline constexpr double kSmallGemmMacs = 128.0 * 128.0 * 128.0;

/// sgemmParallel's blocks: at least kMinGemmBlock rows or columns (a
/// multiple of 16, which keeps OpenBLAS's micro-kernel tiles full), and at
/// most kMaxGemmBlocks of them (more blocks balance the threads better but
/// cost OpenBLAS calls: 16 blocks of ResNet-18 GEMMs ran ~5-10% slower on
/// one thread than one call). Blocks are kGoodGemmBlock wide where the
/// extent has two of them: each block packs its share of B again, and an
/// LSTM step's 64x512x128 product took 128 us in eight blocks of 64
/// columns, 87 us in four of 128 (one thread, oneDNN); a narrower extent
/// still gets two blocks, one per thread on two cores.
/// A C of 2 * kMinRowBand to 2 * kGoodGemmBlock rows and more columns (a
/// batch of samples times a layer's outputs) is cut into two bands of rows
/// instead: the generated pointwise kernels give each thread a contiguous
/// half of the elements, so the thread that computes a band of the product
/// is the one that reads it next, and an LSTM's recurrence stays on one
/// core (its step 23.9 -> 22.8 ms on two threads; the zoo MLP's 0.257 ->
/// 0.253 ms). Only where B fits in a core's L2 (kRowBandMaxBBytes): each
/// band reads and packs all of B, and a 64x4096x4096 product took 36 ms
/// as two bands against 26 ms as 16 column blocks (one thread). And only
/// where B (k x n) is at most kRowBandMaxBOverC times C (m x n): both
/// threads then read all of B, and where B is a weight the update writes
/// next, the update pays for every line the other core holds. The zoo
/// MLP's first layer (64x128x784, B 12 times C) ran its step in 0.280 ms
/// as bands, 0.240 ms as two column blocks, its update 52 -> 20 us (medians
/// of 10 interleaved runs, two threads); the LSTM's 62 backward products of
/// 64x128x512 (B 8 times C) keep their bands (as columns its step took
/// 22.7 -> 25.4 ms).
inline constexpr int64_t kMinGemmBlock = 64;
inline constexpr int64_t kGoodGemmBlock = 128;
inline constexpr int64_t kMinRowBand = 32;
inline constexpr double kRowBandMaxBBytes = 1024.0 * 1024.0;
inline constexpr int64_t kRowBandMaxBOverC = 8;
inline constexpr int64_t kMaxGemmBlocks = 16;

} // namespace trainc::cpu

#endif // TRAINC_RT_CPU_BLAS_H
