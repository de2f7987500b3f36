//===- Pipeline.cpp - the phases of trainc compile ------------------------===//
//
// Each phase is a named pass pipeline. The phases of DESIGN.md that are not
// built yet are simply not in the list: a phase exists once it does work.
// A phase that changes the IR ends with the canonicalizer and CSE on every
// function, so each phase's IR (--compile-to, --dump-ir) and the next phase's
// input are canonical. Every phase has its own PassManager; with
// PipelineOptions::passManagerCLOptions each one takes MLIR's pass-manager
// command-line options (--mlir-print-ir-after-all, --mlir-timing, ...).
//
//===----------------------------------------------------------------------===//

#include "passes/Pipeline.h"
#include "passes/Passes.h"

#include "ir/TcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <functional>

using namespace mlir;

namespace {

struct Phase {
  const char *name;
  /// Whether the phase belongs to a training build (needs --loss).
  bool training;
  /// Adds the phase's passes; returns false when it adds none (the phase is
  /// skipped and needs no cleanup).
  std::function<bool(OpPassManager &, const trainc::PipelineOptions &)> build;
  /// Whether canonicalize and CSE follow the phase's passes (every phase
  /// that rewrites the IR; not plan, whose offsets describe the final order).
  bool cleanup = true;
};

/// The cleanup after a phase: folds, canonical forms and dead ops, then
/// common subexpressions, in every function.
void addCleanup(OpPassManager &pm) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createCanonicalizerPass());
  func.addPass(createCSEPass());
}

const std::vector<Phase> &phases() {
  static const std::vector<Phase> list = {
      {"loss", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         trainc::AttachLossOptions loss;
         loss.kind = *o.loss;
         loss.labelName = o.label;
         loss.classAxis = o.classAxis;
         loss.labelSmoothing = o.labelSmoothing;
         loss.classWeights = o.classWeights;
         loss.ignoreIndex = o.ignoreIndex;
         loss.sampleWeightNorm = o.sampleWeightNorm;
         pm.addPass(trainc::createAttachLoss(loss));
         return true;
       }},
      {"fold-bias-bn", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &) {
         pm.addPass(trainc::createFoldBiasBeforeBatchNorm());
         return true;
       }},
      {"mixed-precision", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (o.precision == trainc::rt::Precision::Fp32)
           return false;
         trainc::MixedPrecisionOptions mixed;
         mixed.precision = o.precision;
         mixed.lossScale = o.lossScale;
         pm.addPass(trainc::createMixedPrecision(mixed));
         return true;
       }},
      {"pipeline", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (o.pipelineStages <= 1)
           return false;
         trainc::PipelineStagesOptions cut;
         cut.stages = o.pipelineStages;
         cut.boundaries = o.stageBoundaries;
         pm.addPass(trainc::createPipelineStages(cut));
         return true;
       }},
      {"autodiff", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         trainc::AutodiffOptions autodiff;
         autodiff.freeze = o.freeze;
         autodiff.kfac = o.optimizer == trainc::rt::Optimizer::Kfac;
         pm.addPass(trainc::createAutodiff(autodiff));
         if (o.precision != trainc::rt::Precision::Fp32) {
           trainc::MixedPrecisionOptions legalize;
           legalize.precision = o.precision;
           legalize.legalizeStep = true;
           pm.addPass(trainc::createMixedPrecision(legalize));
         }
         return true;
       }},
      {"layout", false,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (o.layout != trainc::Layout::Nhwc)
           return false;
         pm.addPass(trainc::createLayout());
         return true;
       }},
      {"pad", false,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (o.padTo <= 1)
           return false;
         trainc::PadOptions pad;
         pad.multiple = o.padTo;
         pm.addPass(trainc::createPad(pad));
         return true;
       }},
      {"remat", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (o.remat == trainc::Remat::None)
           return false;
         trainc::RematOptions remat;
         remat.memoryBudget = o.memoryBudget;
         pm.addPass(trainc::createRemat(remat));
         return true;
       }},
      {"grad-accum", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (o.gradAccum == 1)
           return false;
         trainc::GradAccumOptions accum;
         accum.microBatches = o.gradAccum;
         pm.addPass(trainc::createGradAccum(accum));
         return true;
       }},
      {"allreduce", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (!o.dataParallel)
           return false;
         trainc::AllReduceOptions allReduce;
         allReduce.bucketBytes = o.bucketBytes;
         pm.addPass(trainc::createAllReduce(allReduce));
         return true;
       }},
      {"optimizer", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (!o.optimizer)
           return false;
         trainc::OptimizerOptions opt;
         opt.kind = *o.optimizer;
         opt.nesterov = o.nesterov;
         opt.noDecay = o.noDecay;
         opt.clipGradNorm = o.clipGradNorm;
         opt.clipGradValue = o.clipGradValue;
         opt.gradNorm = o.gradNorm;
         opt.earlyUpdates = o.remat != trainc::Remat::None;
         pm.addPass(trainc::createOptimizer(opt));
         return true;
       }},
      {"fuse", false,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (o.fusion == trainc::Fusion::None)
           return false;
         trainc::FuseOptions fuse;
         fuse.epilogues = o.fusion == trainc::Fusion::Auto;
         pm.addPass(trainc::createFuse(fuse));
         return true;
       }},
      {"plan", false,
       [](OpPassManager &pm, const trainc::PipelineOptions &) {
         pm.addPass(trainc::createPlanMemory());
         return true;
       },
       /*cleanup=*/false},
  };
  return list;
}

