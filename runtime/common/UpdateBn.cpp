//===- UpdateBn.cpp - batch-norm statistics of averaged weights -----------===//

#include "UpdateBn.h"

#include "BatchLoader.h"
#include "StepPipeline.h"

#include <cstring>
#include <numeric>

namespace trainc::rt::detail {

bool hasRunningStatistics(const Program &program) {
  for (int i = 0; i < program.numParams; ++i)
    if (program.params[i].statisticOf && !program.params[i].constant)
      return true;
  return false;
}

namespace {

/// Scratch copies of the parameters (the constants shared) and fresh
/// optimizer state at its initial values, for a step whose updates nobody
/// keeps.
struct ScratchStep {
  std::vector<DevicePtr> owned;
  std::vector<void *> params, states;
  std::vector<float *> targets;
  std::vector<const float *> sources;
  std::vector<int64_t> sizes;

  Status init(Context &context, const Program &program, const std::vector<void *> &from) {
    const TrainStep &train = *program.train;
    params = from;
    for (int i = 0; i < program.numParams; ++i) {
      const ParamInfo &p = program.params[i];
      if (p.constant)
        continue;
      TRAINC_RETURN_IF_ERROR(take(context, p.bytes));
      params[i] = owned.back().get();
      targets.push_back(static_cast<float *>(params[i]));
      sources.push_back(static_cast<const float *>(from[i]));
      sizes.push_back(static_cast<int64_t>(p.bytes / 4));
    }
    for (int i = 0; i < train.numStates; ++i) {
      const StateInfo &state = train.states[i];
      const uint64_t bytes = tensorBytes(state.tensor);
      TRAINC_RETURN_IF_ERROR(take(context, bytes));
      states.push_back(owned.back().get());
      if (state.init != 0.0f && state.tensor.dtype == DType::F32) {
        std::vector<float> value(bytes / 4, state.init);
        TRAINC_RETURN_IF_ERROR(context.copyToDevice(states.back(), value.data(), bytes));
      }
    }
    return Status();
  }

  /// The parameters as given (the step before updated the copies): zeros,
  /// then weight 1, which copies exactly.
  Status load(Context &context) {
    for (size_t t = 0; t < targets.size(); ++t)
      TRAINC_RETURN_IF_ERROR(context.fill(targets[t], 0, static_cast<size_t>(sizes[t]) * 4));
    return context.lerpTensors(targets.data(), sources.data(), sizes.data(),
                               static_cast<int>(targets.size()), 1.0f);
  }

