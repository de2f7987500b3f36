//===- TrainDevice.h - what a training run holds on the device --*- C++ -*-===//
//
// Internal to the runtime: the context (with cuDNN's kept algorithm
// choices), the parameters, the optimizer state and the arena of a run, set
// up before step 1; and the fp16 loss scaler as the host follows it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_TRAINDEVICE_H
#define TRAINC_RT_COMMON_TRAINDEVICE_H

#include "AlgoCache.h"
#include "ProgramSupport.h"

#include <memory>
#include <string>
#include <vector>

namespace trainc::rt::detail {

struct RunDevice {
  /// The search's kept choices (--cudnn-cache) outlive the context's plans.
  std::unique_ptr<AlgoCache> algoCache;
  std::string algoCachePath;
  std::unique_ptr<Context> context;
  std::vector<DevicePtr> params, states;
  std::vector<void *> paramPtrs, statePtrs;
  /// Forward (evaluation) and training step never run at once: one arena.
  DevicePtr arena{nullptr, DeviceFree{nullptr}};
  uint64_t arenaBytes = 0;
  /// The loss scaler's scale and skipped-step count among the states (-1:
  /// none; a fixed scale has no scale state).
  int scaleState = -1, skippedState = -1;
  /// The gradient norm's state (-1: the step keeps none).
  int gradNormState = -1;
};

/// Creates the context (joined to `ranks` when data-parallel), uploads the
/// parameters, allocates the optimizer state at its initial values and the
/// arena (filled with kArenaPattern under --report-memory).
Status setUpDevice(const Program &program, const TrainOptions &options, Communicator *ranks,
                   RunDevice &device);

/// --report-memory: every arena byte starts as this pattern; the last byte
/// that is not the pattern after training is the arena's high-water mark.
inline constexpr int kArenaPattern = 0xA5;

/// Prints the arena's planned bytes and its high-water mark.
Status reportArenaUse(RunDevice &device);

/// Writes cuDNN's kept algorithm choices back (not fatal: the next run
/// searches again).
void saveAlgorithmChoices(RunDevice &device);

/// The fp16 loss scaler as the host last saw it: the scale the next step to
/// be read back ran with, and the skipped steps before it.
class LossScaleMonitor {
public:
  LossScaleMonitor(const TrainStep &train, RunDevice &device);
  bool enabled() const { return enabled_; }
  /// Reads the scaler's state from the device (at the start, after resume).
  Status read();
  /// Queues the copies of the scale and the skipped-step count after a
  /// group's last step into record[1] and record[2] (record[0] is the loss).
  Status queueReadback(float *record);
  /// Takes a finished step's record: whether the step was skipped, and an
  /// error when the scale fell to 0 (every step overflows).
  Status take(const float *record, int64_t step, bool &skipped);
  double scale() const { return scale_; }
  double skippedTotal() const { return skipped_; }
  /// Skipped steps since the last progress line (reset by the caller) and
  /// in this run.
  int64_t skippedSinceLine = 0, skippedInRun = 0;

private:
  RunDevice &device;
  bool enabled_;
  double scale_, skipped_ = 0;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_TRAINDEVICE_H
