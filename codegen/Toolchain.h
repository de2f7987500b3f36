//===- Toolchain.h - building generated programs ---------------*- C++ -*-===//
//
// Drives g++ (CPU target) or nvcc (CUDA target) over a generated source and
// links it with the runtime library of that target.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_CODEGEN_TOOLCHAIN_H
#define TRAINC_CODEGEN_TOOLCHAIN_H

#include "codegen/KernelWriter.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace trainc::codegen {

struct BuildOptions {
  Target target = Target::Cpu;
  /// CUDA architectures, e.g. {"sm_80", "sm_90"}.
  std::vector<std::string> cudaArchs;
  std::string sourcePath;
  std::string outputPath;
  /// Where the compiler's messages go (kept next to the source).
  std::string logPath;
  /// --data-parallel: links the MPI communicator (trainc_rt_mpi) and
  /// libmpi, and on CUDA NCCL's (trainc_rt_nccl, libnccl) where the toolkit
  /// has it (ncclAvailable()).
  bool mpi = false;
};

/// Compiles and links; on failure writes the compiler's messages, with the
/// generated file's path, to `errs`. Warnings are printed too.
bool buildProgram(const BuildOptions &options, llvm::raw_ostream &errs);

/// Whether data-parallel CUDA programs can link NCCL here.
bool ncclAvailable();

/// The command line buildProgram runs, for --verbose and tests.
std::vector<std::string> buildCommand(const BuildOptions &options);

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_TOOLCHAIN_H
