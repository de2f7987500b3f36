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
      {"Relu", {convertElementwise, "tc.relu", 1, Gradient::Yes}},
      {"Sigmoid", {convertElementwise, "tc.sigmoid", 1, Gradient::Yes}},
      {"Tanh", {convertElementwise, "tc.tanh", 1, Gradient::Yes}},
      {"Erf", {convertElementwise, "tc.erf", 1, Gradient::Yes}},
      {"Sin", {convertElementwise, "tc.sin", 7, Gradient::Yes}},
      {"Cos", {convertElementwise, "tc.cos", 7, Gradient::Yes}},
      {"Tan", {convertElementwise, "tc.tan", 7, Gradient::Yes}},
      {"Atan", {convertElementwise, "tc.atan", 7, Gradient::Yes}},
      {"Asin", {convertElementwise, "tc.asin", 7, Gradient::Yes}},
      {"Acos", {convertElementwise, "tc.acos", 7, Gradient::Yes}},
      {"Sinh", {convertElementwise, "tc.sinh", 9, Gradient::Yes}},
      {"Cosh", {convertElementwise, "tc.cosh", 9, Gradient::Yes}},
      {"Exp", {convertElementwise, "tc.exp", 1, Gradient::Yes}},
      {"Log", {convertElementwise, "tc.log", 1, Gradient::Yes}},
      {"Sqrt", {convertElementwise, "tc.sqrt", 1, Gradient::Yes}},
      {"Reciprocal", {convertElementwise, "tc.reciprocal", 1, Gradient::Yes}},
      {"Neg", {convertElementwise, "tc.neg", 1, Gradient::Yes}},
      {"Abs", {convertElementwise, "tc.abs", 1, Gradient::Yes}},
      {"Not", {convertElementwise, "tc.not", 1, Gradient::NotApplicable}},
      {"Sign", {convertElementwise, "tc.sign", 9, Gradient::Yes}},
      {"Ceil", {convertElementwise, "tc.ceil", 1, Gradient::Yes}},
      {"Floor", {convertElementwise, "tc.floor", 1, Gradient::Yes}},
      {"Round", {convertElementwise, "tc.round", 11, Gradient::Yes}},
      {"Add", {convertElementwise, "tc.add", 1, Gradient::Yes}},
      {"Sub", {convertElementwise, "tc.sub", 1, Gradient::Yes}},
      {"Mul", {convertElementwise, "tc.mul", 1, Gradient::Yes}},
      {"Div", {convertElementwise, "tc.div", 1, Gradient::Yes}},
      {"Pow", {convertElementwise, "tc.pow", 1, Gradient::Yes}},
      {"Equal", {convertElementwise, "tc.equal", 1, Gradient::NotApplicable}},
      {"Less", {convertElementwise, "tc.less", 1, Gradient::NotApplicable}},
      {"LessOrEqual", {convertElementwise, "tc.less_equal", 1, Gradient::NotApplicable}},
      {"Greater", {convertElementwise, "tc.greater", 1, Gradient::NotApplicable}},
      {"GreaterOrEqual", {convertElementwise, "tc.greater_equal", 1, Gradient::NotApplicable}},
      {"And", {convertElementwise, "tc.and", 1, Gradient::NotApplicable}},
      {"Or", {convertElementwise, "tc.or", 1, Gradient::NotApplicable}},
      {"Max", {convertVariadic, "chain of tc.max", 1, Gradient::Yes}},
      {"Min", {convertVariadic, "chain of tc.min", 1, Gradient::Yes}},
      {"Sum", {convertVariadic, "chain of tc.add", 1, Gradient::Yes}},
      {"Mean", {convertVariadic, "chain of tc.add, then tc.div", 1, Gradient::Yes}},
      {"Where", {convertWhere, "tc.where", 1, Gradient::Yes}},
      {"Cast", {convertCast, "tc.cast", 1, Gradient::Yes}},
      {"CastLike", {convertCastLike, "tc.cast", 1, Gradient::Yes}},
      {"Identity", {convertIdentity, "removed", 1, Gradient::Yes}},
      {"Clip", {convertClip, "tc.clip", 1, Gradient::Yes}},
      {"Gelu", {convertGelu, "tc.gelu", 20, Gradient::Yes}},
      {"LeakyRelu", {convertLeakyRelu, "tc.leaky_relu", 1, Gradient::Yes}},
      {"Dropout", {convertDropout, "tc.dropout", 1, Gradient::Yes}},
      {"HardSigmoid", {convertHardSigmoid, "tc.where of tc.add, tc.div (PyTorch's gradient at the bounds)", 1, Gradient::Yes}},
      {"HardSwish", {convertHardSwish, "tc.where, tc.add, tc.mul, tc.div (PyTorch's gradient at the bounds)", 14, Gradient::Yes}},
      {"Elu", {convertElu, "tc.where of tc.exp (PyTorch's elu)", 6, Gradient::Yes}},
      {"Selu", {convertSelu, "tc.where of tc.exp, tc.mul (PyTorch's selu)", 6, Gradient::Yes}},
      {"Celu", {convertCelu, "tc.where of tc.exp (PyTorch's celu)", 12, Gradient::Yes}},
      {"Softplus", {convertSoftplus, "tc.where of tc.log, tc.exp (PyTorch's threshold 20)", 1, Gradient::Yes}},
      {"Mish", {convertMish, "tc.mul, tc.tanh of softplus", 18, Gradient::Yes}},
      {"Softsign", {convertSoftsign, "tc.div, tc.abs", 1, Gradient::Yes}},
      {"ThresholdedRelu", {convertThresholdedRelu, "tc.where", 10, Gradient::Yes}},
      {"PRelu", {convertPRelu, "tc.where of tc.mul (slope broadcast)", 9, Gradient::Yes}},
      // Contractions, normalization, pooling, softmax, reductions, losses
      {"MatMul", {convertMatMul, "tc.matmul", 1, Gradient::Yes}},
      {"Gemm", {convertGemm, "tc.gemm", 1, Gradient::Yes}},
      {"Einsum", {convertEinsum, "tc.transpose/reshape/matmul/reduce_sum", 12, Gradient::Yes}},
      {"Conv", {convertConv, "tc.conv", 1, Gradient::Yes}},
      {"ConvTranspose", {convertConvTranspose, "tc.conv_backward_data (the gradient of a conv), then the bias", 1, Gradient::Yes}},
      {"RNN", {convertRecurrent, "unrolled time loop: one input GEMM, per step tc.gemm and the fused cell", 7, Gradient::Yes}},
      {"GRU", {convertRecurrent, "unrolled time loop: one input GEMM, per step tc.gemm and the fused cell", 7, Gradient::Yes}},
      {"LSTM", {convertRecurrent, "unrolled time loop: one input GEMM, per step tc.gemm and the fused cell", 7, Gradient::Yes}},
      {"Resize", {convertResize, "tc.gather along each resized axis (linear: two, weighted)", 10, Gradient::Yes}},
      // Sequences of a length known at import, and loops unrolled
      {"SequenceEmpty", {convertSequenceEmpty, "a sequence held at import", 11, Gradient::NotApplicable}},
      {"SequenceConstruct", {convertSequenceConstruct, "a sequence held at import", 11, Gradient::Yes}},
      {"SequenceInsert", {convertSequenceInsert, "a sequence held at import", 11, Gradient::Yes}},
      {"SequenceAt", {convertSequenceAt, "the element (position known at import)", 11, Gradient::Yes}},
      {"SequenceLength", {convertSequenceLength, "folded to a constant", 11, Gradient::NotApplicable}},
      {"SplitToSequence", {convertSplitToSequence, "tc.slice per piece (folded on constants)", 11, Gradient::Yes}},
      {"ConcatFromSequence", {convertConcatFromSequence, "tc.concat (folded on constants)", 11, Gradient::Yes}},
      {"Loop", {convertLoop, "unrolled (trip count and condition known at import)", 1, Gradient::Yes}},
      {"BatchNormalization", {convertBatchNorm, "tc.batch_norm", 1, Gradient::Yes}},
      {"LayerNormalization", {convertLayerNorm, "tc.layer_norm", 17, Gradient::Yes}},
      {"GroupNormalization", {convertGroupNorm, "tc.layer_norm of [N, G, C / G * spatial], then scale and bias", 18, Gradient::Yes}},
      {"InstanceNormalization", {convertInstanceNorm, "tc.layer_norm of [N, C, spatial], then scale and bias", 1, Gradient::Yes}},
      {"MaxPool", {convertPool, "tc.max_pool", 1, Gradient::Yes}},
      {"AveragePool", {convertPool, "tc.avg_pool", 1, Gradient::Yes}},
      {"GlobalAveragePool", {convertGlobalPool, "tc.global_avg_pool", 1, Gradient::Yes}},
      {"GlobalMaxPool", {convertGlobalPool, "tc.reduce_max", 1, Gradient::Yes}},
      {"Softmax", {convertSoftmax, "tc.softmax", 1, Gradient::Yes}},
      {"LogSoftmax", {convertSoftmax, "tc.log_softmax", 1, Gradient::Yes}},
      {"ReduceSum", {convertReduce, "tc.reduce_sum", 1, Gradient::Yes}},
      {"ReduceMean", {convertReduce, "tc.reduce_mean", 1, Gradient::Yes}},
      {"ReduceMax", {convertReduce, "tc.reduce_max", 1, Gradient::Yes}},
      {"ReduceProd", {convertReduce, "folded on constants; at run time a tc.mul chain over slices (the product rule's gradient)", 1, Gradient::Yes}},
      {"ReduceMin", {convertReduce, "tc.neg of tc.reduce_max of tc.neg (floats)", 1, Gradient::Yes}},
      {"ReduceL1", {convertReduce, "tc.reduce_sum of tc.abs", 1, Gradient::Yes}},
      {"ReduceL2", {convertReduce, "tc.sqrt of tc.reduce_sum of squares (gradient 0 at a zero norm)", 1, Gradient::Yes}},
      {"ReduceSumSquare", {convertReduce, "tc.reduce_sum of tc.mul", 1, Gradient::Yes}},
      {"ReduceLogSum", {convertReduce, "tc.log of tc.reduce_sum", 1, Gradient::Yes}},
      {"ReduceLogSumExp", {convertReduce, "tc.reduce_max, tc.exp, tc.reduce_sum, tc.log (as torch.logsumexp)", 1, Gradient::Yes}},
      {"SoftmaxCrossEntropyLoss", {convertClassLoss, "tc.softmax_cross_entropy", 1, Gradient::Yes}},
      {"NegativeLogLikelihoodLoss", {convertClassLoss, "tc.nll_loss", 1, Gradient::Yes}},
      // Shapes and data movement
      {"Reshape", {convertReshape, "tc.reshape (folded on constants)", 1, Gradient::Yes}},
      {"Flatten", {convertFlatten, "tc.reshape", 1, Gradient::Yes}},
      {"Squeeze", {convertSqueeze, "tc.reshape", 1, Gradient::Yes}},
      {"Unsqueeze", {convertUnsqueeze, "tc.reshape", 1, Gradient::Yes}},
      {"Transpose", {convertTranspose, "tc.transpose", 1, Gradient::Yes}},
      {"DepthToSpace", {convertDepthSpace, "tc.reshape, tc.transpose, tc.reshape", 1, Gradient::Yes}},
      {"SpaceToDepth", {convertDepthSpace, "tc.reshape, tc.transpose, tc.reshape", 1, Gradient::Yes}},
      {"Concat", {convertConcat, "tc.concat", 1, Gradient::Yes}},
      {"Slice", {convertSlice, "tc.slice", 1, Gradient::Yes}},
      {"Split", {convertSplit, "tc.slice per output", 1, Gradient::Yes}},
      {"Gather", {convertGather, "tc.gather", 1, Gradient::Yes}},
      {"Expand", {convertExpand, "tc.expand", 1, Gradient::Yes}},
      {"Shape", {convertShape, "folded to a constant", 1, Gradient::NotApplicable}},
      {"Size", {convertSize, "folded to a constant", 1, Gradient::NotApplicable}},
      {"Constant", {convertConstant, "folded; tc.constant where read at run time", 1, Gradient::NotApplicable}},
      {"ConstantOfShape", {convertConstantOfShape, "folded to a constant", 1, Gradient::NotApplicable}},
      {"Range", {convertRange, "folded to a constant; tc.add of constant steps to a run-time start when the limit is start + c", 1, Gradient::NotApplicable}},
      {"EyeLike", {convertEyeLike, "folded to a constant", 9, Gradient::NotApplicable}},
      {"OneHot", {convertOneHot, "tc.where of tc.equal with 0..depth-1", 11, Gradient::NotApplicable}},
      {"Pad", {convertPad, "tc.pad (constant, reflect, edge; folded on constants)", 1, Gradient::Yes}},
      // Indexing along axes (ConvertIndexing.cpp)
      {"CumSum", {convertCumSum, "tc.cumsum (folded on constants)", 11, Gradient::Yes}},
      {"Mod", {convertMod, "tc.mod (folded on constants)", 10, Gradient::Yes}},
      {"Tile", {convertTile, "tc.tile (folded on constants)", 1, Gradient::Yes}},
      {"Trilu", {convertTrilu, "tc.trilu (folded on constants)", 14, Gradient::Yes}},
      {"ScatterND", {convertScatterND, "tc.scatter_nd (folded on constants)", 11, Gradient::No}},
      {"NonZero", {convertNonZero, "folded on constants only", 9, Gradient::NotApplicable}},
      {"ArgMax", {convertArgMax, "tc.argmax (folded on constants)", 1, Gradient::NotApplicable}},
      {"ArgMin", {convertArgMax, "tc.argmin (folded on constants)", 1, Gradient::NotApplicable}},
      {"ScatterElements", {convertScatterElements, "tc.scatter_elements (gradients for reductions none and add)", 11, Gradient::Yes}},
      {"TopK", {convertTopK, "tc.top_k (positions), tc.gather_elements (values)", 11, Gradient::Yes}},
      {"GatherElements", {convertGatherElements, "tc.gather_elements (folded on constants)", 11, Gradient::Yes}},
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
