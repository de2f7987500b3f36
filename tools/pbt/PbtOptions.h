//===- PbtOptions.h - the command line of trainc pbt -----------*- C++ -*-===//
//
//   trainc pbt --population N --ready-every STEPS --hyper NAME=log:LOW,HIGH ...
//              [--exploit truncation:F] [--explore perturb:F1,F2|resample:P]
//              [--metric eval_accuracy|eval_loss|eval_topK] [--seed S]
//              [--parallel P | --hosts H:S,... [--mpirun-arg WORD]...]
//              [--stop-after-rounds R] [--export MODEL.onnx]
//              --dir RUN -- TRAINER [TRAINER FLAGS...]
//
// The flags before `--` are the driver's; what follows is the trainer's
// command line, which every member runs with its own checkpoint folder, log
// and hyperparameter flags added. Flags the driver sets itself are refused
// in it, each with the reason.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TOOLS_PBT_PBTOPTIONS_H
#define TRAINC_TOOLS_PBT_PBTOPTIONS_H

#include "Population.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainc::pbt {

/// The held-out metric members are ranked by: the trainer's log key, and
/// whether lower is better (eval_loss).
struct Metric {
  std::string key = "eval_accuracy";
  bool lowerIsBetter = false;
};

struct Options {
  int population = 0;
  int64_t readyEvery = 0;
  std::vector<HyperSpace> hypers;
  ExploitRule exploit;
  ExploreRule explore;
  Metric metric;
  uint64_t seed = 0;
  int parallel = 1;
  /// --hosts H:S,...: each member runs as `mpirun -np 1 --host H` on a host
  /// with a free slot (S slots each; --parallel is their sum), with the
  /// --mpirun-arg words before the trainer's command.
  std::vector<std::pair<std::string, int>> hosts;
  std::vector<std::string> mpirunArgs;
  /// Ready points to reach in this invocation (0: all); a rerun goes on.
  int64_t stopAfterRounds = 0;
  std::string exportPath;
  std::string dir;
  /// The trainer's command line: the program, then its flags.
  std::vector<std::string> trainer;
  /// --help: print the usage and do nothing else.
  bool help = false;

  /// What fixes the run's course, compared with the saved state on a rerun
  /// (--parallel, --stop-after-rounds and --export may change between
  /// invocations; the result does not depend on them).
  nlohmann::json identity() const;
};

extern const char *const kPbtUsage;

/// Parses `trainc pbt`'s arguments (those after "pbt"). An error names the
/// flag and what it needs.
std::optional<Options> parseOptions(const std::vector<std::string> &args, std::string &error);

} // namespace trainc::pbt

#endif // TRAINC_TOOLS_PBT_PBTOPTIONS_H
