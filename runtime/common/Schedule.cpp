//===- Schedule.cpp - the learning-rate schedule --------------------------===//

#include "Schedule.h"

#include <algorithm>

namespace trainc::rt::detail {

namespace {

struct ScheduleEntry {
  ScheduleKind kind;
  const char *name;
};
constexpr ScheduleEntry kSchedules[] = {{ScheduleKind::Constant, "constant"},
                                        {ScheduleKind::Step, "step"},
                                        {ScheduleKind::Cosine, "cosine"},
                                        {ScheduleKind::OneCycle, "onecycle"},
                                        {ScheduleKind::Cyclic, "cyclic"}};

double orDefault(double value, double fallback) { return std::isnan(value) ? fallback : value; }

} // namespace

const char *scheduleName(ScheduleKind kind) {
  for (const ScheduleEntry &entry : kSchedules)
    if (entry.kind == kind)
      return entry.name;
  return "?";
}

std::optional<ScheduleKind> parseSchedule(const std::string &name) {
  for (const ScheduleEntry &entry : kSchedules)
    if (name == entry.name)
      return entry.kind;
  return std::nullopt;
}

/// As PyTorch's schedulers give it when stepped once per training step:
/// - constant: lr;
/// - step (StepLR): lr * gamma^floor(k / stepSize);
/// - cosine (CosineAnnealingLR, T_max = total): min + (lr - min)(1 + cos(pi k / total)) / 2;
/// - onecycle (OneCycleLR, cosine, pct_start 0.3, div_factor 25,
///   final_div_factor 1e4; the learning rate only, momentum is not cycled):
///   lr is the peak;
/// - cyclic (CyclicLR, triangular, step_size_up = stepSize): from min (default
///   lr / 10) up to lr and back, every 2 stepSize steps (momentum not cycled).
/// Warmup multiplies any of them by min(1, (k + 1) / warmupSteps).
double scheduledLr(const LrSchedule &o, double lr, int64_t k, int64_t total) {
  const double pi = 3.14159265358979323846;
  const bool cyclic = o.kind == ScheduleKind::Cyclic;
  const double minimum = o.minLr >= 0 ? o.minLr : (cyclic ? lr / 10 : 0.0);
  const int64_t stepSize = o.stepSize > 0 ? o.stepSize : (cyclic ? 2000 : 1);
  double value = lr;
  switch (o.kind) {
  case ScheduleKind::Constant:
    break;
  case ScheduleKind::Step:
    value = lr * std::pow(orDefault(o.gamma, 0.1), static_cast<double>(k / stepSize));
    break;
  case ScheduleKind::Cosine:
    value = minimum + (lr - minimum) * (1 + std::cos(pi * k / total)) / 2;
    break;
  case ScheduleKind::OneCycle: {
    double initial = lr / 25.0, final = initial / 1e4;
    double upEnd = 0.3 * total - 1, downEnd = total - 1.0;
    auto anneal = [&](double from, double to, double pct) {
      return to + (from - to) / 2.0 * (1 + std::cos(pi * pct));
    };
    value = k <= upEnd ? anneal(initial, lr, k / upEnd)
                       : anneal(lr, final, (k - upEnd) / (downEnd - upEnd));
    break;
  }
  case ScheduleKind::Cyclic: {
    double cycle = std::floor(1 + k / (2.0 * stepSize));
    double x = std::fabs(static_cast<double>(k) / stepSize - 2 * cycle + 1);
    value = minimum + (lr - minimum) * std::max(0.0, 1 - x);
    break;
  }
  }
  if (o.warmupSteps > 0)
    value *= std::min(1.0, static_cast<double>(k + 1) / o.warmupSteps);
  return value;
}

Status checkScheduleFlags(const LrSchedule &schedule) {
  const ScheduleKind kind = schedule.kind;
  struct ScheduleFlag {
    const char *name;
    bool given;
    bool read;
    const char *which;
  };
  const ScheduleFlag flags[] = {
      {"--step-size", schedule.stepSize > 0,
       kind == ScheduleKind::Step || kind == ScheduleKind::Cyclic, "--lr-schedule step or cyclic"},
      {"--gamma", !std::isnan(schedule.gamma), kind == ScheduleKind::Step, "--lr-schedule step"},
      {"--min-lr", schedule.minLr >= 0,
       kind == ScheduleKind::Cosine || kind == ScheduleKind::Cyclic,
       "--lr-schedule cosine or cyclic"},
  };
  for (const ScheduleFlag &f : flags)
    if (f.given && !f.read)
      return Status::error(std::string(f.name) + " is a parameter of " + f.which +
                           ", not of --lr-schedule " + scheduleName(kind) +
                           "; add the schedule or drop " + f.name);
  return Status();
}

} // namespace trainc::rt::detail
