//===- Emitter.h - tc (after planning) to C++ / CUDA source ----*- C++ -*-===//

#ifndef TRAINC_CODEGEN_EMITTER_H
#define TRAINC_CODEGEN_EMITTER_H

#include "codegen/KernelWriter.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/raw_ostream.h"

#include <map>
#include <string>
#include <vector>

namespace trainc::codegen {

struct EmitOptions {
  Target target = Target::Cpu;
  /// Shown in the program's --info and the file header.
  std::string modelName;
  /// Absolute path of the parameter blob the source embeds with .incbin.
  std::string paramBlobPath;
  /// The function the program runs: forward (prediction) by default, or
  /// train_step / loss to inspect losses and gradients with --run.
  std::string entry = "forward";
  /// For a trainer: the ONNX export template (absolute path) and the byte
  /// offset of each parameter's data in it, by name.
  std::string exportTemplatePath;
  std::map<std::string, uint64_t> exportOffsets;
  uint64_t exportTemplateBytes = 0;
};

/// Emits the program of a planned module (`trainc-plan` has run): one source
/// file for the target, and the bytes of the parameter blob (initial values
/// of parameters and constants) that the source embeds. Errors are reported
/// as diagnostics on the offending op.
mlir::LogicalResult emitProgram(mlir::ModuleOp module, const EmitOptions &options,
                                llvm::raw_ostream &source,
                                std::vector<char> &paramBlob);

/// 16 hex digits identifying the compiled program: a hash of the final IR
/// (functions, op attributes, parameter names, shapes and dtypes, batch size,
/// optimizer) with the target and the entry, independent of the initial
/// parameter values, of locations and of file paths. The program carries it
/// (Program::fingerprint) and checkpoints record it.
std::string programFingerprint(mlir::ModuleOp module, const EmitOptions &options);

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_EMITTER_H
