//===- Fingerprint.cpp - a stable hash of what the compiler built ---------===//
//
// The fingerprint is the xxh3 hash of the final IR as printed (every function
// with its op attributes, the parameters' names, shapes, dtypes and
// trainability, the module's batch size and the optimizer attributes of
// @train_step), followed by the target and the entry function. Initial
// parameter values are left out (a checkpoint replaces them), and so are
// locations, the producer and every path: the same model compiled twice, from
// anywhere, gets the same fingerprint.
//
//===----------------------------------------------------------------------===//

#include "codegen/Emitter.h"

#include "ir/TcOps.h"

#include "mlir/IR/OperationSupport.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;

namespace {

/// The module as printed without initial values, the producer and locations,
/// then `tail`, hashed.
std::string hashOf(ModuleOp module, llvm::StringRef tail) {
  OwningOpRef<ModuleOp> copy(cast<ModuleOp>(module->clone()));
  for (auto param : copy->getOps<trainc::tc::ParamOp>())
    param.removeInitialValueAttr();
  (*copy)->removeAttr(trainc::tc::kProducerAttrName);
  std::string text;
  llvm::raw_string_ostream os(text);
  // Default flags: no locations, nothing elided (constants are part of the
  // program; parameters have no value left to print).
  copy->print(os, OpPrintingFlags());
  os << tail;
  std::string hex;
  llvm::raw_string_ostream hs(hex);
  hs << llvm::format_hex_no_prefix(llvm::xxh3_64bits(llvm::StringRef(text)), 16);
  return hex;
}

} // namespace

std::string trainc::codegen::programFingerprint(ModuleOp module, const EmitOptions &options) {
  return hashOf(module, (llvm::Twine("\ntarget=") +
                         (options.target == Target::Cuda ? "cuda" : "cpu") + "\nentry=" +
                         options.entry + "\n")
                            .str());
}

std::string trainc::codegen::modelFingerprint(ModuleOp module) {
  return hashOf(module, "\nmodel as imported\n");
}
