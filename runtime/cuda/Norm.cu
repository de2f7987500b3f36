//===- Norm.cu - batch norm (inference, training, backward), layer norm ---===//
//
// Own kernels. cuDNN's batch norm requires epsilon >= CUDNN_BN_MIN_EPSILON
// (1e-5), and ONNX models use smaller ones; it would also be one more
// descriptor per shape for an element-wise operation. Layer norm has no
// cuDNN equivalent in the legacy API.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include "common/KernelChecks.h"
#include "trainc_rt/kernels.h"

namespace trainc::cuda {
namespace {

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// y = (x - mean[ch]) * rsqrt(var[ch] + eps) * scale[ch] + bias[ch] over
/// x [n, c, spatial] (or channels-last [n, spatial, c] when `last`). One
/// thread per element, flat: the channel is an index computation, and the
/// four per-channel loads hit L1 since a warp spans at most two channels
/// unless spatial is tiny (channels-last: 32 consecutive channels).
__global__ void batchNormInferenceKernel(int64_t c, int64_t spatial,
                                         int64_t total, const float *x,
                                         const float *scale, const float *bias,
                                         const float *mean, const float *var,
                                         float epsilon, float *y, bool last) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = last ? i % c : (i / spatial) % c;
    float inv = rsqrtf(var[ch] + epsilon);
    y[i] = (x[i] - mean[ch]) * inv * scale[ch] + bias[ch];
  }
}

/// One warp per row, for rows short enough that 32 lanes cover them in a
/// few iterations: no shared memory, no block barrier, and 8 rows per block
/// keep the SM busy when rows are many and short (the transformer case).
/// Two passes in fp32 (mean, then the mean of squared deviations): the row
/// is re-read from L1/L2, and the result has no E[x^2] - E[x]^2
/// cancellation.
__global__ void layerNormWarpKernel(int64_t rows, int64_t cols, const float *x,
                                    const float *scale, const float *bias,
                                    float epsilon, float *y) {
  int lane = threadIdx.x % kWarpSize;
  int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpSize;
  int64_t warps = int64_t(gridDim.x) * blockDim.x / kWarpSize;
  for (int64_t row = warp; row < rows; row += warps) {
    const float *in = x + row * cols;
    float *out = y + row * cols;
    float sum = 0.0f;
    for (int64_t j = lane; j < cols; j += kWarpSize)
      sum += in[j];
    float mean = warpSum(sum) / float(cols);
    float sq = 0.0f;
    for (int64_t j = lane; j < cols; j += kWarpSize) {
      float diff = in[j] - mean;
      sq += diff * diff;
    }
    float rstd = rsqrtf(warpSum(sq) / float(cols) + epsilon);
    for (int64_t j = lane; j < cols; j += kWarpSize) {
      float v = (in[j] - mean) * rstd * scale[j];
      out[j] = bias ? v + bias[j] : v;
    }
  }
}

/// Mean and 1/std of one row by the whole block, two passes in fp32; every
/// thread gets both.
__device__ void blockRowStats(const float *in, int64_t cols, float epsilon, float *partial,
                              float &mean, float &rstd) {
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    sum += in[j];
  mean = blockSum(sum, partial) / float(cols);
  float sq = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    float diff = in[j] - mean;
    sq += diff * diff;
  }
  rstd = rsqrtf(blockSum(sq, partial) / float(cols) + epsilon);
}

/// One block per row, for long rows where a single warp would serialize.
__global__ void layerNormBlockKernel(int64_t rows, int64_t cols, const float *x,
                                     const float *scale, const float *bias,
                                     float epsilon, float *y) {
  __shared__ float partial[kWarpSize];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *in = x + row * cols;
    float *out = y + row * cols;
    float mean, rstd;
    blockRowStats(in, cols, epsilon, partial, mean, rstd);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float v = (in[j] - mean) * rstd * scale[j];
      out[j] = bias ? v + bias[j] : v;
    }
  }
}

