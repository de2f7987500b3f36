//===- Population.h - population-based training's decisions ----*- C++ -*-===//
//
// The part of `trainc pbt` that decides, apart from the processes it runs:
// the hyperparameter spaces, the first draw of each member's values, and at
// every ready point the exploit step (truncation selection: the bottom
// fraction of the members by score copy a member of the top fraction) and
// the explore step (the copied values perturbed by a factor, or drawn again
// from the space). Jaderberg et al. 2017, "Population Based Training of
// Neural Networks", section 3.
//
// Every draw comes from one generator whose state is a single number, saved
// with the driver's state: a resumed driver draws what the uninterrupted one
// drew.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TOOLS_PBT_POPULATION_H
#define TRAINC_TOOLS_PBT_POPULATION_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainc::pbt {

/// How a hyperparameter's values spread: uniform in its logarithm or in
/// itself.
enum class Scale { Log, Linear };

/// One searched hyperparameter: `--hyper NAME=log:LOW,HIGH` or
/// `NAME=lin:LOW,HIGH`. Its value is passed to the trainer as the flag
/// named after it (weight_decay: --weight-decay).
struct HyperSpace {
  std::string name;
  Scale scale = Scale::Log;
  double low = 0, high = 0;

  std::string flag() const;
  /// `value` clipped into [low, high].
  double clip(double value) const;
};

/// A member's values, by hyperparameter name.
using Hypers = std::map<std::string, double>;

/// --exploit truncation:F: the bottom F of the members copy one of the top
/// F, drawn uniformly.
struct ExploitRule {
  double fraction = 0.25;
};

/// --explore perturb:F1,F2,...: every value times one of the factors,
/// drawn uniformly; resample:P: every value drawn again from its space with
/// probability P, else perturbed by 0.8 or 1.25. Values stay in their space.
enum class ExploreKind { Perturb, Resample };
struct ExploreRule {
  ExploreKind kind = ExploreKind::Perturb;
  std::vector<double> factors{0.8, 1.25};
  double probability = 0;
};

/// SplitMix64 (Steele, Lea and Flood 2014): a 64-bit state, saved as one
/// number; the same draws on every machine and standard library.
class Rng {
public:
  explicit Rng(uint64_t seed = 0) : state(seed) {}
  uint64_t next();
  /// Uniform in [0, 1), 53 bits.
  double uniform();
  /// Uniform in [0, n), n > 0.
  uint64_t below(uint64_t n);
  uint64_t saved() const { return state; }

private:
  uint64_t state;
};

/// A value drawn from the space.
double draw(const HyperSpace &space, Rng &rng);
Hypers drawAll(const std::vector<HyperSpace> &spaces, Rng &rng);

/// The explore step on the values a member copied.
Hypers explore(const Hypers &copied, const std::vector<HyperSpace> &spaces,
               const ExploreRule &rule, Rng &rng);

/// One member replaced at a ready point: it takes `parent`'s weights and
/// optimizer state, and `after` (explored from the parent's values).
struct Replacement {
  int member, parent;
  Hypers after;
  /// The member diverged (its trainer's loss became non-finite) rather
  /// than ranking in the bottom fraction.
  bool diverged;
};

/// The exploit and explore steps at a ready point. `scores` are
/// higher-is-better (a loss negated); a NaN score is a member that
/// diverged: it is replaced whatever its rank, and never a parent. Members
/// rank by score, ties by number (the lower first). The bottom
/// max(1, floor(F n)) members (n the members with a score; none if n < 2)
/// and every diverged member copy a member drawn from the top as many.
/// Empty when no member has a score.
std::vector<Replacement> exploitAndExplore(const std::vector<double> &scores,
                                           const std::vector<Hypers> &hypers,
                                           const std::vector<HyperSpace> &spaces,
                                           const ExploitRule &exploit,
                                           const ExploreRule &rule, Rng &rng);

} // namespace trainc::pbt

#endif // TRAINC_TOOLS_PBT_POPULATION_H
