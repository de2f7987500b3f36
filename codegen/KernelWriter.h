//===- KernelWriter.h - generated kernels for both targets -----*- C++ -*-===//
//
// A generated kernel is an element function (`<name>_body(i, ...)`, shared by
// both targets) plus a launcher: an OpenMP loop on the CPU, a __global__
// kernel and its launch on CUDA. The emitter hands over the body text; the
// writer names the kernel (`k07_add_relu`), wraps it, and keeps the text.
// No MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_CODEGEN_KERNELWRITER_H
#define TRAINC_CODEGEN_KERNELWRITER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainc::codegen {

enum class Target { Cpu, Cuda };

struct KernelParam {
  /// C++ element type ("float", "int64_t", ...).
  std::string type;
  std::string name;
  bool output = false;
};

class KernelWriter {
public:
  explicit KernelWriter(Target target) : target(target) {}

  /// Adds a kernel computing elements [0, count) with `body`, which reads the
  /// element index as `i`. `what` names what it does (add_relu, transpose);
  /// `comment` lines (plain text, without //; names in them are escaped
  /// here) go above it. Returns the launcher's name,
  /// called as `name(ctx, params...)` and returning a Status.
  /// With `mayAlias` the pointers are not declared __restrict__: an output
  /// may be an input too (updates in place; the body must read an element
  /// before it writes it). A kernel identical to one added before (same stem,
  /// parameters, count and body) is not written again: its name is returned.
  /// With `cpuRange`, the CPU target writes instead of the launcher a
  /// function `name_range(const void *env, int64_t begin, int64_t end)` over
  /// elements [begin, end), whose env is a `name_env` struct of the
  /// parameters in order (a trainc::rt::ElementRangeFn, for a GEMM's
  /// epilogue); the CUDA target writes its launcher as usual.
  /// With `innerExtent` > 1 the body takes `int64_t inner` after `i`: the
  /// coordinate of the innermost axis, of that extent (i % innerExtent). The
  /// CPU loop then runs over rows and their elements, handing the body the
  /// element's column as is: a body that reads a bias at `inner` is then a
  /// plain vectorizable loop, where `i % innerExtent` is not (not with
  /// mayAlias).
  /// `elementWork`: what one element's body costs in simple operations (a
  /// reduction's loop: its values), which decides threading (0: one, plus
  /// a transcendental call's cost for each in the body).
  std::string addKernel(llvm::StringRef what, llvm::ArrayRef<std::string> comment,
                        llvm::ArrayRef<KernelParam> params, int64_t count,
                        llvm::StringRef body, bool mayAlias = false, bool cpuRange = false,
                        int64_t innerExtent = 1, int64_t elementWork = 0);

  /// Adds one kernel that runs `body` over several tensors at once (as
  /// PyTorch's multi_tensor_apply for its fused optimizers): `perTensor`
  /// parameters are arrays with one pointer per tensor, `shared` ones are the
  /// same for every tensor, and element i of tensor t runs the body with
  /// i and the t-th pointers. `counts` are the tensors' element counts. The
  /// work is cut into chunks of a bounded size that the CPU loop and the
  /// CUDA blocks share out. The body may update in place (no __restrict__).
  /// Returns the launcher's name, called as
  /// `name(ctx, perTensorArrays..., shared...)`.
  std::string addMultiTensorKernel(llvm::StringRef what, llvm::ArrayRef<std::string> comment,
                                   llvm::ArrayRef<KernelParam> perTensor,
                                   llvm::ArrayRef<KernelParam> shared,
                                   llvm::ArrayRef<int64_t> counts, llvm::StringRef body);

  /// The two-pass form of addMultiTensorKernel for updates scaled per
  /// tensor by a ratio of norms (LAMB, LARS). Pass one runs `normBody` on
  /// every element (it may write outputs, and adds squares to the doubles
  /// `sa` and `sb`); each tensor's sums, over its chunks in order (the same
  /// bits on every run, CPU threads or CUDA blocks), give it the float
  /// `factor` that `factorBody` returns from `sa`, `sb` and the shared
  /// parameters; pass two runs `applyBody` on every element with `factor`.
  /// Called as addMultiTensorKernel's launcher is.
  std::string addMultiTensorNormKernel(llvm::StringRef what, llvm::ArrayRef<std::string> comment,
                                       llvm::ArrayRef<KernelParam> perTensor,
                                       llvm::ArrayRef<KernelParam> shared,
                                       llvm::ArrayRef<int64_t> counts, llvm::StringRef normBody,
                                       llvm::StringRef factorBody, llvm::StringRef applyBody);

  const std::string &text() const { return out; }
  /// Distinct kernels written (identical ones are written once).
  int count() const { return counter; }

private:
  /// `kNN_what`, numbering the kernels in order.
  std::string nextName(llvm::StringRef what);
  /// The chunk tables of a multi-tensor kernel (`name_tensor`, `_begin`,
  /// `_end`, and with `firstChunks` `_first`: each tensor's first chunk,
  /// then the count) into `os`; returns the number of chunks and sets
  /// `total` to the elements.
  int64_t writeChunkTables(llvm::raw_ostream &os, llvm::StringRef name,
                           llvm::ArrayRef<int64_t> counts, int64_t &total,
                           bool firstChunks = false);
  /// The CUDA launcher's struct of pointer arrays and the statements that
  /// fill `a` from the launcher's arrays.
  void writeTensorStruct(llvm::raw_ostream &os, llvm::StringRef name,
                         llvm::ArrayRef<KernelParam> perTensor, size_t tensors);
  static std::string fillTensorStruct(llvm::StringRef name,
                                      llvm::ArrayRef<KernelParam> perTensor, size_t tensors);
  /// What addMultiTensorNormKernel's launcher is written from.
  struct NormLaunch {
    std::string name;
    llvm::ArrayRef<KernelParam> perTensor, shared;
    int64_t chunks, total;
    size_t tensors;
    /// The launcher's signature line.
    std::string launcher;
  };
  void writeNormLauncherCpu(llvm::raw_ostream &os, const NormLaunch &launch);
  void writeNormLauncherCuda(llvm::raw_ostream &os, const NormLaunch &launch);

  Target target;
  int counter = 0;
  std::string out;
  /// Kernel name by everything that makes a kernel (name stem, parameters,
  /// element count, aliasing, body): an identical kernel is reused.
  std::map<std::string, std::string> seen;
};

/// Statements declaring `<prefix>d` as the coordinates of linear index
/// `index` in a row-major `shape`, for the axes d where `used[d]` (all axes
/// when `used` is empty). With `inner`, the innermost coordinate is that
/// variable (the caller's; see KernelWriter::addKernel's innerExtent).
std::string decomposeIndex(llvm::ArrayRef<int64_t> shape, llvm::StringRef index,
                           llvm::StringRef prefix, llvm::StringRef indent,
                           llvm::ArrayRef<bool> used = {}, llvm::StringRef inner = "");

/// `base + c0 * s0 + ...` over the coordinates `<prefix>d`, skipping zero
/// strides.
std::string linearIndex(llvm::ArrayRef<int64_t> strides, int64_t base,
                        llvm::StringRef prefix);

/// Row-major strides of a shape.
std::vector<int64_t> rowMajorStrides(llvm::ArrayRef<int64_t> shape);

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_KERNELWRITER_H
