//===- Loss.cu - cross entropy, NLL and MSE losses ------------------------===//
//
// PyTorch semantics: Reduction::Mean divides by the number of samples whose
// label is not ignored (NaN when there is none), Reduction::None writes 0
// for ignored samples.
//
// Labels are device data, so a launcher cannot validate them without a host
// synchronisation, which the step must not have. A label outside [0, c)
// (and not the ignore index) is therefore checked on the device: the kernel
// never reads with it, writes NaN as that sample's loss, and records the
// error in the context's device error record; the context turns it into a
// Status at its next synchronize() or copyToHost().
//
// Reductions are deterministic: per-sample losses, then a fixed grid of
// per-block partial sums, then one block that adds the partials in order.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include "common/KernelChecks.h"
#include "trainc_rt/kernels.h"

namespace trainc::cuda {
namespace {

using ::trainc::rt::Reduction;

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Per-sample cross entropy of softmax(logits [n, c, inner]): one warp per
/// sample, lanes striding over the classes, so a classifier's row of c
/// logits (inner == 1) is read with coalesced loads. The log-sum-exp is the
/// stable online (max, sum) of Softmax.cu.
__global__ void crossEntropySamplesKernel(int64_t n, int64_t c, int64_t inner,
                                          const float *logits,
                                          const int64_t *labels,
                                          bool hasIgnoreIndex,
                                          int64_t ignoreIndex, float *loss,
                                          DeviceErrorRecord *errors) {
  int lane = threadIdx.x % kWarpSize;
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpSize;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarpSize;
  int64_t samples = n * inner;
  for (int64_t s = warp; s < samples; s += warps) {
    int64_t label = labels[s];
    if (hasIgnoreIndex && label == ignoreIndex) {
      if (lane == 0)
        loss[s] = 0.0f;
      continue;
    }
    if (label < 0 || label >= c) {
      if (lane == 0) {
        recordDeviceError(errors, DeviceErrorCode::CrossEntropyLabel, label, c,
                          s);
        loss[s] = CUDART_NAN_F;
      }
      continue;
    }
    const float *row = logits + (s / inner) * c * inner + s % inner;
    MaxSum acc{-CUDART_INF_F, 0.0f};
    for (int64_t j = lane; j < c; j += kWarpSize)
      acc = addToMaxSum(acc, row[j * inner]);
    acc = warpMaxSum(acc);
    if (lane == 0)
      loss[s] = logf(acc.sum) + acc.max - row[label * inner];
  }
}

/// Per-sample NLL: one read per sample, so one thread each.
__global__ void nllSamplesKernel(int64_t n, int64_t c, int64_t inner,
                                 const float *logProbs, const int64_t *labels,
                                 bool hasIgnoreIndex, int64_t ignoreIndex,
                                 float *loss, DeviceErrorRecord *errors) {
  int64_t samples = n * inner;
  for (int64_t s = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; s < samples;
       s += int64_t(gridDim.x) * blockDim.x) {
    int64_t label = labels[s];
    if (hasIgnoreIndex && label == ignoreIndex) {
      loss[s] = 0.0f;
    } else if (label < 0 || label >= c) {
      recordDeviceError(errors, DeviceErrorCode::NllLossLabel, label, c, s);
      loss[s] = CUDART_NAN_F;
    } else {
      loss[s] = -logProbs[(s / inner) * c * inner + label * inner + s % inner];
    }
  }
}

__global__ void squaredErrorKernel(int64_t count, const float *prediction,
                                   const float *target, float *out) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    float diff = prediction[i] - target[i];
    out[i] = diff * diff;
  }
}

/// A sample's contribution to a reduction: its loss and whether it counts
/// in the mean's divisor.
struct LabelledLossTerm {
  const float *loss;
  const int64_t *labels;
  bool hasIgnoreIndex;
  int64_t ignoreIndex;
  __device__ void operator()(int64_t i, float &value, double &count) const {
    value = loss[i];
    count = hasIgnoreIndex && labels[i] == ignoreIndex ? 0.0 : 1.0;
  }
};

