//===- DnnlMatmul.cpp - the CPU target's GEMM blocks on oneDNN ------------===//
//
// One block of a GEMM (Blas.h cuts a GEMM into blocks by its shape alone)
// runs as a one-thread oneDNN matmul: brgemm or oneDNN's own jit GEMM with
// AVX-512 (and AVX512-BF16's dot products for bf16 operands). On 2 cores of
// an AMD Zen 4, one thread, a block of the zoo's shapes ran in 0.5x the time
// of OpenBLAS 0.3.21's sgemm (whose kernel for this CPU is its AVX2 one) in
// f32, and in 0.15-0.3x that of widening bf16 to f32 + sgemm. Below
// kMinMacs multiply-adds oneDNN's fixed cost per call (about 1 us) loses to
// OpenBLAS, which keeps those blocks.
//
// A primitive is made for one thread (OneThread): the block's result then
// depends on its shape only, never on how many threads run the blocks, and
// the CPU target's results stay bit-identical for any --threads. Each
// thread keeps its own primitives by block shape (oneDNN's primitive cache
// makes a repeated descriptor cheaper, not free: about 25 us, as long as a
// small block's whole GEMM).
//
//===----------------------------------------------------------------------===//

#include "Dnnl.h"
#include "DnnlCommon.h"

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

namespace trainc::cpu::dnnl_matmul {
using ::trainc::rt::DType;
using namespace ::trainc::cpu::dnnl_common;

namespace {

using Dt = dnnl::memory::data_type;

/// Below this many multiply-adds a block stays on OpenBLAS (f32) or is
/// widened (bf16): 16x16x16 ran 4.4x slower on oneDNN than on OpenBLAS,
/// 8x10x512 (40960) 0.76x.
constexpr double kMinMacs = 32.0 * 32.0 * 32.0;

/// A block's types, shape, leading dimensions and the bits of alpha and
/// beta (oneDNN takes them when the primitive is made).
using Key = std::array<int64_t, 11>;

/// A block shape's primitive and its arguments, kept with it: a call only
/// points them at its operands (making them anew cost a third of a small
/// block's time).
struct Entry {
  bool available = false;
  /// The primitive writes a dense m x n scratch block that the call copies
  /// into C (see build).
  bool denseC = false;
  dnnl::matmul primitive;
  dnnl::memory a, b, c;
  std::unordered_map<int, dnnl::memory> args;
};

int64_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// A row-major matrix of `rows` x `cols` with rows `ld` apart, or its
/// transpose in place (`transposed`: stored cols x rows).
dnnl::memory::desc matrix(Dt type, int64_t rows, int64_t cols, int64_t ld, bool transposed) {
  return dnnl::memory::desc({rows, cols}, type,
                            transposed ? dnnl::memory::dims{1, ld} : dnnl::memory::dims{ld, 1});
}

bool isBrgemm(const dnnl::matmul::primitive_desc &pd) {
  return std::strncmp(pd.impl_info_str(), "brg", 3) == 0;
}

/// The primitive descriptor of op(A) x op(B) into a C of rows `ldc` apart,
/// or none where oneDNN has only its reference kernel (as slow as it is
/// simple) or none at all.
std::optional<dnnl::matmul::primitive_desc>
describe(const dnnl::memory::desc &a, const dnnl::memory::desc &b, int64_t m, int64_t n,
         int64_t ldc, const dnnl::primitive_attr &attr) {
  try {
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(a, b, matrix(Dt::f32, m, n, ldc, false)), attr, cpuEngine());
    if (std::strncmp(pd.impl_info_str(), "ref", 3) == 0)
      return std::nullopt;
    return pd;
  } catch (const dnnl::error &) {
    return std::nullopt; // no kernel for it here: the caller's path runs
  }
}

/// Makes the primitive of `e`; leaves it unavailable where oneDNN has no
/// kernel for it, or only its reference one.
/// A block of C's columns (ldc > n) with B transposed is a case oneDNN's
/// brgemm declines, and its jit GEMM took 80 us for the zoo MLP's 64x64x784
/// column block against 59 us for brgemm into a dense 64 x 64 block plus
/// the copy into C (one thread; 0.75-0.96x over the zoo's transB shapes,
/// no gain without transB, where brgemm takes the strided C itself). Any
/// block of a strided C whose own primitive is not brgemm while a dense C's
/// is computes into this thread's scratch and is copied into C.
void build(Entry &e, Dt type, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
           float alpha, int64_t lda, int64_t ldb, float beta, int64_t ldc) {
  dnnl::memory::desc a = matrix(type, m, k, lda, transA), b = matrix(type, k, n, ldb, transB);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (alpha != 1.0f)
    attr.set_output_scales(0, {alpha});
  if (beta != 0.0f) { // beta 0 never reads C (a NaN there is overwritten)
    dnnl::post_ops ops;
    ops.append_sum(beta);
    attr.set_post_ops(ops);
  }
  std::optional<dnnl::matmul::primitive_desc> pd = describe(a, b, m, n, ldc, attr);
  if (ldc != n && (!pd || !isBrgemm(*pd))) {
    std::optional<dnnl::matmul::primitive_desc> dense = describe(a, b, m, n, n, attr);
    if (dense && isBrgemm(*dense)) {
      pd = dense;
      e.denseC = true;
    }
  }
  if (!pd)
    return;
  try {
    dnnl::engine &engine = cpuEngine();
    e.primitive = dnnl::matmul(*pd);
    e.a = dnnl::memory(a, engine, DNNL_MEMORY_NONE);
    e.b = dnnl::memory(b, engine, DNNL_MEMORY_NONE);
    e.c = dnnl::memory(pd->dst_desc(), engine, DNNL_MEMORY_NONE);
    e.args = {{DNNL_ARG_SRC, e.a}, {DNNL_ARG_WEIGHTS, e.b}, {DNNL_ARG_DST, e.c}};
    if (pd->scratchpad_desc().get_size() > 0)
      e.args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd->scratchpad_desc(), engine, DNNL_MEMORY_NONE);
    e.available = true;
  } catch (const dnnl::error &) {
    // no kernel for it here: the caller's path runs
  }
}

