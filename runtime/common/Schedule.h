//===- Schedule.h - the learning-rate schedule ------------------*- C++ -*-===//
//
// Internal to the runtime: the trainer's --lr-schedule and its parameters,
// parsed once into an enum, and the learning rate it gives each step.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_SCHEDULE_H
#define TRAINC_RT_COMMON_SCHEDULE_H

#include "trainc_rt/status.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace trainc::rt::detail {

/// PyTorch's schedulers, stepped once per optimizer step (see scheduledLr).
enum class ScheduleKind { Constant, Step, Cosine, OneCycle, Cyclic };

/// "constant", "step", "cosine", "onecycle", "cyclic".
const char *scheduleName(ScheduleKind kind);
std::optional<ScheduleKind> parseSchedule(const std::string &name);

/// --lr-schedule and its parameters.
struct LrSchedule {
  ScheduleKind kind = ScheduleKind::Constant;
  int64_t warmupSteps = 0;
  /// 0: not given (step: 1; cyclic: 2000).
  int64_t stepSize = 0;
  /// NaN and -1: not given (0.1; 0 for cosine, lr / 10 for cyclic).
  double gamma = std::nan(""), minLr = -1.0;
};

/// The learning rate of step `k` (0-based) of `total` under `schedule`, from
/// the base (peak) rate `lr`.
double scheduledLr(const LrSchedule &schedule, double lr, int64_t k, int64_t total);

/// A schedule's parameter given without that schedule (--gamma without
/// --lr-schedule step) is an error naming the flag and the schedules that
/// read it.
Status checkScheduleFlags(const LrSchedule &schedule);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_SCHEDULE_H
