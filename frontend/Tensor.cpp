//===- Tensor.cpp - host tensors of the importer --------------------------===//

#include "frontend/Tensor.h"

#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstring>

using namespace trainc::frontend;

namespace {

float halfToFloat(uint16_t bits, bool bfloat) {
  if (bfloat) {
    uint32_t wide = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &wide, 4);
    return f;
  }
  llvm::APFloat value(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
  return value.convertToFloat();
}

uint16_t floatToHalf(double v, bool bfloat) {
  llvm::APFloat value(v);
  bool lost;
  value.convert(bfloat ? llvm::APFloat::BFloat() : llvm::APFloat::IEEEhalf(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
  return static_cast<uint16_t>(value.bitcastToAPInt().getZExtValue());
}

template <typename T> T load(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> void store(char *p, T v) { std::memcpy(p, &v, sizeof(T)); }

} // namespace

llvm::StringRef trainc::frontend::dtypeName(DType type) {
  switch (type) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F64: return "f64";
  case DType::I64: return "i64";
  case DType::I32: return "i32";
  case DType::I1: return "i1";
  }
  return "?";
}

size_t trainc::frontend::dtypeSize(DType type) {
  switch (type) {
  case DType::F64:
  case DType::I64: return 8;
  case DType::F32:
  case DType::I32: return 4;
  case DType::F16:
  case DType::BF16: return 2;
  case DType::I1: return 1;
  }
  return 1;
}

bool trainc::frontend::isFloat(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 ||
         type == DType::F64;
}

Tensor::Tensor(DType dtype, llvm::ArrayRef<int64_t> shape)
    : type(dtype), dims(shape.begin(), shape.end()) {
  for (int64_t d : shape)
    count *= d;
  storage.assign(static_cast<size_t>(count) * dtypeSize(dtype), 0);
}

double Tensor::real(int64_t i) const {
  const char *p = storage.data() + i * dtypeSize(type);
  switch (type) {
  case DType::F32: return load<float>(p);
  case DType::F64: return load<double>(p);
  case DType::F16: return halfToFloat(load<uint16_t>(p), false);
  case DType::BF16: return halfToFloat(load<uint16_t>(p), true);
  case DType::I64: return static_cast<double>(load<int64_t>(p));
  case DType::I32: return load<int32_t>(p);
  case DType::I1: return *p ? 1.0 : 0.0;
  }
  return 0;
}

int64_t Tensor::integer(int64_t i) const {
  const char *p = storage.data() + i * dtypeSize(type);
  switch (type) {
  case DType::I64: return load<int64_t>(p);
  case DType::I32: return load<int32_t>(p);
  case DType::I1: return *p ? 1 : 0;
  default: {
    double v = real(i);
    // Saturate instead of invoking undefined behaviour on out-of-range floats.
    if (!(v == v))
      return 0;
    if (v >= 9.2e18)
      return INT64_MAX;
    if (v <= -9.2e18)
      return INT64_MIN;
    return static_cast<int64_t>(v);
  }
  }
}

void Tensor::setReal(int64_t i, double v) {
  char *p = storage.data() + i * dtypeSize(type);
  switch (type) {
  case DType::F32: store<float>(p, static_cast<float>(v)); return;
  case DType::F64: store<double>(p, v); return;
  case DType::F16: store<uint16_t>(p, floatToHalf(v, false)); return;
  case DType::BF16: store<uint16_t>(p, floatToHalf(v, true)); return;
  case DType::I1: *p = v != 0.0; return;
  default: break;
  }
  // Float to integer: truncate toward zero, saturating.
  int64_t n = !(v == v) ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN
                                                                      : static_cast<int64_t>(v);
  setInteger(i, n);
}

void Tensor::setInteger(int64_t i, int64_t v) {
  char *p = storage.data() + i * dtypeSize(type);
  switch (type) {
  case DType::I64: store<int64_t>(p, v); return;
  case DType::I32: store<int32_t>(p, static_cast<int32_t>(v)); return;
  case DType::I1: *p = v != 0; return;
  default: setReal(i, static_cast<double>(v)); return;
  }
}

std::vector<int64_t> Tensor::integers() const {
  std::vector<int64_t> out(count);
  for (int64_t i = 0; i < count; ++i)
    out[i] = integer(i);
  return out;
}

Tensor Tensor::reshaped(llvm::ArrayRef<int64_t> newShape) const {
  Tensor t = *this;
  t.dims.assign(newShape.begin(), newShape.end());
  return t;
}

Tensor Tensor::castTo(DType target) const {
  Tensor t(target, dims);
  for (int64_t i = 0; i < count; ++i) {
    if (isFloat(type))
      t.setReal(i, real(i));
    else
      t.setInteger(i, integer(i));
  }
  return t;
}

Tensor Tensor::fromIntegers(DType dtype, llvm::ArrayRef<int64_t> shape,
                            llvm::ArrayRef<int64_t> values) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.setInteger(i, values[i]);
  return t;
}

Tensor Tensor::scalarReal(DType dtype, double v) {
  Tensor t(dtype, {});
  t.setReal(0, v);
  return t;
}

llvm::SmallVector<int64_t> trainc::frontend::stridesOf(llvm::ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

void trainc::frontend::forEachBroadcast(
    llvm::ArrayRef<int64_t> outShape,
    llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputs,
    const std::function<void(int64_t, llvm::ArrayRef<int64_t>)> &fn) {
  size_t rank = outShape.size();
  // Per input, the stride of each output axis (0 where the input broadcasts).
  std::vector<llvm::SmallVector<int64_t>> strides;
  for (llvm::ArrayRef<int64_t> in : inputs) {
    llvm::SmallVector<int64_t> own = stridesOf(in);
    llvm::SmallVector<int64_t> s(rank, 0);
    for (size_t i = 0; i < in.size(); ++i) {
      size_t axis = rank - in.size() + i;
      s[axis] = in[i] == 1 ? 0 : own[i];
    }
    strides.push_back(std::move(s));
  }
  int64_t total = 1;
  for (int64_t d : outShape)
    total *= d;
  llvm::SmallVector<int64_t> index(rank, 0);
  llvm::SmallVector<int64_t> offsets(inputs.size(), 0);
  for (int64_t n = 0; n < total; ++n) {
    fn(n, offsets);
    // Advance the multi-index like an odometer, updating offsets incrementally.
    for (int64_t axis = static_cast<int64_t>(rank) - 1; axis >= 0; --axis) {
      if (++index[axis] < outShape[axis]) {
        for (size_t k = 0; k < inputs.size(); ++k)
          offsets[k] += strides[k][axis];
        break;
      }
      for (size_t k = 0; k < inputs.size(); ++k)
        offsets[k] -= strides[k][axis] * (outShape[axis] - 1);
      index[axis] = 0;
    }
  }
}
