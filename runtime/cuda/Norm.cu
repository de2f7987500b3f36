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

/// Past this many columns a row gets a whole block.
constexpr int64_t kWarpRowLimit = 1024;

//===----------------------------------------------------------------------===//
// Batch norm in training: per-channel sums split over the rows
//===----------------------------------------------------------------------===//
//
// A channel's n * spatial values are split into chunks of rows. One block
// sums one chunk of one channel (NCHW: 256 threads along the rows of a plane)
// or of a tile of 32 channels (channels-last: 32 x 8 threads, 32 consecutive
// values per row, coalesced), in double; a per-channel kernel adds the chunks
// in order; an element-wise kernel writes y (or dx). A channel of a large
// activation so gets hundreds of blocks, not one. The split depends on the
// shape alone, so the sums, and the results, are the same on every run and
// every GPU.
//
// The statistics are shifted sums: d = x - x[row 0] of the channel, sum d and
// sum d^2, which keeps the variance exact in double unless the mean is many
// orders of magnitude above the spread.

/// A chunk's two sums of one channel and the number of kept values.
struct ChannelPartial {
  double first, second, count;
};

/// Per-channel results of the statistics: mean, 1 / sqrt(var + eps), kept
/// values (0 marks a channel with too few).
struct ChannelMoments {
  double mean, rstd, count;
};

constexpr int kTileChannels = 32, kTileRows = 8;
constexpr int kPlaneThreads = 256;
/// Rows per chunk (2 per thread of a plane block, 32 per thread of a tile
/// block), longer where that would make more than kMaxChunks chunks.
constexpr int64_t kPlaneChunkRows = 2 * kPlaneThreads, kTileChunkRows = 32 * kTileRows;
constexpr int64_t kMaxChunks = 512;

/// Where (row r of n * spatial, channel ch) lies in x [n, c, spatial] or
/// channels-last x [n * spatial, c].
template <bool Last>
__device__ __forceinline__ int64_t bnAt(int64_t r, int64_t ch, int64_t c, int64_t spatial) {
  return Last ? r * c + ch : ((r / spatial) * c + ch) * spatial + r % spatial;
}

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

/// The chunk split of `rows` rows: the chunk length and the chunk count.
struct ChunkSplit {
  int64_t rows, chunks;
};

inline ChunkSplit chunkSplit(int64_t rows, bool last) {
  int64_t length = last ? kTileChunkRows : kPlaneChunkRows;
  if ((rows + length - 1) / length > kMaxChunks)
    length = (rows + kMaxChunks - 1) / kMaxChunks;
  return {length, (rows + length - 1) / length};
}

/// Partial sums of each (chunk, channel): the shifted moments of x
/// (moments == nullptr), or sum dy and sum dy (x - mean) given the moments.
/// Grid: (chunks, channel blocks); masked samples are left out.
template <bool Last>
__global__ void batchNormPartialKernel(int64_t n, int64_t c, int64_t spatial, int64_t chunkRows,
                                       const float *x, const float *dy,
                                       const ChannelMoments *moments, const float *mask,
                                       ChannelPartial *partials) {
  __shared__ double tile[kTileRows][kTileChannels];
  __shared__ double warps[kWarpSize];
  const int64_t rows = n * spatial;
  const int64_t begin = int64_t(blockIdx.x) * chunkRows;
  const int64_t end = begin + chunkRows < rows ? begin + chunkRows : rows;
  const int64_t blocksOfChannels = Last ? (c + kTileChannels - 1) / kTileChannels : c;
  for (int64_t cb = blockIdx.y; cb < blocksOfChannels; cb += gridDim.y) {
    const int64_t ch = Last ? cb * kTileChannels + threadIdx.x : cb;
    const bool active = ch < c;
    const int64_t lane = Last ? threadIdx.y : threadIdx.x;
    const int64_t stride = Last ? kTileRows : kPlaneThreads;
    double first = 0.0, second = 0.0, count = 0.0;
    if (active) {
      const double shift = moments ? moments[ch].mean : double(x[bnAt<Last>(0, ch, c, spatial)]);
      for (int64_t r = begin + lane; r < end; r += stride) {
        if (mask && mask[r / spatial] == 0.0f)
          continue;
        const int64_t at = bnAt<Last>(r, ch, c, spatial);
        const double d = double(x[at]) - shift;
        if (dy) {
          first += dy[at];
          second += double(dy[at]) * d;
        } else {
          first += d;
          second += d * d;
        }
        count += 1.0;
      }
    }
    if (Last) {
      first = tileColumnSum(first, tile);
      second = tileColumnSum(second, tile);
      count = tileColumnSum(count, tile);
    } else {
      first = blockSum(first, warps);
      second = blockSum(second, warps);
      count = blockSum(count, warps);
    }
    if (active && lane == 0)
      partials[int64_t(blockIdx.x) * c + ch] = {first, second, count};
  }
}

