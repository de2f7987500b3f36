//===- Importer.cpp - ONNX graph to tc ------------------------------------===//
//
// Walks the ONNX graph in its (topological) node order. Every ONNX value is a
// slot holding an MLIR value, a host constant, or both: shape sub-graphs fold
// on the host, and a constant becomes a `tc.constant` only when a run-time op
// reads it. Float initializers become `tc.param` symbols and arguments of
// `@forward`; integer initializers stay constants.
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "frontend/Importer.h"
#include "frontend/ModelLoader.h"
#include "frontend/TrainingMetadata.h"

#include "ir/ShapeLogic.h"
#include "ir/TcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <functional>
#include <map>

using namespace mlir;
using namespace trainc;
using namespace trainc::frontend;

namespace trainc::frontend {

class GraphImporter {
public:
  GraphImporter(MLIRContext &context, const onnx::ModelProto &model,
                std::string modelDir, std::string modelName,
                const ImportOptions &options, llvm::raw_ostream &errs)
      : context(context), model(model), modelDir(std::move(modelDir)),
        modelName(std::move(modelName)), options(options), errs(errs),
        builder(&context) {}

  OwningOpRef<ModuleOp> run();

  using Slot = ImportedValue;

  MLIRContext &context;
  const onnx::ModelProto &model;
  std::string modelDir, modelName;
  const ImportOptions &options;
  llvm::raw_ostream &errs;
  OpBuilder builder;
  llvm::StringMap<Slot> slots;
  /// The scopes of the subgraphs being imported (a Loop body's iteration),
  /// innermost last: their values hide none of the graph's (ONNX names are
  /// unique) and go with the iteration.
  std::vector<llvm::StringMap<Slot>> scopes;
  llvm::StringMap<unsigned> readers;
  int64_t opsetVersion = 0;
  /// Subgraph nodes imported so far: theirs are numbered after the graph's
  /// own (a node's index is its dropout stream), each iteration anew.
  int64_t subgraphNodes = 0;
  /// Ops unrolling has made so far (NodeContext::chargeUnrolling).
  int64_t unrolledOps = 0;
  /// Initial values of parameters small enough to serve as attributes.
  llvm::StringMap<Tensor> smallInitialValues;
  /// Messages reported for the node being converted.
  std::vector<std::string> nodeErrors;

  Slot *lookup(llvm::StringRef name) {
    for (auto scope = scopes.rbegin(); scope != scopes.rend(); ++scope)
      if (auto it = scope->find(name); it != scope->end())
        return &it->second;
    auto it = slots.find(name);
    return it == slots.end() ? nullptr : &it->second;
  }
  void define(llvm::StringRef name, Slot slot) {
    (scopes.empty() ? slots : scopes.back()).insert_or_assign(name, std::move(slot));
  }
  /// Converts one node (reporting its errors, named `name`).
  LogicalResult importNode(const onnx::NodeProto &node, const std::string &name, int64_t index);
  /// Counts the readers of every name in `graph` and its subgraphs.
  void countReaders(const onnx::GraphProto &graph);
  /// The graph inputs that are not initializers (the data inputs): their
  /// names, types and argument attributes.
  LogicalResult readDataInputs(const onnx::GraphProto &graph,
                               const llvm::StringSet<> &initializerNames,
                               std::vector<std::string> &names, SmallVectorImpl<Type> &types,
                               SmallVectorImpl<DictionaryAttr> &attrs);
  /// Returns the graph's outputs from `func`, checked against their
  /// declared types, and gives `func` its type.
  LogicalResult returnOutputs(const onnx::GraphProto &graph, func::FuncOp func,
                              ArrayRef<Type> argTypes, Location loc);
  Value materialize(Slot &slot);
  void error(const llvm::Twine &message) {
    errs << "error: " << modelName << ": " << message << "\n";
  }

private:
  bool checkSupport(int64_t opset);
  /// The version the model imports for `domain`, or -1.
  int64_t domainOpset(const std::string &domain) const {
    for (const auto &entry : model.opset_import())
      if (entry.domain() == domain)
        return entry.version();
    return -1;
  }
  FailureOr<RankedTensorType> inputType(const onnx::ValueInfoProto &info);
  LogicalResult checkOutputType(const onnx::ValueInfoProto &info, Type type);
  void warnIfEvalExport(const onnx::GraphProto &graph);
  LogicalResult checkBatchAxes(const onnx::GraphProto &graph,
                               llvm::ArrayRef<std::string> inputNames,
                               llvm::ArrayRef<Type> inputTypes);
  void removeDeadCode(func::FuncOp func);
  void finishParams(ModuleOp module, func::FuncOp func,
                    llvm::ArrayRef<std::string> paramNames, unsigned firstParam);
  LogicalResult markPaddingRows(const TrainingMetadata &meta, func::FuncOp func,
                                llvm::ArrayRef<std::string> paramNames,
                                unsigned firstParam);
};

} // namespace trainc::frontend

//===----------------------------------------------------------------------===//
// Type and attribute conversion
//===----------------------------------------------------------------------===//

