//===- StepPipeline.h - batches to the device, steps behind them -*- C++ -*-===//
//
// Internal to the runtime: the training step's pipeline. A step's inputs
// (data, labels, sample weights, dropout key) and hyperparameters form one
// slot. Workers fill the data of upcoming batches into pinned host slots; the
// loop completes a slot, uploads it on the upload queue into one of two
// device slots, and queues the step behind that upload. While step k runs,
// the loop reads back the loss of step k - 1 and prepares step k + 1: the
// host never waits inside a step, and a device slot is overwritten only
// after the step two back, which read it, is done.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_STEPPIPELINE_H
#define TRAINC_RT_COMMON_STEPPIPELINE_H

#include "AsyncLanes.h"
#include "BatchLoader.h"
#include "TrainChecks.h"
#include "TrainDevice.h"

#include <cstring>
#include <map>
#include <tuple>
#include <memory>
#include <vector>

namespace trainc::rt::detail {

/// Where one step's inputs and hyperparameters lie in a step slot: one
/// block, so that a single upload carries everything a step reads.
struct SlotLayout {
  std::vector<uint64_t> inputs, hypers;
  uint64_t bytes = 0;
};
SlotLayout slotLayout(const TrainStep &train);

/// The step as a CUDA graph (--cuda-graph): each function (step or
/// accumulate), device slot and value of the hyperparameters the step reads
/// on the host (TrainStep::hostReadHypers) first runs as it is, which sizes
/// every scratch buffer; at its next use it is recorded and from then on
/// replayed with one launch, and recorded again once scratch memory has
/// moved (an evaluation's first pass may grow it). A step that cannot be
/// recorded runs as it is from then on, after one note. On a target without
/// graphs, and with --cuda-graph off, the step always runs as it is.
class StepGraphs {
public:
  StepGraphs(Context &context, const TrainStep &train, bool wanted)
      : context(context), train(train), enabled(wanted && context.supportsGraphs()) {}

  Status run(bool last, int slot, const TrainArgs &args) {
    Status (*function)(Context &, const TrainArgs &) = last ? train.step : train.accumulate;
    if (!enabled || context.profiling()) // --profile times the calls one by one
      return function(context, args);
    Key key{last, slot, {}};
    for (int i = 0; i < train.numHostReadHypers; ++i) {
      uint32_t bits;
      std::memcpy(&bits, args.hostHypers[train.hostReadHypers[i]], sizeof(bits));
      key.hostValues.push_back(bits);
    }
    auto found = entries.find(key);
    if (found == entries.end()) {
      // First use: run as it is. Past kMaxGraphs (a short batch's weight
      // each epoch, say) the rare keys are not recorded.
      if (entries.size() < kMaxGraphs)
        entries.emplace(key, Entry{});
      return function(context, args);
    }
    Entry &entry = found->second;
    if (entry.graph >= 0 && entry.epoch == context.memoryEpoch())
      return context.launchGraph(entry.graph);
    TRAINC_RETURN_IF_ERROR(context.beginGraph());
    Status recorded = function(context, args);
    int graph = -1;
    Status ended = context.endGraph(&graph);
    if (!recorded.ok() || !ended.ok()) {
      // Nothing recorded ran: the step runs as it is.
      enabled = false;
      std::fprintf(stderr, "note: --cuda-graph: %s; the steps run without a graph\n",
                   (recorded.ok() ? ended : recorded).message().c_str());
      return function(context, args);
    }
    entry = {graph, context.memoryEpoch()};
    ++recordings;
    return context.launchGraph(graph);
  }

  /// Graphs recorded so far (again after scratch moved included).
  int recorded() const { return recordings; }

private:
  static constexpr size_t kMaxGraphs = 16;
  struct Key {
    bool last;
    int slot;
    std::vector<uint32_t> hostValues;
    bool operator<(const Key &o) const {
      return std::tie(last, slot, hostValues) < std::tie(o.last, o.slot, o.hostValues);
    }
  };
  struct Entry {
    int graph = -1;
    uint64_t epoch = 0;
  };
  Context &context;
  const TrainStep &train;
  bool enabled;
  std::map<Key, Entry> entries;
  int recordings = 0;
};

/// The batch-filling threads of a run: `requested` (--workers) where given
/// (>= 0). Left out: 1, except on the CPU target where every data file was
/// read whole at open: there a worker would copy the same bytes on a core
/// the step's OpenMP threads are using, and every step one of them was
/// preempted for it (bench/README.md, "Waits and threads"), so the loop
/// copies each batch itself. A file read from disk keeps its worker: the
/// read's wait overlaps the step.
int loaderWorkers(const Program &program, const TrainingData &data, int requested);

class StepPipeline {
public:
  /// `order` (the epoch's sample order) must outlive the pipeline: the
  /// workers read it. `deviceSlots`: the launches whose inputs are on the
  /// device at once (2: one runs while the next uploads; a pipeline stage
  /// keeps its micro-batches in flight until their backward).
  StepPipeline(RunDevice &device, const TrainStep &train, const TrainingData &data,
               int64_t batch, int workers, bool cudaGraph, int deviceSlots = 2);
  /// Whatever way the run ends, the device finishes the copies that read or
  /// write the pinned slots before they are freed.
  ~StepPipeline();
  StepPipeline(const StepPipeline &) = delete;
  StepPipeline &operator=(const StepPipeline &) = delete;

