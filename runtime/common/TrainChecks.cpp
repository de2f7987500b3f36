//===- TrainChecks.cpp - what a training run checks before step 1 ---------===//

#include "TrainChecks.h"

#include "FileIO.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace trainc::rt::detail {

/// Class labels of the training data must lie in [0, classes), checked
/// before step 1 (a bad label would otherwise stop the run at its batch). The
/// ABI carries no class count: the label is the step input of role Label
/// (a model's own loss takes its labels as a model input and may have an
/// ignore_index, so those are not checked), int64, and its class count is that of the first output, f32
/// scores with one more axis than the label: axis 1 (--class-axis=1) or the
/// last axis (--class-axis=-1), as evaluation reads them.
Status openTrainingData(const Program &program, const std::string &dir,
                        const SampleOptions &sampleOptions, uint64_t seed, TrainingData &data,
                        const TrainingData *lossData) {
  const TrainStep *train = program.train;
  for (int i = 0; i < train->numInputs; ++i) {
    InputRole role = train->inputs[i].role;
    if (role == InputRole::SampleWeights) {
      data.weightsIndex = i;
    } else if (role == InputRole::SampleMask) {
      data.maskIndex = i;
    } else if (role == InputRole::DropoutKey) {
      data.keyIndex = i;
    } else {
      data.fileInputs.push_back(train->inputs[i]);
      data.fileIndex.push_back(i);
    }
  }
  data.dropLast = lossData ? lossData->dropLast : data.weightsIndex < 0;
  const std::vector<TensorInfo> &fileInputs = data.fileInputs;
  std::vector<NpyArray> &arrays = data.arrays;
  int64_t &samples = data.samples;
  if (lossData && fileInputs.empty())
    samples = lossData->samples; // a middle stage reads no file
  else
    TRAINC_RETURN_IF_ERROR(openSampleInputs(dir, fileInputs.data(),
                                            static_cast<int>(fileInputs.size()), arrays,
                                            samples));
  if (lossData && samples != lossData->samples)
    return Status::error(dir + ": the inputs hold " + std::to_string(samples) +
                         " samples, the labels " + std::to_string(lossData->samples));
  if (samples <= 0)
    return Status::error("no training samples in " + dir);
  if (data.dropLast && samples < program.batchSize)
    return Status::error(
        dir + " holds " + std::to_string(samples) +
        " samples, fewer than one batch of " + std::to_string(program.batchSize) +
        ": the model computes its own loss, so every batch must be full (compile with a "
        "smaller --batch-size)");
  if (data.dropLast && samples % program.batchSize != 0)
    std::fprintf(stderr,
                 "note: the model computes its own loss (a mean inside the model), so the "
                 "last %lld of every epoch's %lld samples (fewer than a batch of %lld) are "
                 "not trained, as with PyTorch's drop_last=True\n",
                 static_cast<long long>(samples % program.batchSize),
                 static_cast<long long>(samples), static_cast<long long>(program.batchSize));
  // NaN in float data would poison every parameter: refuse it before step
  // 1. The files are read in chunks of rows, never whole (a data set may be
  // larger than memory).
  for (size_t i = 0; i < arrays.size(); ++i) {
    const DType type = arrays[i].dtype();
    if (type != DType::F32 && type != DType::F64 && type != DType::F16)
      continue;
    const uint64_t rowBytes = tensorBytes(fileInputs[i], 1);
    const int64_t rowElements = static_cast<int64_t>(rowBytes / dtypeSize(type));
    if (rowBytes == 0)
      continue;
    const int64_t chunkRows = static_cast<int64_t>(std::max<uint64_t>(1, (4u << 20) / rowBytes));
    std::vector<unsigned char> chunk(std::min(chunkRows, samples) * rowBytes);
    for (int64_t first = 0; first < samples; first += chunkRows) {
      const int64_t rows = std::min(chunkRows, samples - first);
      TRAINC_RETURN_IF_ERROR(arrays[i].readRows(first, rows, chunk.data()));
      int64_t bad = firstNonFinite(type, chunk.data(), rows * rowElements);
      if (bad >= 0)
        return Status::error("input " + std::string(fileInputs[i].name) + ": sample " +
                             std::to_string(first + bad / rowElements) +
                             " holds NaN or infinity");
    }
  }

  TRAINC_RETURN_IF_ERROR(sampleTransforms(fileInputs.data(), static_cast<int>(fileInputs.size()),
                                          arrays, sampleOptions, true, seed, data.transforms));
  TRAINC_RETURN_IF_ERROR(checkIndexInputs(fileInputs.data(), static_cast<int>(fileInputs.size()),
                                          arrays, samples));
  if (lossData) {
    data.counted = lossData->counted;
    data.userWeights = lossData->userWeights;
    data.weightSumDivides = lossData->weightSumDivides;
    return Status();
  }
  TRAINC_RETURN_IF_ERROR(
      checkTrainingLabels(program, fileInputs, arrays, samples, &data.counted));
  return openSampleWeights(program, dir, data);
}