Type trainc::frontend::toMlirType(MLIRContext *ctx, DType type) {
  switch (type) {
  case DType::F32: return Float32Type::get(ctx);
  case DType::F16: return Float16Type::get(ctx);
  case DType::BF16: return BFloat16Type::get(ctx);
  case DType::F64: return Float64Type::get(ctx);
  case DType::I64: return IntegerType::get(ctx, 64);
  case DType::I32: return IntegerType::get(ctx, 32);
  case DType::I1: return IntegerType::get(ctx, 1);
  }
  return {};
}

std::optional<DType> trainc::frontend::fromMlirType(Type type) {
  if (type.isF32()) return DType::F32;
  if (type.isF16()) return DType::F16;
  if (type.isBF16()) return DType::BF16;
  if (type.isF64()) return DType::F64;
  if (type.isInteger(64)) return DType::I64;
  if (type.isInteger(32)) return DType::I32;
  if (type.isInteger(1)) return DType::I1;
  return std::nullopt;
}

DenseElementsAttr trainc::frontend::toAttribute(MLIRContext *ctx,
                                                const Tensor &tensor) {
  auto type = RankedTensorType::get(tensor.shape(), toMlirType(ctx, tensor.dtype()));
  if (tensor.dtype() == DType::I1) {
    SmallVector<bool> values;
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      values.push_back(tensor.integer(i) != 0);
    return DenseElementsAttr::get(type, values);
  }
  return DenseElementsAttr::getFromRawBuffer(type, tensor.bytes());
}

//===----------------------------------------------------------------------===//
// NodeContext
//===----------------------------------------------------------------------===//

NodeContext::NodeContext(GraphImporter &importer, const onnx::NodeProto &node,
                         Location loc, int64_t opset, int64_t index)
    : importer(importer), proto(node), location(loc), version(opset), index(index) {}

OpBuilder &NodeContext::builder() { return importer.builder; }
MLIRContext *NodeContext::context() { return &importer.context; }
llvm::StringRef NodeContext::modelDir() const { return importer.modelDir; }

bool NodeContext::hasInput(unsigned i) const {
  return i < numInputs() && !proto.input(i).empty();
}

FailureOr<const ImportedValue *> NodeContext::inputValue(unsigned i) {
  if (!hasInput(i))
    return error("input " + llvm::Twine(i) + " is required");
  GraphImporter::Slot *slot = importer.lookup(proto.input(i));
  if (!slot)
    return error("input '" + proto.input(i) + "' is not defined by any earlier "
                 "node, graph input or initializer");
  return slot;
}

FailureOr<const std::vector<ImportedValue> *> NodeContext::inputSequence(unsigned i) {
  FailureOr<const ImportedValue *> v = inputValue(i);
  if (failed(v))
    return failure();
  if (!(*v)->isSequence)
    return error("input '" + proto.input(i) + "' is a tensor, not a sequence");
  return &(*v)->elements;
}

FailureOr<Value> NodeContext::input(unsigned i) {
  FailureOr<const ImportedValue *> held = inputValue(i);
  if (failed(held))
    return failure();
  if ((*held)->isSequence)
    return error("input '" + proto.input(i) + "' is a sequence, not a tensor");
  Value value = importer.materialize(*importer.lookup(proto.input(i)));
  if (!value)
    return error("constant input '" + proto.input(i) + "' cannot be materialized");
  return value;
}

FailureOr<SmallVector<Value>> NodeContext::inputs(unsigned required, unsigned total) {
  SmallVector<Value> values;
  for (unsigned i = 0; i < total; ++i) {
    if (i >= required && !hasInput(i))
      break;
    FailureOr<Value> v = input(i);
    if (failed(v))
      return failure();
    values.push_back(*v);
  }
  return values;
}

LogicalResult NodeContext::forwardInput(unsigned i) {
  if (const Tensor *c = constant(i)) {
    setOutput(0, *c);
    return success();
  }
  FailureOr<Value> x = input(i);
  if (failed(x))
    return failure();
  setOutput(0, *x);
  return success();
}

const Tensor *NodeContext::constant(unsigned i) const {
  if (!hasInput(i))
    return nullptr;
  GraphImporter::Slot *slot = importer.lookup(proto.input(i));
  return slot && !slot->isSequence && slot->constant ? &*slot->constant : nullptr;
}

const Tensor *NodeContext::importTimeValue(unsigned i) const {
  if (const Tensor *c = constant(i))
    return c;
  auto it = importer.smallInitialValues.find(hasInput(i) ? proto.input(i) : "");
  return it == importer.smallInitialValues.end() ? nullptr : &it->second;
}

bool NodeContext::allInputsConstant() const {
  for (unsigned i = 0; i < numInputs(); ++i)
    if (!constant(i))
      return false;
  return true;
}

FailureOr<RankedTensorType> NodeContext::inputType(unsigned i) {
  if (const Tensor *c = constant(i))
    return RankedTensorType::get(c->shape(), toMlirType(context(), c->dtype()));
  FailureOr<Value> v = input(i);
  if (failed(v))
    return failure();
  return cast<RankedTensorType>(v->getType());
}

