//===- HostState.h - run state a checkpoint carries from the host -*- C++ -*-===//
//
// Internal to the runtime: what the host keeps of a run beside the device's
// tensors (a sampler's priorities, a selection's passes), as checkpoint
// tensors (TrainCheckpoints::addHostTensor) and manifest fields: byte
// copies of vectors and doubles written so that they read back exactly.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_HOSTSTATE_H
#define TRAINC_RT_COMMON_HOSTSTATE_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace trainc::rt::detail {

/// A checkpoint tensor of host state: f64 or i64, `count` elements.
struct HostTensor {
  std::string name;
  bool isFloat64;
  int64_t count;
};

/// `value` as text that reads back as the same double.
inline std::string exactNumber(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

template <typename T> std::vector<char> bytesOf(const std::vector<T> &values) {
  std::vector<char> bytes(values.size() * sizeof(T));
  if (!bytes.empty())
    std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

template <typename T> std::vector<T> valuesOf(const std::vector<char> &bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!values.empty())
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

/// `values` as a JSON list appended to `line` (floats exactly, as
/// exactNumber writes them).
template <typename T> void appendJsonList(std::string &line, const T *values, int64_t count) {
  line += "[";
  for (int64_t i = 0; i < count; ++i) {
    if (i)
      line += ", ";
    if constexpr (std::is_floating_point_v<T>)
      line += exactNumber(static_cast<double>(values[i]));
    else
      line += std::to_string(values[i]);
  }
  line += "]";
}

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_HOSTSTATE_H
