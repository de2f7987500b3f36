//===- RunSettings.cpp - a training run's settings, checked ---------------===//

#include "RunSettings.h"

#include "TrainChecks.h"
#include "trainc_rt/defaults.h"

#include <cmath>
#include <cstdio>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace trainc::rt::detail {

namespace {

double orDefault(double value, double fallback) { return std::isnan(value) ? fallback : value; }

} // namespace

double Hyperparameters::value(Hyper which) const {
  switch (which) {
  case Hyper::Lr: return lr;
  case Hyper::Momentum: return momentum;
  case Hyper::WeightDecay: return weightDecay;
  case Hyper::Beta1: return beta1;
  case Hyper::Beta2: return beta2;
  case Hyper::Eps: return eps;
  case Hyper::MaxGradNorm: return maxGradNorm;
  case Hyper::ScaleGrowthInterval: return scaleGrowthInterval;
  // Gradient accumulation: a group of one batch (the loop sets both per
  // batch).
  case Hyper::GradAccumWeight: return 1.0;
  case Hyper::GradAccumKeep: return 0.0;
  // Data parallelism: the rank's share of the global batch's sample
  // weight (all of it in a single process; the loop sets it per batch).
  case Hyper::DataParallelScale: return 1.0;
  case Hyper::OneMinusBeta1: return 1.0 - beta1;
  case Hyper::OneMinusBeta2: return 1.0 - beta2;
  case Hyper::TrustCoefficient: return trustCoefficient;
  case Hyper::KfacDamping: return kfacDamping;
  case Hyper::KfacStatDecay: return kfacStatDecay;
  case Hyper::KfacKlClip: return kfacKlClip;
  // Step 1 inverts (the loop sets it per step).
  case Hyper::KfacInvert: return 1.0;
  }
  return std::nan("");
}

Status settleRun(const Program &program, const TrainOptions &options, RunSettings &settings) {
  const TrainStep *train = program.train;
  settings.baseLr = orDefault(options.lr, isAdam(train->optimizer) ? 1e-3 : 1e-2);
  settings.hyper = {settings.baseLr,
              orDefault(options.momentum, 0.0),
              orDefault(options.weightDecay, train->optimizer == Optimizer::AdamW ||
                                                     train->optimizer == Optimizer::Lamb
                                                 ? 1e-2
                                                 : 0.0),
              orDefault(options.beta1, 0.9), orDefault(options.beta2, 0.999),
              orDefault(options.eps, 1e-8),
              orDefault(options.clipGradNorm, train->clipGradNorm),
              options.scaleGrowthInterval > 0 ? static_cast<double>(options.scaleGrowthInterval)
                                              : double(kScaleGrowthInterval),
              orDefault(options.trustCoefficient, 1e-3)};
  settings.hyper.kfacDamping = orDefault(options.kfacDamping, 1e-3);
  settings.hyper.kfacStatDecay = orDefault(options.kfacStatDecay, 0.95);
  settings.hyper.kfacKlClip = orDefault(options.kfacKlClip, 1e-3);
  if (options.kfacInverseEvery > 0)
    settings.inverseEvery = options.kfacInverseEvery;
  const bool dynamicScale = train->lossScaling == LossScaling::Dynamic;
  if (options.scaleGrowthInterval > 0 && !dynamicScale)
    return Status::error("--scale-growth-interval: this trainer has no dynamic loss scaling "
                         "(compile with --precision=fp16)");
  TRAINC_RETURN_IF_ERROR(checkHyperFlags(*train, options));
  if (options.resumeOtherModel && !options.resume)
    return Status::error("--resume-other-model says how --resume reads a checkpoint; give "
                         "--resume too (with --checkpoint-dir)");
  if (!std::isnan(options.clipGradNorm) && train->clipGradNorm <= 0)
    return Status::error("--clip-grad-norm: this trainer was compiled without gradient "
                         "clipping; compile with trainc compile --clip-grad-norm=X");
  TRAINC_RETURN_IF_ERROR(checkOutputTargets(program, options));
  // Gradient accumulation: groups of `accum` batches, one optimizer step each.
  const int64_t accum = settings.accum =
      options.gradAccum > 0 ? options.gradAccum : (train->accumulate ? train->gradAccum : 1);
  if (accum > 1 && !train->accumulate)
    return Status::error("--grad-accum " + std::to_string(accum) +
                         ": this trainer updates from each batch alone; compile with "
                         "trainc compile --grad-accum=K to accumulate gradients");
  int &weightHyper = settings.weightHyper, &keepHyper = settings.keepHyper,
      &shareHyper = settings.shareHyper;
  for (int h = 0; h < train->numHypers; ++h) {
    if (train->hypers[h] == Hyper::DataParallelScale)
      shareHyper = h;
    if (train->hypers[h] == Hyper::GradAccumWeight)
      weightHyper = h;
    if (train->hypers[h] == Hyper::GradAccumKeep)
      keepHyper = h;
    if (train->hypers[h] == Hyper::KfacInvert)
      settings.invertHyper = h;
  }
  if (options.kfacInverseEvery > 0 && settings.invertHyper < 0)
    return Status::error("--kfac-inverse-every: " + std::string("this trainer was compiled "
                         "with --optimizer=") + name(train->optimizer) +
                         ", which keeps no Kronecker factors (compile with --optimizer=kfac)");
  if (train->accumulate && (weightHyper < 0 || keepHyper < 0))
    return Status::error("the program's accumulate step lacks its hyperparameters "
                         "grad_accum.weight and grad_accum.keep");
  for (int h = 0; h < train->numHypers; ++h)
    if (std::isnan(settings.hyper.value(train->hypers[h])))
      return Status::error("the program reads hyperparameter " +
                           std::to_string(static_cast<int>(train->hypers[h])) +
                           ", which this trainer does not know");
  return Status();
}

