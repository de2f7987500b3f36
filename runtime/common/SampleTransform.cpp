//===- SampleTransform.cpp - image inputs as users store them -------------===//

#include "SampleTransform.h"

#include "ProgramSupport.h"
#include "trainc_rt/random.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace trainc::rt::detail {

namespace {

/// Comma-separated decimal numbers (finite, f32), at least one.
bool parseNumbers(const std::string &text, std::vector<float> &out) {
  out.clear();
  size_t at = 0;
  for (;;) {
    const size_t comma = text.find(',', at);
    const std::string word = text.substr(at, comma == std::string::npos ? std::string::npos
                                                                        : comma - at);
    if (word.empty())
      return false;
    char *end = nullptr;
    errno = 0;
    const double value = std::strtod(word.c_str(), &end);
    if (*end != '\0' || errno != 0 || !std::isfinite(value) ||
        std::fabs(value) > std::numeric_limits<float>::max() || word.find_first_of("xXpP") != std::string::npos ||
        word.find("nan") != std::string::npos || word.find("inf") != std::string::npos)
      return false;
    out.push_back(static_cast<float>(value));
    if (comma == std::string::npos)
      return true;
    at = comma + 1;
  }
}

} // namespace

Status parseNormalization(const std::string &text, Normalization &out) {
  const size_t first = text.find(':'), second = text.find(':', first + 1);
  if (first == std::string::npos || second == std::string::npos ||
      text.find(':', second + 1) != std::string::npos || first == 0)
    return Status::error("--normalize needs INPUT:MEAN[,MEAN...]:STD[,STD...], got '" + text +
                         "'");
  out.input = text.substr(0, first);
  if (!parseNumbers(text.substr(first + 1, second - first - 1), out.mean))
    return Status::error("--normalize " + text + ": the means are not decimal numbers");
  if (!parseNumbers(text.substr(second + 1), out.std))
    return Status::error("--normalize " + text + ": the deviations are not decimal numbers");
  if (out.mean.size() != out.std.size())
    return Status::error("--normalize " + text + ": " + std::to_string(out.mean.size()) +
                         " means but " + std::to_string(out.std.size()) + " deviations");
  for (float s : out.std)
    if (!(s > 0))
      return Status::error("--normalize " + text + ": a deviation must be above 0");
  return Status();
}

Status parseAugment(const std::string &text, SampleOptions &out) {
  size_t at = 0;
  for (;;) {
    const size_t comma = text.find(',', at);
    const std::string word = text.substr(at, comma == std::string::npos ? std::string::npos
                                                                        : comma - at);
    if (word == "flip" && !out.flip) {
      out.flip = true;
    } else if (word.rfind("crop:", 0) == 0 && out.cropPadding < 0 && word.size() > 5 &&
               word.size() <= 9 &&
               word.find_first_not_of("0123456789", 5) == std::string::npos) {
      out.cropPadding = std::atoi(word.c_str() + 5);
    } else {
      return Status::error("--augment takes crop:P (RandomCrop with padding P) and flip "
                           "(RandomHorizontalFlip), comma-separated, each once; got '" +
                           text + "'");
    }
    if (comma == std::string::npos)
      return Status();
    at = comma + 1;
  }
}

AugmentDraw augmentDraw(uint64_t seed, int64_t epoch, int64_t sample, int cropPadding) {
  const uint64_t s = static_cast<uint64_t>(sample);
  const random::Philox4x32 r = random::philox4x32_10(
      static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32), static_cast<uint32_t>(epoch),
      kAugmentStream, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  AugmentDraw draw;
  if (cropPadding > 0) {
    const uint32_t span = 2u * static_cast<uint32_t>(cropPadding) + 1u;
    draw.top = r.v[0] % span;
    draw.left = r.v[1] % span;
  } else if (cropPadding == 0) {
    draw.top = draw.left = 0;
  }
  draw.flip = (r.v[2] >> 31) != 0;
  return draw;
}

