//===- trainc.cpp - the trainc driver -------------------------------------===//
//
//   trainc import  model.onnx [--batch-size=N] [-o out.mlir]
//   trainc check   model.onnx
//   trainc compile model.onnx -o prog [--target=cuda|cpu] [--emit=...]
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"
#include "codegen/Toolchain.h"
#include "frontend/Frontend.h"
#include "ir/TcDialect.h"
#include "ir/StepAbi.h"
#include "ir/TcOps.h"
#include "passes/Kfac.h"
#include "passes/Liveness.h"
#include "passes/Pipeline.h"
#include "runtime/common/Npy.h"
#include "runtime/common/Plot.h"
#include "runtime/include/trainc_rt/defaults.h"
#include "tools/pbt/Pbt.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <filesystem>
#include <optional>

using namespace llvm;

namespace trainc {
/// --target: auto resolves to cuda or cpu before anything reads it.
#define TRAINC_TARGETS(X) X(Auto, "auto") X(Cuda, "cuda") X(Cpu, "cpu")
/// --emit: what compile produces.
#define TRAINC_EMIT_KINDS(X) X(Binary, "binary") X(Source, "source") X(Mlir, "mlir")
TRAINC_DECLARE_OPTION_ENUM(TargetChoice, TRAINC_TARGETS)
TRAINC_DECLARE_OPTION_ENUM(EmitKind, TRAINC_EMIT_KINDS)

/// --pad-to=auto|off|N: 0 for auto, 1 for off, or N, a power of two from 2
/// to 128.
struct PadTo {
  int64_t multiple = 0;
  bool isAuto() const { return multiple == 0; }
};
} // namespace trainc

namespace llvm::cl {
TRAINC_OPTION_ENUM_PARSER(trainc::TargetChoice)
TRAINC_OPTION_ENUM_PARSER(trainc::EmitKind)

template <> class parser<trainc::PadTo> : public basic_parser<trainc::PadTo> {
public:
  parser(Option &option) : basic_parser(option) {}
  StringRef getValueName() const override { return "auto|off|N"; }
  /// True on error, after printing it.
  bool parse(Option &option, StringRef, StringRef text, trainc::PadTo &value) {
    unsigned multiple = 0;
    if (text == "auto" || text == "off") {
      value.multiple = text == "auto" ? 0 : 1;
      return false;
    }
    if (!text.getAsInteger(10, multiple) && multiple >= 2 && multiple <= 128 &&
        (multiple & (multiple - 1)) == 0) {
      value.multiple = multiple;
      return false;
    }
    errs() << "error: --" << option.ArgStr
           << " must be auto, off or a power of two from 2 to 128, got '" << text << "'\n";
    return true;
  }
  void printOptionDiff(const Option &option, const trainc::PadTo &value,
                       const OptionValue<trainc::PadTo> &, size_t width) const {
    printOptionName(option, width);
    outs() << "= " << value.multiple << "\n";
  }
};
} // namespace llvm::cl

namespace {

using trainc::EmitKind;
using trainc::Fusion;
using trainc::Layout;
using trainc::LossKind;
using trainc::Remat;
using trainc::TargetChoice;
using Optimizer = trainc::rt::Optimizer;
using Precision = trainc::rt::Precision;

cl::OptionCategory category("trainc options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx | model.onnxtxt>"),
                               cl::cat(category));
cl::opt<std::string> outputPath("o",
                               cl::desc("compile: the program to build; with --emit=source or "
                                        "mlir, or --compile-to, the text to write (default: "
                                        "stdout, where the source also needs -o for its "
                                        "parameters); import: the IR (default: stdout)"),
                                cl::value_desc("file"), cl::init("-"), cl::cat(category));
cl::opt<int64_t> batchSize("batch-size",
                           cl::desc("Bind the symbolic batch dimension (axis 0) of the "
                                    "model's inputs to N"),
                           cl::value_desc("N"), cl::init(0), cl::cat(category));
cl::opt<int64_t> elideConstants(
    "elide-constants",
    cl::desc("Print constants and initial values with more than N elements as "
             "'dense_resource<__elided__>' (0 prints everything)"),
    cl::value_desc("N"), cl::init(16), cl::cat(category));
cl::opt<TargetChoice> target("target",
                             cl::desc("Code generation target: auto (default: cuda where a GPU "
                                      "is visible, else cpu), cuda or cpu"),
                             cl::init(TargetChoice::Auto), cl::cat(category));
cl::opt<std::string> cudaArch("cuda-arch",
                              cl::desc("CUDA architectures to build for (comma separated)"),
                              cl::value_desc("sm_80,sm_90"), cl::init("sm_80,sm_90"),
                              cl::cat(category));
cl::opt<EmitKind> emitKind("emit",
                           cl::desc("What compile produces: binary (default), source "
                                    "(the generated .cpp/.cu) or mlir (the final IR)"),
                           cl::init(EmitKind::Binary), cl::cat(category));
cl::opt<std::string> compileTo("compile-to",
                               cl::desc("Stop after this phase and print the IR (import, "
                                        "plan)"),
                               cl::value_desc("PHASE"), cl::cat(category));
cl::opt<std::string> dumpIR("dump-ir", cl::desc("Write NN-PHASE.mlir after every phase"),
                            cl::value_desc("DIR"), cl::cat(category));
cl::opt<LossKind> lossKind("loss",
                           cl::desc("Attach a loss (cross-entropy, mse, bce, output) and "
                                    "build @loss and @train_step"),
                           cl::cat(category));
cl::opt<std::string> labelName("label", cl::desc("Name of the label input (default label)"),
                               cl::value_desc("NAME"), cl::init("label"), cl::cat(category));
cl::opt<Optimizer> optimizerKind("optimizer",
                                 cl::desc("Build a trainer with this optimizer: sgd, adam, "
                                          "adamw, lamb, lars or kfac (needs --loss)"),
                                 cl::cat(category));
cl::opt<bool> nesterov("nesterov", cl::desc("Nesterov momentum (--optimizer=sgd)"),
                       cl::init(false), cl::cat(category));
cl::opt<std::string> noDecay(
    "no-decay",
    cl::desc("The parameters without weight decay (nor, under lamb and lars, layer "
             "adaptation): 1d (rank 0 or 1: biases, norm weights; the default for adamw, "
             "lamb and lars), none (the default for sgd and adam), or a regular expression "
             "searched in the ONNX names"),
    cl::value_desc("1d|none|REGEX"), cl::cat(category));
cl::opt<int64_t> classAxis("class-axis",
                           cl::desc("--loss=cross-entropy: the class axis of the logits, "
                                    "default 1; -1 for [N, T, vocab] language-model logits"),
                           cl::value_desc("AXIS"), cl::init(1), cl::cat(category));
cl::opt<std::string> freezeRegex("freeze",
                                 cl::desc("Do not train the parameters whose ONNX name this "
                                          "regular expression matches (searched)"),
                                 cl::value_desc("REGEX"), cl::cat(category));
cl::opt<double> labelSmoothing("label-smoothing",
                               cl::desc("--loss=cross-entropy: mix (1 - EPS) of the label with "
                                        "EPS spread over the classes, as CrossEntropyLoss's "
                                        "label_smoothing (in [0, 1])"),
                               cl::value_desc("EPS"), cl::init(0.0), cl::cat(category));
cl::opt<std::string> classWeightsPath(
    "class-weights",
    cl::desc("--loss=cross-entropy: a weight per class from a 1-D float .npy, as "
             "CrossEntropyLoss's weight (the mean divides by the counted labels' weights)"),
    cl::value_desc("FILE.npy"), cl::cat(category));
cl::opt<int64_t> ignoreIndex("ignore-index",
                             cl::desc("--loss=cross-entropy: the label that adds nothing and "
                                      "is left out of the mean (default -100, PyTorch's)"),
                             cl::value_desc("N"), cl::init(-100), cl::cat(category));
cl::opt<trainc::rt::SampleWeightNorm> sampleWeightNorm(
    "sample-weight-norm",
    cl::desc("What the weighted sum of the per-sample losses is divided by: the weights' sum "
             "(sum, as (w * loss).sum() / w.sum()), or the batch's samples (mean, as "
             "(w * loss).mean()); the weights are the trainer's DIR/sample_weights.npy"),
    cl::init(trainc::rt::SampleWeightNorm::Sum), cl::cat(category));
cl::opt<double> clipGradValue("clip-grad-value",
                              cl::desc("Clamp every gradient element to [-X, X] before the "
                                       "update, as torch.nn.utils.clip_grad_value_"),
                              cl::value_desc("X"), cl::init(0.0), cl::cat(category));
cl::opt<bool> logGradNorm("log-grad-norm",
                          cl::desc("Keep the global gradient norm (unscaled, before clipping) "
                                   "of every step for the trainer's --log (--clip-grad-norm "
                                   "keeps it anyway); costs a reduction per gradient"),
                          cl::init(false), cl::cat(category));
cl::opt<double> clipGradNorm("clip-grad-norm",
                             cl::desc("Clip the global L2 norm of the gradients to at most X "
                                      "(the trainer's --clip-grad-norm overrides X)"),
                             cl::value_desc("X"), cl::init(0.0), cl::cat(category));
cl::opt<std::string> entryName("entry",
                               cl::desc("The function the program runs: forward (default), "
                                        "or loss / train_step with --loss, to inspect losses "
                                        "and gradients with PROG --run"),
                               cl::value_desc("NAME"), cl::init("forward"), cl::cat(category));
cl::opt<Fusion> fuseMode("fuse",
                              cl::desc("Kernel fusion: auto (default) groups chains of pointwise "
                                       "ops into one kernel each and runs a group that finishes "
                                       "a matmul's output as its GEMM epilogue; pointwise "
                                       "groups without epilogues; none emits one kernel per op"),
                              cl::init(Fusion::Auto), cl::cat(category));
cl::opt<Precision> precisionMode(
    "precision",
    cl::desc("Training precision: fp32 (default), or bf16 / fp16 (mixed precision with "
             "PyTorch autocast's rules: matmul, gemm and conv in 16 bits with f32 "
             "accumulation, norms, softmax, reductions and the loss in f32, f32 master "
             "weights; fp16 with loss scaling, see --loss-scale)"),
    cl::init(Precision::Fp32), cl::cat(category));
cl::opt<trainc::LossScale> lossScaleMode(
    "loss-scale",
    cl::desc("Loss scaling of an fp16 training step (default dynamic: GradScaler's, scale "
             "2^16 at the start, halved and the update skipped on inf/NaN gradients, doubled "
             "after the trainer's --scale-growth-interval good steps; VALUE: a fixed scale, "
             "steps with inf/NaN gradients still skipped; none)"),
    cl::cat(category));
cl::opt<Layout> layoutMode(
    "layout",
    cl::desc("Activation layout of convolution, pooling and batch norm: nchw (ONNX's), "
             "nhwc (channels-last: the layout phase transposes at the graph's boundary, "
             "parameters stay OIHW), or auto (default: nhwc on CUDA with bf16/fp16, where "
             "tensor cores want it; nchw otherwise, and on the CPU, whose kernels are NCHW's)"),
    cl::init(Layout::Auto), cl::cat(category));
cl::opt<trainc::PadTo> padToMode(
    "pad-to",
    cl::desc("Pad the stored dimensions of matrix products (K, N) and ungrouped convolutions "
             "(input and output channels) to multiples of N, with zeros that leave the "
             "results unchanged (the pad phase; tensor cores want multiples of 8 in 16-bit "
             "types). auto (default): 8 on CUDA with bf16/fp16, off otherwise; off; or N, a "
             "power of two from 2 to 128. The program's --info lists what was padded and "
             "the bytes the pads and crops copy per step"),
    cl::cat(category));
cl::opt<Remat> rematMode(
    "remat",
    cl::desc("Rematerialization: none (default) keeps every forward value the backward "
             "reads; auto recomputes in the backward the views, pointwise ops, "
             "normalizations and softmaxes whose recomputation saves memory (a minimum cut, "
             "as PyTorch's min-cut partitioner), never a GEMM or convolution"),
    cl::init(Remat::None), cl::cat(category));
