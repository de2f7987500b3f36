//===- OpTable.cpp - which converter handles which ONNX op ----------------===//

#include "frontend/Frontend.h"
#include "frontend/Importer.h"

#include "llvm/ADT/StringMap.h"

#include <algorithm>

using namespace trainc::frontend;

namespace {

const llvm::StringMap<ConverterEntry> &table() {
  static const llvm::StringMap<ConverterEntry> entries = {
      // Pointwise
      {"Relu", {convertElementwise, "tc.relu"}},
      {"Sigmoid", {convertElementwise, "tc.sigmoid"}},
      {"Tanh", {convertElementwise, "tc.tanh"}},
      {"Erf", {convertElementwise, "tc.erf"}},
      {"Exp", {convertElementwise, "tc.exp"}},
      {"Log", {convertElementwise, "tc.log"}},
      {"Sqrt", {convertElementwise, "tc.sqrt"}},
      {"Reciprocal", {convertElementwise, "tc.reciprocal"}},
      {"Neg", {convertElementwise, "tc.neg"}},
      {"Abs", {convertElementwise, "tc.abs"}},
      {"Not", {convertElementwise, "tc.not"}},
      {"Add", {convertElementwise, "tc.add"}},
      {"Sub", {convertElementwise, "tc.sub"}},
      {"Mul", {convertElementwise, "tc.mul"}},
      {"Div", {convertElementwise, "tc.div"}},
      {"Pow", {convertElementwise, "tc.pow"}},
      {"Equal", {convertElementwise, "tc.equal"}},
      {"Less", {convertElementwise, "tc.less"}},
      {"LessOrEqual", {convertElementwise, "tc.less_equal"}},
      {"Greater", {convertElementwise, "tc.greater"}},
      {"GreaterOrEqual", {convertElementwise, "tc.greater_equal"}},
      {"And", {convertElementwise, "tc.and"}},
      {"Or", {convertElementwise, "tc.or"}},
      {"Max", {convertVariadic, "chain of tc.max"}},
      {"Min", {convertVariadic, "chain of tc.min"}},
      {"Sum", {convertVariadic, "chain of tc.add"}},
      {"Mean", {convertVariadic, "chain of tc.add, then tc.div"}},
      {"Where", {convertWhere, "tc.where"}},
      {"Cast", {convertCast, "tc.cast"}},
      {"CastLike", {convertCastLike, "tc.cast"}},
      {"Identity", {convertIdentity, "removed"}},
      {"Clip", {convertClip, "tc.clip"}},
      {"Gelu", {convertGelu, "tc.gelu", 20}},
      {"LeakyRelu", {convertLeakyRelu, "tc.leaky_relu"}},
      {"Dropout", {convertDropout, "tc.dropout"}},
      // Contractions, normalization, pooling, softmax, reductions, losses
      {"MatMul", {convertMatMul, "tc.matmul"}},
      {"Gemm", {convertGemm, "tc.gemm"}},
      {"Conv", {convertConv, "tc.conv"}},
      {"BatchNormalization", {convertBatchNorm, "tc.batch_norm"}},
      {"LayerNormalization", {convertLayerNorm, "tc.layer_norm", 17}},
      {"MaxPool", {convertPool, "tc.max_pool"}},
      {"AveragePool", {convertPool, "tc.avg_pool"}},
      {"GlobalAveragePool", {convertGlobalPool, "tc.global_avg_pool"}},
      {"GlobalMaxPool", {convertGlobalPool, "tc.reduce_max"}},
      {"Softmax", {convertSoftmax, "tc.softmax"}},
      {"LogSoftmax", {convertSoftmax, "tc.log_softmax"}},
      {"ReduceSum", {convertReduce, "tc.reduce_sum"}},
      {"ReduceMean", {convertReduce, "tc.reduce_mean"}},
      {"ReduceMax", {convertReduce, "tc.reduce_max"}},
      {"SoftmaxCrossEntropyLoss", {convertClassLoss, "tc.softmax_cross_entropy"}},
      {"NegativeLogLikelihoodLoss", {convertClassLoss, "tc.nll_loss"}},
      // Shapes and data movement
      {"Reshape", {convertReshape, "tc.reshape (folded on constants)"}},
      {"Flatten", {convertFlatten, "tc.reshape"}},
      {"Squeeze", {convertSqueeze, "tc.reshape"}},
      {"Unsqueeze", {convertUnsqueeze, "tc.reshape"}},
      {"Transpose", {convertTranspose, "tc.transpose"}},
      {"Concat", {convertConcat, "tc.concat"}},
      {"Slice", {convertSlice, "tc.slice"}},
      {"Split", {convertSplit, "tc.slice per output"}},
      {"Gather", {convertGather, "tc.gather"}},
      {"Expand", {convertExpand, "tc.expand"}},
      {"Shape", {convertShape, "folded to a constant"}},
      {"Size", {convertSize, "folded to a constant"}},
      {"Constant", {convertConstant, "folded; tc.constant where read at run time"}},
      {"ConstantOfShape", {convertConstantOfShape, "folded to a constant"}},
      {"Range", {convertRange, "folded to a constant"}},
      {"Pad", {convertPad, "all-zero pads only (removed)"}},
  };
  return entries;
}

} // namespace

const ConverterEntry *trainc::frontend::lookupConverter(llvm::StringRef opType) {
  auto it = table().find(opType);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> trainc::frontend::supportedOpTypes() {
  std::vector<std::string> names;
  for (const auto &entry : table())
    names.push_back(entry.getKey().str());
  std::sort(names.begin(), names.end());
  return names;
}
