//===- Checkpoint.h - trainer checkpoints (safetensors) ---------*- C++ -*-===//
//
// One file, DIR/checkpoint.safetensors: every parameter and optimizer state
// tensor, and in its "__metadata__" the manifest (step, epoch, position in
// the epoch, RNG state). It is written to a temporary file, fsynced and
// renamed, so a kill at any moment leaves the previous checkpoint intact.
// DIR/checkpoint.json repeats the manifest for people and tools.
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
Status writeCheckpoint(const std::string &dir, const std::vector<CheckpointTensor> &tensors,
                       const std::map<std::string, std::string> &manifest);

/// Reads DIR/checkpoint.safetensors; every malformed byte is an error naming
/// the file.
Status readCheckpoint(const std::string &dir, std::vector<CheckpointTensor> &tensors,
                      std::map<std::string, std::string> &manifest);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_CHECKPOINT_H
