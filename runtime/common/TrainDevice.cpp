//===- TrainDevice.cpp - what a training run holds on the device ----------===//

#include "TrainDevice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <unistd.h>

namespace trainc::rt::detail {

namespace {

/// --cudnn-cache: "off", a file, or (empty) the program's path with
/// ".cudnn-cache".
std::string cudnnCachePath(const TrainOptions &options) {
  if (options.cudnnCache == "off")
    return "";
  if (!options.cudnnCache.empty())
    return options.cudnnCache;
  char self[4096];
  ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0)
    return "";
  return std::string(self, static_cast<size_t>(length)) + ".cudnn-cache";
}

/// The optimizer state, each tensor at its initial value; the loss scaler's
/// scalars found by their roles.
Status allocateStates(const TrainStep &train, RunDevice &device) {
  Context &context = *device.context;
  const bool lossScaled = train.lossScaling != LossScaling::None;
  for (int i = 0; i < train.numStates; ++i) {
    const StateInfo &state = train.states[i];
    uint64_t bytes = tensorBytes(state.tensor);
    device.states.emplace_back(nullptr, DeviceFree{&context});
    TRAINC_RETURN_IF_ERROR(allocateDevice(context, bytes, device.states.back()));
    TRAINC_RETURN_IF_ERROR(context.fill(device.states.back().get(), 0, bytes));
    if (isKfacFactor(state.role)) {
      // K-FAC's factors and inverses start as the identity.
      const int64_t n = state.tensor.rank == 2 ? state.tensor.shape[0] : 0;
      if (state.tensor.dtype != DType::F32 || n * n * 4 != static_cast<int64_t>(bytes))
        return Status::error(std::string("state ") + state.tensor.name +
                             " is a K-FAC factor, but not a square f32 matrix");
      std::vector<float> identity(bytes / 4, 0.0f);
      for (int64_t i = 0; i < n; ++i)
        identity[i * n + i] = 1.0f;
      TRAINC_RETURN_IF_ERROR(context.copyToDevice(device.states.back().get(), identity.data(), bytes));
    } else if (state.init != 0.0f) {
      if (state.tensor.dtype != DType::F32)
        return Status::error(std::string("state ") + state.tensor.name +
                             " has an initial value but is not f32");
      std::vector<float> value(bytes / 4, state.init);
      TRAINC_RETURN_IF_ERROR(context.copyToDevice(device.states.back().get(), value.data(), bytes));
    }
    device.statePtrs.push_back(device.states.back().get());
    bool scalarF32 = state.tensor.dtype == DType::F32 && bytes == 4;
    if (lossScaled && scalarF32 && state.role == StateRole::LossScale)
      device.scaleState = i;
    if (lossScaled && scalarF32 && state.role == StateRole::LossScaleSkippedSteps)
      device.skippedState = i;
    if (scalarF32 && state.role == StateRole::GradNorm)
      device.gradNormState = i;
  }
  if (lossScaled && device.skippedState < 0)
    return Status::error("the loss-scaled step has no loss_scale.skipped_steps state");
  if (train.lossScaling == LossScaling::Dynamic && device.scaleState < 0)
    return Status::error("the dynamically loss-scaled step has no loss_scale state");
  const double fixedScale = train.fixedLossScale;
  if (train.lossScaling == LossScaling::Fixed && !(fixedScale > 0 && std::isfinite(fixedScale)))
    return Status::error("the training step's fixed loss scale " + std::to_string(fixedScale) +
                         " is not a positive finite number");
  return Status();
}

} // namespace