FailureOr<std::vector<int64_t>> NodeContext::constantInts(unsigned i,
                                                         llvm::StringRef what) {
  const Tensor *c = constant(i);
  if (!c) {
    if (!hasInput(i))
      return error("input '" + what + "' is required");
    return error("input '" + what + "' ('" + proto.input(i) +
                 "') must be a constant known at import time; it is computed "
                 "at run time");
  }
  if (isFloat(c->dtype()))
    return error("input '" + what + "' must hold integers, got " +
                 dtypeName(c->dtype()));
  return c->integers();
}

const onnx::AttributeProto *NodeContext::attr(llvm::StringRef name) const {
  for (const auto &a : proto.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

int64_t NodeContext::attrInt(llvm::StringRef name, int64_t fallback) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->i() : fallback;
}

float NodeContext::attrFloat(llvm::StringRef name, float fallback) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->f() : fallback;
}

std::string NodeContext::attrString(llvm::StringRef name,
                                    llvm::StringRef fallback) const {
  const onnx::AttributeProto *a = attr(name);
  return a ? a->s() : std::string(fallback);
}

std::optional<std::vector<int64_t>>
NodeContext::attrInts(llvm::StringRef name) const {
  const onnx::AttributeProto *a = attr(name);
  if (!a)
    return std::nullopt;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

bool NodeContext::outputUsed(unsigned i) const {
  if (i >= numOutputs() || proto.output(i).empty())
    return false;
  return importer.readers.lookup(proto.output(i)) > 0;
}

void NodeContext::setOutput(unsigned i, Value value) { setOutput(i, held(value)); }

void NodeContext::setOutput(unsigned i, Tensor value) { setOutput(i, held(std::move(value))); }

void NodeContext::setOutput(unsigned i, ImportedValue value) {
  if (i >= numOutputs() || proto.output(i).empty())
    return;
  importer.define(proto.output(i), std::move(value));
}

void NodeContext::setOutputSequence(unsigned i, std::vector<ImportedValue> elements) {
  ImportedValue v{Value(), std::nullopt, location};
  v.isSequence = true;
  v.elements = std::move(elements);
  setOutput(i, std::move(v));
}

ImportedValue NodeContext::held(Value value) const {
  return ImportedValue{value, std::nullopt, location};
}

ImportedValue NodeContext::held(Tensor value) const {
  return ImportedValue{Value(), std::move(value), location};
}

LogicalResult NodeContext::chargeUnrolling(int64_t ops, llvm::StringRef what) {
  importer.unrolledOps += ops;
  if (importer.unrolledOps <= kMaxUnrolledOps)
    return success();
  return error(what + " would bring the model's unrolled ops (time steps, loop iterations) "
               "past " + llvm::Twine(kMaxUnrolledOps));
}

FailureOr<std::vector<ImportedValue>>
NodeContext::importSubgraph(const onnx::GraphProto &body, ArrayRef<ImportedValue> inputs) {
  if (static_cast<size_t>(body.input_size()) != inputs.size())
    return error("the body has " + llvm::Twine(body.input_size()) + " inputs, " +
                 llvm::Twine(inputs.size()) + " are bound");
  importer.scopes.emplace_back();
  for (int k = 0; k < body.input_size(); ++k)
    importer.define(body.input(k).name(), inputs[k]);
  for (const onnx::NodeProto &node : body.node()) {
    auto outer = dyn_cast<NameLoc>(location);
    std::string name = (node.name().empty() ? node.op_type() : node.name()) + " (in '" +
                       (outer ? outer.getName().str() : proto.op_type()) + "')";
    const int64_t index = importer.model.graph().node_size() + importer.subgraphNodes++;
    if (failed(importer.importNode(node, name, index))) {
      importer.scopes.pop_back();
      return failure();
    }
  }
  std::vector<ImportedValue> outputs;
  for (const onnx::ValueInfoProto &out : body.output()) {
    GraphImporter::Slot *slot = importer.lookup(out.name());
    if (!slot) {
      importer.scopes.pop_back();
      return error("the body's output '" + out.name() + "' is not computed");
    }
    outputs.push_back(*slot);
  }
  importer.scopes.pop_back();
  return outputs;
}

NamedAttribute NodeContext::named(llvm::StringRef name, Attribute value) {
  return builder().getNamedAttr(name, value);
}
NamedAttribute NodeContext::namedI64(llvm::StringRef name, int64_t value) {
  return named(name, builder().getI64IntegerAttr(value));
}
NamedAttribute NodeContext::namedF32(llvm::StringRef name, float value) {
  return named(name, builder().getF32FloatAttr(value));
}
NamedAttribute NodeContext::namedBool(llvm::StringRef name, bool value) {
  return named(name, builder().getBoolAttr(value));
}
NamedAttribute NodeContext::namedArray(llvm::StringRef name,
                                       llvm::ArrayRef<int64_t> values) {
  return named(name, builder().getDenseI64ArrayAttr(values));
}
NamedAttribute NodeContext::namedString(llvm::StringRef name, llvm::StringRef value) {
  return named(name, builder().getStringAttr(value));
}

FailureOr<int64_t> NodeContext::normalizeAxis(int64_t axis, int64_t rank,
                                              llvm::StringRef what) {
  if (axis < -rank || axis >= rank)
    return error(what + " " + llvm::Twine(axis) + " is out of range for rank " +
                 llvm::Twine(rank));
  return axis < 0 ? axis + rank : axis;
}

LogicalResult NodeContext::error(const llvm::Twine &message) {
  importer.nodeErrors.push_back(message.str());
  return failure();
}

FailureOr<Operation *>
NodeContext::createGeneric(llvm::StringRef name, InferFn infer,
                           ValueRange operands, llvm::ArrayRef<NamedAttribute> attrs) {
  OperationState state(location, name);
  state.addOperands(operands);
  state.addAttributes(attrs);
  SmallVector<Type> types;
  // Diagnostics of the shape function and verifier reach nodeErrors through the
  // handler installed by GraphImporter::run.
  if (failed(infer(context(), location, state.operands,
                   state.attributes.getDictionary(context()), OpaqueProperties(nullptr),
                   state.regions, types)))
    return failure();
  state.addTypes(types);
  Operation *op = builder().create(state);
  if (failed(mlir::verify(op))) {
    op->erase();
    return failure();
  }
  return op;
}

//===----------------------------------------------------------------------===//
// GraphImporter
//===----------------------------------------------------------------------===//

Value GraphImporter::materialize(Slot &slot) {
  if (slot.value || !slot.constant)
    return slot.value;
  auto attr = toAttribute(&context, *slot.constant);
  slot.value = builder.create<tc::ConstantOp>(slot.loc, attr).getResult();
  return slot.value;
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node, const std::string &name,
                                       int64_t index) {
  Location loc = NameLoc::get(builder.getStringAttr(name));
  NodeContext ctx(*this, node, loc, opsetVersion, index);
  nodeErrors.clear();
  LogicalResult converted = success();
  for (const std::string &out : node.output())
    if (!out.empty() && lookup(out))
      converted = ctx.error("value '" + out + "' is already defined (ONNX graphs "
                            "are in SSA form: every value has one producer)");
  const ConverterEntry *entry = lookupConverter(node.op_type());
  if (succeeded(converted) && !entry)
    converted = ctx.error("no converter for " + node.op_type());
  if (succeeded(converted))
    converted = entry->convert(ctx);
  // A converter must define every output it has, or fail.
  if (succeeded(converted))
    for (unsigned o = 0; o < ctx.numOutputs(); ++o)
      if (!node.output(o).empty() && !lookup(node.output(o)) && ctx.outputUsed(o))
        converted = ctx.error("output " + llvm::Twine(o) + " ('" + node.output(o) +
                              "') is not supported");
  if (succeeded(converted))
    return success();
  if (nodeErrors.empty())
    nodeErrors.push_back("conversion failed");
  for (const std::string &message : nodeErrors)
    error("node '" + name + "' (" + node.op_type() + ", opset " + llvm::Twine(opsetVersion) +
          "): " + message);
  nodeErrors.clear();
  return failure();
}

LogicalResult GraphImporter::readDataInputs(const onnx::GraphProto &graph,
                                           const llvm::StringSet<> &initializerNames,
                                           std::vector<std::string> &names,
                                           SmallVectorImpl<Type> &types,
                                           SmallVectorImpl<DictionaryAttr> &attrs) {
  for (const onnx::ValueInfoProto &info : graph.input()) {
    if (initializerNames.contains(info.name()))
      continue;
    auto type = inputType(info);
    if (failed(type))
      return failure();
    if (llvm::is_contained(names, info.name())) {
      error("graph input '" + info.name() + "' is declared twice");
      return failure();
    }
    names.push_back(info.name());
    types.push_back(*type);
    attrs.push_back(builder.getDictionaryAttr(
        builder.getNamedAttr(tc::kInputAttrName, builder.getStringAttr(info.name()))));
  }
  return success();
}

LogicalResult GraphImporter::returnOutputs(const onnx::GraphProto &graph, func::FuncOp func,
                                          ArrayRef<Type> argTypes, Location loc) {
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const onnx::ValueInfoProto &out : graph.output()) {
    Slot *slot = lookup(out.name());
    if (!slot) {
      error("graph output '" + out.name() + "' is not computed by any node");
      return failure();
    }
    if (slot->isSequence) {
      error("graph output '" + out.name() + "' is a sequence; outputs must be tensors");
      return failure();
    }
    Value value = materialize(*slot);
    if (failed(checkOutputType(out, value.getType())))
      return failure();
    results.push_back(value);
    resultAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        tc::kOutputAttrName, builder.getStringAttr(out.name()))));
  }
  builder.create<func::ReturnOp>(loc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, ValueRange(results).getTypes()));
  func.setAllResultAttrs(resultAttrs);
  return success();
}