struct SquaredErrorTerm {
  const float *prediction;
  const float *target;
  __device__ void operator()(int64_t i, float &value, double &count) const {
    float diff = prediction[i] - target[i];
    value = diff * diff;
    count = 1.0;
  }
};

/// Stage 1: block b sums the terms of a grid-stride slice. The count is a
/// double so that it stays exact far beyond 2^24 samples.
template <typename Term>
__global__ void partialSumsKernel(Term term, int64_t count, float *sums,
                                  double *counts) {
  __shared__ float sharedSum[kWarpSize];
  __shared__ double sharedCount[kWarpSize];
  float sum = 0.0f;
  double n = 0.0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    float value;
    double weight;
    term(i, value, weight);
    sum += value;
    n += weight;
  }
  sum = blockSum(sum, sharedSum);
  n = blockSum(n, sharedCount);
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = sum;
    counts[blockIdx.x] = n;
  }
}

/// Stage 2: one block adds the `parts` partials and writes the scalar.
__global__ void finishReductionKernel(const float *sums, const double *counts,
                                      int parts, bool mean, float *out) {
  __shared__ float sharedSum[kWarpSize];
  __shared__ double sharedCount[kWarpSize];
  float sum = 0.0f;
  double n = 0.0;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) {
    sum += sums[i];
    n += counts[i];
  }
  sum = blockSum(sum, sharedSum);
  n = blockSum(n, sharedCount);
  if (threadIdx.x == 0)
    // 0 / 0 is NaN: the mean over no counted sample, as in PyTorch.
    out[0] = mean ? float(double(sum) / n) : sum;
}

/// Partials of stage 1: a fixed number independent of the device, so a
/// reduction gives the same bits on every GPU.
constexpr int kMaxPartials = 1024;

size_t roundUp256(size_t bytes) { return (bytes + 255) & ~size_t(255); }

int partialsFor(int64_t count) {
  int64_t blocks = (count + kBlockSize - 1) / kBlockSize;
  return int(blocks < kMaxPartials ? blocks : kMaxPartials);
}

/// Enqueues both stages; `partials` holds partialsFor(count) floats, then
/// as many doubles at a 256-byte boundary.
template <typename Term>
Status launchReduction(CudaContext &ctx, const char *site, Term term,
                       int64_t count, char *partials, bool mean, float *out) {
  int parts = partialsFor(count);
  auto *sums = reinterpret_cast<float *>(partials);
  auto *counts = reinterpret_cast<double *>(
      partials + roundUp256(size_t(parts) * sizeof(float)));
  partialSumsKernel<<<parts, kBlockSize, 0, ctx.stream()>>>(term, count, sums,
                                                            counts);
  TRAINC_RETURN_IF_ERROR(checkLaunch(site, "partialSumsKernel"));
  finishReductionKernel<<<1, kBlockSize, 0, ctx.stream()>>>(sums, counts, parts,
                                                            mean, out);
  TRAINC_RETURN_IF_ERROR(checkLaunch(site, "finishReductionKernel"));
  return Status();
}

size_t partialsBytes(int64_t count) {
  int parts = partialsFor(count);
  return roundUp256(size_t(parts) * sizeof(float)) +
         size_t(parts) * sizeof(double);
}

enum class LabelledLoss { CrossEntropy, Nll };

