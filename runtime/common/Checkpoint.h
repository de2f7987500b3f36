//===- Checkpoint.h - trainer checkpoints (safetensors) ---------*- C++ -*-===//
//
// One file, DIR/checkpoint.safetensors: every parameter and optimizer state
// tensor, and in its "__metadata__" the manifest (step, epoch, position in
// the epoch, RNG state, the program's fingerprint) and a crc32 of each
// tensor's bytes. It is written with FileIO's AtomicFile (temporary file,
// fsync, rename, folder fsync), so a kill at any moment leaves the previous
// checkpoint intact. DIR/checkpoint.json repeats the manifest for people and
// tools.
//
// A checkpoint is read as untrusted input: the file must be a regular file no
// larger than the program's tensors plus a bounded header, every tensor the
// program expects must be there with its dtype, shape, byte range and crc32,
// and nothing else; every manifest field is checked against the program and
// the data before anything is restored.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_CHECKPOINT_H
#define TRAINC_RT_COMMON_CHECKPOINT_H

#include "trainc_rt/program.h"

#include <map>
#include <string>
#include <vector>

namespace trainc::rt::detail {

struct CheckpointTensor {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  std::vector<char> bytes;
};

/// Writes DIR/checkpoint.safetensors (atomically) and DIR/checkpoint.json.
/// Manifest keys must not start with "crc32." (those carry the checksums).
Status writeCheckpoint(const std::string &dir, const std::vector<CheckpointTensor> &tensors,
                       const std::map<std::string, std::string> &manifest);

/// What a checkpoint must agree with to be resumed.
struct ResumeExpectation {
  std::string optimizer;
  int64_t batchSize = 0;
  /// The model's fingerprint as imported (Program::modelFingerprint); a
  /// checkpoint that has none (written before it was recorded) is compared
  /// by `fingerprint`, the whole program's. Null: nothing to compare.
  const char *modelFingerprint = nullptr;
  const char *fingerprint = nullptr;
  /// --resume-other-model: the user changed the model on purpose; the
  /// tensors must still match one by one.
  bool otherModel = false;
  int64_t batchesPerEpoch = 0, totalSteps = 0;
  /// Batches per optimizer step (gradient accumulation; 1 without). A
  /// checkpoint without the field was written with 1.
  int64_t gradAccum = 1;
  uint64_t seed = 0;
  /// The training data's sample count and whether epochs are shuffled: a
  /// resumed run with others would not continue the same run.
  int64_t samples = 0;
  bool shuffle = true;
  /// The run's weight averaging (WeightAverage::identity(); "none"), and
  /// with it the checkpoint's "averaged_updates".
  std::string averaging = "none";
  /// The run's --sampler ("uniform" where the checkpoint has no field).
  std::string sampler = "uniform";
};

/// The position a checkpoint continues from.
struct ResumePoint {
  int64_t step = 0, epoch = 1, batch = 0;
  /// The RNG state before the shuffle of `epoch`, as std::mt19937_64 prints it.
  std::string rng;
  /// The manifest's "monitor_*" fields (the best evaluation so far,
  /// EvalMonitor's), unchecked.
  std::map<std::string, std::string> monitor;
  /// The manifest's "sampler*" and "select*" fields (PrioritySampler's,
  /// Selection's), unchecked.
  std::map<std::string, std::string> sampler;
  /// The updates the averaged weights hold (0 without averaging).
  int64_t averagedUpdates = 0;
};

/// Reads DIR/checkpoint.safetensors. First the manifest: every field is
/// checked (format, the program it belongs to, ranges consistent with the data
/// and the run) and gives `point`. Then `tensors`, which come in with the
/// expected name, dtype and shape of every tensor (bytes empty) and go out
/// with their bytes: a missing, extra or mismatching tensor, a bad byte range,
/// a crc32 mismatch and a non-finite float are errors naming the file.
Status readCheckpoint(const std::string &dir, const ResumeExpectation &expect,
                      std::vector<CheckpointTensor> &tensors, ResumePoint &point);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_CHECKPOINT_H