void GraphImporter::countReaders(const onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node()) {
    for (const std::string &in : node.input())
      ++readers[in];
    // A subgraph (a Loop's body) reads the enclosing graph's values by name.
    for (const onnx::AttributeProto &a : node.attribute())
      if (a.has_g())
        countReaders(a.g());
  }
  for (const onnx::ValueInfoProto &out : graph.output())
    ++readers[out.name()];
}

bool GraphImporter::checkSupport(int64_t opset) {
  struct Missing {
    std::string node, opType, domain, why;
    int64_t version;
  };
  std::vector<Missing> missing;
  // The graph's nodes and those of its subgraphs (a Loop's body).
  std::function<void(const onnx::GraphProto &)> scan = [&](const onnx::GraphProto &graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
      const onnx::NodeProto &node = graph.node(i);
      for (const onnx::AttributeProto &a : node.attribute())
        if (a.has_g())
          scan(a.g());
      bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
      const ConverterEntry *entry = defaultDomain ? lookupConverter(node.op_type()) : nullptr;
      if (entry && opset >= entry->sinceVersion)
        continue;
      std::string name = node.name().empty()
                             ? node.op_type() + "_" + std::to_string(i)
                             : node.name();
      std::string why;
      if (entry)
        why = ": the op exists from opset " + std::to_string(entry->sinceVersion);
      std::string domain = defaultDomain ? "ai.onnx" : node.domain();
      missing.push_back({name, node.op_type(), domain, why,
                         defaultDomain ? opset : domainOpset(node.domain())});
    }
  };
  scan(model.graph());
  if (missing.empty())
    return true;
  error(llvm::Twine(missing.size()) + " node(s) use ops that trainc cannot import:");
  for (const Missing &m : missing) {
    errs << "  node '" << m.node << "': " << m.opType << " (domain " << m.domain
         << ", opset ";
    if (m.version >= 0)
      errs << m.version;
    else
      errs << "not imported by the model";
    errs << ")" << m.why << "\n";
  }
  return false;
}

