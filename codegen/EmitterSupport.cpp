//===- EmitterSupport.cpp - small helpers of the emitter ------------------===//

#include "codegen/ProgramEmitter.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace trainc::codegen {

/// The C++ element type of a tensor type, or "" if codegen does not support it.
std::string cType(Type type) {
  Type e = isa<ShapedType>(type) ? cast<ShapedType>(type).getElementType() : type;
  if (e.isF32()) return "float";
  if (e.isF64()) return "double";
  if (e.isBF16()) return "bf16";
  if (e.isF16()) return "f16";
  if (e.isInteger(64)) return "int64_t";
  if (e.isInteger(32)) return "int32_t";
  if (e.isInteger(1)) return "bool";
  return "";
}

/// The C++ type one element is computed in: float for the 16-bit storage
/// types (their kernels load, compute in float and round when storing).
std::string valueType(Type type) {
  Type e = isa<ShapedType>(type) ? cast<ShapedType>(type).getElementType() : type;
  return e.isBF16() || e.isF16() ? "float" : cType(type);
}

std::string dtypeEnum(Type type) {
  Type e = cast<ShapedType>(type).getElementType();
  const char *name = e.isF32() ? "F32" : e.isF16() ? "F16" : e.isBF16() ? "BF16"
                     : e.isF64() ? "F64" : e.isInteger(64) ? "I64"
                     : e.isInteger(32) ? "I32" : "I1";
  return std::string("trainc::rt::DType::") + name;
}

int64_t elementBytes(Type type) {
  Type e = cast<ShapedType>(type).getElementType();
  return e.isInteger(1) ? 1 : e.getIntOrFloatBitWidth() / 8;
}

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }
int64_t countOf(Value v) { return cast<RankedTensorType>(v.getType()).getNumElements(); }

std::string shapeText(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

/// The ONNX node name a location carries.
std::string nodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(inner))
        return name.getName().str();
  return "";
}

/// A float literal of the element type (f32 gets an `f` suffix).
std::string literal(double v, bool f32) {
  if (std::isnan(v))
    return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
  if (std::isinf(v))
    return std::string(v < 0 ? "-" : "") + (f32 ? "__builtin_inff()" : "__builtin_inf()");
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), f32 ? "%.9g" : "%.17g", v);
  std::string s = buffer;
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return f32 ? s + "f" : s;
}

/// The element strides and base offset of a strided slice of a tensor of
/// shape `in` (the slice's positions, as a view of the sliced tensor).
std::pair<std::vector<int64_t>, int64_t> sliceStrides(ArrayRef<int64_t> in,
                                                      ArrayRef<int64_t> starts,
                                                      ArrayRef<int64_t> steps) {
  std::vector<int64_t> own = rowMajorStrides(in), strides;
  int64_t base = 0;
  for (size_t d = 0; d < own.size(); ++d) {
    strides.push_back(own[d] * steps[d]);
    base += starts[d] * own[d];
  }
  return {strides, base};
}


/// Per-axis strides to read `in` broadcast to `out` (numpy rules): 0 on
/// broadcast axes.
std::vector<int64_t> broadcastStrides(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  std::vector<int64_t> own = rowMajorStrides(in), strides(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d)
    strides[lead + d] = in[d] == 1 && out[lead + d] != 1 ? 0 : own[d];
  return strides;
}

//===----------------------------------------------------------------------===//
// The emitter

} // namespace trainc::codegen