cl::opt<std::string> memoryBudget(
    "memory-budget",
    cl::desc("With rematerialization (implies --remat=auto): the peak of live bytes the "
             "training step may reach; GEMMs and convolutions are recomputed too, cheapest "
             "first, until it fits, and compile fails naming the smallest peak it reaches "
             "when it cannot (SIZE: bytes, or with KiB, MiB, GiB, KB, MB, GB)"),
    cl::value_desc("SIZE"), cl::init(""), cl::cat(category));
cl::opt<int64_t> gradAccum(
    "grad-accum",
    cl::desc("Gradient accumulation: the program also gets a micro-batch step, and the "
             "trainer takes K batches of --batch-size per optimizer step (its --grad-accum "
             "chooses another K); the gradient is that of the group's mean loss, a short "
             "last group included (default 1: no accumulation)"),
    cl::value_desc("K"), cl::init(1), cl::cat(category));
cl::opt<int64_t> selectBatch(
    "select-batch",
    cl::desc("Selective backprop: the program also gets @select, the forward and each "
             "sample's loss over B candidates (no backward, its own arena), from which the "
             "trainer's --select picks the --batch-size samples each step trains"),
    cl::value_desc("B"), cl::init(0), cl::cat(category));
cl::opt<int64_t> pipelineStages(
    "pipeline-stages",
    cl::desc("Pipeline parallelism (needs --optimizer): cut the training graph into S stages, "
             "each with its own forward, backward, update and memory plan, run one per rank "
             "under mpirun (stage-major, with --data-parallel S x D ranks) with the 1F1B "
             "schedule over --micro-batches; the cuts balance the stages' estimated time"),
    cl::value_desc("S"), cl::init(1), cl::cat(category));
cl::list<std::string> stageBoundaries(
    "stage-boundaries",
    cl::desc("With --pipeline-stages: cut after these ONNX nodes (graph order) instead of "
             "choosing the cuts"),
    cl::value_desc("NODE,NODE"), cl::CommaSeparated, cl::cat(category));
cl::opt<int64_t> microBatches(
    "micro-batches",
    cl::desc("With --pipeline-stages: the micro-batches (of --batch-size) of one optimizer "
             "step, the trainer's default (its --micro-batches chooses another; default 2 S)"),
    cl::value_desc("M"), cl::init(0), cl::cat(category));