  /// --async-workers: device slot d's steps run on lane d of `lanes` (as
  /// many as device slots), each from its own arena, behind a synchronous
  /// upload; called before init.
  void runOnLanes(AsyncLanes *lanes, std::vector<void *> arenas) {
    laneSet = lanes;
    laneArenas = std::move(arenas);
  }
  bool onLanes() const { return laneSet != nullptr; }

  /// Allocates the slots and the events.
  Status init();

  int hostSlots() const { return hostSlotCount; }
  /// Where launch `n` (0-based, in the run) fills and uploads from, and the
  /// device slot it runs from.
  int hostSlotOf(int64_t n) const { return static_cast<int>(n % hostSlotCount); }
  int deviceSlotOf(int64_t n) const { return static_cast<int>(n % deviceSlotCount); }
  int deviceSlots() const { return deviceSlotCount; }
  /// The arguments launch `n` from host slot `h` runs with.
  const TrainArgs &argsOf(int64_t n, int h) {
    TrainArgs &a = args[deviceSlotOf(n)];
    a.hostHypers = hostHyperPtrs[h].data();
    return a;
  }

  /// Step input `input` and hyperparameter `hyper` in host slot `h`.
  char *input(int h, int input) { return hostSlot(h) + layout.inputs[input]; }
  /// The step's inputs in device slot `d`.
  void *const *deviceInputs(int d) const { return inputPtrs[d].data(); }
  float *hyper(int h, int hyper) {
    return reinterpret_cast<float *>(hostSlot(h) + layout.hypers[hyper]);
  }

  /// Queues the reading of rows order[first, first + count) of `epoch` into
  /// host slot `h`, once the upload from it has finished.
  Status submit(int h, const int64_t *order, int64_t first, int64_t count, int64_t epoch);
  /// Waits until host slot `h` is filled.
  Status waitFilled(int h) { return loader->wait(h); }

  /// Uploads host slot `h` (launch `n`) into its device slot, behind the
  /// step two back that read that device slot.
  Status upload(int64_t n, int h);
  /// Queues the step (the update step when `last`, else the accumulate
  /// step) of launch `n` behind its upload.
  Status run(int64_t n, int h, bool last);
  /// Queues the copy of the step's loss into record(d)[0] and of its
  /// per-sample losses into sampleLosses(d), and marks the step done
  /// (waitStep) once everything queued so far has run.
  Status queueLossReadback(int d);
  Status finishLaunch(int d);
  /// Waits for the step last run from device slot `d`; its host record:
  /// the loss, then what LossScaleMonitor::queueReadback copied.
  Status waitStep(int d);
  float *record(int d) {
    return reinterpret_cast<float *>(static_cast<char *>(hostLoss.get()) + d * 256);
  }
  /// The per-sample losses of the step last run from device slot `d`, on
  /// the host once waitStep(d) returned (null: the step has none).
  const float *sampleLosses(int d) const {
    return train.sampleLosses > 0
               ? static_cast<const float *>(hostSampleLosses.get()) + d * train.sampleLosses
               : nullptr;
  }

private:
  char *hostSlot(int h) { return static_cast<char *>(hostBlock.get()) + h * layout.bytes; }
  char *deviceSlot(int d) { return static_cast<char *>(deviceBlock.get()) + d * layout.bytes; }
  /// The losses live after the device slots, 256 bytes apart.
  void *deviceLoss(int d) { return deviceSlot(deviceSlotCount) + d * 256; }

  RunDevice &device;
  Context &context;
  const TrainStep &train;
  const TrainingData &data;
  const SlotLayout layout;
  const int64_t batch;
  const int hostSlotCount;
  const int deviceSlotCount;
  DevicePtr deviceBlock, deviceSampleLosses;
  HostPtr hostBlock, hostLoss, hostSampleLosses;
  std::vector<std::vector<void *>> inputPtrs, hyperPtrs;
  std::vector<TrainArgs> args;
  /// The hyperparameters' host copies: in the host slot the step was filled
  /// from.
  std::vector<std::vector<const float *>> hostHyperPtrs;
  std::vector<int> uploaded, computed;
  std::vector<bool> uploadPending;
  StepGraphs graphs;
  /// --async-workers: the lanes and their arenas; each lane's copy of the
  /// hyperparameters the step reads on the host (the host slot it was
  /// filled from is refilled while the lane runs).
  AsyncLanes *laneSet = nullptr;
  std::vector<void *> laneArenas;
  std::vector<std::vector<float>> laneHypers;
  std::vector<std::vector<const float *>> laneHyperPtrs;
  /// Declared after every buffer it reads or fills, so it stops before
  /// they go.
  std::unique_ptr<BatchLoader> loader;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_STEPPIPELINE_H
