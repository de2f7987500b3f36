//===- Evaluation.cpp - held-out metrics and the best of them -------------===//

#include "Evaluation.h"

#include "TrainChecks.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <numeric>

namespace trainc::rt::detail {

std::string metricName(EvalMetric metric, int topk) {
  switch (metric) {
  case EvalMetric::Loss:
    return "eval_loss";
  case EvalMetric::Accuracy:
    return "eval_accuracy";
  case EvalMetric::TopK:
    return "eval_top" + std::to_string(topk);
  }
  return "?";
}

Status parseMetric(const std::string &flag, const std::string &text, int topk, bool modelLoss,
                   EvalMetric &out) {
  for (EvalMetric metric : {EvalMetric::Loss, EvalMetric::Accuracy, EvalMetric::TopK}) {
    if (metric == EvalMetric::TopK && topk == 0)
      continue;
    if (text == metricName(metric, topk)) {
      if (modelLoss && metric != EvalMetric::Loss)
        return Status::error(flag + " " + text + ": the model computes its own loss, so "
                             "evaluation has no accuracy; watch eval_loss");
      out = metric;
      return Status();
    }
  }
  return Status::error(flag + " must be eval_loss or eval_accuracy" +
                       (topk > 0 ? ", or eval_top" + std::to_string(topk) : std::string()) +
                       ", got '" + text + "'");
}

double metricValue(const EvalResult &result, EvalMetric metric) {
  switch (metric) {
  case EvalMetric::Loss:
    return result.loss;
  case EvalMetric::Accuracy:
    return result.accuracy;
  case EvalMetric::TopK:
    return result.topk;
  }
  return std::nan("");
}

namespace {

/// label.npy of an evaluation set, checked against the class scores of
/// output `set.output`.
Status openClassLabels(const Program &program, const std::string &dir, EvalSet &set) {
  TRAINC_RETURN_IF_ERROR(NpyArray::open(dir + "/label.npy", set.labels));
  if (set.labels.dtype() != DType::I64 || set.labels.shape().size() != 1 ||
      set.labels.shape()[0] != set.samples)
    return Status::error(dir + "/label.npy must be int64 [" + std::to_string(set.samples) + "]");
  // An empty set has no loss or accuracy (0 / 0): refused before training.
  if (set.samples == 0)
    return Status::error("--eval-data " + dir + " holds no samples; evaluation needs at least one");
  TRAINC_RETURN_IF_ERROR(set.labels.readAll(set.truth));
  const TensorInfo &out = program.outputs[set.output];
  if (out.rank != 2 || out.dtype != DType::F32)
    return Status::error(std::string("evaluation needs class scores [N, C] as output '") +
                         out.name + "', which is " + shapeText(out) +
                         " (--eval-output names another output)");
  set.classes = out.shape[1];
  if (set.topk > set.classes)
    return Status::error("--topk " + std::to_string(set.topk) + ": output '" + out.name +
                         "' has only " + std::to_string(set.classes) + " classes");
  const int64_t *truth = set.truth.data();
  set.ignoredLabel = ignoredLabel(program);
  for (int64_t r = 0; r < set.samples; ++r)
    if ((truth[r] < 0 || truth[r] >= set.classes) && truth[r] != set.ignoredLabel)
      return Status::error("eval label " + std::to_string(truth[r]) + " of sample " +
                           std::to_string(r) + " is outside [0, " +
                           std::to_string(set.classes) + ") (" +
                           std::to_string(set.ignoredLabel) + " marks a sample left out)");
  return Status();
}

/// The output named `name` (empty: the first).
Status findOutput(const Program &program, const std::string &name, int &index) {
  if (program.numOutputs < 1)
    return Status::error("evaluation needs an output, and this program has none");
  index = 0;
  if (name.empty())
    return Status();
  std::string names;
  for (int i = 0; i < program.numOutputs; ++i) {
    if (name == program.outputs[i].name) {
      index = i;
      return Status();
    }
    names += (i ? ", " : "") + std::string(program.outputs[i].name);
  }
  return Status::error("--eval-output " + name + ": the model has no such output (it has " +
                       names + ")");
}

} // namespace

Status openEvalSet(Context &context, const Program &program, const std::string &dir,
                   bool modelLoss, const std::string &outputName, int topk,
                   const SampleOptions &samples, EvalSet &set) {
  TRAINC_RETURN_IF_ERROR(openSampleInputs(dir, program.inputs, program.numInputs, set.arrays,
                                          set.samples));
  TRAINC_RETURN_IF_ERROR(sampleTransforms(program.inputs, program.numInputs, set.arrays, samples,
                                          false, 0, set.transforms));
  TRAINC_RETURN_IF_ERROR(
      checkIndexInputs(program.inputs, program.numInputs, set.arrays, set.samples));
  TRAINC_RETURN_IF_ERROR(findOutput(program, outputName, set.output));
  set.modelLoss = modelLoss;
  set.topk = topk;
  set.evaluated = set.samples;
  if (modelLoss) {
    // The labels are inputs of the model, read with the other inputs.
    const TensorInfo &out = program.outputs[set.output];
    if (out.rank != 0 || out.dtype != DType::F32)
      return Status::error(std::string("--eval-data: the model computes its own loss, so "
                                       "output '") +
                           out.name + "' must be its scalar f32 loss");
    if (topk > 0)
      return Status::error("--topk: the model computes its own loss; evaluation has no class "
                           "scores to rank");
    set.evaluated = set.samples / program.batchSize * program.batchSize;
    if (set.evaluated == 0)
      return Status::error("--eval-data " + dir + " holds " + std::to_string(set.samples) +
                           " samples, fewer than one batch of " +
                           std::to_string(program.batchSize) +
                           ": the model computes its own loss, so evaluation needs full batches");
  } else {
    TRAINC_RETURN_IF_ERROR(openClassLabels(program, dir, set));
  }
  uint64_t bytes = 0;
  for (int i = 0; i < program.numInputs; ++i) {
    set.fields.push_back(
        {&set.arrays[i], tensorBytes(program.inputs[i], 1), bytes, &set.transforms[i]});
    bytes += tensorBytes(program.inputs[i]);
    set.inputs.emplace_back(nullptr, DeviceFree{&context});
    TRAINC_RETURN_IF_ERROR(
        allocateDevice(context, tensorBytes(program.inputs[i]), set.inputs.back()));
    set.inputPtrs.push_back(set.inputs.back().get());
  }
  for (int i = 0; i < program.numOutputs; ++i) {
    set.outputs.emplace_back(nullptr, DeviceFree{&context});
    TRAINC_RETURN_IF_ERROR(
        allocateDevice(context, tensorBytes(program.outputs[i]), set.outputs.back()));
    set.outputPtrs.push_back(set.outputs.back().get());
  }
  set.staging.resize(bytes);
  set.order.resize(set.samples);
  std::iota(set.order.begin(), set.order.end(), 0);
  return Status();
}

Status evaluate(Context &context, const Program &program, EvalSet &set,
                const std::vector<void *> &params, char *arena, EvalResult &result) {
  const int64_t batch = program.batchSize;
  ForwardArgs forward{set.inputPtrs.data(), set.outputPtrs.data(), params.data(), arena};
  // Samples [first, first + count) through the forward pass.
  auto runBatch = [&](int64_t first, int64_t count) -> Status {
    TRAINC_RETURN_IF_ERROR(
        fillBatch(set.fields, batch, set.order.data(), first, count, set.staging.data()));
    for (int i = 0; i < program.numInputs; ++i)
      TRAINC_RETURN_IF_ERROR(context.copyToDevice(set.inputPtrs[i],
                                                  set.staging.data() + set.fields[i].offset,
                                                  tensorBytes(program.inputs[i])));
    return program.forward(context, forward);
  };
  result = EvalResult();
  if (set.modelLoss) {
    double total = 0;
    for (int64_t first = 0; first < set.evaluated; first += batch) {
      TRAINC_RETURN_IF_ERROR(runBatch(first, batch));
      float batchLoss = 0;
      TRAINC_RETURN_IF_ERROR(context.copyToHost(&batchLoss, set.outputPtrs[set.output], 4));
      total += batchLoss;
    }
    result.loss = total / static_cast<double>(set.evaluated / batch);
    return Status();
  }
  std::vector<float> scores(batch * set.classes);
  const int64_t *truth = set.truth.data();
  int64_t correct = 0, inTopK = 0, counted = 0;
  double total = 0;
  for (int64_t first = 0; first < set.samples; first += batch) {
    int64_t count = std::min(batch, set.samples - first);
    TRAINC_RETURN_IF_ERROR(runBatch(first, count));
    TRAINC_RETURN_IF_ERROR(
        context.copyToHost(scores.data(), set.outputPtrs[set.output], scores.size() * 4));
    for (int64_t r = 0; r < count; ++r) {
      const float *row = scores.data() + r * set.classes;
      int64_t label = truth[first + r];
      if (label == set.ignoredLabel)
        continue; // left out of the loss and the accuracy, as PyTorch's loss does
      ++counted;
      correct += std::max_element(row, row + set.classes) - row == label;
      // Top-k: fewer than k classes rank above the label (ties by class
      // index, as a stable sort by descending score, and as the top-1's
      // first maximum).
      int64_t above = 0;
      for (int64_t c = 0; c < set.classes; ++c)
        above += row[c] > row[label] || (row[c] == row[label] && c < label);
      inTopK += above < set.topk;
      double maxv = *std::max_element(row, row + set.classes), sum = 0;
      for (int64_t c = 0; c < set.classes; ++c)
        sum += std::exp(row[c] - maxv);
      total += std::log(sum) + maxv - row[label];
    }
  }
  if (counted == 0)
    return Status(); // every label ignored: no loss or accuracy (NaN)
  result.loss = total / counted;
  result.accuracy = static_cast<double>(correct) / counted;
  if (set.topk > 0)
    result.topk = static_cast<double>(inTopK) / counted;
  return Status();
}

bool EvalMonitor::take(const EvalResult &result, int64_t step, int64_t epoch) {
  const double value = metricValue(result, metric);
  if (std::isnan(value))
    return false;
  const bool lower = metric == EvalMetric::Loss;
  const bool improved =
      !any() || (lower ? value + minDelta < best : value - minDelta > best);
  if (!improved) {
    ++since;
    return false;
  }
  best = value;
  step_ = step;
  epoch_ = epoch;
  since = 0;
  return true;
}

void EvalMonitor::save(std::map<std::string, std::string> &manifest) const {
  if (!any())
    return;
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", best);
  manifest["monitor_metric"] = name();
  manifest["monitor_best"] = text;
  manifest["monitor_best_step"] = std::to_string(step_);
  manifest["monitor_best_epoch"] = std::to_string(epoch_);
  manifest["monitor_since"] = std::to_string(since);
}

Status EvalMonitor::restore(const std::map<std::string, std::string> &fields,
                            const std::string &path) {
  auto metricField = fields.find("monitor_metric");
  if (metricField == fields.end())
    return Status();
  if (metricField->second != name()) {
    std::fprintf(stderr, "note: the checkpoint %s kept the best %s; this run watches %s, "
                         "whose best starts afresh\n",
                 path.c_str(), metricField->second.c_str(), name().c_str());
    return Status();
  }
  auto corrupt = [&](const std::string &key) {
    return Status::error("the checkpoint " + path + " is damaged: manifest field '" + key +
                         "' is missing or malformed");
  };
  auto number = [&](const char *key, double &out) {
    auto it = fields.find(key);
    if (it == fields.end())
      return false;
    char *end = nullptr;
    errno = 0;
    out = std::strtod(it->second.c_str(), &end);
    return errno == 0 && end && *end == '\0' && !it->second.empty() && std::isfinite(out);
  };
  auto count = [&](const char *key, int64_t &out) {
    double value = 0;
    if (!number(key, value) || value < 0 || value > 1e15 || value != std::floor(value))
      return false;
    out = static_cast<int64_t>(value);
    return true;
  };
  if (!number("monitor_best", best))
    return corrupt("monitor_best");
  if (!count("monitor_best_step", step_))
    return corrupt("monitor_best_step");
  if (!count("monitor_best_epoch", epoch_))
    return corrupt("monitor_best_epoch");
  if (!count("monitor_since", since))
    return corrupt("monitor_since");
  return Status();
}

} // namespace trainc::rt::detail