cl::opt<bool> dataParallel(
    "data-parallel",
    cl::desc("Data parallelism (needs --loss): the allreduce phase sums the step's gradients "
             "over the processes of the run (mpirun -np N PROG ...), each weighted by its "
             "share of the global batch, in buckets issued as the backward completes them. "
             "The CPU target sums over MPI, the CUDA target over NCCL"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> bucketSize(
    "bucket-size",
    cl::desc("With --data-parallel: the largest bucket of gradients combined at once "
             "(bytes, or with a unit: 25MiB, the default, as PyTorch DDP); the first "
             "bucket is at most 1 MiB, as DDP's"),
    cl::value_desc("SIZE"), cl::init(""), cl::cat(category));
cl::opt<std::string> deviceMemory(
    "device-memory",
    cl::desc("The memory of the device the program will run on: compile prints the largest "
             "batch size whose plan fits (parameters, optimizer state, activations, constants, "
             "workspace), with and without --remat=auto, searched by planning each batch size "
             "(no code generation), and fails when the chosen batch does not fit (SIZE: bytes, "
             "or with KiB, MiB, GiB, KB, MB, GB)"),
    cl::value_desc("SIZE"), cl::init(""), cl::cat(category));
cl::opt<bool> reportMemory("report-memory",
                           cl::desc("Print peak memory by kind (parameters, activations, "
                                    "constants, workspace)"),
                           cl::init(false), cl::cat(category));
cl::opt<bool> forTraining("training",
                          cl::desc("check: check a trainer (--loss, else the model's scalar "
                                   "output or mse; SGD) and fail when an op has no gradient "
                                   "rule"),
                          cl::init(false), cl::cat(category));
cl::opt<bool> printDebugInfo("print-debuginfo",
                             cl::desc("Print locations (ONNX node names) with the IR"),
                             cl::init(false), cl::cat(category));

/// Whether the command line builds a trainer (--loss) with an update step
/// (--optimizer); the target once --target=auto is resolved.
bool training() { return lossKind.getNumOccurrences() > 0; }
bool hasOptimizer() { return optimizerKind.getNumOccurrences() > 0; }
bool cudaTarget() { return target == TargetChoice::Cuda; }

const char *kUsage = R"(trainc: an ahead-of-time training compiler for ONNX models

usage:
  trainc import  MODEL [--batch-size=N] [-o FILE]  print the tc IR of the model
  trainc check   MODEL [--training [--loss=KIND]] [--target=cuda|cpu] [--batch-size=N]
                                                   report which ops import and train, and
                                                   whether compile builds the model
  trainc compile MODEL -o PROG [--target=cuda|cpu] [--batch-size=N]
                 [--emit=binary|source|mlir] [--cuda-arch=sm_80,sm_90]
                 [--loss=KIND [--label=NAME] [--class-axis=AXIS] [--freeze=REGEX]
                  [--label-smoothing=EPS] [--class-weights=FILE.npy] [--ignore-index=N]
                  [--sample-weight-norm=sum|mean]
                  [--optimizer=sgd|adam|adamw|lamb|lars|kfac [--nesterov] [--no-decay=1d|none|REGEX]
                   [--clip-grad-norm=X | --clip-grad-value=X] [--log-grad-norm]
                   [--select-batch=B]]
                  [--entry=forward|loss|train_step]]
                 [--precision=fp32|bf16|fp16 [--loss-scale=dynamic|none|VALUE]]
                 [--layout=nchw|nhwc|auto] [--pad-to=auto|off|N]
                 [--remat=none|auto] [--memory-budget=SIZE] [--device-memory=SIZE]
                 [--grad-accum=K] [--data-parallel [--bucket-size=SIZE]]
                 [--fuse=auto|pointwise|none] [--report-memory]
                 [--compile-to=PHASE] [--dump-ir=DIR]
                                                   build a program (PROG --predict ...)
  trainc plot    LOG.jsonl... [-o curves.png] [--title TEXT]
                                                   draw trainer logs (loss, held-out metrics,
                                                   lr, momentum) side by side, or an LR
                                                   range test's curve (matplotlib)
  trainc pbt     --population N --ready-every STEPS --hyper NAME=log:LOW,HIGH...
                 [--exploit truncation:F] [--explore perturb:F1,F2|resample:P]
                 [--metric eval_accuracy|eval_loss|eval_topK] [--seed S]
                 [--parallel P | --hosts H:S,... [--mpirun-arg WORD]...]
                 [--stop-after-rounds R] [--export MODEL.onnx] --dir RUN -- TRAINER FLAGS...
                                                   population-based training of a compiled
                                                   trainer (lineage in RUN/lineage.jsonl)
  trainc help | --help | --version

MODEL is a binary .onnx file or an ONNX text-format file (.onnxtxt).
Run 'trainc COMMAND --help' for the options of a command. compile and check also take
MLIR's pass-manager options (--mlir-print-ir-after-all, --mlir-timing, ...).
)";

/// Imports the model named on the command line, or reports why not on
/// `errors`. `defaultBatch` binds a symbolic batch axis without --batch-size.
mlir::OwningOpRef<mlir::ModuleOp> importFromCommandLine(mlir::MLIRContext &context,
                                                        raw_ostream &errors = errs(),
                                                        int64_t defaultBatch = 0) {
  trainc::frontend::ImportOptions options;
  if (batchSize.getNumOccurrences()) {
    if (batchSize < 1) {
      errors << "error: --batch-size must be at least 1, got " << batchSize << "\n";
      return nullptr;
    }
    options.batchSize = batchSize;
  } else if (defaultBatch > 0) {
    options.batchSize = defaultBatch;
    options.batchSizeGiven = false;
  }
  options.everyInputBatched = training();
  return trainc::frontend::importModelFile(inputPath, options, context, errors);
}

mlir::OpPrintingFlags printingFlags() {
  mlir::OpPrintingFlags flags;
  if (elideConstants > 0)
    flags.elideLargeElementsAttrs(elideConstants);
  if (printDebugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  return flags;
}

/// Writes a text result (IR, source) where -o says: a file, or stdout for
/// "-". Returns the exit code.
int writeOutput(function_ref<void(raw_ostream &)> fill) {
  std::error_code ec;
  if (StringRef folder = sys::path::parent_path(outputPath);
      outputPath != "-" && !folder.empty())
    ec = sys::fs::create_directories(folder);
  if (ec) {
    errs() << "error: cannot create the folder of '" << outputPath << "': " << ec.message()
           << "\n";
    return 1;
  }
  ToolOutputFile out(outputPath, ec, sys::fs::OF_None);
  if (ec) {
    errs() << "error: cannot write '" << outputPath << "': " << ec.message() << "\n";
    return 1;
  }
  fill(out.os());
  out.keep();
  return 0;
}

int runImport() {
  mlir::MLIRContext context;
  auto module = importFromCommandLine(context);
  if (!module)
    return 1;
  return writeOutput([&](raw_ostream &os) {
    module->print(os, printingFlags());
    os << "\n";
  });
}


std::string shownName(StringRef name);
std::string shapeText(mlir::RankedTensorType type);

/// What a planned module needs on the device, by kind.
struct MemoryTotals {
  int64_t params = 0, state = 0, arena = 0, constants = 0, workspace = 0;
  /// Of `workspace`: the CUDA trainer's cuDNN algorithm search scratch.
  int64_t searchWorkspace = 0;
  /// Of `state`: the gradient accumulators (--grad-accum), K-FAC's factors
  /// and their inverses.
  int64_t accumulators = 0, kfacFactors = 0;
  mlir::func::FuncOp largest; // the function with the largest arena
  int64_t total() const { return params + state + arena + constants + workspace; }
};

MemoryTotals memoryTotals(mlir::ModuleOp module) {
  MemoryTotals t;
  if (auto step = module.lookupSymbol<mlir::func::FuncOp>("train_step"))
    for (mlir::BlockArgument arg : step.getArguments())
      if (auto role = trainc::tc::argStateRole(step, arg.getArgNumber())) {
        t.state += trainc::tensorBytes(arg.getType());
        if (*role == trainc::tc::StateRole::GradAccum)
          t.accumulators += trainc::tensorBytes(arg.getType());
        if (trainc::rt::isKfacFactor(trainc::tc::toRuntime(*role)))
          t.kfacFactors += trainc::tensorBytes(arg.getType());
      }
  module.walk([&](mlir::Operation *op) {
    if (auto param = mlir::dyn_cast<trainc::tc::ParamOp>(op))
      t.params += trainc::tensorBytes(param.getType());
    else if (auto constant = mlir::dyn_cast<trainc::tc::ConstantOp>(op))
      t.constants += trainc::tensorBytes(constant.getType());
    else if (auto conv = mlir::dyn_cast<trainc::tc::ConvOp>(op)) {
      // The CPU target's im2col buffer: one image's [C/g * KH * KW, OH * OW].
      auto w = mlir::cast<mlir::RankedTensorType>(conv.getWeight().getType());
      auto y = mlir::cast<mlir::RankedTensorType>(conv.getResult().getType());
      int64_t rows = w.getNumElements() / w.getDimSize(0);
      int64_t channels = y.getDimSize(conv.getChannelsLast() ? y.getRank() - 1 : 1);
      int64_t cols = y.getNumElements() / (y.getDimSize(0) * channels);
      t.workspace = std::max(t.workspace, rows * cols * 4);
    }
    if (cudaTarget() &&
        mlir::isa<trainc::tc::ConvOp, trainc::tc::ConvBackwardDataOp,
                  trainc::tc::ConvBackwardFilterOp>(op))
      // The CUDA trainer times cuDNN's algorithms with this much scratch,
      // which stays allocated (trainer --cudnn-benchmark, on by default).
      t.searchWorkspace = trainc::rt::kCudnnSearchWorkspaceBytes;
    if (auto bytes = op->getAttrOfType<mlir::IntegerAttr>(trainc::tc::kArenaBytesAttrName))
      if (bytes.getInt() > t.arena || !t.largest) {
        t.arena = std::max(t.arena, bytes.getInt());
        t.largest = mlir::dyn_cast<mlir::func::FuncOp>(op);
      }
  });
  t.workspace = std::max(t.workspace, t.searchWorkspace);
  return t;
}

/// Peak memory by kind, from the planned module.
/// `inFlight`: a pipeline stage's micro-batches in flight, each with an
/// arena of its own.
void printMemoryReport(mlir::ModuleOp module, raw_ostream &os, int64_t inFlight = 1) {
  MemoryTotals totals = memoryTotals(module);
  const int64_t params = totals.params, state = totals.state, arena = totals.arena,
                constants = totals.constants, workspace = totals.workspace;
  mlir::func::FuncOp largest = totals.largest;
  auto row = [&](StringRef kind, int64_t bytes, StringRef note = "") {
    os << left_justify(kind, 26) << right_justify(std::to_string(bytes), 14) << " bytes  ("
       << format("%.2f", bytes / 1048576.0) << " MiB)" << note << "\n";
  };
  os << "memory (peak, by kind):\n";
  row("parameters", params);
  row("optimizer", state - totals.accumulators - totals.kfacFactors);
  if (totals.kfacFactors)
    row("K-FAC factors", totals.kfacFactors,
        "  A and G of each preconditioned layer, and their inverses");
  if (totals.accumulators)
    row("gradient accumulators", totals.accumulators, "  --grad-accum: one f32 sum per parameter");
  row("activations", arena * inFlight,
      largest ? "  the arena of @" + largest.getName().str() +
                    (inFlight > 1 ? " x " + std::to_string(inFlight) + " micro-batches in flight"
                                  : std::string())
              : "");
  if (largest) {
    // What is live at the arena's busiest op (the placement may add gaps).
    trainc::BufferLiveness liveness(largest);
    int64_t peak = liveness.peakIndex();
    row("  live at the peak", liveness.peakBytes(),
        "  op " + std::to_string(peak) + " of " + std::to_string(liveness.opCount()) +
            (liveness.backwardBegin() < 0
                 ? std::string()
                 : ", backward from op " + std::to_string(liveness.backwardBegin())));
    if (liveness.backwardBegin() >= 0) {
      for (trainc::BufferKind kind : {trainc::BufferKind::Saved, trainc::BufferKind::WeightCopy,
                                      trainc::BufferKind::Gradient, trainc::BufferKind::Temporary})
        row(("    " + trainc::bufferKindName(kind)).str(), liveness.liveBytes(peak, kind));
      row("  saved for the backward", liveness.totalBytes(trainc::BufferKind::Saved),
          "  every forward value the backward reads");
    }
    // The largest buffers live at the peak: what to recompute or shrink.
    std::vector<const trainc::BufferLife *> live;
    for (const trainc::BufferLife &life : liveness.buffers())
      if (life.first <= peak && peak <= life.last)
        live.push_back(&life);
    std::stable_sort(live.begin(), live.end(), [](auto *a, auto *b) { return a->bytes > b->bytes; });
    os << "  largest at the peak:\n";
    for (size_t i = 0; i < live.size() && i < 6; ++i) {
      mlir::Operation *op = live[i]->value.getDefiningOp();
      auto name = mlir::dyn_cast<mlir::NameLoc>(op->getLoc());
      os << "    " << right_justify(std::to_string(live[i]->bytes), 12) << " bytes  "
         << trainc::bufferKindName(live[i]->kind) << ", "
         << shapeText(mlir::cast<mlir::RankedTensorType>(live[i]->value.getType())) << " from "
         << op->getName().getStringRef() << " (op " << live[i]->first << ", last read by op "
         << live[i]->last << ")"
         << (name ? " '" + shownName(name.getName().getValue()) + "'" : std::string()) << "\n";
    }
  }
  if (auto step = module.lookupSymbol<mlir::func::FuncOp>("train_step"))
    if (auto remat = step->getAttrOfType<mlir::DictionaryAttr>(trainc::tc::kRematAttrName)) {
      auto get = [&](StringRef key) {
        auto value = remat.getAs<mlir::IntegerAttr>(key);
        return value ? value.getInt() : int64_t(0);
      };
      auto mib = [](int64_t bytes) { return format("%.2f MiB", bytes / 1048576.0); };
      os << "  remat: " << get("recomputed_ops") << " ops recomputed in the backward ("
         << get("recomputed_contractions") << " GEMMs/convolutions); at the remat phase "
         << "(before fusion) saved for the backward " << mib(get("saved_before")) << " -> "
         << mib(get("saved_after")) << ", peak of live bytes " << mib(get("peak_before"))
         << " -> " << mib(get("peak_after")) << "\n";
      step.walk([&](mlir::Operation *op) {
        if (!op->hasAttr(trainc::tc::kRecomputedAttrName))
          return;
        auto name = mlir::dyn_cast<mlir::NameLoc>(op->getLoc());
        os << "    recomputed " << op->getName().getStringRef() << " "
           << shapeText(mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType()))
           << (name ? "  '" + shownName(name.getName().getValue()) + "'" : std::string())
           << "\n";
      });
    }
  row("constants", constants);
  row("workspace", workspace,
      totals.searchWorkspace > 0 ? "  cuDNN's algorithm search (trainer --cudnn-benchmark)" : "");
  row("total", totals.total() + arena * (inFlight - 1));
}

/// Why `name` cannot name a file `<name>.npy` in a folder (the program's
/// --data, --out, --save-params and --params), or "" if it can.
std::string fileNameProblem(StringRef name) {
  // NAME_MAX is 255 on Linux, and the program appends ".npy".
  constexpr size_t kMaxNameBytes = 255 - 4;
  if (name.empty())
    return "it is empty";
  if (name == "." || name == "..")
    return "it is '" + name.str() + "'";
  if (name.contains('/'))
    return "it contains '/'";
  if (name.contains('\0'))
    return "it contains a NUL byte";
  for (char c : name)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return "it contains the control character " +
             llvm::formatv("0x{0:x-2}", static_cast<unsigned char>(c)).str();
  if (name.size() > kMaxNameBytes)
    return "it is " + std::to_string(name.size()) + " bytes long, more than " +
           std::to_string(kMaxNameBytes);
  return "";
}

/// A name as an error message shows it: non-printable bytes escaped, long
/// names cut.
std::string shownName(StringRef name) {
  std::string out;
  raw_string_ostream os(out);
  printEscapedString(name.take_front(64), os);
  if (name.size() > 64)
    os << "...";
  return out;
}

/// The program names a .npy file after every parameter, input, label and
/// output: refuses the names that cannot be one, before anything is built.
bool checkFileNames(mlir::ModuleOp module, bool training, raw_ostream &errors = errs()) {
  bool ok = true;
  auto check = [&](StringRef what, StringRef name, StringRef use) {
    std::string problem = fileNameProblem(name);
    if (problem.empty())
      return;
    errors << "error: " << what << " '" << shownName(name) << "' cannot name a file ("
           << use << "): " << problem << "\n";
    ok = false;
  };
  for (auto param : module.getOps<trainc::tc::ParamOp>())
    check("ONNX initializer", param.getSymName(),
          "--save-params and --params write and read NAME.npy");
  if (auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward")) {
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (auto input = forward.getArgAttrOfType<mlir::StringAttr>(i, trainc::tc::kInputAttrName))
        check("ONNX graph input", input.getValue(), "the program reads NAME.npy in --data");
    for (unsigned i = 0; i < forward.getNumResults(); ++i)
      if (auto output =
              forward.getResultAttrOfType<mlir::StringAttr>(i, trainc::tc::kOutputAttrName))
        check("ONNX graph output", output.getValue(),
                "the program writes NAME.npy in --out");
  }
  if (training)
    check("--label", labelName, "the trainer reads NAME.npy in --data");
  return ok;
}

/// The code generator and the runtime compute in float32 (f16/bf16 come with
/// mixed precision): a float64 model is refused here with one message, not
/// by g++ deep in the generated source.
bool checkNoFloat64(mlir::ModuleOp module, raw_ostream &errors = errs()) {
  std::vector<std::string> where;
  auto isF64 = [](mlir::Type type) {
    auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
    return tensor && tensor.getElementType().isF64();
  };
  for (auto param : module.getOps<trainc::tc::ParamOp>())
    if (isF64(param.getType()))
      where.push_back("initializer '" + shownName(param.getSymName()) + "'");
  if (auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward")) {
    for (unsigned i = 0; i < forward.getNumArguments(); ++i)
      if (auto input = forward.getArgAttrOfType<mlir::StringAttr>(i, trainc::tc::kInputAttrName))
        if (isF64(forward.getArgument(i).getType()))
          where.push_back("input '" + shownName(input.getValue()) + "'");
    forward.walk([&](mlir::Operation *op) {
      if (!llvm::any_of(op->getResultTypes(), isF64))
        return;
      auto name = mlir::dyn_cast<mlir::NameLoc>(op->getLoc());
      where.push_back("node '" + (name ? shownName(name.getName().getValue()) : std::string("?")) +
                      "' (" + op->getName().getStringRef().str() + ")");
    });
  }
  if (where.empty())
    return true;
  errors << "error: the model computes in float64: ";
  for (size_t i = 0; i < where.size() && i < 3; ++i)
    errors << (i ? ", " : "") << where[i];
  if (where.size() > 3)
    errors << " and " << where.size() - 3 << " more";
  errors << "; trainc compiles float32 models (export the PyTorch model after "
            "model.float(), or convert the initializers and inputs to float32)\n";
  return false;
}

/// The pipeline's options from the flags, with their defaults resolved:
/// --loss-scale (dynamic for fp16), --remat (auto with --memory-budget),
/// --layout and --pad-to (auto: nhwc and 8 on CUDA with bf16/fp16).
/// --class-weights FILE.npy, read as untrusted input: a regular .npy file of
/// at most 2^20 float32 or float64 values, finite and non-negative, not all
/// 0 (their count is checked against the classes by the loss phase).
std::vector<double> classWeightValues;

bool loadClassWeights(const std::string &path, std::vector<double> &values) {
  namespace rt = trainc::rt;
  constexpr int64_t kMaxClasses = 1 << 20;
  rt::NpyArray array;
  rt::Status opened = rt::NpyArray::open(path, array, rt::npyMaxFileBytes(kMaxClasses * 8));
  auto fail = [&](const std::string &why) {
    errs() << "error: --class-weights " << path << ": " << why << "\n";
    return false;
  };
  if (!opened.ok())
    return fail(opened.message());
  if (array.shape().size() != 1 || array.numElements() == 0)
    return fail("expected a 1-D array with a weight per class");
  if (array.dtype() == rt::DType::F32) {
    std::vector<float> floats;
    if (rt::Status read = array.readAll(floats); !read.ok())
      return fail(read.message());
    values.assign(floats.begin(), floats.end());
  } else if (array.dtype() == rt::DType::F64) {
    if (rt::Status read = array.readAll(values); !read.ok())
      return fail(read.message());
  } else {
    return fail(std::string("expected float32 or float64 weights, got ") +
                rt::dtypeName(array.dtype()));
  }
  bool any = false;
  for (size_t c = 0; c < values.size(); ++c) {
    if (!std::isfinite(values[c]) || values[c] < 0)
      return fail("the weight of class " + std::to_string(c) + " is " +
                  std::to_string(values[c]) + "; weights must be finite and non-negative");
    any |= values[c] > 0;
  }
  if (!any)
    return fail("every weight is 0: no label would count");
  return true;
}

/// --pipeline-stages, or one more than the --stage-boundaries.
int64_t stageCount() {
  if (pipelineStages.getNumOccurrences() || stageBoundaries.empty())
    return pipelineStages;
  return static_cast<int64_t>(stageBoundaries.size()) + 1;
}

trainc::PipelineOptions pipelineFromCommandLine() {
  trainc::PipelineOptions pipeline;
  if (training())
    pipeline.loss = lossKind;
  pipeline.label = labelName;
  if (hasOptimizer())
    pipeline.optimizer = optimizerKind;
  pipeline.nesterov = nesterov;
  if (!noDecay.empty())
    pipeline.noDecay = noDecay;
  pipeline.classAxis = classAxis;
  pipeline.freeze = freezeRegex;
  pipeline.clipGradNorm = clipGradNorm;
  pipeline.clipGradValue = clipGradValue;
  pipeline.gradNorm = logGradNorm;
  pipeline.labelSmoothing = labelSmoothing;
  pipeline.ignoreIndex = ignoreIndex;
  pipeline.sampleWeightNorm = sampleWeightNorm;
  pipeline.classWeights = classWeightValues;
  pipeline.stopAfter = compileTo;
  pipeline.dumpDir = dumpIR;
  pipeline.precision = precisionMode;
  // Loss scaling belongs to the optimizer step: without --optimizer
  // (--entry=train_step) the gradients come out unscaled.
  if (hasOptimizer())
    pipeline.lossScale = lossScaleMode.getNumOccurrences()
                             ? trainc::LossScale(lossScaleMode)
                             : trainc::LossScale{precisionMode == Precision::Fp16
                                                     ? trainc::rt::LossScaling::Dynamic
                                                     : trainc::rt::LossScaling::None};
  pipeline.remat = rematMode.getNumOccurrences() || memoryBudget.empty() ? rematMode.getValue()
                                                                         : Remat::Auto;
  const bool lowPrecisionCuda = cudaTarget() && precisionMode != Precision::Fp32;
  pipeline.layout = layoutMode != Layout::Auto ? layoutMode.getValue()
                    : lowPrecisionCuda         ? Layout::Nhwc
                                               : Layout::Nchw;
  pipeline.padTo = !padToMode.isAuto() ? padToMode.multiple : lowPrecisionCuda ? 8 : 1;
  if (auto budget = trainc::parseByteSize(memoryBudget))
    pipeline.memoryBudget = *budget;
  pipeline.gradAccum = gradAccum;
  pipeline.pipelineStages = stageCount();
  pipeline.stageBoundaries.assign(stageBoundaries.begin(), stageBoundaries.end());
  if (pipeline.pipelineStages > 1)
    pipeline.gradAccum = microBatches ? microBatches.getValue() : 2 * pipeline.pipelineStages;
  pipeline.dataParallel = dataParallel;
  if (auto bucket = trainc::parseByteSize(bucketSize))
    pipeline.bucketBytes = *bucket;
  pipeline.fusion = fuseMode;
  pipeline.passManagerCLOptions = true;
  return pipeline;
}

/// Diagnostics of the phases name the ONNX node through the op's location.
void printDiagnostic(raw_ostream &os, mlir::Diagnostic &diag) {
  os << (diag.getSeverity() == mlir::DiagnosticSeverity::Error ? "error: " : "note: ");
  if (auto name = mlir::dyn_cast<mlir::NameLoc>(diag.getLocation()))
    os << "node '" << name.getName().getValue() << "': ";
  os << diag.str() << "\n";
}

/// f32[2, 3] for a tensor type.
std::string shapeText(mlir::RankedTensorType type) {
  std::string text;
  raw_string_ostream os(text);
  type.getElementType().print(os);
  os << "[";
  for (int64_t i = 0; i < type.getRank(); ++i)
    os << (i ? ", " : "") << type.getDimSize(i);
  os << "]";
  return text;
}

/// Runs what `trainc compile` runs, up to the generated source (no C++
/// compiler), and prints every refusal on the way: the op table above says
/// which op types import, this says whether this model, with these
/// attributes and shapes, builds. With --training it builds a trainer (the
/// --loss given, else the model's own scalar output or mse) with SGD and
/// also lists the float initializers that will be trained.
bool checkCompile(bool trainableMetadata) {
  bool cuda = cudaTarget();
  std::string errors;
  raw_string_ostream es(errors);
  mlir::MLIRContext context;
  // The check is about what builds, not about one batch size: a symbolic
  // batch axis is bound to 2 unless --batch-size says otherwise.
  auto module = importFromCommandLine(context, es, /*defaultBatch=*/2);
  LossKind loss = lossKind;
  if (module && forTraining && !training()) {
    auto forward = module->lookupSymbol<mlir::func::FuncOp>("forward");
    bool scalar = forward && forward.getNumResults() > 0 &&
                  mlir::cast<mlir::RankedTensorType>(forward.getResultTypes()[0]).getRank() == 0;
    loss = scalar ? LossKind::Output : LossKind::Mse;
  }
  outs() << "\ncompile check (" << (forTraining ? std::string("a trainer with --loss=") +
                                                       trainc::optionName(loss) + " "
                                                 "--optimizer=sgd"
                                               : std::string("a prediction program"))
         << ", --target=" << (cuda ? "cuda" : "cpu") << ", batch size "
         << (batchSize.getNumOccurrences() ? std::to_string(batchSize) : std::string("2"))
         << "):\n";
  bool ok = module && checkFileNames(*module, forTraining, es) && checkNoFloat64(*module, es);
  std::vector<std::pair<std::string, std::string>> trained;
  if (ok) {
    mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
      printDiagnostic(es, diag);
      return mlir::success();
    });
    for (auto param : module->getOps<trainc::tc::ParamOp>())
      if (param.getTrainable())
        trained.emplace_back(shownName(param.getSymName()),
                             shapeText(mlir::cast<mlir::RankedTensorType>(param.getType())));
    trainc::PipelineOptions pipeline = pipelineFromCommandLine();
    pipeline.stopAfter.clear();
    pipeline.dumpDir.clear();
    if (forTraining) {
      pipeline.loss = loss;
      pipeline.optimizer = hasOptimizer() ? optimizerKind.getValue() : Optimizer::Sgd;
    }
    ok = succeeded(trainc::runPipeline(*module, pipeline));
    if (ok && forTraining) {
      std::vector<std::string> names;
      for (auto param : module->getOps<trainc::tc::ParamOp>())
        names.push_back(param.getSymName().str());
      auto exported = trainc::frontend::buildExportTemplate(inputPath, names);
      if (!exported) {
        es << "error: --export: " << toString(exported.takeError()) << "\n";
        ok = false;
      }
    }
    if (ok) {
      trainc::codegen::EmitOptions emit;
      emit.target = cuda ? trainc::codegen::Target::Cuda : trainc::codegen::Target::Cpu;
      emit.modelName = sys::path::filename(inputPath).str();
      emit.entry = "forward";
      std::string source;
      std::vector<char> blob;
      raw_string_ostream sourceStream(source);
      ok = succeeded(trainc::codegen::emitProgram(*module, emit, sourceStream, blob));
    }
  }
  if (ok) {
    outs() << "  trainc compile builds this model\n";
  } else {
    outs() << "  trainc compile refuses this model:\n";
    SmallVector<StringRef> lines;
    StringRef(errors).split(lines, '\n', -1, false);
    for (StringRef line : lines)
      outs() << "    " << line << "\n";
  }
  if (forTraining && !trained.empty()) {
    if (trainableMetadata) {
      outs() << "\ntrained: " << trained.size()
             << " parameters, as the model's trainc.trainable metadata lists\n";
    } else {
      outs() << "\ntrained: every float initializer but the BatchNorm running statistics ("
             << trained.size() << "), since the model has no trainc.trainable metadata "
             << "(python/trainc_torch.py records which initializers are parameters; "
             << "--freeze=REGEX keeps some fixed):\n";
      for (const auto &[name, shape] : trained)
        outs() << "  " << name << " " << shape << "\n";
    }
  }
  return ok;
}

