//===- Selection.h - selective backprop: the samples a step trains -*- C++ -*-===//
//
// Internal to the runtime: selective backprop (Jiang et al. 2019,
// "Accelerating Deep Learning by Focusing on the Biggest Losers"). The
// program's selection entry (trainc compile --select-batch=B) runs the
// forward and each sample's loss over B candidates (no backward).
//
//  * --select=topk: each training step takes the next B candidates of the
//    epoch's order and trains the k of the largest losses (k: the compiled
//    batch, or --select-fraction of B). Their rows are copied on the device
//    from the candidates into the step's inputs, in candidate order, so
//    nothing is read or uploaded twice.
//  * --select=prob: the paper's. Each candidate is kept with probability
//    CDF(loss)^beta, the CDF over the last R losses seen (before the
//    candidate's batch joins them; an empty history keeps all). Candidates
//    come B at a time from passes over the data (shuffled per pass from the
//    run's seed, or in file order) until k are kept; the kept ones beyond k
//    wait for the next step. The step reads its k rows from the files. The
//    passes, the kept samples, the history and the RNG travel in
//    checkpoints.
//
// An epoch is ceil(N / B) steps either way.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_SELECTION_H
#define TRAINC_RT_COMMON_SELECTION_H

#include "BatchLoader.h"
#include "HostState.h"
#include "TrainChecks.h"
#include "TrainDevice.h"

#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace trainc::rt::detail {

/// Settles the defaults and refuses what selection cannot do: no selection
/// entry in the program, a parameter of the other kind, --select-fraction
/// beyond the compiled batch, gradient accumulation, data parallelism, a
/// sampler, the LR range test.
Status settleSelection(SelectOptions &options, const Program &program, int64_t accum,
                       bool dataParallel, bool sampler, bool rangeTest);

class Selection {
public:
  Selection(RunDevice &device, const Program &program, const TrainingData &data)
      : device(device), program(program), data(data) {}
  /// `tracePath` (--trace-batches; empty: none) gets a JSON line per
  /// selection, appended to where `resumed`; `samples`, `shuffle` and
  /// `seed`: prob's passes over the data.
  Status init(const SelectOptions &options, const std::string &tracePath, bool resumed,
              bool shuffle, uint64_t seed);
  bool enabled() const { return candidates > 0; }
  /// The step's rows come from the candidates on the device (gather), not
  /// from the files.
  bool gathers() const { return opts.kind == SelectOptions::Kind::TopK; }
  /// Candidates per selection (B).
  int64_t batch() const { return candidates; }

  /// The samples step `seq` of `epoch` (batch b of it) trains, pickedRows():
  /// topk, the largest losses of candidates order[bB, bB + B) (ties to the
  /// earlier candidate), in candidate order; prob, k kept candidates.
  Status select(const int64_t *order, int64_t b, int64_t epoch, int64_t seq);
  const std::vector<int64_t> &pickedRows() const { return samples; }

  /// prob's state in checkpoints: tensors (name -> bytes) and manifest
  /// fields.
  std::vector<HostTensor> checkpointTensors() const;
  void save(std::map<std::string, std::vector<char>> &tensors,
            std::map<std::string, std::string> &manifest) const;
  Status restore(const std::map<std::string, std::vector<char>> &tensors,
                 const std::map<std::string, std::string> &manifest);
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

  /// Runs the selection entry over `count` candidates `rows`.
  Status forward(const int64_t *rows, int64_t count, int64_t epoch);
  Status traceLine(int64_t seq, const int64_t *rows, int64_t count);
  Status selectProb(int64_t epoch, int64_t seq);

  SelectOptions opts;
  bool shuffle = true;
  /// prob: the current pass over the data and the next candidate in it, the
  /// kept samples waiting for a step, the last losses (a ring), the RNG of
  /// the passes' shuffles and of the keep draws.
  std::vector<int64_t> pass;
  int64_t cursor = 0;
  std::deque<int64_t> kept;
  std::vector<double> history;
  int64_t historyCount = 0, historyNext = 0;
  std::mt19937_64 rng;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_SELECTION_H
