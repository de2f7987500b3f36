//===- ProgramSupport.h - pieces shared by the program's modes -*- C++ -*-===//
//
// Internal to the runtime: prediction (ProgramMain.cpp) and training
// (Trainer.cpp) share device buffers, input files and messages.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_PROGRAMSUPPORT_H
#define TRAINC_RT_COMMON_PROGRAMSUPPORT_H

#include "LrRangeTest.h"
#include "Profiler.h"
#include "Npy.h"
#include "SampleTransform.h"
#include "Sampler.h"
#include "Schedule.h"
#include "WeightAverage.h"
#include "trainc_rt/device.h"
#include "trainc_rt/program.h"

#include <cstdint>
#include <memory>
#include <cmath>
#include <string>
#include <vector>

namespace trainc::rt::detail {

std::string shapeText(const TensorInfo &t);
std::string shapeText(const std::vector<int64_t> &shape);
/// Bytes of a tensor from axis `firstAxis` on (1: one sample).
uint64_t tensorBytes(const TensorInfo &t, int firstAxis = 0);
/// Tensor names become file names; refuses names that would leave a folder.
Status checkFileName(const char *kind, const char *name);

/// Device memory that returns itself to its Context.
struct DeviceFree {
  Context *context;
  void operator()(void *ptr) const {
    if (context)
      context->deallocate(ptr);
  }
};
using DevicePtr = std::unique_ptr<void, DeviceFree>;
Status allocateDevice(Context &context, size_t bytes, DevicePtr &result);

/// Pinned host memory that returns itself to its Context.
struct HostFree {
  Context *context;
  void operator()(void *ptr) const {
    if (context)
      context->deallocateHost(ptr);
  }
};
using HostPtr = std::unique_ptr<void, HostFree>;
Status allocatePinned(Context &context, size_t bytes, HostPtr &result);

/// Allocates the parameters and constants on the device with their initial
/// values: from the program's blob, or, for parameters, from
/// `paramsDir/<name>.npy` (as --save-params writes them) when it is set.
Status uploadParams(Context &context, const Program &program, const std::string &paramsDir,
                    std::vector<DevicePtr> &params, std::vector<void *> &pointers);

/// Opens DIR/<name>.npy for each of `infos` and checks dtype, the per-sample
/// shape (all axes but the first) and that all have one sample count.
Status openSampleInputs(const std::string &dir, const TensorInfo *infos, int count,
                        std::vector<NpyArray> &arrays, int64_t &samples);


struct TrainOptions {
  std::string dataDir, evalDir, saveDir, logPath, exportPath, paramsDir;
  int64_t epochs = 0, steps = 0;
  /// Checkpoints go to this folder every `checkpointEvery` steps (0: at the
  /// end of every epoch); `resume` continues from the one there.
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  /// --async-workers N (0: none): N instances of the step at once on the
  /// shared parameters, without locks (AsyncLanes.h).
  int asyncWorkers = 0;
  /// --async: a data-parallel trainer's ranks train asynchronously over a
  /// parameter server in rank 0 (AsyncRanks.h), each rank at most
  /// `stalenessBound` steps ahead of the slowest (0: no bound).
  bool asyncRanks = false;
  int64_t stalenessBound = 0;
  /// --until-step N: pause after step N (0: none): evaluate, checkpoint and
  /// end, as a run whose schedule still spans `steps` or `epochs`.
  int64_t untilStep = 0;
  bool resume = false;
  /// --resume-other-model: resume a checkpoint of a changed model.
  bool resumeOtherModel = false;
  /// Gradient accumulation: micro-batches (of the compiled batch size) per
  /// optimizer step (0: the program's default, TrainStep::gradAccum).
  int64_t gradAccum = 0;
  /// A pipeline-parallel trainer's micro-batches per optimizer step (0: the
  /// program's default, Pipeline::microBatches).
  int64_t microBatches = 0;
  /// NaN: the optimizer's default.
  double lr, momentum, weightDecay, beta1, beta2, eps, trustCoefficient;
  /// K-FAC (NaN: the defaults, 1e-3, 0.95, 1e-3), and the steps between
  /// inversions of its factors (0: 10).
  double kfacDamping, kfacStatDecay, kfacKlClip;
  int64_t kfacInverseEvery = 0;
  /// The max_grad_norm of a step compiled with --clip-grad-norm (NaN: the
  /// compiled value).
  double clipGradNorm;
  /// The learning-rate schedule with its parameters (Schedule.h).
  LrSchedule schedule;
  /// Evaluation (with evalDir): also every `evalEvery` steps (0: at the
  /// epochs' ends only), of the output named `evalOutput` (empty: the
  /// first), with the top-`topk` accuracy (0: none).
  int64_t evalEvery = 0;
  int topk = 0;
  std::string evalOutput;
  /// --keep-best METRIC (empty: none) keeps DIR/best, the checkpoint of the
  /// best evaluation; --keep-last K keeps DIR/step-N of the last K
  /// checkpoints (0: only the latest); --early-stop-patience N ends the run
  /// after N evaluations without improvement by more than
  /// --early-stop-min-delta (NaN: 0).
  std::string keepBest;
  int64_t keepLast = 0, earlyStopPatience = 0;
  double earlyStopMinDelta = std::nan("");
  /// --resume=auto: resume where DIR holds a checkpoint, else start.
  bool resumeAuto = false;
  /// --normalize, --augment: how sample files become inputs
  /// (SampleTransform.h).
  SampleOptions samples;
  /// --ema-decay or --swa-start: averaged weights (WeightAverage.h).
  AveragingOptions averaging;
  /// --sampler: batches drawn by the samples' losses (Sampler.h).
  SamplerOptions sampler;
  /// --select: selective backprop (Selection.h).
  SelectOptions select;
  /// --tensorboard DIR: the log's scalars as TensorBoard event files.
  std::string tensorboardDir;
  /// --find-lr: the LR range test (LrRangeTest.h) instead of training;
  /// --lr=auto: the test, then training at its suggested rate.
  bool findLr = false, lrAuto = false;
  RangeTestOptions rangeTest;
  uint64_t seed = 0;
  bool shuffle = true;
  /// Threads that copy batches into pinned buffers ahead of the step (0:
  /// the training loop copies them itself; -1, --workers left out:
  /// loaderWorkers chooses).
  int workers = -1;
  /// Dynamic loss scaling (fp16): good steps in a row before the scale
  /// doubles (0: GradScaler's 2000).
  int64_t scaleGrowthInterval = 0;
  /// After training: the arena's planned size and how far the steps wrote
  /// into it (its high-water mark; the arena is filled with a pattern first).
  bool reportMemory = false;
  /// --profile[=FILE]: the calls of a window of steps timed (Profiler.h).
  ProfileOptions profile;
  /// Record the step as a CUDA graph and replay it (targets with graphs).
  bool cudaGraph = true;
  /// Convolution algorithms (cuDNN): timed once per shape instead of taken
  /// from the heuristic; deterministic ones only.
  bool cudnnBenchmark = true, deterministic = false;
  /// The file that keeps the search's choices across runs: empty for the
  /// program's own path + ".cudnn-cache", "off" for none.
  std::string cudnnCache;
  /// Data parallelism: seconds a sum over the ranks may wait for the others
  /// before the run stops (0: forever).
  double commTimeout = 300;
  /// Data parallelism: whether each bucket's sum runs while the step goes
  /// on (Context::useCommunicator).
  CommOverlap commOverlap = CommOverlap::Auto;
};

/// Trains the program's TrainStep on `dataDir` (one .npy per step input but
/// the sample weights) and reports loss per epoch and, with `evalDir`,
/// held-out loss and accuracy.
Status runTraining(const Program &program, const TrainOptions &options);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_PROGRAMSUPPORT_H
