//===- program.h - what generated code tells the runtime -------*- C++ -*-===//
//
// The generated code describes the model (inputs, outputs, parameters with
// their initial values, the arena size) and its step functions; the runtime
// owns everything generic: devices, data loading, the command line.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_PROGRAM_H
#define TRAINC_RT_PROGRAM_H

#include "trainc_rt/abi.h"
#include "trainc_rt/status.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace trainc::rt {

/// Element types; the numbering is part of the generated-code ABI.
/// U8 is a file type only (uint8 images, converted to f32 as they are read).
enum class DType : int32_t { F32 = 0, F16 = 1, BF16 = 2, F64 = 3, I64 = 4, I32 = 5, I1 = 6, U8 = 7 };

/// Bytes per element (i1 is stored as one byte).
size_t dtypeSize(DType type);
const char *dtypeName(DType type);

/// The index of the first of `count` elements of `type` at `data` that is
/// NaN or infinite (f32, f64, f16, bf16), or -1 (also for integer types).
int64_t firstNonFinite(DType type, const void *data, int64_t count);

inline constexpr int kMaxRank = 8;

struct TensorInfo {
  const char *name;
  DType dtype;
  int rank;
  int64_t shape[kMaxRank];
  /// Step inputs only (the other tables: Data). The runtime decides what
  /// fills an input by its role (abi.h), never by its name.
  InputRole role;
  /// Inputs only: an integer input whose values index the rows of a table
  /// (an embedding's token ids) may hold values in [0, indexLimit), as
  /// PyTorch's nn.Embedding allows; `indexNode` names the ONNX node that
  /// reads the table. 0 and null: no such limit.
  int64_t indexLimit;
  const char *indexNode;
};

struct ParamInfo {
  TensorInfo tensor;
  /// Byte range of the initial value in Program::paramBlob.
  uint64_t blobOffset;
  uint64_t bytes;
  bool trainable;
  /// A constant of the computation (not a model parameter): uploaded like a
  /// parameter, never trained or exported.
  bool constant;
  /// In trainc compile's --no-decay group: the optimizer gives it no weight
  /// decay (and, under LAMB and LARS, no layer adaptation).
  bool noDecay;
  /// A running statistic (mean or variance) of a batch normalization: the
  /// ONNX node that keeps it, null for anything else; and the node's
  /// momentum (running = momentum * running + (1 - momentum) * batch).
  const char *statisticOf = nullptr;
  float statisticMomentum = 0;
};

/// An optimizer state tensor of the training step.
struct StateInfo {
  /// Its name (that of its checkpoint entry), shape and dtype.
  TensorInfo tensor;
  StateRole role;
  /// Its value before the first step (every element): 0 but for the
  /// dynamic loss scale, which starts at kInitialLossScale.
  float init;
};

class Context;
class Communicator;

/// Device pointers handed to a step function.
struct ForwardArgs {
  void *const *inputs;
  void *const *outputs;
  void *const *params;
  /// The planned arena (Program::arenaBytes, 256-byte aligned).
  char *arena;
};

/// Device pointers handed to a training step. The step reads the inputs
/// (data, labels, per-sample weights), the hyperparameters (device f32
/// scalars) and the parameters and optimizer state, and writes the loss, the
/// updated parameters and the updated state in place.
struct TrainArgs {
  void *const *inputs;
  void *const *hypers;
  void *const *params;
  void *const *states;
  /// One f32: the batch's loss.
  void *loss;
  /// TrainStep::sampleLosses f32: each sample's loss, before the weights
  /// (null where the step has none).
  void *sampleLosses;
  char *arena;
  /// Host copies of the hyperparameters (as `hypers`), for what a library
  /// call takes on the host: a GEMM that accumulates a gradient takes
  /// GradAccumWeight and GradAccumKeep as its alpha and beta.
  const float *const *hostHypers;
  /// A pipeline stage: where each of TrainStep::links lives, which the
  /// step's links function writes (null elsewhere).
  void **links = nullptr;
};

/// Pipeline parallelism: one tensor a stage's step sends to or receives
/// from a neighbouring stage (the IR's tc.send and tc.recv), in the order
/// the step issues them. The step reads a received tensor and leaves a sent
/// one in place: the trainer moves them, at the device pointers the links
/// function gives, between the step's parts.
struct PipelineLink {
  /// What crosses the boundary (the ONNX tensor's node).
  const char *tensor;
  /// Sent (or received); a gradient going back (or an activation going on).
  bool send;
  bool gradient;
  /// The other stage, and the tensor's number among those that cross
  /// between the two stages in its direction.
  int peer;
  int slot;
  DType dtype;
  uint64_t bytes;
};

