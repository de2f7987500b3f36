//===- Pipeline.h - the phases of trainc compile ---------------*- C++ -*-===//

#ifndef TRAINC_PASSES_PIPELINE_H
#define TRAINC_PASSES_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace trainc {

/// Names of the phases after import, in order (DESIGN.md "Phases").
std::vector<std::string> pipelinePhases();

/// Runs the phases up to and including `stopAfter` (all when empty). With a
/// non-empty `dumpDir`, writes `NN-PHASE.mlir` after import and every phase.
/// Diagnostics go through the context's handler.
mlir::LogicalResult runPipeline(mlir::ModuleOp module, llvm::StringRef stopAfter,
                                llvm::StringRef dumpDir);

} // namespace trainc

#endif // TRAINC_PASSES_PIPELINE_H