/// The shared body of softmaxCrossEntropy and nllLoss.
Status labelledLoss(Context &ctxBase, LabelledLoss which, const char *kernel,
                    int64_t n, int64_t c, int64_t inner, const float *input,
                    const int64_t *labels, bool hasIgnoreIndex,
                    int64_t ignoreIndex, Reduction reduction, float *out) {
  CudaContext &ctx = asCuda(ctxBase);
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkReduction(kernel, reduction));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPositive(
      kernel, {{"n", n}, {"c", c}, {"inner", inner}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(
      kernel, {{"input", input}, {"labels", labels}, {"out", out}}));
  int64_t total = 0;
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkedProduct(kernel, {n, c, inner}, total));
  int64_t samples = n * inner;

  // Reduction::None writes the per-sample losses straight into `out`;
  // otherwise they go to library scratch, followed by the partial sums.
  char *scratch = nullptr;
  size_t lossBytes = roundUp256(size_t(samples) * sizeof(float));
  if (reduction != Reduction::None)
    TRAINC_RETURN_IF_ERROR(
        ctx.libraryWorkspace(reinterpret_cast<void **>(&scratch),
                             lossBytes + partialsBytes(samples)));
  float *loss =
      reduction == Reduction::None ? out : reinterpret_cast<float *>(scratch);

  if (which == LabelledLoss::CrossEntropy) {
    crossEntropySamplesKernel<<<gridFor(ctx, samples, kWarpsPerBlock),
                                kBlockSize, 0, ctx.stream()>>>(
        n, c, inner, input, labels, hasIgnoreIndex, ignoreIndex, loss,
        ctx.deviceErrors());
    TRAINC_RETURN_IF_ERROR(checkLaunch(kernel, "crossEntropySamplesKernel"));
  } else {
    nllSamplesKernel<<<gridFor(ctx, samples, kBlockSize), kBlockSize, 0,
                       ctx.stream()>>>(n, c, inner, input, labels,
                                       hasIgnoreIndex, ignoreIndex, loss,
                                       ctx.deviceErrors());
    TRAINC_RETURN_IF_ERROR(checkLaunch(kernel, "nllSamplesKernel"));
  }
  if (reduction == Reduction::None)
    return Status();
  LabelledLossTerm term{loss, labels, hasIgnoreIndex, ignoreIndex};
  return launchReduction(ctx, kernel, term, samples, scratch + lossBytes,
                         reduction == Reduction::Mean, out);
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

/// A bad label is reported at the next synchronize(), see the file comment.
Status softmaxCrossEntropy(Context &ctx, int64_t n, int64_t c, int64_t inner,
                           const float *logits, const int64_t *labels,
                           bool hasIgnoreIndex, int64_t ignoreIndex,
                           Reduction reduction, float *out) {
  return labelledLoss(ctx, LabelledLoss::CrossEntropy, "softmaxCrossEntropy", n,
                      c, inner, logits, labels, hasIgnoreIndex, ignoreIndex,
                      reduction, out);
}

/// A bad label is reported at the next synchronize(), see the file comment.
Status nllLoss(Context &ctx, int64_t n, int64_t c, int64_t inner,
               const float *logProbs, const int64_t *labels,
               bool hasIgnoreIndex, int64_t ignoreIndex, Reduction reduction,
               float *out) {
  return labelledLoss(ctx, LabelledLoss::Nll, "nllLoss", n, c, inner, logProbs,
                      labels, hasIgnoreIndex, ignoreIndex, reduction, out);
}

Status mseLoss(Context &ctxBase, int64_t count, const float *prediction,
               const float *target, Reduction reduction, float *out) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "mseLoss";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkReduction(kernel, reduction));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkPositive(kernel, {{"count", count}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(
      kernel, {{"prediction", prediction}, {"target", target}, {"out", out}}));
  if (reduction == Reduction::None) {
    squaredErrorKernel<<<gridFor(ctx, count, kBlockSize), kBlockSize, 0,
                         ctx.stream()>>>(count, prediction, target, out);
    TRAINC_CHECK_LAUNCH("squaredErrorKernel");
    return Status();
  }
  char *partials = nullptr;
  TRAINC_RETURN_IF_ERROR(ctx.libraryWorkspace(
      reinterpret_cast<void **>(&partials), partialsBytes(count)));
  return launchReduction(ctx, kernel, SquaredErrorTerm{prediction, target},
                         count, partials, reduction == Reduction::Mean, out);
}

} // namespace trainc::cuda
