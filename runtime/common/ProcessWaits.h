//===- ProcessWaits.h - how a CPU program's threads wait --------*- C++ -*-===//
//
// Internal to the runtime. What prepareProcess sets before the libraries
// read it (libgomp and OpenBLAS read their environment once, when they are
// loaded, so the process runs itself again with it set):
//
// * GOMP_SPINCOUNT: how long an idle OpenMP thread spins between parallel
//   regions before it sleeps. A sleeping thread costs the next region its
//   wake-up (tens of microseconds on a virtual machine: the zoo MLP's step
//   took 0.21 ms with a short spin and 0.17 ms with libgomp's default on two
//   idle cores); a spinning one holds a core that another process may need
//   (a 2-thread run on a 2-core machine with one other busy process was up
//   to several times slower). So the spin is libgomp's default where no
//   other task is runnable when the program starts, and short otherwise.
// * OPENBLAS_NUM_THREADS=1: OpenBLAS runs single-threaded inside OpenMP's
//   blocks (cpu/Blas.cpp), but Debian's pthread build otherwise starts its
//   own threads when it is loaded, and they spin on sched_yield for about
//   0.1 s: a short run's steps lost a core to them.
//
// bench/README.md ("Waits and threads") has the measurements.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_PROCESSWAITS_H
#define TRAINC_RT_COMMON_PROCESSWAITS_H

#include <optional>
#include <string_view>

namespace trainc::rt::detail {

/// libgomp's own spin count (its default when neither OMP_WAIT_POLICY nor
/// GOMP_SPINCOUNT is set), and the short one for shared cores (libgomp's
/// own value for a machine with more threads than cores).
inline constexpr const char *kLongSpinCount = "300000";
inline constexpr const char *kShortSpinCount = "1000";

/// The `procs_running` count of /proc/stat's text: the tasks runnable on
/// the machine at that moment, the reader included; nullopt if absent.
std::optional<int> procsRunning(std::string_view statText);

/// The spin count for a program that finds `othersRunnable` other tasks
/// runnable (nullopt: unknown, taken as busy).
const char *spinCountFor(std::optional<int> othersRunnable);

/// The state letter of a /proc/PID/task/TID/stat line ('R': runnable);
/// 0 if the text is not one.
char taskState(std::string_view taskStatText);

/// Other tasks runnable now: /proc/stat's count less this process's own
/// runnable threads (OpenBLAS's spinning ones, started before main, and
/// the reader), the fewest of a few reads a millisecond apart (a task that
/// ran for a moment is not counted); nullopt where /proc cannot be read.
std::optional<int> otherRunnableTasks();

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_PROCESSWAITS_H