/// One thread per channel: adds the chunks' shifted moments into the mean and
/// 1 / sqrt(var + eps) (a channel with fewer than two kept values is a device
/// error); for the forward pass (`scale` given) also y's per-channel factor
/// and offset and the running statistics.
__global__ void batchNormMomentsKernel(int64_t c, int64_t spatial, int64_t chunks,
                                       bool last, const float *x,
                                       const ChannelPartial *partials, float epsilon,
                                       ChannelMoments *moments, const float *scale,
                                       const float *bias, const float *runningMean,
                                       const float *runningVar, float momentum,
                                       double *factor, double *offset, float *newMean,
                                       float *newVar, DeviceErrorRecord *errors) {
  for (int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; ch < c;
       ch += int64_t(gridDim.x) * blockDim.x) {
    double first = 0.0, second = 0.0, count = 0.0;
    for (int64_t k = 0; k < chunks; ++k) {
      const ChannelPartial &p = partials[k * c + ch];
      first += p.first;
      second += p.second;
      count += p.count;
    }
    const double shift = double(x[last ? ch : ch * spatial]);
    if (count < 2.0) {
      recordDeviceError(errors, DeviceErrorCode::BatchNormCount, int64_t(count), 2, ch);
      moments[ch] = {0.0, 0.0, 0.0};
      if (scale) {
        factor[ch] = 0.0;
        offset[ch] = 0.0;
      }
      continue;
    }
    const double meanShifted = first / count;
    const double var = fmax(second / count - meanShifted * meanShifted, 0.0);
    const double mean = shift + meanShifted;
    const double rstd = rsqrt(var + double(epsilon));
    moments[ch] = {mean, rstd, count};
    if (!scale)
      continue;
    factor[ch] = double(scale[ch]) * rstd;
    offset[ch] = double(bias[ch]) - mean * double(scale[ch]) * rstd;
    const double unbiased = var * count / (count - 1.0);
    newMean[ch] = float(double(momentum) * runningMean[ch] + (1.0 - double(momentum)) * mean);
    newVar[ch] = float(double(momentum) * runningVar[ch] + (1.0 - double(momentum)) * unbiased);
  }
}

/// The channel of flat element i of [n, c, spatial] (or [n * spatial, c]).
__device__ __forceinline__ int64_t bnChannel(int64_t i, int64_t c, int64_t spatial, bool last) {
  return last ? i % c : (i / spatial) % c;
}

/// y = x * factor[ch] + offset[ch], every element (masked samples too).
__global__ void batchNormApplyKernel(int64_t c, int64_t spatial, int64_t total, bool last,
                                     const float *x, const double *factor,
                                     const double *offset, float *y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = bnChannel(i, c, spatial, last);
    y[i] = float(double(x[i]) * factor[ch] + offset[ch]);
  }
}

/// One thread per channel: dscale = sum dy xhat, dbias = sum dy from the
/// chunks' sums, and into `means` the two means dx needs.
__global__ void batchNormGradSumsKernel(int64_t c, int64_t chunks,
                                        const ChannelPartial *partials,
                                        const ChannelMoments *moments, float *dscale,
                                        float *dbias, double *meanDy, double *meanDyXhat) {
  for (int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; ch < c;
       ch += int64_t(gridDim.x) * blockDim.x) {
    double sumDy = 0.0, sumDyCentred = 0.0;
    for (int64_t k = 0; k < chunks; ++k) {
      sumDy += partials[k * c + ch].first;
      sumDyCentred += partials[k * c + ch].second;
    }
    const ChannelMoments m = moments[ch];
    const double sumDyXhat = sumDyCentred * m.rstd;
    dscale[ch] = float(sumDyXhat);
    dbias[ch] = float(sumDy);
    meanDy[ch] = m.count > 0.0 ? sumDy / m.count : 0.0;
    meanDyXhat[ch] = m.count > 0.0 ? sumDyXhat / m.count : 0.0;
  }
}

