//===- TrainLog.cpp - the trainer's --log (JSON lines) --------------------===//

#include "TrainLog.h"

#include <algorithm>

#include <cmath>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <sys/stat.h>

namespace trainc::rt::detail {
namespace {

using Json = nlohmann::ordered_json;

/// One record as a line: `{"key": value, ...}` in insertion order, values
/// written by nlohmann-json (escaped strings, shortest round-trip numbers).
std::string recordLine(const Json &record) {
  std::string line = "{";
  bool first = true;
  for (const auto &[key, value] : record.items()) {
    line += (first ? "" : ", ") + Json(key).dump() + ": " + value.dump();
    first = false;
  }
  return line + "}\n";
}

/// `value` rounded to 3 significant digits.
double roundTo3(double value) {
  if (!(value > 0) || !std::isfinite(value))
    return 0;
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(value)));
  return std::round(value * scale) / scale;
}

} // namespace

Status TrainLog::create(const std::string &logPath) {
  path = logPath;
  TRAINC_RETURN_IF_ERROR(writeFileAtomically(path, "--log", "", 0));
  return openAppendFile(path, "--log", file);
}

Status TrainLog::resume(const std::string &logPath, const LogCut &cut, uint64_t maxBytes,
                        bool &evalOfCutEpoch) {
  path = logPath;
  evalOfCutEpoch = false;
  std::string text;
  struct stat info;
  if (::lstat(path.c_str(), &info) == 0 || errno != ENOENT)
    TRAINC_RETURN_IF_ERROR(readRegularFile(path, "--log", maxBytes, text));
  std::string kept;
  size_t at = 0;
  for (int64_t line = 1;; ++line) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos)
      break; // a torn last line (or none): dropped
    std::string record = text.substr(at, end - at);
    at = end + 1;
    Json json;
    try {
      json = Json::parse(record);
    } catch (const nlohmann::json::exception &) {
    }
    auto integer = [&](const char *key, int64_t &out) {
      if (!json.is_object() || !json.contains(key) || !json[key].is_number_integer())
        return false;
      out = json[key].get<int64_t>();
      return true;
    };
    int64_t step = 0, epoch = 0;
    bool keep;
    if (integer("step", step)) {
      // A step's record, or an evaluation after that step.
      keep = step <= cut.step;
      evalOfCutEpoch |= keep && step == cut.step && json.contains("eval_loss");
    } else if (integer("epoch", epoch) && json.contains("eval_loss")) {
      keep = epoch < cut.epoch || (epoch == cut.epoch && cut.epochEnded);
      evalOfCutEpoch |= keep && epoch == cut.epoch;
    } else {
      return Status::error("--log: cannot resume " + path + ": line " + std::to_string(line) +
                           " is not a record of this trainer's log");
    }
    if (keep)
      kept += record + "\n";
  }
  // The kept records replace the log whole, so a kill now leaves either log.
  TRAINC_RETURN_IF_ERROR(writeFileAtomically(path, "--log", kept.data(), kept.size()));
  return openAppendFile(path, "--log", file);
}

Status TrainLog::append(const std::string &line) {
  if (!file.valid())
    return Status();
  Status written = writeAll(file, path, line.data(), line.size());
  if (!written.ok())
    return Status::error("--log: " + written.message());
  return Status();
}

bool SampleLossSummary::finish(Stats &stats) {
  if (values.empty())
    return false;
  const size_t n = values.size();
  std::sort(values.begin(), values.end());
  // The median of an even count: the mean of the middle two, as NumPy's.
  stats = {values.front(), (static_cast<double>(values[(n - 1) / 2]) + values[n / 2]) / 2,
           values.back()};
  values.clear();
  return true;
}

Status TrainLog::step(const StepRecord &step) {
  if (!file.valid())
    return Status(); // no --log: nothing to format
  Json record;
  record["step"] = step.step;
  record["epoch"] = step.epoch;
  record["loss"] = step.loss;
  record["lr"] = step.lr;
  record[step.momentumName] = step.momentum;
  if (step.gradNorm)
    record["grad_norm"] = *step.gradNorm; // null when not finite (a skipped fp16 step)
  if (step.lossScale)
    record["loss_scale"] = *step.lossScale;
  if (step.skipped)
    record["skipped"] = true;
  if (step.skipReason)
    record["skip_reason"] = step.skipReason;
  if (step.sampleLosses) {
    record["sample_loss_min"] = step.sampleLosses->min;
    record["sample_loss_median"] = step.sampleLosses->median;
    record["sample_loss_max"] = step.sampleLosses->max;
  }
  // Milliseconds and three significant digits: what a reader plots.
  record["wall_time"] = std::round(step.wallTime * 1000) / 1000;
  record["samples_per_s"] = roundTo3(step.samplesPerSecond);
  return append(recordLine(record));
}

Status TrainLog::eval(int64_t step, int64_t epoch, double loss, double accuracy, int topk,
                      double topkAccuracy) {
  if (!file.valid())
    return Status();
  Json record;
  record["step"] = step;
  record["epoch"] = epoch;
  record["eval_loss"] = loss;
  // A model that computes its own loss has no class scores: no accuracy.
  if (!std::isnan(accuracy))
    record["eval_accuracy"] = accuracy;
  if (topk > 0 && !std::isnan(topkAccuracy))
    record["eval_top" + std::to_string(topk)] = topkAccuracy;
  return append(recordLine(record));
}

Status TrainLog::sync() {
  if (!file.valid())
    return Status();
  Status synced = syncFile(file, path);
  if (!synced.ok())
    return Status::error("--log: " + synced.message());
  return Status();
}

} // namespace trainc::rt::detail