  /// A zeroed buffer of `bytes`, owned.
  Status take(Context &context, uint64_t bytes) {
    owned.emplace_back(nullptr, DeviceFree{&context});
    TRAINC_RETURN_IF_ERROR(allocateDevice(context, bytes, owned.back()));
    return context.fill(owned.back().get(), 0, bytes);
  }
};

} // namespace

Status updateBatchNormStatistics(const Program &program, RunDevice &device,
                                 const TrainingData &data, int64_t batch,
                                 const std::vector<float> &hypers, uint64_t seed,
                                 const std::vector<void *> &params) {
  Context &context = *device.context;
  const TrainStep &train = *program.train;
  // The statistics and their cumulative averages (double, on the host).
  std::vector<int> statistics;
  std::vector<std::vector<double>> averages;
  std::vector<float> readBack;
  for (int i = 0; i < program.numParams; ++i) {
    const ParamInfo &p = program.params[i];
    if (!p.statisticOf || p.constant)
      continue;
    if (p.tensor.dtype != DType::F32 || !(p.statisticMomentum < 1.0f))
      return Status::error(std::string("update_bn: the running statistic ") + p.tensor.name +
                           " of ONNX node '" + p.statisticOf +
                           "' is not f32 with a momentum below 1");
    statistics.push_back(i);
    averages.emplace_back(p.bytes / 4, 0.0);
  }
  if (statistics.empty())
    return Status();
  ScratchStep scratch;
  TRAINC_RETURN_IF_ERROR(scratch.init(context, program, params));
  // One slot: the step's inputs and hyperparameters, uploaded per batch.
  const SlotLayout layout = slotLayout(train);
  DevicePtr slot(nullptr, DeviceFree{&context}), loss(nullptr, DeviceFree{&context}),
      sampleLosses(nullptr, DeviceFree{&context});
  TRAINC_RETURN_IF_ERROR(allocateDevice(context, layout.bytes, slot));
  TRAINC_RETURN_IF_ERROR(allocateDevice(context, 256, loss));
  if (train.sampleLosses > 0)
    TRAINC_RETURN_IF_ERROR(allocateDevice(
        context, static_cast<uint64_t>(train.sampleLosses) * 4, sampleLosses));
  std::vector<char> host(layout.bytes, 0);
  std::vector<void *> inputs, hyperPtrs;
  std::vector<const float *> hostHypers;
  char *base = static_cast<char *>(slot.get());
  for (uint64_t at : layout.inputs)
    inputs.push_back(base + at);
  for (size_t k = 0; k < layout.hypers.size(); ++k) {
    hyperPtrs.push_back(base + layout.hypers[k]);
    std::memcpy(host.data() + layout.hypers[k], &hypers[k], 4);
    hostHypers.push_back(reinterpret_cast<const float *>(host.data() + layout.hypers[k]));
  }
  const TrainArgs args{inputs.data(), hyperPtrs.data(), scratch.params.data(),
                       scratch.states.data(), loss.get(), sampleLosses.get(),
                       static_cast<char *>(device.arena.get()), hostHypers.data()};
  std::vector<BatchField> fields;
  for (size_t f = 0; f < data.fileInputs.size(); ++f)
    fields.push_back({&data.arrays[f], tensorBytes(data.fileInputs[f], 1),
                      layout.inputs[data.fileIndex[f]], &data.transforms[f]});
  std::vector<int64_t> order(data.samples);
  std::iota(order.begin(), order.end(), 0);
  const int64_t batches = data.dropLast ? data.samples / batch : (data.samples + batch - 1) / batch;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t count = std::min(batch, data.samples - b * batch);
    // Augmented as an epoch of training is, with the draws of epoch 0.
    TRAINC_RETURN_IF_ERROR(
        fillBatch(fields, batch, order.data(), b * batch, count, host.data(), 0));
    auto row = [&](int index) {
      return index < 0 ? nullptr
                       : reinterpret_cast<float *>(host.data() + layout.inputs[index]);
    };
    fillSampleRows(data, order.data() + b * batch, count, batch, row(data.weightsIndex),
                   row(data.maskIndex));
    if (data.keyIndex >= 0) {
      int64_t *key = reinterpret_cast<int64_t *>(host.data() + layout.inputs[data.keyIndex]);
      key[0] = static_cast<int64_t>(seed ^ 0x5D1B0C5A7E3F9A21ull); // apart from training's
      key[1] = b + 1;
    }
    TRAINC_RETURN_IF_ERROR(context.copyToDevice(slot.get(), host.data(), layout.bytes));
    TRAINC_RETURN_IF_ERROR(scratch.load(context));
    for (int i : statistics)
      TRAINC_RETURN_IF_ERROR(context.fill(scratch.params[i], 0, program.params[i].bytes));
    Status ran = train.step(context, args);
    if (!ran.ok())
      return Status::error("update_bn: the step over batch " + std::to_string(b + 1) +
                           " failed: " + ran.message());
    // Batch k's statistic, from (1 - momentum) * it, into the cumulative
    // average: a += (x - a) / k.
    for (size_t s = 0; s < statistics.size(); ++s) {
      const ParamInfo &p = program.params[statistics[s]];
      readBack.resize(p.bytes / 4);
      TRAINC_RETURN_IF_ERROR(context.copyToHost(readBack.data(), scratch.params[statistics[s]],
                                                p.bytes));
      const double share = 1.0 - static_cast<double>(p.statisticMomentum);
      std::vector<double> &average = averages[s];
      for (size_t e = 0; e < average.size(); ++e)
        average[e] += (readBack[e] / share - average[e]) / static_cast<double>(b + 1);
    }
  }
  for (size_t s = 0; s < statistics.size(); ++s) {
    const ParamInfo &p = program.params[statistics[s]];
    readBack.assign(averages[s].begin(), averages[s].end());
    TRAINC_RETURN_IF_ERROR(context.copyToDevice(params[statistics[s]], readBack.data(), p.bytes));
  }
  return context.synchronize();
}

} // namespace trainc::rt::detail
