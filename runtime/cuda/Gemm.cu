//===- Gemm.cu - row-major (batched) GEMM on cuBLASLt ---------------------===//
//
// cuBLASLt is column-major. A row-major matrix X with leading dimension ld
// is, byte for byte, the column-major X^T with the same ld, so the row-major
// C = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T:
// swap the operands, keep each operand's own transpose flag, swap m and n.
//
// Precision: CUBLAS_COMPUTE_32F, i.e. true fp32 FMA and no TF32, to match
// the CPU target and PyTorch's default (torch.backends.cuda.matmul.
// allow_tf32 = False). Reduced precision is the job of --precision.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include "common/KernelChecks.h"
#include "trainc_rt/kernels.h"

#include <string>

namespace trainc::cuda {
namespace {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// C = beta * C for alpha == 0, where BLAS reads neither A nor B (so NaN in
/// them does not propagate). beta == 0 writes zeros without reading C, so an
/// uninitialized C cannot leak NaN either. One thread per element with the
/// column fastest: consecutive threads touch consecutive addresses of a row.
__global__ void scaleMatricesKernel(float *c, int64_t m, int64_t n, int64_t ldc,
                                    int64_t strideC, int64_t batch,
                                    float beta) {
  int64_t total = batch * m * n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t col = i % n;
    int64_t row = (i / n) % m;
    int64_t b = i / (n * m);
    float *p = c + b * strideC + row * ldc + col;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

/// cuBLASLt only needs 16 bytes, and a larger promise lets the heuristic
/// pick kernels that use wider loads; the plan key includes it, so a pointer
/// of lower alignment gets a plan of its own.
int64_t alignmentOf(const void *ptr, int64_t strideBytes, int64_t batch) {
  uintptr_t bits = reinterpret_cast<uintptr_t>(ptr);
  if (batch > 1)
    bits |= static_cast<uintptr_t>(strideBytes);
  int64_t align = 256;
  while (align > 1 && (bits % uintptr_t(align)) != 0)
    align /= 2;
  return align;
}

struct GemmPlan final : CachedPlan {
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t layoutA = nullptr; // The first operand: row-major B.
  cublasLtMatrixLayout_t layoutB = nullptr; // The second: row-major A.
  cublasLtMatrixLayout_t layoutC = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspaceBytes = 0;
  /// Issue one matmul per batch entry (layouts describe one matrix).
  bool loopOverBatch = false;

  ~GemmPlan() override {
    if (layoutC)
      (void)cublasLtMatrixLayoutDestroy(layoutC);
    if (layoutB)
      (void)cublasLtMatrixLayoutDestroy(layoutB);
    if (layoutA)
      (void)cublasLtMatrixLayoutDestroy(layoutA);
    if (operation)
      (void)cublasLtMatmulDescDestroy(operation);
  }
};

/// Everything that determines a plan, after the batch folding below.
struct GemmShape {
  bool transA, transB;
  int64_t m, n, k, lda, ldb, ldc, strideA, strideB, strideC, batch;
  int64_t alignA, alignB, alignC;
  /// cublasLtEpilogue_t: DEFAULT, BIAS or RELU_BIAS (the bias pointer is
  /// set per call).
  int32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  /// cudaDataType_t of A and B, and of C and D (compute and scale are f32).
  int32_t typeAB = CUDA_R_32F, typeC = CUDA_R_32F;
};

/// The workspace cuBLASLt may use; 32 MiB is NVIDIA's recommendation for
/// Hopper and enough for split-K on every shape.
constexpr size_t kMaxGemmWorkspace = size_t(32) << 20;

Status makeLayout(cublasLtMatrixLayout_t &layout, int32_t type, int64_t rows,
                  int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  TRAINC_CUBLAS_CALL(cublasLtMatrixLayoutCreate(
      &layout, static_cast<cudaDataType_t>(type), uint64_t(rows),
      uint64_t(cols), ld));
  if (batch > 1) {
    int32_t count = static_cast<int32_t>(batch);
    TRAINC_CUBLAS_CALL(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
    TRAINC_CUBLAS_CALL(cublasLtMatrixLayoutSetAttribute(
        layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
        sizeof(stride)));
  }
  return Status();
}

/// Builds descriptors for `layoutBatch` matrices and asks the heuristic for
/// an algorithm; `found` is false when it has none for this layout.
Status buildGemmPlan(CudaContext &ctx, const GemmShape &s, int64_t layoutBatch,
                     GemmPlan &plan, bool &found) {
  found = false;
  TRAINC_CUBLAS_CALL(cublasLtMatmulDescCreate(&plan.operation,
                                              CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // The swap: the column-major product's first operand is row-major B.
  int32_t opFirst = s.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t opSecond = s.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  TRAINC_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(
      plan.operation, CUBLASLT_MATMUL_DESC_TRANSA, &opFirst, sizeof(opFirst)));
  TRAINC_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(
      plan.operation, CUBLASLT_MATMUL_DESC_TRANSB, &opSecond,
      sizeof(opSecond)));
  if (s.epilogue != CUBLASLT_EPILOGUE_DEFAULT) {
    // The column-major D is n x m: its rows are the row-major columns, so
    // cuBLASLt's per-row bias is our per-column bias.
    cublasLtEpilogue_t epilogue = static_cast<cublasLtEpilogue_t>(s.epilogue);
    TRAINC_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(
        plan.operation, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
        sizeof(epilogue)));
    cudaDataType_t biasType = CUDA_R_32F;
    TRAINC_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(
        plan.operation, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
        sizeof(biasType)));
  }

  // Stored (pre-op) column-major shapes: row-major B is k x n (n x k when
  // transposed), which column-major reads as n x k (k x n).
  TRAINC_RETURN_IF_ERROR(makeLayout(plan.layoutA, s.typeAB,
                                    s.transB ? s.k : s.n, s.transB ? s.n : s.k,
                                    s.ldb, layoutBatch, s.strideB));
  TRAINC_RETURN_IF_ERROR(makeLayout(plan.layoutB, s.typeAB,
                                    s.transA ? s.m : s.k, s.transA ? s.k : s.m,
                                    s.lda, layoutBatch, s.strideA));
  TRAINC_RETURN_IF_ERROR(makeLayout(plan.layoutC, s.typeC, s.n, s.m, s.ldc,
                                    layoutBatch, s.strideC));

  cublasLtMatmulPreference_t preference = nullptr;
  TRAINC_CUBLAS_CALL(cublasLtMatmulPreferenceCreate(&preference));
  uint64_t maxWorkspace = kMaxGemmWorkspace;
  uint32_t alignFirst = uint32_t(s.alignB), alignSecond = uint32_t(s.alignA);
  uint32_t alignC = uint32_t(s.alignC);
  cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &maxWorkspace,
      sizeof(maxWorkspace));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignFirst,
        sizeof(alignFirst));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignSecond,
        sizeof(alignSecond));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
        sizeof(alignC));
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulPreferenceSetAttribute(
        preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
        sizeof(alignC));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  if (status == CUBLAS_STATUS_SUCCESS)
    status = cublasLtMatmulAlgoGetHeuristic(
        ctx.cublasLt(), plan.operation, plan.layoutA, plan.layoutB,
        plan.layoutC, plan.layoutC, preference, 1, &result, &returned);
  (void)cublasLtMatmulPreferenceDestroy(preference);
  // NOT_SUPPORTED is the heuristic's way of saying "no algorithm".
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || returned == 0)
    return Status();
  TRAINC_CUBLAS_CALL(status);
  plan.algo = result.algo;
  plan.workspaceBytes = result.workspaceSize;
  found = true;
  return Status();
}

