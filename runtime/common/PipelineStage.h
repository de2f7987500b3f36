//===- PipelineStage.h - one stage of a pipeline-parallel run --*- C++ -*-===//
//
// Internal to the runtime. A pipeline-parallel trainer (trainc compile
// --pipeline-stages) runs one stage per rank, stage-major: rank
// stage * replicas + replica. Each optimizer step is a group of M
// micro-batches, run in the 1F1B order (PipeDream-flush, Megatron's
// non-interleaved schedule): stage k runs min(S - k - 1, M - 1) forwards
// first, then one forward and one backward in turn, then the remaining
// backwards. The gradients add up over the group in the accumulation
// machinery (TrainStep::accumulate), and the group's last micro-batch's
// backward updates the parameters.
//
// A micro-batch's forward receives its activations from the stage before,
// runs the step's first part in an arena of its own and sends what the
// next stage needs; its backward receives their gradients, runs the second
// part and sends the gradients of what it received. The tensors move by
// the world's point-to-point transfers straight from and into the arena;
// sends complete in the background and are waited for before their arena
// is used again.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_PIPELINESTAGE_H
#define TRAINC_RT_COMMON_PIPELINESTAGE_H

#include "ProgramSupport.h"

#include <deque>
#include <functional>
#include <vector>

namespace trainc::rt::detail {

/// Where a rank is in a pipeline-parallel run.
struct StagePlace {
  int stages = 1, stage = 0, replicas = 1, replica = 0;
  /// The world rank of `s`'s replica of this rank.
  int rankOf(int s) const { return s * replicas + replica; }
  bool first() const { return stage == 0; }
  bool last() const { return stage + 1 == stages; }
};

class PipelineStage {
public:
  PipelineStage(const TrainStep &train, StagePlace place, Communicator &world, Context &context,
                uint64_t arenaBytes)
      : train(train), place(place), world(world), context(context), arenaBytes(arenaBytes) {}

  /// The micro-batches in flight at most in a group of `microBatches`: the
  /// arenas the stage keeps.
  static int inFlight(StagePlace place, int64_t microBatches);

  /// Allocates the arenas of up to `microBatches` in flight.
  Status init(int64_t microBatches);

  /// Micro-batch `index` of a group of `count`, launch `n` of the run with
  /// `args` (its inputs and hyperparameters; the arena is the stage's): its
  /// forward, then the backwards that 1F1B puts after it. `last`: the
  /// group's last micro-batch, whose step updates the parameters.
  /// `backwardDone(n)` is called after launch n's backward is queued.
  Status run(int64_t n, const TrainArgs &args, bool last, int64_t index, int64_t count,
             const std::function<Status(int64_t)> &backwardDone);

  /// Waits for every send still on its way (the run's end).
  Status drain();

  /// Seconds spent waiting for the other stages' tensors.
  double secondsWaiting() const { return waited; }

private:
  struct MicroBatch {
    int64_t n;
    TrainArgs args;
    bool last;
    int arena;
    /// The host copies of its hyperparameters: the host slot it came from
    /// is refilled before its backward.
    std::vector<float> hostHypers;
    std::vector<const float *> hostHyperPtrs;
    std::vector<void *> links;
  };
  Status forward(MicroBatch &mb);
  Status backward(MicroBatch &mb);
  /// Receives (and waits for) or starts sending the links of one kind.
  Status receive(MicroBatch &mb, bool gradient);
  Status send(MicroBatch &mb, bool gradient);
  static int tag(const PipelineLink &link) { return link.slot * 2 + (link.gradient ? 1 : 0); }

  const TrainStep &train;
  const StagePlace place;
  Communicator &world;
  Context &context;
  const uint64_t arenaBytes;
  std::vector<DevicePtr> arenas;
  /// Sends still on their way, per arena.
  std::vector<std::vector<int64_t>> sending;
  /// Forwards whose backward has not run, oldest first.
  std::deque<MicroBatch> waiting;
  double waited = 0;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_PIPELINESTAGE_H
