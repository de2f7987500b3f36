//===- UpdateBn.h - batch-norm statistics of averaged weights ---*- C++ -*-===//
//
// Internal to the runtime: torch.optim.swa_utils.update_bn for SWA's
// averaged weights. The average of the weights has no statistics of its
// own: they are recomputed over the training data in file order with the
// compiled batch, as the cumulative average of every batch's statistics
// (BatchNorm with momentum=None, from reset statistics).
//
// The program has no forward in training mode apart from its training
// step, so the pass runs that step on scratch copies of the averaged
// weights (copied again before each batch: the step updates them) and of
// the optimizer state; what it updates is thrown away.
// Before each batch the running statistics are set to 0, so that the step
// writes (1 - momentum) * batch statistic (ParamInfo::statisticMomentum);
// the host reads them back and averages them in double. It costs a
// training step per batch (forward, backward and update), where update_bn
// costs a forward; it runs once per evaluation of the average and once at
// the end.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_UPDATEBN_H
#define TRAINC_RT_COMMON_UPDATEBN_H

#include "TrainChecks.h"
#include "TrainDevice.h"

#include <vector>

namespace trainc::rt::detail {

/// Whether the program keeps batch-norm running statistics.
bool hasRunningStatistics(const Program &program);

/// Writes into the statistics among `params` (device buffers indexed as
/// the program's parameters) their update_bn values for the weights among
/// `params`, over `data` in file order in batches of `batch` (full batches
/// only where the data drops the last). `hypers`: the step's
/// hyperparameters (host values); `seed` keys the dropout masks.
Status updateBatchNormStatistics(const Program &program, RunDevice &device,
                                 const TrainingData &data, int64_t batch,
                                 const std::vector<float> &hypers, uint64_t seed,
                                 const std::vector<void *> &params);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_UPDATEBN_H
