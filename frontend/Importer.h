//===- Importer.h - the importer's internals -------------------*- C++ -*-===//
//
// NodeContext is what an op converter sees: the ONNX node, its inputs as MLIR
// values or folded host constants, its attributes, and a way to create tc ops
// through their shape functions. Converters live in Convert*.cpp and register
// in the table of OpTable.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTEND_IMPORTER_H
#define TRAINC_FRONTEND_IMPORTER_H

#include "frontend/Tensor.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OperationSupport.h"

#include "llvm/ADT/StringMap.h"

#include <onnx/onnx_pb.h>

#include <optional>
#include <string>

namespace trainc::frontend {

class GraphImporter;

/// Largest folded constant (elements) the importer computes on the host.
inline constexpr int64_t kMaxFoldElements = int64_t(1) << 20;
/// Most tc ops the unrolling of recurrent ops and loops may make of a model.
inline constexpr int64_t kMaxUnrolledOps = int64_t(1) << 21;

/// What an ONNX value name stands for during import: an MLIR value, a host
/// constant (folded shape arithmetic; materialized when an op reads it), or
/// a sequence whose length is known at import time (SequenceEmpty,
/// SplitToSequence, a Loop's carried list), held as its elements.
struct ImportedValue {
  mlir::Value value;
  std::optional<Tensor> constant;
  mlir::Location loc;
  bool isSequence = false;
  std::vector<ImportedValue> elements;
};

class NodeContext {
public:
  NodeContext(GraphImporter &importer, const onnx::NodeProto &node,
              mlir::Location loc, int64_t opset, int64_t index);

  const onnx::NodeProto &node() const { return proto; }
  llvm::StringRef opType() const { return proto.op_type(); }
  mlir::Location loc() const { return location; }
  int64_t opset() const { return version; }
  /// The node's position in the graph's node list.
  int64_t nodeIndex() const { return index; }
  mlir::OpBuilder &builder();
  mlir::MLIRContext *context();
  /// The folder external data of this model resolves against ("" for a model
  /// read from memory).
  llvm::StringRef modelDir() const;

  // Inputs ---------------------------------------------------------------
  /// Whether input `i` is present (ONNX marks an absent optional input with an
  /// empty name).
  bool hasInput(unsigned i) const;
  unsigned numInputs() const { return static_cast<unsigned>(proto.input_size()); }
  /// Input `i` as an MLIR value (a folded constant is materialized).
  mlir::FailureOr<mlir::Value> input(unsigned i);
  /// Inputs [0, required) and, where present, the optional inputs up to
  /// `total`, as MLIR values (ONNX leaves trailing optional inputs out).
  mlir::FailureOr<llvm::SmallVector<mlir::Value>> inputs(unsigned required, unsigned total);
  /// Binds output 0 to input `i` unchanged (host constant or value).
  mlir::LogicalResult forwardInput(unsigned i);
  /// Input `i` as a host constant, or null when it is computed at run time.
  const Tensor *constant(unsigned i) const;
  /// Input `i` as a value known at import time: a host constant, or the
  /// initial value of a small parameter. For inputs ONNX passes as tensors but
  /// that act as attributes (Clip bounds, Dropout ratio).
  const Tensor *importTimeValue(unsigned i) const;
  /// Whether every input is present and a host constant (converters fold on
  /// the host then).
  bool allInputsConstant() const;
  /// The static type of input `i` (also for folded constants).
  mlir::FailureOr<mlir::RankedTensorType> inputType(unsigned i);
  /// Input `i`, which must be a host constant (shapes, axes, bounds), as
  /// integers; `what` names it in the error.
  mlir::FailureOr<std::vector<int64_t>> constantInts(unsigned i, llvm::StringRef what);

  // Attributes -----------------------------------------------------------
  const onnx::AttributeProto *attr(llvm::StringRef name) const;
  int64_t attrInt(llvm::StringRef name, int64_t fallback) const;
  float attrFloat(llvm::StringRef name, float fallback) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef fallback) const;
  std::optional<std::vector<int64_t>> attrInts(llvm::StringRef name) const;

  /// Input `i` as the importer holds it (for sequences and subgraphs).
  mlir::FailureOr<const ImportedValue *> inputValue(unsigned i);
  /// Input `i`, which must be a sequence, as its elements.
  mlir::FailureOr<const std::vector<ImportedValue> *> inputSequence(unsigned i);

  // Results --------------------------------------------------------------
  unsigned numOutputs() const { return static_cast<unsigned>(proto.output_size()); }
  /// Whether output `i` exists and something reads it.
  bool outputUsed(unsigned i) const;
  void setOutput(unsigned i, mlir::Value value);
  void setOutput(unsigned i, Tensor value);
  void setOutput(unsigned i, ImportedValue value);
  /// Output `i` as a sequence of `elements`.
  void setOutputSequence(unsigned i, std::vector<ImportedValue> elements);
  /// `value` as an ImportedValue at this node.
  ImportedValue held(mlir::Value value) const;
  ImportedValue held(Tensor value) const;

