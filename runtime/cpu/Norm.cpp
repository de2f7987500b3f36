//===- Norm.cpp - batch and layer normalization ---------------------------===//

#include "../common/KernelChecks.h"
#include "ChannelsLast.h"
#include "RowMath.h"
#include "Threading.h"

#include <cmath>
#include <string>
#include <vector>

namespace trainc::cpu {
using namespace ::trainc::rt;

using detail::kLanes;
using detail::laneSum;
using detail::laneTotal;

namespace {

/// A fused norm's prologue and epilogue over elements [begin, end).
void runPrologue(const NormFusion *f, int64_t begin, int64_t end) {
  if (f && f->prologue)
    f->prologue(f->prologueEnv, begin, end);
}
void runEpilogue(const NormFusion *f, int64_t begin, int64_t end) {
  if (f && f->epilogue)
    f->epilogue(f->epilogueEnv, begin, end);
}

/// Two lane sums (RowMath.h) in one pass: `terms(i, a, b)` sets term i
/// of each.
template <typename Terms>
void laneSums(int64_t count, Terms terms, double &sumA, double &sumB) {
  double laneA[kLanes] = {}, laneB[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      double a, b;
      terms(i + l, a, b);
      laneA[l] += a;
      laneB[l] += b;
    }
  double tailA = 0, tailB = 0;
  for (; i < count; ++i) {
    double a, b;
    terms(i, a, b);
    tailA += a;
    tailB += b;
  }
  sumA = laneTotal(laneA, tailA);
  sumB = laneTotal(laneB, tailB);
}

/// `fn` over a whole [n, ...] tensor stored channels-last, a sample's
/// elements at a time: the prologue before the NCHW kernel copies its
/// input, the epilogue after it copied its output back.
void overSamples(ElementRangeFn fn, const void *env, int64_t n, int64_t sample) {
  if (!fn)
    return;
#pragma omp parallel for schedule(static) if (detail::worthThreads(n * sample))
  for (int64_t b = 0; b < n; ++b)
    fn(env, b * sample, (b + 1) * sample);
}

/// A channels-last call of a norm with `fusion`: the prologue over the
/// input first, then `call` (the NCHW kernel, without fusion), then the
/// epilogue over the output.
template <typename Call>
Status channelsLastFused(const NormFusion *fusion, int64_t n, int64_t sample, Call call) {
  if (fusion)
    overSamples(fusion->prologue, fusion->prologueEnv, n, sample);
  TRAINC_RETURN_IF_ERROR(call());
  if (fusion)
    overSamples(fusion->epilogue, fusion->epilogueEnv, n, sample);
  return Status();
}

} // namespace

Status batchNormInference(Context &ctx, int64_t n, int64_t c, int64_t spatial,
                          const float *x, const float *scale, const float *bias,
                          const float *mean, const float *var, float epsilon,
                          float *y, bool channelsLast, const NormFusion *fusion) {
  (void)ctx;
  const char *kernel = "batchNormInference";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x},
                                               {"scale", scale},
                                               {"bias", bias},
                                               {"mean", mean},
                                               {"var", var},
                                               {"y", y}}));
  TRAINC_RETURN_IF_ERROR(checkBatchNormShape(kernel, n, c, spatial));
  if (channelsLast)
    return channelsLastFused(fusion, n, c * spatial, [&] {
      return viaChannelsFirst({{x, nullptr, n, c, spatial}, {nullptr, y, n, c, spatial}},
                              [&](float *const *f) {
                                return batchNormInference(ctx, n, c, spatial, f[0], scale,
                                                          bias, mean, var, epsilon, f[1]);
                              });
    });
  // Fold the statistics into one multiply-add per element:
  // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a.
  std::vector<float> mul(c), add(c);
  for (int64_t i = 0; i < c; ++i) {
    double a = double(scale[i]) / std::sqrt(double(var[i]) + double(epsilon));
    mul[i] = float(a);
    add[i] = float(double(bias[i]) - double(mean[i]) * a);
  }
  const int64_t planes = n * c;
#pragma omp parallel for schedule(static) if (detail::worthThreads(planes * spatial))
  for (int64_t p = 0; p < planes; ++p) {
    const float a = mul[p % c], b = add[p % c];
    runPrologue(fusion, p * spatial, (p + 1) * spatial);
    const float *in = x + p * spatial;
    float *out = y + p * spatial;
    for (int64_t i = 0; i < spatial; ++i)
      out[i] = in[i] * a + b;
    runEpilogue(fusion, p * spatial, (p + 1) * spatial);
  }
  return Status();
}

