//===- MixedTest.cpp - bf16/f16 storage and the mixed-precision kernels ---===//
//
// Conversions: float -> bf16 / f16 must round to nearest, ties to even, with
// NaN kept, overflow to infinity and f16 subnormals, checked against the two
// neighbouring 16-bit values (and, for f16, against the compiler's _Float16
// where it has one). Kernels: the CPU's 16-bit GEMM and convolutions widen
// exactly and run the f32 kernels, so they must equal those kernels on the
// widened operands bit for bit, and a 16-bit result must be their result
// rounded once; so must batch norm and pooling (f32 statistics, scale and
// bias, bit-identical to the f32 kernel's).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "trainc_rt/half.h"

#include <array>
#include <cstring>
#include <limits>

namespace trainc::test {
namespace {

namespace tk = trainc::cpu;
using rt::bf16;
using rt::Conv2dDesc;
using rt::DType;
using rt::f16;

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Values around every rounding boundary: random bit patterns of every
/// exponent, and the special values.
std::vector<float> probeValues() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f,
                          6.1035156e-05f, 5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  std::mt19937 engine(7);
  for (int i = 0; i < 200000; ++i)
    v.push_back(floatOf(engine()));
  // Exact ties: the dropped bits are exactly half.
  for (uint32_t m : {0x3f808000u, 0x3f818000u, 0x40490000u | 0x8000u})
    v.push_back(floatOf(m));
  return v;
}

TEST(Half, BF16RoundsToNearestEven) {
  for (float x : probeValues()) {
    float got = bf16(x);
    if (std::isnan(x)) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    if (std::isinf(x)) {
      ASSERT_EQ(bitsOf(got), bitsOf(x));
      continue;
    }
    // The two bf16 values around x: truncated, and one ulp farther from 0
    // (infinity past the largest, which rounds as 2^128 would).
    uint32_t lo = bitsOf(x) & 0xffff0000u, hi = lo + 0x10000u;
    auto value = [](uint32_t bits) {
      float f = floatOf(bits);
      return std::isinf(f) ? std::copysign(std::ldexp(1.0, 128), double(f)) : double(f);
    };
    double dl = std::fabs(value(lo) - double(x)), dh = std::fabs(value(hi) - double(x));
    uint32_t want = dl < dh ? lo : dh < dl ? hi : ((lo >> 16) & 1u) ? hi : lo;
    ASSERT_EQ(bitsOf(got), want) << "x = " << x;
  }
}

TEST(Half, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    f16 v;
    v.bits = uint16_t(h);
    float x = v;
    f16 back = x;
    if (std::isnan(x))
      EXPECT_EQ(back.bits & 0x7c00u, 0x7c00u) << h;
    else
      ASSERT_EQ(back.bits, h) << "f16 bits " << h;
  }
}

#if defined(__FLT16_MAX__)
TEST(Half, F16MatchesTheCompilersConversion) {
  for (float x : probeValues()) {
    _Float16 ref = static_cast<_Float16>(x);
    f16 got = x;
    uint16_t refBits;
    std::memcpy(&refBits, &ref, 2);
    if (std::isnan(x))
      EXPECT_TRUE(std::isnan(float(got)));
    else
      ASSERT_EQ(got.bits, refBits) << "x = " << x;
    EXPECT_EQ(float(got) == float(ref) || std::isnan(x), true);
  }
}
#endif

template <typename H> std::vector<H> rounded(const std::vector<float> &v) {
  return std::vector<H>(v.begin(), v.end());
}

template <typename H> std::vector<float> widened(const std::vector<H> &v) {
  return std::vector<float>(v.begin(), v.end());
}

