//===- AsyncRanks.cpp - asynchronous SGD over a parameter server ----------===//

#include "AsyncRanks.h"

#include "ProgramSupport.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <thread>

namespace trainc::rt::detail {

namespace {
/// A finished rank's count: never the slowest.
constexpr int64_t kDone = std::numeric_limits<int64_t>::max() / 2;
} // namespace

AsyncRanks::AsyncRanks(Context &context, const Program &program,
                       const std::vector<void *> &params, Communicator &ranks,
                       int64_t stalenessBound, double timeoutSeconds)
    : context(context), params(params), ranks(ranks), bound(stalenessBound),
      timeout(timeoutSeconds) {
  for (int i = 0; i < program.numParams; ++i) {
    const ParamInfo &p = program.params[i];
    if (p.constant || p.tensor.dtype != DType::F32)
      continue;
    const int64_t count = static_cast<int64_t>(tensorBytes(p.tensor) / 4);
    spans.push_back({i, total, count});
    total += count;
  }
  kept.resize(total);
  now.resize(total);
}

Status AsyncRanks::readParams(std::vector<float> &host) {
  for (const Span &s : spans)
    TRAINC_RETURN_IF_ERROR(
        context.copyToHost(host.data() + s.offset, params[s.param], s.count * 4));
  return Status();
}

Status AsyncRanks::writeParams(const std::vector<float> &host) {
  for (const Span &s : spans)
    TRAINC_RETURN_IF_ERROR(
        context.copyToDevice(params[s.param], host.data() + s.offset, s.count * 4));
  return context.synchronize();
}

Status AsyncRanks::open() {
  TRAINC_RETURN_IF_ERROR(ranks.openParameterServer(total, server));
  if (ranks.rank() == 0) {
    TRAINC_RETURN_IF_ERROR(readParams(kept));
    TRAINC_RETURN_IF_ERROR(server->set(kept.data(), total));
  }
  // No rank reads the server before rank 0 has set it.
  double barrier = 0;
  return ranks.allReduceSum(&barrier, 1);
}

Status AsyncRanks::pull(int64_t step) {
  if (bound > 0) {
    using Clock = std::chrono::steady_clock;
    const auto began = Clock::now();
    while (true) {
      TRAINC_RETURN_IF_ERROR(server->progress(counts));
      int64_t slowest = kDone;
      for (int r = 0; r < static_cast<int>(counts.size()); ++r)
        if (r != ranks.rank())
          slowest = std::min(slowest, counts[r]);
      if (step - 1 - slowest < bound)
        break;
      const double seconds = std::chrono::duration<double>(Clock::now() - began).count();
      if (timeout > 0 && seconds > timeout)
        return Status::error("step " + std::to_string(step) + " waited " +
                             std::to_string(static_cast<int>(seconds)) + " s for a rank " +
                             std::to_string(bound) + " steps behind (--staleness-bound); it "
                             "stopped answering (--comm-timeout)");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    waited += std::chrono::duration<double>(Clock::now() - began).count();
  }
  TRAINC_RETURN_IF_ERROR(server->get(kept.data(), 0, total));
  return writeParams(kept);
}

Status AsyncRanks::push(int64_t step) {
  TRAINC_RETURN_IF_ERROR(context.synchronize());
  TRAINC_RETURN_IF_ERROR(readParams(now));
  for (int64_t i = 0; i < total; ++i)
    now[i] -= kept[i];
  TRAINC_RETURN_IF_ERROR(server->add(now.data(), 0, total));
  return server->setProgress(step);
}

Status AsyncRanks::adopt() {
  TRAINC_RETURN_IF_ERROR(context.synchronize());
  TRAINC_RETURN_IF_ERROR(server->get(kept.data(), 0, total));
  return writeParams(kept);
}

Status AsyncRanks::finish() {
  TRAINC_RETURN_IF_ERROR(server->setProgress(kDone));
  double barrier = 0;
  TRAINC_RETURN_IF_ERROR(ranks.allReduceSum(&barrier, 1));
  // Rank 0 takes the final parameters before the server goes.
  if (ranks.rank() == 0)
    TRAINC_RETURN_IF_ERROR(adopt());
  TRAINC_RETURN_IF_ERROR(ranks.allReduceSum(&barrier, 1));
  return server->close();
}

} // namespace trainc::rt::detail
