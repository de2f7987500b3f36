//===- BufferBinding.cpp - where each value of an emitted function lives --===//

#include "codegen/BufferBinding.h"

#include "codegen/ProgramEmitter.h"

#include "ir/TcOps.h"

#include "mlir/IR/BuiltinAttributes.h"

using namespace mlir;
using namespace trainc;
using namespace trainc::codegen;

LogicalResult BufferBinding::bindResults(Operation *op, std::string &body, Value accumulator) {
  auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(tc::kOffsetsAttrName);
  if (!offsets || offsets.size() != static_cast<int64_t>(op->getNumResults()))
    return op->emitError("codegen needs planned offsets (run trainc-plan)");
  for (OpResult result : op->getResults()) {
    if (cType(result.getType()).empty())
      return op->emitError("codegen does not support element type ")
             << cast<ShapedType>(result.getType()).getElementType() << " yet";
    int64_t offset = offsets[result.getResultNumber()];
    if (offset < 0 && direct.count(result)) {
      std::string name = "t" + std::to_string(names.size());
      names[result] = name;
      body += "  " + cType(result.getType()) + " *" + name + " = " + direct.lookup(result) +
              "; // " + shapeText(shapeOf(result)) + ", written straight to the output\n";
      continue;
    }
    if (offset >= 0) {
      std::string name = "t" + std::to_string(names.size());
      names[result] = name;
      body += "  " + cType(result.getType()) + " *" + name + " = reinterpret_cast<" +
              cType(result.getType()) + " *>(args.arena + " + std::to_string(offset) +
              "); // " + shapeText(shapeOf(result)) + "\n";
      continue;
    }
    if (Value replaced = tc::replacedOperand(result)) {
      // An optimizer update in place: it writes the argument it replaces.
      names[result] = "const_cast<float *>(" + ptr(replaced) + ")";
      inPlaceResults.insert(result);
      continue;
    }
    if (accumulator) {
      names[result] = "const_cast<float *>(" + ptr(accumulator) + ")";
      continue;
    }
    Value aliased = tc::viewSource(result);
    if (!aliased)
      return op->emitError("codegen cannot place result ") << result.getResultNumber();
    const int64_t start = cast<tc::TiedOpInterface>(op).getViewOffset(result.getResultNumber());
    names[result] = start ? "(" + ptr(aliased) + " + " + std::to_string(start) + ")"
                           : ptr(aliased);
  }
  return success();
}
