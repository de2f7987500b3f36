//===- CheckpointFuzzer.cpp - libFuzzer target for the checkpoint loader --===//
//
// The input is a checkpoint.safetensors: written into a private folder and
// read with readCheckpoint as `--resume` does, expecting the tensors and the
// run of the seed corpus's checkpoint (the digits MLP of examples/, SGD with
// momentum, batch 32: 1437 samples in 45 batches per epoch, shuffled). Any
// crash, sanitizer report or hang is a bug: a bad checkpoint must end in a
// Status naming the file; an accepted one must hold every expected tensor
// with its full size.
//
// Built by test/fuzz/build_runtime_fuzzers.sh with clang++
// -fsanitize=fuzzer,address straight from the runtime sources.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "runtime/common/Checkpoint.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using namespace trainc::rt;
using namespace trainc::rt::detail;

namespace {

/// A folder of this process's own for the input (the loader takes a folder).
const std::string &scratchDir() {
  static const std::string dir = [] {
    std::string path = trainc::fuzz::scratchName("checkpoint", "");
    mkdir(path.c_str(), 0700);
    return path;
  }();
  return dir;
}

/// The digits MLP's parameters and SGD momentum buffers.
std::vector<CheckpointTensor> expectedTensors() {
  std::vector<CheckpointTensor> tensors;
  for (const char *kind : {"param/", "state/momentum."}) {
    tensors.push_back({std::string(kind) + "0.weight", DType::F32, {128, 64}, {}});
    tensors.push_back({std::string(kind) + "0.bias", DType::F32, {128}, {}});
    tensors.push_back({std::string(kind) + "2.weight", DType::F32, {10, 128}, {}});
    tensors.push_back({std::string(kind) + "2.bias", DType::F32, {10}, {}});
  }
  return tensors;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = scratchDir();
  if (!trainc::fuzz::writeInput(dir + "/checkpoint.safetensors", data, size))
    return 0;
  ResumeExpectation expect;
  expect.optimizer = "sgd";
  expect.batchSize = 32;
  expect.fingerprint = nullptr;
  expect.batchesPerEpoch = 45;
  expect.totalSteps = 1000;
  expect.seed = 0;
  expect.samples = 1437;
  expect.shuffle = true;
  std::vector<CheckpointTensor> tensors = expectedTensors();
  ResumePoint point;
  if (!readCheckpoint(dir, expect, tensors, point).ok())
    return 0;
  for (const CheckpointTensor &t : tensors) {
    int64_t elements = 1;
    for (int64_t d : t.shape)
      elements *= d;
    if (t.bytes.size() != size_t(elements) * 4)
      __builtin_trap(); // accepted with a tensor of the wrong size
  }
  if (point.step < 0 || point.step > expect.totalSteps || point.batch < 0 ||
      point.batch > expect.batchesPerEpoch)
    __builtin_trap(); // accepted a position outside the run
  return 0;
}