int runCheck() {
  auto summary = trainc::frontend::summarizeModelFile(inputPath, errs());
  if (!summary)
    return 1;
  outs() << "model: " << inputPath << "\n"
         << "opset: " << summary->opset << "\n";
  if (!summary->producer.empty())
    outs() << "producer: " << summary->producer << "\n";
  outs() << "\n";
  auto row = [](StringRef op, StringRef count, StringRef import,
                StringRef gradient, StringRef note) {
    outs() << left_justify(op, 28) << " " << right_justify(count, 5) << "  "
           << left_justify(import, 6) << " " << left_justify(gradient, 9) << " "
           << note << "\n";
  };
  row("op type", "count", "import", "gradient", "maps to");
  int missing = 0, noGradient = 0;
  for (const auto &op : summary->ops) {
    std::string name = op.domain == "ai.onnx" ? op.opType : op.domain + "." + op.opType;
    row(name, std::to_string(op.count), op.imported ? "yes" : "NO", op.gradient, op.note);
    missing += op.imported ? 0 : 1;
    noGradient += op.gradient == "not yet" ? 1 : 0;
  }
  outs() << "\n";
  if (missing)
    outs() << missing << " op type(s) cannot be imported\n";
  else
    outs() << "all " << summary->ops.size() << " op types import\n";
  // An op without a gradient rule stops training only where it lies between
  // a trainable parameter and the loss (ScatterND building a mask from
  // constants, or shifting integer labels, does not): the compile check runs
  // autodiff, which says so naming the node.
  if (noGradient)
    outs() << noGradient << " op type(s) have no gradient rule yet: a trainer builds only "
           << "where they lie off every path from a parameter to the loss"
           << (forTraining ? " (the compile check below says)" : " (check with --training)")
           << "\n";
  else
    outs() << "every op type can be trained through\n";
  bool builds = missing == 0 && checkCompile(summary->trainableMetadata);
  return builds ? 0 : 1;
}

/// The model imported at `batch` with its diagnostics dropped (the batch
/// search probes sizes that may not build), or null.
mlir::OwningOpRef<mlir::ModuleOp> importQuietly(mlir::MLIRContext &context, int64_t batch) {
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &) { return mlir::success(); });
  trainc::frontend::ImportOptions import;
  import.batchSize = batch;
  import.everyInputBatched = training();
  std::string ignored;
  raw_string_ostream sink(ignored);
  return trainc::frontend::importModelFile(inputPath, import, context, sink);
}

/// What the program needs on the device at `batch`, by kind (import to
/// plan, no code generation), or none when that batch does not compile.
std::optional<MemoryTotals> plannedTotals(int64_t batch, const trainc::PipelineOptions &options) {
  mlir::MLIRContext context;
  auto module = importQuietly(context, batch);
  if (!module || failed(trainc::runPipeline(*module, options)))
    return std::nullopt;
  return memoryTotals(*module);
}

/// Whether the model's batch is fixed: its inputs' shapes do not follow
/// --batch-size.
bool batchIsFixed() {
  auto inputShapes = [](int64_t batch) {
    mlir::MLIRContext context;
    std::string text;
    raw_string_ostream os(text);
    auto module = importQuietly(context, batch);
    if (auto forward = module ? module->lookupSymbol<mlir::func::FuncOp>("forward") : nullptr)
      forward.getFunctionType().print(os);
    return text;
  };
  // A model whose inputs fix their first axis is refused at any other batch.
  std::string three = inputShapes(3);
  return three.empty() || inputShapes(1) == three;
}

/// The largest batch size whose plan fits in `limit` bytes (0: not even
/// 1), by doubling and then bisecting. `budgeted`: a batch that does not fit
/// is planned again with a --memory-budget of what the parameters,
/// optimizer state, constants and workspace (which do not depend on remat)
/// leave the arena.
int64_t largestBatch(int64_t limit, const trainc::PipelineOptions &options,
                     bool budgeted = false) {
  auto fits = [&](int64_t batch) {
    std::optional<MemoryTotals> plain = plannedTotals(batch, options);
    if (!plain)
      return false;
    if (plain->total() <= limit)
      return true;
    if (!budgeted)
      return false;
    trainc::PipelineOptions squeezed = options;
    squeezed.memoryBudget = limit - (plain->total() - plain->arena);
    if (squeezed.memoryBudget <= 0)
      return false;
    std::optional<MemoryTotals> total = plannedTotals(batch, squeezed);
    return total && total->total() <= limit;
  };
  if (!fits(1))
    return 0;
  constexpr int64_t kMaxBatch = int64_t(1) << 24;
  int64_t good = 1, bad = 2;
  while (bad <= kMaxBatch && fits(bad)) {
    good = bad;
    bad *= 2;
  }
  if (bad > kMaxBatch)
    return good;
  while (bad - good > 1) {
    int64_t mid = good + (bad - good) / 2;
    (fits(mid) ? good : bad) = mid;
  }
  return good;
}

