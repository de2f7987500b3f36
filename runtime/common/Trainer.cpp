//===- Trainer.cpp - the training loop of a compiled program --------------===//
//
// Epochs over .npy data (read with pread), shuffled per epoch from the seed,
// batched at the compiled size; the short last batch is trained on with
// per-sample weight 0 on its padding rows, so it is neither dropped nor
// over-weighted. Worker threads fill upcoming batches into pinned buffers;
// each step's inputs and hyperparameters go up in one asynchronous copy, and
// the loss comes back one step late, so the host never waits inside a step
// (see the pipeline comment in runTraining).
//
//===----------------------------------------------------------------------===//

#include "AlgoCache.h"
#include "AsyncRanks.h"
#include "BatchLoader.h"
#include "Checkpoint.h"
#include "TrainCheckpoints.h"
#include "TrainDevice.h"
#include "StepPipeline.h"
#include "Selection.h"
#include "RunSettings.h"
#include "Evaluation.h"
#include "FileIO.h"
#include "LrRangeTest.h"
#include "PipelineStage.h"
#include "Plot.h"
#include "ProgramOptions.h"
#include "ProgramSupport.h"
#include "TrainChecks.h"
#include "TensorBoard.h"
#include "TrainLog.h"
#include "UpdateBn.h"
#include "trainc_rt/defaults.h"
#include "trainc_rt/launch.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <numeric>
#include <map>
#include <random>
#include <sstream>
#include <tuple>

#include <sys/stat.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace trainc::rt::detail {
namespace {


/// SIGINT or SIGTERM received while training (0: none). The first ends the
/// run after the step in flight, with a checkpoint where --checkpoint-dir
/// asks for them; a second ends the process at once.
std::atomic<int> stopSignal{0};
/// When the first arrived (CLOCK_MONOTONIC, ns).
std::atomic<int64_t> stopSignalNs{0};
/// A signal within this long of the first is the same request delivered
/// twice, not a second one: timeout(1) and `kill -INT -- -PGID` signal the
/// process and then its process group, which arrive apart on a busy machine.
constexpr int64_t kRepeatedSignalNs = 1000000000;

void onStopSignal(int signal) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now); // async-signal-safe
  const int64_t ns = int64_t(now.tv_sec) * 1000000000 + now.tv_nsec + 1; // never 0
  int64_t first = 0;
  if (stopSignalNs.compare_exchange_strong(first, ns)) {
    stopSignal.store(signal);
    return;
  }
  if (ns - first < kRepeatedSignalNs)
    return;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

/// SIGINT and SIGTERM handled as above while a single-process run trains
/// (ranks of a data-parallel run stop as before: they must stop at one step).
struct StopOnSignals {
  struct sigaction oldInt {}, oldTerm {};
  StopOnSignals() {
    stopSignal = 0;
    stopSignalNs = 0;
    struct sigaction action {};
    action.sa_handler = onStopSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &oldInt);
    sigaction(SIGTERM, &action, &oldTerm);
  }
  ~StopOnSignals() {
    sigaction(SIGINT, &oldInt, nullptr);
    sigaction(SIGTERM, &oldTerm, nullptr);
  }
};




/// --save-params writes DIR/<parameter>.npy, each replacing only an absent
/// or regular file: checked before training starts, so that a run never
/// trains for hours to fail at the end.
Status checkSaveTargets(const Program &program, const std::string &dir) {
  if (dir.empty())
    return Status();
  std::error_code error;
  if (std::filesystem::exists(dir, error) && !std::filesystem::is_directory(dir, error))
    return Status::error("--save-params: " + dir + " exists and is not a folder");
  for (int i = 0; i < program.numParams; ++i) {
    const ParamInfo &p = program.params[i];
    if (p.constant)
      continue;
    TRAINC_RETURN_IF_ERROR(checkFileName("parameter", p.tensor.name));
    TRAINC_RETURN_IF_ERROR(
        checkReplaceable(dir + "/" + p.tensor.name + ".npy", "--save-params"));
  }
  return Status();
}


/// The progress line. On a terminal it is redrawn in place, five times a
/// second at most; in a log file or a pipe it is a line every 2 seconds.
/// Another message first ends a drawn line, so that it stays on the screen.
class ProgressLine {
public:
  ProgressLine() {
    const char *term = std::getenv("TERM");
    inPlace = isatty(STDERR_FILENO) && !(term && std::strcmp(term, "dumb") == 0);
  }
  ~ProgressLine() { end(); }
  double interval() const { return inPlace ? 0.2 : 2.0; }
  void show(const std::string &text) {
    if (!inPlace) {
      std::fprintf(stderr, "%s\n", text.c_str());
      return;
    }
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
    drawn = true;
  }
  /// Before another message: the drawn line ends where it is.
  void end() {
    if (drawn)
      std::fputc('\n', stderr);
    drawn = false;
  }

private:
  bool inPlace = false, drawn = false;
};

std::string clockText(double seconds) {
  long long s = static_cast<long long>(std::max(0.0, seconds) + 0.5);
  char text[32];
  std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return text;
}

} // namespace

static Status trainOnRanks(const Program &program, const TrainOptions &givenOptions,
                           Communicator *ranks, double &waitedForSums,
                           bool &overlappedSums);

static Status runPipelineTraining(const Program &program, const TrainOptions &options);

Status runTraining(const Program &program, const TrainOptions &options) {
  if (program.pipeline)
    return runPipelineTraining(program, options);
  if (options.microBatches > 0)
    return Status::error("--micro-batches is the schedule of a pipeline-parallel trainer "
                         "(trainc compile --pipeline-stages); this one accumulates with "
                         "--grad-accum");
  const TrainStep *train = program.train;
  if (!train)
    return Status::error("this program was compiled for prediction only; compile with "
                         "--loss and --optimizer to train");
  const int launched = launchOf().ranks;
  if (launched > 1 && train->dataParallelBuckets == 0)
    return Status::error("started as one of " + std::to_string(launched) +
                         " processes, but this trainer was compiled without --data-parallel: "
                         "each would train alone and write the same files");
  double waited = -1;
  bool overlapped = false;
  if (train->dataParallelBuckets == 0 || launched == 0) {
    StopOnSignals stop;
    return trainOnRanks(program, options, nullptr, waited, overlapped);
  }
  if (!train->createCommunicator)
    return Status::error(std::string("this data-parallel trainer's target (") +
                         (program.target ? program.target : "?") +
                         ") cannot combine gradients over processes yet; run it as one process");
  std::unique_ptr<Communicator> communicator;
  TRAINC_RETURN_IF_ERROR(train->createCommunicator(communicator));
  communicator->setTimeout(options.commTimeout);
  auto began = std::chrono::steady_clock::now();
  Status trained = trainOnRanks(program, options, communicator.get(), waited, overlapped);
  if (trained.ok() && communicator->rank() == 0 && !options.asyncRanks) {
    double run = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    std::fprintf(stderr, "data parallelism: %d ranks; rank 0 spent %.2f s of %.2f s in %lld "
                 "sums over the ranks (waiting for the others included)",
                 communicator->size(), communicator->secondsInSums(), run,
                 static_cast<long long>(communicator->sums()));
    if (waited >= 0)
      std::fprintf(stderr, "; its steps waited %.2f s for the gradient sums (%s)", waited,
                   overlapped ? "the rest of them ran behind the backward"
                              : "they ran in the step's order, see --comm-overlap");
    std::fprintf(stderr, "\n");
  }
  if (!trained.ok()) {
    // Destroying the unfinished communicator stops every rank: say why first.
    std::fprintf(stderr, "rank %d of %d: error: %s\n", communicator->rank(),
                 communicator->size(), trained.message().c_str());
    return trained;
  }
  return communicator->finish();
}

namespace {

/// A pipeline-parallel run, as one rank sees it: its place, the world (the
/// stages' transfers and the gather of the trained model), the model's
/// program and the last stage's view (its labels and sample weights).
struct StagedRun {
  StagePlace place;
  Communicator *world;
  const Program *model;
  Program lossView;
};

/// The program one stage runs: the model's inputs, outputs and batch, the
/// stage's parameters and training step (no forward, no export: the model's
/// program writes the stages' gathered parameters).
Program stageView(const Program &model, const Program &stage) {
  Program view = model;
  view.numParams = stage.numParams;
  view.params = stage.params;
  view.paramBlob = stage.paramBlob;
  view.paramBlobBytes = stage.paramBlobBytes;
  view.arenaBytes = 0;
  view.forward = nullptr;
  view.train = stage.train;
  view.exportInfo = nullptr;
  view.fingerprint = stage.fingerprint;
  view.select = nullptr;
  view.pipeline = nullptr;
  return view;
}

/// One training run on this rank: everything is set up and checked before
/// step 1 (setUp), then the epochs run (train), then the run reports and
/// writes what it was asked for (finish). Data parallelism: this process is
/// rank `rank` of `ranksCount`; rank 0 alone writes the log, checkpoints,
/// the export and --save-params, and evaluates.
class TrainRun {
public:
  /// `rangeTest`: this run is the LR range test's (its rates, no outputs).
  /// `staged`: this rank runs one stage of a pipeline-parallel trainer;
  /// `program` is then the stage's view (stageView) and `ranks` its
  /// replicas.
  TrainRun(const Program &program, const TrainOptions &givenOptions, Communicator *ranks,
           LrRangeTest *rangeTest = nullptr, const StagedRun *staged = nullptr)
      : program(program), train(*program.train), options(givenOptions), ranks(ranks),
        rangeTest(rangeTest), staged(staged),
        rank(ranks ? ranks->rank() : 0), ranksCount(ranks ? ranks->size() : 1),
        chatty(rank == 0 && (!staged || staged->place.last())), batch(program.batchSize),
        stopsEarly(!givenOptions.evalDir.empty() && givenOptions.earlyStopPatience > 0),
        evalEvery(givenOptions.evalEvery), evaluates(!givenOptions.evalDir.empty()),
        lossScaled(train.lossScaling != LossScaling::None) {
    if (rank > 0) {
      options.logPath.clear();
      options.tensorboardDir.clear();
      options.exportPath.clear();
      options.saveDir.clear();
      options.evalDir.clear();
      // Rank 0 alone evaluates: what is about evaluation goes with it.
      options.evalEvery = options.topk = 0;
      options.evalOutput.clear();
      options.keepBest.clear();
      options.earlyStopPatience = 0;
      options.earlyStopMinDelta = std::nan("");
      options.averaging.evalAveraged = false;
    }
    if (staged)
      stagedOutputs();
  }

