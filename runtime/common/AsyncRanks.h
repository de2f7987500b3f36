//===- AsyncRanks.h - asynchronous SGD over a parameter server -*- C++ -*-===//
//
// Internal to the runtime: a data-parallel trainer's --async under mpirun.
// Rank 0 holds the parameters in an MPI window (ParameterServer). Every rank
// trains its share of each epoch without waiting for the others: before a
// step it reads the server's parameters, runs the compiled step on them
// (its own optimizer state, no gradient sums), and adds its change to the
// server (Dean et al. 2012's Downpour SGD, with each worker's own optimizer
// state). --staleness-bound K makes a rank wait while it is K steps ahead
// of the slowest rank still training (the stale synchronous parallel model,
// Ho et al. 2013). Rank 0 evaluates, checkpoints and exports the server's
// parameters, read without waiting for any rank (a stopped rank holds
// rank 0 up only under --staleness-bound).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_ASYNCRANKS_H
#define TRAINC_RT_COMMON_ASYNCRANKS_H

#include "trainc_rt/device.h"
#include "trainc_rt/program.h"

#include <memory>
#include <vector>

namespace trainc::rt::detail {

class AsyncRanks {
public:
  /// `params`: the device buffers of `program`'s parameters; the f32 ones
  /// that are not constants are served.
  AsyncRanks(Context &context, const Program &program, const std::vector<void *> &params,
             Communicator &ranks, int64_t stalenessBound, double timeoutSeconds);

  /// Every rank: opens the server, which rank 0 sets to its parameters
  /// (initial or resumed).
  Status open();
  /// Before this rank's step `step` (1-based): the wait the staleness
  /// bound asks for, then the server's parameters into the device's, kept.
  Status pull(int64_t step);
  /// After the step: waits for it, adds the parameters' change since pull
  /// to the server and counts the step.
  Status push(int64_t step);
  /// The server's parameters into the device's (rank 0, before an
  /// evaluation, a checkpoint and the end), read as pull reads them: each
  /// value whole, other ranks' adds landing between values. At the end no
  /// rank adds any more.
  Status adopt();
  /// This rank trains no more: it holds no rank back, waits for the others
  /// and frees the server with them.
  Status finish();
  double secondsWaiting() const { return waited; }
  int64_t servedValues() const { return total; }

private:
  Status readParams(std::vector<float> &host);
  Status writeParams(const std::vector<float> &host);

  struct Span {
    int param;
    int64_t offset, count;
  };
  Context &context;
  const std::vector<void *> &params;
  Communicator &ranks;
  const int64_t bound;
  const double timeout;
  std::vector<Span> spans;
  int64_t total = 0;
  std::unique_ptr<ParameterServer> server;
  std::vector<float> kept, now;
  std::vector<int64_t> counts;
  double waited = 0;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_ASYNCRANKS_H