Status setUpDevice(const Program &program, const TrainOptions &options, Communicator *ranks,
                   RunDevice &device) {
  TRAINC_RETURN_IF_ERROR(createContext(device.context));
  Context &context = *device.context;
  context.configureConvolutions(options.cudnnBenchmark, options.deterministic);
  TRAINC_RETURN_IF_ERROR(context.useCommunicator(ranks, options.commOverlap));
  device.algoCachePath = cudnnCachePath(options);
  std::string identity = context.algorithmIdentity();
  if (options.cudnnBenchmark && !identity.empty() && !device.algoCachePath.empty()) {
    device.algoCache = std::make_unique<AlgoCache>(
        identity + " program " + (program.fingerprint ? program.fingerprint : "?"));
    std::string note;
    device.algoCache->load(device.algoCachePath, note);
    if (!note.empty())
      std::fprintf(stderr, "note: --cudnn-cache: %s\n", note.c_str());
    context.useAlgorithmCache(device.algoCache.get());
  }
  TRAINC_RETURN_IF_ERROR(
      uploadParams(context, program, options.paramsDir, device.params, device.paramPtrs));
  TRAINC_RETURN_IF_ERROR(allocateStates(*program.train, device));
  device.arena = DevicePtr(nullptr, DeviceFree{&context});
  device.arenaBytes = std::max({program.arenaBytes, program.train->arenaBytes,
                                program.select ? program.select->arenaBytes : uint64_t(0)});
  TRAINC_RETURN_IF_ERROR(allocateDevice(context, device.arenaBytes, device.arena));
  if (options.reportMemory && device.arenaBytes > 0) {
    TRAINC_RETURN_IF_ERROR(context.fill(device.arena.get(), kArenaPattern, device.arenaBytes));
    TRAINC_RETURN_IF_ERROR(context.synchronize());
  }
  return Status();
}

Status reportArenaUse(RunDevice &device) {
  const uint64_t arenaBytes = device.arenaBytes;
  std::vector<unsigned char> bytes(arenaBytes);
  TRAINC_RETURN_IF_ERROR(device.context->synchronize());
  if (arenaBytes > 0)
    TRAINC_RETURN_IF_ERROR(device.context->copyToHost(bytes.data(), device.arena.get(), arenaBytes));
  uint64_t written = arenaBytes;
  while (written > 0 && bytes[written - 1] == kArenaPattern)
    --written;
  std::printf("arena: %llu bytes planned, %llu written (high-water mark)\n",
              static_cast<unsigned long long>(arenaBytes),
              static_cast<unsigned long long>(written));
  return Status();
}

void saveAlgorithmChoices(RunDevice &device) {
  if (!device.algoCache)
    return;
  Status saved = device.algoCache->save(device.algoCachePath);
  if (!saved.ok())
    std::fprintf(stderr, "note: %s\n", saved.message().c_str());
}

LossScaleMonitor::LossScaleMonitor(const TrainStep &train, RunDevice &device)
    : device(device), enabled_(train.lossScaling != LossScaling::None),
      scale_(train.fixedLossScale) {}

Status LossScaleMonitor::read() {
  if (!enabled_)
    return Status();
  float value = 0;
  if (device.scaleState >= 0) {
    TRAINC_RETURN_IF_ERROR(
        device.context->copyToHost(&value, device.statePtrs[device.scaleState], 4));
    scale_ = value;
  }
  TRAINC_RETURN_IF_ERROR(
      device.context->copyToHost(&value, device.statePtrs[device.skippedState], 4));
  skipped_ = value;
  return Status();
}

Status LossScaleMonitor::queueReadback(float *record) {
  if (device.scaleState >= 0)
    TRAINC_RETURN_IF_ERROR(
        device.context->downloadAsync(record + 1, device.statePtrs[device.scaleState], 4));
  if (device.skippedState >= 0)
    TRAINC_RETURN_IF_ERROR(
        device.context->downloadAsync(record + 2, device.statePtrs[device.skippedState], 4));
  return Status();
}

Status LossScaleMonitor::take(const float *record, int64_t step, bool &skipped) {
  skipped = false;
  if (!enabled_)
    return Status();
  skipped = record[2] > skipped_;
  skipped_ = record[2];
  if (device.scaleState >= 0)
    scale_ = record[1];
  if (skipped) {
    ++skippedSinceLine;
    ++skippedInRun;
  }
  if (!(scale_ > 0))
    return Status::error("the loss scale fell to " + std::to_string(scale_) + " at step " +
                         std::to_string(step) +
                         ": every step overflows in fp16, even unscaled (inf or NaN in the "
                         "forward pass?); train with --precision=bf16 or fp32");
  return Status();
}

} // namespace trainc::rt::detail
