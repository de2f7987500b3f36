//===- PipelineStage.cpp - one stage of a pipeline-parallel run -----------===//

#include "PipelineStage.h"

#include <algorithm>
#include <chrono>

namespace trainc::rt::detail {

int PipelineStage::inFlight(StagePlace place, int64_t microBatches) {
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(place.stages - place.stage, microBatches)));
}

Status PipelineStage::init(int64_t microBatches) {
  const int count = inFlight(place, microBatches);
  arenas.clear();
  for (int a = 0; a < count; ++a) {
    DevicePtr arena(nullptr, DeviceFree{&context});
    TRAINC_RETURN_IF_ERROR(allocateDevice(context, std::max<uint64_t>(arenaBytes, 256), arena));
    arenas.push_back(std::move(arena));
  }
  sending.assign(count, {});
  return world.prepareTransfers();
}

Status PipelineStage::run(int64_t n, const TrainArgs &args, bool last, int64_t index,
                          int64_t count, const std::function<Status(int64_t)> &backwardDone) {
  MicroBatch mb{n, args, last, static_cast<int>(n % static_cast<int64_t>(arenas.size())), {}, {}, {}};
  // The arena's previous micro-batch sent from it: those sends are done
  // before it is overwritten.
  for (int64_t request : sending[mb.arena])
    TRAINC_RETURN_IF_ERROR(world.waitTransfer(request));
  sending[mb.arena].clear();
  mb.args.arena = static_cast<char *>(arenas[mb.arena].get());
  for (int k = 0; k < train.numHypers; ++k)
    mb.hostHypers.push_back(*args.hostHypers[k]);
  for (const float &value : mb.hostHypers)
    mb.hostHyperPtrs.push_back(&value);
  mb.links.assign(train.numLinks, nullptr);
  waiting.push_back(std::move(mb));
  MicroBatch &added = waiting.back();
  added.args.hostHypers = added.hostHyperPtrs.data();
  added.args.links = added.links.data();
  TRAINC_RETURN_IF_ERROR(forward(added));
  // 1F1B: after the warm-up forwards each forward is followed by the
  // oldest backward; the group's last forward by all that remain.
  const int64_t warmUp = std::min<int64_t>(place.stages - place.stage - 1, count - 1);
  while (!waiting.empty() &&
         (index + 1 == count || static_cast<int64_t>(waiting.size()) > warmUp)) {
    MicroBatch oldest = std::move(waiting.front());
    waiting.pop_front();
    oldest.args.hostHypers = oldest.hostHyperPtrs.data();
    oldest.args.links = oldest.links.data();
    TRAINC_RETURN_IF_ERROR(backward(oldest));
    TRAINC_RETURN_IF_ERROR(backwardDone(oldest.n));
  }
  return Status();
}

Status PipelineStage::forward(MicroBatch &mb) {
  Status (*links)(Context &, const TrainArgs &) =
      mb.last ? train.stepLinks : train.accumulateLinks;
  Status (*part)(Context &, const TrainArgs &) = mb.last ? train.step : train.accumulate;
  if (!links || !part)
    return Status::error("this pipeline stage has no step for a micro-batch");
  TRAINC_RETURN_IF_ERROR(links(context, mb.args));
  TRAINC_RETURN_IF_ERROR(receive(mb, /*gradient=*/false));
  TRAINC_RETURN_IF_ERROR(part(context, mb.args));
  TRAINC_RETURN_IF_ERROR(send(mb, /*gradient=*/false));
  // The last stage's step is forward and backward at once.
  if (!(mb.last ? train.stepBackward : train.accumulateBackward))
    TRAINC_RETURN_IF_ERROR(send(mb, /*gradient=*/true));
  return Status();
}

Status PipelineStage::backward(MicroBatch &mb) {
  Status (*part)(Context &, const TrainArgs &) =
      mb.last ? train.stepBackward : train.accumulateBackward;
  if (!part)
    return Status(); // the forward ran the whole step
  TRAINC_RETURN_IF_ERROR(receive(mb, /*gradient=*/true));
  TRAINC_RETURN_IF_ERROR(part(context, mb.args));
  return send(mb, /*gradient=*/true);
}

Status PipelineStage::receive(MicroBatch &mb, bool gradient) {
  std::vector<int64_t> requests;
  bool any = false;
  for (int i = 0; i < train.numLinks; ++i)
    any |= !train.links[i].send && train.links[i].gradient == gradient;
  // The arena's earlier micro-batch may still be running on the device (a
  // GPU's streams): nothing lands in it before that is done.
  if (any)
    TRAINC_RETURN_IF_ERROR(context.synchronize());
  for (int i = 0; i < train.numLinks; ++i) {
    const PipelineLink &link = train.links[i];
    if (link.send || link.gradient != gradient)
      continue;
    int64_t request;
    TRAINC_RETURN_IF_ERROR(world.startTransfer(false, mb.links[i],
                                               static_cast<int64_t>(link.bytes),
                                               place.rankOf(link.peer), tag(link), request));
    requests.push_back(request);
  }
  auto began = std::chrono::steady_clock::now();
  for (int64_t request : requests)
    TRAINC_RETURN_IF_ERROR(world.waitTransfer(request));
  waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return Status();
}

Status PipelineStage::send(MicroBatch &mb, bool gradient) {
  bool any = false;
  for (int i = 0; i < train.numLinks; ++i)
    any |= train.links[i].send && train.links[i].gradient == gradient;
  if (!any)
    return Status();
  // The part's kernels have written what is sent.
  TRAINC_RETURN_IF_ERROR(context.synchronize());
  for (int i = 0; i < train.numLinks; ++i) {
    const PipelineLink &link = train.links[i];
    if (!link.send || link.gradient != gradient)
      continue;
    int64_t request;
    TRAINC_RETURN_IF_ERROR(world.startTransfer(true, mb.links[i],
                                               static_cast<int64_t>(link.bytes),
                                               place.rankOf(link.peer), tag(link), request));
    sending[mb.arena].push_back(request);
  }
  return Status();
}

Status PipelineStage::drain() {
  for (std::vector<int64_t> &requests : sending) {
    for (int64_t request : requests)
      TRAINC_RETURN_IF_ERROR(world.waitTransfer(request));
    requests.clear();
  }
  return Status();
}

} // namespace trainc::rt::detail
