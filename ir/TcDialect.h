//===- TcDialect.h - the tc dialect ----------------------------*- C++ -*-===//

#ifndef TRAINC_IR_TCDIALECT_H
#define TRAINC_IR_TCDIALECT_H

#include "mlir/IR/Dialect.h"

#include "ir/TcOpsDialect.h.inc"

#endif // TRAINC_IR_TCDIALECT_H