template <typename H> void checkGemm(bool transA, bool transB) {
  auto ctx = makeContext();
  const int64_t m = 37, n = 29, k = 53, batch = 3;
  auto a = rounded<H>(randomFloats(m * k * batch, 1));
  auto b = rounded<H>(randomFloats(k * n * batch, 2));
  const int64_t lda = transA ? m : k, ldb = transB ? k : n;
  std::vector<float> want(m * n * batch), got32(m * n * batch);
  EXPECT_OK(tk::gemm(*ctx, transA, transB, m, n, k, 1.0f, widened(a).data(), lda, m * k,
                     widened(b).data(), ldb, k * n, 0.0f, want.data(), n, m * n, batch));
  EXPECT_OK(tk::gemm(*ctx, transA, transB, m, n, k, 1.0f, a.data(), lda, m * k, b.data(),
                     ldb, k * n, 0.0f, got32.data(), n, m * n, batch));
  EXPECT_EQ(got32, want) << "an f32 result equals the f32 kernel on the widened operands";
  std::vector<H> got16(m * n * batch);
  EXPECT_OK(tk::gemm(*ctx, transA, transB, m, n, k, 1.0f, a.data(), lda, m * k, b.data(),
                     ldb, k * n, 0.0f, got16.data(), n, m * n, batch));
  EXPECT_EQ(widened(got16), widened(rounded<H>(want))) << "a 16-bit result is rounded once";
  // The bias epilogue adds an f32 row to the f32 sum.
  auto bias = randomFloats(n, 3);
  std::vector<float> wantBias(m * n), gotBias(m * n);
  rt::GemmEpilogue e{nullptr, bias.data(), rt::GemmActivation::Relu, nullptr, nullptr};
  EXPECT_OK(tk::gemmEpilogue(*ctx, transA, transB, m, n, k, widened(a).data(), lda, 0,
                             widened(b).data(), ldb, 0, wantBias.data(), n, 0, 1, e));
  EXPECT_OK(tk::gemmEpilogue(*ctx, transA, transB, m, n, k, a.data(), lda, 0, b.data(), ldb,
                             0, gotBias.data(), n, 0, 1, e));
  EXPECT_EQ(gotBias, wantBias);
}

TEST(GemmMixed, BF16AndF16EqualTheF32KernelOnWidenedOperands) {
  // The widening path (oneDNN's bf16 blocks are checked below); f16 always
  // takes it.
  setenv("TRAINC_CPU_GEMM", "openblas", 1);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("transA=") + (ta ? "1" : "0") + " transB=" + (tb ? "1" : "0"));
      checkGemm<bf16>(ta, tb);
      checkGemm<f16>(ta, tb);
    }
  unsetenv("TRAINC_CPU_GEMM");
  checkGemm<f16>(false, true);
}

/// Norm-wise |got - want| / |want|.
double normError(const std::vector<float> &got, const std::vector<double> &want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff += (got[i] - want[i]) * (got[i] - want[i]);
    norm += want[i] * want[i];
  }
  return std::sqrt(diff / norm);
}

TEST(GemmMixed, BF16BlocksOnOneDnnAccumulateInF32) {
  // bf16 products are exact in f32: what is left is the f32 accumulation of
  // k = 53 terms, far below 1e-6 norm-wise against float64 (bf16 rounding
  // of anything would be 2^-9).
  forEachGemmPath(
      [] {
        for (bool ta : {false, true})
          for (bool tb : {false, true}) {
            SCOPED_TRACE(std::string("transA=") + (ta ? "1" : "0") +
                         " transB=" + (tb ? "1" : "0"));
            auto ctx = makeContext();
            const int64_t m = 37, n = 29, k = 53, batch = 3;
            auto a = widened(rounded<bf16>(randomFloats(m * k * batch, 4)));
            auto b = widened(rounded<bf16>(randomFloats(k * n * batch, 5)));
            const int64_t lda = ta ? m : k, ldb = tb ? k : n;
            std::vector<double> want(m * n * batch);
            for (int64_t t = 0; t < batch; ++t)
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) {
                  double sum = 0;
                  for (int64_t p = 0; p < k; ++p)
                    sum += double(a[t * m * k + (ta ? p * lda + i : i * lda + p)]) *
                           double(b[t * k * n + (tb ? j * ldb + p : p * ldb + j)]);
                  want[t * m * n + i * n + j] = sum;
                }
            auto a16 = rounded<bf16>(a), b16 = rounded<bf16>(b);
            std::vector<float> got(m * n * batch);
            EXPECT_OK(tk::gemm(*ctx, ta, tb, m, n, k, 1.0f, a16.data(), lda, m * k, b16.data(),
                               ldb, k * n, 0.0f, got.data(), n, m * n, batch));
            EXPECT_LE(normError(got, want), 1e-6);
          }
      },
      /*oneDnnRuns=*/tk::dnnl_matmul::hasFastBf16());
}