/// Copies the m x n block between C (rows `ldc` apart) and a dense one.
void copyRows(const float *from, int64_t fromLd, float *to, int64_t toLd, int64_t m, int64_t n) {
  for (int64_t r = 0; r < m; ++r)
    std::memcpy(to + r * toLd, from + r * fromLd, size_t(n) * sizeof(float));
}

std::atomic<uint64_t> runCount{0}, denseRunCount{0};

/// gemmSerial without its size and environment tests.
bool run(DType type, bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
         const void *a, int64_t lda, const void *b, int64_t ldb, float beta, float *c,
         int64_t ldc) {
  std::optional<Dt> dt = dnnlType(type);
  if (!dt)
    return false;
  OneThread oneThread; // made for, and run on, this thread alone
  thread_local std::map<Key, std::unique_ptr<Entry>> cache;
  std::unique_ptr<Entry> &slot =
      cache[{int64_t(type), transA, transB, m, n, k, lda, ldb, ldc, bitsOf(alpha), bitsOf(beta)}];
  if (!slot) {
    slot = std::make_unique<Entry>();
    build(*slot, *dt, transA, transB, m, n, k, alpha, lda, ldb, beta, ldc);
  }
  Entry &e = *slot;
  if (!e.available)
    return false;
  try {
    e.a.set_data_handle(const_cast<void *>(a));
    e.b.set_data_handle(const_cast<void *>(b));
    float *dense = e.denseC ? static_cast<float *>(scratch(5, size_t(m * n) * sizeof(float))) : c;
    if (e.denseC && beta != 0.0f)
      copyRows(c, ldc, dense, n, m, n);
    e.c.set_data_handle(dense);
    // The scratchpad: this thread's scratch buffer number 4, as large as
    // any of its primitives asked (it moves when it grows).
    auto scratchpad = e.args.find(DNNL_ARG_SCRATCHPAD);
    if (scratchpad != e.args.end())
      scratchpad->second.set_data_handle(
          scratch(4, scratchpad->second.get_desc().get_size()));
    dnnl::stream &stream = threadStream();
    e.primitive.execute(stream, e.args);
    stream.wait();
    if (e.denseC) {
      copyRows(dense, n, c, ldc, m, n);
      ++denseRunCount;
    }
  } catch (const dnnl::error &) {
    // oneDNN checks the arguments before it computes: nothing is written,
    // and the caller's path computes the block instead.
    return false;
  }
  ++runCount;
  return true;
}

bool enabled() { return !environmentSays("TRAINC_CPU_GEMM", "openblas"); }

} // namespace

uint64_t runs() { return runCount.load(); }

uint64_t denseRuns() { return denseRunCount.load(); }

bool worthIt(int64_t m, int64_t n, int64_t k) {
  return double(m) * double(n) * double(k) >= kMinMacs && enabled();
}

bool gemmSerial(DType type, bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                float beta, float *c, int64_t ldc) {
  return worthIt(m, n, k) &&
         run(type, transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool hasFastBf16() {
  static const bool available = [] {
    static uint16_t a[64 * 64] = {};
    static float c[64 * 64];
    return run(DType::BF16, false, false, 64, 64, 64, 1.0f, a, 64, a, 64, 0.0f, c, 64);
  }();
  return available;
}

} // namespace trainc::cpu::dnnl_matmul