void SampleTransform::apply(const unsigned char *in, float *out, const AugmentDraw &draw) const {
  const int64_t pad = cropPadding > 0 ? cropPadding : 0;
  const bool flipped = flip && draw.flip;
  const int64_t dy = cropPadding >= 0 ? draw.top - pad : 0,
                dx = cropPadding >= 0 ? draw.left - pad : 0;
  for (int64_t c = 0; c < channels; ++c) {
    const size_t k = mean.size() == 1 ? 0 : static_cast<size_t>(c);
    for (int64_t y = 0; y < height; ++y)
      for (int64_t x = 0; x < width; ++x) {
        // Output (y, x) is the cropped image's (y, W - 1 - x) when flipped:
        // the padded image's (y + top, ...), the file's less the padding.
        const int64_t sy = y + dy, sx = (flipped ? width - 1 - x : x) + dx;
        float v = 0.0f; // RandomCrop's fill
        if (sy >= 0 && sy < height && sx >= 0 && sx < width) {
          const int64_t at = hwc ? (sy * width + sx) * channels + c
                                 : (c * height + sy) * width + sx;
          if (fromU8) {
            v = static_cast<float>(in[at]) / 255.0f;
          } else {
            std::memcpy(&v, in + at * 4, 4);
          }
        }
        if (!mean.empty())
          v = (v - mean[k]) / std[k];
        out[(c * height + y) * width + x] = v;
      }
  }
}

Status sampleTransforms(const TensorInfo *inputs, int count, const std::vector<NpyArray> &arrays,
                        const SampleOptions &options, bool augment, uint64_t seed,
                        std::vector<SampleTransform> &transforms) {
  transforms.assign(count, SampleTransform{});
  std::string names;
  for (int i = 0; i < count; ++i) {
    const TensorInfo &t = inputs[i];
    names += (i ? ", " : "") + std::string(t.name);
    SampleTransform &f = transforms[i];
    f.fromU8 = arrays[i].dtype() == DType::U8 && t.dtype == DType::F32;
    f.channels = t.rank >= 2 ? t.shape[1] : 1;
    f.height = t.rank == 4 ? t.shape[2] : 1;
    for (int d = 2; d < t.rank && t.rank != 4; ++d)
      f.height *= t.shape[d];
    f.width = t.rank == 4 ? t.shape[3] : 1;
    if (t.rank == 1)
      f.height = 1;
    f.hwc = f.fromU8 && t.rank == 4 &&
            !std::equal(arrays[i].shape().begin() + 1, arrays[i].shape().end(), t.shape + 1);
    f.seed = seed;
    f.fileRowBytes = tensorBytes(t, 1) / dtypeSize(t.dtype) * dtypeSize(arrays[i].dtype());
  }
  for (const Normalization &n : options.normalize) {
    int i = 0;
    while (i < count && n.input != inputs[i].name)
      ++i;
    if (i == count || inputs[i].dtype != DType::F32)
      return Status::error("--normalize " + n.input + ": " +
                           (i == count ? "no such input" : "not an f32 input") +
                           " (the data's inputs: " + names + ")");
    SampleTransform &f = transforms[i];
    if (!f.mean.empty())
      return Status::error("--normalize " + n.input + " is given twice");
    if (n.mean.size() != 1 && static_cast<int64_t>(n.mean.size()) != f.channels)
      return Status::error("--normalize " + n.input + ": " + std::to_string(n.mean.size()) +
                           " means for " + std::to_string(f.channels) +
                           " channels (axis 1 of " + shapeText(inputs[i]) +
                           "): give one, or one per channel");
    f.mean = n.mean;
    f.std = n.std;
  }
  if (augment && options.augments()) {
    int image = -1;
    for (int i = 0; i < count; ++i)
      if (inputs[i].rank == 4 && inputs[i].dtype == DType::F32) {
        if (image >= 0)
          return Status::error(std::string("--augment: the inputs ") + inputs[image].name +
                               " and " + inputs[i].name + " are both images ([N, C, H, W]); "
                               "which to augment is not clear");
        image = i;
      }
    if (image < 0)
      return Status::error("--augment needs an image input, f32 [N, C, H, W] (the data's "
                           "inputs: " + names + ")");
    SampleTransform &f = transforms[image];
    if (options.cropPadding > f.height || options.cropPadding > f.width)
      return Status::error("--augment crop:" + std::to_string(options.cropPadding) +
                           ": a padding past the image (" + shapeText(inputs[image]) + ")");
    f.cropPadding = options.cropPadding;
    f.flip = options.flip;
  }
  for (SampleTransform &f : transforms)
    f.identity = !f.fromU8 && f.mean.empty() && !f.augments();
  return Status();
}

} // namespace trainc::rt::detail
