//===- Loss.cpp - cross entropy, negative log likelihood, squared error ---===//
//
// PyTorch semantics: a sample whose label equals ignore_index contributes 0
// and is left out of the mean's divisor; a mean over no samples is NaN
// (0 / 0), as in PyTorch. Sums accumulate in double so the result does not
// depend on the batch size's rounding, over chunks of kChunk elements (fixed
// by the size, not by the thread count) added in chunk order, so the result
// is the same with any number of threads.
//
//===----------------------------------------------------------------------===//

#include "../common/KernelChecks.h"
#include "RowMath.h"
#include "Threading.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace trainc::cpu {
using namespace ::trainc::rt;

namespace {

/// Elements per partial sum of a reduced loss.
constexpr int64_t kChunk = 1024;

/// The sum of term(i) over [0, count), in double: chunks of kChunk terms in
/// parallel, each summed in order, the chunk sums then added in order.
template <typename Term>
double orderedSum(int64_t count, Term term) {
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  std::vector<double> partial(size_t(chunks), 0.0);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    double sum = 0;
    for (int64_t i = c * kChunk, end = std::min(count, i + kChunk); i < end; ++i)
      sum += term(i);
    partial[size_t(c)] = sum;
  }
  double total = 0;
  for (double p : partial)
    total += p;
  return total;
}

/// Checks every label before any loss is computed, so that an error leaves
/// `out` untouched and names the first offending sample.
Status checkLabels(const char *kernel, int64_t n, int64_t c, int64_t inner,
                   const int64_t *labels, bool hasIgnoreIndex,
                   int64_t ignoreIndex) {
  for (int64_t s = 0; s < n * inner; ++s) {
    int64_t label = labels[s];
    if ((hasIgnoreIndex && label == ignoreIndex) || (label >= 0 && label < c))
      continue;
    std::string where = inner == 1 ? "[" + std::to_string(s) + "]"
                                   : "[" + std::to_string(s / inner) + ", " +
                                         std::to_string(s % inner) + "]";
    return Status::error(
        std::string(kernel) + ": label " + std::to_string(label) + " at " +
        where + " is outside [0, " + std::to_string(c) + ")" +
        (hasIgnoreIndex
             ? " and is not the ignore_index " + std::to_string(ignoreIndex)
             : ""));
  }
  return Status();
}

/// Shared driver: `sampleLoss(s, column, label)` returns the loss of
/// sample s, where column points at class 0 of the sample's [c] column
/// (stride `inner`). `prepare()` runs once the arguments are checked,
/// before any sample's loss.
template <typename SampleLoss, typename Prepare>
Status classLoss(const char *kernel, int64_t n, int64_t c, int64_t inner,
                 const float *input, const int64_t *labels, bool hasIgnoreIndex,
                 int64_t ignoreIndex, Reduction reduction, float *out,
                 SampleLoss sampleLoss, Prepare prepare) {
  TRAINC_RETURN_IF_ERROR(checkNotNull(
      kernel, {{"input", input}, {"labels", labels}, {"out", out}}));
  TRAINC_RETURN_IF_ERROR(
      checkPositive(kernel, {{"n", n}, {"c", c}, {"inner", inner}}));
  TRAINC_RETURN_IF_ERROR(checkReduction(kernel, reduction));
  int64_t unused;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {n, c, inner}, unused));
  TRAINC_RETURN_IF_ERROR(
      checkLabels(kernel, n, c, inner, labels, hasIgnoreIndex, ignoreIndex));

  prepare();
  const int64_t samples = n * inner;
  int64_t counted = 0;
  for (int64_t s = 0; s < samples; ++s)
    counted += hasIgnoreIndex && labels[s] == ignoreIndex ? 0 : 1;
  // Every sample's loss first, over the threads where the work is worth
  // them (an exp a value costs some 16 simple operations), then the
  // ordered sum over the losses: the same result with any thread count.
  std::vector<double> losses(static_cast<size_t>(samples));
#pragma omp parallel for schedule(static) if (detail::worthThreads(samples * c * 16))
  for (int64_t s = 0; s < samples; ++s) {
    const int64_t label = labels[s];
    const bool ignored = hasIgnoreIndex && label == ignoreIndex;
    const float *column = input + (s / inner) * c * inner + s % inner;
    losses[static_cast<size_t>(s)] = ignored ? 0.0 : sampleLoss(s, column, label);
    if (reduction == Reduction::None)
      out[s] = float(losses[static_cast<size_t>(s)]);
  }
  const double total =
      orderedSum(samples, [&](int64_t s) { return losses[static_cast<size_t>(s)]; });
  if (reduction == Reduction::Sum)
    *out = float(total);
  else if (reduction == Reduction::Mean)
    *out = counted ? float(total / double(counted))
                   : std::numeric_limits<float>::quiet_NaN();
  return Status();
}

