//===- ProgramOptions.h - the command line of a compiled program -*- C++ -*-===//
//
// Internal to the runtime. The flags are defined once, with CLI11, in
// ProgramOptions.cpp (the only file that includes the heavy CLI11 header):
// the parser, each value's validator and --help come from those definitions.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_PROGRAMOPTIONS_H
#define TRAINC_RT_COMMON_PROGRAMOPTIONS_H

#include "ProgramSupport.h"

#include <cstdio>
#include <string>
#include <vector>

namespace trainc::rt::detail {

struct Options {
  bool help = false;
  bool info = false;
  bool predict = false;
  /// One forward pass over inputs of exactly the compiled shapes.
  bool runOnce = false;
  std::string dataDir;
  std::string outDir;
  /// --predict --per-sample-loss FILE.npy: each sample's loss (the
  /// selection entry's) as well.
  std::string perSampleLossPath;
  int threads = 0; // 0: keep the default (OMP_NUM_THREADS or all cores).
  TrainOptions train = defaultTrainOptions();
  /// The flags given on the command line ("--epochs", ...), in flag order.
  std::vector<std::string> given;

  static TrainOptions defaultTrainOptions();
};

/// The most training steps a run may have (--steps, and --epochs times the
/// batches per epoch): far beyond any real run, and far from int64 overflow.
inline constexpr int64_t kMaxTrainSteps = 1000000000000LL;

/// Parses `--name VALUE` and `--name=VALUE` forms; every value is checked
/// (integers: decimal digits in the flag's range; numbers: decimal, finite,
/// representable as the f32 the device uses, not rounded to 0).
Status parseArgs(int argc, char **argv, Options &options);

/// The synopsis (usage lines and the program's description) or, with
/// `full`, the whole --help text.
void printUsage(FILE *stream, const char *argv0, const Program &program, bool full);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_PROGRAMOPTIONS_H
