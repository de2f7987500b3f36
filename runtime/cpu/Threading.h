//===- Threading.h - OpenMP and OpenBLAS thread counts ---------*- C++ -*-===//
//
// The CPU target has two thread pools: OpenMP's (our kernels) and OpenBLAS's
// (sgemm; Debian's libopenblas is the pthreads build). One knob governs both:
// OpenMP's thread count (OMP_NUM_THREADS, or --threads which sets it), and
// OpenBLAS follows it. Running both pools at full width at once would
// oversubscribe the cores, so code that calls sgemm from an OpenMP parallel
// region makes OpenBLAS single-threaded for the region.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CPU_THREADING_H
#define TRAINC_RT_CPU_THREADING_H

namespace trainc::cpu {

/// Number of threads the kernels may use (omp_get_max_threads()).
int maxThreads();

/// Makes OpenBLAS use maxThreads() threads. Cheap when nothing changed.
void syncBlasThreads();

/// Makes OpenBLAS run single-threaded in its caller, so that each thread of
/// an OpenMP team can call sgemm on its own problem. Call before the
/// parallel region; the next syncBlasThreads() restores the full count.
void useSingleThreadedBlas();

} // namespace trainc::cpu

#endif // TRAINC_RT_CPU_THREADING_H
