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
  /// For a trainer: the segments of the ONNX export (absolute path of the
  /// file the source embeds; the model's bytes between parameters) and, in
  /// file order, the segment bytes before each parameter, its name and its
  /// data size in the model (checked against the parameter's size); an empty
  /// name ends the file.
  struct ExportPiece {
    uint64_t segmentBytes;
    std::string param;
    uint64_t paramBytes;
  };
  std::string exportSegmentsPath;
  uint64_t exportSegmentsBytes = 0;
  std::vector<ExportPiece> exportPieces;
  /// The model as imported, before any phase (modelFingerprint): empty
  /// leaves Program::modelFingerprint null.
  std::string modelFingerprint;
  /// Pipeline parallelism. In a stage's module: the namespace its program
  /// goes in ("stage0", ...). In the model's: the stages' source (each its
  /// namespace) and the micro-batches of a step.
  std::string stageNamespace;
  std::vector<std::string> stageSources;
  std::vector<double> stageSeconds;
  int64_t microBatches = 0;
  /// Where each parameter's initial value already is in the blob, by name,
  /// shared by the emitters of one source (null: not shared).
  std::map<std::string, uint64_t> *paramOffsets = nullptr;
};

/// Emits the program of a planned module (`trainc-plan` has run): one source
/// file for the target, and the bytes of the parameter blob (initial values
/// of parameters and constants) that the source embeds. Errors are reported
/// as diagnostics on the offending op.
mlir::LogicalResult emitProgram(mlir::ModuleOp module, const EmitOptions &options,
                                llvm::raw_ostream &source,
                                std::vector<char> &paramBlob);

/// The program of a pipeline-parallel trainer: `module` (the model's
/// @forward, for prediction and export) and each stage's planned module, in
/// one source and one blob.
mlir::LogicalResult emitPipelineProgram(mlir::ModuleOp module,
                                        llvm::ArrayRef<mlir::ModuleOp> stages,
                                        const EmitOptions &options, llvm::raw_ostream &source,
                                        std::vector<char> &paramBlob);

/// 16 hex digits identifying the compiled program: a hash of the final IR
/// (functions, op attributes, parameter names, shapes and dtypes, batch size,
/// optimizer) with the target and the entry, independent of the initial
/// parameter values, of locations and of file paths. The program carries it
/// (Program::fingerprint) and checkpoints record it.
std::string programFingerprint(mlir::ModuleOp module, const EmitOptions &options);

/// 16 hex digits identifying the model as imported (run it before any phase):
/// its graph, parameter names, shapes, dtypes and trainability, independent
/// of initial values, locations and paths. Speed flags (--remat, --fuse,
/// --layout, --pad-to, --precision), the target and thread counts leave it
/// as it is, so a checkpoint resumes in any program built from the same
/// model.
std::string modelFingerprint(mlir::ModuleOp module);

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_EMITTER_H