Status openSampleWeights(const Program &program, const std::string &dir, TrainingData &data) {
  const std::string path = dir + "/sample_weights.npy";
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec)))
    return Status();
  if (data.weightsIndex < 0)
    return Status::error(path + ": the model computes its own loss (--loss=output), which "
                         "per-sample weights cannot weight; compile with --loss=cross-entropy, "
                         "mse or bce to weight samples");
  NpyArray array;
  TRAINC_RETURN_IF_ERROR(NpyArray::open(path, array));
  if (array.dtype() != DType::F32 || array.shape().size() != 1 ||
      array.shape()[0] != data.samples)
    return Status::error(path + " has dtype " + dtypeName(array.dtype()) + " and shape " +
                         shapeText(array.shape()) + "; sample weights are float32 of shape (" +
                         std::to_string(data.samples) + ",), one per sample");
  TRAINC_RETURN_IF_ERROR(array.readAll(data.userWeights));
  data.weightSumDivides = program.train->sampleWeightNorm == SampleWeightNorm::Sum;
  for (int64_t i = 0; i < data.samples; ++i) {
    const float w = data.userWeights[i];
    if (!std::isfinite(w) || w < 0)
      return Status::error(path + ": sample " + std::to_string(i) + " has weight " +
                           std::to_string(w) + "; a weight is finite and >= 0");
  }
  return Status();
}

void fillSampleRows(const TrainingData &data, const int64_t *rows, int64_t count, int64_t batch,
                    float *weights, float *mask, const float *importance) {
  for (float *row : {weights, mask}) {
    if (!row)
      continue;
    std::fill(row, row + batch, count == 0 ? 1.0f : 0.0f);
    std::fill(row, row + count, 1.0f);
  }
  if (!weights || (data.userWeights.empty() && !importance))
    return;
  double sum = 0;
  for (int64_t i = 0; i < count; ++i)
    sum += weights[i] = (data.userWeights.empty() ? 1.0f : data.userWeights[rows[i]]) *
                        (importance ? importance[i] : 1.0f);
  // Weights all 0 in a batch of a group that weighs more (its share is 0):
  // 1 keeps its loss finite.
  if (sum == 0 && data.weightSumDivides)
    std::fill(weights, weights + count, 1.0f);
}

Status checkTrainingLabels(const Program &program, const std::vector<TensorInfo> &fileInputs,
                           const std::vector<NpyArray> &arrays, int64_t samples,
                           std::vector<uint8_t> *counted) {
  const TrainStep &train = *program.train;
  int label = -1;
  for (int i = 0; i < train.numInputs; ++i)
    if (train.inputs[i].role == InputRole::Label)
      label = i;
  if (label < 0 || program.numOutputs < 1)
    return Status();
  const TensorInfo &info = train.inputs[label];
  for (int i = 0; i < program.numInputs; ++i)
    if (std::string(program.inputs[i].name) == info.name)
      return Status();
  const TensorInfo &out = program.outputs[0];
  if (info.dtype != DType::I64 || out.dtype != DType::F32 || out.rank != info.rank + 1)
    return Status();
  auto sameExcept = [&](int axis) {
    for (int d = 0, k = 0; d < out.rank; ++d)
      if (d != axis && out.shape[d] != info.shape[k++])
        return false;
    return true;
  };
  int64_t classes = 0;
  int axis = -1;
  for (int a : {1, out.rank - 1})
    if (a >= 1 && sameExcept(a) && out.shape[a] > classes) {
      classes = out.shape[a]; // both fit: the larger count, never a false refusal
      axis = a;
    }
  if (axis < 0)
    return Status();
  const NpyArray *array = nullptr;
  for (size_t f = 0; f < fileInputs.size(); ++f)
    if (std::string(fileInputs[f].name) == info.name)
      array = &arrays[f];
  if (!array)
    return Status();
  const int64_t perSample = static_cast<int64_t>(tensorBytes(info, 1) / 8);
  const int64_t chunkRows = std::max<int64_t>(1, (1 << 19) / std::max<int64_t>(perSample, 1));
  std::vector<int64_t> values;
  const int64_t ignored = ignoredLabel(program);
  if (counted)
    counted->assign(samples, 0);
  for (int64_t first = 0; first < samples; first += chunkRows) {
    const int64_t rows = std::min(chunkRows, samples - first);
    values.resize(rows * perSample);
    TRAINC_RETURN_IF_ERROR(array->readRows(first, rows, values.data()));
    for (int64_t k = 0; k < rows * perSample; ++k)
      if ((values[k] < 0 || values[k] >= classes) && values[k] != ignored)
        return Status::error("training label " + std::to_string(values[k]) + " of sample " +
                             std::to_string(first + k / perSample) + " in " + array->path() +
                             " is outside [0, " + std::to_string(classes) +
                             ") (the classes of output " + out.name + " " + shapeText(out) +
                             "; " + std::to_string(ignored) +
                             " marks a sample the loss ignores, as in PyTorch)");
    if (counted)
      for (int64_t k = 0; k < rows * perSample; ++k)
        (*counted)[first + k / perSample] |= values[k] != ignored ? 1 : 0;
  }
  return Status();
}

