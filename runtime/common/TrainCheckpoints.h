//===- TrainCheckpoints.h - what a run writes from the device --*- C++ -*-===//
//
// Internal to the runtime: what a training run saves and restores, and the
// trained model it writes at its end (--export, --save-params). The
// tensors are the parameters (but constants) and the optimizer state (but
// the gradient accumulators: a checkpoint follows a group's last batch, and
// the next group's first batch overwrites them) and the averaged weights
// (--ema-decay, --swa-start), each with the device
// buffer it is saved from and restored to; the file format is Checkpoint.h's.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_TRAINCHECKPOINTS_H
#define TRAINC_RT_COMMON_TRAINCHECKPOINTS_H

#include "Checkpoint.h"
#include "WeightAverage.h"
#include "trainc_rt/device.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace trainc::rt::detail {

/// Where a run stands when it saves: the optimizer steps done, the epoch and
/// the next batch in it, the RNG state before the epoch's shuffle.
struct CheckpointPosition {
  int64_t step, epoch, nextBatch;
  std::string rng;
};

class TrainCheckpoints {
public:
  /// `average`: the averaged weights, saved and restored too where enabled
  /// (as average/<parameter>, with its update count).
  TrainCheckpoints(Context &context, const Program &program, const std::vector<void *> &params,
                   const std::vector<void *> &states, WeightAverage &average);

  /// Creates `dir` if needed and checks that a checkpoint can be written
  /// there (a temporary file, as writing one makes, removed again); removes
  /// what writes cut short by a kill left behind.
  static Status prepareFolder(const std::string &dir);

  /// --keep-last K: the checkpoint just written to `dir` after step `step`
  /// also as dir/step-<step>/ (hard links to its files, copies where the
  /// file system has none), and the step-N folders beyond the last K
  /// removed (only folders of that name holding only checkpoint files).
  static Status keepLast(const std::string &dir, int64_t step, int64_t count);

  /// A tensor of the run's host state (the sampler's priorities), saved
  /// from and restored to bytes the caller holds (restoredHost, save's
  /// `host`).
  void addHostTensor(const std::string &name, DType dtype, int64_t count);

  /// Restores the checkpoint in `dir` into the device buffers, after
  /// readCheckpoint checked it against `expect`; the host tensors' bytes
  /// are then restoredHost().
  Status restore(const std::string &dir, const ResumeExpectation &expect, ResumePoint &point);
  const std::map<std::string, std::vector<char>> &restoredHost() const { return hostBytes; }

  /// Writes the device buffers and the host tensors (`host`, by name) to
  /// `dir` with the manifest `run` (what does not change during the run)
  /// and `at`, and the loss scaler's values.
  Status save(const std::string &dir, const std::map<std::string, std::string> &run,
              const CheckpointPosition &at,
              const std::map<std::string, std::vector<char>> &host = {});

private:
  struct Slot {
    void *buffer;
    uint64_t bytes;
    /// A state index for the loss scaler's scalars, else -1.
    int lossScalerState;
  };
  void add(const std::string &name, const TensorInfo &tensor, void *buffer, int scalerState);

  Context &context;
  const Program &program;
  WeightAverage &average;
  std::vector<CheckpointTensor> specs;
  /// A host tensor's slot has no buffer.
  std::vector<Slot> slots;
  std::map<std::string, std::vector<char>> hostBytes;
};

/// The inference model with the trained parameters (--export): the
/// segments of the model interleaved with each parameter's trained bytes,
/// copied from the device one parameter at a time (the parameters are
/// stored once, not in a template too). The layout is checked whole
/// (checkExportLayout, as before step 1), and the file is an AtomicFile
/// (temporary file, fsync, rename), so a reader never sees half a model and
/// a failed write leaves the previous file.
Status exportTrainedModel(Context &context, const Program &program,
                          const std::vector<void *> &params, const std::string &path);

/// The trained parameters, one DIR/<name>.npy each (--save-params; the
/// names were checked with the output targets, before step 1).
Status saveTrainedParams(Context &context, const Program &program,
                         const std::vector<void *> &params, const std::string &dir);

/// The same from parameters wherever they are (a pipeline's stages):
/// `fetch` copies the trained bytes of the program's parameter `index` to
/// `host`.
using ParamFetch = std::function<Status(int index, void *host)>;
Status exportTrainedModel(const Program &program, const ParamFetch &fetch,
                          const std::string &path);
Status saveTrainedParams(const Program &program, const ParamFetch &fetch, const std::string &dir);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_TRAINCHECKPOINTS_H