/// The training step. Generated code fills it with designated initializers
/// (C++20), so every field is named where it is set and a field moved here
/// is a compile error there, not a silently shifted value.
struct TrainStep {
  Optimizer optimizer;
  /// The compiled --clip-grad-norm, the default of the MaxGradNorm
  /// hyperparameter; 0 when the step does not clip.
  double clipGradNorm;
  /// --loss=cross-entropy: the label that adds nothing (--ignore-index,
  /// PyTorch's -100 by default); the trainer accepts it among the class
  /// labels and evaluation leaves it out.
  int64_t ignoreIndex = -100;
  /// How the loss normalizes the sample weights (trainc compile
  /// --sample-weight-norm).
  SampleWeightNorm sampleWeightNorm = SampleWeightNorm::Sum;
  /// The samples of a batch whose losses the step writes to
  /// TrainArgs::sampleLosses (the batch size; 0 where the model computes its
  /// own loss): PyTorch's reduction='none' loss of each sample, averaged
  /// over its positions, before the sample weights.
  int64_t sampleLosses = 0;
  /// Inputs of the step: the model inputs, then the label and the per-sample
  /// weights, by name.
  int numInputs;
  const TensorInfo *inputs;
  /// The hyperparameters, in TrainArgs::hypers order.
  int numHypers;
  const Hyper *hypers;
  /// Optimizer state tensors, each at its StateInfo::init at the first step.
  int numStates;
  const StateInfo *states;
  uint64_t arenaBytes;
  Status (*step)(Context &context, const TrainArgs &args);
  /// Kernels one step launches: generated (kernel groups, data movement,
  /// optimizer updates) and calls into the runtime (GEMM, convolution,
  /// normalization, reductions, losses).
  int generatedKernels;
  int libraryCalls;
  /// The mixed precision the step computes in (trainc compile --precision;
  /// parameters and optimizer state are f32).
  Precision precision;
  /// Loss scaling (fp16). The scaler keeps its state in the f32 scalar
  /// states of roles LossScale, LossScaleGrowthTracker (dynamic) and
  /// LossScaleSkippedSteps, and a dynamic one reads the hyperparameter
  /// ScaleGrowthInterval. A fixed scale is `fixedLossScale`.
  LossScaling lossScaling;
  double fixedLossScale;
  /// Gradient accumulation (trainc compile --grad-accum): the step run on
  /// every micro-batch of a group but the last (forward, backward, each
  /// gradient folded into its f32 state of role GradAccum, no update),
  /// or null. Both steps read the hyperparameters GradAccumWeight (the
  /// micro-batch's real samples over the group's) and GradAccumKeep (0 on a
  /// group's first micro-batch, else 1); `step` then updates from the
  /// accumulated gradients. The functions serve any number of micro-batches.
  Status (*accumulate)(Context &context, const TrainArgs &args);
  /// The default micro-batches per optimizer step (1 without accumulate).
  int64_t gradAccum;
  /// Kernels one accumulate step launches (as generatedKernels, libraryCalls).
  int accumulateGeneratedKernels;
  int accumulateLibraryCalls;
  /// Convolution, pooling and batch-norm calls of one step that run
  /// channels-last (trainc compile --layout=nhwc; 0 in NCHW).
  int channelsLastOps = 0;
  /// The indices (into hypers) of the hyperparameters that `step` or
  /// `accumulate` reads on the host, from TrainArgs::hostHypers (the scales
  /// of a GEMM that accumulates a gradient): a step recorded as a CUDA
  /// graph holds their values, so the trainer keeps one graph per value.
  int numHostReadHypers = 0;
  const int *hostReadHypers = nullptr;
  /// The pad phase (trainc compile --pad-to): the multiple (0: not run),
  /// what it padded (one line per ONNX node and dimension, '\n' after
  /// each) and the bytes its pads and crops write per step.
  int padTo = 0;
  const char *padding = nullptr;
  uint64_t paddingCopyBytes = 0;
  /// trainc compile --data-parallel: the buckets of gradients the step
  /// combines over the processes (0: not data-parallel).
  int dataParallelBuckets = 0;
  /// The target's communicator for runs under mpirun (null: none yet).
  Status (*createCommunicator)(std::unique_ptr<Communicator> &communicator) = nullptr;
  /// A pipeline stage (Program::pipeline): what its steps send and receive;
  /// `step` and `accumulate` run up to their first received gradient (the
  /// forward, sends included), `stepBackward` and `accumulateBackward` the
  /// rest (null in the last stage, whose steps receive no gradient); the
  /// links functions write TrainArgs::links without running anything.
  int numLinks = 0;
  const PipelineLink *links = nullptr;
  Status (*stepLinks)(Context &context, const TrainArgs &args) = nullptr;
  Status (*stepBackward)(Context &context, const TrainArgs &args) = nullptr;
  Status (*accumulateLinks)(Context &context, const TrainArgs &args) = nullptr;
  Status (*accumulateBackward)(Context &context, const TrainArgs &args) = nullptr;
};

/// One piece of the exported file: the next `segmentBytes` bytes of
/// ExportInfo::segments, then the trained bytes of Program::params[param]
/// (`paramBytes` of them, its ParamInfo::bytes); param is -1 in the last
/// piece, which ends the file.
struct ExportPiece {
  uint64_t segmentBytes;
  int32_t param;
  uint64_t paramBytes;
};

