//===- PipelineStageTest.cpp - the 1F1B schedule of a pipeline stage ------===//
//
// PipelineStage with a recording communicator and step functions that log
// what runs: the order of forwards and backwards (1F1B), the transfers with
// their peers and tags, the arenas and the waits before an arena is reused.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "common/PipelineStage.h"

#include <algorithm>
#include <string>
#include <vector>

namespace trainc::test {
namespace {

using rt::detail::PipelineStage;
using rt::detail::StagePlace;

/// What ran, in order: "F2" (forward part of micro-batch 2), "B2", "U2" (a
/// backward that updates: the group's last), "send 1:0 -> 2", "recv g 2:0 <- 2",
/// "wait 5", "done 2".
std::vector<std::string> events;

int64_t microBatchOf(const rt::TrainArgs &args) {
  return static_cast<int64_t>(args.hostHypers[0][0]);
}

Status links(rt::Context &, const rt::TrainArgs &args) {
  for (int i = 0; i < 4; ++i)
    args.links[i] = args.arena + 64 * i;
  return Status();
}
Status forwardPart(rt::Context &, const rt::TrainArgs &args) {
  events.push_back("F" + std::to_string(microBatchOf(args)));
  return Status();
}
Status backwardPart(rt::Context &, const rt::TrainArgs &args) {
  events.push_back("B" + std::to_string(microBatchOf(args)));
  return Status();
}
Status updatingBackwardPart(rt::Context &, const rt::TrainArgs &args) {
  events.push_back("U" + std::to_string(microBatchOf(args)));
  return Status();
}

class RecordingRanks final : public rt::Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 3; }
  Status allReduceSum(float *, int64_t) override { return Status(); }
  Status allReduceSum(double *, int64_t) override { return Status(); }
  Status finish() override { return Status(); }
  Status startTransfer(bool send, void *data, int64_t bytes, int peer, int tag,
                       int64_t &request) override {
    EXPECT_EQ(bytes, 64);
    EXPECT_NE(data, nullptr);
    events.push_back(std::string(send ? "send " : "recv ") + ((tag & 1) ? "g " : "") +
                     std::to_string(tag >> 1) + (send ? " -> " : " <- ") +
                     std::to_string(peer));
    request = next++;
    if (send)
      arenas.push_back(static_cast<char *>(data));
    return Status();
  }
  Status waitTransfer(int64_t request) override {
    events.push_back("wait " + std::to_string(request));
    if (!std::count(waitedFor.begin(), waitedFor.end(), request))
      waitedFor.push_back(request);
    else
      ADD_FAILURE() << "transfer " << request << " waited for twice";
    return Status();
  }
  int64_t next = 0;
  std::vector<int64_t> waitedFor;
  std::vector<char *> arenas;
};

/// A middle stage's links: the activation from stage `place.stage - 1` and
/// to `+ 1`, their gradients back (as the compiler orders them: forward
/// receive, forward send, backward receive, backward send).
const rt::PipelineLink kMiddleLinks[] = {
    {.tensor = "a", .send = false, .gradient = false, .peer = 0, .slot = 0,
     .dtype = rt::DType::F32, .bytes = 64},
    {.tensor = "b", .send = true, .gradient = false, .peer = 2, .slot = 0,
     .dtype = rt::DType::F32, .bytes = 64},
    {.tensor = "b", .send = false, .gradient = true, .peer = 2, .slot = 0,
     .dtype = rt::DType::F32, .bytes = 64},
    {.tensor = "a", .send = true, .gradient = true, .peer = 0, .slot = 0,
     .dtype = rt::DType::F32, .bytes = 64},
};

rt::TrainStep stepOf(bool last) {
  rt::TrainStep train{};
  train.numHypers = 1;
  train.step = forwardPart;
  train.accumulate = forwardPart;
  train.stepLinks = links;
  train.accumulateLinks = links;
  train.numLinks = 4;
  train.links = kMiddleLinks;
  if (!last) {
    train.stepBackward = updatingBackwardPart;
    train.accumulateBackward = backwardPart;
  }
  return train;
}

/// Runs a group of `count` micro-batches from launch `first` on stage
/// `stage` of 3; returns the events of the forwards and backwards alone.
std::vector<std::string> runGroup(PipelineStage &pipe, int64_t first, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    const int64_t n = first + i;
    const float value = static_cast<float>(n);
    const float *hyper[] = {&value};
    rt::TrainArgs args{};
    args.hostHypers = hyper;
    EXPECT_OK(pipe.run(n, args, i + 1 == count, i, count, [](int64_t done) {
      events.push_back("done " + std::to_string(done));
      return Status();
    }));
  }
  std::vector<std::string> parts;
  for (const std::string &e : events)
    if (e[0] == 'F' || e[0] == 'B' || e[0] == 'U')
      parts.push_back(e);
  return parts;
}