TEST(GemmMixed, BF16EpilogueIsTheGemmOnItsPreparedC) {
  // A fused Gemm + bias + Relu and the unfused sequence (C = bias, gemm
  // with beta 1, relu) give the same bits on either path: the epilogue only
  // prepares C before each block and finishes it after.
  forEachGemmPath(
      [] {
        auto ctx = makeContext();
        const int64_t m = 130, n = 40, k = 70;
        auto a = rounded<bf16>(randomFloats(m * k, 6)), b = rounded<bf16>(randomFloats(k * n, 7));
        auto bias = randomFloats(n, 8);
        std::vector<float> fused(m * n), unfused(m * n);
        rt::GemmEpilogue e{nullptr, bias.data(), rt::GemmActivation::Relu, nullptr, nullptr};
        EXPECT_OK(tk::gemmEpilogue(*ctx, false, true, m, n, k, a.data(), k, 0, b.data(), k, 0,
                                   fused.data(), n, 0, 1, e));
        for (int64_t i = 0; i < m; ++i)
          std::copy(bias.begin(), bias.end(), unfused.begin() + i * n);
        EXPECT_OK(tk::gemm(*ctx, false, true, m, n, k, 1.0f, a.data(), k, 0, b.data(), k, 0,
                           1.0f, unfused.data(), n, 0, 1));
        for (float &v : unfused)
          v = v < 0.0f ? 0.0f : v;
        EXPECT_EQ(0, std::memcmp(fused.data(), unfused.data(), fused.size() * sizeof(float)));
      },
      /*oneDnnRuns=*/tk::dnnl_matmul::hasFastBf16());
}

TEST(GemmMixed, RejectsWhatItCannotDo) {
  auto ctx = makeContext();
  std::vector<bf16> a(4, bf16(1.0f));
  std::vector<bf16> c16(4);
  std::vector<float> c32(4);
  Status s = tk::gemmMixed(*ctx, DType::F32, DType::F32, false, false, 2, 2, 2, 1.0f,
                           c32.data(), 2, 0, c32.data(), 2, 0, 0.0f, c32.data(), 2, 0, 1,
                           nullptr);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("takes f16 or bf16"), std::string::npos) << s.message();
  s = tk::gemmMixed(*ctx, DType::BF16, DType::F16, false, false, 2, 2, 2, 1.0f, a.data(), 2, 0,
                    a.data(), 2, 0, 0.0f, c16.data(), 2, 0, 1, nullptr);
  EXPECT_FALSE(s.ok());
  rt::GemmEpilogue e{nullptr, nullptr, rt::GemmActivation::None,
                     [](const void *, int64_t, int64_t) {}, nullptr};
  s = tk::gemmEpilogue(*ctx, false, false, 2, 2, 2, a.data(), 2, 0, a.data(), 2, 0, c16.data(),
                       2, 0, 1, e);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("range function needs an f32 C"), std::string::npos)
      << s.message();
}

/// A convolution's y, dx and dw on 16-bit tensors, and of the f32 kernels on
/// the same values widened.
template <typename H> struct ConvResults {
  std::vector<float> y32, dx32, dw32;
  std::vector<H> y, dx, dw;
};

template <typename H> ConvResults<H> runConvBothWays(const Conv2dDesc &d, unsigned seed) {
  auto ctx = makeContext();
  auto x = rounded<H>(randomFloats(d.n * d.c * d.h * d.w, seed));
  auto w = rounded<H>(randomFloats(d.m * (d.c / d.groups) * d.kh * d.kw, seed + 1));
  auto bias = rounded<H>(randomFloats(d.m, seed + 2));
  auto dy = rounded<H>(randomFloats(d.n * d.m * d.outH * d.outW, seed + 3));
  ConvResults<H> r;
  r.y32.resize(dy.size()), r.dx32.resize(x.size()), r.dw32.resize(w.size());
  EXPECT_OK(tk::conv2d(*ctx, d, widened(x).data(), widened(w).data(), widened(bias).data(),
                       r.y32.data()));
  EXPECT_OK(
      tk::conv2dBackwardData(*ctx, d, widened(dy).data(), widened(w).data(), r.dx32.data()));
  EXPECT_OK(tk::conv2dBackwardFilter(*ctx, d, widened(x).data(), widened(dy).data(),
                                     r.dw32.data()));
  r.y.resize(dy.size()), r.dx.resize(x.size()), r.dw.resize(w.size());
  EXPECT_OK(tk::conv2d(*ctx, d, x.data(), w.data(), bias.data(), r.y.data()));
  EXPECT_OK(tk::conv2dBackwardData(*ctx, d, dy.data(), w.data(), r.dx.data()));
  EXPECT_OK(tk::conv2dBackwardFilter(*ctx, d, x.data(), dy.data(), r.dw.data()));
  std::vector<H> noBias(dy.size());
  EXPECT_OK(tk::conv2d(*ctx, d, x.data(), w.data(), nullptr, noBias.data()));
  return r;
}

