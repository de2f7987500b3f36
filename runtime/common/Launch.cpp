//===- Launch.cpp - how a launcher (mpirun) started this process ----------===//

#include "trainc_rt/launch.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

namespace trainc::rt {

namespace {

/// The first of `variables` that is set, as a number; `fallback` if none.
int firstSet(std::initializer_list<const char *> variables, int fallback) {
  for (const char *variable : variables)
    if (const char *value = std::getenv(variable))
      return std::atoi(value);
  return fallback;
}

} // namespace

Launch launchOf() {
  Launch launch;
  int ranks = firstSet({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}, 0);
  if (ranks <= 0 && (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
                     std::getenv("PMIX_SIZE")))
    ranks = 1; // set, but not a positive number
  launch.ranks = ranks;
  launch.localRank =
      std::max(0, firstSet({"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMIX_LOCAL_RANK"}, 0));
  launch.localRanks =
      std::max(1, firstSet({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMIX_LOCAL_SIZE"}, 1));
  return launch;
}

} // namespace trainc::rt
