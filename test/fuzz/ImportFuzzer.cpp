//===- ImportFuzzer.cpp - libFuzzer target for the ONNX importer ----------===//
//
// The first byte chooses the format (odd: ONNX text, even: binary protobuf);
// the rest is the model. Any crash, sanitizer report or hang is a bug: bad
// models must end in an error message.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  bool isText = data[0] & 1;
  llvm::StringRef bytes(reinterpret_cast<const char *>(data + 1), size - 1);
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  trainc::frontend::ImportOptions options;
  options.batchSize = 2;
  (void)trainc::frontend::importModelBytes(bytes, isText, options, context,
                                           llvm::nulls());
  return 0;
}