FailureOr<RankedTensorType>
GraphImporter::inputType(const onnx::ValueInfoProto &info) {
  const std::string &name = info.name();
  if (!info.type().has_tensor_type()) {
    error("input '" + name + "' is not a tensor");
    return failure();
  }
  const auto &tensorType = info.type().tensor_type();
  auto dtype = convertDataType(tensorType.elem_type());
  if (!dtype) {
    error("input '" + name + "': " + llvm::toString(dtype.takeError()));
    return failure();
  }
  if (!tensorType.has_shape()) {
    error("input '" + name + "' has no shape; trainc needs static shapes");
    return failure();
  }
  SmallVector<int64_t> dims;
  for (int axis = 0; axis < tensorType.shape().dim_size(); ++axis) {
    const auto &dim = tensorType.shape().dim(axis);
    if (dim.has_dim_value()) {
      dims.push_back(dim.dim_value());
      continue;
    }
    std::string symbol = dim.has_dim_param() ? "'" + dim.dim_param() + "'" : "(unnamed)";
    if (axis != 0) {
      error("input '" + name + "' has a symbolic dimension " + symbol + " at axis " +
            llvm::Twine(axis) + "; only the batch axis 0 can be bound (--batch-size)");
      return failure();
    }
    if (!options.batchSize) {
      error("input '" + name + "' has a symbolic batch dimension " + symbol +
            "; bind it with --batch-size=N");
      return failure();
    }
    dims.push_back(*options.batchSize);
  }
  if (llvm::Error e = checkDims(dims)) {
    error("input '" + name + "': " + llvm::toString(std::move(e)));
    return failure();
  }
  return RankedTensorType::get(dims, toMlirType(&context, *dtype));
}

/// A model about to be trained that PyTorch exported in eval mode with
/// constant folding (torch.onnx.export's defaults) has had its BatchNorm
/// layers folded into the convolutions before them (the folded weights are
/// initializers named "onnx::Conv_N") and its Dropout layers removed:
/// training it trains another network, without a word. The folded names and
/// the absence of any BatchNormalization node give it away; the warning says
/// how to export for training.
void GraphImporter::warnIfEvalExport(const onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node())
    if (node.op_type() == "BatchNormalization")
      return;
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (!llvm::StringRef(init.name()).starts_with("onnx::Conv_"))
      continue;
    errs << "warning: " << modelName << ": initializer '" << init.name()
         << "' is a convolution weight folded by an eval-mode export "
            "(torch.onnx.export's defaults fold each BatchNorm into the convolution before it "
            "and drop Dropout): training this file trains another network than the PyTorch "
            "model; export it with python/trainc_torch.py, or with torch.onnx.export(..., "
            "training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False)\n";
    return;
  }
}

/// Whether a graph input has a symbolic first axis (which --batch-size binds).
static bool hasSymbolicBatch(const onnx::GraphProto &graph) {
  for (const onnx::ValueInfoProto &info : graph.input()) {
    const auto &type = info.type();
    if (type.has_tensor_type() && type.tensor_type().has_shape() &&
        type.tensor_type().shape().dim_size() > 0 &&
        !type.tensor_type().shape().dim(0).has_dim_value())
      return true;
  }
  return false;
}

