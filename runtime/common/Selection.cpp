//===- Selection.cpp - selective backprop: the samples a step trains ------===//

#include "Selection.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>
#include <tuple>

namespace trainc::rt::detail {

Status settleSelection(SelectOptions &o, const Program &program, int64_t accum,
                       bool dataParallel, bool sampler, bool rangeTest) {
  using Kind = SelectOptions::Kind;
  for (auto [given, flag, kind] :
       {std::tuple{!std::isnan(o.fraction), "--select-fraction", Kind::TopK},
        std::tuple{!std::isnan(o.beta), "--select-beta", Kind::Prob},
        std::tuple{o.history > 0, "--select-history", Kind::Prob}})
    if (given && o.kind != kind)
      return Status::error(std::string(flag) + " is a parameter of --select=" +
                           (kind == Kind::TopK ? "topk" : "prob"));
  if (o.kind == Kind::None)
    return Status();
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
  if (std::isnan(o.beta))
    o.beta = 1.0;
  if (o.history == 0)
    o.history = 1024;
  const char *conflict = accum > 1      ? "gradient accumulation"
                         : dataParallel ? "data parallelism"
                         : sampler      ? "--sampler"
                         : rangeTest    ? "the LR range test"
                                        : nullptr;
  if (conflict)
    return Status::error(std::string("--select is not available with ") + conflict + " yet");
  return Status();
}

Status Selection::init(const SelectOptions &options, const std::string &path, bool resumed,
                       bool shuffled, uint64_t seed) {
  if (options.kind == SelectOptions::Kind::None)
    return Status();
  opts = options;
  shuffle = shuffled;
  rng.seed(seed ^ 0x3C6EF372FE94F82Bull);
  history.assign(opts.history, -1.0);
  cursor = data.samples; // the first selection starts a pass
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

Status Selection::forward(const int64_t *rows, int64_t count, int64_t epoch) {
  Context &context = *device.context;
  TRAINC_RETURN_IF_ERROR(fillBatch(fields, candidates, rows, 0, count, host.data(), epoch));
  // The rows' weights as training's (the per-sample losses come before
  // them) and the mask of the real ones.
  auto row = [&](int index) {
    return index < 0 ? nullptr : reinterpret_cast<float *>(host.data() + offsets[index]);
  };
  fillSampleRows(data, rows, count, candidates, row(weightsIndex), row(maskIndex));
  TRAINC_RETURN_IF_ERROR(context.copyToDevice(slot.get(), host.data(), host.size()));
  const ForwardArgs args{inputPtrs.data(), outputPtrs.data(), device.paramPtrs.data(),
                         static_cast<char *>(device.arena.get())};
  Status ran = program.select->run(context, args);
  if (!ran.ok())
    return Status::error("the selection forward failed: " + ran.message());
  TRAINC_RETURN_IF_ERROR(
      context.copyToHost(hostLosses.data(), outputPtrs[1], static_cast<size_t>(count) * 4));
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(hostLosses[i]))
      return Status::error("the selection forward's loss of sample " + std::to_string(rows[i]) +
                           " became " + std::to_string(hostLosses[i]) +
                           " (learning rate too high?)");
  return Status();
}

Status Selection::select(const int64_t *order, int64_t b, int64_t epoch, int64_t seq) {
  if (opts.kind == SelectOptions::Kind::Prob)
    return selectProb(epoch, seq);
  const int64_t first = b * candidates, count = std::min(candidates, data.samples - first);
  const int64_t *rows = order + first;
  TRAINC_RETURN_IF_ERROR(forward(rows, count, epoch));
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
  return traceLine(seq, rows, count);
}

Status Selection::selectProb(int64_t epoch, int64_t seq) {
  const int64_t n = data.samples;
  int64_t selections = 0;
  while (static_cast<int64_t>(kept.size()) < trained) {
    if (++selections > 1000 * ((n + candidates - 1) / candidates + 1))
      return Status::error("--select=prob kept too few candidates over a thousand passes");
    if (cursor >= n) {
      pass.resize(n);
      std::iota(pass.begin(), pass.end(), 0);
      if (shuffle)
        std::shuffle(pass.begin(), pass.end(), rng);
      cursor = 0;
    }
    const int64_t count = std::min(candidates, n - cursor);
    const int64_t *rows = pass.data() + cursor;
    cursor += count;
    TRAINC_RETURN_IF_ERROR(forward(rows, count, epoch));
    samples.clear();
    for (int64_t i = 0; i < count; ++i) {
      // CDF(loss) over the history before this batch joins it.
      int64_t below = 0;
      for (int64_t h = 0; h < historyCount; ++h)
        below += history[h] <= hostLosses[i];
      const double cdf = historyCount == 0 ? 1.0 : static_cast<double>(below) /
                                                       static_cast<double>(historyCount);
      const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
      if (u < std::pow(cdf, opts.beta)) {
        kept.push_back(rows[i]);
        samples.push_back(rows[i]);
      }
    }
    for (int64_t i = 0; i < count; ++i) {
      history[historyNext] = hostLosses[i];
      historyNext = (historyNext + 1) % opts.history;
      historyCount = std::min(historyCount + 1, opts.history);
    }
    TRAINC_RETURN_IF_ERROR(traceLine(seq, rows, count));
  }
  samples.assign(kept.begin(), kept.begin() + trained);
  kept.erase(kept.begin(), kept.begin() + trained);
  return Status();
}

Status Selection::traceLine(int64_t seq, const int64_t *rows, int64_t count) {
  if (!trace.valid())
    return Status();
  std::string line = "{\"batch\": " + std::to_string(seq) + ", \"candidates\": ";
  appendJsonList(line, rows, count);
  line += ", \"losses\": ";
  appendJsonList(line, hostLosses.data(), count);
  line += ", \"rows\": ";
  appendJsonList(line, samples.data(), static_cast<int64_t>(samples.size()));
  line += "}\n";
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

std::vector<HostTensor> Selection::checkpointTensors() const {
  if (opts.kind != SelectOptions::Kind::Prob)
    return {};
  return {{"select.pass", false, data.samples},
          {"select.kept", false, trained + candidates},
          {"select.history", true, opts.history}};
}

void Selection::save(std::map<std::string, std::vector<char>> &tensors,
                     std::map<std::string, std::string> &manifest) const {
  if (opts.kind != SelectOptions::Kind::Prob)
    return;
  std::vector<int64_t> passRows(pass);
  passRows.resize(data.samples, -1);
  std::vector<int64_t> keptRows(kept.begin(), kept.end());
  keptRows.resize(trained + candidates, -1);
  tensors["select.pass"] = bytesOf(passRows);
  tensors["select.kept"] = bytesOf(keptRows);
  tensors["select.history"] = bytesOf(history);
  std::ostringstream state;
  state << rng;
  manifest["select"] = "prob";
  manifest["select_beta"] = exactNumber(opts.beta);
  manifest["select_history"] = std::to_string(opts.history);
  manifest["select_cursor"] = std::to_string(cursor);
  manifest["select_history_count"] = std::to_string(historyCount);
  manifest["select_history_next"] = std::to_string(historyNext);
  manifest["select_rng"] = state.str();
}

Status Selection::restore(const std::map<std::string, std::vector<char>> &tensors,
                          const std::map<std::string, std::string> &manifest) {
  if (opts.kind != SelectOptions::Kind::Prob)
    return Status();
  auto field = [&](const char *key) {
    auto it = manifest.find(key);
    return it == manifest.end() ? std::string() : it->second;
  };
  if (field("select") != "prob" || field("select_beta") != exactNumber(opts.beta) ||
      field("select_history") != std::to_string(opts.history))
    return Status::error("the checkpoint was written with other --select flags (--select=" +
                         field("select") + ", beta " + field("select_beta") + ", history " +
                         field("select_history") + "); resume with the same ones");
  auto bad = [](const std::string &what) {
    return Status::error("the checkpoint's selection state is inconsistent (" + what + ")");
  };
  auto integer = [&](const char *key, int64_t low, int64_t high, int64_t &out) {
    const std::string text = field(key);
    char *end = nullptr;
    out = std::strtoll(text.c_str(), &end, 10);
    return !text.empty() && !*end && out >= low && out <= high;
  };
  const int64_t n = data.samples;
  if (!integer("select_cursor", 0, n, cursor) ||
      !integer("select_history_count", 0, opts.history, historyCount) ||
      !integer("select_history_next", 0, opts.history - 1, historyNext))
    return bad("cursor or history");
  std::vector<int64_t> passRows(n), keptRows(trained + candidates);
  std::memcpy(passRows.data(), tensors.at("select.pass").data(), n * 8);
  std::memcpy(keptRows.data(), tensors.at("select.kept").data(), keptRows.size() * 8);
  std::memcpy(history.data(), tensors.at("select.history").data(), history.size() * 8);
  // No pass yet (all -1), or a permutation of the samples.
  pass.clear();
  std::vector<bool> seen(n, false);
  for (int64_t row : passRows) {
    if (row == -1)
      continue;
    if (row < 0 || row >= n || seen[row])
      return bad("pass");
    seen[row] = true;
    pass.push_back(row);
  }
  if (!pass.empty() && static_cast<int64_t>(pass.size()) != n)
    return bad("pass");
  kept.clear();
  for (int64_t row : keptRows) {
    if (row < -1 || row >= n)
      return bad("kept");
    if (row >= 0)
      kept.push_back(row);
  }
  std::istringstream state(field("select_rng"));
  state >> rng;
  if (state.fail())
    return bad("rng");
  return Status();
}

} // namespace trainc::rt::detail
