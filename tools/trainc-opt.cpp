//===- trainc-opt.cpp - mlir-opt with the tc dialect and trainc passes ----===//

#include "ir/TcDialect.h"
#include "passes/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<trainc::tc::TcDialect, mlir::func::FuncDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerSymbolDCEPass();
  trainc::registerTraincPasses();
  trainc::registerPhasePipelines();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "trainc optimizer driver\n", registry));
}
