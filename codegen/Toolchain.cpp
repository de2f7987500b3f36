//===- Toolchain.cpp - building generated programs ------------------------===//

#include "codegen/Toolchain.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace trainc::codegen;

bool trainc::codegen::ncclAvailable() { return llvm::StringRef(TRAINC_NCCL_LIBRARY) != ""; }

namespace {

/// A library named by its path, as -L and -l (nvcc's `-x cu` would read a
/// bare path as a CUDA source).
void addLibrary(std::vector<std::string> &cmd, llvm::StringRef path) {
  llvm::StringRef dir = path.rsplit('/').first, file = path.rsplit('/').second;
  if (file.consume_front("lib") && (file.consume_back(".so") || file.consume_back(".a"))) {
    cmd.push_back(("-L" + dir).str());
    cmd.push_back(("-l" + file).str());
  } else {
    cmd.push_back(path.str());
  }
}

/// The MPI libraries a data-parallel program links (CMake's list).
void addMpiLibraries(std::vector<std::string> &cmd) {
  llvm::SmallVector<llvm::StringRef> libs;
  llvm::StringRef(TRAINC_MPI_LIBRARIES).split(libs, '|', -1, false);
  for (llvm::StringRef lib : libs)
    addLibrary(cmd, lib);
}

} // namespace

std::vector<std::string> trainc::codegen::buildCommand(const BuildOptions &options) {
  std::string include = std::string("-I") + TRAINC_RUNTIME_INCLUDE_DIR;
  std::string libDir = std::string("-L") + TRAINC_RUNTIME_LIB_DIR;
  // scripts/asan.sh: CPU programs built with AddressSanitizer against a
  // runtime built with it (TRAINC_ASAN_RUNTIME_DIR, its build/lib).
  const char *asanRuntime = std::getenv("TRAINC_ASAN_RUNTIME_DIR");
  const bool asan = options.target == Target::Cpu && asanRuntime && *asanRuntime;
  if (asan)
    libDir = std::string("-L") + asanRuntime;
  if (options.target == Target::Cpu) {
    // -fvect-cost-model=dynamic: -O2's own model vectorizes no loop whose
    // trip count needs a scalar remainder, which is nearly every element
    // loop. -fno-math-errno: sqrtf and the like become instructions that
    // vectorize (nothing reads errno). -lmvec: the vector math behind
    // trainc_expf and its kin (generated.h).
    std::vector<std::string> cmd = {
        "g++", "-std=c++20", "-O2", "-fvect-cost-model=dynamic", "-fno-math-errno", "-fopenmp",
        "-Wall", "-Wextra", include, options.sourcePath, "-o", options.outputPath, libDir};
    if (asan)
      cmd.insert(cmd.begin() + 1, {"-fsanitize=address", "-fno-omit-frame-pointer"});
    if (options.mpi) {
      cmd.push_back("-ltrainc_rt_mpi");
      addMpiLibraries(cmd);
    }
    cmd.insert(cmd.end(),
               {"-ltrainc_rt_cpu", "-ldnnl", "-lopenblas", "-lz", "-lmvec", "-lpthread"});
    return cmd;
  }
  std::vector<std::string> cmd = {std::string(TRAINC_CUDA_ROOT) + "/bin/nvcc",
                                  "-std=c++20", "-O2", "-x", "cu"};
  for (const std::string &arch : options.cudaArchs) {
    std::string number = llvm::StringRef(arch).drop_front(3).str(); // "sm_90" -> "90"
    cmd.push_back("--generate-code=arch=compute_" + number + ",code=" + arch);
  }
  cmd.insert(cmd.end(), {"-Xcompiler=-Wall,-Wextra", include, options.sourcePath, "-o",
                         options.outputPath, libDir});
  if (options.mpi && ncclAvailable()) {
    cmd.insert(cmd.end(), {"-ltrainc_rt_nccl", "-ltrainc_rt_mpi"});
    addLibrary(cmd, TRAINC_NCCL_LIBRARY);
    addMpiLibraries(cmd);
  }
  // OpenBLAS: LAPACK for K-FAC's factor inverses, on the host.
  cmd.insert(cmd.end(),
             {"-ltrainc_rt_cuda", "-lcublasLt", "-lcublas", "-lcudnn", "-lz", "-lopenblas"});
  return cmd;
}

bool trainc::codegen::buildProgram(const BuildOptions &options, llvm::raw_ostream &errs) {
  std::vector<std::string> cmd = buildCommand(options);
  auto program = llvm::sys::findProgramByName(cmd[0]);
  if (!program) {
    errs << "error: cannot find the compiler '" << cmd[0] << "'\n";
    return false;
  }
  llvm::SmallVector<llvm::StringRef> args(cmd.begin(), cmd.end());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(options.logPath),
                                                llvm::StringRef(options.logPath)};
  // The child's output is redirected without truncation: a log left by an
  // earlier build (or whatever else has the name) goes first, so that only
  // this build's messages are reported.
  if (std::error_code ec = llvm::sys::fs::remove(options.logPath)) {
    errs << "error: cannot replace the compiler log " << options.logPath << ": "
         << ec.message() << "\n";
    return false;
  }
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*program, args, std::nullopt, redirects, 0, 0, &message);
  auto log = llvm::MemoryBuffer::getFile(options.logPath);
  llvm::StringRef text = log ? (*log)->getBuffer() : "";
  if (rc != 0) {
    errs << "error: compiling the generated " << options.sourcePath << " failed"
         << (message.empty() ? "" : ": " + message) << "\n"
         << text;
    errs << "(compiler output kept in " << options.logPath << ")\n";
    return false;
  }
  if (!text.trim().empty())
    errs << "warning: the compiler reported on " << options.sourcePath << ":\n" << text;
  return true;
}
