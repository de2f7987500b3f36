//===- Sampler.cpp - batches drawn by the samples' losses -----------------===//

#include "Sampler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <type_traits>

namespace trainc::rt::detail {

const char *samplerName(SamplerKind kind) {
  switch (kind) {
  case SamplerKind::Uniform: return "uniform";
  case SamplerKind::Priority: return "priority";
  case SamplerKind::MetropolisHastings: return "mh";
  }
  return "?";
}

Status settleSampler(SamplerOptions &o, bool sampleLosses, bool dataParallel, bool shuffle,
                     bool rangeTest) {
  if (o.kind == SamplerKind::Uniform) {
    for (auto [given, flag] : {std::pair{!std::isnan(o.alpha), "--priority-alpha"},
                               std::pair{!std::isnan(o.beta), "--priority-beta"},
                               std::pair{!std::isnan(o.eps), "--priority-eps"}})
      if (given)
        return Status::error(std::string(flag) + " is a parameter of --sampler=priority or mh");
    return Status();
  }
  const std::string flag = std::string("--sampler=") + samplerName(o.kind);
  if (!sampleLosses)
    return Status::error(flag + " draws by the per-sample losses, and this model computes "
                                "its own loss (--loss=output); compile with "
                                "--loss=cross-entropy, mse or bce");
  if (dataParallel)
    return Status::error(flag + " is not available under data parallelism yet (each rank "
                                "would keep priorities of its own)");
  if (!shuffle)
    return Status::error(flag + " and --no-shuffle exclude each other (the sampler decides "
                                "the order)");
  if (rangeTest)
    return Status::error(flag + " and the LR range test exclude each other");
  if (std::isnan(o.beta))
    o.beta = 0.4;
  if (std::isnan(o.eps))
    o.eps = 1e-6;
  if (std::isnan(o.alpha))
    o.alpha = o.kind == SamplerKind::MetropolisHastings ? 1.0 : 0.6;
  if (o.beta > 1)
    return Status::error("--priority-beta must be in [0, 1]");
  if (!(o.eps > 0))
    return Status::error("--priority-eps must be > 0");
  return Status();
}

SumTree::SumTree(int64_t slots) {
  leaves = 1;
  while (leaves < slots)
    leaves *= 2;
  sums.assign(2 * leaves, 0.0);
  mins.assign(2 * leaves, std::numeric_limits<double>::infinity());
}

void SumTree::set(int64_t slot, double value) {
  int64_t i = leaves + slot;
  sums[i] = value;
  mins[i] = value;
  for (i /= 2; i >= 1; i /= 2) {
    sums[i] = sums[2 * i] + sums[2 * i + 1];
    mins[i] = std::min(mins[2 * i], mins[2 * i + 1]);
  }
}

int64_t SumTree::find(double u) const {
  int64_t i = 1;
  while (i < leaves) {
    // A left subtree whose sum rounding left at u or below: go right,
    // unless the right one is empty.
    if (u < sums[2 * i] || sums[2 * i + 1] == 0) {
      i = 2 * i;
    } else {
      u -= sums[2 * i];
      i = 2 * i + 1;
    }
  }
  return i - leaves;
}

PrioritySampler::PrioritySampler(const SamplerOptions &options, int64_t samples, int64_t batch,
                                 uint64_t seed)
    : opts(options), samples(samples), batch(batch), rng(seed ^ 0xA24BAED4963EE407ull),
      tree(samples), untrained(samples), untrainedAt(samples) {
  if (std::isnan(opts.alpha))
    opts.alpha = opts.kind == SamplerKind::MetropolisHastings ? 1.0 : 0.6;
  for (int64_t i = 0; i < samples; ++i)
    untrained[i] = untrainedAt[i] = i;
}

double PrioritySampler::priorityOf(int64_t sample) const {
  return untrainedAt[sample] >= 0 ? maxPriority : tree.get(sample);
}

void PrioritySampler::update(int64_t sample, double priority) {
  if (int64_t at = untrainedAt[sample]; at >= 0) {
    // Swap-remove from the untrained block.
    const int64_t last = untrained.back();
    untrained[at] = last;
    untrainedAt[last] = at;
    untrained.pop_back();
    untrainedAt[sample] = -1;
  }
  tree.set(sample, priority);
  maxPriority = std::max(maxPriority, priority);
}

void PrioritySampler::applyUpTo(int64_t seq) {
  while (!drawn.empty() && drawn.front().seq <= seq) {
    const Drawn &d = drawn.front();
    for (size_t r = 0; r < d.rows.size(); ++r)
      if (std::isfinite(d.losses[r]) && d.losses[r] >= 0)
        update(d.rows[r], std::pow(static_cast<double>(d.losses[r]) + opts.eps, opts.alpha));
    drawn.pop_front();
  }
}

int64_t PrioritySampler::drawOne() {
  const double block = maxPriority * static_cast<double>(untrained.size());
  const double u = std::uniform_real_distribution<double>(0.0, block + tree.total())(rng);
  if (u < block || tree.total() == 0) {
    const auto k = static_cast<int64_t>(u / maxPriority);
    return untrained[std::min<int64_t>(k, static_cast<int64_t>(untrained.size()) - 1)];
  }
  return tree.find(u - block);
}

void PrioritySampler::drawGroup(int64_t seq, int64_t count, double beta, int64_t *rows,
                                float *weights) {
  applyUpTo(seq - 2);
  for (int64_t k = 0; k < count; ++k)
    drawBatch(seq + k, beta, rows + k * batch, weights + k * batch);
}

void PrioritySampler::drawBatch(int64_t seq, double beta, int64_t *rows, float *weights) {
  if (opts.kind == SamplerKind::MetropolisHastings) {
    if (chain.empty()) {
      chain.resize(batch);
      for (int64_t &c : chain)
        c = std::uniform_int_distribution<int64_t>(0, samples - 1)(rng);
    } else {
      for (int64_t &c : chain) {
        const int64_t proposal = std::uniform_int_distribution<int64_t>(0, samples - 1)(rng);
        const double accept = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        if (accept * priorityOf(c) < priorityOf(proposal))
          c = proposal;
      }
    }
    std::copy(chain.begin(), chain.end(), rows);
  } else {
    for (int64_t r = 0; r < batch; ++r)
      rows[r] = drawOne();
  }
  // (p_i / p_min)^-beta: at most 1, the rarest sample's weight.
  const double pMin = std::min(tree.minimum(),
                               untrained.empty() ? std::numeric_limits<double>::infinity()
                                                 : maxPriority);
  for (int64_t r = 0; r < batch; ++r)
    weights[r] = static_cast<float>(std::pow(priorityOf(rows[r]) / pMin, -beta));
  drawn.push_back({seq, std::vector<int64_t>(rows, rows + batch),
                   std::vector<float>(batch, std::numeric_limits<float>::quiet_NaN())});
}

void PrioritySampler::record(int64_t seq, const float *losses) {
  for (Drawn &d : drawn)
    if (d.seq == seq)
      std::copy(losses, losses + batch, d.losses.begin());
}

double PrioritySampler::betaAt(int64_t step, int64_t total) const {
  if (total <= 1)
    return 1.0;
  const double t = std::min(1.0, static_cast<double>(step) / static_cast<double>(total - 1));
  return opts.beta + (1.0 - opts.beta) * t;
}

std::vector<HostTensor> PrioritySampler::checkpointTensors() const {
  return {{"sampler.priority", true, samples},
          {"sampler.untrained", false, samples},
          {"sampler.pending_rows", false, 2 * batch},
          {"sampler.pending_losses", true, 2 * batch},
          {"sampler.chain", false, batch}};
}

void PrioritySampler::save(std::map<std::string, std::vector<char>> &tensors,
                           std::map<std::string, std::string> &manifest) const {
  // Untrained samples and unknown losses are -1: a checkpoint holds finite
  // floats only, and priorities and losses are >= 0.
  std::vector<double> priority(samples);
  for (int64_t i = 0; i < samples; ++i)
    priority[i] = untrainedAt[i] >= 0 ? -1.0 : tree.get(i);
  std::vector<int64_t> order(untrained);
  order.resize(samples, -1);
  std::vector<int64_t> rows(2 * batch, -1);
  std::vector<double> losses(2 * batch, -1.0);
  std::string seqs;
  size_t k = 0;
  for (const Drawn &d : drawn) {
    if (k >= 2)
      break;
    seqs += (k ? "," : "") + std::to_string(d.seq);
    for (int64_t r = 0; r < batch; ++r) {
      rows[k * batch + r] = d.rows[r];
      losses[k * batch + r] = std::isfinite(d.losses[r]) ? d.losses[r] : -1.0;
    }
    ++k;
  }
  std::vector<int64_t> chainRows(chain);
  chainRows.resize(batch, -1);
  tensors["sampler.priority"] = bytesOf(priority);
  tensors["sampler.untrained"] = bytesOf(order);
  tensors["sampler.pending_rows"] = bytesOf(rows);
  tensors["sampler.pending_losses"] = bytesOf(losses);
  tensors["sampler.chain"] = bytesOf(chainRows);
  std::ostringstream state;
  state << rng;
  manifest["sampler"] = samplerName(opts.kind);
  manifest["sampler_alpha"] = exactNumber(opts.alpha);
  manifest["sampler_eps"] = exactNumber(opts.eps);
  manifest["sampler_beta"] = exactNumber(opts.beta);
  manifest["sampler_rng"] = state.str();
  manifest["sampler_max_priority"] = exactNumber(maxPriority);
  manifest["sampler_pending"] = seqs;
}

Status PrioritySampler::restore(const std::map<std::string, std::vector<char>> &tensors,
                                const std::map<std::string, std::string> &manifest) {
  auto field = [&](const char *key) {
    auto it = manifest.find(key);
    return it == manifest.end() ? std::string() : it->second;
  };
  if (field("sampler") != samplerName(opts.kind) || field("sampler_alpha") != exactNumber(opts.alpha) ||
      field("sampler_eps") != exactNumber(opts.eps) || field("sampler_beta") != exactNumber(opts.beta))
    return Status::error("the checkpoint was written with --sampler=" + field("sampler") +
                         " (alpha " + field("sampler_alpha") + ", eps " + field("sampler_eps") +
                         ", beta " + field("sampler_beta") + "); resume with the same sampler "
                         "flags");
  std::vector<double> priority = valuesOf<double>(tensors.at("sampler.priority"));
  std::vector<int64_t> order = valuesOf<int64_t>(tensors.at("sampler.untrained"));
  std::vector<int64_t> rows = valuesOf<int64_t>(tensors.at("sampler.pending_rows"));
  std::vector<double> losses = valuesOf<double>(tensors.at("sampler.pending_losses"));
  std::vector<int64_t> chainRows = valuesOf<int64_t>(tensors.at("sampler.chain"));
  auto bad = [](const std::string &what) {
    return Status::error("the checkpoint's sampler state is inconsistent (" + what + ")");
  };
  tree = SumTree(samples);
  untrained.clear();
  std::fill(untrainedAt.begin(), untrainedAt.end(), -1);
  for (int64_t i = 0; i < samples; ++i) {
    if (order[i] < -1 || order[i] >= samples)
      return bad("untrained sample " + std::to_string(order[i]));
    if (order[i] >= 0) {
      if (untrainedAt[order[i]] >= 0 || priority[order[i]] != -1.0)
        return bad("sample " + std::to_string(order[i]));
      untrainedAt[order[i]] = static_cast<int64_t>(untrained.size());
      untrained.push_back(order[i]);
    }
  }
  for (int64_t i = 0; i < samples; ++i) {
    if (untrainedAt[i] >= 0)
      continue;
    if (!(priority[i] > 0))
      return bad("priority of sample " + std::to_string(i));
    tree.set(i, priority[i]);
  }
  std::istringstream state(field("sampler_rng"));
  state >> rng;
  char *end = nullptr;
  const std::string maxText = field("sampler_max_priority");
  maxPriority = std::strtod(maxText.c_str(), &end);
  if (state.fail() || maxText.empty() || *end || !(maxPriority > 0))
    return bad("rng or max priority");
  drawn.clear();
  std::istringstream seqs(field("sampler_pending"));
  std::string seq;
  for (int64_t k = 0; std::getline(seqs, seq, ','); ++k) {
    if (k >= 2)
      return bad("pending batches");
    Drawn d{std::strtoll(seq.c_str(), nullptr, 10), {}, {}};
    for (int64_t r = 0; r < batch; ++r) {
      const int64_t row = rows[k * batch + r];
      if (row < 0 || row >= samples)
        return bad("pending row");
      d.rows.push_back(row);
      d.losses.push_back(losses[k * batch + r] < 0 ? std::numeric_limits<float>::quiet_NaN()
                                                   : static_cast<float>(losses[k * batch + r]));
    }
    drawn.push_back(std::move(d));
  }
  chain.clear();
  for (int64_t row : chainRows) {
    if (row < -1 || row >= samples || (row == -1 && !chain.empty()))
      return bad("chain");
    if (row >= 0)
      chain.push_back(row);
  }
  return Status();
}

Status SampledBatches::open(const SamplerOptions &options, int64_t samples, int64_t size,
                            uint64_t seed, bool resumed) {
  if (options.kind == SamplerKind::Uniform)
    return Status();
  sampler = std::make_unique<PrioritySampler>(options, samples, size, seed);
  batch = size;
  tracePath = options.tracePath;
  if (tracePath.empty())
    return Status();
  if (!resumed)
    TRAINC_RETURN_IF_ERROR(writeFileAtomically(tracePath, "--trace-batches", "", 0));
  return openAppendFile(tracePath, "--trace-batches", trace);
}

Status SampledBatches::drawGroup(int64_t seq, int64_t count, double beta) {
  first = seq;
  group.resize(count * batch);
  weightsOf.resize(count * batch);
  sampler->drawGroup(seq, count, beta, group.data(), weightsOf.data());
  if (!trace.valid())
    return Status();
  std::string lines;
  for (int64_t k = 0; k < count; ++k) {
    lines += "{\"batch\": " + std::to_string(seq + k) + ", \"beta\": " + exactNumber(beta) +
             ", \"rows\": ";
    appendJsonList(lines, rows(seq + k), batch);
    lines += ", \"weights\": ";
    appendJsonList(lines, weights(seq + k), batch);
    lines += "}\n";
  }
  return writeAll(trace, tracePath, lines.data(), lines.size());
}

Status SampledBatches::record(int64_t seq, const float *losses) {
  sampler->record(seq, losses);
  if (!trace.valid())
    return Status();
  std::string line = "{\"batch\": " + std::to_string(seq) + ", \"losses\": ";
  appendJsonList(line, losses, batch);
  line += "}\n";
  return writeAll(trace, tracePath, line.data(), line.size());
}

} // namespace trainc::rt::detail
