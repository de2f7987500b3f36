//===- TrainingMetadata.h - the trainc.* metadata of a model ----*- C++ -*-===//
//
// ONNX cannot say which initializers are parameters. python/trainc_torch.py
// records it in the model's metadata_props, and the importer honours it:
//
//   trainc.trainable      JSON list of the initializer names to train; float
//                         initializers it leaves out are not trained
//   trainc.padding_index  JSON object {initializer name: row}: the embedding
//                         row (nn.Embedding's padding_idx) that gets no
//                         gradient
//
// The metadata is untrusted input: anything malformed is an error naming the
// key, never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_FRONTEND_TRAININGMETADATA_H
#define TRAINC_FRONTEND_TRAININGMETADATA_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Error.h"

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace trainc::frontend {

inline constexpr const char *kTrainableKey = "trainc.trainable";
inline constexpr const char *kPaddingIndexKey = "trainc.padding_index";

struct TrainingMetadata {
  /// The names in trainc.trainable; absent without the key (then every float
  /// initializer is trained).
  std::optional<llvm::StringSet<>> trainable;
  /// trainc.padding_index: initializer name -> padding row (non-negative).
  llvm::StringMap<int64_t> paddingIndex;
};

/// Parses the trainc.* entries of `model.metadata_props`. Whether the names
/// are float initializers is the importer's check.
llvm::Expected<TrainingMetadata>
readTrainingMetadata(const onnx::ModelProto &model);

/// Checks that every name of `meta` is a float initializer (a key of
/// `floatShapes`, which gives its shape) and every padding index a row of
/// its table's first axis.
llvm::Error
checkMetadataNames(const TrainingMetadata &meta,
                   const llvm::StringMap<std::vector<int64_t>> &floatShapes);

} // namespace trainc::frontend

#endif // TRAINC_FRONTEND_TRAININGMETADATA_H