/// Layer norm backward, part 1: one block per row recomputes the row's mean
/// and 1/std (as layerNormBlockKernel), writes dx and keeps the statistics
/// for the column sums.
__global__ void layerNormBackwardRowsKernel(int64_t rows, int64_t cols, const float *x,
                                            const float *scale, const float *dy,
                                            float epsilon, float *dx, float2 *stats) {
  __shared__ float partial[kWarpSize];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const float *in = x + row * cols, *g = dy + row * cols;
    float mean, rstd;
    blockRowStats(in, cols, epsilon, partial, mean, rstd);
    float sg = 0.0f, sgx = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float gj = g[j] * scale[j];
      sg += gj;
      sgx += gj * (in[j] - mean) * rstd;
    }
    float meanG = blockSum(sg, partial) / float(cols);
    float meanGx = blockSum(sgx, partial) / float(cols);
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float gj = g[j] * scale[j];
      dx[row * cols + j] = rstd * (gj - meanG - (in[j] - mean) * rstd * meanGx);
    }
    if (threadIdx.x == 0)
      stats[row] = make_float2(mean, rstd);
  }
}

/// Layer norm backward, part 2: one thread per column sums dy * xhat and dy
/// over the rows (adjacent threads read adjacent columns).
__global__ void layerNormBackwardColumnsKernel(int64_t rows, int64_t cols, const float *x,
                                               const float *dy, const float2 *stats,
                                               float *dscale, float *dbias) {
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < cols;
       j += int64_t(gridDim.x) * blockDim.x) {
    float ds = 0.0f, db = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      float gj = dy[r * cols + j];
      ds += gj * (x[r * cols + j] - stats[r].x) * stats[r].y;
      db += gj;
    }
    dscale[j] = ds;
    dbias[j] = db;
  }
}

/// Mean and biased variance of channel `ch` of x [n, c, spatial] over the
/// samples `mask` keeps, by the whole block, in double and two passes. Every
/// thread gets the result; `count` is the number of values averaged.
struct ChannelStats {
  double mean, var;
  int64_t count;
};

__device__ ChannelStats channelStats(int64_t n, int64_t c, int64_t spatial,
                                     int64_t ch, const float *x,
                                     const float *mask, double *shared) {
  const int64_t total = n * spatial;
  double sum = 0.0, kept = 0.0;
  for (int64_t i = threadIdx.x; i < total; i += blockDim.x) {
    int64_t b = i / spatial;
    if (mask && mask[b] == 0.0f)
      continue;
    sum += x[(b * c + ch) * spatial + i % spatial];
    kept += 1.0;
  }
  sum = blockSum(sum, shared);
  kept = blockSum(kept, shared);
  ChannelStats s{0.0, 0.0, int64_t(kept)};
  if (s.count == 0)
    return s;
  s.mean = sum / kept;
  double squares = 0.0;
  for (int64_t i = threadIdx.x; i < total; i += blockDim.x) {
    int64_t b = i / spatial;
    if (mask && mask[b] == 0.0f)
      continue;
    double d = x[(b * c + ch) * spatial + i % spatial] - s.mean;
    squares += d * d;
  }
  s.var = blockSum(squares, shared) / kept;
  return s;
}

/// One block per channel: batch statistics, the normalized output and the
/// running statistics. Fewer than two values is recorded as a device error.
__global__ void batchNormTrainingKernel(
    int64_t n, int64_t c, int64_t spatial, const float *x, const float *scale,
    const float *bias, const float *runningMean, const float *runningVar,
    const float *mask, float epsilon, float momentum, float *y,
    float *newMean, float *newVar, DeviceErrorRecord *errors) {
  __shared__ double shared[kWarpSize];
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    ChannelStats s = channelStats(n, c, spatial, ch, x, mask, shared);
    if (s.count < 2) {
      if (threadIdx.x == 0)
        recordDeviceError(errors, DeviceErrorCode::BatchNormCount, s.count, 2, ch);
      continue;
    }
    const double rstd = rsqrt(s.var + double(epsilon));
    const float a = float(double(scale[ch]) * rstd);
    const float b = float(double(bias[ch]) - s.mean * double(scale[ch]) * rstd);
    for (int64_t i = threadIdx.x; i < n * spatial; i += blockDim.x) {
      int64_t at = ((i / spatial) * c + ch) * spatial + i % spatial;
      y[at] = x[at] * a + b;
    }
    if (threadIdx.x == 0) {
      double unbiased = s.var * double(s.count) / double(s.count - 1);
      newMean[ch] = float(double(momentum) * runningMean[ch] +
                          (1.0 - double(momentum)) * s.mean);
      newVar[ch] = float(double(momentum) * runningVar[ch] +
                         (1.0 - double(momentum)) * unbiased);
    }
  }
}

