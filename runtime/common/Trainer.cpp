//===- Trainer.cpp - the training loop of a compiled program --------------===//
//
// Epochs over memory-mapped .npy data, shuffled per epoch from the seed,
// batched at the compiled size; the short last batch is trained on with
// per-sample weight 0 on its padding rows, so it is neither dropped nor
// over-weighted. Hyperparameters are device scalars set before each step.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"
#include "ProgramSupport.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <sstream>

namespace trainc::rt::detail {
namespace {

double orDefault(double value, double fallback) { return std::isnan(value) ? fallback : value; }

/// The learning rate of step `k` (0-based) of `total`, as PyTorch's
/// schedulers give it when stepped once per training step:
/// - constant: lr;
/// - step (StepLR): lr * gamma^floor(k / stepSize);
/// - cosine (CosineAnnealingLR, T_max = total): min + (lr - min)(1 + cos(pi k / total)) / 2;
/// - onecycle (OneCycleLR, cosine, pct_start 0.3, div_factor 25,
///   final_div_factor 1e4; the learning rate only, momentum is not cycled):
///   lr is the peak;
/// - cyclic (CyclicLR, triangular, step_size_up = stepSize): from min (default
///   lr / 10) up to lr and back, every 2 stepSize steps (momentum not cycled).
/// Warmup multiplies any of them by min(1, (k + 1) / warmupSteps).
double scheduledLr(const TrainOptions &o, double lr, int64_t k, int64_t total) {
  const double pi = 3.14159265358979323846;
  double value = lr;
  double minimum = o.minLr >= 0 ? o.minLr : (o.schedule == "cyclic" ? lr / 10 : 0.0);
  int64_t stepSize = o.stepSize > 0 ? o.stepSize : (o.schedule == "cyclic" ? 2000 : 1);
  if (o.schedule == "step") {
    value = lr * std::pow(o.gamma, static_cast<double>(k / stepSize));
  } else if (o.schedule == "cosine") {
    value = minimum + (lr - minimum) * (1 + std::cos(pi * k / total)) / 2;
  } else if (o.schedule == "onecycle") {
    double initial = lr / 25.0, final = initial / 1e4;
    double upEnd = 0.3 * total - 1, downEnd = total - 1.0;
    auto anneal = [&](double from, double to, double pct) {
      return to + (from - to) / 2.0 * (1 + std::cos(pi * pct));
    };
    value = k <= upEnd ? anneal(initial, lr, k / upEnd)
                       : anneal(lr, final, (k - upEnd) / (downEnd - upEnd));
  } else if (o.schedule == "cyclic") {
    double cycle = std::floor(1 + k / (2.0 * stepSize));
    double x = std::fabs(static_cast<double>(k) / stepSize - 2 * cycle + 1);
    value = minimum + (lr - minimum) * std::max(0.0, 1 - x);
  }
  if (o.warmupSteps > 0)
    value *= std::min(1.0, static_cast<double>(k + 1) / o.warmupSteps);
  return value;
}

/// Hyperparameter values for one step, by name.
struct Hyper {
  double lr, momentum, weightDecay, beta1, beta2, eps, maxGradNorm;
  double value(const std::string &name, int64_t step) const {
    if (name == "lr") return lr;
    if (name == "momentum") return momentum;
    if (name == "weight_decay") return weightDecay;
    if (name == "beta1") return beta1;
    if (name == "beta2") return beta2;
    if (name == "eps") return eps;
    if (name == "max_grad_norm") return maxGradNorm;
    if (name == "bias_correction1") return 1.0 - std::pow(beta1, static_cast<double>(step));
    if (name == "bias_correction2") return 1.0 - std::pow(beta2, static_cast<double>(step));
    return std::nan("");
  }
};

/// Copies the rows `order[first, first + count)` of each array into one
/// batch-sized host buffer per input, zero-padding the rest.
void gatherRows(const std::vector<NpyArray> &arrays, const std::vector<uint64_t> &rowBytes,
                const std::vector<int64_t> &order, int64_t first, int64_t count, int64_t batch,
                std::vector<std::vector<char>> &staging) {
  for (size_t i = 0; i < arrays.size(); ++i) {
    char *dst = staging[i].data();
    const char *src = static_cast<const char *>(arrays[i].data());
    for (int64_t r = 0; r < count; ++r)
      std::memcpy(dst + r * rowBytes[i], src + order[first + r] * rowBytes[i], rowBytes[i]);
    std::memset(dst + count * rowBytes[i], 0, (batch - count) * rowBytes[i]);
  }
}

} // namespace

Status runTraining(const Program &program, const TrainOptions &options) {
  const TrainStep *train = program.train;
  if (!train)
    return Status::error("this program was compiled for prediction only; compile with "
                         "--loss and --optimizer to train");
  if (options.epochs <= 0 && options.steps <= 0)
    return Status::error("training needs --epochs N or --steps N");
  const int64_t batch = program.batchSize;
  std::string optimizer = train->optimizer ? train->optimizer : "sgd";
  bool adam = optimizer != "sgd";
  const double baseLr = orDefault(options.lr, adam ? 1e-3 : 1e-2);
  Hyper hyper{baseLr,
              orDefault(options.momentum, 0.0),
              orDefault(options.weightDecay, optimizer == "adamw" ? 1e-2 : 0.0),
              orDefault(options.beta1, 0.9), orDefault(options.beta2, 0.999),
              orDefault(options.eps, 1e-8),
              orDefault(options.clipGradNorm, train->clipGradNorm)};
  if (!std::isnan(options.clipGradNorm) && train->clipGradNorm <= 0)
    return Status::error("--clip-grad-norm: this trainer was compiled without gradient "
                         "clipping; compile with trainc compile --clip-grad-norm=X");

  // The step's inputs come from files, except the per-sample weights and
  // the dropout key [seed, step], which the trainer sets.
  std::vector<TensorInfo> fileInputs;
  int weightsIndex = -1, keyIndex = -1;
  for (int i = 0; i < train->numInputs; ++i) {
    std::string name = train->inputs[i].name;
    if (name == "sample_weights")
      weightsIndex = i;
    else if (name == "dropout_key")
      keyIndex = i;
    else
      fileInputs.push_back(train->inputs[i]);
  }
  if (weightsIndex < 0)
    return Status::error("the training step has no sample_weights input");
  std::vector<NpyArray> arrays;
  int64_t samples = 0;
  TRAINC_RETURN_IF_ERROR(openSampleInputs(options.dataDir, fileInputs.data(),
                                          static_cast<int>(fileInputs.size()), arrays, samples));
  if (samples <= 0)
    return Status::error("no training samples in " + options.dataDir);
  // NaN in float data would poison every parameter: refuse it before step 1.
  for (size_t i = 0; i < arrays.size(); ++i) {
    if (fileInputs[i].dtype != DType::F32)
      continue;
    const float *v = static_cast<const float *>(arrays[i].data());
    uint64_t n = tensorBytes(fileInputs[i], 1) / 4 * samples;
    for (uint64_t k = 0; k < n; ++k)
      if (!std::isfinite(v[k]))
        return Status::error("input " + std::string(fileInputs[i].name) + ": sample " +
                             std::to_string(k / (n / samples)) + " holds NaN or infinity");
  }

  // Device state.
  std::unique_ptr<Context> context;
  TRAINC_RETURN_IF_ERROR(createContext(context));
  std::vector<DevicePtr> params, states, inputs;
  std::vector<void *> paramPtrs, statePtrs, inputPtrs, hyperPtrs;
  TRAINC_RETURN_IF_ERROR(
      uploadParams(*context, program, options.paramsDir, params, paramPtrs));
  for (int i = 0; i < train->numStates; ++i) {
    uint64_t bytes = tensorBytes(train->states[i]);
    states.emplace_back(nullptr, DeviceFree{context.get()});
    TRAINC_RETURN_IF_ERROR(allocateDevice(*context, bytes, states.back()));
    TRAINC_RETURN_IF_ERROR(context->fill(states.back().get(), 0, bytes));
    statePtrs.push_back(states.back().get());
  }
  std::vector<uint64_t> rowBytes;
  for (int i = 0; i < train->numInputs; ++i) {
    inputs.emplace_back(nullptr, DeviceFree{context.get()});
    TRAINC_RETURN_IF_ERROR(allocateDevice(*context, tensorBytes(train->inputs[i]), inputs.back()));
    inputPtrs.push_back(inputs.back().get());
  }
  for (const TensorInfo &t : fileInputs)
    rowBytes.push_back(tensorBytes(t, 1));
  DevicePtr hypers(nullptr, DeviceFree{context.get()}), loss(nullptr, DeviceFree{context.get()}),
      arena(nullptr, DeviceFree{context.get()});
  TRAINC_RETURN_IF_ERROR(allocateDevice(*context, 256 * std::max(train->numHypers, 1), hypers));
  for (int i = 0; i < train->numHypers; ++i)
    hyperPtrs.push_back(static_cast<char *>(hypers.get()) + 256 * i);
  TRAINC_RETURN_IF_ERROR(allocateDevice(*context, 256, loss));
  // Forward (evaluation) and training step never run at once: one arena.
  TRAINC_RETURN_IF_ERROR(allocateDevice(
      *context, std::max(program.arenaBytes, train->arenaBytes), arena));
  TrainArgs args{inputPtrs.data(), hyperPtrs.data(), paramPtrs.data(), statePtrs.data(),
                 loss.get(), static_cast<char *>(arena.get())};

  std::vector<std::vector<char>> staging(fileInputs.size());
  for (size_t i = 0; i < fileInputs.size(); ++i)
    staging[i].resize(tensorBytes(fileInputs[i]));
  std::vector<float> weights(batch), hostHypers(train->numHypers);
  std::vector<int64_t> order(samples);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(options.seed);
  const int64_t batchesPerEpoch = (samples + batch - 1) / batch;
  const int64_t totalSteps = options.steps > 0 ? options.steps : options.epochs * batchesPerEpoch;
  int64_t step = 0, startEpoch = 1, startBatch = 0;

  // Checkpoints: a folder we can write, checked before the first step.
  auto deviceTensors = [&](std::vector<CheckpointTensor> &out) -> Status {
    for (int i = 0; i < program.numParams; ++i) {
      const ParamInfo &p = program.params[i];
      if (p.constant)
        continue;
      CheckpointTensor t{std::string("param/") + p.tensor.name, p.tensor.dtype,
                         std::vector<int64_t>(p.tensor.shape, p.tensor.shape + p.tensor.rank),
                         std::vector<char>(p.bytes)};
      TRAINC_RETURN_IF_ERROR(context->copyToHost(t.bytes.data(), paramPtrs[i], p.bytes));
      out.push_back(std::move(t));
    }
    for (int i = 0; i < train->numStates; ++i) {
      const TensorInfo &s = train->states[i];
      CheckpointTensor t{std::string("state/") + s.name, s.dtype,
                         std::vector<int64_t>(s.shape, s.shape + s.rank),
                         std::vector<char>(tensorBytes(s))};
      TRAINC_RETURN_IF_ERROR(context->copyToHost(t.bytes.data(), statePtrs[i], t.bytes.size()));
      out.push_back(std::move(t));
    }
    return Status();
  };
  if (!options.checkpointDir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.checkpointDir, error);
    std::string probe = options.checkpointDir + "/.write-test";
    FILE *f = error ? nullptr : std::fopen(probe.c_str(), "w");
    if (!f)
      return Status::error("cannot write checkpoints to " + options.checkpointDir);
    std::fclose(f);
    std::remove(probe.c_str());
  }
  std::string epochRng; // the RNG state before the current epoch's shuffle
  if (options.resume) {
    if (options.checkpointDir.empty())
      return Status::error("--resume needs --checkpoint-dir");
    std::vector<CheckpointTensor> tensors;
    std::map<std::string, std::string> manifest;
    TRAINC_RETURN_IF_ERROR(readCheckpoint(options.checkpointDir, tensors, manifest));
    auto field = [&](const char *key, int64_t &out) -> Status {
      auto it = manifest.find(key);
      char *end = nullptr;
      if (it == manifest.end() || (out = std::strtoll(it->second.c_str(), &end, 10), *end))
        return Status::error("checkpoint manifest lacks a valid '" + std::string(key) + "'");
      return Status();
    };
    TRAINC_RETURN_IF_ERROR(field("step", step));
    TRAINC_RETURN_IF_ERROR(field("epoch", startEpoch));
    TRAINC_RETURN_IF_ERROR(field("batch", startBatch));
    if (manifest["optimizer"] != optimizer || std::stoll("0" + manifest["batch_size"]) != batch)
      return Status::error("the checkpoint in " + options.checkpointDir +
                           " belongs to another program (optimizer " + manifest["optimizer"] +
                           ", batch size " + manifest["batch_size"] + ")");
    epochRng = manifest["rng"];
    std::map<std::string, const CheckpointTensor *> byName;
    for (const CheckpointTensor &t : tensors)
      byName[t.name] = &t;
    auto restore = [&](const std::string &name, DType dtype, const int64_t *shape, int rank,
                       void *device, uint64_t bytes) -> Status {
      auto it = byName.find(name);
      if (it == byName.end())
        return Status::error("the checkpoint has no tensor " + name);
      const CheckpointTensor &t = *it->second;
      if (t.dtype != dtype || t.shape != std::vector<int64_t>(shape, shape + rank) ||
          t.bytes.size() != bytes)
        return Status::error("checkpoint tensor " + name + " does not match the program");
      TRAINC_RETURN_IF_ERROR(context->copyToDevice(device, t.bytes.data(), bytes));
      return context->synchronize();
    };
    for (int i = 0; i < program.numParams; ++i) {
      const ParamInfo &p = program.params[i];
      if (!p.constant)
        TRAINC_RETURN_IF_ERROR(restore(std::string("param/") + p.tensor.name, p.tensor.dtype,
                                       p.tensor.shape, p.tensor.rank, paramPtrs[i], p.bytes));
    }
    for (int i = 0; i < train->numStates; ++i) {
      const TensorInfo &s = train->states[i];
      TRAINC_RETURN_IF_ERROR(restore(std::string("state/") + s.name, s.dtype, s.shape, s.rank,
                                     statePtrs[i], tensorBytes(s)));
    }
    std::istringstream state(epochRng);
    if (!(state >> rng))
      return Status::error("checkpoint manifest has an unreadable RNG state");
    std::fprintf(stderr, "resumed from %s at step %lld (epoch %lld, batch %lld)\n",
                 options.checkpointDir.c_str(), static_cast<long long>(step),
                 static_cast<long long>(startEpoch), static_cast<long long>(startBatch));
  }
  auto checkpoint = [&](int64_t epoch, int64_t nextBatch) -> Status {
    std::vector<CheckpointTensor> tensors;
    TRAINC_RETURN_IF_ERROR(deviceTensors(tensors));
    std::map<std::string, std::string> manifest = {
        {"format", "trainc checkpoint 1"},
        {"model", program.modelName ? program.modelName : ""},
        {"optimizer", optimizer},
        {"batch_size", std::to_string(batch)},
        {"step", std::to_string(step)},
        {"epoch", std::to_string(epoch)},
        {"batch", std::to_string(nextBatch)},
        {"seed", std::to_string(options.seed)},
        {"rng", epochRng}};
    return writeCheckpoint(options.checkpointDir, tensors, manifest);
  };
  // A resumed run appends to the log of the run it continues.
  FILE *log = options.logPath.empty()
                  ? nullptr
                  : std::fopen(options.logPath.c_str(), options.resume ? "a" : "w");
  if (!options.logPath.empty() && !log)
    return Status::error("cannot write the log " + options.logPath);
  std::unique_ptr<FILE, int (*)(FILE *)> logCloser(log, log ? std::fclose : [](FILE *) { return 0; });
  const auto start = std::chrono::steady_clock::now();

