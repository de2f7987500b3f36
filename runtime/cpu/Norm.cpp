//===- Norm.cpp - batch and layer normalization ---------------------------===//

#include "../common/KernelChecks.h"

#include <cmath>
#include <vector>

namespace trainc::cpu {
using namespace ::trainc::rt;

Status batchNormInference(Context &ctx, int64_t n, int64_t c, int64_t spatial,
                          const float *x, const float *scale, const float *bias,
                          const float *mean, const float *var, float epsilon,
                          float *y) {
  (void)ctx;
  const char *kernel = "batchNormInference";
  TRAINC_RETURN_IF_ERROR(checkNotNull(kernel, {{"x", x},
                                               {"scale", scale},
                                               {"bias", bias},
                                               {"mean", mean},
                                               {"var", var},
                                               {"y", y}}));
  TRAINC_RETURN_IF_ERROR(
      checkPositive(kernel, {{"n", n}, {"c", c}, {"spatial", spatial}}));
  int64_t unused;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {n, c, spatial}, unused));
  // Fold the statistics into one multiply-add per element:
  // y = x * a + b with a = scale / sqrt(var + eps), b = bias - mean * a.
  std::vector<float> mul(c), add(c);
  for (int64_t i = 0; i < c; ++i) {
    double a = double(scale[i]) / std::sqrt(double(var[i]) + double(epsilon));
    mul[i] = float(a);
    add[i] = float(double(bias[i]) - double(mean[i]) * a);
  }
  const int64_t planes = n * c;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    const float a = mul[p % c], b = add[p % c];
    const float *in = x + p * spatial;
    float *out = y + p * spatial;
    for (int64_t i = 0; i < spatial; ++i)
      out[i] = in[i] * a + b;
  }
  return Status();
}

Status layerNorm(Context &ctx, int64_t rows, int64_t cols, const float *x,
                 const float *scale, const float *bias, float epsilon,
                 float *y) {
  (void)ctx;
  const char *kernel = "layerNorm";
  TRAINC_RETURN_IF_ERROR(
      checkNotNull(kernel, {{"x", x}, {"scale", scale}, {"y", y}}));
  TRAINC_RETURN_IF_ERROR(
      checkPositive(kernel, {{"rows", rows}, {"cols", cols}}));
  int64_t unused;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {rows, cols}, unused));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float *in = x + r * cols;
    float *out = y + r * cols;
    // Two passes in double: the one-pass E[x^2] - E[x]^2 form cancels
    // catastrophically for rows with a large mean.
    double sum = 0;
    for (int64_t i = 0; i < cols; ++i)
      sum += in[i];
    const double mu = sum / double(cols);
    double squares = 0;
    for (int64_t i = 0; i < cols; ++i) {
      double delta = in[i] - mu;
      squares += delta * delta;
    }
    // Biased variance (divide by cols), as ONNX and PyTorch.
    const double rstd = 1.0 / std::sqrt(squares / double(cols) + epsilon);
    // x - mean in double too: a mean rounded to f32 is off by up to half an
    // ulp of the mean, which for rows like 1000 + noise is most of the noise.
    if (bias)
      for (int64_t i = 0; i < cols; ++i)
        out[i] = float((in[i] - mu) * rstd) * scale[i] + bias[i];
    else
      for (int64_t i = 0; i < cols; ++i)
        out[i] = float((in[i] - mu) * rstd) * scale[i];
  }
  return Status();
}

} // namespace trainc::cpu