/// Names the public kernel in a helper's error.
Status prefixed(const char *kernel, Status status) {
  if (status.ok())
    return status;
  return Status::error(std::string(kernel) + ": " + status.message());
}

} // namespace

//===----------------------------------------------------------------------===//
// Launcher
//===----------------------------------------------------------------------===//

/// Plans are cached per shape, strides and pointer alignment; the first call
/// of a shape builds descriptors and queries the heuristic (host only, no
/// device work, so it is safe during CUDA graph capture, but it allocates
/// the workspace, which is not: run a step before capturing).
///
/// Batches: a strided batch where possible. Two cases use something else:
/// - B shared (strideB == 0), A and C with contiguous row blocks
///   (strideA == m * lda, strideC == m * ldc, A not transposed): one GEMM
///   with m * batch rows, the common `x[b, t, :] @ W` of linear layers.
/// - any other zero stride: one cuBLASLt call per batch entry. cuBLASLt does
///   not document stride-0 broadcasting, so it is not relied on.
namespace {

/// D = alpha * op(A) op(B) + beta * C (+ bias, activation): the body of
/// gemm (C == D) and gemmEpilogue (C the addend, or D itself).
/// The cuBLASLt type of a DType (F32, BF16 or F16) and its size in bytes.
int32_t cudaTypeOf(::trainc::rt::DType t) {
  using ::trainc::rt::DType;
  return t == DType::BF16 ? CUDA_R_16BF : t == DType::F16 ? CUDA_R_16F : CUDA_R_32F;
}
int64_t bytesOf(::trainc::rt::DType t) {
  return t == ::trainc::rt::DType::F32 ? 4 : 2;
}

Status gemmImpl(CudaContext &ctx, const char *kernel, ::trainc::rt::DType typeAB,
                ::trainc::rt::DType typeC, bool transA, bool transB,
                int64_t m, int64_t n, int64_t k, float alpha, const void *a,
                int64_t lda, int64_t strideA, const void *b, int64_t ldb,
                int64_t strideB, float beta, const void *cIn, void *c,
                int64_t ldc, int64_t strideC, int64_t batch,
                const float *bias, int32_t epilogue) {
  // The same checks, in the same order, as the CPU target.
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkNotNull(kernel, {{"a", a}, {"b", b}, {"c", c}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPositive(
      kernel, {{"m", m}, {"n", n}, {"k", k}, {"batch", batch}}));
  // Leading dimensions of the row-major operands as stored.
  int64_t minLda = transA ? m : k, minLdb = transB ? k : n;
  if (lda < minLda || ldb < minLdb || ldc < n)
    return invalidArgument(
        kernel, "leading dimensions lda=" + std::to_string(lda) + " ldb=" +
                    std::to_string(ldb) + " ldc=" + std::to_string(ldc) +
                    " must be at least " + std::to_string(minLda) + ", " +
                    std::to_string(minLdb) + ", " + std::to_string(n));
  if (strideA < 0 || strideB < 0 || strideC < 0)
    return invalidArgument(kernel, "negative batch stride");
  if (batch > 1 && strideC < (m - 1) * ldc + n)
    return invalidArgument(kernel,
                           "strideC " + std::to_string(strideC) +
                               " with batch " + std::to_string(batch) +
                               ": the outputs would overlap (needs >= " +
                               std::to_string((m - 1) * ldc + n) + ")");
  constexpr int64_t kIntMax = 2147483647;
  if (m > kIntMax || n > kIntMax || k > kIntMax || lda > kIntMax ||
      ldb > kIntMax || ldc > kIntMax || batch > kIntMax)
    return invalidArgument(kernel, "sizes beyond int32 are not supported by "
                                   "cuBLASLt");

  if (alpha == 0.0f && cIn == c && !bias) {
    if (beta == 1.0f)
      return Status();
    if (typeC != ::trainc::rt::DType::F32)
      return invalidArgument(kernel, "alpha 0 with a 16-bit C");
    int64_t total = batch * m * n;
    scaleMatricesKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0,
                          ctx.stream()>>>(static_cast<float *>(c), m, n, ldc,
                                          strideC, batch, beta);
    TRAINC_CHECK_LAUNCH("scaleMatricesKernel");
    return Status();
  }

  GemmShape s{transA,  transB,  m,       n,     k, lda, ldb, ldc,
              strideA, strideB, strideC, batch, 0, 0,   0, epilogue,
              cudaTypeOf(typeAB), cudaTypeOf(typeC)};
  const int64_t sizeAB = bytesOf(typeAB), sizeC = bytesOf(typeC);
  if (batch > 1 && strideB == 0 && !transA && strideA == m * lda &&
      strideC == m * ldc && m * batch <= kIntMax) {
    s.m = m * batch;
    s.batch = 1;
    s.strideA = s.strideC = 0;
  }
  s.alignA = alignmentOf(a, s.strideA * sizeAB, s.batch);
  s.alignB = alignmentOf(b, s.strideB * sizeAB, s.batch);
  s.alignC = alignmentOf(c, s.strideC * sizeC, s.batch);

  PlanKey key;
  key.kind = PlanKey::Gemm;
  key.values = {s.transA,  s.transB, s.m,      s.n,       s.k,
                s.lda,     s.ldb,    s.ldc,    s.strideA, s.strideB,
                s.strideC, s.batch,  s.alignA, s.alignB,  s.alignC,
                s.epilogue, s.typeAB, s.typeC};
  auto *plan = static_cast<GemmPlan *>(ctx.findPlan(key));
  if (!plan) {
    // A bias is one vector for every entry: one call per entry keeps that
    // without relying on a bias batch stride.
    bool needsLoop = s.batch > 1 && (s.strideA == 0 || s.strideB == 0 || bias);
    auto fresh = std::make_unique<GemmPlan>();
    bool found = false;
    if (!needsLoop)
      TRAINC_RETURN_IF_ERROR(
          prefixed(kernel, buildGemmPlan(ctx, s, s.batch, *fresh, found)));
    if (!found) {
      // One matrix per call: also the fallback when the heuristic has
      // nothing for the strided batch.
      fresh = std::make_unique<GemmPlan>();
      fresh->loopOverBatch = s.batch > 1;
      TRAINC_RETURN_IF_ERROR(
          prefixed(kernel, buildGemmPlan(ctx, s, 1, *fresh, found)));
    }
    if (!found)
      return invalidArgument(
          kernel,
          "cuBLASLt has no algorithm for m " + std::to_string(s.m) + ", n " +
              std::to_string(s.n) + ", k " + std::to_string(s.k) +
              ", alignment " + std::to_string(s.alignA) + "/" +
              std::to_string(s.alignB) + "/" + std::to_string(s.alignC));
    plan = static_cast<GemmPlan *>(ctx.addPlan(key, std::move(fresh)));
  }

  void *workspace = nullptr;
  if (plan->workspaceBytes > 0)
    TRAINC_RETURN_IF_ERROR(
        ctx.libraryWorkspace(&workspace, plan->workspaceBytes));
  if (bias)
    TRAINC_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(
        plan->operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
        sizeof(bias)));
  int64_t calls = plan->loopOverBatch ? s.batch : 1;
  for (int64_t i = 0; i < calls; ++i) {
    // Operands swapped, see the file comment.
    TRAINC_CUBLAS_CALL(cublasLtMatmul(
        ctx.cublasLt(), plan->operation, &alpha,
        static_cast<const char *>(b) + i * s.strideB * sizeAB, plan->layoutA,
        static_cast<const char *>(a) + i * s.strideA * sizeAB, plan->layoutB,
        &beta, static_cast<const char *>(cIn) + i * s.strideC * sizeC,
        plan->layoutC, static_cast<char *>(c) + i * s.strideC * sizeC,
        plan->layoutC, &plan->algo, workspace, plan->workspaceBytes,
        ctx.stream()));
  }
  return Status();
}

/// The cuBLASLt epilogue of a GemmEpilogue (no range function: the CUDA code
/// launches its group's kernel itself).
Status epilogueKind(const char *kernel, const ::trainc::rt::GemmEpilogue &epilogue,
                    int32_t &kind) {
  using ::trainc::rt::GemmActivation;
  if (epilogue.range || epilogue.env)
    return invalidArgument(kernel, "a range function runs on the CPU target "
                                   "only (the CUDA code launches its kernel)");
  kind = CUBLASLT_EPILOGUE_DEFAULT;
  if (epilogue.activation == GemmActivation::Relu) {
    if (!epilogue.bias)
      return invalidArgument(kernel, "ReLU without a bias has no cuBLASLt "
                                     "epilogue here");
    kind = CUBLASLT_EPILOGUE_RELU_BIAS;
  } else if (epilogue.activation != GemmActivation::None) {
    return invalidArgument(kernel, "unknown activation " +
                                       std::to_string(int(epilogue.activation)));
  } else if (epilogue.bias) {
    kind = CUBLASLT_EPILOGUE_BIAS;
  }
  return Status();
}

} // namespace

