//===- Selection.h - selective backprop: the samples a step trains -*- C++ -*-===//
//
// Internal to the runtime: trainer --select=topk (Jiang et al. 2019,
// "Accelerating Deep Learning by Focusing on the Biggest Losers", their
// deterministic variant). Each training step takes the next B candidates of
// the epoch's order (B: trainc compile --select-batch), runs the program's
// selection entry over them (the forward and each sample's loss; no
// backward), and trains the k candidates of the largest losses (k: the
// compiled batch, or --select-fraction of B): their rows are copied on the
// device from the candidates into the step's inputs, in candidate order, so
// nothing is read or uploaded twice.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_SELECTION_H
#define TRAINC_RT_COMMON_SELECTION_H

#include "BatchLoader.h"
#include "TrainChecks.h"
#include "TrainDevice.h"

#include <cmath>
#include <limits>
#include <vector>

namespace trainc::rt::detail {

/// Refuses what selection cannot do: no selection entry in the program,
/// --select-fraction without --select or beyond the compiled batch,
/// gradient accumulation, data parallelism, a sampler, the LR range test.
Status settleSelection(const SelectOptions &options, const Program &program, int64_t accum,
                       bool dataParallel, bool sampler, bool rangeTest);

class Selection {
public:
  Selection(RunDevice &device, const Program &program, const TrainingData &data)
      : device(device), program(program), data(data) {}
  /// `tracePath` (--trace-batches; empty: none) gets a JSON line per
  /// selection, appended to where `resumed`.
  Status init(const SelectOptions &options, const std::string &tracePath, bool resumed);
  bool enabled() const { return candidates > 0; }
  /// Candidates per selection (B).
  int64_t batch() const { return candidates; }

  /// Runs the selection over the `count` (<= B) candidates `rows` of
  /// `epoch` and picks the ones to train (the largest losses; ties to the
  /// earlier candidate), in candidate order: picked() and their samples,
  /// pickedRows().
  Status select(const int64_t *rows, int64_t count, int64_t epoch, int64_t seq);
  const std::vector<int64_t> &pickedRows() const { return samples; }
  /// The candidates' losses of the last selection.
  const std::vector<float> &losses() const { return hostLosses; }

  /// Queues on the compute queue the copies of the picked candidates' rows
  /// of every data input and label into the step's device inputs (rows 0..).
  Status gather(void *const *stepInputs);

private:
  RunDevice &device;
  const Program &program;
  const TrainingData &data;
  int64_t candidates = 0, trained = 0;
  /// The selection's inputs in one block (host and device), as the step's.
  std::vector<uint64_t> offsets;
  uint64_t slotBytes = 0;
  std::vector<char> host;
  DevicePtr slot{nullptr, DeviceFree{nullptr}}, outputs{nullptr, DeviceFree{nullptr}};
  std::vector<void *> inputPtrs, outputPtrs;
  std::vector<BatchField> fields;
  /// Of each file input: its offset among the selection's inputs, its index
  /// among the step's, its row bytes.
  struct Copy {
    uint64_t from;
    int stepInput;
    uint64_t rowBytes;
  };
  std::vector<Copy> copies;
  int weightsIndex = -1, maskIndex = -1;
  std::vector<float> hostLosses;
  std::vector<int64_t> picked, samples;
  std::string tracePath;
  FileHandle trace;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_SELECTION_H