  for (int64_t epoch = startEpoch; step < totalSteps; ++epoch) {
    if (epoch != startEpoch || !options.resume) {
      std::ostringstream state;
      state << rng;
      epochRng = state.str();
    }
    // Each epoch's order depends on the RNG state alone (not on the previous
    // order), so a resumed run rebuilds it from the saved state.
    std::iota(order.begin(), order.end(), 0);
    if (options.shuffle)
      std::shuffle(order.begin(), order.end(), rng);
    double lossSum = 0, weightSum = 0;
    int64_t firstBatch = epoch == startEpoch ? startBatch : 0;
    for (int64_t b = firstBatch; b < batchesPerEpoch && step < totalSteps; ++b) {
      const int64_t first = b * batch, count = std::min(batch, samples - first);
      gatherRows(arrays, rowBytes, order, first, count, batch, staging);
      size_t f = 0;
      for (int i = 0; i < train->numInputs; ++i) {
        if (i == weightsIndex) {
          std::fill(weights.begin(), weights.end(), 0.0f);
          std::fill(weights.begin(), weights.begin() + count, 1.0f);
          TRAINC_RETURN_IF_ERROR(
              context->copyToDevice(inputPtrs[i], weights.data(), weights.size() * 4));
        } else if (i == keyIndex) {
          // Dropout masks are a function of the seed and the step number, so
          // a resumed run draws the masks the uninterrupted run drew.
          const int64_t key[2] = {static_cast<int64_t>(options.seed), step + 1};
          TRAINC_RETURN_IF_ERROR(context->copyToDevice(inputPtrs[i], key, sizeof(key)));
        } else {
          TRAINC_RETURN_IF_ERROR(
              context->copyToDevice(inputPtrs[i], staging[f].data(), staging[f].size()));
          ++f;
        }
      }
      hyper.lr = scheduledLr(options, baseLr, step, totalSteps);
      for (int h = 0; h < train->numHypers; ++h) {
        double v = hyper.value(train->hypers[h], step + 1);
        if (std::isnan(v))
          return Status::error(std::string("unknown hyperparameter ") + train->hypers[h]);
        float value = static_cast<float>(v);
        TRAINC_RETURN_IF_ERROR(context->copyToDevice(hyperPtrs[h], &value, 4));
      }
      Status ran = train->step(*context, args);
      if (!ran.ok())
        return Status::error("training step " + std::to_string(step + 1) + " failed: " +
                             ran.message());
      float batchLoss = 0;
      TRAINC_RETURN_IF_ERROR(context->copyToHost(&batchLoss, loss.get(), 4));
      if (!std::isfinite(batchLoss))
        return Status::error("the loss became " + std::to_string(batchLoss) + " at step " +
                             std::to_string(step + 1) + " (learning rate too high?)");
      lossSum += batchLoss * count;
      weightSum += count;
      if (log)
        std::fprintf(log, "{\"step\": %lld, \"epoch\": %lld, \"loss\": %.7g, \"lr\": %.7g}\n",
                     static_cast<long long>(step + 1), static_cast<long long>(epoch), batchLoss,
                     hyper.lr);
      ++step;
      bool epochEnd = b + 1 == batchesPerEpoch || step == totalSteps;
      if (!options.checkpointDir.empty() &&
          (options.checkpointEvery > 0 ? step % options.checkpointEvery == 0 : epochEnd))
        TRAINC_RETURN_IF_ERROR(checkpoint(epoch, b + 1));
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "epoch %lld: step %lld/%lld, train loss %.5f, %.0f samples/s\n",
                 static_cast<long long>(epoch), static_cast<long long>(step),
                 static_cast<long long>(totalSteps), lossSum / std::max(weightSum, 1.0),
                 seconds > 0 ? step * batch / seconds : 0.0);
  }