Status gemm(Context &ctx, bool transA, bool transB, int64_t m, int64_t n,
            int64_t k, float alpha, const float *a, int64_t lda,
            int64_t strideA, const float *b, int64_t ldb, int64_t strideB,
            float beta, float *c, int64_t ldc, int64_t strideC, int64_t batch) {
  using ::trainc::rt::DType;
  return gemmImpl(asCuda(ctx), "gemm", DType::F32, DType::F32, transA, transB,
                  m, n, k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, c,
                  ldc, strideC, batch, nullptr, CUBLASLT_EPILOGUE_DEFAULT);
}

Status gemmEpilogue(Context &ctx, bool transA, bool transB, int64_t m,
                    int64_t n, int64_t k, const float *a, int64_t lda,
                    int64_t strideA, const float *b, int64_t ldb,
                    int64_t strideB, float *c, int64_t ldc, int64_t strideC,
                    int64_t batch, const ::trainc::rt::GemmEpilogue &epilogue) {
  using ::trainc::rt::DType;
  const char *kernel = "gemmEpilogue";
  int32_t kind = CUBLASLT_EPILOGUE_DEFAULT;
  TRAINC_RETURN_IF_ERROR(epilogueKind(kernel, epilogue, kind));
  // The addend is cuBLASLt's C (beta = 1) and may be D itself.
  const float *cIn = epilogue.addend ? epilogue.addend : c;
  return gemmImpl(asCuda(ctx), kernel, DType::F32, DType::F32, transA, transB,
                  m, n, k, 1.0f, a, lda, strideA, b, ldb, strideB,
                  epilogue.addend ? 1.0f : 0.0f, cIn, c, ldc, strideC, batch,
                  epilogue.bias, kind);
}