/// The export table (the model's segments interleaved with the parameters'
/// bytes) covers every segment byte and every parameter once, each with its
/// size in the program. `largest` is the largest parameter's byte count.
Status checkExportLayout(const Program &program, uint64_t &largest) {
  const ExportInfo *info = program.exportInfo;
  if (!info)
    return Status::error("this program cannot export: compile it with --optimizer");
  std::vector<bool> placed(program.numParams, false);
  uint64_t segmentSum = 0;
  largest = 0;
  for (int k = 0; k < info->numPieces; ++k) {
    const ExportPiece &piece = info->pieces[k];
    if (piece.segmentBytes > info->segmentsBytes - segmentSum)
      return Status::error("the export's segments end before piece " + std::to_string(k));
    segmentSum += piece.segmentBytes;
    if (piece.param == -1 && k + 1 == info->numPieces)
      continue;
    if (piece.param < 0 || piece.param >= program.numParams || placed[piece.param] ||
        program.params[piece.param].constant)
      return Status::error("export piece " + std::to_string(k) +
                           " names no parameter of the program");
    const ParamInfo &p = program.params[piece.param];
    if (piece.paramBytes != p.bytes)
      return Status::error("export table of parameter " + std::string(p.tensor.name) +
                           ": " + std::to_string(piece.paramBytes) + " bytes in the model, " +
                           std::to_string(p.bytes) + " in the program");
    placed[piece.param] = true;
    largest = std::max(largest, p.bytes);
  }
  for (int i = 0; i < program.numParams; ++i)
    if (!program.params[i].constant && !placed[i])
      return Status::error("parameter " + std::string(program.params[i].tensor.name) +
                           " is not in the export table");
  if (info->numPieces == 0 || info->pieces[info->numPieces - 1].param != -1 ||
      segmentSum != info->segmentsBytes)
    return Status::error("the export's pieces do not cover its segments");
  return Status();
}

/// The outputs a run writes (--export, --log, the checkpoint files) must be
/// absent or regular files, and --export's folder must exist: checked before
/// anything is read or trained, so a bad target costs no training.
Status checkIndexInputs(const TensorInfo *infos, int count, const std::vector<NpyArray> &arrays,
                        int64_t samples) {
  for (int i = 0; i < count && static_cast<size_t>(i) < arrays.size(); ++i) {
    const TensorInfo &t = infos[i];
    if (t.indexLimit <= 0 || (t.dtype != DType::I64 && t.dtype != DType::I32))
      continue;
    const int64_t perSample = static_cast<int64_t>(tensorBytes(t, 1) / dtypeSize(t.dtype));
    if (perSample <= 0)
      continue;
    const int64_t chunkRows = std::max<int64_t>(1, (1 << 19) / perSample);
    std::vector<int64_t> wide;
    std::vector<int32_t> narrow;
    for (int64_t first = 0; first < samples; first += chunkRows) {
      const int64_t rows = std::min(chunkRows, samples - first);
      wide.resize(rows * perSample);
      if (t.dtype == DType::I64) {
        TRAINC_RETURN_IF_ERROR(arrays[i].readRows(first, rows, wide.data()));
      } else {
        narrow.resize(rows * perSample);
        TRAINC_RETURN_IF_ERROR(arrays[i].readRows(first, rows, narrow.data()));
        std::copy(narrow.begin(), narrow.end(), wide.begin());
      }
      for (int64_t k = 0; k < rows * perSample; ++k)
        if (wide[k] < 0 || wide[k] >= t.indexLimit)
          return Status::error(
              "input " + std::string(t.name) + ": id " + std::to_string(wide[k]) +
              " of sample " + std::to_string(first + k / perSample) + " (element " +
              std::to_string(k % perSample) + ") in " + arrays[i].path() + " is outside [0, " +
              std::to_string(t.indexLimit) + "), the rows of the table that node '" +
              (t.indexNode ? t.indexNode : "?") + "' reads (PyTorch's nn.Embedding refuses it too)");
    }
  }
  return Status();
}