  // Held-out evaluation with the forward pass: loss and accuracy of output 0
  // as class scores [N, C] against DIR/label.npy.
  if (!options.evalDir.empty()) {
    std::vector<NpyArray> evalArrays;
    int64_t evalSamples = 0;
    TRAINC_RETURN_IF_ERROR(openSampleInputs(options.evalDir, program.inputs, program.numInputs,
                                            evalArrays, evalSamples));
    NpyArray labels;
    TRAINC_RETURN_IF_ERROR(NpyArray::open(options.evalDir + "/label.npy", labels));
    if (labels.dtype() != DType::I64 || labels.shape().size() != 1 ||
        labels.shape()[0] != evalSamples)
      return Status::error(options.evalDir + "/label.npy must be int64 [" +
                           std::to_string(evalSamples) + "]");
    const TensorInfo &out = program.outputs[0];
    if (program.numOutputs < 1 || out.rank != 2 || out.dtype != DType::F32)
      return Status::error("evaluation needs class scores [N, C] as the first output");
    int64_t classes = out.shape[1];
    std::vector<DevicePtr> evalInputs, evalOutputs;
    std::vector<void *> evalIn, evalOut;
    for (int i = 0; i < program.numInputs; ++i) {
      evalInputs.emplace_back(nullptr, DeviceFree{context.get()});
      TRAINC_RETURN_IF_ERROR(allocateDevice(*context, tensorBytes(program.inputs[i]), evalInputs.back()));
      evalIn.push_back(evalInputs.back().get());
    }
    for (int i = 0; i < program.numOutputs; ++i) {
      evalOutputs.emplace_back(nullptr, DeviceFree{context.get()});
      TRAINC_RETURN_IF_ERROR(allocateDevice(*context, tensorBytes(program.outputs[i]), evalOutputs.back()));
      evalOut.push_back(evalOutputs.back().get());
    }
    ForwardArgs forward{evalIn.data(), evalOut.data(), paramPtrs.data(),
                        static_cast<char *>(arena.get())};
    std::vector<int64_t> evalOrder(evalSamples);
    std::iota(evalOrder.begin(), evalOrder.end(), 0);
    std::vector<uint64_t> evalRowBytes;
    std::vector<std::vector<char>> evalStaging(program.numInputs);
    for (int i = 0; i < program.numInputs; ++i) {
      evalRowBytes.push_back(tensorBytes(program.inputs[i], 1));
      evalStaging[i].resize(tensorBytes(program.inputs[i]));
    }
    std::vector<float> scores(batch * classes);
    const int64_t *truth = static_cast<const int64_t *>(labels.data());
    int64_t correct = 0;
    double evalLoss = 0;
    for (int64_t first = 0; first < evalSamples; first += batch) {
      int64_t count = std::min(batch, evalSamples - first);
      gatherRows(evalArrays, evalRowBytes, evalOrder, first, count, batch, evalStaging);
      for (int i = 0; i < program.numInputs; ++i)
        TRAINC_RETURN_IF_ERROR(context->copyToDevice(evalIn[i], evalStaging[i].data(),
                                                     evalStaging[i].size()));
      TRAINC_RETURN_IF_ERROR(program.forward(*context, forward));
      TRAINC_RETURN_IF_ERROR(context->copyToHost(scores.data(), evalOut[0], scores.size() * 4));
      for (int64_t r = 0; r < count; ++r) {
        const float *row = scores.data() + r * classes;
        int64_t best = std::max_element(row, row + classes) - row;
        correct += best == truth[first + r];
        double maxv = *std::max_element(row, row + classes), sum = 0;
        for (int64_t c = 0; c < classes; ++c)
          sum += std::exp(row[c] - maxv);
        int64_t label = truth[first + r];
        if (label < 0 || label >= classes)
          return Status::error("eval label " + std::to_string(label) + " of sample " +
                               std::to_string(first + r) + " is outside [0, " +
                               std::to_string(classes) + ")");
        evalLoss += std::log(sum) + maxv - row[label];
      }
    }
    std::fprintf(stderr, "eval: %lld samples, loss %.5f, accuracy %.2f%%\n",
                 static_cast<long long>(evalSamples), evalLoss / evalSamples,
                 100.0 * correct / evalSamples);
    std::printf("accuracy %.4f\n", static_cast<double>(correct) / evalSamples);
  }

