//===- Schedule.cpp - the learning-rate schedule --------------------------===//

#include "Schedule.h"

#include <algorithm>

namespace trainc::rt::detail {

namespace {

template <typename E> struct NameEntry {
  E value;
  const char *name;
};
constexpr NameEntry<ScheduleKind> kSchedules[] = {{ScheduleKind::Constant, "constant"},
                                                  {ScheduleKind::Step, "step"},
                                                  {ScheduleKind::Cosine, "cosine"},
                                                  {ScheduleKind::OneCycle, "onecycle"},
                                                  {ScheduleKind::Cyclic, "cyclic"}};
constexpr NameEntry<CyclicMode> kCyclicModes[] = {{CyclicMode::Triangular, "triangular"},
                                                  {CyclicMode::Triangular2, "triangular2"},
                                                  {CyclicMode::ExpRange, "exp_range"}};
constexpr NameEntry<AnnealStrategy> kAnneals[] = {{AnnealStrategy::Cos, "cos"},
                                                  {AnnealStrategy::Linear, "linear"}};

template <typename E, size_t N> const char *nameIn(const NameEntry<E> (&table)[N], E value) {
  for (const NameEntry<E> &entry : table)
    if (entry.value == value)
      return entry.name;
  return "?";
}
template <typename E, size_t N>
std::optional<E> parseIn(const NameEntry<E> (&table)[N], const std::string &name) {
  for (const NameEntry<E> &entry : table)
    if (name == entry.name)
      return entry.value;
  return std::nullopt;
}

double orDefault(double value, double fallback) { return std::isnan(value) ? fallback : value; }

constexpr double kPi = 3.14159265358979323846;

/// OneCycleLR's _annealing_cos and _annealing_linear: from `start` at
/// pct 0 to `end` at pct 1.
double anneal(AnnealStrategy strategy, double start, double end, double pct) {
  if (strategy == AnnealStrategy::Linear)
    return (end - start) * pct + start;
  return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1);
}

/// OneCycleLR.get_lr: the phases end at pct_start * total - 1 (and, with
/// three_phase, 2 pct_start * total - 2) and total - 1; within a phase, the
/// learning rate and the momentum anneal between the phase's ends.
ScheduledStep oneCycle(const LrSchedule &o, double maxLr, int64_t k, int64_t total) {
  const double pct = orDefault(o.pctStart, 0.3);
  const double initial = maxLr / orDefault(o.divFactor, 25.0);
  const double minimum = initial / orDefault(o.finalDivFactor, 1e4);
  const double low = orDefault(o.baseMomentum, 0.85), high = orDefault(o.maxMomentum, 0.95);
  struct Phase {
    double end, startLr, endLr, startMomentum, endMomentum;
  };
  const double upEnd = pct * static_cast<double>(total) - 1, last = total - 1.0;
  Phase two[] = {{upEnd, initial, maxLr, high, low}, {last, maxLr, minimum, low, high}};
  Phase three[] = {{upEnd, initial, maxLr, high, low},
                   {2 * pct * static_cast<double>(total) - 2, maxLr, initial, low, high},
                   {last, initial, minimum, high, high}};
  const Phase *phases = o.threePhase ? three : two;
  const int count = o.threePhase ? 3 : 2;
  const AnnealStrategy strategy = o.anneal.value_or(AnnealStrategy::Cos);
  double start = 0;
  for (int i = 0; i < count; ++i) {
    const Phase &phase = phases[i];
    if (static_cast<double>(k) <= phase.end || i == count - 1) {
      double at = (static_cast<double>(k) - start) / (phase.end - start);
      return {anneal(strategy, phase.startLr, phase.endLr, at),
              cyclesMomentum(o) ? anneal(strategy, phase.startMomentum, phase.endMomentum, at)
                                : std::nan("")};
    }
    start = phase.end;
  }
  return {maxLr, std::nan("")}; // not reached
}

/// CyclicLR.get_lr: up from base_lr to max_lr in step_size_up steps and down
/// in step_size_down, the amplitude scaled by the mode's function (of the
/// cycle, or of the step for exp_range); the momentum moves the other way.
ScheduledStep cyclic(const LrSchedule &o, double maxLr, int64_t k) {
  const double base = o.minLr >= 0 ? o.minLr : maxLr / 10;
  const double up = static_cast<double>(o.stepSize > 0 ? o.stepSize : 2000);
  const double down = o.stepSizeDown > 0 ? static_cast<double>(o.stepSizeDown) : up;
  const double size = up + down, ratio = up / size;
  const double cycle = std::floor(1 + static_cast<double>(k) / size);
  const double x = 1.0 + static_cast<double>(k) / size - cycle;
  const double scale = x <= ratio ? x / ratio : (x - 1) / (ratio - 1);
  double amplitude = 1.0;
  switch (o.cyclicMode.value_or(CyclicMode::Triangular)) {
  case CyclicMode::Triangular:
    break;
  case CyclicMode::Triangular2:
    amplitude = 1 / std::pow(2.0, cycle - 1);
    break;
  case CyclicMode::ExpRange:
    amplitude = std::pow(orDefault(o.cyclicGamma, 1.0), static_cast<double>(k));
    break;
  }
  const double low = orDefault(o.baseMomentum, 0.8), high = orDefault(o.maxMomentum, 0.9);
  return {base + (maxLr - base) * scale * amplitude,
          cyclesMomentum(o) ? high - (high - low) * scale * amplitude : std::nan("")};
}

} // namespace

