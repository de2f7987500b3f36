//===- RunSettings.h - a training run's settings, checked -------*- C++ -*-===//
//
// Internal to the runtime: the hyperparameters a run sets from its flags
// (each optimizer's defaults, PyTorch's), checked against what the program
// was compiled for before anything is read or allocated, and the one-line
// summary printed before step 1.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_RUNSETTINGS_H
#define TRAINC_RT_COMMON_RUNSETTINGS_H

#include "ProgramSupport.h"

#include <string>

namespace trainc::rt::detail {

/// The run's hyperparameters (its flags, the schedule's current lr).
struct Hyperparameters {
  double lr, momentum, weightDecay, beta1, beta2, eps, maxGradNorm, scaleGrowthInterval,
      trustCoefficient;
  /// K-FAC (--kfac-damping, --kfac-stat-decay, --kfac-kl-clip).
  double kfacDamping = 1e-3, kfacStatDecay = 0.95, kfacKlClip = 1e-3;

  /// The value of `which` (the learning rate as the schedule last set it).
  /// Every derived constant the host gives is computed here, once, in double
  /// and rounded to float32 only as a whole (PyTorch's Python floats: 1 -
  /// beta2 from float32 beta2 is 1.3e-5 off); Adam's bias corrections come
  /// from its step count on the device (trainc-optimizer).
  double value(Hyper which) const;

};

/// What a run settles before step 1.
struct RunSettings {
  /// The hyperparameters at the run's start; `hyper.lr` then follows the
  /// schedule from `baseLr`.
  Hyperparameters hyper{};
  double baseLr = 0;
  /// Batches per optimizer step (gradient accumulation).
  int64_t accum = 1;
  /// The indices (into TrainStep::hypers) of the hyperparameters the loop
  /// sets per batch (-1: the step has none): the accumulation weight and
  /// keep flag, the rank's share of the global batch.
  int weightHyper = -1, keepHyper = -1, shareHyper = -1;
  /// K-FAC: the index of kfac.invert (-1: none) and the steps between
  /// inversions of the factors (--kfac-inverse-every).
  int invertHyper = -1;
  int64_t inverseEvery = 10;
};

/// The run's hyperparameters from `options` and the program's defaults;
/// refuses a flag the program cannot honour (a hyperparameter its optimizer
/// lacks, --scale-growth-interval without dynamic loss scaling, --grad-accum
/// on a program compiled without it, ...), naming the flag and the way out.
Status settleRun(const Program &program, const TrainOptions &options, RunSettings &settings);

/// The run's effective settings in one line, printed before step 1: the
/// optimizer and the hyperparameters it reads, the schedule (or, for the LR
/// range test, its rates), the batch, the
/// precision, where it runs, and the data's size.
std::string settingsLine(const Program &program, const TrainOptions &options,
                         const Hyperparameters &hyper,
                         int ranks, int64_t accum, int64_t samples, int64_t batchesPerEpoch,
                         int64_t totalSteps, bool rangeTest = false);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_RUNSETTINGS_H
