//===- TrainLog.h - the trainer's --log (JSON lines) ------------*- C++ -*-===//
//
// One JSON record per line: {"step", "epoch", "loss", "lr", "momentum" or
// "beta1", "grad_norm", "wall_time", "samples_per_s"} per step (with "loss_scale" and, on
// a skipped step, "skipped": true under fp16 loss scaling; a non-finite loss
// is null) and
// {"step", "epoch", "eval_loss", "eval_accuracy"} per evaluation (after that
// step). Each record goes to
// the file whole, in one write() as soon as it is known, so a killed run
// loses at most the line being written; the trainer fsyncs the log before
// each checkpoint, so the log holds every step a checkpoint covers. A resumed
// run first cuts the log back to what its checkpoint covers (and drops a torn
// last line), so a killed-and-resumed run's log equals an uninterrupted
// run's but for the timing fields. A failing write is an error naming the file.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_TRAINLOG_H
#define TRAINC_RT_COMMON_TRAINLOG_H

#include "FileIO.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc::rt::detail {

/// Where a resumed log is cut: the step records up to `step`, and the
/// evaluations of the epochs before `epoch` (and of `epoch` itself when the
/// checkpoint ends it, as its evaluation then followed the checkpoint).
struct LogCut {
  int64_t step = 0, epoch = 1;
  bool epochEnded = false;
};

/// The per-sample losses of an optimizer step's batches (this process's
/// samples, padding left out), summarized for the log.
class SampleLossSummary {
public:
  struct Stats {
    double min, median, max;
  };
  /// Adds `count` losses (none where `losses` is null).
  void take(const float *losses, int64_t count) {
    if (losses)
      values.insert(values.end(), losses, losses + count);
  }
  /// The summary of what was taken since the last call (false: nothing).
  bool finish(Stats &stats);

private:
  std::vector<float> values;
};

class TrainLog {
public:
  bool enabled() const { return file.valid(); }

  /// A fresh run: `path` is replaced by an empty log.
  Status create(const std::string &path);
  /// A resumed run: keeps the records `cut` covers (at most `maxBytes` are
  /// read) and appends after them. `evalOfCutEpoch` tells whether the kept
  /// records hold the evaluation after the cut's step (or, in a log whose
  /// evaluations carry no step, the evaluation of `cut.epoch`).
  Status resume(const std::string &path, const LogCut &cut, uint64_t maxBytes,
                bool &evalOfCutEpoch);

  /// One optimizer step as the log records it.
  struct StepRecord {
    int64_t step, epoch;
    double loss, lr;
    /// "momentum" (SGD, LARS) or "beta1" (Adam, AdamW, LAMB), and its value.
    const char *momentumName;
    double momentum;
    /// fp16 loss scaling (else null): the scale the step ran with; `skipped`:
    /// the step found inf/NaN gradients and changed nothing.
    const double *lossScale = nullptr;
    bool skipped = false;
    /// When the host read the step's loss (seconds since the Unix epoch),
    /// and the samples per second since the step before.
    double wallTime = 0, samplesPerSecond = 0;
    /// The global norm of the step's gradients, unscaled, before clipping
    /// (null: the step keeps none).
    const double *gradNorm = nullptr;
    /// Why the step was skipped where it was not the scaler ("skip_reason").
    const char *skipReason = nullptr;
    /// The smallest, median and largest per-sample loss of the step's
    /// batches ("sample_loss_min", "_median", "_max"; null: none).
    const SampleLossSummary::Stats *sampleLosses = nullptr;
  };
  Status step(const StepRecord &record);
  /// The evaluation after step `step` (of epoch `epoch`): "eval_loss",
  /// "eval_accuracy" (none where the model computes its own loss) and
  /// "eval_top<k>" (with --topk).
  Status eval(int64_t step, int64_t epoch, double loss, double accuracy, int topk,
              double topkAccuracy);
  /// fsync(): the records written so far survive a crash.
  Status sync();

private:
  Status append(const std::string &line);
  std::string path;
  FileHandle file;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_TRAINLOG_H