/// One block per channel: dscale = sum dy xhat, dbias = sum dy,
/// dx = scale rstd (dy - dbias / M - xhat dscale / M), 0 where masked.
__global__ void batchNormBackwardKernel(int64_t n, int64_t c, int64_t spatial,
                                        const float *x, const float *scale,
                                        const float *dy, const float *mask,
                                        float epsilon, float *dx, float *dscale,
                                        float *dbias,
                                        DeviceErrorRecord *errors) {
  __shared__ double shared[kWarpSize];
  const int64_t total = n * spatial;
  for (int64_t ch = blockIdx.x; ch < c; ch += gridDim.x) {
    ChannelStats s = channelStats(n, c, spatial, ch, x, mask, shared);
    if (s.count < 2) {
      if (threadIdx.x == 0)
        recordDeviceError(errors, DeviceErrorCode::BatchNormCount, s.count, 2, ch);
      continue;
    }
    const double rstd = rsqrt(s.var + double(epsilon));
    double sumDy = 0.0, sumDyXhat = 0.0;
    for (int64_t i = threadIdx.x; i < total; i += blockDim.x) {
      int64_t b = i / spatial;
      if (mask && mask[b] == 0.0f)
        continue;
      int64_t at = (b * c + ch) * spatial + i % spatial;
      sumDy += dy[at];
      sumDyXhat += dy[at] * ((x[at] - s.mean) * rstd);
    }
    sumDy = blockSum(sumDy, shared);
    sumDyXhat = blockSum(sumDyXhat, shared);
    if (threadIdx.x == 0) {
      dscale[ch] = float(sumDyXhat);
      dbias[ch] = float(sumDy);
    }
    const double meanDy = sumDy / double(s.count);
    const double meanDyXhat = sumDyXhat / double(s.count);
    const double a = double(scale[ch]) * rstd;
    for (int64_t i = threadIdx.x; i < total; i += blockDim.x) {
      int64_t b = i / spatial;
      int64_t at = (b * c + ch) * spatial + i % spatial;
      if (mask && mask[b] == 0.0f) {
        dx[at] = 0.0f;
        continue;
      }
      double xhat = (x[at] - s.mean) * rstd;
      dx[at] = float(a * (dy[at] - meanDy - xhat * meanDyXhat));
    }
  }
}

/// Past this many columns a row gets a whole block.
constexpr int64_t kWarpRowLimit = 1024;

//===----------------------------------------------------------------------===//
// Channels-last batch norm: x [n * spatial rows, c]
//===----------------------------------------------------------------------===//
//
// The kernels above give a channel one block, which reads a channels-last
// channel at stride c. These give a block a tile of 32 channels: its 32 x 8
// threads walk 8 rows at a time and read 32 consecutive values per row
// (coalesced), each thread summing its channel over every 8th row, then the
// 8 partial sums of a channel are added in shared memory (double, two
// passes, the same statistics as above in another order).

constexpr int kTileChannels = 32, kTileRows = 8;

/// The sum of `value` over the tile's rows (threadIdx.y) for this thread's
/// channel; every thread of the column gets it. Starts and ends with a
/// barrier, so the whole block must call it.
__device__ __forceinline__ double tileColumnSum(double value,
                                                double (*shared)[kTileChannels]) {
  __syncthreads();
  shared[threadIdx.y][threadIdx.x] = value;
  __syncthreads();
  double total = 0.0;
  for (int r = 0; r < kTileRows; ++r)
    total += shared[r][threadIdx.x];
  __syncthreads();
  return total;
}

