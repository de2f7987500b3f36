//===- SampleTransform.h - image inputs as users store them -----*- C++ -*-===//
//
// Internal to the runtime: what turns a sample file's rows into a step's f32
// input rows, in the loader's workers. A uint8 file (`|u1`, a quarter of
// float32's disk and reads) of an f32 input is converted as torchvision's
// ToTensor does (x / 255, the file's samples C x H x W as the input, or
// H x W x C, ToTensor's own layout, transposed); --normalize
// INPUT:m1,...:s1,... then subtracts the mean and divides by the standard
// deviation per channel as Normalize does, in f32. --augment crop:P,flip
// applies torchvision's RandomCrop(padding=P) (zeros around, before the
// conversion, as on a PIL image) and RandomHorizontalFlip to each training
// sample, with draws that are a function of (seed, epoch, sample), so a
// resumed run draws what the uninterrupted one drew (augmentDraw).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_SAMPLETRANSFORM_H
#define TRAINC_RT_COMMON_SAMPLETRANSFORM_H

#include "Npy.h"
#include "trainc_rt/program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace trainc::rt::detail {

/// --normalize INPUT:m1,m2,...:s1,s2,... (one mean and deviation, or one per
/// channel).
struct Normalization {
  std::string input;
  std::vector<float> mean, std;
};

/// The sample flags as given: --normalize (repeatable, one per input) and
/// --augment.
struct SampleOptions {
  std::vector<Normalization> normalize;
  /// --augment crop:P,flip: RandomCrop's padding (-1: no crop) and the flip.
  int cropPadding = -1;
  bool flip = false;
  bool augments() const { return cropPadding >= 0 || flip; }
};

/// Parses --normalize's value; an error names the flag and the part that
/// is wrong.
Status parseNormalization(const std::string &text, Normalization &out);
/// Parses --augment's value (crop:P, flip, or both, comma-separated).
Status parseAugment(const std::string &text, SampleOptions &out);

/// The crop offsets and the flip of `sample` in `epoch`: Philox4x32-10
/// (trainc_rt/random.h) of counter [sample low, sample high, epoch low,
/// kAugmentStream] under the seed; top and left are words 0 and 1 mod
/// (2P + 1), the flip is word 2's top bit.
struct AugmentDraw {
  int64_t top = 0, left = 0;
  bool flip = false;
};
inline constexpr uint32_t kAugmentStream = 0xA06D0001u;
AugmentDraw augmentDraw(uint64_t seed, int64_t epoch, int64_t sample, int cropPadding);

/// How one file's rows become an input's rows.
struct SampleTransform {
  /// A plain copy: the file holds the input's type and nothing is asked.
  bool identity = true;
  bool fromU8 = false, hwc = false;
  /// The input's channels (axis 1) and, for rank 4, height and width.
  int64_t channels = 1, height = 1, width = 1;
  /// Per channel (one value: every channel); empty: no normalization.
  std::vector<float> mean, std;
  int cropPadding = -1;
  bool flip = false;
  uint64_t seed = 0;
  /// Bytes of one sample in the file.
  uint64_t fileRowBytes = 0;

  bool augments() const { return cropPadding >= 0 || flip; }
  /// One sample from its file bytes into `out` (f32, the input's layout),
  /// augmented with `draw` where the transform augments.
  void apply(const unsigned char *in, float *out, const AugmentDraw &draw) const;
};

/// The transforms of the sample files `arrays` of `inputs` (opened by
/// openSampleInputs, which accepted a uint8 file for an f32 input): checks
/// every --normalize against the inputs (a known f32 input, one value or
/// one per channel, deviations above 0) and --augment (one rank-4 f32 input
/// to apply it to, a padding below the image) and returns one transform per
/// input. `augment`: training data (evaluation and prediction convert and
/// normalize, and never augment).
Status sampleTransforms(const TensorInfo *inputs, int count, const std::vector<NpyArray> &arrays,
                        const SampleOptions &options, bool augment, uint64_t seed,
                        std::vector<SampleTransform> &transforms);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_SAMPLETRANSFORM_H
