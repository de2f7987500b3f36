//===- Gather.cu - gather along the middle axis ---------------------------===//
//
// out[o, j, i] = data[o, indices[j], i] for any element size. A gathered
// row of `inner` elements is a contiguous run of bytes in both tensors, so
// the kernel copies rows as the widest word (16, 8, 4, 2 or 1 bytes) that
// divides the row length and both pointers' alignment: a float row of an
// embedding table moves as 16-byte vectors.
//
// Indices are device data: as with the loss labels (see Loss.cu), one out of
// range is recorded in the context's device error record, its row is
// written as zeros, and the error is reported at the next synchronize().
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

/// The table row index j picks (negative indices count from the end), or
/// -1 after recording an index outside [-axis, axis).
__device__ __forceinline__ int64_t tableRow(const int64_t *indices, int64_t j,
                                            int64_t axis,
                                            DeviceErrorRecord *errors) {
  int64_t index = indices[j];
  int64_t row = index < 0 ? index + axis : index;
  if (row < 0 || row >= axis) {
    recordDeviceError(errors, DeviceErrorCode::GatherIndex, index, axis, j);
    return -1;
  }
  return row;
}

/// One thread per output word, word index fastest, so a warp copies a
/// contiguous stretch of one row (or of consecutive rows).
template <typename Word>
__global__ void gatherKernel(int64_t outer, int64_t axis, int64_t rowWords,
                             const Word *data, const int64_t *indices,
                             int64_t numIndices, Word *out,
                             DeviceErrorRecord *errors) {
  int64_t total = outer * numIndices * rowWords;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t word = i % rowWords;
    int64_t j = (i / rowWords) % numIndices;
    int64_t o = i / (rowWords * numIndices);
    int64_t row = tableRow(indices, j, axis, errors);
    if (row < 0) {
      out[i] = Word{};
      continue;
    }
    out[i] = data[(o * axis + row) * rowWords + word];
  }
}

template <typename Word>
Status launchGather(CudaContext &ctx, int64_t outer, int64_t axis,
                    int64_t rowBytes, const void *data, const int64_t *indices,
                    int64_t numIndices, void *out) {
  int64_t rowWords = rowBytes / int64_t(sizeof(Word));
  int64_t total = outer * numIndices * rowWords;
  gatherKernel<Word>
      <<<gridFor(ctx, total, kBlockSize), kBlockSize, 0, ctx.stream()>>>(
          outer, axis, rowWords, static_cast<const Word *>(data), indices,
          numIndices, static_cast<Word *>(out), ctx.deviceErrors());
  return checkLaunch("gather", "gatherKernel");
}

/// Scatter-add of the gather gradient: one thread per dy element, added
/// into the zeroed table with atomicAdd (repeated indices collide). An index
/// out of range is recorded and its row skipped; so is the padding row.
__global__ void gatherBackwardKernel(int64_t outer, int64_t axis, int64_t inner,
                                     const float *dy, const int64_t *indices,
                                     int64_t numIndices, int64_t paddingRow,
                                     float *dtable, DeviceErrorRecord *errors) {
  int64_t total = outer * numIndices * inner;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t col = i % inner;
    int64_t j = (i / inner) % numIndices;
    int64_t o = i / (inner * numIndices);
    int64_t row = tableRow(indices, j, axis, errors);
    if (row < 0 || row == paddingRow)
      continue;
    atomicAdd(dtable + (o * axis + row) * inner + col, dy[i]);
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Launcher
//===----------------------------------------------------------------------===//

/// An out-of-range index is reported at the next synchronize(), see the
/// file comment.
Status gather(Context &ctxBase, int64_t outer, int64_t axis, int64_t inner,
              size_t elementBytes, const void *data, const int64_t *indices,
              int64_t numIndices, void *out) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "gather";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPositive(
      kernel, {{"outer", outer},
               {"axis", axis},
               {"inner", inner},
               {"numIndices", numIndices},
               {"elementBytes", int64_t(elementBytes)}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(
      kernel, {{"data", data}, {"indices", indices}, {"out", out}}));
  int64_t rowBytes = 0, unused = 0;
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkedProduct(
      kernel, {inner, int64_t(elementBytes)}, rowBytes));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkedProduct(kernel, {outer, axis, rowBytes}, unused));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkedProduct(
      kernel, {outer, numIndices, rowBytes}, unused));

  uintptr_t bits = reinterpret_cast<uintptr_t>(data) |
                   reinterpret_cast<uintptr_t>(out) | uintptr_t(rowBytes);
  if (bits % 16 == 0)
    return launchGather<uint4>(ctx, outer, axis, rowBytes, data, indices,
                               numIndices, out);
  if (bits % 8 == 0)
    return launchGather<uint2>(ctx, outer, axis, rowBytes, data, indices,
                               numIndices, out);
  if (bits % 4 == 0)
    return launchGather<uint32_t>(ctx, outer, axis, rowBytes, data, indices,
                                  numIndices, out);
  if (bits % 2 == 0)
    return launchGather<uint16_t>(ctx, outer, axis, rowBytes, data, indices,
                                  numIndices, out);
  return launchGather<uint8_t>(ctx, outer, axis, rowBytes, data, indices,
                               numIndices, out);
}

Status gatherBackward(Context &ctxBase, int64_t outer, int64_t axis,
                      int64_t inner, const float *dy, const int64_t *indices,
                      int64_t numIndices, int64_t paddingRow, float *dtable) {
  CudaContext &ctx = asCuda(ctxBase);
  const char *kernel = "gatherBackward";
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkPositive(kernel, {{"outer", outer},
                                                              {"axis", axis},
                                                              {"inner", inner},
                                                              {"numIndices", numIndices}}));
  TRAINC_RETURN_IF_ERROR(::trainc::rt::checkNotNull(
      kernel, {{"dy", dy}, {"indices", indices}, {"dtable", dtable}}));
  int64_t tableSize = 0, total = 0;
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkedProduct(kernel, {outer, axis, inner}, tableSize));
  TRAINC_RETURN_IF_ERROR(
      ::trainc::rt::checkedProduct(kernel, {outer, numIndices, inner}, total));
  TRAINC_RETURN_IF_ERROR(
      ctx.fill(dtable, 0, size_t(tableSize) * sizeof(float)));
  gatherBackwardKernel<<<gridFor(ctx, total, kBlockSize), kBlockSize, 0,
                         ctx.stream()>>>(outer, axis, inner, dy, indices,
                                         numIndices, paddingRow, dtable,
                                         ctx.deviceErrors());
  return checkLaunch(kernel, "gatherBackwardKernel");
}

} // namespace trainc::cuda