LogicalResult dump(ModuleOp module, llvm::StringRef dir, int index, llvm::StringRef name,
                   llvm::StringRef suffix = "") {
  if (dir.empty())
    return success();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return module.emitError("cannot create --dump-ir folder '") << dir << "': " << ec.message();
  llvm::SmallString<256> path(dir);
  std::string file = (index < 10 ? "0" : "") + std::to_string(index) + "-" + name.str() +
                     suffix.str() + ".mlir";
  llvm::sys::path::append(path, file);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return module.emitError("cannot write '") << path << "': " << ec.message();
  module.print(os, OpPrintingFlags().elideLargeElementsAttrs(16).enableDebugInfo(true, false));
  return success();
}

/// A phase's options in trainc-opt: the fields of PipelineOptions that the
/// phases read, with the same defaults and types.
struct PhaseOptions : PassPipelineOptions<PhaseOptions> {
  Option<trainc::LossKind> loss{*this, "loss"};
  Option<std::string> label{*this, "label", llvm::cl::init("label")};
  Option<int64_t> classAxis{*this, "class-axis", llvm::cl::init(1)};
  Option<std::string> freeze{*this, "freeze", llvm::cl::desc("parameters not trained (regex)")};
  Option<double> clipGradNorm{*this, "clip-grad-norm", llvm::cl::init(0.0)};
  Option<double> clipGradValue{*this, "clip-grad-value", llvm::cl::init(0.0)};
  Option<bool> gradNorm{*this, "grad-norm", llvm::cl::init(false)};
  Option<double> labelSmoothing{*this, "label-smoothing", llvm::cl::init(0.0)};
  ListOption<double> classWeights{*this, "class-weights"};
  Option<int64_t> ignoreIndex{*this, "ignore-index", llvm::cl::init(-100)};
  Option<trainc::rt::SampleWeightNorm> sampleWeightNorm{
      *this, "sample-weight-norm", llvm::cl::init(trainc::rt::SampleWeightNorm::Sum)};
  Option<trainc::rt::Optimizer> optimizer{*this, "optimizer"};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::init(false)};
  Option<std::string> noDecay{*this, "no-decay", llvm::cl::init("auto"),
                              llvm::cl::desc("1d, none, a regular expression or auto")};
  Option<trainc::rt::Precision> precision{*this, "precision",
                                          llvm::cl::init(trainc::rt::Precision::Fp32)};
  Option<trainc::LossScale> lossScale{*this, "loss-scale"};
  Option<trainc::Layout> layout{*this, "layout", llvm::cl::init(trainc::Layout::Nchw)};
  Option<int64_t> padTo{*this, "pad-to", llvm::cl::init(1)};
  Option<bool> dataParallel{*this, "data-parallel", llvm::cl::init(false)};
  Option<int64_t> bucketBytes{*this, "bucket-bytes", llvm::cl::init(26214400)};
  Option<trainc::Remat> remat{*this, "remat", llvm::cl::init(trainc::Remat::None)};
  Option<int64_t> memoryBudget{*this, "memory-budget", llvm::cl::init(0)};
  Option<int64_t> gradAccum{*this, "grad-accum", llvm::cl::init(1)};
  Option<int64_t> pipelineStages{*this, "pipeline-stages", llvm::cl::init(1)};
  ListOption<std::string> stageBoundaries{*this, "stage-boundaries"};
  Option<trainc::Fusion> fusion{*this, "fuse", llvm::cl::init(trainc::Fusion::Auto)};

  trainc::PipelineOptions bind() const {
    trainc::PipelineOptions o;
    if (loss.hasValue())
      o.loss = loss;
    o.label = label;
    o.classAxis = classAxis;
    o.freeze = freeze;
    o.clipGradNorm = clipGradNorm;
    o.clipGradValue = clipGradValue;
    o.gradNorm = gradNorm;
    o.labelSmoothing = labelSmoothing;
    o.classWeights.assign(classWeights.begin(), classWeights.end());
    o.ignoreIndex = ignoreIndex;
    o.sampleWeightNorm = sampleWeightNorm;
    if (optimizer.hasValue())
      o.optimizer = optimizer;
    o.nesterov = nesterov;
    o.noDecay = noDecay;
    o.precision = precision;
    o.lossScale = lossScale;
    o.layout = layout;
    o.padTo = padTo;
    o.dataParallel = dataParallel;
    o.bucketBytes = bucketBytes;
    o.remat = remat;
    o.memoryBudget = memoryBudget;
    o.gradAccum = gradAccum;
    o.pipelineStages = pipelineStages;
    o.stageBoundaries.assign(stageBoundaries.begin(), stageBoundaries.end());
    o.fusion = fusion;
    return o;
  }
};

} // namespace