namespace {

bool readsHyper(const TrainStep &train, Hyper hyper) {
  for (int h = 0; h < train.numHypers; ++h)
    if (train.hypers[h] == hyper)
      return true;
  return false;
}

} // namespace

Status checkHyperFlags(const TrainStep &train, const TrainOptions &options) {
  const std::string compiled =
      std::string("this trainer was compiled with --optimizer=") + name(train.optimizer);
  struct Flag {
    const char *name;
    bool given;
    Hyper hyper;
    const char *instead;
  };
  const bool adam = isAdam(train.optimizer);
  const Flag flags[] = {
      {"--momentum", !std::isnan(options.momentum), Hyper::Momentum,
       "Adam's momentum is --beta1"},
      {"--beta1", !std::isnan(options.beta1), Hyper::Beta1, "SGD's momentum is --momentum"},
      {"--beta2", !std::isnan(options.beta2), Hyper::Beta2,
       "only Adam, AdamW and LAMB have beta2"},
      {"--eps", !std::isnan(options.eps), Hyper::Eps, "only Adam, AdamW, LAMB and LARS have eps"},
      {"--trust-coefficient", !std::isnan(options.trustCoefficient), Hyper::TrustCoefficient,
       "only LARS has a trust coefficient"},
      {"--weight-decay", !std::isnan(options.weightDecay), Hyper::WeightDecay, ""},
      {"--kfac-damping", !std::isnan(options.kfacDamping), Hyper::KfacDamping,
       "only K-FAC has Kronecker factors; compile with --optimizer=kfac"},
      {"--kfac-stat-decay", !std::isnan(options.kfacStatDecay), Hyper::KfacStatDecay,
       "only K-FAC has Kronecker factors; compile with --optimizer=kfac"},
      {"--kfac-kl-clip", !std::isnan(options.kfacKlClip), Hyper::KfacKlClip,
       "only K-FAC has Kronecker factors; compile with --optimizer=kfac"},
  };
  for (const Flag &f : flags)
    if (f.given && !readsHyper(train, f.hyper))
      return Status::error(std::string(f.name) + ": " + compiled + ", which has no " +
                           name(f.hyper) +
                           (*f.instead ? std::string(" (") + f.instead + ")" : "") +
                           (adam || f.hyper == Hyper::Momentum ||
                                    f.hyper == Hyper::TrustCoefficient ||
                                    f.hyper == Hyper::KfacDamping ||
                                    f.hyper == Hyper::KfacStatDecay ||
                                    f.hyper == Hyper::KfacKlClip
                                ? ""
                                : "; compile with --optimizer=adam, adamw or lamb to use it"));
  TRAINC_RETURN_IF_ERROR(checkScheduleFlags(options.schedule));
  TRAINC_RETURN_IF_ERROR(checkEvaluationFlags(options));
  // OneCycleLR and CyclicLR overwrite the optimizer's momentum (or beta1)
  // every step: a value given for it would be ignored.
  const char *cycled = adam ? "--beta1" : "--momentum";
  if (cyclesMomentum(options.schedule) && !std::isnan(adam ? options.beta1 : options.momentum))
    return Status::error(std::string(cycled) + ": --lr-schedule " +
                         scheduleName(options.schedule.kind) + " cycles it between "
                         "--base-momentum and --max-momentum; set those, or add "
                         "--cycle-momentum=false to keep " + cycled);
  return Status();
}

Status checkEvaluationFlags(const TrainOptions &options) {
  struct Needs {
    const char *flag;
    bool given;
    bool needsEval, needsCheckpoints;
  };
  const Needs flags[] = {
      {"--eval-every", options.evalEvery > 0, true, false},
      {"--topk", options.topk > 0, true, false},
      {"--eval-output", !options.evalOutput.empty(), true, false},
      {"--keep-best", !options.keepBest.empty(), true, true},
      {"--early-stop-patience", options.earlyStopPatience > 0, true, false},
      {"--keep-last", options.keepLast > 0, false, true},
      {"--resume=auto", options.resumeAuto, false, true},
      {"--until-step", options.untilStep > 0, false, true},
  };
  for (const Needs &f : flags) {
    if (f.given && f.needsEval && options.evalDir.empty())
      return Status::error(std::string(f.flag) + " is about evaluation; give --eval-data DIR");
    if (f.given && f.needsCheckpoints && options.checkpointDir.empty())
      return Status::error(std::string(f.flag) + " is about checkpoints; give "
                           "--checkpoint-dir DIR");
  }
  if (!std::isnan(options.earlyStopMinDelta) && options.earlyStopPatience == 0)
    return Status::error("--early-stop-min-delta is a parameter of --early-stop-patience; add "
                         "it or drop --early-stop-min-delta");
  return Status();
}