  // Subgraphs and unrolling -----------------------------------------------
  /// Counts `ops` more tc ops that unrolling (a recurrent op's time steps, a
  /// Loop's iterations) makes of the model; fails, naming `what`, past the
  /// model's budget, so that no small file expands without bound.
  mlir::LogicalResult chargeUnrolling(int64_t ops, llvm::StringRef what);
  /// Imports the nodes of `body` (a Loop's) once, its inputs bound to
  /// `inputs` in order, in a scope of its own over the enclosing graph's
  /// values; returns its outputs. Errors name the body's node.
  mlir::FailureOr<std::vector<ImportedValue>> importSubgraph(const onnx::GraphProto &body,
                                                            llvm::ArrayRef<ImportedValue> inputs);

  /// Creates a tc op whose result types come from its shape function. Errors
  /// from the shape function or verifier are reported against this node.
  template <typename OpTy>
  mlir::FailureOr<mlir::Operation *> create(mlir::ValueRange operands,
                                            llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    return createGeneric(OpTy::getOperationName(), &OpTy::inferReturnTypes,
                         operands, attrs);
  }
  /// Creates a single-result tc op and binds it to output 0.
  template <typename OpTy>
  mlir::LogicalResult emit(mlir::ValueRange operands,
                           llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
    auto op = create<OpTy>(operands, attrs);
    if (mlir::failed(op))
      return mlir::failure();
    setOutput(0, (*op)->getResult(0));
    return mlir::success();
  }

  // Attribute helpers ----------------------------------------------------
  mlir::NamedAttribute named(llvm::StringRef name, mlir::Attribute value);
  mlir::NamedAttribute namedI64(llvm::StringRef name, int64_t value);
  mlir::NamedAttribute namedF32(llvm::StringRef name, float value);
  mlir::NamedAttribute namedBool(llvm::StringRef name, bool value);
  mlir::NamedAttribute namedArray(llvm::StringRef name, llvm::ArrayRef<int64_t> values);
  mlir::NamedAttribute namedString(llvm::StringRef name, llvm::StringRef value);

  /// Normalizes a possibly negative axis for `rank`; reports an error naming
  /// `what` if out of range.
  mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                         llvm::StringRef what = "axis");

  /// Reports an error against this node and returns failure.
  mlir::LogicalResult error(const llvm::Twine &message);

private:
  using InferFn = llvm::LogicalResult (*)(mlir::MLIRContext *,
                                          std::optional<mlir::Location>,
                                          mlir::ValueRange, mlir::DictionaryAttr,
                                          mlir::OpaqueProperties, mlir::RegionRange,
                                          llvm::SmallVectorImpl<mlir::Type> &);
  mlir::FailureOr<mlir::Operation *>
  createGeneric(llvm::StringRef name, InferFn infer, mlir::ValueRange operands,
                llvm::ArrayRef<mlir::NamedAttribute> attrs);

  GraphImporter &importer;
  const onnx::NodeProto &proto;
  mlir::Location location;
  int64_t version;
  int64_t index;
};

/// Converts one ONNX node; reports its own errors through NodeContext::error.
using Converter = mlir::LogicalResult (*)(NodeContext &);

/// Whether training through an op is supported: its tc ops have gradient
/// rules (Yes), not yet (No), or it carries no gradient (boolean results,
/// folded shape arithmetic).
enum class Gradient { Yes, No, NotApplicable };

struct ConverterEntry {
  Converter convert;
  /// What the op becomes, for `trainc check`.
  const char *note;
  /// The first default-domain opset that has the op.
  int64_t sinceVersion = 1;
  Gradient gradient = Gradient::No;
};

/// The converter of an op type (default domain), or null.
const ConverterEntry *lookupConverter(llvm::StringRef opType);

/// Maps tc element types to MLIR types and back.
mlir::Type toMlirType(mlir::MLIRContext *context, DType type);
std::optional<DType> fromMlirType(mlir::Type type);

/// Builds the dense attribute of a host tensor.
mlir::DenseElementsAttr toAttribute(mlir::MLIRContext *context, const Tensor &tensor);

