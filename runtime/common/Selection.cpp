//===- Selection.cpp - selective backprop: the samples a step trains ------===//

#include "Selection.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <numeric>

namespace trainc::rt::detail {

Status settleSelection(const SelectOptions &o, const Program &program, int64_t accum,
                       bool dataParallel, bool sampler, bool rangeTest) {
  if (!o.topk) {
    if (!std::isnan(o.fraction))
      return Status::error("--select-fraction is a parameter of --select=topk");
    return Status();
  }
  if (!program.select)
    return Status::error("--select needs a program compiled with --select-batch=B (the "
                         "forward and each sample's loss over B candidates)");
  if (!std::isnan(o.fraction)) {
    const double k = std::round(o.fraction * static_cast<double>(program.select->batch));
    if (!(o.fraction > 0) || k < 1 || k > static_cast<double>(program.batchSize))
      return Status::error("--select-fraction " + std::to_string(o.fraction) + " of the " +
                           std::to_string(program.select->batch) +
                           " candidates must keep from 1 to the compiled batch of " +
                           std::to_string(program.batchSize) + " samples");
  }
  const char *conflict = accum > 1      ? "gradient accumulation"
                         : dataParallel ? "data parallelism"
                         : sampler      ? "--sampler"
                         : rangeTest    ? "the LR range test"
                                        : nullptr;
  if (conflict)
    return Status::error(std::string("--select is not available with ") + conflict + " yet");
  return Status();
}

Status Selection::init(const SelectOptions &options, const std::string &path, bool resumed) {
  if (!options.topk)
    return Status();
  tracePath = path;
  if (!tracePath.empty()) {
    if (!resumed)
      TRAINC_RETURN_IF_ERROR(writeFileAtomically(tracePath, "--trace-batches", "", 0));
    TRAINC_RETURN_IF_ERROR(openAppendFile(tracePath, "--trace-batches", trace));
  }
  const SelectStep &entry = *program.select;
  candidates = entry.batch;
  trained = std::isnan(options.fraction)
                ? program.batchSize
                : static_cast<int64_t>(std::round(options.fraction * static_cast<double>(candidates)));
  Context &context = *device.context;
  for (int i = 0; i < entry.numInputs; ++i) {
    const TensorInfo &info = entry.inputs[i];
    offsets.push_back(slotBytes);
    slotBytes += (tensorBytes(info) + 255) / 256 * 256;
    if (info.role == InputRole::SampleWeights) {
      weightsIndex = i;
      continue;
    }
    if (info.role == InputRole::SampleMask) {
      maskIndex = i;
      continue;
    }
    size_t f = 0;
    while (f < data.fileInputs.size() && std::strcmp(data.fileInputs[f].name, info.name) != 0)
      ++f;
    if (f == data.fileInputs.size() || info.role == InputRole::DropoutKey)
      return Status::error(std::string("the selection entry's input ") + info.name +
                           " is not one of the training step's; recompile the program");
    const uint64_t rowBytes = tensorBytes(data.fileInputs[f], 1);
    fields.push_back({&data.arrays[f], rowBytes, offsets.back(), &data.transforms[f]});
    copies.push_back({offsets.back(), data.fileIndex[f], rowBytes});
  }
  host.assign(std::max<uint64_t>(slotBytes, 256), 0);
  slot = DevicePtr(nullptr, DeviceFree{&context});
  outputs = DevicePtr(nullptr, DeviceFree{&context});
  TRAINC_RETURN_IF_ERROR(allocateDevice(context, host.size(), slot));
  TRAINC_RETURN_IF_ERROR(allocateDevice(context, 256 + static_cast<uint64_t>(candidates) * 4,
                                        outputs));
  for (uint64_t at : offsets)
    inputPtrs.push_back(static_cast<char *>(slot.get()) + at);
  outputPtrs = {outputs.get(), static_cast<char *>(outputs.get()) + 256};
  if (device.arenaBytes < entry.arenaBytes)
    return Status::error("the arena is smaller than the selection entry's");
  hostLosses.resize(candidates);
  return Status();
}

Status Selection::select(const int64_t *rows, int64_t count, int64_t epoch, int64_t seq) {
  Context &context = *device.context;
  TRAINC_RETURN_IF_ERROR(fillBatch(fields, candidates, rows, 0, count, host.data(), epoch));
  for (int index : {weightsIndex, maskIndex}) {
    if (index < 0)
      continue;
    float *row = reinterpret_cast<float *>(host.data() + offsets[index]);
    std::fill(row, row + candidates, 0.0f);
    std::fill(row, row + count, 1.0f);
  }
  TRAINC_RETURN_IF_ERROR(context.copyToDevice(slot.get(), host.data(), host.size()));
  const ForwardArgs args{inputPtrs.data(), outputPtrs.data(), device.paramPtrs.data(),
                         static_cast<char *>(device.arena.get())};
  Status ran = program.select->run(context, args);
  if (!ran.ok())
    return Status::error("the selection forward failed: " + ran.message());
  TRAINC_RETURN_IF_ERROR(
      context.copyToHost(hostLosses.data(), outputPtrs[1], static_cast<size_t>(count) * 4));
  // The largest losses (NaN first, so that it reaches the step's loss),
  // ties to the earlier candidate; then in candidate order.
  picked.resize(count);
  std::iota(picked.begin(), picked.end(), 0);
  auto larger = [&](int64_t a, int64_t b) {
    const float x = hostLosses[a], y = hostLosses[b];
    const bool nanX = std::isnan(x), nanY = std::isnan(y);
    if (nanX != nanY)
      return nanX;
    if (!nanX && x != y)
      return x > y;
    return a < b;
  };
  const int64_t keep = std::min(trained, count);
  std::partial_sort(picked.begin(), picked.begin() + keep, picked.end(), larger);
  picked.resize(keep);
  std::sort(picked.begin(), picked.end());
  samples.clear();
  for (int64_t p : picked)
    samples.push_back(rows[p]);
  if (!trace.valid())
    return Status();
  std::string line = "{\"batch\": " + std::to_string(seq) + ", \"candidates\": [";
  for (int64_t i = 0; i < count; ++i)
    line += (i ? ", " : "") + std::to_string(rows[i]);
  line += "], \"losses\": [";
  char number[32];
  for (int64_t i = 0; i < count; ++i) {
    std::snprintf(number, sizeof(number), "%.9g", static_cast<double>(hostLosses[i]));
    line += (i ? ", " : "") + std::string(number);
  }
  line += "], \"rows\": [";
  for (size_t i = 0; i < samples.size(); ++i)
    line += (i ? ", " : "") + std::to_string(samples[i]);
  line += "]}\n";
  return writeAll(trace, tracePath, line.data(), line.size());
}

Status Selection::gather(void *const *stepInputs) {
  Context &context = *device.context;
  for (const Copy &c : copies) {
    char *dst = static_cast<char *>(stepInputs[c.stepInput]);
    const char *src = static_cast<const char *>(slot.get()) + c.from;
    // Runs of consecutive candidates in one copy each.
    for (size_t j = 0; j < picked.size();) {
      size_t end = j + 1;
      while (end < picked.size() && picked[end] == picked[end - 1] + 1)
        ++end;
      TRAINC_RETURN_IF_ERROR(context.copyOnDeviceAsync(
          dst + j * c.rowBytes, src + picked[j] * c.rowBytes, (end - j) * c.rowBytes));
      j = end;
    }
  }
  return Status();
}

} // namespace trainc::rt::detail