  Status setUp();
  Status trainEpochs();
  Status finish(double &waitedForSums, bool &overlappedSums);

private:
  /// Batches issued to the device whose loss the host has not read yet
  /// (with gradient accumulation, each batch of a group; `last` is the one
  /// whose step updates the parameters).
  struct Pending {
    int64_t step, epoch, count;
    /// The batch's number in the run (seqOf).
    int64_t seq;
    /// The batch's share in the group's loss: its samples' weight
    /// (batchWeight).
    double weight;
    /// The learning rate and the momentum (or beta1) the step ran with.
    double lr, momentum;
    int slot;
    bool last;
    /// Why nothing ran (Group::notRun), or null.
    const char *notRun = nullptr;
  };
  /// The group of batches a batch belongs to (groups start at the epoch's
  /// first batch; the last may be short): its batches [first, end), the
  /// weight of its samples (batchWeight) on this rank and on all of them;
  /// why its step is not run (else null): one of its batches, on some
  /// rank, has real samples but no label the loss counts (every label
  /// --ignore-index), or, under --sample-weight-norm=sum, every sample
  /// weight of the group is 0: PyTorch's loss is 0/0 there (every rank
  /// decides alike, without a sum).
  struct Group {
    int64_t first, end;
    double weight, globalWeight;
    const char *notRun;
  };

  Status planSteps();
  /// A pipeline stage: the last one alone logs; each writes its own
  /// checkpoints (in DIR/stage<k>); the export and --save-params gather
  /// every stage's parameters on the world's rank 0 (writeStagedModel).
  void stagedOutputs();
  Status setUpStage();
  Status writeStagedModel(const std::vector<void *> &weights);
  /// --sampler: its draws and its checkpoint tensors.
  Status setUpSampler();
  Status resume();
  Status setUpLanes();
  Status openLog();
  Status runEpoch(int64_t epoch);
  Status runBatch(int64_t epoch, int64_t b);
  /// Uploads and runs batch b from host slot h (device slot d), and queues
  /// the readbacks and the averaged weights' update behind it.
  Status launchBatch(int h, int d, int64_t b, const Group &group, bool last);
  /// The log record and note of a step that was not run (Group::notRun).
  Status recordNoLabelStep(const Pending &p);
  void fillTrainerInputs(int h, int64_t epoch, int64_t b, const Group &group);
  Status afterStep(int64_t epoch, int64_t b);
  Status finishOldest();
  Status recordStep(const Pending &p, float loss, bool skipped, double ranWith,
                    const SampleLossSummary::Stats *sampleLossStats,
                    double gradNorm);
  Status drain();
  void progressLine(const Pending &p);
  /// `nextBatch`: where in `epoch` the run stands (for DIR/best).
  Status runEval(int64_t epoch, int64_t nextBatch, bool logged);
  Status saveCheckpoint(int64_t epoch, int64_t b);
  Status decideEarlyStop();
  void runSummary();
  Status setUpEvaluation();
  void epochSummary(int64_t epoch);
  /// The averaged weights, ready to use: SWA's batch-norm statistics
  /// recomputed for them (update_bn) where they have changed since.
  Status averagedWeights(const std::vector<void *> *&weights);

  Group groupOf(int64_t epoch, int64_t b) const;
  /// The real samples of this rank in global batch b (0 in a short last one).
  int64_t rankCount(int64_t b) const { return rowsOf(b, rank); }
  int64_t rowsOf(int64_t b, int r) const {
    if (sampled.enabled())
      return batch; // draws fill every batch
    if (selection && selection->enabled())
      return static_cast<int64_t>(selection->pickedRows().size());
    int64_t first = b * globalBatch + r * batch;
    return std::max<int64_t>(0, std::min(batch, data.samples - first));
  }
  /// Batch b of `epoch` counted over the run (the sampler's batch numbers).
  int64_t seqOf(int64_t epoch, int64_t b) const { return (epoch - 1) * batchesPerEpoch + b; }
  /// The samples of this rank's rows of batch b: the epoch's order, or the
  /// sampler's draws (of the group being trained).
  const int64_t *rowsOfBatch(int64_t epoch, int64_t b) const { return rowsFor(epoch, b, rank); }
  const int64_t *rowsFor(int64_t epoch, int64_t b, int r) const {
    if (sampled.enabled())
      return sampled.rows(seqOf(epoch, b));
    if (selection && selection->enabled())
      return selection->pickedRows().data();
    return order.data() + std::min(data.samples, b * globalBatch + r * batch);
  }
  /// What rank r's rows of global batch b weigh in the loss's divisor: their
  /// sample weights' sum under --sample-weight-norm=sum with
  /// sample_weights.npy, else their count.
  double batchWeight(int64_t epoch, int64_t b, int r) const {
    const int64_t count = rowsOf(b, r);
    if ((data.userWeights.empty() && !sampled.enabled()) ||
        train.sampleWeightNorm != SampleWeightNorm::Sum)
      return static_cast<double>(count);
    const int64_t *rows = rowsFor(epoch, b, r);
    const float *importance = sampled.enabled() ? sampled.weights(seqOf(epoch, b)) : nullptr;
    double sum = 0;
    for (int64_t i = 0; i < count; ++i)
      sum += static_cast<double>(data.userWeights.empty() ? 1.0f : data.userWeights[rows[i]]) *
             (importance ? importance[i] : 1.0f);
    return sum;
  }
  double secondsSince(std::chrono::steady_clock::time_point t) const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  const Program &program;
  const TrainStep &train;
  TrainOptions options;
  Communicator *ranks;
  LrRangeTest *rangeTest;
  const StagedRun *staged;
  /// A pipeline stage's --export and --save-params (written after the
  /// gather, not by the stage's own program).
  std::string stagedExportPath, stagedSaveDir;
  const int rank, ranksCount;
  const bool chatty;
  const int64_t batch;
  /// --early-stop-patience with --eval-data: rank 0 evaluates and decides,
  /// and every rank learns the decision at the same step (after the
  /// evaluations: at epochs' ends and every `evalEvery` steps).
  const bool stopsEarly;
  const int64_t evalEvery;
  /// Rank 0 evaluates (--eval-data): every rank drains its steps at the
  /// evaluations, so that their sums over the ranks pair up.
  const bool evaluates;
  const bool lossScaled;
  RunSettings settings;
  TrainingData data;
  RunDevice device;
  EvalSet evalSet;
  /// The epoch's sample order, which the pipeline's workers read.
  std::vector<int64_t> order;
  /// --async-workers: the lanes and the arenas of lanes 1..N-1 (lane 0
  /// runs in device.arena); before the pipeline, which waits for them.
  std::unique_ptr<AsyncLanes> lanes;
  /// --async: the parameter server (rank 0's) this rank trains against.
  std::unique_ptr<AsyncRanks> server;
  /// --profile (rank 0; not the range test's run).
  std::unique_ptr<StepProfiler> profiler;
  std::vector<DevicePtr> laneArenas;
  std::unique_ptr<StepPipeline> pipeline;
  /// A pipeline stage's schedule, transfers and arenas.
  std::unique_ptr<PipelineStage> stage;
  /// --sampler: the draws of the group being trained.
  SampledBatches sampled;
  /// --select: the candidates' selection and the rows it picked.
  std::unique_ptr<Selection> selection;
  std::unique_ptr<TrainCheckpoints> checkpoints;
  /// --ema-decay, --swa-start: the averaged weights (disabled: none).
  std::unique_ptr<WeightAverage> average;
  /// The average's updates when update_bn last ran for it (-1: never).
  int64_t statisticsAt = -1;
  std::unique_ptr<LossScaleMonitor> scaler;
  /// The manifest's fields that hold for the whole run.
  std::map<std::string, std::string> runManifest;
  TrainLog log;
  TensorBoardWriter board;
  /// The log holds the evaluation of startEpoch.
  bool evalLogged = false;
  std::mt19937_64 rng;
  /// The RNG state before the current epoch's shuffle.
  std::string epochRng;

  // The schedule of the run. With data parallelism a batch is the ranks'
  // batches together: rank r trains rows [r * batch, (r + 1) * batch) of
  // each global batch of the epoch's order (so the ranks together train
  // what one process would at batch * ranks).
  int64_t globalBatch = 0, batchesPerEpoch = 0, stepsPerEpoch = 0, totalSteps = 0;
  /// Where this process stops: totalSteps, or --until-step's pause before it.
  int64_t endStep = 0;
  bool pauses() const { return endStep < totalSteps; }
  int64_t step = 0, startEpoch = 1, startBatch = 0, firstStep = 0;