const char *scheduleName(ScheduleKind kind) { return nameIn(kSchedules, kind); }
std::optional<ScheduleKind> parseSchedule(const std::string &name) {
  return parseIn(kSchedules, name);
}
const char *cyclicModeName(CyclicMode mode) { return nameIn(kCyclicModes, mode); }
std::optional<CyclicMode> parseCyclicMode(const std::string &name) {
  return parseIn(kCyclicModes, name);
}
const char *annealName(AnnealStrategy strategy) { return nameIn(kAnneals, strategy); }
std::optional<AnnealStrategy> parseAnneal(const std::string &name) {
  return parseIn(kAnneals, name);
}

bool cyclesMomentum(const LrSchedule &schedule) {
  return (schedule.kind == ScheduleKind::OneCycle || schedule.kind == ScheduleKind::Cyclic) &&
         schedule.cycleMomentum.value_or(true);
}

double momentumAtPeak(const LrSchedule &schedule) {
  if (!cyclesMomentum(schedule))
    return std::nan("");
  return orDefault(schedule.baseMomentum, schedule.kind == ScheduleKind::OneCycle ? 0.85 : 0.8);
}

/// As PyTorch's schedulers give it when stepped once per training step:
/// - constant: lr;
/// - step (StepLR): lr * gamma^floor(k / stepSize);
/// - cosine (CosineAnnealingLR, T_max = total): min + (lr - min)(1 + cos(pi k / total)) / 2;
/// - onecycle (OneCycleLR, total_steps = total, max_lr = lr): see oneCycle;
/// - cyclic (CyclicLR, max_lr = lr, base_lr = min): see cyclic.
/// Warmup multiplies the learning rate of any of them by
/// min(1, (k + 1) / warmupSteps).
ScheduledStep scheduledStep(const LrSchedule &o, double lr, int64_t k, int64_t total) {
  ScheduledStep at{lr, std::nan("")};
  switch (o.kind) {
  case ScheduleKind::Constant:
    break;
  case ScheduleKind::Step: {
    const int64_t stepSize = o.stepSize > 0 ? o.stepSize : 1;
    at.lr = lr * std::pow(orDefault(o.gamma, 0.1), static_cast<double>(k / stepSize));
    break;
  }
  case ScheduleKind::Cosine: {
    const double minimum = o.minLr >= 0 ? o.minLr : 0.0;
    at.lr = minimum + (lr - minimum) * (1 + std::cos(kPi * k / total)) / 2;
    break;
  }
  case ScheduleKind::OneCycle:
    at = oneCycle(o, lr, k, total);
    break;
  case ScheduleKind::Cyclic:
    at = cyclic(o, lr, k);
    break;
  }
  if (o.warmupSteps > 0)
    at.lr *= std::min(1.0, static_cast<double>(k + 1) / o.warmupSteps);
  return at;
}

