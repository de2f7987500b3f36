//===- TcDialect.cpp - the tc dialect -------------------------------------===//

#include "ir/TcDialect.h"
#include "ir/TcOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace trainc::tc;

#include "ir/TcOpsDialect.cpp.inc"

void TcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/TcOps.cpp.inc"
      >();
}