/// --optimizer=kfac: which weights it preconditions (those with factors),
/// and the ones it leaves to plain SGD with the reason.
void noteKfac(mlir::ModuleOp module) {
  auto step = module.lookupSymbol<mlir::func::FuncOp>("train_step");
  if (!step || !hasOptimizer() || optimizerKind != Optimizer::Kfac)
    return;
  std::vector<std::string> preconditioned;
  for (mlir::BlockArgument arg : step.getArguments()) {
    auto role = trainc::tc::argStateRole(step, arg.getArgNumber());
    if (role && *role == trainc::tc::StateRole::KfacA)
      if (auto name = step.getArgAttrOfType<mlir::StringAttr>(arg.getArgNumber(),
                                                               trainc::tc::kStateAttrName))
        preconditioned.push_back(name.getValue().drop_front(7).str()); // "kfac.a."
  }
  errs() << "note: --optimizer=kfac preconditions " << preconditioned.size() << " layers (";
  for (size_t i = 0; i < preconditioned.size(); ++i)
    errs() << (i ? ", " : "") << preconditioned[i];
  errs() << ", each with its bias where it has one); every other trained parameter takes "
            "plain SGD with momentum\n";
  if (auto plain = step->getAttrOfType<mlir::ArrayAttr>(trainc::kKfacPlainAttrName))
    for (mlir::Attribute line : plain)
      errs() << "note: --optimizer=kfac: plain SGD for "
             << mlir::cast<mlir::StringAttr>(line).getValue() << "\n";
}

/// Speed flags that do not pay on this target say so, once each, with the
/// reason: fp16 on the CPU (its 16-bit operands are widened to f32 for the
/// f32 kernels: conversions and loss scaling on top of the fp32 step), NHWC
/// on the CPU (its convolution, pooling and norm kernels are NCHW's: the
/// layout adds transposes), and --remat=auto where it saves under 5% of the
/// planned activations (measured by planning the step without it). With
/// --report-memory the saving is reported whatever it is.
void noteSlowSpeedFlags(mlir::ModuleOp module, const trainc::PipelineOptions &pipeline,
                        bool report) {
  if (!cudaTarget() && precisionMode == Precision::Fp16)
    errs() << "note: --precision=fp16 on the CPU target is slower than fp32: the CPU has no "
              "fp16 kernels here, so every 16-bit operand is widened to f32 for the f32 "
              "kernel, and loss scaling comes on top (bf16 runs on oneDNN's bf16 kernels "
              "where the CPU has AVX-512); use it to check fp16 numerics before a GPU run\n";
  if (!cudaTarget() && layoutMode == Layout::Nhwc)
    errs() << "note: --layout=nhwc on the CPU target adds transposes: its convolution, "
              "pooling and normalization kernels are NCHW's (channels-last pays on CUDA "
              "with bf16/fp16, where tensor cores want it)\n";
  if (pipeline.remat != Remat::Auto || !compileTo.empty() || !training())
    return;
  auto batchAttr = module->getAttrOfType<mlir::IntegerAttr>(trainc::tc::kBatchSizeAttrName);
  if (!batchAttr)
    return;
  trainc::PipelineOptions without = pipeline;
  without.remat = Remat::None;
  without.memoryBudget = 0;
  without.stopAfter.clear();
  without.dumpDir.clear();
  without.passManagerCLOptions = false;
  std::optional<MemoryTotals> plain = plannedTotals(batchAttr.getInt(), without);
  if (!plain)
    return;
  // The arena (activations) is what remat changes; the totals add the same
  // parameters, state, constants and workspace on both sides.
  const int64_t before = plain->arena, after = memoryTotals(module).arena;
  const double saved = before > 0 ? 100.0 * (before - after) / before : 0.0;
  const std::string change = formatv("activations {0} bytes planned without it, {1} with it "
                                     "({2}{3:F1}%)",
                                     before, after, after > before ? "+" : "-",
                                     std::abs(saved))
                                .str();
  if (report)
    outs() << "remat: " << change << "\n";
  if (saved < 5.0)
    errs() << "note: --remat=auto: " << change << ": "
           << (saved < 0 ? "it costs memory here" : "it saves under 5% here")
           << ", and the recomputation costs time; it pays where activations dominate "
              "(large batches, deep networks)\n";
}

/// --device-memory: what fits, and whether the chosen batch does.
bool checkDeviceMemory(mlir::ModuleOp module, int64_t limit, raw_ostream &os) {
  int64_t needed = memoryTotals(module).total();
  auto batchAttr = module->getAttrOfType<mlir::IntegerAttr>(trainc::tc::kBatchSizeAttrName);
  trainc::PipelineOptions options = pipelineFromCommandLine();
  options.stopAfter.clear();
  options.dumpDir.clear();
  options.passManagerCLOptions = false;
  options.memoryBudget = 0;
  auto describe = [&](StringRef what, int64_t batch) {
    os << "  largest batch that fits " << what << ": ";
    if (batch < 0)
      os << "the model's batch size is fixed\n";
    else if (batch == 0)
      os << "none (batch 1 does not fit)\n";
    else
      os << batch << "\n";
  };
  options.remat = Remat::None;
  bool fixed = batchIsFixed();
  int64_t plain = fixed ? -1 : largestBatch(limit, options);
  std::string at = batchAttr && !fixed ? " at batch " + std::to_string(batchAttr.getInt()) : "";
  os << "device memory " << limit << " bytes (" << format("%.2f", limit / 1048576.0)
     << " MiB): this program needs " << needed << " bytes ("
     << format("%.2f", needed / 1048576.0) << " MiB)" << at << "\n";
  describe("without remat", plain);
  if (options.loss) {
    options.remat = Remat::Auto;
    describe("with --remat=auto", fixed ? -1 : largestBatch(limit, options));
    describe("with --memory-budget (the arena's share; GEMMs and convolutions recomputed "
             "too)",
             fixed ? -1 : largestBatch(limit, options, /*budgeted=*/true));
  }
  if (options.gradAccum > 1)
    os << "  (--grad-accum=" << options.gradAccum << ": these are micro-batches; an optimizer "
       << "step trains " << options.gradAccum << " of them, and the plans count the gradient "
       << "accumulators)\n";
  if (needed <= limit)
    return true;
  errs() << "error: --device-memory=" << deviceMemory << ": the program needs " << needed
         << " bytes (" << format("%.2f", needed / 1048576.0) << " MiB) of device memory"
         << at << ", more than the " << limit << " given; "
         << (fixed ? "the model's batch size is fixed"
                   : "lower --batch-size (see the largest batch that fits above; "
                     "--grad-accum=K trains K batches per optimizer step)")
         << (!options.loss || rematMode == Remat::Auto || !memoryBudget.empty()
                 ? ""
                 : " or add --remat=auto")
         << "\n";
  return false;
}

/// Writes `path` with what `fill` puts in it; false (after an error naming
/// the file) when it cannot be written.
bool writeFile(StringRef path, function_ref<void(raw_ostream &)> fill) {
  std::error_code ec;
  raw_fd_ostream os(path, ec);
  if (ec) {
    errs() << "error: cannot write '" << path << "': " << ec.message() << "\n";
    return false;
  }
  fill(os);
  return true;
}

/// --memory-budget and --device-memory: sizes, and what they need. (The
/// enum-like flags, --target to --remat, are checked as they are read.)
bool checkModeFlags() {
  if (!memoryBudget.empty()) {
    if (!trainc::parseByteSize(memoryBudget)) {
      errs() << "error: --memory-budget takes a positive size in bytes, or with a unit "
                "(KiB, MiB, GiB, TiB, KB, MB, GB, TB), e.g. 2GiB; got '" << memoryBudget
             << "'\n";
      return false;
    }
    if (rematMode.getNumOccurrences() && rematMode == Remat::None) {
      errs() << "error: --memory-budget is met by rematerialization and needs --remat=auto "
                "(or no --remat), not --remat=none\n";
      return false;
    }
  }
  if (!deviceMemory.empty()) {
    if (!trainc::parseByteSize(deviceMemory)) {
      errs() << "error: --device-memory takes a positive size in bytes, or with a unit "
                "(KiB, MiB, GiB, TiB, KB, MB, GB, TB), e.g. 80GiB; got '" << deviceMemory
             << "'\n";
      return false;
    }
    if (!compileTo.empty() && compileTo != "plan") {
      errs() << "error: --device-memory needs the memory plan: it runs with --compile-to=plan "
                "or a whole compile, not --compile-to=" << compileTo << "\n";
      return false;
    }
  }
  return true;
}

/// --log-grad-norm, --clip-grad-value and the cross-entropy options:
/// what they need and exclude, and --class-weights read (classWeightValues).
bool checkLossAndClippingFlags() {
  if (clipGradValue != 0.0 && (!hasOptimizer() || !(clipGradValue > 0.0) ||
                               !std::isfinite(clipGradValue))) {
    errs() << "error: --clip-grad-value takes a positive finite bound and needs --optimizer\n";
    return false;
  }
  if (logGradNorm && !hasOptimizer()) {
    errs() << "error: --log-grad-norm keeps the norm the optimizer step measures; it needs "
              "--optimizer\n";
    return false;
  }
  if (clipGradValue > 0.0 && clipGradNorm > 0.0) {
    errs() << "error: --clip-grad-value and --clip-grad-norm exclude each other (clip by one "
              "rule)\n";
    return false;
  }
  const bool crossEntropy = training() && lossKind == trainc::LossKind::CrossEntropy;
  for (auto [given, name] : {std::pair{labelSmoothing.getNumOccurrences() > 0, "label-smoothing"},
                             std::pair{classWeightsPath.getNumOccurrences() > 0, "class-weights"},
                             std::pair{ignoreIndex.getNumOccurrences() > 0, "ignore-index"}})
    if (given && !crossEntropy) {
      errs() << "error: --" << name << " is a parameter of --loss=cross-entropy\n";
      return false;
    }
  if (sampleWeightNorm.getNumOccurrences() > 0 &&
      (!training() || lossKind == trainc::LossKind::Output)) {
    errs() << "error: --sample-weight-norm normalizes the loss trainc attaches; it needs "
              "--loss=cross-entropy, mse or bce\n";
    return false;
  }
  if (!(labelSmoothing >= 0.0 && labelSmoothing <= 1.0)) {
    errs() << "error: --label-smoothing must be in [0, 1], got " << labelSmoothing << "\n";
    return false;
  }
  if (ignoreIndex == std::numeric_limits<int64_t>::min()) {
    errs() << "error: --ignore-index is out of range\n";
    return false;
  }
  if (!classWeightsPath.empty() && !loadClassWeights(classWeightsPath, classWeightValues))
    return false;
  return true;
}

/// --optimizer=kfac: what its factors cannot follow yet is refused.
bool checkKfacFlags() {
  if (!hasOptimizer() || optimizerKind != Optimizer::Kfac)
    return true;
  const char *refusal = nullptr;
  if (precisionMode != Precision::Fp32)
    refusal = "computes its factors in f32: compile with --precision=fp32";
  else if (gradAccum > 1)
    refusal = "updates its factors from each batch: --grad-accum is not for it yet";
  else if (dataParallel)
    refusal = "keeps each process's factors: --data-parallel would need them summed (not yet)";
  else if (stageCount() > 1)
    refusal = "needs every layer's factors in one process: not with --pipeline-stages";
  else if (clipGradNorm > 0 || clipGradValue > 0 || logGradNorm)
    refusal = "clips its updates by KL divergence (the trainer's --kfac-kl-clip): not with "
              "--clip-grad-norm, --clip-grad-value or --log-grad-norm";
  else if (layoutMode == Layout::Nhwc)
    refusal = "patches NCHW convolutions: not with --layout=nhwc";
  else if (!padToMode.isAuto() && padToMode.multiple > 1)
    refusal = "factors the layers' own sizes: not with --pad-to";
  if (refusal) {
    errs() << "error: --optimizer=kfac " << refusal << "\n";
    return false;
  }
  return true;
}