Status checkScheduleFlags(const LrSchedule &schedule) {
  const ScheduleKind kind = schedule.kind;
  const bool step = kind == ScheduleKind::Step, cosine = kind == ScheduleKind::Cosine,
             onecycle = kind == ScheduleKind::OneCycle, cyclicKind = kind == ScheduleKind::Cyclic;
  struct ScheduleFlag {
    const char *name;
    bool given;
    bool read;
    const char *which;
  };
  const ScheduleFlag flags[] = {
      {"--step-size", schedule.stepSize > 0, step || cyclicKind, "--lr-schedule step or cyclic"},
      {"--step-size-down", schedule.stepSizeDown > 0, cyclicKind, "--lr-schedule cyclic"},
      {"--gamma", !std::isnan(schedule.gamma), step, "--lr-schedule step"},
      {"--min-lr", schedule.minLr >= 0, cosine || cyclicKind, "--lr-schedule cosine or cyclic"},
      {"--pct-start", !std::isnan(schedule.pctStart), onecycle, "--lr-schedule onecycle"},
      {"--div-factor", !std::isnan(schedule.divFactor), onecycle, "--lr-schedule onecycle"},
      {"--final-div-factor", !std::isnan(schedule.finalDivFactor), onecycle,
       "--lr-schedule onecycle"},
      {"--three-phase", schedule.threePhase, onecycle, "--lr-schedule onecycle"},
      {"--anneal-strategy", schedule.anneal.has_value(), onecycle, "--lr-schedule onecycle"},
      {"--cyclic-mode", schedule.cyclicMode.has_value(), cyclicKind, "--lr-schedule cyclic"},
      {"--cycle-momentum", schedule.cycleMomentum.has_value(), onecycle || cyclicKind,
       "--lr-schedule onecycle or cyclic"},
      {"--base-momentum", !std::isnan(schedule.baseMomentum), onecycle || cyclicKind,
       "--lr-schedule onecycle or cyclic"},
      {"--max-momentum", !std::isnan(schedule.maxMomentum), onecycle || cyclicKind,
       "--lr-schedule onecycle or cyclic"},
  };
  for (const ScheduleFlag &f : flags)
    if (f.given && !f.read)
      return Status::error(std::string(f.name) + " is a parameter of " + f.which +
                           ", not of --lr-schedule " + scheduleName(kind) +
                           "; add the schedule or drop " + f.name);
  if (!std::isnan(schedule.cyclicGamma) &&
      !(cyclicKind && schedule.cyclicMode == CyclicMode::ExpRange))
    return Status::error("--cyclic-gamma is the decay of --lr-schedule cyclic --cyclic-mode "
                         "exp_range; add them or drop --cyclic-gamma");
  if (!cyclesMomentum(schedule) &&
      (!std::isnan(schedule.baseMomentum) || !std::isnan(schedule.maxMomentum)))
    return Status::error(std::string(!std::isnan(schedule.baseMomentum) ? "--base-momentum"
                                                                        : "--max-momentum") +
                         ": --cycle-momentum=false cycles no momentum; drop one of them");
  if (onecycle && !std::isnan(schedule.pctStart) && schedule.pctStart <= 0)
    return Status::error("--pct-start must be in (0, 1), got 0");
  for (auto [name, value] : {std::pair{"--div-factor", schedule.divFactor},
                             std::pair{"--final-div-factor", schedule.finalDivFactor}})
    if (value == 0)
      return Status::error(std::string(name) + " must be above 0 (the learning rate is divided "
                                               "by it)");
  return Status();
}

Status checkScheduleLength(const LrSchedule &schedule, int64_t totalSteps) {
  if (schedule.kind != ScheduleKind::OneCycle)
    return Status();
  // OneCycleLR's phases must each be at least one step long (PyTorch
  // divides by their length).
  const double pct = orDefault(schedule.pctStart, 0.3);
  const double rise = pct * static_cast<double>(totalSteps) - 1;
  char text[256];
  if (rise <= 0) {
    std::snprintf(text, sizeof(text),
                  "--lr-schedule onecycle: a pct_start of %g of %lld steps leaves the rise "
                  "no step (pct_start * steps must be above 1); raise --pct-start or train "
                  "longer",
                  pct, static_cast<long long>(totalSteps));
    return Status::error(text);
  }
  if (schedule.threePhase && 2 * rise >= static_cast<double>(totalSteps) - 1) {
    std::snprintf(text, sizeof(text),
                  "--three-phase: a pct_start of %g of %lld steps leaves the last phase no "
                  "step (the rise and the fall take 2 * pct_start of the run); lower "
                  "--pct-start below 0.5",
                  pct, static_cast<long long>(totalSteps));
    return Status::error(text);
  }
  return Status();
}

} // namespace trainc::rt::detail