// Converters, defined in Convert*.cpp.
mlir::LogicalResult convertElementwise(NodeContext &ctx);
mlir::LogicalResult convertVariadic(NodeContext &ctx);
mlir::LogicalResult convertWhere(NodeContext &ctx);
mlir::LogicalResult convertCast(NodeContext &ctx);
mlir::LogicalResult convertCastLike(NodeContext &ctx);
mlir::LogicalResult convertIdentity(NodeContext &ctx);
mlir::LogicalResult convertClip(NodeContext &ctx);
mlir::LogicalResult convertGelu(NodeContext &ctx);
mlir::LogicalResult convertLeakyRelu(NodeContext &ctx);
/// Einsum of one or two operands, as tc.transpose/reshape/matmul/reduce_sum.
mlir::LogicalResult convertEinsum(NodeContext &ctx);
mlir::LogicalResult convertDropout(NodeContext &ctx);
mlir::LogicalResult convertHardSigmoid(NodeContext &ctx);
mlir::LogicalResult convertHardSwish(NodeContext &ctx);
mlir::LogicalResult convertElu(NodeContext &ctx);
mlir::LogicalResult convertSelu(NodeContext &ctx);
mlir::LogicalResult convertCelu(NodeContext &ctx);
mlir::LogicalResult convertSoftplus(NodeContext &ctx);
mlir::LogicalResult convertMish(NodeContext &ctx);
mlir::LogicalResult convertSoftsign(NodeContext &ctx);
mlir::LogicalResult convertThresholdedRelu(NodeContext &ctx);
mlir::LogicalResult convertPRelu(NodeContext &ctx);
mlir::LogicalResult convertMatMul(NodeContext &ctx);
mlir::LogicalResult convertGemm(NodeContext &ctx);
mlir::LogicalResult convertConv(NodeContext &ctx);
mlir::LogicalResult convertConvTranspose(NodeContext &ctx);
/// DepthToSpace and SpaceToDepth.
mlir::LogicalResult convertDepthSpace(NodeContext &ctx);
mlir::LogicalResult convertGroupNorm(NodeContext &ctx);
/// RNN, GRU and LSTM (ConvertRecurrent.cpp).
mlir::LogicalResult convertRecurrent(NodeContext &ctx);
/// Resize, nearest and linear (ConvertResize.cpp).
mlir::LogicalResult convertResize(NodeContext &ctx);
mlir::LogicalResult convertEyeLike(NodeContext &ctx);
mlir::LogicalResult convertOneHot(NodeContext &ctx);
mlir::LogicalResult convertBatchNorm(NodeContext &ctx);
mlir::LogicalResult convertLayerNorm(NodeContext &ctx);
mlir::LogicalResult convertInstanceNorm(NodeContext &ctx);
mlir::LogicalResult convertPool(NodeContext &ctx);
mlir::LogicalResult convertGlobalPool(NodeContext &ctx);
mlir::LogicalResult convertSoftmax(NodeContext &ctx);
mlir::LogicalResult convertReduce(NodeContext &ctx);
mlir::LogicalResult convertClassLoss(NodeContext &ctx);
mlir::LogicalResult convertReshape(NodeContext &ctx);
mlir::LogicalResult convertFlatten(NodeContext &ctx);
mlir::LogicalResult convertSqueeze(NodeContext &ctx);
mlir::LogicalResult convertUnsqueeze(NodeContext &ctx);
mlir::LogicalResult convertTranspose(NodeContext &ctx);
mlir::LogicalResult convertConcat(NodeContext &ctx);
mlir::LogicalResult convertSlice(NodeContext &ctx);
mlir::LogicalResult convertSplit(NodeContext &ctx);
/// Split sizes: none negative, adding up to the axis' `dim`.
mlir::LogicalResult checkSplitSizes(NodeContext &ctx, llvm::ArrayRef<int64_t> sizes, int64_t dim);
mlir::LogicalResult convertGather(NodeContext &ctx);
mlir::LogicalResult convertExpand(NodeContext &ctx);
mlir::LogicalResult convertShape(NodeContext &ctx);
mlir::LogicalResult convertSize(NodeContext &ctx);
mlir::LogicalResult convertConstant(NodeContext &ctx);
mlir::LogicalResult convertConstantOfShape(NodeContext &ctx);
mlir::LogicalResult convertRange(NodeContext &ctx);
mlir::LogicalResult convertPad(NodeContext &ctx);
// ConvertIndexing.cpp
mlir::LogicalResult convertCumSum(NodeContext &ctx);
mlir::LogicalResult convertMod(NodeContext &ctx);
mlir::LogicalResult convertTile(NodeContext &ctx);
mlir::LogicalResult convertTrilu(NodeContext &ctx);
mlir::LogicalResult convertScatterND(NodeContext &ctx);
mlir::LogicalResult convertNonZero(NodeContext &ctx);
mlir::LogicalResult convertArgMax(NodeContext &ctx); // ArgMax and ArgMin
mlir::LogicalResult convertGatherElements(NodeContext &ctx);
mlir::LogicalResult convertTopK(NodeContext &ctx);
mlir::LogicalResult convertScatterElements(NodeContext &ctx);
// ConvertSequence.cpp: sequences known at import time, Loop unrolled.
mlir::LogicalResult convertSequenceEmpty(NodeContext &ctx);
mlir::LogicalResult convertSequenceConstruct(NodeContext &ctx);
mlir::LogicalResult convertSequenceInsert(NodeContext &ctx);
mlir::LogicalResult convertSequenceAt(NodeContext &ctx);
mlir::LogicalResult convertSequenceLength(NodeContext &ctx);
mlir::LogicalResult convertSplitToSequence(NodeContext &ctx);
mlir::LogicalResult convertConcatFromSequence(NodeContext &ctx);
mlir::LogicalResult convertLoop(NodeContext &ctx);

} // namespace trainc::frontend

#endif // TRAINC_FRONTEND_IMPORTER_H
