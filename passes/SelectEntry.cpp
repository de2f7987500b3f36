//===- SelectEntry.cpp - the selection entry of selective backprop --------===//
//
// trainc compile --select-batch=B: the trainer runs a forward and the
// per-sample losses over B candidate samples, picks the k (the compiled
// batch) to train, and runs the training step on those. @select is that
// forward: @loss of the model imported at batch B (after the loss and
// mixed-precision phases), with nothing kept for a backward.
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;
using namespace trainc;

namespace {

/// Keeps the loss and the per-sample losses of @select's return.
LogicalResult keepLosses(func::FuncOp select) {
  auto ret = cast<func::ReturnOp>(select.getBody().front().getTerminator());
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> attrs;
  for (unsigned k = 0; k < ret.getNumOperands(); ++k)
    if (k == 0 || select.getResultAttr(k, tc::kSampleLossesAttrName)) {
      results.push_back(ret.getOperand(k));
      attrs.push_back(select.getResultAttrDict(k));
    }
  if (results.size() != 2)
    return select.emitError("--select-batch needs the per-sample losses of a loss trainc "
                            "attaches (--loss=cross-entropy, mse or bce)");
  OpBuilder b(ret);
  b.create<func::ReturnOp>(ret.getLoc(), results);
  ret.erase();
  select.setFunctionType(b.getFunctionType(select.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
  select.setAllResultAttrs(attrs);
  return success();
}

/// Dropout off (the selection is deterministic); the dropout key, then
/// unread, is no input of @select.
void dropoutOff(func::FuncOp select) {
  select.walk([](tc::DropoutOp d) {
    d.setTrainingAttr(BoolAttr::get(d.getContext(), false));
    d.getKeyMutable().clear();
  });
  for (unsigned i = 0; i < select.getNumArguments(); ++i)
    if (select.getArgAttr(i, tc::kDropoutKeyAttrName) && select.getArgument(i).use_empty()) {
      (void)select.eraseArgument(i);
      break;
    }
}

} // namespace

LogicalResult trainc::addSelectEntry(ModuleOp module, ModuleOp atSelectBatch) {
  auto loss = atSelectBatch.lookupSymbol<func::FuncOp>("loss");
  if (!loss)
    return module.emitError("--select-batch needs --loss");
  func::FuncOp select = loss.clone();
  select.setSymName("select");
  if (failed(keepLosses(select))) {
    select.erase();
    return failure();
  }
  dropoutOff(select);
  // The parameters are the training program's: the same names and types.
  for (unsigned i = 0; i < select.getNumArguments(); ++i) {
    auto symbol = select.getArgAttrOfType<FlatSymbolRefAttr>(i, tc::kParamAttrName);
    if (!symbol)
      continue;
    auto param = module.lookupSymbol<tc::ParamOp>(symbol);
    if (!param || param.getType() != select.getArgument(i).getType()) {
      select.erase();
      return module.emitError("--select-batch: parameter ")
             << symbol << " of the model at the selection batch size is not the training "
             << "program's (a model whose parameters depend on the batch size cannot select)";
    }
  }
  module.push_back(select);
  return success();
}