  // The loop's position: batches issued in this run (each group's, with
  // gradient accumulation), the epoch's first launch and batches submitted
  // for loading.
  int64_t launched = 0, epochFirstLaunch = 0, epochFirstBatch = 0, submitted = 0,
          epochLastBatch = 0;
  std::deque<Pending> pending;
  /// The group's batches read so far: their losses times their samples.
  double groupLoss = 0, groupWeight = 0;
  /// The per-sample losses of the group's batches read back so far.
  SampleLossSummary sampleLosses;
  int64_t groupCount = 0;
  double epochLoss = 0, epochWeight = 0, lineLoss = 0, lineWeight = 0;
  std::chrono::steady_clock::time_point start, lastLine;
  /// When the host read each of the last steps (the run's start first) and
  /// their samples: the log's samples per second are over this window, as
  /// steps come back in bursts behind the pipelined ones.
  std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>> recent;
  static constexpr size_t kRateWindow = 16;
  /// The last step's loss, and the last finished epoch's mean.
  double lastLoss = std::nan(""), lastEpochLoss = std::nan("");
  ProgressLine progress;
  EvalResult lastEval;
  bool evaluated = false;
  /// --keep-best and --early-stop-patience: the best evaluation so far.
  std::unique_ptr<EvalMonitor> monitor;
  /// --early-stop-patience ran out: the run ends after this step.
  bool stoppedEarly = false;
  /// Steps not run because nothing counted (Group::notRun);
  /// the first few get a note on stderr.
  int64_t noLabelSteps = 0;
  static constexpr int64_t kNoLabelNotes = 5;
  /// The range test has seen enough (the run stops at the next batch).
  bool rangeTestEnded() const { return rangeTest && rangeTest->ended(); }
};

Status TrainRun::setUp() {
  if (options.epochs <= 0 && options.steps <= 0)
    return Status::error("training needs --epochs N or --steps N");
  TRAINC_RETURN_IF_ERROR(settleRun(program, options, settings));
  TRAINC_RETURN_IF_ERROR(settleSampler(options.sampler, train.sampleLosses > 0, ranksCount > 1,
                                       options.shuffle, rangeTest != nullptr));
  TRAINC_RETURN_IF_ERROR(settleSelection(options.select, program, settings.accum,
                                         ranksCount > 1,
                                         options.sampler.kind != SamplerKind::Uniform,
                                         rangeTest != nullptr));
  if (!options.sampler.tracePath.empty() && options.sampler.kind == SamplerKind::Uniform &&
      options.select.kind == SelectOptions::Kind::None)
    return Status::error("--trace-batches traces --sampler=priority or mh, or --select");
  TRAINC_RETURN_IF_ERROR(checkSaveTargets(program, options.saveDir));
  if (staged && !staged->place.last()) {
    // The labels and sample weights decide every stage's batch weights and
    // skipped steps: each stage reads them as the last stage does.
    TrainingData lossData;
    TRAINC_RETURN_IF_ERROR(openTrainingData(staged->lossView, options.dataDir, options.samples,
                                            options.seed, lossData));
    TRAINC_RETURN_IF_ERROR(openTrainingData(program, options.dataDir, options.samples,
                                            options.seed, data, &lossData));
  } else {
    TRAINC_RETURN_IF_ERROR(
        openTrainingData(program, options.dataDir, options.samples, options.seed, data));
  }
  TRAINC_RETURN_IF_ERROR(checkAsyncRanks(options, ranks != nullptr, settings.accum,
                                         rangeTest != nullptr));
  // --async: no gradient sums; the ranks meet at the parameter server.
  const bool asyncRun = options.asyncRanks && ranks;
  TRAINC_RETURN_IF_ERROR(setUpDevice(program, options, asyncRun ? nullptr : ranks, device));
  if (asyncRun)
    server = std::make_unique<AsyncRanks>(*device.context, program, device.paramPtrs, *ranks,
                                          options.stalenessBound, options.commTimeout);
  TRAINC_RETURN_IF_ERROR(setUpEvaluation());
  order.resize(data.samples);
  std::iota(order.begin(), order.end(), 0);
  rng.seed(options.seed);
  TRAINC_RETURN_IF_ERROR(planSteps());
  const int deviceSlots = staged ? PipelineStage::inFlight(staged->place, settings.accum) + 1
                         : options.asyncWorkers > 0 ? options.asyncWorkers
                                                    : 2;
  pipeline = std::make_unique<StepPipeline>(device, train, data, batch,
                                            loaderWorkers(program, data, options.workers),
                                            options.cudaGraph && !staged, deviceSlots);
  if (options.asyncWorkers > 0)
    TRAINC_RETURN_IF_ERROR(setUpLanes());
  TRAINC_RETURN_IF_ERROR(pipeline->init());
  TRAINC_RETURN_IF_ERROR(setUpStage());
  TRAINC_RETURN_IF_ERROR(
      checkAveraging(options.averaging, program, totalSteps, !options.evalDir.empty(),
                     ranksCount > 1));
  average = std::make_unique<WeightAverage>(*device.context, program, options.averaging);
  TRAINC_RETURN_IF_ERROR(average->init(device.paramPtrs));
  if (chatty)
    std::fprintf(stderr, "%s\n",
                 settingsLine(program, options, settings.hyper, ranksCount, settings.accum,
                              data.samples, batchesPerEpoch, totalSteps, rangeTest != nullptr)
                     .c_str());
  checkpoints = std::make_unique<TrainCheckpoints>(*device.context, program, device.paramPtrs,
                                                   device.statePtrs, *average);
  // Checkpoints: a folder we can write, checked before the first step (by
  // rank 0, which writes them).
  if (!options.checkpointDir.empty() && rank == 0) {
    TRAINC_RETURN_IF_ERROR(TrainCheckpoints::prepareFolder(options.checkpointDir));
    if (!options.keepBest.empty())
      TRAINC_RETURN_IF_ERROR(TrainCheckpoints::prepareFolder(options.checkpointDir + "/best"));
  }
  if (options.resumeAuto) {
    // Resumed where a checkpoint is; a damaged one is an error, not a
    // fresh start.
    struct stat info;
    options.resume = ::lstat((options.checkpointDir + "/checkpoint.safetensors").c_str(),
                             &info) == 0;
    if (!options.resume && chatty)
      std::fprintf(stderr, "--resume=auto: no checkpoint in %s yet; training from the start\n",
                   options.checkpointDir.c_str());
  }
  TRAINC_RETURN_IF_ERROR(setUpSampler());
  scaler = std::make_unique<LossScaleMonitor>(train, device);
  TRAINC_RETURN_IF_ERROR(scaler->read());
  if (options.resume)
    TRAINC_RETURN_IF_ERROR(resume());
  if (server)
    TRAINC_RETURN_IF_ERROR(server->open());
  if (step > endStep)
    return Status::error("the checkpoint in " + options.checkpointDir + " is at step " +
                         std::to_string(step) + ", past --until-step " +
                         std::to_string(options.untilStep) + "; pause at a later step");
  if (staged) {
    // Every stage resumes at the same step (each from its own checkpoint).
    double steps[2] = {static_cast<double>(step), static_cast<double>(step) * step};
    TRAINC_RETURN_IF_ERROR(staged->world->allReduceSum(steps, 2));
    const double ranks = staged->world->size();
    if (steps[0] * steps[0] != ranks * steps[1])
      return Status::error("the pipeline stages' checkpoints are at different steps (" +
                           options.checkpointDir + ": step " + std::to_string(step) +
                           "); resume from checkpoints written by one run");
  }
  runManifest = {{"format", "trainc checkpoint 1"},
                 {"model", program.modelName ? program.modelName : ""},
                 {"optimizer", name(train.optimizer)},
                 {"precision", name(train.precision)},
                 {"batch_size", std::to_string(batch)},
                 {"grad_accum", std::to_string(settings.accum)},
                 {"seed", std::to_string(options.seed)},
                 {"samples", std::to_string(data.samples)},
                 {"shuffle", options.shuffle ? "true" : "false"},
                 // What the run is asked for (a resumed run may ask for more):
                 // read by trainc pbt, not checked on resume.
                 {"total_steps", std::to_string(totalSteps)}};
  if (average->enabled())
    runManifest["averaging"] = average->identity();
  if (program.fingerprint)
    runManifest["fingerprint"] = program.fingerprint;
  if (program.modelFingerprint)
    runManifest["model_fingerprint"] = program.modelFingerprint;
  if (!options.tensorboardDir.empty())
    TRAINC_RETURN_IF_ERROR(board.open(options.tensorboardDir));
  return openLog();
}

/// The held-out set and what watches it (--keep-best, --early-stop-patience).
void TrainRun::stagedOutputs() {
  const StagePlace &place = staged->place;
  if (!place.last()) {
    options.logPath.clear();
    options.tensorboardDir.clear();
  }
  if (!options.checkpointDir.empty())
    options.checkpointDir += "/stage" + std::to_string(place.stage);
  stagedExportPath = options.exportPath;
  stagedSaveDir = options.saveDir;
  options.exportPath.clear();
  options.saveDir.clear();
}

Status TrainRun::setUpStage() {
  if (!staged)
    return Status();
  stage = std::make_unique<PipelineStage>(train, staged->place, *staged->world,
                                          *device.context, train.arenaBytes);
  return stage->init(settings.accum);
}

/// Every stage's replica 0 sends its parameters, in its table's order, to
/// the world's rank 0 (stage 0's), which writes the model's export and
/// --save-params folder from them and its own.
Status TrainRun::writeStagedModel(const std::vector<void *> &weights) {
  const StagePlace &place = staged->place;
  Context &context = *device.context;
  // Host memory: the world's host communicator (MPI under NCCL's).
  Communicator &world = staged->world->hostRanks();
  // Above every link's tag (slot x 2 + direction), within MPI's guaranteed
  // 32767.
  constexpr int kGatherTag = 32767;
  if (!place.first()) {
    std::vector<char> host;
    for (int i = 0; i < program.numParams; ++i) {
      host.resize(program.params[i].bytes);
      TRAINC_RETURN_IF_ERROR(context.copyToHost(host.data(), weights[i], host.size()));
      int64_t request;
      TRAINC_RETURN_IF_ERROR(world.startTransfer(true, host.data(),
                                                 static_cast<int64_t>(host.size()), 0,
                                                 kGatherTag, request));
      TRAINC_RETURN_IF_ERROR(world.waitTransfer(request));
    }
    return Status();
  }
  const Program &model = *staged->model;
  std::map<std::string, std::vector<char>> gathered;
  for (int s = 1; s < model.pipeline->numStages; ++s) {
    const Program &other = *model.pipeline->stages[s];
    for (int i = 0; i < other.numParams; ++i) {
      std::vector<char> &bytes = gathered[other.params[i].tensor.name];
      bytes.resize(other.params[i].bytes);
      int64_t request;
      TRAINC_RETURN_IF_ERROR(world.startTransfer(false, bytes.data(),
                                                 static_cast<int64_t>(bytes.size()),
                                                 place.rankOf(s), kGatherTag, request));
      TRAINC_RETURN_IF_ERROR(world.waitTransfer(request));
    }
  }
  std::map<std::string, int> own;
  for (int i = 0; i < program.numParams; ++i)
    own[program.params[i].tensor.name] = i;
  auto fetch = [&](int index, void *host) {
    const ParamInfo &p = model.params[index];
    if (auto it = own.find(p.tensor.name); it != own.end())
      return context.copyToHost(host, weights[it->second], p.bytes);
    auto it = gathered.find(p.tensor.name);
    if (it == gathered.end() || it->second.size() != p.bytes)
      return Status::error(std::string("no stage holds parameter ") + p.tensor.name);
    std::memcpy(host, it->second.data(), p.bytes);
    return Status();
  };
  if (!stagedExportPath.empty())
    TRAINC_RETURN_IF_ERROR(exportTrainedModel(model, fetch, stagedExportPath));
  if (!stagedSaveDir.empty())
    TRAINC_RETURN_IF_ERROR(saveTrainedParams(model, fetch, stagedSaveDir));
  return Status();
}

Status TrainRun::setUpEvaluation() {
  if (options.evalDir.empty())
    return Status();
  TRAINC_RETURN_IF_ERROR(openEvalSet(*device.context, program, options.evalDir, data.dropLast,
                                     options.evalOutput, options.topk, options.samples,
                                     evalSet));
  // Watched always (the run's summary names the best), eval_loss unless
  // --keep-best names another metric.
  EvalMetric metric = EvalMetric::Loss;
  if (!options.keepBest.empty())
    TRAINC_RETURN_IF_ERROR(
        parseMetric("--keep-best", options.keepBest, options.topk, data.dropLast, metric));
  monitor = std::make_unique<EvalMonitor>(
      metric, options.topk,
      std::isnan(options.earlyStopMinDelta) ? 0.0 : options.earlyStopMinDelta,
      options.earlyStopPatience);
  return Status();
}

/// Batches per epoch, optimizer steps per epoch (one per group of `accum`
/// batches) and in the run.
Status TrainRun::planSteps() {
  globalBatch = batch * ranksCount;
  // Selective backprop: a batch per B candidates.
  const int64_t perBatch =
      options.select.kind != SelectOptions::Kind::None ? program.select->batch : globalBatch;
  batchesPerEpoch = data.dropLast ? data.samples / perBatch
                                  : (data.samples + perBatch - 1) / perBatch;
  stepsPerEpoch = (batchesPerEpoch + settings.accum - 1) / settings.accum;
  if (options.steps <= 0 && options.epochs > kMaxTrainSteps / stepsPerEpoch)
    return Status::error("--epochs " + std::to_string(options.epochs) + " of " +
                         std::to_string(stepsPerEpoch) + " steps each are more than the " +
                         std::to_string(kMaxTrainSteps) + " steps a run can have");
  totalSteps = options.steps > 0 ? options.steps : options.epochs * stepsPerEpoch;
  endStep = options.untilStep > 0 ? std::min(options.untilStep, totalSteps) : totalSteps;
  return checkScheduleLength(options.schedule, totalSteps);
}

Status TrainRun::setUpSampler() {
  const SamplerOptions &o = options.sampler;
  selection = std::make_unique<Selection>(device, program, data);
  TRAINC_RETURN_IF_ERROR(selection->init(options.select, o.tracePath, options.resume,
                                         options.shuffle, options.seed));
  for (const HostTensor &t : selection->checkpointTensors())
    checkpoints->addHostTensor(t.name, t.isFloat64 ? DType::F64 : DType::I64, t.count);
  if (selection->enabled() && chatty) {
    if (selection->gathers())
      std::fprintf(stderr,
                   "selective backprop: each step trains the %lld of the largest losses among "
                   "%lld candidates\n",
                   static_cast<long long>(std::isnan(options.select.fraction)
                                              ? batch
                                              : std::llround(options.select.fraction *
                                                             double(selection->batch()))),
                   static_cast<long long>(selection->batch()));
    else
      std::fprintf(stderr,
                   "selective backprop: candidates %lld at a time, each kept with probability "
                   "CDF(loss)^%g over the last %lld losses, until %lld are kept for a step\n",
                   static_cast<long long>(selection->batch()), options.select.beta,
                   static_cast<long long>(options.select.history), static_cast<long long>(batch));
  }
  TRAINC_RETURN_IF_ERROR(sampled.open(o, data.samples, batch, options.seed, options.resume));
  if (!sampled.enabled())
    return Status();
  for (const HostTensor &t : sampled.state().checkpointTensors())
    checkpoints->addHostTensor(t.name, t.isFloat64 ? DType::F64 : DType::I64, t.count);
  if (chatty)
    std::fprintf(stderr,
                 "sampler: %s, priorities (loss + %g)^%g, importance weights (N P(i))^-beta / "
                 "max with beta from %g to 1 over the run%s\n",
                 samplerName(o.kind), o.eps, o.alpha, o.beta,
                 train.sampleWeightNorm == SampleWeightNorm::Sum
                     ? "; the loss divides by the weights' sum (self-normalized; a trainer "
                       "compiled with --sample-weight-norm=mean divides by the batch size, as "
                       "prioritized experience replay)"
                     : "");
  return Status();
}

/// --async-workers N: N lanes sharing the cores (each at least one
/// thread), lane 0 in the run's arena and each other in one of its own.
Status TrainRun::setUpLanes() {
  const int workers = options.asyncWorkers;
  TRAINC_RETURN_IF_ERROR(checkAsyncWorkers(options, ranksCount, staged != nullptr,
                                           settings.accum, device.scaleState >= 0,
                                           device.gradNormState >= 0));
  int threads = 1;
#ifdef _OPENMP
  threads = std::max(1, omp_get_max_threads() / workers);
#endif
  lanes = std::make_unique<AsyncLanes>();
  TRAINC_RETURN_IF_ERROR(lanes->init(workers, threads));
  std::vector<void *> arenas{device.arena.get()};
  for (int w = 1; w < workers; ++w) {
    laneArenas.emplace_back(nullptr, DeviceFree{device.context.get()});
    TRAINC_RETURN_IF_ERROR(allocateDevice(*device.context, device.arenaBytes, laneArenas.back()));
    arenas.push_back(laneArenas.back().get());
  }
  pipeline->runOnLanes(lanes.get(), std::move(arenas));
  return Status();
}

Status TrainRun::resume() {
  if (options.checkpointDir.empty())
    return Status::error("--resume needs --checkpoint-dir");
  ResumeExpectation expect;
  expect.optimizer = name(train.optimizer);
  expect.batchSize = batch;
  expect.fingerprint = program.fingerprint;
  expect.modelFingerprint = program.modelFingerprint;
  expect.otherModel = options.resumeOtherModel;
  expect.batchesPerEpoch = batchesPerEpoch;
  expect.gradAccum = settings.accum;
  expect.totalSteps = totalSteps;
  expect.seed = options.seed;
  expect.samples = data.samples;
  expect.shuffle = options.shuffle;
  expect.averaging = average->identity();
  expect.sampler = samplerName(options.sampler.kind);
  ResumePoint point;
  TRAINC_RETURN_IF_ERROR(checkpoints->restore(options.checkpointDir, expect, point));
  if (sampled.enabled())
    TRAINC_RETURN_IF_ERROR(sampled.state().restore(checkpoints->restoredHost(), point.sampler));
  TRAINC_RETURN_IF_ERROR(selection->restore(checkpoints->restoredHost(), point.sampler));
  step = point.step;
  startEpoch = point.epoch;
  startBatch = point.batch;
  epochRng = point.rng;
  if (monitor)
    TRAINC_RETURN_IF_ERROR(monitor->restore(point.monitor, options.checkpointDir));
  std::istringstream state(epochRng);
  state >> rng; // checked by readCheckpoint
  TRAINC_RETURN_IF_ERROR(scaler->read());
  if (chatty)
    std::fprintf(stderr, "resumed from %s at step %lld (epoch %lld, batch %lld)\n",
                 options.checkpointDir.c_str(), static_cast<long long>(step),
                 static_cast<long long>(startEpoch), static_cast<long long>(startBatch));
  return Status();
}

/// A resumed run continues the log of the run it resumes, cut back to what
/// the checkpoint covers.
Status TrainRun::openLog() {
  if (options.logPath.empty())
    return Status();
  if (!options.resume)
    return log.create(options.logPath);
  LogCut cut{step, startEpoch, startBatch == batchesPerEpoch || step == totalSteps};
  // A record is under 200 bytes, one per step and per epoch of the whole
  // run (a killed run may have logged past its checkpoint); a log many
  // times longer is not ours. No overflow: totalSteps is at most 10^12.
  const uint64_t maxBytes =
      (static_cast<uint64_t>(totalSteps) + static_cast<uint64_t>(totalSteps / stepsPerEpoch) +
       2) * 1024;
  return log.resume(options.logPath, cut, maxBytes, evalLogged);
}

Status TrainRun::trainEpochs() {
  start = lastLine = std::chrono::steady_clock::now();
  recent = {{start, 0}};
  firstStep = step;
  if (options.profile.enabled && rank == 0 && !rangeTest)
    profiler = std::make_unique<StepProfiler>(program, *device.context, options.profile,
                                              step + 1, endStep);
  TRAINC_RETURN_IF_ERROR(decideEarlyStop());
  if (stoppedEarly) {
    if (chatty)
      std::fprintf(stderr, "the run stopped early at step %lld: %lld evaluations without "
                           "improving %s on step %lld's; nothing left to train\n",
                   static_cast<long long>(step),
                   static_cast<long long>(monitor->sinceBest()), monitor->name().c_str(),
                   static_cast<long long>(monitor->bestStep()));
    return Status();
  }
  for (int64_t epoch = startEpoch; step < endStep && !rangeTestEnded() && !stoppedEarly;
       ++epoch)
    TRAINC_RETURN_IF_ERROR(runEpoch(epoch));
  if (!server)
    return Status();
  // Every rank done: rank 0 ends with the server's parameters.
  TRAINC_RETURN_IF_ERROR(drain());
  TRAINC_RETURN_IF_ERROR(server->finish());
  if (chatty)
    std::fprintf(stderr, "asynchronous SGD: %d ranks over rank 0's parameter server (%lld "
                 "values); rank 0 waited %.2f s for slower ranks (--staleness-bound %s)\n",
                 ranksCount, static_cast<long long>(server->servedValues()),
                 server->secondsWaiting(),
                 options.stalenessBound > 0 ? std::to_string(options.stalenessBound).c_str()
                                            : "none");
  return Status();
}

Status TrainRun::runEpoch(int64_t epoch) {
  if (epoch != startEpoch || !options.resume) {
    std::ostringstream state;
    state << rng;
    epochRng = state.str();
  }
  // Each epoch's order depends on the RNG state alone (not on the previous
  // order), so a resumed run rebuilds it from the saved state. The epoch's
  // batches are filled ahead only once its order exists.
  std::iota(order.begin(), order.end(), 0);
  if (options.shuffle)
    std::shuffle(order.begin(), order.end(), rng);
  epochLoss = epochWeight = 0;
  epochFirstBatch = epoch == startEpoch ? startBatch : 0;
  // No overflow: at most 10^12 steps of at most 10^6 batches.
  epochLastBatch =
      std::min(batchesPerEpoch, epochFirstBatch + (endStep - step) * settings.accum);
  if (epochFirstBatch >= epochLastBatch) {
    // Resumed from the checkpoint at this epoch's end. Its evaluation
    // came before the checkpoint; it runs again only if the log lacks it (a
    // checkpoint written without --eval-data), so that the log is the
    // uninterrupted one.
    if (!options.evalDir.empty() && log.enabled() && !evalLogged)
      TRAINC_RETURN_IF_ERROR(runEval(epoch, epochFirstBatch, true));
    return Status();
  }
  epochFirstLaunch = launched;
  submitted = epochFirstBatch;
  for (int64_t b = epochFirstBatch; b < epochLastBatch && !rangeTestEnded() && !stoppedEarly;
       ++b)
    TRAINC_RETURN_IF_ERROR(runBatch(epoch, b));
  // (The epoch's summary and evaluation came with its last step: afterStep.)
  return drain();
}

TrainRun::Group TrainRun::groupOf(int64_t epoch, int64_t b) const {
  Group group;
  group.first = b / settings.accum * settings.accum;
  group.end = std::min(group.first + settings.accum, batchesPerEpoch);
  group.weight = group.globalWeight = 0;
  for (int64_t g = group.first; g < group.end; ++g) {
    group.weight += batchWeight(epoch, g, rank);
    for (int r = 0; r < ranksCount; ++r)
      group.globalWeight += batchWeight(epoch, g, r);
  }
  group.notRun = nullptr;
  if (group.globalWeight == 0 && ranksCount * batch * (group.end - group.first) > 0 &&
      std::min(group.end * globalBatch, data.samples) > group.first * globalBatch)
    group.notRun = "every sample weight is 0";
  for (int64_t g = group.first; g < group.end && !data.counted.empty(); ++g)
    for (int r = 0; r < ranksCount; ++r) {
      const int64_t count = rowsOf(g, r);
      const int64_t *rows = rowsFor(epoch, g, r);
      bool counts = count == 0; // a rank without real samples trains zero rows
      for (int64_t i = 0; i < count && !counts; ++i)
        counts = data.counted[rows[i]] != 0;
      if (!counts)
        group.notRun = "no label counts";
    }
  return group;
}

/// Batch b: its data (read ahead by the workers), the trainer's inputs and
/// the hyperparameters in its host slot, uploaded and run behind the step
/// before it.
Status TrainRun::runBatch(int64_t epoch, int64_t b) {
  // Refills the slot of step k - 2 at the latest, whose upload step k - 2
  // waited for: the host does not wait here. Batch b is the run's launch
  // (0-based) epochFirstLaunch + b - epochFirstBatch.
  // A sampler draws a group at its first batch, from the losses read back
  // by then, and its batches are not read ahead.
  if (sampled.enabled() && b % settings.accum == 0)
    TRAINC_RETURN_IF_ERROR(sampled.drawGroup(
        seqOf(epoch, b), std::min(settings.accum, batchesPerEpoch - b),
        sampled.state().betaAt(step, totalSteps)));
  if (selection->enabled()) {
    // The step's rows come from the candidates on the device (launchBatch):
    // its host slot carries zeros there, the trainer's inputs and the
    // hyperparameters.
    TRAINC_RETURN_IF_ERROR(selection->select(order.data(), b, epoch, seqOf(epoch, b)));
    // topk's rows come from the candidates on the device; prob's from the
    // files.
    submitted = selection->gathers() ? b + 1 : b;
  }
  const int64_t readAhead =
      sampled.enabled() || selection->enabled() ? 1 : pipeline->hostSlots() - 1;
  for (; submitted < std::min(b + readAhead, epochLastBatch); ++submitted) {
    int h = pipeline->hostSlotOf(epochFirstLaunch + submitted - epochFirstBatch);
    TRAINC_RETURN_IF_ERROR(pipeline->submit(h, rowsOfBatch(epoch, submitted), 0,
                                            rankCount(submitted), epoch));
  }
  const int h = pipeline->hostSlotOf(launched), d = pipeline->deviceSlotOf(launched);
  const Group group = groupOf(epoch, b);
  const bool last = b + 1 == group.end;
  if (selection->gathers())
    for (int input : data.fileIndex)
      std::memset(pipeline->input(h, input), 0, tensorBytes(train.inputs[input]));
  else if (Status filled = pipeline->waitFilled(h); !filled.ok())
    return Status::error("reading the training data for step " + std::to_string(step + 1) +
                         ": " + filled.message());
  fillTrainerInputs(h, epoch, b, group);
  if (!group.notRun)
    TRAINC_RETURN_IF_ERROR(launchBatch(h, d, b, group, last));
  pending.push_back({step + 1, epoch, rankCount(b), seqOf(epoch, b), batchWeight(epoch, b, rank),
                     settings.hyper.lr,
                     isAdam(train.optimizer) ? settings.hyper.beta1 : settings.hyper.momentum, d,
                     last, group.notRun});
  ++launched;
  if (pending.size() >= static_cast<size_t>(pipeline->deviceSlots()))
    TRAINC_RETURN_IF_ERROR(finishOldest());
  if (!last)
    return Status();
  ++step;
  return afterStep(epoch, b);
}

Status TrainRun::launchBatch(int h, int d, int64_t b, const Group &group, bool last) {
  TRAINC_RETURN_IF_ERROR(pipeline->upload(launched, h));
  if (selection->gathers())
    TRAINC_RETURN_IF_ERROR(selection->gather(pipeline->deviceInputs(d)));
  if (server)
    TRAINC_RETURN_IF_ERROR(server->pull(step + 1));
  const bool timed = profiler && profiler->covers(step + 1);
  if (timed)
    TRAINC_RETURN_IF_ERROR(profiler->beginLaunch(step + 1));
  Status ran =
      stage ? stage->run(launched, pipeline->argsOf(launched, h), last, b - group.first,
                         group.end - group.first,
                         [&](int64_t n) { return pipeline->finishLaunch(pipeline->deviceSlotOf(n)); })
            : pipeline->run(launched, h, last);
  if (timed && ran.ok())
    ran = profiler->endLaunch();
  if (!ran.ok())
    return Status::error("training step " + std::to_string(step + 1) + " failed" +
                         (settings.accum > 1 ? " (batch " + std::to_string(b - group.first + 1) +
                                                   " of its group)"
                                             : std::string()) +
                         ": " + ran.message());
  if (server)
    TRAINC_RETURN_IF_ERROR(server->push(step + 1));
  TRAINC_RETURN_IF_ERROR(pipeline->queueLossReadback(d));
  if (last) {
    TRAINC_RETURN_IF_ERROR(scaler->queueReadback(pipeline->record(d)));
    // The step's gradient norm into record[3], behind the step as its loss.
    if (device.gradNormState >= 0)
      TRAINC_RETURN_IF_ERROR(device.context->downloadAsync(
          pipeline->record(d) + 3, device.statePtrs[device.gradNormState], 4));
    // The averaged weights take the step's, behind it on the device.
    TRAINC_RETURN_IF_ERROR(average->afterStep(step + 1));
  }
  return pipeline->finishLaunch(d);
}

/// What the trainer sets in host slot h for batch b: the per-sample
/// weights, the dropout key and every hyperparameter.
void TrainRun::fillTrainerInputs(int h, int64_t epoch, int64_t b, const Group &group) {
  const int64_t count = rankCount(b);
  auto row = [&](int index) {
    return index < 0 ? nullptr : reinterpret_cast<float *>(pipeline->input(h, index));
  };
  fillSampleRows(data, rowsOfBatch(epoch, b), count, batch, row(data.weightsIndex),
                 row(data.maskIndex),
                 sampled.enabled() ? sampled.weights(seqOf(epoch, b)) : nullptr);
  if (data.keyIndex >= 0) {
    // Dropout masks are a function of the seed and the batch's number (the
    // step number without accumulation; each batch of a group its own), so
    // a resumed run draws the masks the uninterrupted run drew. Each rank
    // draws its own masks; rank 0 those of a single process.
    int64_t *key = reinterpret_cast<int64_t *>(pipeline->input(h, data.keyIndex));
    key[0] = static_cast<int64_t>(options.seed ^
                                  (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(rank)));
    key[1] = step * settings.accum + (b - group.first) + 1;
  }
  Hyperparameters &hyper = settings.hyper;
  if (rangeTest) {
    hyper.lr = rangeTest->lr(step);
  } else {
    const ScheduledStep at = averagedScheduleStep(options.averaging, options.schedule,
                                                  settings.baseLr, step, totalSteps);
    hyper.lr = at.lr;
    if (!std::isnan(at.momentum))
      (isAdam(train.optimizer) ? hyper.beta1 : hyper.momentum) = at.momentum;
  }
  for (int k = 0; k < train.numHypers; ++k)
    *pipeline->hyper(h, k) = static_cast<float>(hyper.value(train.hypers[k]));
  if (settings.weightHyper >= 0) {
    // The batch's share of the group's weight: the sum of the weighted
    // gradients is the gradient of the group's mean loss.
    *pipeline->hyper(h, settings.weightHyper) =
        group.weight > 0 ? static_cast<float>(batchWeight(epoch, b, rank) / group.weight)
                         : 1.0f / static_cast<float>(group.end - group.first);
    *pipeline->hyper(h, settings.keepHyper) = b == group.first ? 0.0f : 1.0f;
  }
  if (settings.invertHyper >= 0)
    // K-FAC inverts its factors at step 1 and every T steps after.
    *pipeline->hyper(h, settings.invertHyper) = step % settings.inverseEvery == 0 ? 1.0f : 0.0f;
  if (settings.shareHyper >= 0)
    // The rank's share of the global group's weight (1 in one process; an
    // asynchronous rank's step is its own).
    *pipeline->hyper(h, settings.shareHyper) =
        server ? (group.weight > 0 ? 1.0f : 0.0f)
        : group.globalWeight > 0 ? static_cast<float>(group.weight / group.globalWeight)
                                 : 0.0f;
}

/// After an optimizer step: at an epoch's end its summary; an evaluation
/// when due (at epochs' ends, every --eval-every steps), then a checkpoint
/// when due (so that a checkpoint's log holds the evaluation before it);
/// the end of the run when --early-stop-patience runs out, or on SIGINT or
/// SIGTERM (after a checkpoint where --checkpoint-dir asks).
Status TrainRun::afterStep(int64_t epoch, int64_t b) {
  if (profiler)
    TRAINC_RETURN_IF_ERROR(profiler->afterStep(step));
  const bool epochEnd = b + 1 == batchesPerEpoch || step == totalSteps;
  // --until-step: the pause evaluates and checkpoints as an epoch's end does.
  const bool pausing = pauses() && step == endStep;
  const bool evalDue =
      evaluates && (epochEnd || pausing || (evalEvery > 0 && step % evalEvery == 0));
  if (epochEnd && !rangeTest) {
    TRAINC_RETURN_IF_ERROR(drain());
    epochSummary(epoch);
  }
  if (evalDue) {
    // Every rank drains here, as rank 0 does before it evaluates: the
    // steps' loss sums over the ranks then come in the same order on each.
    TRAINC_RETURN_IF_ERROR(drain());
    if (server && rank == 0)
      TRAINC_RETURN_IF_ERROR(server->adopt());
    if (rank == 0)
      TRAINC_RETURN_IF_ERROR(runEval(epoch, b + 1, true));
  }
  const int stopping = ranks || staged ? 0 : stopSignal.load();
  if (stopsEarly && (epochEnd || (evalEvery > 0 && step % evalEvery == 0))) {
    // Every rank at the same point of its sums: drained, as rank 0 is for
    // its evaluation.
    TRAINC_RETURN_IF_ERROR(drain());
    TRAINC_RETURN_IF_ERROR(decideEarlyStop());
  }
  if (!options.checkpointDir.empty() &&
      (stopping || stoppedEarly || pausing ||
       (options.checkpointEvery > 0 ? step % options.checkpointEvery == 0 : epochEnd)))
    TRAINC_RETURN_IF_ERROR(saveCheckpoint(epoch, b));
  if (stoppedEarly && chatty)
    std::fprintf(stderr, "early stop after step %lld: %lld evaluations without improving %s "
                         "by more than %g (the best, %.6g, after step %lld)\n",
                 static_cast<long long>(step), static_cast<long long>(monitor->sinceBest()),
                 monitor->name().c_str(),
                 std::isnan(options.earlyStopMinDelta) ? 0.0 : options.earlyStopMinDelta,
                 monitor->bestValue(), static_cast<long long>(monitor->bestStep()));
  if (!stopping)
    return Status();
  TRAINC_RETURN_IF_ERROR(drain());
  TRAINC_RETURN_IF_ERROR(log.sync());
  return Status::error(std::string("stopped by ") + (stopping == SIGINT ? "SIGINT" : "SIGTERM") +
                       " after step " + std::to_string(step) + " of " +
                       std::to_string(totalSteps) +
                       (options.checkpointDir.empty()
                            ? "; nothing to resume from (--checkpoint-dir DIR keeps the run)"
                            : "; the checkpoint in " + options.checkpointDir +
                                  " continues it (--resume)"));
}

/// Whether --early-stop-patience has run out (`stoppedEarly`): rank 0's
/// monitor decides, and with data parallelism every rank takes its decision
/// (one sum over the ranks, at the same step on each).
Status TrainRun::decideEarlyStop() {
  if (!stopsEarly)
    return Status();
  double stop = monitor && monitor->exhausted() ? 1.0 : 0.0;
  if (ranks)
    TRAINC_RETURN_IF_ERROR(ranks->allReduceSum(&stop, 1));
  stoppedEarly = stop > 0;
  return Status();
}

/// The checkpoint after step `step` (batch b of `epoch`) in --checkpoint-dir,
/// with the best evaluation so far; under --keep-last K also as
/// DIR/step-N (hard links to the same files), the oldest beyond K removed.
/// The log holds every step the checkpoint covers. Every rank drains (its
/// loss sums pair with rank 0's); rank 0 writes.
Status TrainRun::saveCheckpoint(int64_t epoch, int64_t b) {
  TRAINC_RETURN_IF_ERROR(drain());
  if (rank != 0)
    return Status();
  if (server)
    TRAINC_RETURN_IF_ERROR(server->adopt());
  TRAINC_RETURN_IF_ERROR(log.sync());
  TRAINC_RETURN_IF_ERROR(board.sync());
  std::map<std::string, std::string> manifest = runManifest;
  if (monitor)
    monitor->save(manifest);
  std::map<std::string, std::vector<char>> host;
  if (sampled.enabled())
    sampled.state().save(host, manifest);
  selection->save(host, manifest);
  TRAINC_RETURN_IF_ERROR(checkpoints->save(options.checkpointDir, manifest,
                                           {step, epoch, b + 1, epochRng}, host));
  if (options.keepLast > 0)
    TRAINC_RETURN_IF_ERROR(
        TrainCheckpoints::keepLast(options.checkpointDir, step, options.keepLast));
  return Status();
}

/// Reads back the oldest pending step's loss: waits for that step only,
/// while the step after it runs.
Status TrainRun::finishOldest() {
  Pending p = pending.front();
  pending.pop_front();
  if (p.notRun)
    return p.last ? recordNoLabelStep(p) : Status();
  TRAINC_RETURN_IF_ERROR(pipeline->waitStep(p.slot));
  if (staged && !staged->place.last())
    return Status(); // the loss is the last stage's
  const float *record = pipeline->record(p.slot);
  // The step's loss: the mean over the group's samples.
  groupLoss += static_cast<double>(record[0]) * p.weight;
  groupWeight += p.weight;
  groupCount += p.count;
  sampleLosses.take(pipeline->sampleLosses(p.slot), p.count);
  if (sampled.enabled())
    TRAINC_RETURN_IF_ERROR(sampled.record(p.seq, pipeline->sampleLosses(p.slot)));
  if (!p.last)
    return Status();
  if (ranks && !server) {
    // The global batch's loss: every rank's weighted sum, weight and count
    // added (asynchronous ranks log their own).
    double sums[3] = {groupLoss, groupWeight, static_cast<double>(groupCount)};
    TRAINC_RETURN_IF_ERROR(ranks->allReduceSum(sums, 3));
    groupLoss = sums[0];
    groupWeight = sums[1];
    groupCount = static_cast<int64_t>(sums[2] + 0.5);
  }
  const float loss = static_cast<float>(groupWeight > 0 ? groupLoss / groupWeight : 0.0);
  SampleLossSummary::Stats sampleLossStats;
  const bool summarized = sampleLosses.finish(sampleLossStats);
  p.count = groupCount;
  groupLoss = groupWeight = 0;
  groupCount = 0;
  // Loss scaling: a step that found inf/NaN in its gradients changed
  // nothing but the scaler; its loss may be inf or NaN itself.
  bool skipped = false;
  const double ranWith = scaler->scale();
  TRAINC_RETURN_IF_ERROR(scaler->take(record, p.step, skipped));
  if (rangeTest) {
    // A diverging loss ends the test, not the run; a step the loss scaler
    // skipped changed nothing and is left out.
    if (!skipped)
      rangeTest->take(p.step, p.lr, loss);
    if (std::isfinite(loss)) {
      lineLoss += loss * p.count;
      lineWeight += p.count;
    }
    if (chatty && secondsSince(lastLine) >= progress.interval())
      progressLine(p);
    return Status();
  }
  if (!std::isfinite(loss) && !skipped)
    return Status::lossDiverged("the loss became " + std::to_string(loss) + " at step " +
                         std::to_string(p.step) + " (learning rate too high?)");
  if (std::isfinite(loss)) {
    epochLoss += loss * p.count;
    epochWeight += p.count;
    lineLoss += loss * p.count;
    lineWeight += p.count;
    lastLoss = loss;
  }
  TRAINC_RETURN_IF_ERROR(
      recordStep(p, loss, skipped, ranWith, summarized ? &sampleLossStats : nullptr, record[3]));
  if (chatty && secondsSince(lastLine) >= progress.interval())
    progressLine(p);
  return Status();
}

Status TrainRun::recordNoLabelStep(const Pending &p) {
  ++noLabelSteps;
  if (chatty && noLabelSteps <= kNoLabelNotes) {
    progress.end();
    std::fprintf(stderr, "step %lld: nothing in its batch counts (%s): the loss is 0/0, the step "
                         "is not run%s\n",
                 static_cast<long long>(p.step),
                 std::strcmp(p.notRun, "no label counts") == 0
                     ? ("every label is " + std::to_string(ignoredLabel(program)) +
                        ", the ignored label").c_str()
                     : p.notRun,
                 noLabelSteps == kNoLabelNotes ? " (further such steps: in the log)" : "");
  }
  if (rangeTest)
    return Status();
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  TrainLog::StepRecord record{p.step, p.epoch, std::nan(""), p.lr,
                              isAdam(train.optimizer) ? "beta1" : "momentum", p.momentum};
  record.skipped = true;
  record.skipReason = p.notRun;
  record.wallTime = std::chrono::duration<double>(now).count();
  return log.step(record);
}

/// A finished step in the log and the TensorBoard file: its loss, rates,
/// gradient norm (`gradNorm`, where the step keeps one), the loss scale it
/// ran with, and the samples per second over the last steps.
Status TrainRun::recordStep(const Pending &p, float loss, bool skipped, double ranWith,
                            const SampleLossSummary::Stats *sampleLossStats, double gradNorm) {
  // The window's samples over the time since the step before it was read.
  const auto now = std::chrono::steady_clock::now();
  recent.emplace_back(now, p.count);
  if (recent.size() > kRateWindow + 1)
    recent.pop_front();
  int64_t windowSamples = 0;
  for (size_t i = 1; i < recent.size(); ++i)
    windowSamples += recent[i].second;
  const double seconds = std::chrono::duration<double>(now - recent.front().first).count();
  const double wallTime =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const char *momentumName = isAdam(train.optimizer) ? "beta1" : "momentum";
  const double samplesPerSecond = seconds > 0 ? windowSamples / seconds : 0.0;
  TRAINC_RETURN_IF_ERROR(log.step({p.step, p.epoch, loss, p.lr, momentumName, p.momentum,
                                   lossScaled ? &ranWith : nullptr, skipped, wallTime,
                                   samplesPerSecond,
                                   device.gradNormState >= 0 ? &gradNorm : nullptr, nullptr,
                                   sampleLossStats}));
  if (board.enabled()) {
    std::vector<std::pair<std::string, double>> scalars = {
        {"train/lr", p.lr}, {std::string("train/") + momentumName, p.momentum},
        {"train/samples_per_s", samplesPerSecond}};
    if (std::isfinite(loss))
      scalars.push_back({"train/loss", loss});
    if (device.gradNormState >= 0 && std::isfinite(gradNorm))
      scalars.push_back({"train/grad_norm", gradNorm});
    if (lossScaled)
      scalars.push_back({"train/loss_scale", ranWith});
    TRAINC_RETURN_IF_ERROR(board.scalars(p.step, wallTime, scalars));
  }
  return Status();
}

void TrainRun::progressLine(const Pending &p) {
  double perStep = secondsSince(start) / (p.step - firstStep);
  char text[256], scaling[96] = "";
  if (lossScaled)
    std::snprintf(scaling, sizeof(scaling), ", loss scale %g (%lld steps skipped)",
                  scaler->scale(), static_cast<long long>(scaler->skippedSinceLine));
  std::snprintf(text, sizeof(text), "%sstep %lld/%lld, loss %.5f%s, %.0f samples/s, ETA %s",
                rangeTest ? "LR range test: " : "", static_cast<long long>(p.step),
                static_cast<long long>(totalSteps), lineLoss / std::max(lineWeight, 1.0),
                scaling, globalBatch * settings.accum / perStep,
                clockText(perStep * (totalSteps - p.step)).c_str());
  progress.show(text);
  lastLine = std::chrono::steady_clock::now();
  lineLoss = lineWeight = 0;
  scaler->skippedSinceLine = 0;
}

Status TrainRun::drain() {
  while (!pending.empty())
    TRAINC_RETURN_IF_ERROR(finishOldest());
  return Status();
}

void TrainRun::epochSummary(int64_t epoch) {
  lastEpochLoss = epochWeight > 0 ? epochLoss / epochWeight : std::nan("");
  if (!chatty)
    return;
  progress.end();
  double seconds = secondsSince(start);
  std::fprintf(stderr, "epoch %lld: step %lld/%lld, train loss %.5f, %.0f samples/s\n",
               static_cast<long long>(epoch), static_cast<long long>(step),
               static_cast<long long>(totalSteps), epochLoss / std::max(epochWeight, 1.0),
               seconds > 0 ? launched * globalBatch / seconds : 0.0);
  if (lossScaled)
    std::fprintf(stderr, "epoch %lld: loss scale %g, %lld steps skipped in this run, %.0f "
                         "in all\n",
                 static_cast<long long>(epoch), scaler->scale(),
                 static_cast<long long>(scaler->skippedInRun), scaler->skippedTotal());
}

/// The held-out metrics (model.eval()) after the current step, on stderr
/// and, when `logged`, in the log; with --keep-best a new best is saved as
/// DIR/best.
Status TrainRun::runEval(int64_t epoch, int64_t nextBatch, bool logged) {
  const bool averaged = options.averaging.evalAveraged && average->holdsUpdates();
  const std::vector<void *> *weights = &device.paramPtrs;
  if (averaged)
    TRAINC_RETURN_IF_ERROR(averagedWeights(weights));
  TRAINC_RETURN_IF_ERROR(evaluate(*device.context, program, evalSet, *weights,
                                  static_cast<char *>(device.arena.get()), lastEval));
  const std::string which =
      averaged ? std::string(" of the ") + average->name() + " weights" : std::string();
  evaluated = true;
  progress.end();
  char topk[64] = "";
  if (evalSet.topk > 0)
    std::snprintf(topk, sizeof(topk), ", top-%d accuracy %.2f%%", evalSet.topk,
                  100.0 * lastEval.topk);
  if (evalSet.modelLoss)
    std::fprintf(stderr, "epoch %lld: eval on %lld samples (full batches), loss %.5f\n",
                 static_cast<long long>(epoch), static_cast<long long>(evalSet.evaluated),
                 lastEval.loss);
  else
    std::fprintf(stderr, "epoch %lld: eval%s on %lld samples after step %lld, loss %.5f, "
                         "accuracy %.2f%%%s\n",
                 static_cast<long long>(epoch), which.c_str(),
                 static_cast<long long>(evalSet.samples),
                 static_cast<long long>(step), lastEval.loss, 100.0 * lastEval.accuracy, topk);
  if (logged) {
    TRAINC_RETURN_IF_ERROR(log.eval(step, epoch, lastEval.loss, lastEval.accuracy,
                                    evalSet.topk, lastEval.topk));
    std::vector<std::pair<std::string, double>> scalars;
    for (auto [tag, value] : {std::pair<std::string, double>{"eval/loss", lastEval.loss},
                              {"eval/accuracy", lastEval.accuracy},
                              {"eval/top" + std::to_string(evalSet.topk), lastEval.topk}})
      if (std::isfinite(value))
        scalars.push_back({tag, value});
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    TRAINC_RETURN_IF_ERROR(board.scalars(step, now, scalars));
  }
  if (!monitor || !logged || !monitor->take(lastEval, step, epoch) ||
      options.keepBest.empty() || rank != 0)
    return Status();
  std::map<std::string, std::string> manifest = runManifest;
  monitor->save(manifest);
  return checkpoints->save(options.checkpointDir + "/best", manifest,
                           {step, epoch, nextBatch, epochRng});
}

Status TrainRun::averagedWeights(const std::vector<void *> *&weights) {
  weights = &average->params();
  if (options.averaging.kind() != AveragingKind::Swa || !hasRunningStatistics(program) ||
      statisticsAt == average->updates())
    return Status();
  // The step's hyperparameters as a group's first batch has them.
  std::vector<float> hypers(train.numHypers);
  for (int k = 0; k < train.numHypers; ++k)
    hypers[k] = static_cast<float>(settings.hyper.value(train.hypers[k]));
  for (int k : {settings.weightHyper, settings.shareHyper})
    if (k >= 0)
      hypers[k] = 1.0f;
  if (settings.keepHyper >= 0)
    hypers[settings.keepHyper] = 0.0f;
  const auto began = std::chrono::steady_clock::now();
  TRAINC_RETURN_IF_ERROR(updateBatchNormStatistics(program, device, data, batch, hypers,
                                                   options.seed, average->params()));
  statisticsAt = average->updates();
  progress.end();
  if (chatty)
    std::fprintf(stderr, "update_bn: the SWA weights' batch-norm statistics over %lld "
                         "training samples (%.2f s)\n",
                 static_cast<long long>(data.samples), secondsSince(began));
  return Status();
}

/// The run in one line at its end: its steps and time, the last losses and
/// the best evaluation.
void TrainRun::runSummary() {
  progress.end();
  const double seconds = secondsSince(start);
  std::string line = "run: " + std::to_string(step - firstStep) + " steps in " +
                     clockText(seconds);
  char text[256];
  if (seconds > 0 && launched > 0) {
    std::snprintf(text, sizeof(text), " (%.0f samples/s)", launched * globalBatch / seconds);
    line += text;
  }
  if (!std::isnan(lastLoss)) {
    std::snprintf(text, sizeof(text), "; the last step's loss %.5g", lastLoss);
    line += text;
    if (!std::isnan(lastEpochLoss)) {
      std::snprintf(text, sizeof(text), ", the last epoch's mean %.5g", lastEpochLoss);
      line += text;
    }
  }
  if (monitor && monitor->any()) {
    std::snprintf(text, sizeof(text), "; best %s %.6g after step %lld (epoch %lld)",
                  monitor->name().c_str(), monitor->bestValue(),
                  static_cast<long long>(monitor->bestStep()),
                  static_cast<long long>(monitor->bestEpoch()));
    line += text;
    if (!options.keepBest.empty())
      line += ", its checkpoint in " + options.checkpointDir + "/best";
  }
  std::fprintf(stderr, "%s\n", line.c_str());
  if (pauses() && step == endStep)
    std::fprintf(stderr, "paused after step %lld of %lld (--until-step); --resume continues "
                         "from %s\n",
                 static_cast<long long>(step), static_cast<long long>(totalSteps),
                 options.checkpointDir.c_str());
}

/// `waitedForSums`: the seconds the steps waited for the buckets' sums
/// (Context::secondsWaitingForSums), and whether they overlapped the
/// steps.
Status TrainRun::finish(double &waitedForSums, bool &overlappedSums) {
  if (!options.evalDir.empty()) {
    // A resumed run that had nothing left to train still reports.
    if (!evaluated)
      TRAINC_RETURN_IF_ERROR(runEval(startEpoch, startBatch, !evalLogged));
    if (evalSet.modelLoss)
      std::printf("eval loss %.6f\n", lastEval.loss);
    else
      std::printf("accuracy %.4f\n", lastEval.accuracy);
  }
  if (chatty)
    runSummary();
  if (profiler)
    TRAINC_RETURN_IF_ERROR(profiler->finish());
  TRAINC_RETURN_IF_ERROR(log.sync());
  TRAINC_RETURN_IF_ERROR(board.sync());
  Context &context = *device.context;
  waitedForSums = context.secondsWaitingForSums();
  overlappedSums = context.overlapsSums();
  if (options.reportMemory) {
    TRAINC_RETURN_IF_ERROR(reportArenaUse(device));
    if (average->enabled())
      std::printf("averaged weights (%s): %llu bytes\n", average->name(),
                  static_cast<unsigned long long>(average->bytes()));
  }
  saveAlgorithmChoices(device);
  if (stage) {
    TRAINC_RETURN_IF_ERROR(stage->drain());
    std::fprintf(stderr, "pipeline stage %d of %d (rank %d): waited %.2f s of %.2f s for the "
                 "neighbouring stages' tensors\n",
                 staged->place.stage, staged->place.stages, staged->world->rank(),
                 stage->secondsWaiting(), secondsSince(start));
  }
  if (options.exportPath.empty() && options.saveDir.empty() && stagedExportPath.empty() &&
      stagedSaveDir.empty())
    return Status();
  // What the run trained for: the averaged weights where it keeps them.
  const std::vector<void *> *weights = &device.paramPtrs;
  if (average->enabled() && average->holdsUpdates()) {
    TRAINC_RETURN_IF_ERROR(averagedWeights(weights));
    std::fprintf(stderr, "writing the %s weights (%lld updates)\n", average->name(),
                 static_cast<long long>(average->updates()));
  } else if (average->enabled()) {
    std::fprintf(stderr, "note: the run ended before --swa-start took a step; writing the "
                         "trained weights\n");
  }
  if (staged)
    return writeStagedModel(*weights);
  if (!options.exportPath.empty())
    TRAINC_RETURN_IF_ERROR(exportTrainedModel(context, program, *weights, options.exportPath));
  if (!options.saveDir.empty())
    TRAINC_RETURN_IF_ERROR(saveTrainedParams(context, program, *weights, options.saveDir));
  return Status();
}

} // namespace