/// The first axis of a data input is the batch. A --batch-size that binds
/// no symbolic axis (a model exported without dynamic axes) would size the
/// trainer's batches by one number and the inputs by another, so it is
/// refused, naming the input, its fixed size and the two ways out; so is,
/// for a training program (whose trainer fills every input with one batch
/// of rows), an input whose first axis is not the batch.
LogicalResult GraphImporter::checkBatchAxes(const onnx::GraphProto &graph,
                                            llvm::ArrayRef<std::string> inputNames,
                                            llvm::ArrayRef<Type> inputTypes) {
  const bool symbolic = hasSymbolicBatch(graph);
  std::optional<int64_t> batch;
  if (symbolic || options.batchSizeGiven)
    batch = options.batchSize;
  if (!options.everyInputBatched && (symbolic || !batch))
    return success();
  std::string batchInput;
  for (auto [name, type] : llvm::zip(inputNames, inputTypes)) {
    auto ranked = cast<RankedTensorType>(type);
    if (ranked.getRank() == 0) {
      if (!options.everyInputBatched)
        continue;
      error("input '" + name + "' is a scalar; every input of a training program has the "
            "batch as its first axis");
      return failure();
    }
    int64_t rows = ranked.getDimSize(0);
    if (!batch) {
      batch = rows;
      batchInput = name;
      continue;
    }
    if (rows == *batch) {
      if (!options.everyInputBatched)
        return success();
      continue;
    }
    std::string size = llvm::Twine(rows).str();
    std::string fix = "export it with dynamic_axes={'" + name +
                      "': {0: 'batch'}} (python/trainc_torch.py does), or ";
    if (batchInput.empty())
      error("input '" + name + "' has a fixed batch of " + size +
            " (its first axis), but --batch-size=" + llvm::Twine(*batch) +
            " was asked for: " + fix + "compile with --batch-size=" + size);
    else
      error("input '" + name + "' has a fixed first axis of " + size + ", but input '" +
            batchInput + "' has " + llvm::Twine(*batch) +
            " (the first axis of every input of a training program is the batch): " + fix +
            "make both the same");
    return failure();
  }
  return success();
}

LogicalResult GraphImporter::checkOutputType(const onnx::ValueInfoProto &info,
                                             Type type) {
  if (!info.type().has_tensor_type())
    return success();
  const auto &tensorType = info.type().tensor_type();
  auto ranked = cast<RankedTensorType>(type);
  if (tensorType.elem_type() != 0) {
    auto dtype = convertDataType(tensorType.elem_type());
    if (!dtype) {
      llvm::consumeError(dtype.takeError());
    } else if (toMlirType(&context, *dtype) != ranked.getElementType()) {
      error("output '" + info.name() + "' is declared with element type " +
            dtypeName(*dtype) + " but computes " +
            dtypeName(fromMlirType(ranked.getElementType()).value_or(DType::F32)));
      return failure();
    }
  }
  if (!tensorType.has_shape())
    return success();
  const auto &shape = tensorType.shape();
  bool mismatch = shape.dim_size() != ranked.getRank();
  for (int i = 0; !mismatch && i < shape.dim_size(); ++i)
    mismatch = shape.dim(i).has_dim_value() &&
               shape.dim(i).dim_value() != ranked.getDimSize(i);
  if (mismatch) {
    std::string declared;
    for (int i = 0; i < shape.dim_size(); ++i)
      declared += (i ? "x" : "") + (shape.dim(i).has_dim_value()
                                        ? std::to_string(shape.dim(i).dim_value())
                                        : std::string("?"));
    error("output '" + info.name() + "' is declared as " +
          (declared.empty() ? std::string("scalar") : declared) +
          " but the graph computes " + shape::format(ranked.getShape()));
    return failure();
  }
  return success();
}

void GraphImporter::removeDeadCode(func::FuncOp func) {
  Block &body = func.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body)))
    if (isOpTriviallyDead(&op))
      op.erase();
}

void GraphImporter::finishParams(ModuleOp module, func::FuncOp func,
                                 llvm::ArrayRef<std::string> paramNames,
                                 unsigned firstParam) {
  // Parameters nothing reads are dropped (the exported model keeps them as
  // they were). Batch-norm running statistics are state, not trainable.
  llvm::BitVector unused(func.getNumArguments());
  for (unsigned i = 0; i < paramNames.size(); ++i) {
    BlockArgument arg = func.getArgument(firstParam + i);
    auto param = module.lookupSymbol<tc::ParamOp>(paramNames[i]);
    if (arg.use_empty()) {
      unused.set(firstParam + i);
      param.erase();
      continue;
    }
    bool onlyRunningStats = llvm::all_of(arg.getUses(), [](OpOperand &use) {
      return isa<tc::BatchNormOp>(use.getOwner()) && use.getOperandNumber() >= 3;
    });
    if (onlyRunningStats)
      param.setTrainable(false);
  }
  (void)func.eraseArguments(unused);
}

