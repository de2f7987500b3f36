//===- WeightAverage.cpp - SWA and EMA weights on the device --------------===//

#include "WeightAverage.h"

#include "ProgramSupport.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace trainc::rt::detail {

namespace {

/// The shortest decimal text that reads back as `value` (0.9, not
/// 0.90000000000000002).
std::string number(double value) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value)
      break;
  }
  return text;
}

/// The first parameter that is a running statistic of a batch norm, or -1.
int firstStatistic(const Program &program) {
  for (int i = 0; i < program.numParams; ++i)
    if (program.params[i].statisticOf && !program.params[i].constant)
      return i;
  return -1;
}

} // namespace

Status checkAveraging(const AveragingOptions &o, const Program &program, int64_t totalSteps,
                      bool evaluates, bool dataParallel) {
  const AveragingKind kind = o.kind();
  if (kind == AveragingKind::Ema && o.swaStart >= 0)
    return Status::error("--ema-decay and --swa-start are two ways to average the weights; "
                         "give one");
  if (!std::isnan(o.emaDecay) && !(o.emaDecay > 0 && o.emaDecay < 1))
    return Status::error("--ema-decay needs a decay in (0, 1), got " + number(o.emaDecay));
  if (o.emaWarmup && kind != AveragingKind::Ema)
    return Status::error("--ema-warmup needs --ema-decay");
  const bool swaFlags = o.swaEvery > 0 || !std::isnan(o.swaLr) || o.swaAnnealSteps >= 0 ||
                        o.swaAnneal.has_value();
  if (swaFlags && kind != AveragingKind::Swa)
    return Status::error("--swa-every, --swa-lr, --swa-anneal-steps and --swa-anneal need "
                         "--swa-start");
  if ((o.swaAnnealSteps >= 0 || o.swaAnneal) && std::isnan(o.swaLr))
    return Status::error("--swa-anneal-steps and --swa-anneal shape the anneal to --swa-lr; "
                         "give --swa-lr");
  if (o.evalAveraged && kind == AveragingKind::None)
    return Status::error("--eval-averaged needs averaged weights (--ema-decay or --swa-start)");
  if (o.evalAveraged && !evaluates)
    return Status::error("--eval-averaged needs --eval-data");
  if (kind != AveragingKind::Swa)
    return Status();
  if (o.swaStart >= totalSteps)
    return Status::error("--swa-start " + std::to_string(o.swaStart) +
                         ": the average takes steps after step " + std::to_string(o.swaStart) +
                         ", and this run has " + std::to_string(totalSteps));
  if (int i = firstStatistic(program); i >= 0 && dataParallel)
    return Status::error(
        std::string("--swa-start: the model normalizes with batch statistics (ONNX node '") +
        program.params[i].statisticOf +
        "'), which SWA recomputes for the averaged weights over the training data "
        "(update_bn); the trainer does not do that under data parallelism yet. --ema-decay "
        "averages the statistics with the weights");
  return Status();
}

ScheduledStep averagedScheduleStep(const AveragingOptions &averaging, const LrSchedule &schedule,
                                   double lr, int64_t k, int64_t total) {
  const int64_t start = averaging.swaStart;
  if (averaging.kind() != AveragingKind::Swa || std::isnan(averaging.swaLr) || k <= start)
    return scheduledStep(schedule, lr, k, total);
  // SWALR took over after step S + 1 (0-based S), from that step's rate.
  ScheduledStep at = scheduledStep(schedule, lr, start, total);
  const int64_t annealSteps = averaging.swaAnnealSteps < 0 ? 10 : averaging.swaAnnealSteps;
  const double t = annealSteps == 0
                       ? 1.0
                       : std::min(1.0, static_cast<double>(k - start) / annealSteps);
  constexpr double kPi = 3.14159265358979323846;
  const double alpha = averaging.swaAnneal.value_or(AnnealStrategy::Cos) == AnnealStrategy::Cos
                           ? (1 - std::cos(kPi * t)) / 2
                           : t;
  at.lr = averaging.swaLr * alpha + at.lr * (1 - alpha);
  return at;
}