/// The flags of training (--grad-accum, --data-parallel, --precision,
/// --loss-scale, --optimizer, ...): each needs the others it works with, and
/// --compile-to a phase that runs.
/// --pipeline-stages builds a trainer; what needs every stage's gradients
/// at once is not there yet.
bool checkPipelineFlags() {
  const int64_t stages = stageCount();
  if (stages < 1 || stages > 64) {
    errs() << "error: --pipeline-stages takes a number of stages from 1 to 64, got "
           << stages << "\n";
    return false;
  }
  if (!stageBoundaries.empty() && stages != static_cast<int64_t>(stageBoundaries.size()) + 1) {
    errs() << "error: --stage-boundaries names " << stageBoundaries.size()
           << " nodes; --pipeline-stages=" << stages << " needs " << stages - 1 << "\n";
    return false;
  }
  if (microBatches.getNumOccurrences() && stages == 1) {
    errs() << "error: --micro-batches is the schedule of --pipeline-stages (for one stage, "
              "--grad-accum)\n";
    return false;
  }
  if (stages == 1)
    return true;
  const char *refusal = nullptr;
  if (!hasOptimizer() || !training())
    refusal = "needs --loss and --optimizer: it builds a trainer";
  else if (microBatches.getNumOccurrences() && (microBatches < 1 || microBatches > 1000000))
    refusal = "--micro-batches takes a number from 1 to 1000000";
  else if (gradAccum > 1)
    refusal = "and --grad-accum: the micro-batches are the accumulation (--micro-batches)";
  else if (selectBatch > 0)
    refusal = "and --select-batch: the selection entry is one process's forward";
  else if (clipGradNorm > 0 || logGradNorm)
    refusal = "and --clip-grad-norm or --log-grad-norm: the global norm would need every "
              "stage's gradients";
  else if (precisionMode == Precision::Fp16 &&
           (!lossScaleMode.getNumOccurrences() ||
            lossScaleMode.scaling != trainc::rt::LossScaling::None))
    refusal = "and fp16 loss scaling: every stage would have to skip the same steps (use "
              "--precision=bf16, or --loss-scale=none)";
  if (refusal) {
    errs() << "error: --pipeline-stages " << refusal << "\n";
    return false;
  }
  return true;
}

bool checkTrainingFlags() {
  if (gradAccum < 1 || gradAccum > 1000000) {
    errs() << "error: --grad-accum takes a number of micro-batches from 1 to 1000000, got "
           << gradAccum << "\n";
    return false;
  }
  if (gradAccum > 1 && !hasOptimizer()) {
    errs() << "error: --grad-accum needs --optimizer (the accumulated gradients feed its "
              "update)\n";
    return false;
  }
  if (dataParallel && !training()) {
    errs() << "error: --data-parallel combines the training step's gradients and needs "
              "--loss\n";
    return false;
  }
  if (!bucketSize.empty()) {
    if (!dataParallel) {
      errs() << "error: --bucket-size sizes the buckets of --data-parallel\n";
      return false;
    }
    if (!trainc::parseByteSize(bucketSize)) {
      errs() << "error: --bucket-size takes a positive size in bytes, or with a unit (KiB, "
                "MiB, GiB, TiB, KB, MB, GB, TB), e.g. 25MiB; got '" << bucketSize << "'\n";
      return false;
    }
  }
  if ((rematMode.getNumOccurrences() || !memoryBudget.empty()) && !training()) {
    errs() << "error: --remat and --memory-budget are about the training step and need "
              "--loss\n";
    return false;
  }
  if (lossScaleMode.getNumOccurrences()) {
    if (precisionMode != Precision::Fp16 &&
        lossScaleMode.scaling != trainc::rt::LossScaling::None) {
      errs() << "error: --loss-scale is for --precision=fp16 ("
             << trainc::optionName(precisionMode.getValue())
             << " has fp32's exponent range and needs no loss scaling)\n";
      return false;
    }
    if (!hasOptimizer()) {
      errs() << "error: --loss-scale needs --optimizer (the optimizer step unscales the "
                "gradients)\n";
      return false;
    }
  }
  if (precisionMode != Precision::Fp32 && !training()) {
    errs() << "error: --precision=" << trainc::optionName(precisionMode.getValue())
           << " is a training precision and needs --loss (prediction runs in fp32)\n";
    return false;
  }
  std::vector<std::string> phases = trainc::pipelinePhases();
  if (!compileTo.empty() && compileTo != "import" && !llvm::is_contained(phases, compileTo)) {
    errs() << "error: unknown phase '" << compileTo << "'; phases: import";
    for (const std::string &p : phases)
      errs() << ", " << p;
    errs() << "\n";
    return false;
  }
  if (llvm::is_contained(trainc::trainingPhases(), compileTo) && !training()) {
    errs() << "error: phase '" << compileTo << "' runs only with --loss\n";
    return false;
  }
  if (hasOptimizer() && !training()) {
    errs() << "error: --optimizer needs --loss\n";
    return false;
  }
  if (nesterov && (!hasOptimizer() || optimizerKind != Optimizer::Sgd)) {
    errs() << "error: --nesterov is Nesterov momentum of --optimizer=sgd; "
           << (!hasOptimizer() ? std::string("no --optimizer was given")
                               : std::string("this is --optimizer=") +
                                     trainc::optionName(optimizerKind.getValue()))
           << "\n";
    return false;
  }
  if (noDecay.getNumOccurrences() && !hasOptimizer()) {
    errs() << "error: --no-decay says which parameters the optimizer does not decay; it "
              "needs --optimizer\n";
    return false;
  }
  if ((!freezeRegex.empty() || classAxis != 1) && !training()) {
    errs() << "error: --freeze and --class-axis need --loss\n";
    return false;
  }
  if (clipGradNorm != 0.0 && (!hasOptimizer() || !(clipGradNorm > 0.0))) {
    errs() << "error: --clip-grad-norm takes a positive norm and needs --optimizer\n";
    return false;
  }
  if (!checkLossAndClippingFlags())
    return false;
  if (entryName != "forward" && !training()) {
    errs() << "error: --entry=" << entryName << " needs --loss\n";
    return false;
  }
  if (entryName == "train_step" && hasOptimizer()) {
    errs() << "error: --entry=train_step runs the step without an update (the loss and the "
              "gradients are its outputs) and excludes --optimizer; a program built with "
              "--optimizer trains (PROG --data DIR ...)\n";
    return false;
  }
  return true;
}

/// -o names the program file; PROG.build/ goes next to it.
bool checkOutputPath() {
  if (outputPath != "-") {
    sys::fs::file_status status;
    bool exists = !sys::fs::status(outputPath, status);
    if (StringRef(outputPath).ends_with("/") || (exists && sys::fs::is_directory(status))) {
      errs() << "error: -o '" << outputPath << "' is a folder; -o names the program file "
             << "to build (e.g. -o " << (StringRef(outputPath).rtrim('/').empty()
                                             ? std::string("/prog")
                                             : StringRef(outputPath).rtrim('/').str() + "/prog")
             << ")\n";
      return false;
    }
    if (exists && !sys::fs::is_regular_file(status)) {
      errs() << "error: -o '" << outputPath << "' exists and is not a regular file\n";
      return false;
    }
  }
  return true;
}

/// --cuda-arch: sm_NN entries, comma-separated.
std::optional<std::vector<std::string>> parseCudaArchs() {
  std::vector<std::string> archs;
  SmallVector<StringRef> parts;
  StringRef(cudaArch).split(parts, ',', -1, false);
  for (StringRef arch : parts) {
    unsigned number;
    if (!arch.consume_front("sm_") || arch.getAsInteger(10, number) || number < 75) {
      errs() << "error: --cuda-arch takes sm_NN entries (sm_75 or newer), got '"
             << cudaArch << "'\n";
      return std::nullopt;
    }
    archs.push_back(("sm_" + arch).str());
  }

  return archs;
}

/// A trainer can export the trained model (the inference graph): the source
/// embeds only the bytes between its parameters, and the program writes its
/// trained parameters between them, so the parameter data is stored once.
bool addExportTemplate(mlir::ModuleOp module, StringRef buildDir, const std::string &stem,
                       trainc::codegen::EmitOptions &emit) {
  SmallString<256> exportPath(buildDir);
  sys::path::append(exportPath, stem + ".export-segments.bin");
  sys::fs::remove(exportPath);
  if (hasOptimizer()) {
    std::vector<std::string> names;
    for (auto param : module.getOps<trainc::tc::ParamOp>())
      names.push_back(param.getSymName().str());
    auto exported = trainc::frontend::buildExportTemplate(inputPath, names);
    if (!exported) {
      errs() << "error: " << toString(exported.takeError()) << "\n";
      return false;
    }
    if (!writeFile(exportPath, [&](raw_ostream &os) { os << exported->segments; }))
      return false;
    sys::fs::make_absolute(exportPath);
    emit.exportSegmentsPath = exportPath.str().str();
    emit.exportSegmentsBytes = exported->segments.size();
    for (const auto &piece : exported->pieces)
      emit.exportPieces.push_back(
          {piece.segmentBytes, piece.param < 0 ? std::string() : names[piece.param],
           piece.paramBytes});
  }
  return true;
}

/// The program from the compiled module: PROG.build/ keeps the final IR, the
/// source and the compiler's log; then the C++ or CUDA compiler builds PROG.
int writeProgram(mlir::ModuleOp module, bool cuda, const std::vector<std::string> &archs,
                 const std::string &importedFingerprint,
                 llvm::ArrayRef<mlir::ModuleOp> stages = {}) {
  if (outputPath == "-") {
    errs() << (emitKind == EmitKind::Source
                   ? "error: --emit=source needs -o FILE: the source reads the model's "
                     "parameters from FILE.build/, which -o names\n"
                   : "error: compile needs -o PROG, the program to build\n");
    return 1;
  }

  // PROG.build/ keeps the final IR, the source and the compiler's log.
  SmallString<256> buildDir(outputPath + ".build");
  if (std::error_code ec = sys::fs::create_directories(buildDir)) {
    errs() << "error: cannot create '" << buildDir << "': " << ec.message() << "\n";
    return 1;
  }
  std::string stem = sys::path::filename(outputPath).str();
  SmallString<256> irPath(buildDir), sourcePath(buildDir), blobPath(buildDir), logPath(buildDir);
  sys::path::append(irPath, stem + ".mlir");
  sys::path::append(sourcePath, stem + (cuda ? ".cu" : ".cpp"));
  sys::path::append(blobPath, stem + ".params.bin");
  sys::path::append(logPath, stem + ".compile.log");
  if (!writeFile(irPath, [&](raw_ostream &os) {
        module.print(os, printingFlags());
        for (mlir::ModuleOp stage : stages) {
          os << "\n// -----\n";
          stage.print(os, printingFlags());
        }
      }))
    return 1;

  trainc::codegen::EmitOptions emit;
  emit.target = cuda ? trainc::codegen::Target::Cuda : trainc::codegen::Target::Cpu;
  emit.modelName = sys::path::filename(inputPath).str();
  emit.entry = entryName;
  emit.modelFingerprint = importedFingerprint;
  SmallString<256> absoluteBlob(blobPath);
  sys::fs::make_absolute(absoluteBlob);
  emit.paramBlobPath = absoluteBlob.str().str();
  if (!addExportTemplate(module, buildDir, stem, emit))
    return 1;
  // Earlier trainc versions kept a full copy of the model for --export here.
  SmallString<256> oldTemplate(buildDir);
  sys::path::append(oldTemplate, stem + ".export.onnx");
  sys::fs::remove(oldTemplate);
  std::string source;
  std::vector<char> blob;
  raw_string_ostream sourceStream(source);
  emit.microBatches = stages.empty() ? 0 : pipelineFromCommandLine().gradAccum;
  if (failed(stages.empty()
                 ? trainc::codegen::emitProgram(module, emit, sourceStream, blob)
                 : trainc::codegen::emitPipelineProgram(module, stages, emit, sourceStream, blob)))
    return 1;
  if (!writeFile(sourcePath, [&](raw_ostream &os) { os << source; }) ||
      !writeFile(blobPath, [&](raw_ostream &os) { os.write(blob.data(), blob.size()); }))
    return 1;
  if (emitKind == EmitKind::Source)
    return writeOutput([&](raw_ostream &os) { os << source; });
  trainc::codegen::BuildOptions build;
  build.target = emit.target;
  build.cudaArchs = archs;
  build.sourcePath = sourcePath.str().str();
  build.outputPath = outputPath;
  build.logPath = logPath.str().str();
  build.mpi = dataParallel || !stages.empty();
  return trainc::codegen::buildProgram(build, errs()) ? 0 : 1;
}

