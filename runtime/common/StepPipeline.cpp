//===- StepPipeline.cpp - batches to the device, steps behind them --------===//

#include "StepPipeline.h"

#include <algorithm>

namespace trainc::rt::detail {

SlotLayout slotLayout(const TrainStep &train) {
  SlotLayout layout;
  auto place = [&](uint64_t size) {
    uint64_t at = layout.bytes;
    layout.bytes += (size + 255) / 256 * 256;
    return at;
  };
  for (int i = 0; i < train.numInputs; ++i)
    layout.inputs.push_back(place(tensorBytes(train.inputs[i])));
  for (int i = 0; i < train.numHypers; ++i)
    layout.hypers.push_back(place(4));
  layout.bytes = std::max<uint64_t>(layout.bytes, 256);
  return layout;
}

int loaderWorkers(const Program &program, const TrainingData &data, int requested) {
  if (requested >= 0)
    return requested;
  const bool cpu = program.target && std::strcmp(program.target, "cpu") == 0;
  const bool inMemory = std::all_of(data.arrays.begin(), data.arrays.end(),
                                    [](const NpyArray &array) { return array.inMemory(); });
  return cpu && inMemory ? 0 : 1;
}

StepPipeline::StepPipeline(RunDevice &device, const TrainStep &train, const TrainingData &data,
                           int64_t batch, int workers, bool cudaGraph, int deviceSlots)
    : device(device), context(*device.context), train(train), data(data),
      layout(slotLayout(train)), batch(batch), hostSlotCount(workers + 2),
      deviceSlotCount(deviceSlots),
      deviceBlock(nullptr, DeviceFree{&context}),
      deviceSampleLosses(nullptr, DeviceFree{&context}), hostBlock(nullptr, HostFree{&context}),
      hostLoss(nullptr, HostFree{&context}), hostSampleLosses(nullptr, HostFree{&context}),
      graphs(context, train, cudaGraph) {}

StepPipeline::~StepPipeline() {
  // The lanes' steps write into the slots and the loss records.
  for (int d = 0; laneSet && d < laneSet->size(); ++d)
    (void)laneSet->wait(d);
  loader.reset();
  (void)context.synchronize();
}

Status StepPipeline::init() {
  TRAINC_RETURN_IF_ERROR(allocateDevice(context, deviceSlotCount * (layout.bytes + 256), deviceBlock));
  TRAINC_RETURN_IF_ERROR(allocatePinned(context, hostSlotCount * layout.bytes, hostBlock));
  TRAINC_RETURN_IF_ERROR(allocatePinned(context, deviceSlotCount * 256, hostLoss));
  const uint64_t sampleLossBytes = static_cast<uint64_t>(train.sampleLosses) * 4;
  if (sampleLossBytes > 0) {
    TRAINC_RETURN_IF_ERROR(
        allocateDevice(context, deviceSlotCount * sampleLossBytes, deviceSampleLosses));
    TRAINC_RETURN_IF_ERROR(
        allocatePinned(context, deviceSlotCount * sampleLossBytes, hostSampleLosses));
  }
  inputPtrs.resize(deviceSlotCount);
  hyperPtrs.resize(deviceSlotCount);
  for (int d = 0; d < deviceSlotCount; ++d) {
    for (uint64_t at : layout.inputs)
      inputPtrs[d].push_back(deviceSlot(d) + at);
    for (uint64_t at : layout.hypers)
      hyperPtrs[d].push_back(deviceSlot(d) + at);
    args.push_back({inputPtrs[d].data(), hyperPtrs[d].data(), device.paramPtrs.data(),
                    device.statePtrs.data(), deviceLoss(d),
                    sampleLossBytes > 0 ? static_cast<char *>(deviceSampleLosses.get()) +
                                              d * sampleLossBytes
                                        : nullptr,
                    static_cast<char *>(device.arena.get()), nullptr});
  }
  if (laneSet) {
    laneHypers.assign(deviceSlotCount, std::vector<float>(layout.hypers.size()));
    laneHyperPtrs.resize(deviceSlotCount);
    for (int d = 0; d < deviceSlotCount; ++d) {
      args[d].arena = static_cast<char *>(laneArenas[d]);
      for (const float &value : laneHypers[d])
        laneHyperPtrs[d].push_back(&value);
    }
  }
  hostHyperPtrs.resize(hostSlotCount);
  for (int h = 0; h < hostSlotCount; ++h)
    for (uint64_t at : layout.hypers)
      hostHyperPtrs[h].push_back(reinterpret_cast<const float *>(hostSlot(h) + at));
  uploaded.resize(hostSlotCount);
  computed.resize(deviceSlotCount);
  for (int &event : uploaded)
    TRAINC_RETURN_IF_ERROR(context.createEvent(&event));
  for (int &event : computed)
    TRAINC_RETURN_IF_ERROR(context.createEvent(&event));
  uploadPending.assign(hostSlotCount, false);
  std::vector<BatchField> fields;
  for (size_t f = 0; f < data.fileInputs.size(); ++f)
    fields.push_back({&data.arrays[f], tensorBytes(data.fileInputs[f], 1),
                      layout.inputs[data.fileIndex[f]], &data.transforms[f]});
  loader = std::make_unique<BatchLoader>(fields, batch, static_cast<int>(hostSlotCount - 2));
  return Status();
}

Status StepPipeline::submit(int h, const int64_t *order, int64_t first, int64_t count,
                            int64_t epoch) {
  if (uploadPending[h]) {
    TRAINC_RETURN_IF_ERROR(context.hostWait(uploaded[h]));
    uploadPending[h] = false;
  }
  loader->submit(h, hostSlot(h), order, first, count, epoch);
  return Status();
}

Status StepPipeline::upload(int64_t n, int h) {
  const int d = deviceSlotOf(n);
  if (laneSet) {
    // The lane is idle (its step was read back): a plain copy.
    TRAINC_RETURN_IF_ERROR(laneSet->wait(d));
    return laneSet->context(d).copyToDevice(deviceSlot(d), hostSlot(h), layout.bytes);
  }
  if (n >= deviceSlotCount)
    TRAINC_RETURN_IF_ERROR(context.queueWait(Context::Queue::Upload, computed[d]));
  TRAINC_RETURN_IF_ERROR(context.uploadAsync(deviceSlot(d), hostSlot(h), layout.bytes));
  TRAINC_RETURN_IF_ERROR(context.recordEvent(uploaded[h], Context::Queue::Upload));
  uploadPending[h] = true;
  return context.queueWait(Context::Queue::Compute, uploaded[h]);
}

Status StepPipeline::run(int64_t n, int h, bool last) {
  if (!laneSet)
    return graphs.run(last, deviceSlotOf(n), argsOf(n, h));
  // The lane runs the step, then copies its loss (and per-sample losses)
  // back and waits for its own context.
  const int d = deviceSlotOf(n);
  for (size_t i = 0; i < laneHypers[d].size(); ++i)
    laneHypers[d][i] = *hostHyperPtrs[h][i];
  TrainArgs a = args[d];
  a.hostHypers = laneHyperPtrs[d].data();
  Status (*function)(Context &, const TrainArgs &) = last ? train.step : train.accumulate;
  const uint64_t sampleLossBytes = static_cast<uint64_t>(train.sampleLosses) * 4;
  laneSet->start(d, [this, a, d, function, sampleLossBytes](Context &lane) -> Status {
    TRAINC_RETURN_IF_ERROR(function(lane, a));
    TRAINC_RETURN_IF_ERROR(lane.copyToHost(record(d), deviceLoss(d), 4));
    if (sampleLossBytes > 0)
      TRAINC_RETURN_IF_ERROR(
          lane.copyToHost(const_cast<float *>(sampleLosses(d)), a.sampleLosses, sampleLossBytes));
    return lane.synchronize();
  });
  return Status();
}

Status StepPipeline::queueLossReadback(int d) {
  if (laneSet)
    return Status(); // the lane's job copies the loss back
  TRAINC_RETURN_IF_ERROR(context.downloadAsync(record(d), deviceLoss(d), 4));
  if (train.sampleLosses == 0)
    return Status();
  return context.downloadAsync(const_cast<float *>(sampleLosses(d)), args[d].sampleLosses,
                               static_cast<uint64_t>(train.sampleLosses) * 4);
}

Status StepPipeline::finishLaunch(int d) {
  if (laneSet)
    return Status();
  return context.recordEvent(computed[d], Context::Queue::Compute);
}

Status StepPipeline::waitStep(int d) {
  return laneSet ? laneSet->wait(d) : context.hostWait(computed[d]);
}

} // namespace trainc::rt::detail
