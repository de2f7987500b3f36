//===- Gemm.cpp - batched GEMM in blocks on oneDNN or OpenBLAS ------------===//

#include "../common/KernelChecks.h"
#include "Blas.h"

#include <algorithm>
#include <climits>
#include <functional>

namespace trainc::cpu {
using namespace ::trainc::rt;

namespace {

/// out[j] = a[j] + b[j] for j < n (out may be a).
void addRow(const float *a, const float *b, int64_t n, float *out) {
  for (int64_t j = 0; j < n; ++j)
    out[j] = a[j] + b[j];
}

/// The argument checks gemm and gemmEpilogue share.
Status checkGemm(const char *kernel, bool transA, bool transB, int64_t m,
                 int64_t n, int64_t k, const void *a, int64_t lda,
                 int64_t strideA, const void *b, int64_t ldb, int64_t strideB,
                 const float *c, int64_t ldc, int64_t strideC, int64_t batch) {
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"a", a}, {"b", b}, {"c", c}}));
  TRAINC_RETURN_IF_ERROR(
      checkPositive(kernel, {{"m", m}, {"n", n}, {"k", k}, {"batch", batch}}));
  // Row-major: op(A) is m x k, so A is stored m x k (or k x m transposed).
  int64_t minLda = transA ? m : k, minLdb = transB ? k : n;
  if (lda < minLda || ldb < minLdb || ldc < n)
    return Status::error(std::string(kernel) + ": leading dimensions lda=" +
                         std::to_string(lda) + " ldb=" + std::to_string(ldb) +
                         " ldc=" + std::to_string(ldc) + " must be at least " +
                         std::to_string(minLda) + ", " +
                         std::to_string(minLdb) + ", " + std::to_string(n));
  if (strideA < 0 || strideB < 0 || strideC < 0)
    return Status::error(std::string(kernel) + ": negative batch stride");
  if (batch > 1 && strideC == 0)
    return Status::error(std::string(kernel) + ": strideC is 0 with batch " +
                         std::to_string(batch) +
                         ": every entry would overwrite the same output");
  // cblas takes int (LP64 OpenBLAS).
  for (int64_t size : {m, n, k, lda, ldb, ldc})
    if (size > INT_MAX)
      return Status::error(std::string(kernel) + ": size " +
                           std::to_string(size) +
                           " exceeds the BLAS int range");
  return Status();
}

/// The batch loop of both entry points: small matrices one whole GEMM per
/// thread, large ones one after the other, each split over the threads (see
/// Blas.h for why OpenBLAS never threads itself). `afterBlock`, if given,
/// runs on each finished block of entry `entry` on the thread that computed
/// it.
using EntryHook = std::function<void(int64_t entry, int64_t row, int64_t rows,
                                     int64_t col, int64_t cols)>;
void runBatch(const SerialGemm &serial, bool transA, bool transB, int64_t m, int64_t n,
              int64_t k, float alpha, const void *a, int64_t lda, int64_t strideA,
              const void *b, int64_t ldb, int64_t strideB, float beta, float *c, int64_t ldc,
              int64_t strideC, int64_t batch, const EntryHook *afterBlock,
              const EntryHook *beforeBlock = nullptr) {
  useSingleThreadedBlas();
  // B shared and A, C in contiguous row blocks (x[b, t, :] @ W of a linear
  // layer): one GEMM of m * batch rows, cut over the threads as one.
  if (batch > 1 && strideB == 0 && !transA && strideA == m * lda &&
      strideC == m * ldc && m * batch <= INT_MAX) {
    m *= batch;
    batch = 1;
  }
  const bool small = double(m) * double(n) * double(k) < kSmallGemmMacs;
  if (batch > 1 && small) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < batch; ++i) {
      if (beforeBlock)
        (*beforeBlock)(i, 0, m, 0, n);
      serial.run(transA, transB, m, n, k, alpha, serial.at(a, i * strideA), lda,
                 serial.at(b, i * strideB), ldb, beta, c + i * strideC, ldc);
      if (afterBlock)
        (*afterBlock)(i, 0, m, 0, n);
    }
    return;
  }
  for (int64_t i = 0; i < batch; ++i) {
    GemmBlockHook after, before;
    if (afterBlock)
      after = [&, i](int64_t row, int64_t rows, int64_t col, int64_t cols) {
        (*afterBlock)(i, row, rows, col, cols);
      };
    if (beforeBlock)
      before = [&, i](int64_t row, int64_t rows, int64_t col, int64_t cols) {
        (*beforeBlock)(i, row, rows, col, cols);
      };
    gemmParallel(serial, transA, transB, m, n, k, alpha, serial.at(a, i * strideA), lda,
                 serial.at(b, i * strideB), ldb, beta, c + i * strideC, ldc,
                 afterBlock ? &after : nullptr, beforeBlock ? &before : nullptr);
  }
}

} // namespace