  // The original ONNX model with the trained parameters, written to a
  // temporary file and renamed, so a reader never sees half a model.
  if (!options.exportPath.empty()) {
    const ExportInfo *info = program.exportInfo;
    if (!info)
      return Status::error("this program cannot export: compile it with --optimizer");
    std::vector<char> bytes(info->model, info->model + info->modelBytes);
    for (int i = 0; i < program.numParams; ++i) {
      uint64_t at = info->offsets[i];
      const ParamInfo &p = program.params[i];
      if (at == UINT64_MAX)
        continue;
      if (at > bytes.size() || p.bytes > bytes.size() - at)
        return Status::error("export table of parameter " + std::string(p.tensor.name) +
                             " lies outside the model");
      TRAINC_RETURN_IF_ERROR(context->copyToHost(bytes.data() + at, paramPtrs[i], p.bytes));
    }
    std::string temporary = options.exportPath + ".tmp";
    FILE *file = std::fopen(temporary.c_str(), "wb");
    if (!file)
      return Status::error("cannot write " + temporary);
    bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
    written &= std::fflush(file) == 0;
    written &= std::fclose(file) == 0;
    std::error_code error;
    if (written)
      std::filesystem::rename(temporary, options.exportPath, error);
    if (!written || error) {
      std::filesystem::remove(temporary, error);
      return Status::error("cannot write " + options.exportPath);
    }
    std::fprintf(stderr, "exported the trained model to %s\n", options.exportPath.c_str());
  }

  // The trained parameters, one .npy each.
  if (!options.saveDir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.saveDir, error);
    if (error)
      return Status::error("cannot create " + options.saveDir + ": " + error.message());
    for (int i = 0; i < program.numParams; ++i) {
      const ParamInfo &p = program.params[i];
      if (p.constant)
        continue;
      TRAINC_RETURN_IF_ERROR(checkFileName("parameter", p.tensor.name));
      std::vector<char> host(p.bytes);
      TRAINC_RETURN_IF_ERROR(context->copyToHost(host.data(), paramPtrs[i], p.bytes));
      NpyWriter writer;
      TRAINC_RETURN_IF_ERROR(writer.open(options.saveDir + "/" + p.tensor.name + ".npy",
                                         p.tensor.dtype,
                                         std::vector<int64_t>(p.tensor.shape,
                                                              p.tensor.shape + p.tensor.rank)));
      TRAINC_RETURN_IF_ERROR(writer.append(host.data(), host.size()));
      TRAINC_RETURN_IF_ERROR(writer.close());
    }
  }
  return Status();
}

} // namespace trainc::rt::detail