/// The ONNX model --export writes (the inference graph), without its
/// parameter data: the bytes between parameters, concatenated, and the
/// pieces that interleave them with the parameters in file order. Every
/// parameter that is not a constant appears in exactly one piece.
struct ExportInfo {
  const unsigned char *segments;
  uint64_t segmentsBytes;
  int numPieces;
  const ExportPiece *pieces;
};

/// trainc compile --select-batch: the forward and each sample's loss over
/// `batch` candidates (model.train()'s batch statistics, dropout inactive,
/// nothing kept for a backward), from which the trainer's --select picks the
/// samples a training step trains.
struct SelectStep {
  int64_t batch;
  /// Its inputs: the step's (data, label, sample weights and mask) at
  /// `batch` rows, by role.
  int numInputs;
  const TensorInfo *inputs;
  uint64_t arenaBytes;
  /// ForwardArgs::outputs: the loss (one f32), then the per-sample losses
  /// (`batch` f32).
  Status (*run)(Context &context, const ForwardArgs &args);
  int generatedKernels;
  int libraryCalls;
};

/// One call of a step function, a generated kernel or a runtime call, as
/// --profile reports it: the generated TRAINC_CALL(ctx, id, ...) is
/// Program::calls[id].
struct ProfiledCall {
  /// The generated kernel ("k03_gemm_relu") or runtime function
  /// ("tk::conv2d").
  const char *kernel;
  /// The IR op it computes ("tc.conv", "tc.fused gemm_relu").
  const char *op;
  /// The ONNX nodes it computes, each quoted, comma-separated (may be "").
  const char *nodes;
  /// The function it is in: "forward", "train_step", "accumulate_step",
  /// "select".
  const char *function;
  StepPart part;
  /// A contraction's floating-point operations (2 per multiply-add), else
  /// 0; and the bytes of its tensor operands and results.
  double flops;
  double bytes;
};

struct Program;

/// trainc compile --pipeline-stages: the model's training step cut into
/// stages, each a program of its own (its parameters, training step and
/// arena; no forward), run one per rank under mpirun, stage-major.
struct Pipeline {
  int numStages;
  const Program *const *stages;
  /// The micro-batches of one optimizer step (trainc compile
  /// --micro-batches), the trainer's default.
  int64_t microBatches;
  /// Each stage's estimated time per micro-batch (forward and backward, at
  /// the compiler's reference rates), which balanced the cuts.
  const double *stageSeconds = nullptr;
};

struct Program {
  const char *modelName;
  /// "cpu" or "cuda".
  const char *target;
  int64_t batchSize;
  int numInputs;
  const TensorInfo *inputs;
  int numOutputs;
  const TensorInfo *outputs;
  int numParams;
  const ParamInfo *params;
  const unsigned char *paramBlob;
  uint64_t paramBlobBytes;
  uint64_t arenaBytes;
  /// Runs the forward pass of one batch (inference semantics).
  Status (*forward)(Context &context, const ForwardArgs &args);
  /// The training step, or null for a prediction-only program.
  const TrainStep *train;
  /// What --export writes, or null.
  const ExportInfo *exportInfo;
  /// A hash of what the compiler built (the final IR of every function with
  /// parameter names, shapes and dtypes, the optimizer, the batch size and the
  /// precision), as 16 hex digits: --info shows it, and cuDNN's kept
  /// algorithm choices are keyed by it (checkpoints: modelFingerprint).
  const char *fingerprint;
  /// Kernels one forward pass launches (as TrainStep's).
  int generatedKernels;
  int libraryCalls;
  /// A hash of the model as imported, before any phase (16 hex digits), or
  /// null: a checkpoint records it, and --resume accepts a checkpoint of the
  /// same model from any program built from it (other speed flags, target or
  /// thread count), since the tensors it holds are checked one by one.
  const char *modelFingerprint;
  /// The selection entry (trainc compile --select-batch), or null.
  const SelectStep *select = nullptr;
  /// The stages of a pipeline-parallel trainer, or null. This program is
  /// then the whole model's prediction program (forward, every parameter,
  /// the export); `train` is null.
  const Pipeline *pipeline = nullptr;
  /// Every call of every step function, by the id TRAINC_CALL gives it.
  int numCalls = 0;
  const ProfiledCall *calls = nullptr;
};

/// The trainer's main: parses the command line (--predict --data DIR --out DIR,
/// ...) and runs the program. Returns the process exit code.
int programMain(int argc, char **argv, const Program &program);

/// What the generated main() runs first, before programMain: on the CPU
/// target the process runs itself again with OPENBLAS_NUM_THREADS=1 and,
/// unless the user chose an OpenMP wait policy, a GOMP_SPINCOUNT chosen by
/// how busy the machine is (libgomp and OpenBLAS read them only when they
/// are loaded; common/ProcessWaits.h). Returns only if nothing needs to
/// change or the program cannot run itself again.
void prepareProcess(int argc, char **argv);

} // namespace trainc::rt

#endif // TRAINC_RT_PROGRAM_H
