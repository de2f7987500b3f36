//===- Threading.cpp - OpenMP and OpenBLAS thread counts ------------------===//

#include "Threading.h"

#include <atomic>
#include <cblas.h>
#include <omp.h>

namespace trainc::cpu {
namespace {

/// What we last told OpenBLAS (0 = never), so that the common case costs an
/// atomic load instead of a call into OpenBLAS per kernel. OpenBLAS's own
/// setting is process-wide, hence a process-wide cache.
std::atomic<int> blasThreads{0};

void setBlasThreads(int count) {
  if (blasThreads.exchange(count) != count)
    openblas_set_num_threads(count);
}

} // namespace

int maxThreads() { return omp_get_max_threads(); }

void syncBlasThreads() { setBlasThreads(maxThreads()); }

void useSingleThreadedBlas() { setBlasThreads(1); }

} // namespace trainc::cpu
