//===- DType.cpp - element type helpers -----------------------------------===//

#include "trainc_rt/program.h"

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
  }
  return "<invalid dtype>";
}

} // namespace trainc::rt