TEST(PipelineStage, FirstStageWarmsUpThenAlternates) {
  events.clear();
  auto context = makeContext();
  RecordingRanks ranks;
  rt::TrainStep train = stepOf(false);
  PipelineStage pipe(train, StagePlace{3, 0, 1, 0}, ranks, *context, 1024);
  EXPECT_EQ(PipelineStage::inFlight(StagePlace{3, 0, 1, 0}, 4), 3);
  EXPECT_OK(pipe.init(4));
  // Stage 0 of 3: two warm-up forwards, then one forward and one backward,
  // then the rest; the last micro-batch's backward updates.
  EXPECT_EQ(runGroup(pipe, 0, 4),
            (std::vector<std::string>{"F0", "F1", "F2", "B0", "F3", "B1", "B2", "U3"}));
  // A short group (2 micro-batches) warms up with one forward only.
  events.clear();
  EXPECT_EQ(runGroup(pipe, 4, 2), (std::vector<std::string>{"F4", "F5", "B4", "U5"}));
  EXPECT_OK(pipe.drain());
}

TEST(PipelineStage, MiddleStageMovesEveryTensorWithItsNeighbours) {
  events.clear();
  auto context = makeContext();
  RecordingRanks ranks;
  rt::TrainStep train = stepOf(false);
  PipelineStage pipe(train, StagePlace{3, 1, 1, 0}, ranks, *context, 1024);
  EXPECT_OK(pipe.init(4));
  EXPECT_EQ(runGroup(pipe, 0, 4),
            (std::vector<std::string>{"F0", "F1", "B0", "F2", "B1", "F3", "B2", "U3"}));
  // Micro-batch 0: its activation from stage 0, the forward, the send to
  // stage 2; later the gradient from stage 2, the backward, the gradient to
  // stage 0, and the launch is done.
  auto at = [&](const std::string &e) {
    return std::find(events.begin(), events.end(), e) - events.begin();
  };
  const std::vector<std::string> first(events.begin(), events.begin() + 4);
  EXPECT_EQ(first, (std::vector<std::string>{"recv 0 <- 0", "wait 0", "F0", "send 0 -> 2"}));
  EXPECT_LT(at("recv g 0 <- 2"), at("B0"));
  EXPECT_EQ(events[at("B0") + 1], "send g 0 -> 0");
  EXPECT_EQ(events[at("B0") + 2], "done 0");
  EXPECT_EQ(std::count(events.begin(), events.end(), "send 0 -> 2"), 4);
  EXPECT_EQ(std::count(events.begin(), events.end(), "send g 0 -> 0"), 4);
  // Two arenas (stage 1 of 3 keeps 2 micro-batches in flight), used in turn:
  // micro-batch 2 reuses micro-batch 0's, after waiting for the two sends
  // from it (requests 1 and 5: F0's activation, B0's gradient).
  ASSERT_EQ(ranks.arenas.size(), 8u);
  EXPECT_NE(ranks.arenas[0], ranks.arenas[1]); // F0's and F1's activations
  EXPECT_EQ(ranks.arenas[0], ranks.arenas[3]); // F0's and F2's
  EXPECT_LT(at("wait 1"), at("F2"));
  EXPECT_LT(at("wait 5"), at("F2"));
  EXPECT_GT(at("wait 3"), at("F2")); // F1's send: not before its arena is reused
  EXPECT_OK(pipe.drain());
  // Every transfer is waited for once by the end (receives at once, sends
  // before their arena is reused or at the drain).
  EXPECT_EQ(static_cast<int64_t>(ranks.waitedFor.size()), ranks.next);
}

TEST(PipelineStage, LastStageRunsEachMicroBatchWhole) {
  events.clear();
  auto context = makeContext();
  RecordingRanks ranks;
  rt::TrainStep train = stepOf(true);
  PipelineStage pipe(train, StagePlace{3, 2, 1, 0}, ranks, *context, 1024);
  EXPECT_EQ(PipelineStage::inFlight(StagePlace{3, 2, 1, 0}, 4), 1);
  EXPECT_OK(pipe.init(4));
  EXPECT_EQ(runGroup(pipe, 0, 3), (std::vector<std::string>{"F0", "F1", "F2"}));
  // Its step is forward and backward at once: the gradient goes back right
  // after it, before the next micro-batch's activation arrives.
  const std::vector<std::string> first(events.begin(), events.begin() + 6);
  EXPECT_EQ(first, (std::vector<std::string>{"recv 0 <- 0", "wait 0", "F0", "send 0 -> 2",
                                             "send g 0 -> 0", "done 0"}));
  EXPECT_OK(pipe.drain());
}

} // namespace
} // namespace trainc::test
