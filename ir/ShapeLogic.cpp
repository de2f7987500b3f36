//===- ShapeLogic.cpp - shape arithmetic shared across trainc -------------===//

#include "ir/ShapeLogic.h"

#include <algorithm>

namespace trainc::shape {

std::optional<llvm::SmallVector<int64_t>> broadcast(llvm::ArrayRef<int64_t> a,
                                                    llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  llvm::SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1)
      result[i] = da;
    else if (da == 1)
      result[i] = db;
    else
      return std::nullopt;
  }
  return result;
}

std::optional<int64_t> numElements(llvm::ArrayRef<int64_t> shape) {
  constexpr int64_t limit = int64_t(1) << 62;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return std::nullopt;
    if (d != 0 && n > limit / d)
      return std::nullopt;
    n *= d;
  }
  return n;
}

int64_t windowOutputSize(int64_t input, int64_t kernel, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation,
                         bool ceilMode) {
  if (stride < 1 || dilation < 1 || kernel < 1)
    return 0;
  // 128-bit arithmetic: attributes come from untrusted models and IR, and
  // dilation * kernel or room + stride must not wrap.
  using Wide = __int128;
  Wide span = Wide(dilation) * (kernel - 1) + 1;
  Wide room = Wide(input) + padBegin + padEnd - span;
  if (room < 0)
    return 0;
  Wide out = (ceilMode ? (room + stride - 1) / stride : room / stride) + 1;
  // With ceil_mode the last window must start inside the input or left padding
  // (PyTorch and ONNX agree on this rule).
  if (ceilMode && (out - 1) * stride >= Wide(input) + padBegin)
    --out;
  return out > INT64_MAX ? INT64_MAX : static_cast<int64_t>(out);
}

std::optional<llvm::SmallVector<int64_t>>
matmul(llvm::ArrayRef<int64_t> lhs, llvm::ArrayRef<int64_t> rhs,
       std::string &error) {
  if (lhs.empty() || rhs.empty()) {
    error = "matmul operands must have rank >= 1";
    return std::nullopt;
  }
  llvm::SmallVector<int64_t> a(lhs.begin(), lhs.end());
  llvm::SmallVector<int64_t> b(rhs.begin(), rhs.end());
  bool promotedA = a.size() == 1, promotedB = b.size() == 1;
  if (promotedA)
    a.insert(a.begin(), 1);
  if (promotedB)
    b.push_back(1);
  int64_t k = a.back();
  if (b[b.size() - 2] != k) {
    error = "contraction dimensions differ: " + format(lhs) + " times " +
            format(rhs);
    return std::nullopt;
  }
  auto batch = broadcast(llvm::ArrayRef<int64_t>(a).drop_back(2),
                         llvm::ArrayRef<int64_t>(b).drop_back(2));
  if (!batch) {
    error = "batch dimensions do not broadcast: " + format(lhs) + " times " +
            format(rhs);
    return std::nullopt;
  }
  llvm::SmallVector<int64_t> result = *batch;
  if (!promotedA)
    result.push_back(a[a.size() - 2]);
  if (!promotedB)
    result.push_back(b.back());
  return result;
}

int64_t sliceLength(int64_t start, int64_t end, int64_t step) {
  // Written so that no step (including INT64_MIN) overflows: the distance is
  // small (bounds are clamped) and the step's magnitude is taken unsigned.
  if (step > 0)
    return end > start ? (end - start - 1) / step + 1 : 0;
  if (step < 0) {
    if (start <= end)
      return 0;
    uint64_t magnitude = uint64_t(0) - static_cast<uint64_t>(step);
    return static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) / magnitude) + 1;
  }
  return 0;
}

void clampSliceBounds(int64_t dim, int64_t step, int64_t &start, int64_t &end) {
  auto normalize = [&](int64_t v) { return v < 0 ? v + dim : v; };
  start = normalize(start);
  end = normalize(end);
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    // ONNX Slice: with a negative step the start clamps to [0, dim-1].
    start = std::clamp<int64_t>(start, 0, std::max<int64_t>(dim - 1, 0));
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
}

std::string format(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

std::optional<llvm::SmallVector<int64_t>> pad(llvm::ArrayRef<int64_t> in,
                                              llvm::ArrayRef<int64_t> pads,
                                              std::string &error) {
  size_t rank = in.size();
  if (pads.size() != 2 * rank) {
    error = "expects " + std::to_string(2 * rank) + " pads for rank " +
            std::to_string(rank) + ", got " + std::to_string(pads.size());
    return std::nullopt;
  }
  constexpr int64_t limit = int64_t(1) << 62;
  llvm::SmallVector<int64_t> out;
  for (size_t d = 0; d < rank; ++d) {
    int64_t b = pads[d], e = pads[rank + d];
    // |pads| below 2^62 keeps the sum from overflowing.
    if (b <= -limit || b >= limit || e <= -limit || e >= limit ||
        in[d] + b + e < 0 || in[d] + b + e >= limit) {
      error = "pads " + std::to_string(b) + " and " + std::to_string(e) +
              " of axis " + std::to_string(d) + " (size " + std::to_string(in[d]) +
              ") give a negative or huge size";
      return std::nullopt;
    }
    out.push_back(in[d] + b + e);
  }
  if (!numElements(out)) {
    error = "the padded shape is too large";
    return std::nullopt;
  }
  return out;
}

std::optional<llvm::SmallVector<int64_t>> tile(llvm::ArrayRef<int64_t> in,
                                               llvm::ArrayRef<int64_t> repeats,
                                               std::string &error) {
  if (repeats.size() != in.size()) {
    error = "expects " + std::to_string(in.size()) + " repeats for rank " +
            std::to_string(in.size()) + ", got " + std::to_string(repeats.size());
    return std::nullopt;
  }
  llvm::SmallVector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (repeats[d] < 0) {
      error = "repeat " + std::to_string(repeats[d]) + " of axis " + std::to_string(d) +
              " is negative";
      return std::nullopt;
    }
    if (repeats[d] != 0 && in[d] > (int64_t(1) << 62) / repeats[d]) {
      error = "the tiled shape is too large";
      return std::nullopt;
    }
    out.push_back(in[d] * repeats[d]);
  }
  if (!numElements(out)) {
    error = "the tiled shape is too large";
    return std::nullopt;
  }
  return out;
}

int64_t padSource(int64_t at, int64_t size, int64_t begin, int mode) {
  int64_t j = at - begin;
  if (j >= 0 && j < size)
    return j;
  if (mode == 0)
    return -1;
  if (mode == 2)
    return j < 0 ? 0 : size - 1;
  if (mode == 3)
    return ((j % size) + size) % size;
  return j < 0 ? -j : 2 * (size - 1) - j;
}

llvm::SmallVector<int64_t> channelsFirst(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> out(shape.begin(), shape.end());
  if (shape.size() >= 3) {
    out.erase(out.begin() + 1, out.end());
    out.push_back(shape.back());
    out.append(shape.begin() + 1, shape.end() - 1);
  }
  return out;
}

llvm::SmallVector<int64_t> channelsLast(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> out(shape.begin(), shape.end());
  if (shape.size() >= 3) {
    out.erase(out.begin() + 1, out.end());
    out.append(shape.begin() + 2, shape.end());
    out.push_back(shape[1]);
  }
  return out;
}

} // namespace trainc::shape