/// The phases; with --select-batch, the selection entry joins the module
/// after trainc::kSelectEntryAfter, built from the model imported at the
/// selection batch size.
using StageModules = std::vector<mlir::OwningOpRef<mlir::ModuleOp>>;

/// --pipeline-stages: the phases up to the cut on the model, then the later
/// phases on each stage's module (`stages`) and, for prediction and
/// --export, on the model's @forward.
mlir::LogicalResult runStagePhases(mlir::ModuleOp module, const trainc::PipelineOptions &pipeline,
                                   StageModules &stages) {
  if (failed(trainc::runPipeline(module, pipeline)))
    return mlir::failure();
  if (!module->hasAttr(trainc::tc::kPipelineStagesAttrName) ||
      pipeline.stopAfter == trainc::kPipelinePhase)
    return mlir::success();
  stages = trainc::stageModules(module);
  for (auto fn : llvm::make_early_inc_range(module.getOps<mlir::func::FuncOp>()))
    if (fn.getSymName() != "forward")
      fn.erase();
  trainc::PipelineOptions rest = pipeline;
  rest.startAfter = trainc::kPipelinePhase;
  if (failed(trainc::runPipeline(module, rest)))
    return mlir::failure();
  for (size_t k = 0; k < stages.size(); ++k) {
    rest.dumpSuffix = ".stage" + std::to_string(k);
    if (failed(trainc::runPipeline(*stages[k], rest)))
      return mlir::failure();
  }
  return mlir::success();
}

mlir::LogicalResult runPhases(mlir::MLIRContext &context, mlir::ModuleOp module,
                              const trainc::PipelineOptions &pipeline, StageModules &stages) {
  if (pipeline.pipelineStages > 1)
    return runStagePhases(module, pipeline, stages);
  if (selectBatch == 0)
    return trainc::runPipeline(module, pipeline);
  trainc::PipelineOptions first = pipeline;
  first.stopAfter = trainc::kSelectEntryAfter;
  if (failed(trainc::runPipeline(module, first)))
    return mlir::failure();
  trainc::frontend::ImportOptions import;
  import.batchSize = selectBatch;
  import.everyInputBatched = true;
  auto atSelectBatch = trainc::frontend::importModelFile(inputPath, import, context, errs());
  trainc::PipelineOptions selection = first;
  selection.dumpDir.clear();
  selection.passManagerCLOptions = false;
  if (!atSelectBatch || failed(trainc::runPipeline(*atSelectBatch, selection)) ||
      failed(trainc::addSelectEntry(module, *atSelectBatch)))
    return mlir::failure();
  if (pipeline.stopAfter == trainc::kSelectEntryAfter)
    return mlir::success();
  trainc::PipelineOptions rest = pipeline;
  rest.startAfter = trainc::kSelectEntryAfter;
  return trainc::runPipeline(module, rest);
}

/// --select-batch needs a trainer whose loss trainc attaches and a model
/// whose batch axis is symbolic.
bool checkSelectFlags() {
  if (selectBatch == 0)
    return true;
  if (!hasOptimizer() || lossKind == trainc::LossKind::Output) {
    errs() << "error: --select-batch builds the selection entry of a trainer: it needs "
              "--optimizer and --loss=cross-entropy, mse or bce\n";
    return false;
  }
  if (selectBatch < batchSize || selectBatch > (int64_t(1) << 24)) {
    errs() << "error: --select-batch=" << selectBatch << " must be at least --batch-size ("
           << batchSize << ") and at most 2^24: the trainer picks the batch's samples from "
              "the B candidates\n";
    return false;
  }
  if (compileTo == "import" || compileTo == "loss" || compileTo == "fold-bias-bn") {
    errs() << "error: --select-batch: the selection entry joins the module after the "
           << trainc::kSelectEntryAfter << " phase; --compile-to=" << compileTo
           << " stops before it\n";
    return false;
  }
  if (batchIsFixed()) {
    errs() << "error: --select-batch: the model's batch size is fixed; it cannot run at "
           << selectBatch << "\n";
    return false;
  }
  return true;
}

/// One line on a pipeline stage: its ops, parameters, estimated time and
/// what it sends on (its @loss as the pipeline phase cut it).
void noteStage(mlir::ModuleOp stage, size_t k) {
  auto loss = stage.lookupSymbol<mlir::func::FuncOp>("loss");
  if (!loss)
    return;
  int64_t ops = 0, params = 0, paramBytes = 0;
  std::string sends;
  loss.walk([&](mlir::Operation *op) {
    if (auto send = mlir::dyn_cast<trainc::tc::SendOp>(op))
      sends += (sends.empty() ? "'" : ", '") + shownName(send.getTensor()) + "'";
    else if (!mlir::isa<mlir::func::FuncOp, mlir::func::ReturnOp, trainc::tc::RecvOp>(op))
      ++ops;
  });
  for (auto param : stage.getOps<trainc::tc::ParamOp>()) {
    ++params;
    auto type = mlir::cast<mlir::RankedTensorType>(param.getType());
    paramBytes += type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
  }
  auto cost = loss->getAttrOfType<mlir::FloatAttr>(trainc::tc::kStageCostAttrName);
  auto bytes = loss->getAttrOfType<mlir::IntegerAttr>(trainc::tc::kStageSendBytesAttrName);
  errs() << "note: pipeline stage " << k << ": " << ops << " forward ops, " << params
         << " parameters (" << paramBytes << " bytes), estimated "
         << llvm::format("%.3g", cost ? cost.getValueAsDouble() : 0.0)
         << " s per micro-batch at 20 TFLOP/s and 1 TB/s";
  if (!sends.empty())
    errs() << "; sends " << sends << " (" << (bytes ? bytes.getInt() : 0)
           << " bytes per micro-batch)";
  errs() << "\n";
}

/// --pipeline-stages after the phases: the report, the IR (the model's
/// @forward, then each stage's module, separated as trainc-opt
/// --split-input-file reads them) or the program.
int finishStages(mlir::ModuleOp module, StageModules &stages, bool cuda,
                 const std::vector<std::string> &archs, const std::string &importedFingerprint) {
  if (!deviceMemory.empty()) {
    errs() << "error: --device-memory searches one process's batch size; with "
              "--pipeline-stages, --report-memory shows each stage's peak\n";
    return 1;
  }
  for (size_t k = 0; k < stages.size(); ++k)
    noteStage(*stages[k], k);
  if (reportMemory)
    for (size_t k = 0; k < stages.size(); ++k) {
      const int64_t stageCount = static_cast<int64_t>(stages.size());
      const int64_t micro = pipelineFromCommandLine().gradAccum;
      outs() << "stage " << k << ":\n";
      printMemoryReport(*stages[k], outs(),
                        std::max<int64_t>(1, std::min<int64_t>(stageCount - k, micro)));
    }
  if (!compileTo.empty() || emitKind == EmitKind::Mlir)
    return writeOutput([&](raw_ostream &os) {
      module.print(os, printingFlags());
      for (auto &stage : stages) {
        os << "\n// -----\n";
        stage->print(os, printingFlags());
      }
      os << "\n";
    });
  std::vector<mlir::ModuleOp> planned;
  for (auto &stage : stages)
    planned.push_back(*stage);
  return writeProgram(module, cuda, archs, importedFingerprint, planned);
}

int runCompile() {
  if (!checkModeFlags() || !checkTrainingFlags() || !checkPipelineFlags() || !checkKfacFlags() ||
      !checkOutputPath() || !checkSelectFlags())
    return 1;
  const bool cuda = cudaTarget();
  std::optional<std::vector<std::string>> archs = parseCudaArchs();
  if (!archs)
    return 1;

  mlir::MLIRContext context;
  auto module = importFromCommandLine(context);
  if (!module || !checkFileNames(*module, training()) || !checkNoFloat64(*module))
    return 1;
  // Checkpoints name the model as imported, before any speed phase.
  const std::string importedFingerprint = trainc::codegen::modelFingerprint(*module);
  mlir::ScopedDiagnosticHandler handler(&context, [](mlir::Diagnostic &diag) {
    printDiagnostic(errs(), diag);
    return mlir::success();
  });
  trainc::PipelineOptions pipeline = pipelineFromCommandLine();
  StageModules stages;
  if (compileTo != "import" && failed(runPhases(context, *module, pipeline, stages)))
    return 1;
  if (!stages.empty())
    return finishStages(*module, stages, cuda, *archs, importedFingerprint);
  if (reportMemory)
    printMemoryReport(*module, outs());
  noteSlowSpeedFlags(*module, pipeline, reportMemory);
  noteKfac(*module);
  // The remat phase meets the budget on the step's live bytes before
  // fusion; the placed arena is what the program allocates.
  if (auto step = module->lookupSymbol<mlir::func::FuncOp>("train_step");
      step && pipeline.memoryBudget > 0)
    if (auto arena = step->getAttrOfType<mlir::IntegerAttr>(trainc::tc::kArenaBytesAttrName);
        arena && arena.getInt() > pipeline.memoryBudget) {
      errs() << "error: --memory-budget=" << memoryBudget << ": the training step's arena is "
             << arena.getInt() << " bytes, more than the " << pipeline.memoryBudget
             << " budgeted (the remat phase brought its live bytes under the budget; the "
                "placement leaves gaps between buffers); raise the budget to "
             << arena.getInt() << " or lower the batch size\n";
      return 1;
    }
  if (!deviceMemory.empty() &&
      !checkDeviceMemory(*module, *trainc::parseByteSize(deviceMemory), outs()))
    return 1;
  if (!compileTo.empty() || emitKind == EmitKind::Mlir)
    return writeOutput([&](raw_ostream &os) {
      module->print(os, printingFlags());
      os << "\n";
    });
  return writeProgram(*module, cuda, *archs, importedFingerprint);
}

} // namespace

/// Why this machine has a GPU for --target=auto, or std::nullopt with the
/// reason it has none in `why`: the NVIDIA driver lists its GPUs under
/// /proc/driver/nvidia/gpus (and makes /dev/nvidia0); CUDA_VISIBLE_DEVICES=""
/// or -1 hides them from CUDA programs.
std::optional<std::string> visibleGpu(std::string &why) {
  if (const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
      visible && (!*visible || !std::strncmp(visible, "-1", 2))) {
    why = "CUDA_VISIBLE_DEVICES hides every GPU";
    return std::nullopt;
  }
  std::error_code error;
  for (const auto &entry :
       std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", error)) {
    (void)entry;
    return std::string("the NVIDIA driver lists a GPU");
  }
  if (std::filesystem::exists("/dev/nvidia0", error))
    return std::string("/dev/nvidia0 exists");
  why = "no NVIDIA driver or GPU is visible";
  return std::nullopt;
}

