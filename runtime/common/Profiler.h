//===- Profiler.h - where a step's time goes (--profile) --------*- C++ -*-===//
//
// Internal to the runtime: the trainer's --profile. Over a window of
// optimizer steps after a warm-up, the Context times every call of the step
// functions (TRAINC_CALL: the host's steady clock on the CPU, events on
// CUDA); at the window's end the trainer prints one row per call site,
// sorted by time (its kernel, IR op, ONNX nodes and part of the step, calls,
// total and mean time, share of the step, GFLOP/s of a contraction or GB/s
// of anything else), and writes a Chrome trace (the Trace Event Format's
// JSON, which Perfetto and chrome://tracing open) when given a file.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_PROFILER_H
#define TRAINC_RT_COMMON_PROFILER_H

#include "trainc_rt/device.h"
#include "trainc_rt/program.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace trainc::rt::detail {

struct ProfileOptions {
  bool enabled = false;
  /// The Chrome trace's file, or empty.
  std::string tracePath;
  /// Optimizer steps run before the window (the first steps grow scratch
  /// memory, fill caches and, on CUDA, search convolution algorithms) and
  /// the window's steps.
  int64_t warmup = 5;
  int64_t steps = 20;
};

class StepProfiler {
public:
  /// The run trains steps [firstStep, lastStep] (a resumed run starts past
  /// 1). The window starts after `options.warmup` of them, fewer where the
  /// run is shorter (the report says so), and takes at most options.steps.
  StepProfiler(const Program &program, Context &context, const ProfileOptions &options,
               int64_t firstStep, int64_t lastStep);

  /// Whether optimizer step `step` is in the window.
  bool covers(int64_t step) const { return step >= first && step <= last; }
  /// Around one launch of a step function for optimizer step `step` (each
  /// micro-batch's, with gradient accumulation).
  Status beginLaunch(int64_t step);
  Status endLaunch();
  /// After optimizer step `step`: at the window's last step, the report
  /// (stderr) and the trace.
  Status afterStep(int64_t step);
  /// At the end of the run: the report of a window the run ended inside.
  Status finish();

  /// The report of the calls timed so far (the table), to `out`.
  void printReport(std::FILE *out) const;

private:
  struct Site {
    int64_t calls = 0;
    double seconds = 0;
  };
  struct Launch {
    int64_t step;
    double start; // seconds from the window's first launch, on the host
    std::vector<TimedCall> calls;
  };
  Status report();
  std::string traceJson() const;
  double stepSeconds() const;

  const Program &program;
  Context &context;
  ProfileOptions options;
  int64_t first, last, warmupRun;
  std::vector<Site> sites;
  std::vector<Launch> launches;
  int64_t windowStart = 0;  // steady clock, nanoseconds
  int64_t stepsTimed = 0;
  bool reported = false;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_PROFILER_H
