//===- Profiler.cpp - where a step's time goes (--profile) ----------------===//

#include "Profiler.h"

#include "FileIO.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <numeric>

namespace trainc::rt {

namespace {
int64_t nowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
} // namespace

// The host clock: the CPU target's timing (its calls run on the calling
// thread and are done when they return).
Status Context::startProfiling(const ProfiledCall * /*calls*/, int /*count*/) {
  hostTimed.clear();
  hostStart = nowNanoseconds();
  timing = true;
  return Status();
}

void Context::profileBegin(int id) {
  hostTimed.push_back({id, static_cast<double>(nowNanoseconds() - hostStart) * 1e-9, 0.0});
}

void Context::profileEnd(int id) {
  if (hostTimed.empty() || hostTimed.back().call != id)
    return;
  TimedCall &call = hostTimed.back();
  call.seconds = static_cast<double>(nowNanoseconds() - hostStart) * 1e-9 - call.start;
}

Status Context::stopProfiling(std::vector<TimedCall> &timed) {
  timing = false;
  timed = std::move(hostTimed);
  hostTimed.clear();
  return Status();
}

namespace detail {

namespace {

constexpr int kParts = kNumStepParts;

/// `text` for a terminal: control bytes (a model's names may hold any) as
/// '?', cut at `width` bytes with "...".
std::string printable(const char *text, size_t width) {
  std::string out;
  for (const char *c = text ? text : ""; *c; ++c)
    out += static_cast<unsigned char>(*c) < 0x20 || *c == 0x7f ? '?' : *c;
  if (out.size() > width)
    out = out.substr(0, width - 3) + "...";
  return out;
}

} // namespace

StepProfiler::StepProfiler(const Program &program, Context &context,
                           const ProfileOptions &options, int64_t firstStep, int64_t lastStep)
    : program(program), context(context), options(options), sites(program.numCalls) {
  const int64_t runSteps = std::max<int64_t>(0, lastStep - firstStep + 1);
  warmupRun = std::min(options.warmup, std::max<int64_t>(0, runSteps - 1));
  first = firstStep + warmupRun;
  last = std::min(lastStep, first + options.steps - 1);
}

Status StepProfiler::beginLaunch(int64_t step) {
  const int64_t now = nowNanoseconds();
  if (launches.empty())
    windowStart = now;
  launches.push_back({step, static_cast<double>(now - windowStart) * 1e-9, {}});
  return context.startProfiling(program.calls, program.numCalls);
}

Status StepProfiler::endLaunch() {
  TRAINC_RETURN_IF_ERROR(context.stopProfiling(launches.back().calls));
  for (const TimedCall &call : launches.back().calls)
    if (call.call >= 0 && call.call < program.numCalls) {
      ++sites[call.call].calls;
      sites[call.call].seconds += call.seconds;
    }
  return Status();
}

Status StepProfiler::afterStep(int64_t step) {
  if (!covers(step))
    return Status();
  ++stepsTimed;
  return step == last ? report() : Status();
}

Status StepProfiler::finish() {
  if (reported)
    return Status();
  if (stepsTimed == 0) {
    std::fprintf(stderr, "note: --profile: no step was profiled (the run ended before step "
                         "%lld, the first after the warm-up)\n",
                 static_cast<long long>(first));
    return Status();
  }
  return report();
}

/// The steps' time in their calls' span: from each launch's start to its
/// last call's end (CUDA: on the device's clock).
double StepProfiler::stepSeconds() const {
  double total = 0;
  for (const Launch &launch : launches) {
    double end = 0;
    for (const TimedCall &call : launch.calls)
      end = std::max(end, call.start + call.seconds);
    total += end;
  }
  return total;
}

Status StepProfiler::report() {
  reported = true;
  printReport(stderr);
  if (options.tracePath.empty())
    return Status();
  const std::string json = traceJson();
  TRAINC_RETURN_IF_ERROR(
      writeFileAtomically(options.tracePath, "--profile", json.data(), json.size()));
  std::fprintf(stderr, "profile: the trace of %zu launches is in %s (Perfetto, "
                       "chrome://tracing)\n",
               launches.size(), options.tracePath.c_str());
  return Status();
}

void StepProfiler::printReport(std::FILE *out) const {
  const double steps = static_cast<double>(std::max<int64_t>(stepsTimed, 1));
  const double perStep = stepSeconds() / steps;
  double inCalls = 0, parts[kParts] = {}, flops = 0, flopSeconds = 0;
  for (int id = 0; id < program.numCalls; ++id) {
    const Site &site = sites[id];
    const ProfiledCall &call = program.calls[id];
    inCalls += site.seconds;
    parts[static_cast<int>(call.part)] += site.seconds;
    if (call.flops > 0 && site.calls > 0) {
      flops += call.flops * static_cast<double>(site.calls);
      flopSeconds += site.seconds;
    }
  }
  std::fprintf(out, "profile: steps %lld-%lld on the %s target (%lld timed after %lld of "
                    "warm-up%s)\n",
               static_cast<long long>(first), static_cast<long long>(first + stepsTimed - 1),
               program.target, static_cast<long long>(stepsTimed),
               static_cast<long long>(warmupRun),
               warmupRun < options.warmup ? ", fewer: the run is shorter" : "");
  std::fprintf(out, "  a step: %.3f ms from its first call's start to its last call's end; "
                    "in calls %.3f ms (%.1f%%)\n",
               perStep * 1e3, inCalls / steps * 1e3,
               perStep > 0 ? 100.0 * inCalls / steps / perStep : 0.0);
  std::fprintf(out, " ");
  for (int p = 0; p < kParts; ++p)
    if (parts[p] > 0)
      std::fprintf(out, " %s %.3f ms (%.1f%%)", name(static_cast<StepPart>(p)),
                   parts[p] / steps * 1e3, perStep > 0 ? 100.0 * parts[p] / steps / perStep : 0.0);
  std::fprintf(out, "\n");
  if (flopSeconds > 0)
    std::fprintf(out, "  contractions (GEMM, convolution): %.3f GFLOP a step at %.1f GFLOP/s\n",
                 flops / steps * 1e-9, flops / flopSeconds * 1e-9);
  std::vector<int> order(program.numCalls);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return sites[a].seconds > sites[b].seconds; });
  std::fprintf(out, "   share  total ms  calls   mean us   GFLOP/s     GB/s  part        "
                    "kernel  op  ONNX nodes\n");
  constexpr int kRows = 40;
  int shown = 0;
  double rest = 0;
  int restCount = 0;
  for (int id : order) {
    const Site &site = sites[id];
    if (site.calls == 0)
      continue;
    if (shown == kRows) {
      rest += site.seconds;
      ++restCount;
      continue;
    }
    ++shown;
    const ProfiledCall &call = program.calls[id];
    const double mean = site.seconds / static_cast<double>(site.calls);
    char rate[2][16] = {"-", "-"};
    if (mean > 0 && call.flops > 0)
      std::snprintf(rate[0], sizeof rate[0], "%.1f", call.flops / mean * 1e-9);
    if (mean > 0 && call.flops <= 0 && call.bytes > 0)
      std::snprintf(rate[1], sizeof rate[1], "%.1f", call.bytes / mean * 1e-9);
    std::fprintf(out, "  %5.1f%% %9.3f %6lld %9.1f %9s %8s  %-10s  %s  %s  %s\n",
                 perStep > 0 ? 100.0 * site.seconds / steps / perStep : 0.0, site.seconds * 1e3,
                 static_cast<long long>(site.calls), mean * 1e6, rate[0], rate[1],
                 name(call.part), printable(call.kernel, 60).c_str(),
                 printable(call.op, 60).c_str(), printable(call.nodes, 100).c_str());
  }
  if (restCount > 0)
    std::fprintf(out, "  (%d more call sites: %.1f%% of the step)\n", restCount,
                 perStep > 0 ? 100.0 * rest / steps / perStep : 0.0);
}