/// The range test's result on stderr: its steps, why it ended, both rates
/// and where the curve is (`files`).
static void reportRangeTest(const LrRangeTest &finder, const LrRangeTest::Suggestion &suggestion,
                            const RangeTestOptions &options, double seconds,
                            const std::string &files) {
  std::fprintf(stderr,
               "LR range test: %zu of %lld steps (%s) in %.1f s; suggested lr %.4g (the lowest "
               "smoothed loss, at lr %.4g in step %lld, / 10); steepest descent at lr %.4g "
               "(step %lld); the curve is in %s\n",
               finder.points().size(), static_cast<long long>(options.steps),
               finder.endReason() == "diverged" ? "stopped: the loss diverged" : "all of them",
               seconds, suggestion.suggested, suggestion.minimum * 10,
               static_cast<long long>(suggestion.lowestStep), suggestion.steepest,
               static_cast<long long>(suggestion.steepestStep), files.c_str());
}

/// --find-lr: the range test, as a run of its own from the initial weights
/// with the run's data, seed and hyperparameters (the momentum or beta1 that
/// training has at its peak rate where the schedule cycles it), and no
/// output but its curve. `suggested`: the rate it suggests.
static Status findLearningRate(const Program &program, const TrainOptions &options,
                               Communicator *ranks, double &suggested) {
  TrainOptions test = options;
  test.epochs = 0;
  test.steps = options.rangeTest.steps;
  test.lr = options.rangeTest.minLr;
  test.schedule = LrSchedule{};
  if (const double momentum = momentumAtPeak(options.schedule); !std::isnan(momentum))
    (isAdam(program.train->optimizer) ? test.beta1 : test.momentum) = momentum;
  test.evalDir.clear();
  test.logPath.clear();
  test.tensorboardDir.clear();
  test.exportPath.clear();
  test.saveDir.clear();
  test.checkpointDir.clear();
  test.resume = test.reportMemory = false;
  test.averaging = AveragingOptions{};
  const bool writes = !ranks || ranks->rank() == 0;
  const std::string curve = options.rangeTest.outPrefix + ".jsonl",
                    plot = options.rangeTest.outPrefix + ".png";
  if (writes) {
    TRAINC_RETURN_IF_ERROR(checkReplaceable(curve, "--find-lr-out"));
    TRAINC_RETURN_IF_ERROR(checkReplaceable(plot, "--find-lr-out"));
    const std::string folder = std::filesystem::path(curve).parent_path().string();
    std::error_code error;
    if (!std::filesystem::is_directory(folder.empty() ? "." : folder, error))
      return Status::error("--find-lr-out: " + folder + " is not a folder");
  }
  LrRangeTest finder(options.rangeTest);
  const auto began = std::chrono::steady_clock::now();
  {
    TrainRun run(program, test, ranks, &finder);
    TRAINC_RETURN_IF_ERROR(run.setUp());
    TRAINC_RETURN_IF_ERROR(run.trainEpochs());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  LrRangeTest::Suggestion suggestion;
  Status suggestedOk = finder.suggest(suggestion);
  suggested = suggestion.suggested;
  if (!writes)
    return suggestedOk;
  // The curve is written even when no rate could be suggested: it shows why.
  const std::string lines = finder.jsonLines(suggestion);
  TRAINC_RETURN_IF_ERROR(writeFileAtomically(curve, "--find-lr-out", lines.data(), lines.size()));
  Status drawn = drawCurves({curve, "-o", plot, "--title", "LR range test of " +
                                                              std::string(program.modelName
                                                                              ? program.modelName
                                                                              : "the model")});
  if (!drawn.ok())
    std::fprintf(stderr, "warning: %s was not drawn: %s\n", plot.c_str(),
                 drawn.message().c_str());
  TRAINC_RETURN_IF_ERROR(suggestedOk);
  reportRangeTest(finder, suggestion, options.rangeTest, seconds,
                  drawn.ok() ? curve + " and " + plot : curve);
  return Status();
}

/// What a pipeline-parallel run cannot do yet: whatever needs the whole
/// model's forward in one place, or every stage's losses.
static Status checkPipelineRun(const Program &program, const TrainOptions &options) {
  const char *refused = !options.evalDir.empty()              ? "--eval-data"
                        : options.findLr                      ? "--find-lr"
                        : options.sampler.kind != SamplerKind::Uniform ? "--sampler"
                        : options.select.kind != SelectOptions::Kind::None ? "--select"
                        : options.averaging.kind() != AveragingKind::None
                            ? "--ema-decay and --swa-start"
                        : options.gradAccum > 0                ? "--grad-accum"
                        : options.asyncRanks                   ? "--async"
                                                               : nullptr;
  if (refused)
    return Status::error(std::string(refused) + " with a pipeline-parallel trainer (" +
                         std::to_string(program.pipeline->numStages) +
                         " stages): not supported" +
                         (options.gradAccum > 0 ? "; its micro-batches are --micro-batches"
                                                : std::string()));
  return Status();
}

static Status runPipelineTraining(const Program &program, const TrainOptions &givenOptions) {
  const Pipeline &pipe = *program.pipeline;
  TRAINC_RETURN_IF_ERROR(checkPipelineRun(program, givenOptions));
  TrainOptions options = givenOptions;
  options.gradAccum = options.microBatches;
  // On the CPU target one thread at a time talks to MPI: the replicas' sums
  // run in the step's order, between the stages' transfers.
  if (program.target && std::strcmp(program.target, "cpu") == 0) {
    if (options.commOverlap == CommOverlap::On)
      return Status::error("--comm-overlap on with a pipeline-parallel trainer on the CPU: "
                           "the stages' transfers and the replicas' sums share MPI's one "
                           "thread; the sums run in the step's order");
    options.commOverlap = CommOverlap::Off;
  }
  TRAINC_RETURN_IF_ERROR(checkOutputTargets(program, givenOptions));
  const int launched = launchOf().ranks;
  if (launched < pipe.numStages || launched % pipe.numStages != 0)
    return Status::error("this trainer is cut into " + std::to_string(pipe.numStages) +
                         " pipeline stages: run it under mpirun with a multiple of " +
                         std::to_string(pipe.numStages) + " processes (stages x replicas), "
                         "started as " + std::to_string(std::max(launched, 1)));
  const TrainStep &first = *pipe.stages[0]->train;
  if (options.microBatches > 1 && !first.accumulate)
    return Status::error("--micro-batches " + std::to_string(options.microBatches) +
                         ": this pipeline trainer was compiled with --micro-batches=1; compile "
                         "with --micro-batches=M (any M above 1 serves every count)");
  if (!first.createCommunicator)
    return Status::error(std::string("this pipeline-parallel trainer's target (") +
                         (program.target ? program.target : "?") +
                         ") cannot send between processes yet");
  std::unique_ptr<Communicator> world;
  TRAINC_RETURN_IF_ERROR(first.createCommunicator(world));
  world->setTimeout(options.commTimeout);
  StagePlace place;
  place.stages = pipe.numStages;
  place.replicas = world->size() / pipe.numStages;
  place.stage = world->rank() / place.replicas;
  place.replica = world->rank() % place.replicas;
  Status trained;
  {
    std::unique_ptr<Communicator> replicas;
    if (place.replicas > 1)
      trained = world->split(place.stage, place.replica, replicas);
    const Program view = stageView(program, *pipe.stages[place.stage]);
    StagedRun staged{place, world.get(), &program,
                     stageView(program, *pipe.stages[pipe.numStages - 1])};
    if (trained.ok() && place.replicas > 1 && !view.train->createCommunicator)
      trained = Status::error("this pipeline-parallel trainer was compiled without "
                              "--data-parallel: its stages cannot have replicas");
    if (trained.ok()) {
      // As under data parallelism, a signal ends the run through mpirun:
      // the stages could not agree on the step to stop after.
      TrainRun run(view, options, replicas.get(), nullptr, &staged);
      trained = run.setUp();
      if (trained.ok())
        trained = run.trainEpochs();
      double waited = 0;
      bool overlapped = false;
      if (trained.ok())
        trained = run.finish(waited, overlapped);
    }
    if (trained.ok() && replicas)
      trained = replicas->finish();
  }
  if (!trained.ok()) {
    std::fprintf(stderr, "rank %d of %d (pipeline stage %d): error: %s\n", world->rank(),
                 world->size(), place.stage, trained.message().c_str());
    return trained;
  }
  return world->finish();
}

static Status trainOnRanks(const Program &program, const TrainOptions &options,
                           Communicator *ranks, double &waitedForSums, bool &overlappedSums) {
  TrainOptions trained = options;
  if (options.findLr) {
    double suggested = 0;
    TRAINC_RETURN_IF_ERROR(findLearningRate(program, options, ranks, suggested));
    if (!options.lrAuto) {
      if (!ranks || ranks->rank() == 0)
        std::printf("suggested lr %.17g\n", suggested);
      return Status();
    }
    trained.lr = suggested;
  }
  TrainRun run(program, trained, ranks);
  TRAINC_RETURN_IF_ERROR(run.setUp());
  TRAINC_RETURN_IF_ERROR(run.trainEpochs());
  return run.finish(waitedForSums, overlappedSums);
}

} // namespace trainc::rt::detail