WeightAverage::WeightAverage(Context &context, const Program &program,
                             const AveragingOptions &options)
    : context(context), program(program), options(options), kind(options.kind()) {}

WeightAverage::~WeightAverage() {
  for (void *buffer : owned)
    context.deallocate(buffer);
}

Status WeightAverage::init(const std::vector<void *> &params) {
  if (!enabled())
    return Status();
  averaged = params;
  for (int i = 0; i < program.numParams; ++i) {
    const ParamInfo &p = program.params[i];
    if (p.constant)
      continue;
    if (p.tensor.dtype != DType::F32)
      return Status::error(std::string("--") + (kind == AveragingKind::Ema ? "ema-decay" : "swa-start") +
                           ": parameter " + p.tensor.name + " is " + dtypeName(p.tensor.dtype) +
                           "; averaged weights are f32");
    void *buffer = nullptr;
    TRAINC_RETURN_IF_ERROR(context.allocate(&buffer, p.bytes));
    owned.push_back(buffer);
    // Zeros, so that the copy below (v - (v - a) * 0) is exact.
    TRAINC_RETURN_IF_ERROR(context.fill(buffer, 0, p.bytes));
    averaged[i] = buffer;
    totalBytes += p.bytes;
    // SWA averages the weights alone (AveragedModel's use_buffers=False):
    // update_bn recomputes the statistics. The first copy takes them too.
    if (kind == AveragingKind::Swa && p.statisticOf)
      statistics.push_back(static_cast<int>(targets.size()));
    targets.push_back(static_cast<float *>(buffer));
    sources.push_back(static_cast<const float *>(params[i]));
    sizes.push_back(static_cast<int64_t>(p.bytes / 4));
  }
  // Weight 1 copies: the average starts as the weights.
  TRAINC_RETURN_IF_ERROR(context.lerpTensors(targets.data(), sources.data(), sizes.data(),
                                             static_cast<int>(targets.size()), 1.0f));
  for (auto it = statistics.rbegin(); it != statistics.rend(); ++it) {
    targets.erase(targets.begin() + *it);
    sources.erase(sources.begin() + *it);
    sizes.erase(sizes.begin() + *it);
  }
  return Status();
}

double WeightAverage::weightAfter(int64_t step) const {
  if (kind == AveragingKind::Ema) {
    double decay = options.emaDecay;
    if (options.emaWarmup) {
      // ModelEmaV3.get_decay(step) with update_after_step 0, warmup_gamma 1
      // and warmup_power 2/3: the first update copies.
      const double t = static_cast<double>(step - 1);
      decay = t <= 0 ? 0.0 : std::max(0.0, std::min(decay, 1 - std::pow(1 + t, -2.0 / 3.0)));
    }
    return 1 - decay;
  }
  if (kind != AveragingKind::Swa || step <= options.swaStart ||
      (step - options.swaStart) % std::max<int64_t>(1, options.swaEvery) != 0)
    return 0;
  // AveragedModel.update_parameters: a copy first, then
  // lerp(average, weights, 1 / (n + 1)).
  return 1.0 / static_cast<double>(count + 1);
}

Status WeightAverage::afterStep(int64_t step) {
  const double weight = enabled() ? weightAfter(step) : 0.0;
  if (weight == 0)
    return Status();
  ++count;
  return context.lerpTensors(targets.data(), sources.data(), sizes.data(),
                             static_cast<int>(targets.size()), static_cast<float>(weight));
}

std::string WeightAverage::identity() const {
  if (kind == AveragingKind::Ema)
    return "--ema-decay " + number(options.emaDecay) + (options.emaWarmup ? " --ema-warmup" : "");
  if (kind == AveragingKind::Swa)
    return "--swa-start " + std::to_string(options.swaStart) + " --swa-every " +
           std::to_string(std::max<int64_t>(1, options.swaEvery));
  return "none";
}

} // namespace trainc::rt::detail