LogicalResult GraphImporter::markPaddingRows(const TrainingMetadata &meta,
                                             func::FuncOp func,
                                             llvm::ArrayRef<std::string> paramNames,
                                             unsigned firstParam) {
  // The embedding lookups of a table with a padding row: tc.gather on axis 0
  // of the parameter itself (Identity nodes are gone by now).
  for (unsigned i = 0; i < paramNames.size(); ++i) {
    auto it = meta.paddingIndex.find(paramNames[i]);
    BlockArgument arg = func.getArgument(firstParam + i);
    if (it == meta.paddingIndex.end() || arg.use_empty())
      continue;
    bool marked = false;
    for (Operation *user : arg.getUsers())
      if (auto gather = dyn_cast<tc::GatherOp>(user);
          gather && gather.getData() == arg && gather.getAxis() == 0) {
        gather.setPaddingIndexAttr(builder.getI64IntegerAttr(it->second));
        marked = true;
      }
    if (!marked) {
      error("metadata '" + llvm::Twine(kPaddingIndexKey) + "' gives '" + paramNames[i] +
            "' a padding row, but no Gather on axis 0 reads it");
      return failure();
    }
  }
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::run() {
  if (!model.has_graph()) {
    error("not an ONNX model: it has no graph");
    return nullptr;
  }
  auto opset = defaultOpset(model);
  if (!opset) {
    error(llvm::toString(opset.takeError()));
    return nullptr;
  }
  if (!checkSupport(*opset))
    return nullptr;
  llvm::Expected<TrainingMetadata> meta = readTrainingMetadata(model);
  if (!meta) {
    error(llvm::toString(meta.takeError()));
    return nullptr;
  }
  const onnx::GraphProto &graph = model.graph();

  Location fileLoc = FileLineColLoc::get(&context, modelName, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr(tc::kOpsetAttrName, builder.getI64IntegerAttr(*opset));
  if (!model.producer_name().empty())
    (*module)->setAttr(tc::kProducerAttrName, builder.getStringAttr(model.producer_name()));
  builder.setInsertionPointToStart(module->getBody());

  // Initializers: float ones are parameters, the rest constants. With
  // trainc.trainable, only the float initializers it lists are trained.
  llvm::StringSet<> initializerNames;
  std::vector<std::string> paramNames;
  llvm::StringMap<std::vector<int64_t>> floatShapes;
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  std::vector<std::pair<std::string, Tensor>> constants;
  std::vector<std::string> inputNames;
  for (const onnx::TensorProto &init : graph.initializer()) {
    if (init.name().empty() || !initializerNames.insert(init.name()).second) {
      error("initializer '" + init.name() + "' is unnamed or defined twice");
      return nullptr;
    }
    auto tensor = readTensor(init, modelDir);
    if (!tensor) {
      error("initializer '" + init.name() + "': " + llvm::toString(tensor.takeError()));
      return nullptr;
    }
    if (!isFloat(tensor->dtype())) {
      constants.emplace_back(init.name(), std::move(*tensor));
      continue;
    }
    if (tensor->numElements() <= 64)
      smallInitialValues.insert({init.name(), *tensor});
    Location loc = NameLoc::get(builder.getStringAttr(init.name()));
    DenseElementsAttr value = toAttribute(&context, *tensor);
    floatShapes[init.name()] = tensor->shape().vec();
    bool trainable = !meta->trainable || meta->trainable->contains(init.name());
    builder.create<tc::ParamOp>(loc, builder.getStringAttr(init.name()),
                                TypeAttr::get(value.getType()),
                                trainable ? builder.getUnitAttr() : UnitAttr(), UnitAttr(),
                                value);
    paramNames.push_back(init.name());
  }
  if (llvm::Error e = checkMetadataNames(*meta, floatShapes)) {
    error(llvm::toString(std::move(e)));
    return nullptr;
  }

  if (failed(readDataInputs(graph, initializerNames, inputNames, argTypes, argAttrs)) ||
      failed(checkBatchAxes(graph, inputNames, argTypes)))
    return nullptr;
  unsigned firstParam = argTypes.size();
  // The batch size the program is compiled for: the bound symbolic axis, or
  // the static first axis of the first input.
  if (options.batchSize && hasSymbolicBatch(graph))
    (*module)->setAttr(tc::kBatchSizeAttrName, builder.getI64IntegerAttr(*options.batchSize));
  else if (!argTypes.empty() && cast<RankedTensorType>(argTypes[0]).getRank() > 0)
    (*module)->setAttr(tc::kBatchSizeAttrName, builder.getI64IntegerAttr(
                                           cast<RankedTensorType>(argTypes[0]).getDimSize(0)));
  for (const std::string &name : paramNames) {
    auto param = module->lookupSymbol<tc::ParamOp>(name);
    argTypes.push_back(param.getType());
    argAttrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
        tc::kParamAttrName, FlatSymbolRefAttr::get(&context, name))));
  }

  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(fileLoc, "forward",
                                           builder.getFunctionType(argTypes, {}));
  func.setAllArgAttrs(argAttrs);
  Block *entry = func.addEntryBlock();
  for (unsigned i = 0; i < inputNames.size(); ++i)
    entry->getArgument(i).setLoc(NameLoc::get(builder.getStringAttr(inputNames[i])));
  for (unsigned i = 0; i < paramNames.size(); ++i)
    entry->getArgument(firstParam + i)
        .setLoc(NameLoc::get(builder.getStringAttr(paramNames[i])));
  for (unsigned i = 0; i < inputNames.size(); ++i)
    slots.insert({inputNames[i], Slot{entry->getArgument(i), std::nullopt,
                                      NameLoc::get(builder.getStringAttr(inputNames[i]))}});
  for (unsigned i = 0; i < paramNames.size(); ++i)
    slots.insert({paramNames[i], Slot{entry->getArgument(firstParam + i), std::nullopt,
                                      NameLoc::get(builder.getStringAttr(paramNames[i]))}});
  for (auto &[name, tensor] : constants)
    slots.insert({name, Slot{Value(), std::move(tensor),
                             NameLoc::get(builder.getStringAttr(name))}});
  builder.setInsertionPointToStart(entry);

  countReaders(graph);

  // Errors of shape functions and verifiers are collected per node.
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      nodeErrors.push_back(diag.str());
    return success();
  });

  opsetVersion = *opset;
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    std::string name = node.name().empty()
                           ? node.op_type() + "_" + std::to_string(i)
                           : node.name();
    if (failed(importNode(node, name, i)))
      return nullptr;
  }

  builder.setInsertionPointToEnd(entry);
  if (failed(returnOutputs(graph, func, argTypes, fileLoc)))
    return nullptr;

  removeDeadCode(func);
  if (failed(markPaddingRows(*meta, func, paramNames, firstParam)))
    return nullptr;
  if (options.everyInputBatched && !meta->trainable)
    warnIfEvalExport(graph);
  finishParams(*module, func, paramNames, firstParam);
  if (failed(mlir::verify(*module))) {
    for (const std::string &message : nodeErrors)
      error(message);
    return nullptr;
  }
  return module;
}

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

