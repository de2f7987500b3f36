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
  /// The training loss became non-finite (a learning rate too high, as a
  /// rule): the trainer ends with kExitLossDiverged, which tells a driver
  /// (trainc pbt) a diverged run from a broken one.
  static Status lossDiverged(std::string message) {
    Status status(std::move(message));
    status.diverged = true;
    return status;
  }
  bool ok() const { return !failed; }
  bool isLossDiverged() const { return diverged; }
  const std::string &message() const { return text; }

private:
  explicit Status(std::string message) : failed(true), text(std::move(message)) {}
  bool failed = false, diverged = false;
  std::string text;
};

/// The trainer's exit status when the training loss became non-finite (1:
/// any other error).
inline constexpr int kExitLossDiverged = 3;

} // namespace trainc::rt

/// Returns the Status of `expr` from the enclosing function if it failed.
#define TRAINC_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    ::trainc::rt::Status trainc_status_ = (expr);                              \
    if (!trainc_status_.ok())                                                  \
      return trainc_status_;                                                   \
  } while (0)

#endif // TRAINC_RT_STATUS_H