/// logsumexp of c values `stride` apart, one at a time: a NaN is the
/// maximum (std::max would skip it), and a NaN, an inf or only -inf give
/// NaN (exp(inf - inf)), as PyTorch.
double logSumExp(const float *x, int64_t c, int64_t stride) {
  float maximum = x[0];
  for (int64_t k = 1; k < c; ++k) {
    const float v = x[k * stride];
    if (v > maximum || v != v)
      maximum = v;
  }
  // exp of x - max <= 0 in f32 (as PyTorch computes it; within an ulp),
  // summed in double.
  double sum = 0;
  for (int64_t k = 0; k < c; ++k)
    sum += double(std::exp(x[k * stride] - maximum));
  return double(maximum) + std::log(sum);
}

/// logsumexp over the classes of every sample of [n, c, inner] logits
/// (inner > 1), in double: 64 neighbouring samples at a time, whose
/// classes' loads are contiguous and whose exps vectorize across them
/// (RowMath.h); a block with a maximum that is not finite (a NaN, an inf,
/// only -inf) goes one sample at a time.
std::vector<double> columnLogSumExps(int64_t n, int64_t c, int64_t inner, const float *x) {
  constexpr int64_t kWidth = detail::kMaxColumns;
  std::vector<double> out(size_t(n * inner));
  const int64_t blocks = (inner + kWidth - 1) / kWidth;
#pragma omp parallel for schedule(static) if (detail::worthThreads(n * c * inner * 16))
  for (int64_t t = 0; t < n * blocks; ++t) {
    const int64_t b = t / blocks, begin = (t % blocks) * kWidth;
    const int64_t width = std::min(kWidth, inner - begin);
    const float *in = x + b * c * inner + begin;
    double *lse = out.data() + b * inner + begin;
    float maxima[kWidth];
    if (!detail::columnMaxima(in, c, inner, width, maxima)) {
      for (int64_t i = 0; i < width; ++i)
        lse[i] = logSumExp(in + i, c, inner);
      continue;
    }
    double sums[kWidth] = {};
    for (int64_t k = 0; k < c; ++k)
      for (int64_t i = 0; i < width; ++i)
        sums[i] += detail::shiftedExp(in[k * inner + i], maxima[i]);
    for (int64_t i = 0; i < width; ++i)
      lse[i] = double(maxima[i]) + std::log(sums[i]);
  }
  return out;
}

} // namespace

Status softmaxCrossEntropy(Context &ctx, int64_t n, int64_t c, int64_t inner,
                           const float *logits, const int64_t *labels,
                           bool hasIgnoreIndex, int64_t ignoreIndex,
                           Reduction reduction, float *out) {
  (void)ctx;
  // -log softmax(x)[label] = logsumexp(x) - x[label], with the maximum
  // subtracted inside the exponent so large logits cannot overflow. A
  // contiguous row (inner == 1) in vectorized lanes; strided classes
  // ([n, c, d], a segmentation's) have every sample's logsumexp computed
  // first, for 64 neighbouring samples at a time.
  std::vector<double> logSumExps;
  auto prepare = [&] {
    if (inner > 1)
      logSumExps = columnLogSumExps(n, c, inner, logits);
  };
  auto sampleLoss = [&](int64_t s, const float *column, int64_t label) {
    if (inner > 1)
      return logSumExps[size_t(s)] - double(column[label * inner]);
    const float maximum = detail::rowMax(column, c);
    if (!std::isfinite(maximum)) // exp(inf - inf): NaN, as PyTorch
      return std::numeric_limits<double>::quiet_NaN();
    return double(maximum) + std::log(detail::rowExpSum(column, c, maximum, nullptr)) -
           double(column[label]);
  };
  return classLoss("softmaxCrossEntropy", n, c, inner, logits, labels,
                   hasIgnoreIndex, ignoreIndex, reduction, out, sampleLoss, prepare);
}

Status nllLoss(Context &ctx, int64_t n, int64_t c, int64_t inner,
               const float *logProbs, const int64_t *labels,
               bool hasIgnoreIndex, int64_t ignoreIndex, Reduction reduction,
               float *out) {
  (void)ctx;
  auto sampleLoss = [inner](int64_t, const float *column, int64_t label) {
    return -double(column[label * inner]);
  };
  return classLoss("nllLoss", n, c, inner, logProbs, labels, hasIgnoreIndex,
                   ignoreIndex, reduction, out, sampleLoss, [] {});
}

Status mseLoss(Context &ctx, int64_t count, const float *prediction,
               const float *target, Reduction reduction, float *out) {
  (void)ctx;
  const char *kernel = "mseLoss";
  TRAINC_RETURN_IF_ERROR(checkNotNull(
      kernel, {{"prediction", prediction}, {"target", target}, {"out", out}}));
  TRAINC_RETURN_IF_ERROR(checkPositive(kernel, {{"count", count}}));
  TRAINC_RETURN_IF_ERROR(checkReduction(kernel, reduction));
  if (reduction == Reduction::None) {
#pragma omp parallel for schedule(static) if (detail::worthThreads(count))
    for (int64_t i = 0; i < count; ++i) {
      float delta = prediction[i] - target[i];
      out[i] = delta * delta;
    }
    return Status();
  }
  const double total = orderedSum(count, [&](int64_t i) {
    double delta = double(prediction[i]) - double(target[i]);
    return delta * delta;
  });
  *out = float(reduction == Reduction::Mean ? total / double(count) : total);
  return Status();
}

} // namespace trainc::cpu