static void loadDialects(MLIRContext &context) {
  context.loadDialect<tc::TcDialect, func::FuncDialect>();
}

OwningOpRef<ModuleOp> trainc::frontend::importModelFile(llvm::StringRef path,
                                                        const ImportOptions &options,
                                                        MLIRContext &context,
                                                        llvm::raw_ostream &errs) {
  loadDialects(context);
  onnx::ModelProto model;
  if (llvm::Error e = loadModelFile(path, model)) {
    errs << "error: " << llvm::toString(std::move(e)) << "\n";
    return nullptr;
  }
  llvm::SmallString<256> dir(path);
  llvm::sys::path::remove_filename(dir);
  if (dir.empty())
    dir = ".";
  GraphImporter importer(context, model, std::string(dir), std::string(path),
                         options, errs);
  return importer.run();
}

OwningOpRef<ModuleOp> trainc::frontend::importModelBytes(llvm::StringRef bytes,
                                                         bool isText,
                                                         const ImportOptions &options,
                                                         MLIRContext &context,
                                                         llvm::raw_ostream &errs) {
  loadDialects(context);
  onnx::ModelProto model;
  if (llvm::Error e = parseModel(bytes, "<memory>", isText, model)) {
    errs << "error: " << llvm::toString(std::move(e)) << "\n";
    return nullptr;
  }
  GraphImporter importer(context, model, "", "<memory>", options, errs);
  return importer.run();
}

std::optional<ModelSummary>
trainc::frontend::summarizeModelFile(llvm::StringRef path, llvm::raw_ostream &errs) {
  onnx::ModelProto model;
  if (llvm::Error e = loadModelFile(path, model)) {
    errs << "error: " << llvm::toString(std::move(e)) << "\n";
    return std::nullopt;
  }
  ModelSummary summary;
  auto opset = defaultOpset(model);
  if (!opset) {
    errs << "error: " << path << ": " << llvm::toString(opset.takeError()) << "\n";
    return std::nullopt;
  }
  summary.opset = *opset;
  summary.producer = model.producer_name();
  for (const auto &entry : model.metadata_props())
    summary.trainableMetadata |= entry.key() == kTrainableKey;
  std::map<std::pair<std::string, std::string>, OpSupport> ops;
  for (const onnx::NodeProto &node : model.graph().node()) {
    std::string domain = node.domain().empty() ? "ai.onnx" : node.domain();
    OpSupport &entry = ops[{domain, node.op_type()}];
    entry.domain = domain;
    entry.opType = node.op_type();
    ++entry.count;
    const ConverterEntry *converter =
        domain == "ai.onnx" ? lookupConverter(node.op_type()) : nullptr;
    entry.imported = converter != nullptr && *opset >= converter->sinceVersion;
    entry.gradient = !converter                                       ? "not yet"
                     : converter->gradient == Gradient::Yes           ? "yes"
                     : converter->gradient == Gradient::NotApplicable ? "n/a"
                                                                      : "not yet";
    entry.note = !converter                        ? (domain == "ai.onnx" ? "no converter"
                                                                          : "custom domain")
                 : *opset < converter->sinceVersion ? "exists from opset " +
                                                          std::to_string(converter->sinceVersion)
                                                    : converter->note;
  }
  for (auto &[key, entry] : ops)
    summary.ops.push_back(entry);
  return summary;
}
