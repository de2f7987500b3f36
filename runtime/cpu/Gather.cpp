//===- Gather.cpp - gather along a middle axis ----------------------------===//
//
// out[o, j, i] = data[o, indices[j], i]: for each (o, j) one contiguous run
// of inner * elementBytes bytes, so the copy is a memcpy per run whatever the
// element type.
//
//===----------------------------------------------------------------------===//

#include "../common/KernelChecks.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace trainc::cpu {
using namespace ::trainc::rt;

namespace {

/// The row each index picks, negative indices counted from the end; an index
/// outside [-axis, axis) is an error naming its position.
Status tableRows(const char *kernel, const int64_t *indices, int64_t numIndices,
                 int64_t axis, std::vector<int64_t> &rows) {
  rows.resize(numIndices);
  for (int64_t j = 0; j < numIndices; ++j) {
    int64_t index = indices[j];
    if (index < -axis || index >= axis)
      return Status::error(std::string(kernel) + ": index " + std::to_string(index) +
                           " at position " + std::to_string(j) + " is outside [" +
                           std::to_string(-axis) + ", " + std::to_string(axis) + ")");
    rows[j] = index < 0 ? index + axis : index;
  }
  return Status();
}

} // namespace

Status gather(Context &ctx, int64_t outer, int64_t axis, int64_t inner,
              size_t elementBytes, const void *data, const int64_t *indices,
              int64_t numIndices, void *out) {
  (void)ctx;
  const char *kernel = "gather";
  TRAINC_RETURN_IF_ERROR(checkNotNull(
      kernel, {{"data", data}, {"indices", indices}, {"out", out}}));
  TRAINC_RETURN_IF_ERROR(
      checkPositive(kernel, {{"outer", outer},
                             {"axis", axis},
                             {"inner", inner},
                             {"elementBytes", int64_t(elementBytes)},
                             {"numIndices", numIndices}}));
  int64_t runBytes;
  TRAINC_RETURN_IF_ERROR(checkedProduct(
      kernel, {outer, axis, inner, int64_t(elementBytes)}, runBytes));
  runBytes = inner * int64_t(elementBytes);

  // Normalize negative indices once (and check all of them) before copying.
  std::vector<int64_t> rows;
  TRAINC_RETURN_IF_ERROR(tableRows(kernel, indices, numIndices, axis, rows));

  const char *src = static_cast<const char *>(data);
  char *dst = static_cast<char *>(out);
  const int64_t runs = outer * numIndices;
  // Parallel only when there is enough to copy to pay for waking threads.
#pragma omp parallel for schedule(static) if (runs * runBytes >= (1 << 20))
  for (int64_t r = 0; r < runs; ++r) {
    const int64_t o = r / numIndices, j = r % numIndices;
    std::memcpy(dst + r * runBytes, src + (o * axis + rows[j]) * runBytes,
                runBytes);
  }
  return Status();
}

Status gatherBackward(Context &ctx, int64_t outer, int64_t axis, int64_t inner,
                      const float *dy, const int64_t *indices,
                      int64_t numIndices, int64_t paddingRow, float *dtable) {
  (void)ctx;
  const char *kernel = "gatherBackward";
  TRAINC_RETURN_IF_ERROR(checkNotNull(
      kernel, {{"dy", dy}, {"indices", indices}, {"dtable", dtable}}));
  TRAINC_RETURN_IF_ERROR(checkPositive(kernel, {{"outer", outer},
                                                {"axis", axis},
                                                {"inner", inner},
                                                {"numIndices", numIndices}}));
  int64_t total;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {outer, axis, inner}, total));
  std::vector<int64_t> rows;
  TRAINC_RETURN_IF_ERROR(tableRows(kernel, indices, numIndices, axis, rows));
  std::memset(dtable, 0, size_t(total) * sizeof(float));
  // Parallel over outer slices and blocks of columns, serial over the
  // indices: repeated indices accumulate in index order, so the sum is the
  // same on every run, and each block reads contiguous runs of dy.
  constexpr int64_t kColumns = 64;
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static) collapse(2) if (outer * numIndices * inner >= (1 << 16))
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t first = blk * kColumns, last = std::min(inner, first + kColumns);
      for (int64_t j = 0; j < numIndices; ++j) {
        if (rows[j] == paddingRow)
          continue;
        float *dst = dtable + (o * axis + rows[j]) * inner;
        const float *src = dy + (o * numIndices + j) * inner;
        for (int64_t i = first; i < last; ++i)
          dst[i] += src[i];
      }
    }
  return Status();
}

} // namespace trainc::cpu