Status checkOutputTargets(const Program &program, const TrainOptions &options) {
  if (!options.exportPath.empty()) {
    uint64_t largest = 0;
    TRAINC_RETURN_IF_ERROR(checkExportLayout(program, largest));
    TRAINC_RETURN_IF_ERROR(checkReplaceable(options.exportPath, "--export"));
    std::string folder = std::filesystem::path(options.exportPath).parent_path().string();
    std::error_code error;
    if (!std::filesystem::is_directory(folder.empty() ? "." : folder, error))
      return Status::error("--export: " + folder + " is not a folder");
  }
  if (!options.logPath.empty())
    TRAINC_RETURN_IF_ERROR(checkReplaceable(options.logPath, "--log"));
  // (A folder that cannot be created is reported by the write probe.) A
  // resumed run replaces the checkpoint it read, so a symlink is refused
  // before training, not at the first checkpoint.
  std::error_code error;
  if (!options.checkpointDir.empty() &&
      std::filesystem::is_directory(options.checkpointDir, error)) {
    TRAINC_RETURN_IF_ERROR(
        checkReplaceable(options.checkpointDir + "/checkpoint.safetensors", "checkpoint"));
    TRAINC_RETURN_IF_ERROR(
        checkReplaceable(options.checkpointDir + "/checkpoint.json", "checkpoint"));
  }
  return Status();
}

Status checkAsyncRanks(const TrainOptions &options, bool ranks, int64_t accum, bool rangeTest) {
  if (options.stalenessBound > 0 && !options.asyncRanks)
    return Status::error("--staleness-bound is a parameter of --async; add it or drop "
                         "--staleness-bound");
  if (!options.asyncRanks)
    return Status();
  if (!ranks)
    return Status::error("--async is asynchronous SGD over the ranks of a --data-parallel "
                         "trainer under mpirun; this run is one process (--async-workers N "
                         "runs N workers in one)");
  struct Conflict {
    bool given;
    const char *what, *why;
  };
  const Conflict conflicts[] = {
      {accum > 1, "--grad-accum above 1", "each rank's step is one batch of its own"},
      {options.earlyStopPatience > 0, "--early-stop-patience",
       "the ranks would stop at different steps"},
      {options.averaging.kind() != AveragingKind::None, "--ema-decay or --swa-start",
       "rank 0 would average its own steps' parameters, not the server's"},
      {rangeTest || options.findLr || options.lrAuto, "--find-lr or --lr=auto",
       "the range test reads the loss of each rate in order"},
  };
  for (const Conflict &c : conflicts)
    if (c.given)
      return Status::error(std::string("--async is not for ") + c.what + ": " + c.why);
  return Status();
}

Status checkAsyncWorkers(const TrainOptions &options, int ranks, bool staged, int64_t accum,
                         bool lossScaling, bool gradNorm) {
  struct Conflict {
    bool given;
    const char *what, *why;
  };
  const Conflict conflicts[] = {
      {ranks > 1 || staged, "more than one process (data or pipeline parallelism)",
       "its workers are threads of one process"},
      {accum > 1, "--grad-accum above 1",
       "the workers would add into the same gradient accumulators"},
      {lossScaling, "fp16 dynamic loss scaling", "the workers would share one loss scale"},
      {gradNorm, "a step compiled with --clip-grad-norm or --log-grad-norm",
       "the workers would share one gradient norm"},
      {options.averaging.kind() != AveragingKind::None, "--ema-decay or --swa-start",
       "the average would read the weights while workers write them"},
      {options.sampler.kind != SamplerKind::Uniform || options.select.kind != SelectOptions::Kind::None,
       "--sampler or --select", "batches are drawn from the losses in step order"},
      {options.findLr || options.lrAuto, "--find-lr or --lr=auto",
       "the range test reads the loss of each rate in order"},
      {options.profile.enabled, "--profile", "its calls would be timed on several threads at once"},
  };
  for (const Conflict &c : conflicts)
    if (c.given)
      return Status::error(std::string("--async-workers is not for ") + c.what + ": " + c.why);
  return Status();
}

} // namespace trainc::rt::detail
