//===- launch.h - how a launcher (mpirun) started this process ---*- C++ -*-===//
//
// Read from the environment the launcher sets (Open MPI's OMPI_COMM_WORLD_*,
// MPICH's PMI_* and MPI_LOCAL*, PMIx's PMIX_*), before MPI starts: the
// trainer refuses a program compiled without --data-parallel under
// mpirun, each rank of a machine takes its own GPU, and the CPU target
// decides whether a summing thread would take a core from its kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_LAUNCH_H
#define TRAINC_RT_LAUNCH_H

namespace trainc::rt {

struct Launch {
  /// Processes of the run; 0 when no launcher started this one.
  int ranks = 0;
  /// This process's index among those of its machine, and their number.
  int localRank = 0;
  int localRanks = 1;
};

Launch launchOf();

} // namespace trainc::rt

#endif // TRAINC_RT_LAUNCH_H
