//===- OpClassesTest.cpp - every tc op is classified once -----------------===//
//
// The passes read an op's properties from its traits (ir/TcBase.td): its
// autocast class (mixed precision), its recompute class (remat) and, for a
// pointwise op, its element rule (ir/ScalarSemantics.h, which codegen and
// the importer's folding share). These check, over every registered tc op,
// that no op has two classes of one kind and that no pointwise op lacks an
// element rule: adding an op without them fails here.
//
//===----------------------------------------------------------------------===//

#include "ir/ScalarSemantics.h"
#include "ir/TcDialect.h"
#include "ir/TcOps.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

namespace {

using namespace trainc;
using mlir::RegisteredOperationName;

std::vector<RegisteredOperationName> tcOps(mlir::MLIRContext &context) {
  context.getOrLoadDialect<tc::TcDialect>();
  std::vector<RegisteredOperationName> ops;
  for (RegisteredOperationName name : context.getRegisteredOperations())
    if (name.getDialectNamespace() == "tc")
      ops.push_back(name);
  return ops;
}

TEST(OpClassesTest, TheDialectHasOps) {
  mlir::MLIRContext context;
  EXPECT_GT(tcOps(context).size(), 50u);
}

TEST(OpClassesTest, AtMostOneAutocastClass) {
  mlir::MLIRContext context;
  for (RegisteredOperationName op : tcOps(context)) {
    SCOPED_TRACE(op.getStringRef().str());
    int classes = op.hasTrait<tc::OpTrait::Contraction>() +
                  op.hasTrait<tc::OpTrait::AutocastFollow>() +
                  op.hasTrait<tc::OpTrait::AutocastF32>() +
                  op.hasTrait<tc::OpTrait::AutocastWidest>() +
                  op.hasTrait<tc::OpTrait::AutocastNorm>();
    EXPECT_LE(classes, 1);
    // A pointwise op takes its widest operand's type, or computes in f32.
    if (op.hasTrait<tc::OpTrait::Pointwise>()) {
      EXPECT_FALSE(op.hasTrait<tc::OpTrait::AutocastFollow>() ||
                   op.hasTrait<tc::OpTrait::AutocastNorm>() ||
                   op.hasTrait<tc::OpTrait::Contraction>());
    }
  }
}

TEST(OpClassesTest, AtMostOneRecomputeClass) {
  mlir::MLIRContext context;
  for (RegisteredOperationName op : tcOps(context)) {
    SCOPED_TRACE(op.getStringRef().str());
    int classes = op.hasTrait<tc::OpTrait::Pointwise>() +
                  op.hasTrait<tc::OpTrait::DataMovement>() +
                  op.hasTrait<tc::OpTrait::Normalization>() +
                  op.hasTrait<tc::OpTrait::Contraction>();
    EXPECT_LE(classes, 1);
  }
}

TEST(OpClassesTest, EveryPointwiseOpHasAnElementRule) {
  // Codegen's rules of the ops whose element reads an attribute
  // (codegen/ScalarExpr.cpp attributeRule).
  const llvm::StringRef withAttributes[] = {"tc.gelu", "tc.leaky_relu", "tc.clip", "tc.cast",
                                            "tc.mod"};
  mlir::MLIRContext context;
  int pointwise = 0;
  for (RegisteredOperationName op : tcOps(context)) {
    if (!op.hasTrait<tc::OpTrait::Pointwise>())
      continue;
    ++pointwise;
    SCOPED_TRACE(op.getStringRef().str());
    EXPECT_TRUE(tc::hasScalarSemantics(op.getStringRef()) ||
                llvm::is_contained(withAttributes, op.getStringRef()));
  }
  EXPECT_GT(pointwise, 30);
}

TEST(OpClassesTest, ScalarSemanticsAreOfPointwiseOps) {
  mlir::MLIRContext context;
  for (RegisteredOperationName op : tcOps(context))
    if (tc::hasScalarSemantics(op.getStringRef())) {
      SCOPED_TRACE(op.getStringRef().str());
      EXPECT_TRUE(op.hasTrait<tc::OpTrait::Pointwise>());
    }
}

} // namespace