/// bf16/f16 A and B with f32 compute (tensor cores), C and D of the same
/// 16-bit type or f32. An epilogue's addend and bias are f32: an addend
/// needs an f32 D (it is cuBLASLt's C, which has D's type).
Status gemmMixed(Context &ctx, ::trainc::rt::DType typeAB,
                 ::trainc::rt::DType typeC, bool transA, bool transB, int64_t m,
                 int64_t n, int64_t k, float alpha, const void *a, int64_t lda,
                 int64_t strideA, const void *b, int64_t ldb, int64_t strideB,
                 float beta, void *c, int64_t ldc, int64_t strideC,
                 int64_t batch, const ::trainc::rt::GemmEpilogue *epilogue) {
  using ::trainc::rt::DType;
  const char *kernel = epilogue ? "gemmEpilogue" : "gemm";
  if (typeAB != DType::BF16 && typeAB != DType::F16)
    return invalidArgument(kernel, std::string("operands of type ") +
                                       ::trainc::rt::dtypeName(typeAB) +
                                       " (the mixed-precision entry takes f16 or bf16)");
  if (typeC != DType::F32 && typeC != typeAB)
    return invalidArgument(kernel, std::string("a result of type ") +
                                       ::trainc::rt::dtypeName(typeC) + " for " +
                                       ::trainc::rt::dtypeName(typeAB) + " operands");
  if (!epilogue)
    return gemmImpl(asCuda(ctx), kernel, typeAB, typeC, transA, transB, m, n,
                    k, alpha, a, lda, strideA, b, ldb, strideB, beta, c, c,
                    ldc, strideC, batch, nullptr, CUBLASLT_EPILOGUE_DEFAULT);
  int32_t kind = CUBLASLT_EPILOGUE_DEFAULT;
  TRAINC_RETURN_IF_ERROR(epilogueKind(kernel, *epilogue, kind));
  if (epilogue->addend && typeC != DType::F32)
    return invalidArgument(kernel, "an f32 addend needs an f32 C");
  const void *cIn = epilogue->addend ? static_cast<const void *>(epilogue->addend) : c;
  return gemmImpl(asCuda(ctx), kernel, typeAB, typeC, transA, transB, m, n, k,
                  1.0f, a, lda, strideA, b, ldb, strideB,
                  epilogue->addend ? 1.0f : 0.0f, cIn, c, ldc, strideC, batch,
                  epilogue->bias, kind);
}

} // namespace trainc::cuda
