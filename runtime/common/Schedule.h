//===- Schedule.h - the learning-rate schedule ------------------*- C++ -*-===//
//
// Internal to the runtime: the trainer's --lr-schedule and its parameters,
// parsed once into enums, and the learning rate (and, for 1cycle and cyclic,
// the momentum or beta1) it gives each step, as PyTorch's schedulers do.
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

/// PyTorch's schedulers, stepped once per optimizer step (see scheduledStep).
enum class ScheduleKind { Constant, Step, Cosine, OneCycle, Cyclic };
/// CyclicLR's mode: the cycle's amplitude constant, halved every cycle, or
/// scaled by gamma^step.
enum class CyclicMode { Triangular, Triangular2, ExpRange };
/// OneCycleLR's anneal_strategy.
enum class AnnealStrategy { Cos, Linear };

/// "constant", "step", "cosine", "onecycle", "cyclic".
const char *scheduleName(ScheduleKind kind);
std::optional<ScheduleKind> parseSchedule(const std::string &name);
/// "triangular", "triangular2", "exp_range" (CyclicLR's spellings).
const char *cyclicModeName(CyclicMode mode);
std::optional<CyclicMode> parseCyclicMode(const std::string &name);
/// "cos", "linear".
const char *annealName(AnnealStrategy strategy);
std::optional<AnnealStrategy> parseAnneal(const std::string &name);

/// --lr-schedule and its parameters. A NaN, negative or absent value is
/// "not given": the schedule's default (PyTorch's) applies, and a value given
/// for a schedule that does not read it is an error (checkScheduleFlags).
struct LrSchedule {
  ScheduleKind kind = ScheduleKind::Constant;
  int64_t warmupSteps = 0;
  /// 0: not given (step: 1; cyclic: 2000 steps up).
  int64_t stepSize = 0;
  /// cyclic: steps down (0: as many as up).
  int64_t stepSizeDown = 0;
  /// NaN and -1: not given (0.1; 0 for cosine, lr / 10 for cyclic).
  double gamma = std::nan(""), minLr = -1.0;
  /// onecycle (NaN: 0.3, 25, 1e4).
  double pctStart = std::nan(""), divFactor = std::nan(""), finalDivFactor = std::nan("");
  bool threePhase = false;
  std::optional<AnnealStrategy> anneal;
  /// cyclic (gamma NaN: 1).
  std::optional<CyclicMode> cyclicMode;
  double cyclicGamma = std::nan("");
  /// onecycle and cyclic: momentum (SGD, LARS) or beta1 (Adam, AdamW, LAMB)
  /// cycled against the learning rate between base and max (NaN: onecycle
  /// 0.85 and 0.95, cyclic 0.8 and 0.9), unless turned off.
  std::optional<bool> cycleMomentum;
  double baseMomentum = std::nan(""), maxMomentum = std::nan("");
};

/// Whether `schedule` sets the momentum (or beta1) of every step.
bool cyclesMomentum(const LrSchedule &schedule);
/// The momentum the schedule gives at its peak learning rate (its base
/// momentum); NaN where it cycles none.
double momentumAtPeak(const LrSchedule &schedule);

/// What the schedule sets for one step.
struct ScheduledStep {
  double lr;
  /// The momentum or beta1 (NaN: the schedule leaves it as the flags set it).
  double momentum;
};

/// Step `k` (0-based) of `total` under `schedule`, from the base (peak) rate
/// `lr`.
ScheduledStep scheduledStep(const LrSchedule &schedule, double lr, int64_t k, int64_t total);

/// A schedule's parameter given without that schedule (--gamma without
/// --lr-schedule step) is an error naming the flag and the schedules that
/// read it; so are values the schedule cannot run with over `totalSteps`.
Status checkScheduleFlags(const LrSchedule &schedule);
Status checkScheduleLength(const LrSchedule &schedule, int64_t totalSteps);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_SCHEDULE_H
