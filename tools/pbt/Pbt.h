//===- Pbt.h - trainc pbt: population-based training -----------*- C++ -*-===//
//
// The driver of `trainc pbt` (PbtOptions.h has its command line): it trains
// a population of members, each a run of a compiled trainer, and at every
// ready point ranks them, copies the best members' checkpoints over the
// worst's and perturbs their hyperparameters (Population.h). Its state is
// RUN/pbt.json, written whole after every change, so that the same command
// run again after a kill continues where the state says; RUN/lineage.jsonl
// holds every ready point and every copy.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TOOLS_PBT_PBT_H
#define TRAINC_TOOLS_PBT_PBT_H

#include <string>
#include <vector>

namespace trainc::pbt {

/// `trainc pbt ARGS`: the exit status (0 done or stopped as asked, 1 an
/// error, 130 stopped by a signal).
int runPbt(const std::vector<std::string> &args);

} // namespace trainc::pbt

#endif // TRAINC_TOOLS_PBT_PBT_H