template <typename H> void checkConv(const Conv2dDesc &d) {
  ConvResults<H> r = runConvBothWays<H>(d, 11);
  EXPECT_EQ(widened(r.y), widened(rounded<H>(r.y32)));
  EXPECT_EQ(widened(r.dx), widened(rounded<H>(r.dx32)));
  EXPECT_EQ(widened(r.dw), widened(rounded<H>(r.dw32)));
}

TEST(ConvMixed, BF16AndF16EqualTheF32KernelsRoundedOnce) {
  // The widening path (oneDNN's own 16-bit kernels are checked below).
  setenv("TRAINC_CPU_CONV", "im2col", 1);
  //             n  c  h  w  m  kh kw sH sW pT pL pB pR dH dW g  outH outW
  Conv2dDesc d{2, 4, 9, 8, 6, 3, 3, 2, 1, 1, 0, 1, 2, 1, 1, 2, 5, 8};
  checkConv<bf16>(d);
  checkConv<f16>(d);
  unsetenv("TRAINC_CPU_CONV");
}

/// y, dx and dw of a 16-bit convolution as the CPU target runs it (oneDNN's
/// bf16 kernels where the CPU has them, else widened to f32), against the
/// f32 kernels on the same (rounded) inputs: within the 16-bit rounding of
/// the results, norm-wise.
template <typename H> void checkConvClose(const Conv2dDesc &d, double tolerance) {
  ConvResults<H> r = runConvBothWays<H>(d, 51);
  auto wide = [](const std::vector<float> &v) { return std::vector<double>(v.begin(), v.end()); };
  EXPECT_LE(normError(widened(r.y), wide(r.y32)), tolerance);
  EXPECT_LE(normError(widened(r.dx), wide(r.dx32)), tolerance);
  EXPECT_LE(normError(widened(r.dw), wide(r.dw32)), tolerance);
}

TEST(ConvMixed, BF16OnOneDnnWithinBF16Rounding) {
  // ResNet-like: 32 channels, 3x3, padded; grouped and strided. bf16's unit
  // roundoff is 2^-9: the results, rounded once, are within it norm-wise
  // (plus the f32 accumulation, far below).
  //                          n  c   h   w   m   kh kw sH sW pT pL pB pR dH dW g
  for (Conv2dDesc d : {Conv2dDesc{4, 32, 12, 10, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 12, 10},
                       Conv2dDesc{2, 16, 11, 9, 24, 3, 2, 2, 1, 1, 0, 1, 1, 1, 2, 4, 6, 8}}) {
    checkConvClose<bf16>(d, 4e-3);
    checkConvClose<f16>(d, 5e-4);
  }
}

