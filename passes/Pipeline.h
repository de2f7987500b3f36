//===- Pipeline.h - the phases of trainc compile ---------------*- C++ -*-===//

#ifndef TRAINC_PASSES_PIPELINE_H
#define TRAINC_PASSES_PIPELINE_H

#include "passes/Options.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace trainc {

/// A byte count as flags take it: an integer, or a number with a unit
/// (KiB, MiB, GiB, TiB: powers of 1024; KB, MB, GB, TB: of 1000; B),
/// e.g. 2GiB or 1.5GB. None when malformed, not positive or beyond 2^62.
std::optional<int64_t> parseByteSize(llvm::StringRef text);

/// Names of the phases after import, in order (DESIGN.md "Phases").
std::vector<std::string> pipelinePhases();
/// Those of them that belong to a training build only (they need --loss).
std::vector<std::string> trainingPhases();

struct PipelineOptions {
  /// The loss to attach; none: prediction only, without the training
  /// phases.
  std::optional<LossKind> loss;
  std::string label = "label";
  /// cross-entropy: the class axis of the logits (negative from the end).
  int64_t classAxis = 1;
  /// Parameters whose name this regular expression matches are not trained.
  std::string freeze;
  /// When positive: clip the global gradient norm (the default max norm).
  double clipGradNorm = 0.0;
  /// When positive: clamp each gradient element to [-X, X].
  double clipGradValue = 0.0;
  /// Keep the global gradient norm for the log (clipping keeps it anyway).
  bool gradNorm = false;
  /// cross-entropy: label smoothing, a weight per class (empty: none) and
  /// the label that is ignored.
  double labelSmoothing = 0.0;
  std::vector<double> classWeights;
  int64_t ignoreIndex = -100;
  /// What divides the weighted sum of the per-sample losses
  /// (--sample-weight-norm).
  rt::SampleWeightNorm sampleWeightNorm = rt::SampleWeightNorm::Sum;
  /// The optimizer phase runs when set; without it @train_step returns
  /// gradients.
  std::optional<rt::Optimizer> optimizer;
  bool nesterov = false;
  /// The parameters without weight decay: 1d, none, a regular expression,
  /// or auto (the optimizer's default; see trainc-optimizer).
  std::string noDecay = "auto";
  /// The mixed-precision phase's low type (fp32: the phase is left out).
  rt::Precision precision = rt::Precision::Fp32;
  /// fp16: the loss scaling of the training step; the mixed-precision phase
  /// records it.
  LossScale lossScale;
  /// The activation layout of convolutions, pooling and batch norm: nhwc
  /// (channels-last) runs the layout phase. trainc compile resolves
  /// --layout=auto to nchw or nhwc.
  Layout layout = Layout::Nchw;
  /// Pad matrix products and convolutions to multiples of this (the pad
  /// phase; 1 leaves it out). trainc compile resolves --pad-to=auto.
  int64_t padTo = 1;
  /// Data parallelism: the allreduce phase averages @train_step's
  /// gradients over the ranks in buckets of at most `bucketBytes`.
  bool dataParallel = false;
  int64_t bucketBytes = 26214400;
  /// Rematerialization (none: the remat phase is left out).
  Remat remat = Remat::None;
  /// With remat: bytes the step's peak of live bytes may reach (0: none).
  int64_t memoryBudget = 0;
  /// Pipeline parallelism: the stages the pipeline phase cuts @loss into
  /// (1: the phase is left out) and the ONNX nodes it cuts after (empty: it
  /// chooses). runPipeline stops after that phase when it cuts: the later
  /// phases run on each stage's module (see stageModules).
  int64_t pipelineStages = 1;
  std::vector<std::string> stageBoundaries;
  /// Gradient accumulation: the trainer's default micro-batches per
  /// optimizer step (1: the grad-accum phase is left out).
  int64_t gradAccum = 1;
  /// Group pointwise ops into tc.fused kernels (the fuse phase; none leaves
  /// it out), with a matmul heading the group that finishes its output
  /// (GEMM epilogues) under auto.
  Fusion fusion = Fusion::Auto;
  /// Stop after this phase (all when empty); start after that one (the
  /// first when empty).
  std::string stopAfter, startAfter;
  /// With a non-empty folder, write `NN-PHASE.mlir` after import and every
  /// phase.
  std::string dumpDir;
  /// Added to the dumped files' names before ".mlir" (a stage's ".stage1").
  std::string dumpSuffix;
  /// Apply MLIR's pass-manager and timing command-line options
  /// (--mlir-print-ir-after-all, --mlir-timing, ...) to every phase; the
  /// tool must have called registerPipelineCLOptions.
  bool passManagerCLOptions = false;
};

/// Registers the phases' passes (so --mlir-print-ir-after=trainc-autodiff
/// and =canonicalize name them) and MLIR's pass-manager and timing
/// command-line options. A tool calls it before parsing its command line and
/// then sets PipelineOptions::passManagerCLOptions.
void registerPipelineCLOptions();

/// Registers every phase as a named pass pipeline, `trainc-phase-NAME`
/// (the phase's passes, then its canonicalizer and CSE, exactly as trainc
/// compile runs it), whose options are PipelineOptions' fields: trainc-opt
/// replays one phase on a dumped or --compile-to IR, e.g.
///   trainc-opt --pass-pipeline='builtin.module(trainc-phase-optimizer{optimizer=adamw})'
void registerPhasePipelines();

/// The phase that cuts @loss into pipeline stages (--pipeline-stages).
inline constexpr const char *kPipelinePhase = "pipeline";

/// The module of each pipeline stage, from a module the pipeline phase cut:
/// stage k's has its @stage<k>_loss as @loss, the parameters that function
/// reads, no @forward, and `tc.pipeline_stage = k`.
std::vector<mlir::OwningOpRef<mlir::ModuleOp>> stageModules(mlir::ModuleOp cut);

/// Runs the phases. Diagnostics go through the context's handler.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, const PipelineOptions &options);

/// The last phase that runs before the selection entry joins the module
/// (trainc compile --select-batch): the entry is the loss phase's and the
/// mixed-precision phase's @loss at another batch size.
inline constexpr const char *kSelectEntryAfter = "mixed-precision";

/// Adds `func.func @select` to `module` from `atSelectBatch`, the same model
/// imported at the selection batch size and run through the phases up to
/// kSelectEntryAfter: its @loss with dropout inactive, batch norms on the
/// batch's statistics without updating the running ones, returning only
/// the loss and the per-sample losses. Every parameter it reads must be one
/// of `module`'s, of the same type.
mlir::LogicalResult addSelectEntry(mlir::ModuleOp module, mlir::ModuleOp atSelectBatch);

} // namespace trainc

#endif // TRAINC_PASSES_PIPELINE_H
