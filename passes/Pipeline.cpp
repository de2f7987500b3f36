//===- Pipeline.cpp - the phases of trainc compile ------------------------===//
//
// Each phase is a named pass pipeline. The phases of DESIGN.md that are not
// built yet are simply not in the list: a phase exists once it does work.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipeline.h"
#include "passes/Passes.h"

#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>

using namespace mlir;

namespace {

struct Phase {
  const char *name;
  /// Whether the phase belongs to a training build (needs --loss).
  bool training;
  std::function<void(OpPassManager &, const trainc::PipelineOptions &)> build;
};

const std::vector<Phase> &phases() {
  static const std::vector<Phase> list = {
      {"loss", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         trainc::AttachLossOptions loss;
         loss.kind = o.loss;
         loss.labelName = o.label;
         loss.classAxis = o.classAxis;
         pm.addPass(trainc::createAttachLoss(loss));
       }},
      {"fold-bias-bn", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &) {
         pm.addPass(trainc::createFoldBiasBeforeBatchNorm());
       }},
      {"autodiff", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         trainc::AutodiffOptions autodiff;
         autodiff.freeze = o.freeze;
         pm.addPass(trainc::createAutodiff(autodiff));
       }},
      {"optimizer", true,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (o.optimizer.empty())
           return;
         trainc::OptimizerOptions opt;
         opt.kind = o.optimizer;
         opt.nesterov = o.nesterov;
         opt.clipGradNorm = o.clipGradNorm;
         pm.addPass(trainc::createOptimizer(opt));
       }},
      {"fuse", false,
       [](OpPassManager &pm, const trainc::PipelineOptions &o) {
         if (o.fuse)
           pm.addPass(trainc::createFuse());
       }},
      {"plan", false,
       [](OpPassManager &pm, const trainc::PipelineOptions &) {
         pm.addPass(trainc::createPlanMemory());
       }},
  };
  return list;
}

LogicalResult dump(ModuleOp module, llvm::StringRef dir, int index, llvm::StringRef name) {
  if (dir.empty())
    return success();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return module.emitError("cannot create --dump-ir folder '") << dir << "': " << ec.message();
  llvm::SmallString<256> path(dir);
  std::string file = (index < 10 ? "0" : "") + std::to_string(index) + "-" + name.str() + ".mlir";
  llvm::sys::path::append(path, file);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return module.emitError("cannot write '") << path << "': " << ec.message();
  module.print(os, OpPrintingFlags().elideLargeElementsAttrs(16).enableDebugInfo(true, false));
  return success();
}

} // namespace

std::vector<std::string> trainc::pipelinePhases() {
  std::vector<std::string> names;
  for (const Phase &p : phases())
    names.push_back(p.name);
  return names;
}

LogicalResult trainc::runPipeline(ModuleOp module, const PipelineOptions &options) {
  if (failed(dump(module, options.dumpDir, 1, "import")))
    return failure();
  int index = 2;
  for (const Phase &phase : phases()) {
    if (phase.training && options.loss.empty())
      continue;
    PassManager pm(module.getContext());
    phase.build(pm, options);
    if (failed(pm.run(module)) ||
        failed(dump(module, options.dumpDir, index++, phase.name)))
      return failure();
    if (options.stopAfter == phase.name)
      break;
  }
  return success();
}