/// dx = scale rstd (dy - mean dy - xhat mean(dy xhat)), 0 where masked (and
/// in a channel with too few values, already a device error).
__global__ void batchNormGradApplyKernel(int64_t c, int64_t spatial, int64_t total, bool last,
                                         const float *x, const float *scale, const float *dy,
                                         const float *mask, const ChannelMoments *moments,
                                         const double *meanDy, const double *meanDyXhat,
                                         float *dx) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ch = bnChannel(i, c, spatial, last);
    const int64_t sample = i / (c * spatial); // both layouts
    const ChannelMoments m = moments[ch];
    if ((mask && mask[sample] == 0.0f) || m.count == 0.0) {
      dx[i] = 0.0f;
      continue;
    }
    const double xhat = (double(x[i]) - m.mean) * m.rstd;
    dx[i] = float(double(scale[ch]) * m.rstd * (double(dy[i]) - meanDy[ch] - xhat * meanDyXhat[ch]));
  }
}

/// The per-step workspace of the batch norm kernels: the partial sums, the
/// moments and two per-channel double arrays, carved from the context's
/// reduction workspace (the 16-bit entry points hold their f32 copies of x
/// and y in the library workspace meanwhile).
struct BatchNormScratch {
  ChannelPartial *partials;
  ChannelMoments *moments;
  double *first, *second;
};

Status batchNormScratch(CudaContext &ctx, int64_t c, int64_t chunks, BatchNormScratch &s) {
  auto align = [](size_t bytes) { return (bytes + 255) & ~size_t(255); };
  const size_t partialBytes = align(sizeof(ChannelPartial) * size_t(chunks) * size_t(c));
  const size_t momentBytes = align(sizeof(ChannelMoments) * size_t(c));
  const size_t arrayBytes = align(sizeof(double) * size_t(c));
  char *base = nullptr;
  TRAINC_RETURN_IF_ERROR(ctx.reductionWorkspace(reinterpret_cast<void **>(&base),
                                                partialBytes + momentBytes + 2 * arrayBytes));
  s.partials = reinterpret_cast<ChannelPartial *>(base);
  s.moments = reinterpret_cast<ChannelMoments *>(base + partialBytes);
  s.first = reinterpret_cast<double *>(base + partialBytes + momentBytes);
  s.second = reinterpret_cast<double *>(base + partialBytes + momentBytes + arrayBytes);
  return Status();
}

/// Launches batchNormPartialKernel over every (chunk, channel block).
void launchPartials(CudaContext &ctx, bool last, int64_t n, int64_t c, int64_t spatial,
                    const ChunkSplit &split, const float *x, const float *dy,
                    const ChannelMoments *moments, const float *mask,
                    ChannelPartial *partials) {
  const int64_t blocksOfChannels = last ? (c + kTileChannels - 1) / kTileChannels : c;
  dim3 grid(unsigned(split.chunks), unsigned(blocksOfChannels < 65535 ? blocksOfChannels : 65535));
  if (last)
    batchNormPartialKernel<true><<<grid, dim3(kTileChannels, kTileRows), 0, ctx.stream()>>>(
        n, c, spatial, split.rows, x, dy, moments, mask, partials);
  else
    batchNormPartialKernel<false><<<grid, kPlaneThreads, 0, ctx.stream()>>>(
        n, c, spatial, split.rows, x, dy, moments, mask, partials);
}

/// Splits x [n, c, spatial]'s rows into chunks, takes the scratch for them
/// and sums each chunk's shifted moments of x into it; errors name `site`.
Status momentPartials(CudaContext &ctx, const char *site, bool last, int64_t n, int64_t c,
                      int64_t spatial, const float *x, const float *mask, ChunkSplit &split,
                      BatchNormScratch &scratch) {
  split = chunkSplit(n * spatial, last);
  TRAINC_RETURN_IF_ERROR(batchNormScratch(ctx, c, split.chunks, scratch));
  launchPartials(ctx, last, n, c, spatial, split, x, nullptr, nullptr, mask, scratch.partials);
  return checkLaunch(site, "batchNormPartialKernel");
}

} // namespace

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