void trainc::registerPhasePipelines() {
  for (const Phase &phase : phases()) {
    const Phase *p = &phase; // phases() lives for the whole program
    PassPipelineRegistration<PhaseOptions>(
        std::string("trainc-phase-") + p->name,
        std::string("the ") + p->name + " phase of trainc compile, with its cleanup",
        [p](OpPassManager &pm, const PhaseOptions &options) {
          if (p->build(pm, options.bind()) && p->cleanup)
            addCleanup(pm);
        });
  }
}

std::optional<int64_t> trainc::parseByteSize(llvm::StringRef text) {
  static const std::pair<const char *, double> units[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
      {"KB", 1e3},     {"MB", 1e6},        {"GB", 1e9},           {"TB", 1e12},
      {"B", 1.0}};
  double scale = 1.0;
  llvm::StringRef number = text.trim();
  for (auto [unit, factor] : units)
    if (number.consume_back(unit)) {
      scale = factor;
      break;
    }
  number = number.trim();
  double value;
  // Digits and at most one point: no signs, exponents, inf or nan.
  if (number.empty() || number.find_first_not_of("0123456789.") != llvm::StringRef::npos ||
      number.count('.') > 1 || number == "." || number.getAsDouble(value))
    return std::nullopt;
  double bytes = std::floor(value * scale);
  if (!(bytes >= 1.0) || bytes > 4611686018427387904.0) // 2^62
    return std::nullopt;
  return static_cast<int64_t>(bytes);
}

std::vector<std::string> trainc::pipelinePhases() {
  std::vector<std::string> names;
  for (const Phase &p : phases())
    names.push_back(p.name);
  return names;
}

std::vector<std::string> trainc::trainingPhases() {
  std::vector<std::string> names;
  for (const Phase &p : phases())
    if (p.training)
      names.push_back(p.name);
  return names;
}

void trainc::registerPipelineCLOptions() {
  registerCanonicalizerPass();
  registerCSEPass();
  registerTraincPasses();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
}

LogicalResult trainc::runPipeline(ModuleOp module, const PipelineOptions &options) {
  if (options.startAfter.empty() &&
      failed(dump(module, options.dumpDir, 1, "import", options.dumpSuffix)))
    return failure();
  // --mlir-timing: one report for the whole pipeline, a scope per phase.
  DefaultTimingManager timing;
  if (options.passManagerCLOptions)
    applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootTiming = timing.getRootScope();
  int index = 2;
  bool started = options.startAfter.empty();
  for (const Phase &phase : phases()) {
    if (!started) {
      started = options.startAfter == phase.name;
      if (!phase.training || options.loss)
        ++index;
      continue;
    }
    if (phase.training && !options.loss)
      continue;
    PassManager pm(module.getContext());
    bool active = phase.build(pm, options);
    if (active && phase.cleanup)
      addCleanup(pm);
    if (options.passManagerCLOptions && failed(applyPassManagerCLOptions(pm)))
      return failure();
    TimingScope phaseTiming = active ? rootTiming.nest(phase.name) : TimingScope();
    if (active && timing.isEnabled())
      pm.enableTiming(phaseTiming);
    if (failed(pm.run(module)) ||
        failed(dump(module, options.dumpDir, index++, phase.name, options.dumpSuffix)))
      return failure();
    if (options.stopAfter == phase.name ||
        (active && phase.name == llvm::StringRef(kPipelinePhase)))
      break;
  }
  return success();
}

std::vector<OwningOpRef<ModuleOp>> trainc::stageModules(ModuleOp cut) {
  std::vector<OwningOpRef<ModuleOp>> stages;
  auto count = cut->getAttrOfType<IntegerAttr>(tc::kPipelineStagesAttrName);
  for (int64_t k = 0; count && k < count.getInt(); ++k) {
    OwningOpRef<ModuleOp> stage = cut.clone();
    std::string mine = "stage" + std::to_string(k) + "_loss";
    for (auto fn : llvm::make_early_inc_range(stage->getOps<func::FuncOp>()))
      if (fn.getSymName() != mine)
        fn.erase();
    auto loss = stage->lookupSymbol<func::FuncOp>(mine);
    loss.setSymName("loss");
    llvm::DenseSet<Attribute> read;
    for (unsigned i = 0; i < loss.getNumArguments(); ++i)
      if (Attribute symbol = loss.getArgAttr(i, tc::kParamAttrName))
        read.insert(symbol);
    for (auto param : llvm::make_early_inc_range(stage->getOps<tc::ParamOp>()))
      if (!read.contains(FlatSymbolRefAttr::get(param.getSymNameAttr())))
        param.erase();
    (*stage)->setAttr(tc::kPipelineStageAttrName,
                      Builder(cut.getContext()).getI64IntegerAttr(k));
    stages.push_back(std::move(stage));
  }
  return stages;
}
