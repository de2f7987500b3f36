//===- DType.cpp - element type helpers -----------------------------------===//

#include "trainc_rt/program.h"

#include <cmath>
#include <cstring>

namespace trainc::rt {

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::I1:
  case DType::U8:
    return 1;
  }
  // An out-of-range value cast to DType (a corrupt descriptor): report size 0
  // so that callers computing byte counts notice instead of reading garbage.
  return 0;
}

const char *dtypeName(DType type) {
  switch (type) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F64:
    return "f64";
  case DType::I64:
    return "i64";
  case DType::I32:
    return "i32";
  case DType::I1:
    return "i1";
  case DType::U8:
    return "u8";
  }
  return "<invalid dtype>";
}

int64_t firstNonFinite(DType type, const void *data, int64_t count) {
  const char *bytes = static_cast<const char *>(data);
  for (int64_t k = 0; k < count; ++k) {
    bool finite = true;
    if (type == DType::F32) {
      float v;
      std::memcpy(&v, bytes + 4 * k, 4);
      finite = std::isfinite(v);
    } else if (type == DType::F64) {
      double v;
      std::memcpy(&v, bytes + 8 * k, 8);
      finite = std::isfinite(v);
    } else if (type == DType::F16 || type == DType::BF16) {
      uint16_t v;
      std::memcpy(&v, bytes + 2 * k, 2);
      // All-ones exponent: infinity or NaN.
      uint16_t exponent = type == DType::F16 ? 0x7c00 : 0x7f80;
      finite = (v & exponent) != exponent;
    } else {
      return -1;
    }
    if (!finite)
      return k;
  }
  return -1;
}

} // namespace trainc::rt