/// Mean and biased variance of channel `ch` of channels-last x over the
/// samples `mask` keeps; `active` is false for a tile column past c (it
/// reads nothing but takes part in the barriers).
__device__ ChannelStats tileChannelStats(int64_t n, int64_t c, int64_t spatial, int64_t ch,
                                         bool active, const float *x, const float *mask,
                                         double (*shared)[kTileChannels]) {
  const int64_t rows = n * spatial;
  double sum = 0.0, kept = 0.0;
  for (int64_t r = threadIdx.y; active && r < rows; r += kTileRows) {
    if (mask && mask[r / spatial] == 0.0f)
      continue;
    sum += x[r * c + ch];
    kept += 1.0;
  }
  sum = tileColumnSum(sum, shared);
  kept = tileColumnSum(kept, shared);
  ChannelStats s{0.0, 0.0, int64_t(kept)};
  if (s.count > 0)
    s.mean = sum / kept;
  double squares = 0.0;
  for (int64_t r = threadIdx.y; active && s.count > 0 && r < rows; r += kTileRows) {
    if (mask && mask[r / spatial] == 0.0f)
      continue;
    double d = x[r * c + ch] - s.mean;
    squares += d * d;
  }
  squares = tileColumnSum(squares, shared);
  if (s.count > 0)
    s.var = squares / kept;
  return s;
}

__global__ void batchNormTrainingLastKernel(
    int64_t n, int64_t c, int64_t spatial, const float *x, const float *scale,
    const float *bias, const float *runningMean, const float *runningVar,
    const float *mask, float epsilon, float momentum, float *y, float *newMean,
    float *newVar, DeviceErrorRecord *errors) {
  __shared__ double shared[kTileRows][kTileChannels];
  const int64_t rows = n * spatial;
  for (int64_t first = int64_t(blockIdx.x) * kTileChannels; first < c;
       first += int64_t(gridDim.x) * kTileChannels) {
    const int64_t ch = first + threadIdx.x;
    const bool active = ch < c;
    ChannelStats s = tileChannelStats(n, c, spatial, ch, active, x, mask, shared);
    if (!active)
      continue; // no barrier follows in this tile
    if (s.count < 2) {
      if (threadIdx.y == 0)
        recordDeviceError(errors, DeviceErrorCode::BatchNormCount, s.count, 2, ch);
      continue;
    }
    const double rstd = rsqrt(s.var + double(epsilon));
    const float a = float(double(scale[ch]) * rstd);
    const float b = float(double(bias[ch]) - s.mean * double(scale[ch]) * rstd);
    for (int64_t r = threadIdx.y; r < rows; r += kTileRows)
      y[r * c + ch] = x[r * c + ch] * a + b;
    if (threadIdx.y == 0) {
      double unbiased = s.var * double(s.count) / double(s.count - 1);
      newMean[ch] = float(double(momentum) * runningMean[ch] + (1.0 - double(momentum)) * s.mean);
      newVar[ch] = float(double(momentum) * runningVar[ch] + (1.0 - double(momentum)) * unbiased);
    }
  }
}