/// The Trace Event Format: complete events ("ph": "X", microseconds), the
/// steps on one track and the calls on another (the thread or stream that
/// runs them).
std::string StepProfiler::traceJson() const {
  using nlohmann::json;
  const bool cuda = std::string(program.target) == "cuda";
  json events = json::array();
  auto metadata = [&](const char *name, int tid, const std::string &value) {
    events.push_back({{"name", name}, {"ph", "M"}, {"pid", 1}, {"tid", tid},
                      {"args", {{"name", value}}}});
  };
  metadata("process_name", 0, std::string("trainer (") + program.modelName + ")");
  metadata("thread_name", 1, "steps");
  metadata("thread_name", 2, cuda ? "calls (the compute stream)" : "calls (the step's thread)");
  for (const Launch &launch : launches) {
    double end = 0;
    for (const TimedCall &call : launch.calls) {
      const ProfiledCall &info = program.calls[call.call];
      const double ts = (launch.start + call.start) * 1e6;
      end = std::max(end, call.start + call.seconds);
      json args = {{"op", info.op}, {"nodes", info.nodes}, {"function", info.function},
                   {"step", launch.step}};
      if (info.flops > 0)
        args["gflop"] = info.flops * 1e-9;
      if (info.bytes > 0)
        args["mbytes"] = info.bytes * 1e-6;
      events.push_back({{"name", info.kernel}, {"cat", name(info.part)}, {"ph", "X"},
                        {"pid", 1}, {"tid", 2}, {"ts", ts}, {"dur", call.seconds * 1e6},
                        {"args", std::move(args)}});
    }
    events.push_back({{"name", "step " + std::to_string(launch.step)}, {"cat", "step"},
                      {"ph", "X"}, {"pid", 1}, {"tid", 1}, {"ts", launch.start * 1e6},
                      {"dur", end * 1e6}});
  }
  json trace = {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
  return trace.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

} // namespace detail
} // namespace trainc::rt
