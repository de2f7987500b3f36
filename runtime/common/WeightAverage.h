//===- WeightAverage.h - SWA and EMA weights on the device ------*- C++ -*-===//
//
// Internal to the runtime: the averaged weights a run keeps beside its
// parameters. --ema-decay D is timm's ModelEmaV2 (with --ema-warmup,
// ModelEmaV3's decay warmup): the average starts as the initial weights and
// after every optimizer step moves toward every parameter and batch-norm
// statistic by 1 - D. --swa-start S is torch.optim.swa_utils' AveragedModel:
// the average of the weights after every step k > S with (k - S) % E == 0
// (--swa-every E), its batch-norm statistics recomputed where they are used
// (UpdateBn.h). Both are one Context::lerpTensors launch per update, on
// the device, behind the step; evaluation (--eval-averaged), --export,
// --save-params and checkpoints (which hold both) take the average.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_WEIGHTAVERAGE_H
#define TRAINC_RT_COMMON_WEIGHTAVERAGE_H

#include "Schedule.h"
#include "trainc_rt/device.h"
#include "trainc_rt/program.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainc::rt::detail {

enum class AveragingKind { None, Ema, Swa };

/// The averaging flags. A NaN or negative value is "not given".
struct AveragingOptions {
  /// --ema-decay D, in (0, 1); --ema-warmup.
  double emaDecay = std::nan("");
  bool emaWarmup = false;
  /// --swa-start S (optimizer steps, -1: none), --swa-every E (0: 1).
  int64_t swaStart = -1, swaEvery = 0;
  /// SWALR: from step S + 1 on, the learning rate anneals to --swa-lr over
  /// --swa-anneal-steps (-1: SWALR's 10) by --swa-anneal (cos).
  double swaLr = std::nan("");
  int64_t swaAnnealSteps = -1;
  std::optional<AnnealStrategy> swaAnneal;
  /// --eval-averaged: evaluations use the averaged weights.
  bool evalAveraged = false;

  AveragingKind kind() const {
    return !std::isnan(emaDecay) ? AveragingKind::Ema
           : swaStart >= 0       ? AveragingKind::Swa
                                 : AveragingKind::None;
  }
};

/// The flags' own errors (both kinds at once, an SWA flag without
/// --swa-start, --eval-averaged without averaging or --eval-data) and those
/// of the program and the run: --swa-start at or past the run's last step,
/// and, under data parallelism, SWA of a model with batch normalization,
/// whose statistics SWA recomputes over the training data (update_bn,
/// UpdateBn.h), which the trainer does in one process only (EMA averages
/// them instead).
Status checkAveraging(const AveragingOptions &options, const Program &program,
                      int64_t totalSteps, bool evaluates, bool dataParallel);

/// The learning rate and momentum of step `k` (0-based) of `total`: the
/// schedule's, and with --swa-lr from step S + 2 on, SWALR's (stepped after
/// every optimizer step from S + 1 on, as swa_utils' recipe does):
/// swa_lr * a(t) + lr_{S+1} * (1 - a(t)), t = min(1, (k - S) / anneal).
ScheduledStep averagedScheduleStep(const AveragingOptions &averaging,
                                   const LrSchedule &schedule, double lr, int64_t k,
                                   int64_t total);

class WeightAverage {
public:
  WeightAverage(Context &context, const Program &program, const AveragingOptions &options);
  ~WeightAverage();
  WeightAverage(const WeightAverage &) = delete;
  WeightAverage &operator=(const WeightAverage &) = delete;

  bool enabled() const { return kind != AveragingKind::None; }
  /// Allocates the average of every parameter but the constants and sets
  /// it to `params` (the initial weights, before step 1).
  Status init(const std::vector<void *> &params);
  /// After optimizer step `step` (1-based): queues the update where the
  /// average takes that step.
  Status afterStep(int64_t step);
  /// The lerp weight of the update after step `step`, or 0 where the
  /// average does not take it.
  double weightAfter(int64_t step) const;

  /// The averaged weights, indexed as the parameters (the constants are the
  /// parameters' own buffers).
  const std::vector<void *> &params() const { return averaged; }
  /// Updates so far (AveragedModel's n_averaged; with EMA, steps).
  int64_t updates() const { return count; }
  void setUpdates(int64_t n) { count = n; }
  /// Whether the average holds an update (SWA before its first holds the
  /// initial weights).
  bool holdsUpdates() const { return kind == AveragingKind::Ema || count > 0; }
  /// The flags that made it ("--ema-decay 0.999", "--swa-start 100
  /// --swa-every 10"), kept in checkpoints; "none".
  std::string identity() const;
  /// "EMA" or "SWA".
  const char *name() const { return kind == AveragingKind::Ema ? "EMA" : "SWA"; }
  uint64_t bytes() const { return totalBytes; }

private:
  Context &context;
  const Program &program;
  const AveragingOptions options;
  const AveragingKind kind;
  std::vector<void *> averaged, owned;
  /// The lerpTensors lists, over the averaged parameters.
  std::vector<float *> targets;
  std::vector<const float *> sources;
  std::vector<int64_t> sizes;
  /// SWA: the statistics' places in the lists, left out after the copy.
  std::vector<int> statistics;
  int64_t count = 0;
  uint64_t totalBytes = 0;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_WEIGHTAVERAGE_H
