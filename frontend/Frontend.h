//===- Frontend.h - ONNX to tc: the importer's public API ------*- C++ -*-===//
//
// The only interface the tools use; ONNX and protobuf types stay inside
// frontend/.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTEND_FRONTEND_H
#define TRAINC_FRONTEND_FRONTEND_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>
#include <vector>

namespace trainc::frontend {

struct ImportOptions {
  /// Binds a symbolic first (batch) dimension of every graph input.
  std::optional<int64_t> batchSize;
  /// Whether `batchSize` is the user's (--batch-size) rather than a default
  /// for symbolic axes: only the user's is checked against a fixed batch.
  bool batchSizeGiven = true;
  /// The model is imported for a training program, whose trainer fills
  /// every data input with one batch of rows: each input's first axis must
  /// then be the batch (otherwise, only a --batch-size that binds no symbolic
  /// axis is refused).
  bool everyInputBatched = false;
};

/// Reads an ONNX model (binary protobuf or ONNX text format) and imports it as
/// a module holding `tc.param` symbols and `func.func @forward`. On failure,
/// every error is written to `errs` (each naming the ONNX node, op type and
/// opset where one is involved) and null is returned.
mlir::OwningOpRef<mlir::ModuleOp> importModelFile(llvm::StringRef path,
                                                  const ImportOptions &options,
                                                  mlir::MLIRContext &context,
                                                  llvm::raw_ostream &errs);

/// Same, for a model already in memory (binary protobuf, or ONNX text format
/// when `isText`). External data is refused since there is no folder to
/// resolve it against.
mlir::OwningOpRef<mlir::ModuleOp> importModelBytes(llvm::StringRef bytes, bool isText,
                                                   const ImportOptions &options,
                                                   mlir::MLIRContext &context,
                                                   llvm::raw_ostream &errs);

/// Support of one ONNX op type, as `trainc check` reports it.
struct OpSupport {
  std::string domain;
  std::string opType;
  int count = 0;
  bool imported = false;
  /// "yes", "not yet" or "n/a" (no gradient flows through it).
  std::string gradient;
  /// What the importer maps it to, or why it cannot.
  std::string note;
};

struct ModelSummary {
  int64_t opset = 0;
  std::string producer;
  /// Whether the model says which initializers are trainable (trainc.trainable).
  bool trainableMetadata = false;
  std::vector<OpSupport> ops;
};

/// Lists the op types a model uses and whether the importer supports them.
std::optional<ModelSummary> summarizeModelFile(llvm::StringRef path,
                                               llvm::raw_ostream &errs);

/// Every ONNX op type the importer knows, sorted.
std::vector<std::string> supportedOpTypes();

/// The model a trainer exports, serialized without the data of its
/// parameters: the inference graph (BatchNormalization with its running
/// statistics, Dropout inactive) with the named parameters as raw data, cut
/// at each parameter's data. The file is, piece by piece in order,
/// `segmentBytes` more bytes of `segments`, then the `paramBytes` bytes of
/// parameter `param` (an index into `paramNames`; -1 in the last piece, the
/// tail of the file): what a trainer needs to export trained weights without
/// protobuf and without a second copy of them.
struct ExportTemplate {
  struct Piece {
    uint64_t segmentBytes;
    int64_t param;
    uint64_t paramBytes;
  };
  std::string segments;
  std::vector<Piece> pieces;
};
llvm::Expected<ExportTemplate> buildExportTemplate(llvm::StringRef path,
                                                   llvm::ArrayRef<std::string> paramNames);

} // namespace trainc::frontend

#endif // TRAINC_FRONTEND_FRONTEND_H