namespace {

/// Mean and biased variance of one channel over the kept samples, in double
/// and in two passes (no E[x^2] - E[x]^2 cancellation). `count` is the
/// number of values averaged.
struct ChannelStats {
  double mean = 0, var = 0;
  int64_t count = 0;
};

ChannelStats channelStats(int64_t n, int64_t c, int64_t spatial, int64_t ch,
                          const float *x, const float *mask) {
  ChannelStats s;
  double sum = 0;
  for (int64_t b = 0; b < n; ++b) {
    if (mask && mask[b] == 0.0f)
      continue;
    const float *in = x + (b * c + ch) * spatial;
    sum += laneSum(spatial, [in](int64_t i) { return double(in[i]); });
    s.count += spatial;
  }
  if (s.count == 0)
    return s;
  s.mean = sum / double(s.count);
  double squares = 0;
  for (int64_t b = 0; b < n; ++b) {
    if (mask && mask[b] == 0.0f)
      continue;
    const float *in = x + (b * c + ch) * spatial;
    const double mean = s.mean;
    squares += laneSum(spatial, [in, mean](int64_t i) {
      const double d = in[i] - mean;
      return d * d;
    });
  }
  s.var = squares / double(s.count);
  return s;
}

/// Checks the sizes and counts the values each channel averages over; fewer
/// than two is an error (the unbiased variance is undefined), as in PyTorch.
Status checkBatchShape(const char *kernel, int64_t n, int64_t c, int64_t spatial,
                       const float *mask) {
  TRAINC_RETURN_IF_ERROR(checkBatchNormShape(kernel, n, c, spatial));
  int64_t kept = 0;
  for (int64_t b = 0; b < n; ++b)
    kept += !mask || mask[b] != 0.0f;
  if (kept * spatial < 2)
    return Status::error(std::string(kernel) + ": " + std::to_string(kept) +
                         " sample(s) of " + std::to_string(spatial) +
                         " value(s) per channel: training batch norm needs at least two "
                         "values per channel (use a larger batch)");
  return Status();
}

} // namespace

Status batchNormTraining(Context &ctx, int64_t n, int64_t c, int64_t spatial,
                         const float *x, const float *scale, const float *bias,
                         const float *runningMean, const float *runningVar,
                         const float *mask, float epsilon, float momentum,
                         float *y, float *newMean, float *newVar, bool channelsLast,
                         const NormFusion *fusion) {
  (void)ctx;
  const char *kernel = "batchNormTraining";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x},
                                               {"scale", scale},
                                               {"bias", bias},
                                               {"runningMean", runningMean},
                                               {"runningVar", runningVar},
                                               {"y", y},
                                               {"newMean", newMean},
                                               {"newVar", newVar}}));
  TRAINC_RETURN_IF_ERROR(checkBatchShape(kernel, n, c, spatial, mask));
  if (channelsLast)
    return channelsLastFused(fusion, n, c * spatial, [&] {
      return viaChannelsFirst({{x, nullptr, n, c, spatial}, {nullptr, y, n, c, spatial}},
                              [&](float *const *f) {
                                return batchNormTraining(ctx, n, c, spatial, f[0], scale, bias,
                                                         runningMean, runningVar, mask, epsilon,
                                                         momentum, f[1], newMean, newVar);
                              });
    });
#pragma omp parallel for schedule(static) if (detail::worthThreads(n * c * spatial))
  for (int64_t ch = 0; ch < c; ++ch) {
    for (int64_t k = 0; k < n; ++k)
      runPrologue(fusion, (k * c + ch) * spatial, (k * c + ch + 1) * spatial);
    ChannelStats s = channelStats(n, c, spatial, ch, x, mask);
    const double rstd = 1.0 / std::sqrt(s.var + double(epsilon));
    const float a = float(double(scale[ch]) * rstd);
    const float b = float(double(bias[ch]) - s.mean * double(scale[ch]) * rstd);
    for (int64_t k = 0; k < n; ++k) {
      const float *in = x + (k * c + ch) * spatial;
      float *out = y + (k * c + ch) * spatial;
      for (int64_t i = 0; i < spatial; ++i)
        out[i] = in[i] * a + b;
      runEpilogue(fusion, (k * c + ch) * spatial, (k * c + ch + 1) * spatial);
    }
    const double unbiased = s.var * double(s.count) / double(s.count - 1);
    newMean[ch] = float(double(momentum) * runningMean[ch] +
                        (1.0 - double(momentum)) * s.mean);
    newVar[ch] = float(double(momentum) * runningVar[ch] +
                       (1.0 - double(momentum)) * unbiased);
  }
  return Status();
}