template <typename H> void checkBatchNormAndPools() {
  auto ctx = makeContext();
  const int64_t n = 3, c = 4, h = 6, w = 5, spatial = h * w, count = n * c * spatial;
  auto x = rounded<H>(randomFloats(count, 21));
  auto dy = rounded<H>(randomFloats(count, 22));
  auto scale = randomFloats(c, 23, 0.5f, 1.5f), bias = randomFloats(c, 24);
  std::vector<float> mean(c, 0.1f), var(c, 0.9f), mask = {1.0f, 0.0f, 1.0f};
  // Training: y and the running statistics; backward: dx, dscale, dbias.
  std::vector<float> y32(count), m32(c), v32(c), m16(c), v16(c);
  EXPECT_OK(tk::batchNormTraining(*ctx, n, c, spatial, widened(x).data(), scale.data(),
                                  bias.data(), mean.data(), var.data(), mask.data(), 1e-5f, 0.1f,
                                  y32.data(), m32.data(), v32.data()));
  std::vector<H> y(count);
  EXPECT_OK(tk::batchNormTraining(*ctx, n, c, spatial, x.data(), scale.data(), bias.data(),
                                  mean.data(), var.data(), mask.data(), 1e-5f, 0.1f, y.data(),
                                  m16.data(), v16.data()));
  EXPECT_EQ(widened(y), widened(rounded<H>(y32)));
  EXPECT_EQ(m16, m32);
  EXPECT_EQ(v16, v32);
  std::vector<float> dx32(count), ds32(c), db32(c), ds16(c), db16(c);
  EXPECT_OK(tk::batchNormBackward(*ctx, n, c, spatial, widened(x).data(), scale.data(),
                                  widened(dy).data(), mask.data(), 1e-5f, dx32.data(),
                                  ds32.data(), db32.data()));
  std::vector<H> dx(count);
  EXPECT_OK(tk::batchNormBackward(*ctx, n, c, spatial, x.data(), scale.data(), dy.data(),
                                  mask.data(), 1e-5f, dx.data(), ds16.data(), db16.data()));
  EXPECT_EQ(widened(dx), widened(rounded<H>(dx32)));
  EXPECT_EQ(ds16, ds32);
  EXPECT_EQ(db16, db32);
  std::vector<float> inf32(count);
  std::vector<H> inf(count);
  EXPECT_OK(tk::batchNormInference(*ctx, n, c, spatial, widened(x).data(), scale.data(),
                                   bias.data(), mean.data(), var.data(), 1e-5f, inf32.data()));
  EXPECT_OK(tk::batchNormInference(*ctx, n, c, spatial, x.data(), scale.data(), bias.data(),
                                   mean.data(), var.data(), 1e-5f, inf.data()));
  EXPECT_EQ(widened(inf), widened(rounded<H>(inf32)));
  // Pools: 3x3 windows, stride 2, padding 1.
  rt::Pool2dDesc d{n, c, h, w, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 3, 3};
  const int64_t pooled = n * c * 3 * 3;
  auto dp = rounded<H>(randomFloats(pooled, 25));
  for (bool maxPool : {true, false}) {
    SCOPED_TRACE(maxPool ? "max" : "average");
    std::vector<float> p32(pooled), g32(count);
    std::vector<H> p(pooled), g(count);
    if (maxPool) {
      EXPECT_OK(tk::maxPool2d(*ctx, d, widened(x).data(), p32.data()));
      EXPECT_OK(tk::maxPool2d(*ctx, d, x.data(), p.data()));
      EXPECT_OK(tk::maxPool2dBackward(*ctx, d, widened(x).data(), widened(dp).data(), g32.data()));
      EXPECT_OK(tk::maxPool2dBackward(*ctx, d, x.data(), dp.data(), g.data()));
    } else {
      EXPECT_OK(tk::avgPool2d(*ctx, d, false, widened(x).data(), p32.data()));
      EXPECT_OK(tk::avgPool2d(*ctx, d, false, x.data(), p.data()));
      EXPECT_OK(tk::avgPool2dBackward(*ctx, d, false, widened(dp).data(), g32.data()));
      EXPECT_OK(tk::avgPool2dBackward(*ctx, d, false, dp.data(), g.data()));
    }
    EXPECT_EQ(widened(p), widened(rounded<H>(p32)));
    EXPECT_EQ(widened(g), widened(rounded<H>(g32)));
  }
}

TEST(NormPoolMixed, BF16AndF16EqualTheF32KernelsRoundedOnce) {
  checkBatchNormAndPools<bf16>();
  checkBatchNormAndPools<f16>();
}

/// A reduction of a 16-bit x into f32 equals the f32 kernel on the widened x
/// bit for bit: it reads x in its own type and accumulates as the f32 one.
template <typename H> void checkReduce() {
  auto ctx = makeContext();
  auto x = rounded<H>(randomFloats(4 * 37 * 70, 31));
  for (rt::ReduceKind kind : {rt::ReduceKind::Sum, rt::ReduceKind::Mean, rt::ReduceKind::Max})
    for (auto [outer, axis, inner] :
         {std::array<int64_t, 3>{4, 37, 70}, {1, 4 * 37 * 70, 1}, {4 * 37, 70, 1}}) {
      SCOPED_TRACE("kind " + std::to_string(int(kind)) + " inner " + std::to_string(inner));
      std::vector<float> want(outer * inner), got(outer * inner, -1.0f);
      EXPECT_OK(tk::reduce(*ctx, kind, outer, axis, inner, widened(x).data(), want.data()));
      EXPECT_OK(tk::reduce(*ctx, kind, outer, axis, inner, x.data(), got.data()));
      EXPECT_EQ(got, want);
    }
  std::vector<float> y(1);
  EXPECT_ERROR(tk::reduceMixed(*ctx, DType::F32, rt::ReduceKind::Sum, 1, 1, 1, x.data(), y.data()),
               "takes f16 or bf16");
}

TEST(ReduceMixed, BF16AndF16EqualTheF32KernelOnWidenedInput) {
  checkReduce<bf16>();
  checkReduce<f16>();
}

} // namespace
} // namespace trainc::test