Status gemmWith(const SerialGemm &serial, bool transA, bool transB, int64_t m, int64_t n,
                int64_t k, float alpha, const void *a, int64_t lda, int64_t strideA,
                const void *b, int64_t ldb, int64_t strideB, float beta, float *c,
                int64_t ldc, int64_t strideC, int64_t batch) {
  TRAINC_RETURN_IF_ERROR(checkGemm("gemm", transA, transB, m, n, k, a, lda,
                                   strideA, b, ldb, strideB, c, ldc, strideC,
                                   batch));
  runBatch(serial, transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb, strideB,
           beta, c, ldc, strideC, batch, nullptr);
  return Status();
}

Status gemm(Context &ctx, bool transA, bool transB, int64_t m, int64_t n,
            int64_t k, float alpha, const float *a, int64_t lda,
            int64_t strideA, const float *b, int64_t ldb, int64_t strideB,
            float beta, float *c, int64_t ldc, int64_t strideC, int64_t batch) {
  (void)ctx;
  return gemmWith(f32Gemm(), transA, transB, m, n, k, alpha, a, lda, strideA, b, ldb,
                  strideB, beta, c, ldc, strideC, batch);
}

Status gemmEpilogueWith(const SerialGemm &serial, bool transA, bool transB, int64_t m,
                        int64_t n, int64_t k, const void *a, int64_t lda, int64_t strideA,
                        const void *b, int64_t ldb, int64_t strideB, float *c, int64_t ldc,
                        int64_t strideC, int64_t batch, const GemmEpilogue &epilogue) {
  TRAINC_RETURN_IF_ERROR(checkGemm("gemmEpilogue", transA, transB, m, n, k, a,
                                   lda, strideA, b, ldb, strideB, c, ldc,
                                   strideC, batch));
  if (epilogue.range == nullptr && epilogue.env != nullptr)
    return Status::error("gemmEpilogue: an environment without a range "
                         "function");
  if (epilogue.activation != GemmActivation::None &&
      epilogue.activation != GemmActivation::Relu)
    return Status::error("gemmEpilogue: unknown activation " +
                         std::to_string(int(epilogue.activation)));
  // The addend and the bias are written into each block of C before its
  // sgemm, which then accumulates (beta = 1): the rounding of PyTorch's
  // addmm and of tk::gemm after a broadcast of C. An addend that is C itself
  // is there already.
  const float *addend = epilogue.addend == c ? nullptr : epilogue.addend;
  const float *bias = epilogue.bias;
  const bool accumulate = epilogue.addend || bias;
  const bool relu = epilogue.activation == GemmActivation::Relu;
  // One plain loop for each case (a loop that tests the case per element
  // did not vectorize: an LSTM step's 64x512 addend took 14 us).
  const bool onC = epilogue.addend != nullptr; // a bias on an addend that is C
  EntryHook prepare = [&](int64_t entry, int64_t row, int64_t rows, int64_t col,
                          int64_t cols) {
    const float *biasAt = bias ? bias + col : nullptr;
    for (int64_t r = row; r < row + rows; ++r) {
      const int64_t first = entry * strideC + r * ldc + col;
      float *out = c + first;
      if (addend && biasAt)
        addRow(addend + first, biasAt, cols, out);
      else if (addend)
        std::copy(addend + first, addend + first + cols, out);
      else if (onC)
        addRow(out, biasAt, cols, out);
      else
        std::copy(biasAt, biasAt + cols, out);
    }
  };
  EntryHook finish = [&](int64_t entry, int64_t row, int64_t rows, int64_t col,
                         int64_t cols) {
    if (relu)
      for (int64_t r = row; r < row + rows; ++r) {
        float *out = c + entry * strideC + r * ldc + col;
        for (int64_t j = 0; j < cols; ++j) // NaN stays NaN, as torch.relu
          out[j] = out[j] < 0.0f ? 0.0f : out[j];
      }
    if (!epilogue.range)
      return;
    if (cols == n && ldc == n) { // contiguous rows: one range
      const int64_t first = entry * strideC + row * n;
      epilogue.range(epilogue.env, first, first + rows * n);
      return;
    }
    for (int64_t r = row; r < row + rows; ++r) {
      const int64_t first = entry * strideC + r * ldc + col;
      epilogue.range(epilogue.env, first, first + cols);
    }
  };
  runBatch(serial, transA, transB, m, n, k, 1.0f, a, lda, strideA, b, ldb, strideB,
           accumulate ? 1.0f : 0.0f, c, ldc, strideC, batch, &finish,
           addend || bias ? &prepare : nullptr);
  return Status();
}

Status gemmEpilogue(Context &ctx, bool transA, bool transB, int64_t m,
                    int64_t n, int64_t k, const float *a, int64_t lda,
                    int64_t strideA, const float *b, int64_t ldb,
                    int64_t strideB, float *c, int64_t ldc, int64_t strideC,
                    int64_t batch, const GemmEpilogue &epilogue) {
  (void)ctx;
  return gemmEpilogueWith(f32Gemm(), transA, transB, m, n, k, a, lda, strideA, b, ldb,
                          strideB, c, ldc, strideC, batch, epilogue);
}

} // namespace trainc::cpu