/// --target=auto: cuda where a GPU is visible, else cpu; compile says which.
void resolveTarget(bool announce) {
  if (target != TargetChoice::Auto)
    return;
  std::string why;
  std::optional<std::string> gpu = visibleGpu(why);
  target = gpu ? TargetChoice::Cuda : TargetChoice::Cpu;
  if (announce)
    errs() << "note: --target=auto: " << (gpu ? *gpu + ", building for CUDA (--target=cpu "
                                                       "for the CPU)"
                                              : why + ", building for the CPU "
                                                      "(--target=cuda to build for a GPU "
                                                      "elsewhere)")
           << "\n";
}

/// One group of options in `trainc COMMAND --help`.
struct HelpGroup {
  const char *title;
  std::vector<const char *> options;
};

/// The options of each command, grouped by what they are about.
std::vector<HelpGroup> helpGroups(StringRef command) {
  if (command == "import")
    return {{"Model", {"batch-size"}},
            {"Output", {"o", "elide-constants", "print-debuginfo"}}};
  if (command == "check")
    return {{"Model", {"batch-size", "target"}},
            {"Training (--training)",
             {"training", "loss", "label", "class-axis", "freeze", "optimizer"}}};
  return {{"Model and loss",
           {"batch-size", "loss", "label", "class-axis", "freeze", "entry"}},
          {"Loss options (cross-entropy)", {"label-smoothing", "class-weights", "ignore-index"}},
          {"Sample weights", {"sample-weight-norm"}},
          {"Training",
           {"optimizer", "nesterov", "no-decay", "clip-grad-norm", "clip-grad-value",
            "log-grad-norm", "grad-accum", "select-batch"}},
          {"Speed",
           {"target", "cuda-arch", "precision", "loss-scale", "fuse", "layout", "pad-to"}},
          {"Memory", {"remat", "memory-budget", "report-memory", "device-memory"}},
          {"Parallel", {"data-parallel", "bucket-size", "pipeline-stages", "stage-boundaries",
                        "micro-batches"}},
          {"Output",
           {"o", "emit", "compile-to", "dump-ir", "elide-constants", "print-debuginfo"}}};
}

/// `trainc COMMAND --help`: the command's own options first, grouped, with
/// examples; MLIR's options (every phase of compile and check) under one
/// heading at the end.
void printCommandHelp(StringRef command) {
  const auto &registered = cl::getRegisteredOptions();
  size_t width = 0;
  for (const auto &entry : registered)
    if (!entry.getValue()->getOptionHiddenFlag())
      width = std::max(width, entry.getValue()->getOptionWidth());
  outs() << "USAGE: trainc " << command << " [options] <model.onnx | model.onnxtxt>\n";
  if (command == "compile")
    outs() << "\nEXAMPLES:\n"
              "  trainc compile model.onnx --batch-size=32 --loss=cross-entropy "
              "--optimizer=adamw -o trainer\n"
              "  trainc compile model.onnx --batch-size=64 --loss=cross-entropy "
              "--optimizer=sgd --precision=bf16 --remat=auto --report-memory -o trainer\n";
  else if (command == "check")
    outs() << "\nEXAMPLES:\n  trainc check model.onnx\n"
              "  trainc check model.onnx --training --loss=cross-entropy\n";
  else
    outs() << "\nEXAMPLES:\n  trainc import model.onnx --batch-size=8\n";
  std::vector<HelpGroup> groups = helpGroups(command);
  for (const HelpGroup &group : groups) {
    outs() << "\n" << group.title << " options:\n";
    for (const char *name : group.options)
      if (cl::Option *option = registered.lookup(name))
        option->printOptionInfo(width);
  }
  if (command == "import")
    return;
  if (command == "compile") {
    // An option of trainc's that no group names still shows.
    std::vector<cl::Option *> others;
    for (const auto &entry : registered) {
      cl::Option *option = entry.getValue();
      bool grouped = llvm::any_of(groups, [&](const HelpGroup &g) {
        return llvm::is_contained(g.options, entry.getKey());
      });
      if (!grouped && llvm::is_contained(option->Categories, &category) &&
          entry.getKey() != "training")
        others.push_back(option);
    }
    if (!others.empty()) {
      outs() << "\nOther options:\n";
      for (cl::Option *option : others)
        option->printOptionInfo(width);
    }
  }
  outs() << "\nMLIR options (every phase of " << command << "):\n";
  std::vector<cl::Option *> mlir;
  for (const auto &entry : registered)
    if (entry.getKey().starts_with("mlir-") &&
        entry.getValue()->getOptionHiddenFlag() == cl::NotHidden)
      mlir.push_back(entry.getValue());
  llvm::sort(mlir, [](cl::Option *a, cl::Option *b) { return a->ArgStr < b->ArgStr; });
  for (cl::Option *option : mlir)
    option->printOptionInfo(width);
}

/// Flags of the compiled trainer (./PROG --help), which `trainc compile`
/// does not take: named as such instead of LLVM's nearest spelling.
constexpr const char *kTrainerFlags[] = {
    "data",      "eval-data",  "epochs",      "steps",        "lr",          "momentum",
    "weight-decay", "beta1",   "beta2",       "eps",          "seed",        "no-shuffle",
    "workers",   "save-params", "log",        "export",       "checkpoint-dir",
    "checkpoint-every", "resume", "params",   "lr-schedule",  "warmup-steps", "step-size",
    "gamma",     "min-lr",     "scale-growth-interval", "cuda-graph", "cudnn-benchmark",
    "cudnn-cache", "deterministic", "comm-timeout", "comm-overlap", "predict", "run",
    "out",       "threads",    "info"};

/// The commands that take trainc option `name` when `command` would ignore
/// it, or none. Every command parses every trainc option: import reads only
/// the model's and the printed IR's, check builds in memory and writes
/// nothing, and --training is check's.
std::optional<std::string> optionOfOtherCommand(StringRef command, StringRef name) {
  static const char *const kImports[] = {"batch-size", "o", "elide-constants",
                                         "print-debuginfo"};
  static const char *const kOutputs[] = {"o",          "emit",          "compile-to",
                                         "dump-ir",    "cuda-arch",     "report-memory",
                                         "device-memory", "entry",      "elide-constants",
                                         "print-debuginfo"};
  cl::Option *option = cl::getRegisteredOptions().lookup(name);
  if (!option || !llvm::is_contained(option->Categories, &category))
    return std::nullopt;
  if (command == "import" && !llvm::is_contained(kImports, name))
    return std::string(name == "training" ? "`trainc check`" : "`trainc compile`");
  if (command == "check" && llvm::is_contained(kOutputs, name))
    return std::string(llvm::is_contained(kImports, name) ? "`trainc compile` and `trainc import`"
                                                          : "`trainc compile`");
  if (command == "compile" && name == "training")
    return std::string("`trainc check`");
  return std::nullopt;
}

/// Refuses an option that `trainc COMMAND` does not have before LLVM's parser
/// sees it (it suggests the nearest option by spelling, however far, and
/// reads "--optimiser" as a group of one-letter options): a trainer flag is
/// named as one, and only a near miss is suggested. Returns false after
/// printing the error.
bool checkOptionNames(const std::string &command, llvm::ArrayRef<const char *> args) {
  const auto &registered = cl::getRegisteredOptions();
  for (const char *arg : args.drop_front()) {
    StringRef text(arg);
    if (text == "--")
      break;
    if (!text.starts_with("-") || text.size() < 2 ||
        (text.size() > 1 && (isDigit(text[1]) || text[1] == '.')))
      continue;
    StringRef name = text.drop_front(text.starts_with("--") ? 2 : 1).split('=').first;
    if (std::optional<std::string> owner = optionOfOtherCommand(command, name)) {
      errs() << "error: " << (name.size() == 1 ? "-" : "--") << name << " is an option of "
             << *owner << ", not of `trainc "
             << command << "`, which would ignore it (trainc " << command
             << " --help lists its options)\n";
      return false;
    }
    if (name.empty() || registered.count(name))
      continue;
    std::string spelled = "--" + name.str();
    if (llvm::is_contained(kTrainerFlags, name)) {
      errs() << "error: " << spelled << " is a flag of the trainer, not of `trainc " << command
             << "`: give it to the program that compile builds (./PROG --data DIR "
             << spelled << " ...; ./PROG --help lists them)\n";
      return false;
    }
    StringRef best;
    unsigned bestDistance = ~0u;
    for (const auto &entry : registered) {
      StringRef key = entry.getKey();
      cl::Option *option = entry.getValue();
      if (key.size() < 2 || option->getOptionHiddenFlag() == cl::ReallyHidden)
        continue;
      unsigned distance = name.edit_distance(key, true, bestDistance);
      if (distance < bestDistance) {
        best = key;
        bestDistance = distance;
      }
    }
    errs() << "error: `trainc " << command << "` has no option " << spelled;
    if (!best.empty() && bestDistance <= std::max<size_t>(1, name.size() / 4))
      errs() << "; did you mean --" << best << "?";
    errs() << " (trainc " << command << " --help lists them)\n";
    return false;
  }
  return true;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    outs() << kUsage;
    return argc < 2 ? 1 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    outs() << "trainc 0.1 (LLVM/MLIR " << LLVM_VERSION_STRING << ")\n";
    return 0;
  }
  std::string command = argv[1];
  if (command == "plot") {
    // The plot script parses its own arguments (and answers --help).
    std::vector<std::string> args(argv + 2, argv + argc);
    if (args.empty()) {
      errs() << "error: trainc plot needs a log (trainc plot LOG.jsonl... -o curves.png)\n";
      return 1;
    }
    trainc::rt::Status drawn = trainc::rt::detail::drawCurves(args);
    if (!drawn.ok()) {
      errs() << "error: " << drawn.message() << "\n";
      return 1;
    }
    return 0;
  }
  if (command == "pbt")
    return trainc::pbt::runPbt(std::vector<std::string>(argv + 2, argv + argc));
  if (command != "import" && command != "check" && command != "compile") {
    errs() << "error: unknown command '" << command << "'\n\n" << kUsage;
    return 1;
  }
  // MLIR's pass-manager, timing, printing and context options apply to every
  // phase (--mlir-print-ir-after-all, --mlir-timing, ...); --help lists them.
  trainc::registerPipelineCLOptions();
  static const std::string compileToHelp = [] {
    std::string text = "Stop after this phase and write the IR (stdout, or -o FILE): import";
    for (const std::string &phase : trainc::pipelinePhases())
      text += ", " + phase;
    return text;
  }();
  compileTo.setDescription(compileToHelp);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  static cl::OptionCategory mlirCategory("MLIR options (every phase of compile and check)");
  for (auto &option : cl::getRegisteredOptions())
    if (option.getKey().starts_with("mlir-"))
      option.getValue()->addCategory(mlirCategory);
  cl::HideUnrelatedOptions({&category, &mlirCategory});
  std::string overview = "trainc " + command;
  // Parse the command's own options, with "trainc COMMAND" as the program.
  std::string program = std::string(argv[0]) + " " + command;
  std::vector<const char *> args = {program.c_str()};
  args.insert(args.end(), argv + 2, argv + argc);
  for (const char *arg : args)
    if (!std::strcmp(arg, "--help") || !std::strcmp(arg, "-help") || !std::strcmp(arg, "-h")) {
      printCommandHelp(command);
      return 0;
    }
  if (!checkOptionNames(command, args))
    return 1;
  if (!cl::ParseCommandLineOptions(static_cast<int>(args.size()), args.data(),
                                   overview, &errs()))
    return 1;
  // MLIR aborts when module-scope IR printing meets a multithreaded context.
  const auto &registered = cl::getRegisteredOptions();
  if (registered.lookup("mlir-print-ir-module-scope")->getNumOccurrences() &&
      !registered.lookup("mlir-disable-threading")->getNumOccurrences()) {
    errs() << "error: --mlir-print-ir-module-scope needs --mlir-disable-threading\n";
    return 1;
  }
  if (inputPath.empty()) {
    errs() << "error: no model given\n\n" << kUsage;
    return 1;
  }
  resolveTarget(/*announce=*/command == "compile");
  if (command == "compile")
    return runCompile();
  return command == "import" ? runImport() : runCheck();
}