namespace {

/// ", lr ... (... schedule ...)" and the optimizer's hyperparameters of the
/// settings line.
std::string rateText(const TrainStep &train, const TrainOptions &options,
                     const Hyperparameters &hyper, int64_t totalSteps, bool rangeTest) {
  char text[512];
  const LrSchedule &schedule = options.schedule;
  const bool adam = isAdam(train.optimizer), cycled = !rangeTest && cyclesMomentum(schedule);
  std::string line;
  if (rangeTest) {
    std::snprintf(text, sizeof(text), ", lr from %g to %g (exponential)",
                  options.rangeTest.minLr, options.rangeTest.maxLr);
    line = text;
  } else {
    const bool cyclic = schedule.kind == ScheduleKind::Cyclic;
    std::snprintf(text, sizeof(text), ", lr %g%s (%s schedule%s%s", hyper.lr,
                  cyclic || schedule.kind == ScheduleKind::OneCycle ? " at the peak" : "",
                  scheduleName(schedule.kind), cyclic ? " " : "",
                  cyclic ? cyclicModeName(schedule.cyclicMode.value_or(CyclicMode::Triangular))
                         : "");
    line = text;
    if (schedule.warmupSteps > 0)
      line += ", " + std::to_string(schedule.warmupSteps) + " warmup steps";
    if (cycled) {
      std::snprintf(text, sizeof(text), ", %s from %g to %g at the peak",
                    adam ? "beta1" : "momentum",
                    scheduledStep(schedule, hyper.lr, 0, totalSteps).momentum,
                    momentumAtPeak(schedule));
      line += text;
    }
    line += ")";
  }
  if (!adam) {
    if (!cycled) {
      std::snprintf(text, sizeof(text), ", momentum %g", hyper.momentum);
      line += text;
    }
  } else {
    if (cycled)
      std::snprintf(text, sizeof(text), ", beta2 %g", hyper.beta2);
    else
      std::snprintf(text, sizeof(text), ", betas %g/%g", hyper.beta1, hyper.beta2);
    line += text;
    std::snprintf(text, sizeof(text), ", eps %g", hyper.eps);
    line += text;
  }
  std::snprintf(text, sizeof(text), ", weight decay %g", hyper.weightDecay);
  return line + text;
}

} // namespace

std::string settingsLine(const Program &program, const TrainOptions &options,
                         const Hyperparameters &hyper,
                         int ranks, int64_t accum, int64_t samples, int64_t batchesPerEpoch,
                         int64_t totalSteps, bool rangeTest) {
  const TrainStep &train = *program.train;
  char text[1024];
  std::string line = std::string(rangeTest ? "LR range test: " : "training: ") +
                     name(train.optimizer) +
                     rateText(train, options, hyper, totalSteps, rangeTest);
  int trained = 0, noDecay = 0;
  for (int i = 0; i < program.numParams; ++i) {
    trained += program.params[i].trainable ? 1 : 0;
    noDecay += program.params[i].trainable && program.params[i].noDecay ? 1 : 0;
  }
  if (noDecay > 0) {
    std::snprintf(text, sizeof(text), " (none on %d of %d parameters: --no-decay)", noDecay,
                  trained);
    line += text;
  }
  if (isKfac(train.optimizer)) {
    std::snprintf(text, sizeof(text), ", K-FAC damping %g, factor decay %g, KL clip %g, "
                  "inverses every %lld steps", hyper.kfacDamping, hyper.kfacStatDecay,
                  hyper.kfacKlClip, static_cast<long long>(options.kfacInverseEvery > 0
                                                               ? options.kfacInverseEvery
                                                               : 10));
    line += text;
  }
  if (train.optimizer == Optimizer::Lars) {
    std::snprintf(text, sizeof(text), ", trust coefficient %g, eps %g", hyper.trustCoefficient,
                  hyper.eps);
    line += text;
  }
  if (train.clipGradNorm > 0) {
    std::snprintf(text, sizeof(text), ", gradient norm clipped to %g", hyper.maxGradNorm);
    line += text;
  }
  line += "; batch " + std::to_string(program.batchSize);
  if (ranks > 1)
    line += " on each of " + std::to_string(ranks) + " ranks";
  if (ranks > 1 && options.asyncRanks)
    line += " training asynchronously over rank 0's parameter server (--async: no rank waits "
            "for another" +
            (options.stalenessBound > 0
                 ? " more than " + std::to_string(options.stalenessBound) + " steps"
                 : std::string()) +
            ", so no two runs train the same weights; rank 0 logs its own steps)";
  if (accum > 1)
    line += ", " + std::to_string(accum) + " batches per step";
  line += ", precision " + std::string(name(train.precision)) + "; " +
          (program.target ? program.target : "?");
#ifdef _OPENMP
  if (program.target && std::string(program.target) == "cpu")
    line += " (" + std::to_string(omp_get_max_threads()) + " threads)";
#endif
  if (options.asyncWorkers > 0)
    line += "; " + std::to_string(options.asyncWorkers) +
            " asynchronous workers (Hogwild!: their updates race, so no two runs train the "
            "same weights)";
  line += "; " + std::to_string(samples) + " samples, " + std::to_string(batchesPerEpoch) +
          " batches per epoch, " + std::to_string(totalSteps) + " steps";
  return line;
}

} // namespace trainc::rt::detail