Status batchNormInference(Context &ctxBase, int64_t n, int64_t c,
                          int64_t spatial, const float *x, const float *scale,
                          const float *bias, const float *mean,
                          const float *var, float epsilon, float *y,
                          bool channelsLast, const ::trainc::rt::NormFusion *fusion) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "batchNormInference";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNoHostFusion(kernel, fusion));
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
                         float *newMean, float *newVar, bool channelsLast,
                         const ::trainc::rt::NormFusion *fusion) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "batchNormTraining";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNoHostFusion(kernel, fusion));
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
  ChunkSplit split{};
  BatchNormScratch scratch{};
  TRAINC_RETURN_IF_ERROR(momentPartials(ctx, kernel, channelsLast, n, c, spatial, x, mask,
                                        split, scratch));
  batchNormMomentsKernel<<<gridFor(ctx, c, kBlockSize), kBlockSize, 0, ctx.stream()>>>(
      c, spatial, split.chunks, channelsLast, x, scratch.partials, epsilon, scratch.moments,
      scale, bias, runningMean, runningVar, momentum, scratch.first, scratch.second, newMean,
      newVar, ctx.deviceErrors());
  TRAINC_CHECK_LAUNCH("batchNormMomentsKernel");
  const int64_t total = n * c * spatial; // checked above
  batchNormApplyKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0, ctx.stream()>>>(
      c, spatial, total, channelsLast, x, scratch.first, scratch.second, y);
  TRAINC_CHECK_LAUNCH("batchNormApplyKernel");
  return Status();
}

Status batchNormBackward(Context &ctxBase, int64_t n, int64_t c,
                         int64_t spatial, const float *x, const float *scale,
                         const float *dy, const float *mask, float epsilon,
                         float *dx, float *dscale, float *dbias,
                         bool channelsLast, const ::trainc::rt::NormFusion *fusion) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "batchNormBackward";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNoHostFusion(kernel, fusion));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkBatchNormShape(kernel, n, c, spatial));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(kernel, {{"x", x},
                                                             {"scale", scale},
                                                             {"dy", dy},
                                                             {"dx", dx},
                                                             {"dscale", dscale},
                                                             {"dbias", dbias}}));
  // The moments of x again (not kept from the forward pass), then the two
  // sums of the gradient, then dx.
  ChunkSplit split{};
  BatchNormScratch scratch{};
  TRAINC_RETURN_IF_ERROR(momentPartials(ctx, kernel, channelsLast, n, c, spatial, x, mask,
                                        split, scratch));
  const unsigned channelGrid = gridFor(ctx, c, kBlockSize);
  batchNormMomentsKernel<<<channelGrid, kBlockSize, 0, ctx.stream()>>>(
      c, spatial, split.chunks, channelsLast, x, scratch.partials, epsilon, scratch.moments,
      nullptr, nullptr, nullptr, nullptr, 0.0f, nullptr, nullptr, nullptr, nullptr,
      ctx.deviceErrors());
  TRAINC_CHECK_LAUNCH("batchNormMomentsKernel");
  launchPartials(ctx, channelsLast, n, c, spatial, split, x, dy, scratch.moments, mask,
                 scratch.partials);
  TRAINC_CHECK_LAUNCH("batchNormPartialKernel");
  batchNormGradSumsKernel<<<channelGrid, kBlockSize, 0, ctx.stream()>>>(
      c, split.chunks, scratch.partials, scratch.moments, dscale, dbias, scratch.first,
      scratch.second);
  TRAINC_CHECK_LAUNCH("batchNormGradSumsKernel");
  const int64_t total = n * c * spatial; // checked above
  batchNormGradApplyKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0, ctx.stream()>>>(
      c, spatial, total, channelsLast, x, scale, dy, mask, scratch.moments, scratch.first,
      scratch.second, dx);
  TRAINC_CHECK_LAUNCH("batchNormGradApplyKernel");
  return Status();
}

Status layerNormBackward(Context &ctxBase, int64_t rows, int64_t cols, const float *x,
                         const float *scale, const float *dy, float epsilon, float *dx,
                         float *dscale, float *dbias, const ::trainc::rt::NormFusion *fusion) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "layerNormBackward";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNoHostFusion(kernel, fusion));
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
                 float *y, const ::trainc::rt::NormFusion *fusion) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "layerNorm";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNoHostFusion(kernel, fusion));
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