__global__ void batchNormBackwardLastKernel(int64_t n, int64_t c, int64_t spatial,
                                            const float *x, const float *scale,
                                            const float *dy, const float *mask,
                                            float epsilon, float *dx, float *dscale,
                                            float *dbias, DeviceErrorRecord *errors) {
  __shared__ double shared[kTileRows][kTileChannels];
  const int64_t rows = n * spatial;
  for (int64_t first = int64_t(blockIdx.x) * kTileChannels; first < c;
       first += int64_t(gridDim.x) * kTileChannels) {
    const int64_t ch = first + threadIdx.x;
    const bool active = ch < c;
    ChannelStats s = tileChannelStats(n, c, spatial, ch, active, x, mask, shared);
    const bool valid = active && s.count >= 2;
    const double rstd = valid ? rsqrt(s.var + double(epsilon)) : 0.0;
    double sumDy = 0.0, sumDyXhat = 0.0;
    for (int64_t r = threadIdx.y; valid && r < rows; r += kTileRows) {
      if (mask && mask[r / spatial] == 0.0f)
        continue;
      const int64_t at = r * c + ch;
      sumDy += dy[at];
      sumDyXhat += dy[at] * ((x[at] - s.mean) * rstd);
    }
    sumDy = tileColumnSum(sumDy, shared);
    sumDyXhat = tileColumnSum(sumDyXhat, shared);
    if (!active)
      continue;
    if (!valid) {
      if (threadIdx.y == 0)
        recordDeviceError(errors, DeviceErrorCode::BatchNormCount, s.count, 2, ch);
      continue;
    }
    if (threadIdx.y == 0) {
      dscale[ch] = float(sumDyXhat);
      dbias[ch] = float(sumDy);
    }
    const double meanDy = sumDy / double(s.count);
    const double meanDyXhat = sumDyXhat / double(s.count);
    const double a = double(scale[ch]) * rstd;
    for (int64_t r = threadIdx.y; r < rows; r += kTileRows) {
      const int64_t at = r * c + ch;
      if (mask && mask[r / spatial] == 0.0f) {
        dx[at] = 0.0f;
        continue;
      }
      double xhat = (x[at] - s.mean) * rstd;
      dx[at] = float(a * (dy[at] - meanDy - xhat * meanDyXhat));
    }
  }
}

/// The grid of the channels-last kernels: a tile of channels per block.
unsigned tileGrid(CudaContext &ctx, int64_t c) {
  return gridFor(ctx, (c + kTileChannels - 1) / kTileChannels, 1);
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

Status batchNormInference(Context &ctxBase, int64_t n, int64_t c,
                          int64_t spatial, const float *x, const float *scale,
                          const float *bias, const float *mean,
                          const float *var, float epsilon, float *y,
                          bool channelsLast) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "batchNormInference";
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkBatchNormShape(kernel, n, c, spatial));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(kernel, {{"x", x},
                                                             {"scale", scale},
                                                             {"bias", bias},
                                                             {"mean", mean},
                                                             {"var", var},
                                                             {"y", y}}));
  const int64_t total = n * c * spatial; // checked above
  batchNormInferenceKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0,
                             ctx.stream()>>>(c, spatial, total, x, scale, bias,
                                             mean, var, epsilon, y, channelsLast);
  TRAINC_CHECK_LAUNCH("batchNormInferenceKernel");
  return Status();
}

Status batchNormTraining(Context &ctxBase, int64_t n, int64_t c,
                         int64_t spatial, const float *x, const float *scale,
                         const float *bias, const float *runningMean,
                         const float *runningVar, const float *mask,
                         float epsilon, float momentum, float *y,
                         float *newMean, float *newVar, bool channelsLast) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "batchNormTraining";
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkBatchNormShape(kernel, n, c, spatial));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(
      kernel, {{"x", x},
               {"scale", scale},
               {"bias", bias},
               {"runningMean", runningMean},
               {"runningVar", runningVar},
               {"y", y},
               {"newMean", newMean},
               {"newVar", newVar}}));
  if (channelsLast) {
    batchNormTrainingLastKernel<<<tileGrid(ctx, c), dim3(kTileChannels, kTileRows), 0,
                                  ctx.stream()>>>(n, c, spatial, x, scale, bias, runningMean,
                                                  runningVar, mask, epsilon, momentum, y,
                                                  newMean, newVar, ctx.deviceErrors());
    TRAINC_CHECK_LAUNCH("batchNormTrainingLastKernel");
    return Status();
  }
  batchNormTrainingKernel<<<gridFor(ctx, c, 1), kBlockSize, 0, ctx.stream()>>>(
      n, c, spatial, x, scale, bias, runningMean, runningVar, mask, epsilon,
      momentum, y, newMean, newVar, ctx.deviceErrors());
  TRAINC_CHECK_LAUNCH("batchNormTrainingKernel");
  return Status();
}