Status batchNormBackward(Context &ctx, int64_t n, int64_t c, int64_t spatial,
                         const float *x, const float *scale, const float *dy,
                         const float *mask, float epsilon, float *dx,
                         float *dscale, float *dbias, bool channelsLast,
                         const NormFusion *fusion) {
  (void)ctx;
  const char *kernel = "batchNormBackward";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x},
                                               {"scale", scale},
                                               {"dy", dy},
                                               {"dx", dx},
                                               {"dscale", dscale},
                                               {"dbias", dbias}}));
  TRAINC_RETURN_IF_ERROR(checkBatchShape(kernel, n, c, spatial, mask));
  if (channelsLast)
    return channelsLastFused(fusion, n, c * spatial, [&] {
      return viaChannelsFirst({{x, nullptr, n, c, spatial},
                               {dy, nullptr, n, c, spatial},
                               {nullptr, dx, n, c, spatial}},
                              [&](float *const *f) {
                                return batchNormBackward(ctx, n, c, spatial, f[0], scale, f[1],
                                                         mask, epsilon, f[2], dscale, dbias);
                              });
    });
  // With xhat = (x - mean) * rstd over the M kept values of a channel:
  // dbias = sum dy, dscale = sum dy xhat,
  // dx = scale rstd (dy - dbias / M - xhat dscale / M).
#pragma omp parallel for schedule(static) if (detail::worthThreads(n * c * spatial))
  for (int64_t ch = 0; ch < c; ++ch) {
    // Every plane's gradient, the masked samples' too (others may read it).
    for (int64_t k = 0; k < n; ++k)
      runPrologue(fusion, (k * c + ch) * spatial, (k * c + ch + 1) * spatial);
    ChannelStats s = channelStats(n, c, spatial, ch, x, mask);
    const double rstd = 1.0 / std::sqrt(s.var + double(epsilon));
    double sumDy = 0, sumDyXhat = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (mask && mask[k] == 0.0f)
        continue;
      const float *in = x + (k * c + ch) * spatial;
      const float *g = dy + (k * c + ch) * spatial;
      const double mean = s.mean;
      double planeDy, planeDyXhat;
      laneSums(
          spatial,
          [in, g, mean, rstd](int64_t i, double &a, double &b) {
            a = g[i];
            b = g[i] * ((in[i] - mean) * rstd);
          },
          planeDy, planeDyXhat);
      sumDy += planeDy;
      sumDyXhat += planeDyXhat;
    }
    dscale[ch] = float(sumDyXhat);
    dbias[ch] = float(sumDy);
    const double meanDy = sumDy / double(s.count);
    const double meanDyXhat = sumDyXhat / double(s.count);
    const double a = double(scale[ch]) * rstd;
    for (int64_t k = 0; k < n; ++k) {
      float *out = dx + (k * c + ch) * spatial;
      if (mask && mask[k] == 0.0f) {
        for (int64_t i = 0; i < spatial; ++i)
          out[i] = 0.0f;
      } else {
        const float *in = x + (k * c + ch) * spatial;
        const float *g = dy + (k * c + ch) * spatial;
        for (int64_t i = 0; i < spatial; ++i) {
          double xhat = (in[i] - s.mean) * rstd;
          out[i] = float(a * (g[i] - meanDy - xhat * meanDyXhat));
        }
      }
      runEpilogue(fusion, (k * c + ch) * spatial, (k * c + ch + 1) * spatial);
    }
  }
  return Status();
}

