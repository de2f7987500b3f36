//===- ModelLoader.h - reading ONNX files safely ---------------*- C++ -*-===//
//
// Reads an ONNX model from a binary protobuf or from ONNX text format, and
// turns TensorProtos into host tensors. Every malformed input becomes an error
// message, never a crash: dimensions are bounded, raw data must match its
// shape, and external data may not leave the model's folder.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTEND_MODELLOADER_H
#define TRAINC_FRONTEND_MODELLOADER_H

#include "frontend/Tensor.h"

#include "llvm/Support/Error.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace trainc::frontend {

/// Largest element count of one tensor the importer accepts (2^31).
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 31;

/// The lowest and highest default-domain opset trainc imports.
inline constexpr int64_t kMinOpset = 13;
inline constexpr int64_t kMaxOpset = 21;

/// Parses `contents` as a model. `name` names the source in messages;
/// `isText` selects ONNX text format, otherwise binary protobuf.
llvm::Error parseModel(llvm::StringRef contents, llvm::StringRef name,
                       bool isText, onnx::ModelProto &model);

/// Reads and parses the model file at `path`; text format is chosen by the
/// extension (.onnxtxt, .txt) or, failing a binary parse, by content.
llvm::Error loadModelFile(llvm::StringRef path, onnx::ModelProto &model);

/// The default-domain opset of the model, or an error if it is missing or
/// outside [kMinOpset, kMaxOpset].
llvm::Expected<int64_t> defaultOpset(const onnx::ModelProto &model);

/// Maps an ONNX TensorProto data type to a tc element type.
llvm::Expected<DType> convertDataType(int32_t onnxType);

/// Reads a TensorProto (inline, raw or external data) into a host tensor.
/// `modelDir` is the folder external data must stay in; empty forbids
/// external data.
llvm::Expected<Tensor> readTensor(const onnx::TensorProto &proto,
                                  llvm::StringRef modelDir);

/// Checks a dimension list: non-negative, and at most kMaxTensorElements
/// elements in all.
llvm::Error checkDims(llvm::ArrayRef<int64_t> dims);

} // namespace trainc::frontend

#endif // TRAINC_FRONTEND_MODELLOADER_H
