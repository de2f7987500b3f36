//===- LossGatherTest.cpp - losses and gather -----------------------------===//
//
// Loss references follow the ONNX SoftmaxCrossEntropyLoss /
// NegativeLogLikelihoodLoss definitions (which are PyTorch's): ignored
// samples contribute 0 and leave the mean's divisor. Tolerance rtol 1e-5,
// atol 1e-6 (1e-5 for CE on logits near 1e3, whose f32 inputs already carry
// that much rounding).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include <cstring>

namespace trainc::test {
namespace {

namespace tk = trainc::cpu;
using rt::Reduction;

constexpr double kRtol = 1e-5, kAtol = 1e-6;

/// Loss of every sample of [n, c, inner] inputs (0 where ignored), with
/// `fromLogits` choosing -log softmax(x)[label] or -x[label].
std::vector<double> perSampleLoss(int64_t n, int64_t c, int64_t inner,
                                  const std::vector<float> &x,
                                  const std::vector<int64_t> &labels,
                                  int64_t ignoreIndex, bool fromLogits) {
  std::vector<double> loss(n * inner);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < inner; ++j) {
      int64_t label = labels[i * inner + j];
      if (label == ignoreIndex)
        continue;
      auto at = [&](int64_t k) { return x[(i * c + k) * inner + j]; };
      if (!fromLogits) {
        loss[i * inner + j] = -at(label);
        continue;
      }
      double m = at(0), sum = 0;
      for (int64_t k = 1; k < c; ++k)
        m = std::max(m, double(at(k)));
      for (int64_t k = 0; k < c; ++k)
        sum += std::exp(at(k) - m);
      loss[i * inner + j] = -(at(label) - m - std::log(sum));
    }
  return loss;
}

void checkReductions(bool fromLogits, int64_t n, int64_t c, int64_t inner,
                     float low, float high, double atol) {
  auto ctx = makeContext();
  auto x = randomFloats(n * c * inner, 71, low, high);
  const int64_t ignore = -100;
  std::vector<int64_t> labels(n * inner);
  for (size_t s = 0; s < labels.size(); ++s)
    labels[s] = s % 4 == 1 ? ignore : int64_t((s * 7) % c);
  std::vector<double> loss =
      perSampleLoss(n, c, inner, x, labels, ignore, fromLogits);
  double sum = 0;
  int64_t counted = 0;
  for (size_t s = 0; s < labels.size(); ++s) {
    sum += loss[s];
    counted += labels[s] != ignore;
  }
  auto run = [&](Reduction reduction, float *out) {
    return fromLogits ? tk::softmaxCrossEntropy(*ctx, n, c, inner, x.data(),
                                                labels.data(), true, ignore,
                                                reduction, out)
                      : tk::nllLoss(*ctx, n, c, inner, x.data(), labels.data(),
                                    true, ignore, reduction, out);
  };
  std::vector<float> none(n * inner, std::nanf(""));
  EXPECT_OK(run(Reduction::None, none.data()));
  EXPECT_TRUE(allClose(none, loss, kRtol, atol));
  std::vector<float> scalar(1);
  EXPECT_OK(run(Reduction::Sum, scalar.data()));
  EXPECT_TRUE(allClose(scalar, {sum}, kRtol, atol * n * inner));
  EXPECT_OK(run(Reduction::Mean, scalar.data()));
  EXPECT_TRUE(allClose(scalar, {sum / counted}, kRtol, atol));
}

TEST(SoftmaxCrossEntropy, IgnoreIndexAllReductions) {
  forEachThreadCount([] {
    checkReductions(true, 6, 5, 1, -3, 3, kAtol);
    checkReductions(true, 3, 4, 7, -3, 3, kAtol); // [n, c, d] (segmentation)
  });
}

TEST(SoftmaxCrossEntropy, RowLengthsAroundLanesAndBlocks) {
  // Contiguous classes (inner 1) sum their exps in RowMath.h's lanes and
  // blocks of 256.
  for (int64_t c : {1, 7, 8, 9, 64, 255, 257, 600}) {
    SCOPED_TRACE("classes=" + std::to_string(c));
    checkReductions(true, 4, c, 1, -20, 20, kAtol);
  }
}

TEST(SoftmaxCrossEntropy, StridedBlocksWithSpecialValues) {
  // [n, c, d] logits go 64 positions at a time (a block with a NaN or an
  // inf one at a time): 70 = a full and a partial block. Per position:
  // NaN where a logit is NaN or inf, inf where the label's logit is -inf
  // (masked out), else the float64 value.
  checkReductions(true, 2, 5, 70, -3, 3, kAtol);
  auto ctx = makeContext();
  const int64_t n = 1, c = 3, inner = 70;
  std::vector<float> x = randomFloats(n * c * inner, 71, -3, 3);
  const float inf = std::numeric_limits<float>::infinity();
  x[1 * inner + 5] = std::nanf("");
  x[2 * inner + 66] = inf;
  x[0 * inner + 40] = -inf;
  std::vector<int64_t> labels(inner, 1);
  labels[40] = 0;
  std::vector<float> loss(inner);
  EXPECT_OK(tk::softmaxCrossEntropy(*ctx, n, c, inner, x.data(), labels.data(), false, 0,
                                    Reduction::None, loss.data()));
  for (int64_t i = 0; i < inner; ++i) {
    if (i == 5 || i == 66) {
      EXPECT_TRUE(std::isnan(loss[i])) << i;
      continue;
    }
    if (i == 40) {
      EXPECT_EQ(inf, loss[i]);
      continue;
    }
    double m = -inf, sum = 0;
    for (int64_t k = 0; k < c; ++k)
      m = std::max(m, double(x[k * inner + i]));
    for (int64_t k = 0; k < c; ++k)
      sum += std::exp(double(x[k * inner + i]) - m);
    EXPECT_NEAR(m + std::log(sum) - x[labels[i] * inner + i], loss[i], 1e-5) << i;
  }
}

TEST(SoftmaxCrossEntropy, LargeLogits) {
  checkReductions(true, 5, 10, 1, 900, 1000, 1e-5);
}

TEST(NllLoss, IgnoreIndexAllReductions) {
  forEachThreadCount([] {
    checkReductions(false, 6, 5, 1, -3, 0, kAtol);
    checkReductions(false, 3, 4, 7, -3, 0, kAtol);
  });
}

TEST(SoftmaxCrossEntropy, KnownValue) {
  // PyTorch: F.cross_entropy(tensor([[1., 2., 3.], [1., 1., 1.]]),
  // tensor([2, 0])) = mean(0.40760597, 1.09861229) = 0.75310913.
  auto ctx = makeContext();
  std::vector<float> x = {1, 2, 3, 1, 1, 1};
  std::vector<int64_t> labels = {2, 0};
  std::vector<float> out(1);
  EXPECT_OK(tk::softmaxCrossEntropy(*ctx, 2, 3, 1, x.data(), labels.data(),
                                    false, 0, Reduction::Mean, out.data()));
  EXPECT_TRUE(allClose(out, {0.75310913}, kRtol, kAtol));
}

TEST(SoftmaxCrossEntropy, AllIgnoredMeanIsNaN) {
  auto ctx = makeContext();
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<int64_t> labels = {-1, -1};
  float out = 0;
  EXPECT_OK(tk::softmaxCrossEntropy(*ctx, 2, 2, 1, x.data(), labels.data(),
                                    true, -1, Reduction::Mean, &out));
  EXPECT_TRUE(std::isnan(out)); // PyTorch: 0 / 0
  EXPECT_OK(tk::softmaxCrossEntropy(*ctx, 2, 2, 1, x.data(), labels.data(),
                                    true, -1, Reduction::Sum, &out));
  EXPECT_EQ(out, 0.0f);
}

TEST(SoftmaxCrossEntropy, LabelOutOfRangeIsAnError) {
  auto ctx = makeContext();
  std::vector<float> x(12), none(4);
  std::vector<int64_t> labels = {0, 1, 3, 2};
  float out = 42;
  EXPECT_ERROR(tk::softmaxCrossEntropy(*ctx, 4, 3, 1, x.data(), labels.data(),
                                       false, 0, Reduction::Mean, &out),
               "label 3 at [2] is outside [0, 3)");
  EXPECT_EQ(out, 42); // untouched
  labels = {0, -100, 1, -5};
  EXPECT_ERROR(tk::nllLoss(*ctx, 2, 3, 2, x.data(), labels.data(), true, -100,
                           Reduction::None, none.data()),
               "nllLoss: label -5 at [1, 1] is outside [0, 3) and is not the "
               "ignore_index -100");
  EXPECT_ERROR(tk::nllLoss(*ctx, 2, 3, 2, x.data(), labels.data(), true, -100,
                           static_cast<Reduction>(9), none.data()),
               "invalid reduction 9");
}

TEST(MseLoss, AllReductions) {
  forEachThreadCount([] {
    auto ctx = makeContext();
    const int64_t count = 1000;
    auto p = randomFloats(count, 81), t = randomFloats(count, 82);
    std::vector<double> each(count);
    double sum = 0;
    for (int64_t i = 0; i < count; ++i) {
      each[i] = (double(p[i]) - t[i]) * (double(p[i]) - t[i]);
      sum += each[i];
    }
    std::vector<float> none(count);
    EXPECT_OK(tk::mseLoss(*ctx, count, p.data(), t.data(), Reduction::None,
                          none.data()));
    EXPECT_TRUE(allClose(none, each, kRtol, kAtol));
    std::vector<float> scalar(1);
    EXPECT_OK(tk::mseLoss(*ctx, count, p.data(), t.data(), Reduction::Sum,
                          scalar.data()));
    EXPECT_TRUE(allClose(scalar, {sum}, kRtol, kAtol));
    EXPECT_OK(tk::mseLoss(*ctx, count, p.data(), t.data(), Reduction::Mean,
                          scalar.data()));
    EXPECT_TRUE(allClose(scalar, {sum / count}, kRtol, kAtol));
    EXPECT_ERROR(tk::mseLoss(*ctx, 0, p.data(), t.data(), Reduction::Mean,
                             scalar.data()),
                 "count must be positive");
  });
}

TEST(Gather, BytesOfAnyElementSizeWithNegativeIndices) {
  auto ctx = makeContext();
  // data [outer=2, axis=5, inner=3] of int64.
  std::vector<int64_t> data(30);
  for (int64_t i = 0; i < 30; ++i)
    data[i] = i * 1000003 + (int64_t(1) << 40); // high bytes matter
  std::vector<int64_t> indices = {4, 0, -1, -5, 2};
  std::vector<int64_t> out(2 * 5 * 3, -1);
  EXPECT_OK(tk::gather(*ctx, 2, 5, 3, sizeof(int64_t), data.data(),
                       indices.data(), 5, out.data()));
  for (int64_t o = 0; o < 2; ++o)
    for (int64_t j = 0; j < 5; ++j) {
      int64_t row = indices[j] < 0 ? indices[j] + 5 : indices[j];
      for (int64_t i = 0; i < 3; ++i)
        EXPECT_EQ(out[(o * 5 + j) * 3 + i], data[(o * 5 + row) * 3 + i])
            << "o=" << o << " j=" << j << " i=" << i;
    }
  // One-byte elements (i1), an embedding-style lookup (outer 1).
  std::vector<unsigned char> bytes = {1, 0, 0, 1, 1, 1};
  std::vector<int64_t> pick = {2, 0, 2};
  std::vector<unsigned char> got(6, 9);
  EXPECT_OK(
      tk::gather(*ctx, 1, 3, 2, 1, bytes.data(), pick.data(), 3, got.data()));
  EXPECT_EQ(got, (std::vector<unsigned char>{1, 1, 1, 0, 1, 1}));
}

TEST(Gather, LargeCopyIsParallelAndExact) {
  forEachThreadCount([] {
    auto ctx = makeContext();
    const int64_t axis = 100, inner = 512;
    auto table = randomFloats(axis * inner, 91);
    std::vector<int64_t> indices(1000);
    for (size_t j = 0; j < indices.size(); ++j)
      indices[j] = int64_t((j * 37) % axis);
    std::vector<float> out(indices.size() * inner);
    EXPECT_OK(tk::gather(*ctx, 1, axis, inner, 4, table.data(), indices.data(),
                         indices.size(), out.data()));
    for (size_t j = 0; j < indices.size(); ++j)
      ASSERT_EQ(
          std::memcmp(&out[j * inner], &table[indices[j] * inner], inner * 4),
          0)
          << "row " << j;
  });
}

TEST(Gather, OutOfRangeIndexIsNamed) {
  auto ctx = makeContext();
  std::vector<float> data(10), out(10);
  std::vector<int64_t> indices = {0, 4, 5};
  EXPECT_ERROR(
      tk::gather(*ctx, 2, 5, 1, 4, data.data(), indices.data(), 3, out.data()),
      "gather: index 5 at position 2 is outside [-5, 5)");
  indices = {-6};
  EXPECT_ERROR(
      tk::gather(*ctx, 2, 5, 1, 4, data.data(), indices.data(), 1, out.data()),
      "index -6 at position 0");
  EXPECT_ERROR(
      tk::gather(*ctx, 2, 5, 1, 4, data.data(), nullptr, 1, out.data()),
      "indices is null");
}

} // namespace
} // namespace trainc::test
