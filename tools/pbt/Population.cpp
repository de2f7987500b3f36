//===- Population.cpp - population-based training's decisions ------------===//

#include "Population.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace trainc::pbt {

std::string HyperSpace::flag() const {
  std::string text = "--" + name;
  std::replace(text.begin() + 2, text.end(), '_', '-');
  return text;
}

double HyperSpace::clip(double value) const { return std::min(high, std::max(low, value)); }

uint64_t Rng::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t n) {
  // Rejection of the top partial range keeps the draw exactly uniform.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do
    x = next();
  while (x >= limit);
  return x % n;
}

double draw(const HyperSpace &space, Rng &rng) {
  const double u = rng.uniform();
  if (space.scale == Scale::Linear)
    return space.clip(space.low + u * (space.high - space.low));
  const double low = std::log(space.low), high = std::log(space.high);
  return space.clip(std::exp(low + u * (high - low)));
}

Hypers drawAll(const std::vector<HyperSpace> &spaces, Rng &rng) {
  Hypers values;
  for (const HyperSpace &space : spaces)
    values[space.name] = draw(space, rng);
  return values;
}

Hypers explore(const Hypers &copied, const std::vector<HyperSpace> &spaces,
               const ExploreRule &rule, Rng &rng) {
  static const std::vector<double> kResampleFactors{0.8, 1.25};
  Hypers values = copied;
  for (const HyperSpace &space : spaces) {
    double &value = values[space.name];
    if (rule.kind == ExploreKind::Resample && rng.uniform() < rule.probability) {
      value = draw(space, rng);
      continue;
    }
    const std::vector<double> &factors =
        rule.kind == ExploreKind::Resample ? kResampleFactors : rule.factors;
    value = space.clip(value * factors[rng.below(factors.size())]);
  }
  return values;
}

std::vector<Replacement> exploitAndExplore(const std::vector<double> &scores,
                                           const std::vector<Hypers> &hypers,
                                           const std::vector<HyperSpace> &spaces,
                                           const ExploitRule &exploit,
                                           const ExploreRule &rule, Rng &rng) {
  std::vector<int> ranked, diverged;
  for (int m = 0; m < static_cast<int>(scores.size()); ++m)
    (std::isnan(scores[m]) ? diverged : ranked).push_back(m);
  if (ranked.empty())
    return {};
  // Best first; equal scores in member order, so the draws do not depend on
  // the sort.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [&](int a, int b) { return scores[a] > scores[b]; });
  const size_t n = ranked.size();
  const size_t cut =
      n < 2 ? 0 : std::max<size_t>(1, static_cast<size_t>(std::floor(exploit.fraction * n)));
  const size_t parents = std::max<size_t>(cut, 1);
  std::vector<std::pair<int, bool>> replaced;
  for (size_t i = n - cut; i < n; ++i)
    replaced.push_back({ranked[i], false});
  for (int m : diverged)
    replaced.push_back({m, true});
  std::sort(replaced.begin(), replaced.end());
  std::vector<Replacement> out;
  for (const auto &[member, wasDiverged] : replaced) {
    const int parent = ranked[rng.below(parents)];
    out.push_back({member, parent, explore(hypers[parent], spaces, rule, rng), wasDiverged});
  }
  return out;
}

} // namespace trainc::pbt