Status batchNormBackward(Context &ctxBase, int64_t n, int64_t c,
                         int64_t spatial, const float *x, const float *scale,
                         const float *dy, const float *mask, float epsilon,
                         float *dx, float *dscale, float *dbias,
                         bool channelsLast) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "batchNormBackward";
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkBatchNormShape(kernel, n, c, spatial));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(kernel, {{"x", x},
                                                             {"scale", scale},
                                                             {"dy", dy},
                                                             {"dx", dx},
                                                             {"dscale", dscale},
                                                             {"dbias", dbias}}));
  if (channelsLast) {
    batchNormBackwardLastKernel<<<tileGrid(ctx, c), dim3(kTileChannels, kTileRows), 0,
                                  ctx.stream()>>>(n, c, spatial, x, scale, dy, mask, epsilon,
                                                  dx, dscale, dbias, ctx.deviceErrors());
    TRAINC_CHECK_LAUNCH("batchNormBackwardLastKernel");
    return Status();
  }
  batchNormBackwardKernel<<<gridFor(ctx, c, 1), kBlockSize, 0, ctx.stream()>>>(
      n, c, spatial, x, scale, dy, mask, epsilon, dx, dscale, dbias,
      ctx.deviceErrors());
  TRAINC_CHECK_LAUNCH("batchNormBackwardKernel");
  return Status();
}

Status layerNormBackward(Context &ctxBase, int64_t rows, int64_t cols, const float *x,
                         const float *scale, const float *dy, float epsilon, float *dx,
                         float *dscale, float *dbias) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "layerNormBackward";
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkPositive(kernel, {{"rows", rows}, {"cols", cols}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(kernel, {{"x", x},
                                                             {"scale", scale},
                                                             {"dy", dy},
                                                             {"dx", dx},
                                                             {"dscale", dscale},
                                                             {"dbias", dbias}}));
  int64_t total = 0;
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkedProduct(kernel, {rows, cols}, total));
  void *scratch = nullptr;
  TRAINC_RETURN_IF_ERROR(ctx.libraryWorkspace(&scratch, size_t(rows) * sizeof(float2)));
  float2 *stats = static_cast<float2 *>(scratch);
  layerNormBackwardRowsKernel<<<gridFor(ctx, rows, 1), kBlockSize, 0, ctx.stream()>>>(
      rows, cols, x, scale, dy, epsilon, dx, stats);
  TRAINC_CHECK_LAUNCH("layerNormBackwardRowsKernel");
  layerNormBackwardColumnsKernel<<<gridFor(ctx, cols, kBlockSize), kBlockSize, 0,
                                   ctx.stream()>>>(rows, cols, x, dy, stats, dscale, dbias);
  TRAINC_CHECK_LAUNCH("layerNormBackwardColumnsKernel");
  return Status();
}

Status layerNorm(Context &ctxBase, int64_t rows, int64_t cols, const float *x,
                 const float *scale, const float *bias, float epsilon,
                 float *y) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "layerNorm";
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkPositive(kernel, {{"rows", rows}, {"cols", cols}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(
      kernel, {{"x", x}, {"scale", scale}, {"y", y}}));
  int64_t total = 0;
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkedProduct(kernel, {rows, cols}, total));
  if (cols <= kWarpRowLimit) {
    layerNormWarpKernel<<<gridFor(ctx, rows, kWarpsPerBlock), kBlockSize, 0,
                          ctx.stream()>>>(rows, cols, x, scale, bias, epsilon,
                                          y);
    TRAINC_CHECK_LAUNCH("layerNormWarpKernel");
  } else {
    layerNormBlockKernel<<<gridFor(ctx, rows, 1), kBlockSize, 0,
                           ctx.stream()>>>(rows, cols, x, scale, bias, epsilon,
                                           y);
    TRAINC_CHECK_LAUNCH("layerNormBlockKernel");
  }
  return Status();
}

} // namespace trainc::cuda