namespace {

/// Mean and 1 / sqrt(biased variance + epsilon) of one layer-norm row, in
/// double and two passes: the one-pass E[x^2] - E[x]^2 form cancels
/// catastrophically for rows with a large mean. Biased (divide by cols), as
/// ONNX and PyTorch.
void rowStats(const float *in, int64_t cols, float epsilon, double &mu, double &rstd) {
  mu = laneSum(cols, [in](int64_t i) { return double(in[i]); }) / double(cols);
  const double mean = mu;
  const double squares = laneSum(cols, [in, mean](int64_t i) {
    const double delta = in[i] - mean;
    return delta * delta;
  });
  rstd = 1.0 / std::sqrt(squares / double(cols) + epsilon);
}

} // namespace

Status layerNormBackward(Context &ctx, int64_t rows, int64_t cols, const float *x,
                         const float *scale, const float *dy, float epsilon, float *dx,
                         float *dscale, float *dbias, const NormFusion *fusion) {
  const char *kernel = "layerNormBackward";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x},
                                               {"scale", scale},
                                               {"dy", dy},
                                               {"dx", dx},
                                               {"dscale", dscale},
                                               {"dbias", dbias}}));
  TRAINC_RETURN_IF_ERROR(checkPositive(kernel, {{"rows", rows}, {"cols", cols}}));
  int64_t unused;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {rows, cols}, unused));
  // Per row: the mean and 1/std (as layerNorm computes them), kept for the
  // column sums below.
  void *scratch = nullptr;
  TRAINC_RETURN_IF_ERROR(ctx.workspace(&scratch, size_t(rows) * 2 * sizeof(double)));
  double *stats = static_cast<double *>(scratch);
#pragma omp parallel for schedule(static) if (detail::worthThreads(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    runPrologue(fusion, r * cols, (r + 1) * cols);
    const float *in = x + r * cols, *g = dy + r * cols;
    double mu, rstd;
    rowStats(in, cols, epsilon, mu, rstd);
    double meanG, meanGx;
    laneSums(
        cols,
        [in, g, scale, mu, rstd](int64_t i, double &a, double &b) {
          a = double(g[i]) * scale[i];
          b = a * (in[i] - mu) * rstd;
        },
        meanG, meanGx);
    meanG /= double(cols);
    meanGx /= double(cols);
    float *out = dx + r * cols;
    for (int64_t i = 0; i < cols; ++i) {
      double gi = double(g[i]) * scale[i];
      out[i] = float(rstd * (gi - meanG - (in[i] - mu) * rstd * meanGx));
    }
    runEpilogue(fusion, r * cols, (r + 1) * cols);
    stats[2 * r] = mu;
    stats[2 * r + 1] = rstd;
  }
  // Column sums over the rows, each column by one thread in row order.
#pragma omp parallel for schedule(static) if (detail::worthThreads(rows * cols))
  for (int64_t i = 0; i < cols; ++i) {
    double ds = 0, db = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double gi = dy[r * cols + i];
      ds += gi * (x[r * cols + i] - stats[2 * r]) * stats[2 * r + 1];
      db += gi;
    }
    dscale[i] = float(ds);
    dbias[i] = float(db);
  }
  return Status();
}

Status layerNorm(Context &ctx, int64_t rows, int64_t cols, const float *x,
                 const float *scale, const float *bias, float epsilon,
                 float *y, const NormFusion *fusion) {
  (void)ctx;
  const char *kernel = "layerNorm";
  TRAINC_RETURN_IF_ERROR(
      checkNotNull(kernel, {{"x", x}, {"scale", scale}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(
      checkPositive(kernel, {{"rows", rows}, {"cols", cols}}));
  int64_t unused;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {rows, cols}, unused));
#pragma omp parallel for schedule(static) if (detail::worthThreads(rows * cols))
  for (int64_t r = 0; r < rows; ++r) {
    runPrologue(fusion, r * cols, (r + 1) * cols);
    const float *in = x + r * cols;
    float *out = y + r * cols;
    double mu, rstd;
    rowStats(in, cols, epsilon, mu, rstd);
    // x - mean in double too: a mean rounded to f32 is off by up to half an
    // ulp of the mean, which for rows like 1000 + noise is most of the noise.
    if (bias)
      for (int64_t i = 0; i < cols; ++i)
        out[i] = float((in[i] - mu) * rstd) * scale[i] + bias[i];
    else
      for (int64_t i = 0; i < cols; ++i)
        out[i] = float((in[i] - mu) * rstd) * scale[i];
    runEpilogue(fusion, r * cols, (r + 1) * cols);
  }
  return Status();
}

} // namespace trainc::cpu
