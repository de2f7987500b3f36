//===- status.h - error handling of the trainc runtime ---------*- C++ -*-===//
//
// Every runtime entry point returns a Status; the library never exits or
// aborts on bad input. Thread-safe: a Status is a plain value.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_STATUS_H
#define TRAINC_RT_STATUS_H

#include <string>
#include <utility>

namespace trainc::rt {

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status error(std::string message) { return Status(std::move(message)); }
  bool ok() const { return !failed; }
  const std::string &message() const { return text; }

private:
  explicit Status(std::string message) : failed(true), text(std::move(message)) {}
  bool failed = false;
  std::string text;
};

} // namespace trainc::rt

/// Returns the Status of `expr` from the enclosing function if it failed.
#define TRAINC_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    ::trainc::rt::Status trainc_status_ = (expr);                              \
    if (!trainc_status_.ok())                                                  \
      return trainc_status_;                                                   \
  } while (0)

#endif // TRAINC_RT_STATUS_H
