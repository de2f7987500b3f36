//===- KernelWriter.cpp - generated kernels for both targets --------------===//

#include "codegen/KernelWriter.h"

#include "codegen/Escape.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace trainc::codegen;

namespace {

/// Element loops this small stay on one thread: forking costs more.
constexpr int64_t kParallelThreshold = 32768;
constexpr int64_t kBlockSize = 256;
/// A CPU row loop hands out rows in chunks of about this many elements.
constexpr int64_t kCpuRowChunk = 4096;

std::string paramList(llvm::ArrayRef<KernelParam> params, bool restrict) {
  std::string s;
  for (const KernelParam &p : params) {
    s += ", ";
    if (!p.output)
      s += "const ";
    s += p.type + " *" + (restrict ? "__restrict__ " : "") + p.name;
  }
  return s;
}

std::string argList(llvm::ArrayRef<KernelParam> params) {
  std::string s;
  for (const KernelParam &p : params)
    s += ", " + p.name;
  return s;
}

} // namespace

std::string KernelWriter::nextName(llvm::StringRef what) {
  std::string name;
  llvm::raw_string_ostream ns(name);
  ns << "k" << llvm::format_decimal(counter++, 2) << "_" << what;
  ns.flush();
  for (char &c : name)
    if (c == ' ')
      c = '0';
  return name;
}

std::string KernelWriter::addKernel(llvm::StringRef what,
                                    llvm::ArrayRef<std::string> comment,
                                    llvm::ArrayRef<KernelParam> params,
                                    int64_t count, llvm::StringRef body, bool mayAlias,
                                    bool cpuRange, int64_t innerExtent) {
  const bool rows = innerExtent > 1;
  std::string key = what.str() + '\n' + std::to_string(count) + (mayAlias ? " alias" : "") +
                    (cpuRange ? " range" : "") + " inner " + std::to_string(innerExtent) + "\n";
  for (const KernelParam &p : params)
    key += p.type + " " + p.name + (p.output ? " out\n" : "\n");
  key += body;
  auto [it, inserted] = seen.try_emplace(key);
  if (!inserted)
    return it->second;
  std::string name = nextName(what);
  it->second = name;

  llvm::raw_string_ostream os(out);
  for (const std::string &line : comment)
    os << commentLine(line);
  // The element function: the one body both targets run.
  std::string bodyParams = paramList(params, !mayAlias).substr(2);
  os << "TRAINC_HD void " << name << "_body(int64_t i, " << (rows ? "int64_t inner, " : "")
     << bodyParams << ") {\n"
     << body << "}\n";
  // The body's index arguments where the caller has only i.
  const std::string index = rows ? "i, i % " + std::to_string(innerExtent) : "i";
  std::string launchParams = paramList(params, false);
  if (target == Target::Cpu && cpuRange) {
    os << "struct " << name << "_env {\n";
    for (const KernelParam &p : params)
      os << "  " << (p.output ? "" : "const ") << p.type << " *" << p.name << ";\n";
    os << "};\n"
       << "static void " << name << "_range(const void *env, int64_t begin, int64_t end) {\n"
       << "  const " << name << "_env &e = *static_cast<const " << name << "_env *>(env);\n";
    // Local copies carry the body's __restrict__ into the loop.
    for (const KernelParam &p : params)
      os << "  " << (p.output ? "" : "const ") << p.type << " *" << (mayAlias ? "" : "__restrict__ ")
         << p.name << " = e." << p.name << ";\n";
    os << "  for (int64_t i = begin; i < end; ++i)\n"
       << "    " << name << "_body(" << index << argList(params) << ");\n}\n\n";
    return name;
  }
  if (target == Target::Cpu && rows) {
    // Rows [begin, end) in a function of __restrict__ pointers (which the
    // vectorizer needs: it gives up checking this many pointers for
    // overlap at run time), the launcher's loop over chunks of rows. Not
    // inlined: inlined, the pointers would lose __restrict__.
    const int64_t rowCount = count / innerExtent;
    const int64_t chunk = std::max<int64_t>(1, kCpuRowChunk / innerExtent);
    const int64_t chunks = (rowCount + chunk - 1) / chunk;
    os << "__attribute__((noinline)) static void " << name << "_rows(int64_t begin, int64_t end"
       << paramList(params, true)
       << ") {\n"
       << "  for (int64_t r = begin; r < end; ++r)\n"
       << "    for (int64_t inner = 0; inner < " << innerExtent << "; ++inner)\n"
       << "      " << name << "_body(r * " << innerExtent << " + inner, inner" << argList(params)
       << ");\n}\n"
       << "static Status " << name << "(Context &" << launchParams << ") {\n";
    if (chunks == 1) {
      os << "  " << name << "_rows(0, " << rowCount << argList(params) << ");\n";
    } else {
      if (count >= kParallelThreshold)
        os << "#pragma omp parallel for schedule(static)\n";
      os << "  for (int64_t c = 0; c < " << chunks << "; ++c)\n"
         << "    " << name << "_rows(c * " << chunk << ", c == " << chunks - 1 << " ? "
         << rowCount << " : (c + 1) * " << chunk << argList(params) << ");\n";
    }
    os << "  return Status();\n}\n\n";
    return name;
  }
  if (target == Target::Cpu) {
    os << "static Status " << name << "(Context &" << launchParams << ") {\n";
    if (count >= kParallelThreshold)
      os << "#pragma omp parallel for schedule(static)\n";
    os << "  for (int64_t i = 0; i < " << count << "; ++i)\n"
       << "    " << name << "_body(i" << argList(params) << ");\n"
       << "  return Status();\n}\n\n";
    return name;
  }
  os << "__global__ void " << name << "_kernel(" << launchParams.substr(2) << ") {\n"
     << "  const int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;\n"
     << "  if (i < " << count << ")\n"
     << "    " << name << "_body(" << index << argList(params) << ");\n}\n"
     << "static Status " << name << "(Context &ctx" << launchParams << ") {\n";
  int64_t blocks = (count + kBlockSize - 1) / kBlockSize;
  if (blocks > 0)
    os << "  " << name << "_kernel<<<" << blocks << ", " << kBlockSize
       << ", 0, tk::stream(ctx)>>>(" << argList(params).substr(2) << ");\n";
  os << "  return tk::checkLaunch(\"" << name << "\");\n}\n\n";
  return name;
}

std::string KernelWriter::addMultiTensorKernel(llvm::StringRef what,
                                               llvm::ArrayRef<std::string> comment,
                                               llvm::ArrayRef<KernelParam> perTensor,
                                               llvm::ArrayRef<KernelParam> shared,
                                               llvm::ArrayRef<int64_t> counts,
                                               llvm::StringRef body) {
  std::string name = nextName(what);
  // Chunks (tensor, begin, end): a CPU thread's or a CUDA block's share.
  const int64_t chunk = target == Target::Cpu ? 16384 : 4096;
  std::string tensors, begins, ends;
  int64_t chunks = 0, total = 0;
  for (auto [t, count] : llvm::enumerate(counts)) {
    total += count;
    for (int64_t b = 0; b < count; b += chunk, ++chunks) {
      tensors += std::to_string(t) + ", ";
      begins += std::to_string(b) + ", ";
      ends += std::to_string(std::min(count, b + chunk)) + ", ";
    }
  }
  llvm::raw_string_ostream os(out);
  for (const std::string &line : comment)
    os << commentLine(line);
  std::string bodyParams = paramList(perTensor, false) + paramList(shared, false);
  os << "TRAINC_HD void " << name << "_body(int64_t i" << bodyParams << ") {\n"
     << body << "}\n";
  // The launcher's arrays: `const float *const *param`, `float *const *out`.
  std::string arrays;
  for (const KernelParam &p : perTensor)
    arrays += std::string(", ") + (p.output ? "" : "const ") + p.type + " *const *" + p.name;
  std::string sharedParams = paramList(shared, false);
  std::string tableQualifier = target == Target::Cuda ? "__device__ const" : "const";
  os << tableQualifier << " int32_t " << name << "_tensor[] = {" << tensors << "};\n"
     << tableQualifier << " int64_t " << name << "_begin[] = {" << begins << "};\n"
     << tableQualifier << " int64_t " << name << "_end[] = {" << ends << "};\n";
  auto callBody = [&](llvm::StringRef prefix) {
    std::string s = name + "_body(i";
    for (const KernelParam &p : perTensor)
      s += ", " + prefix.str() + p.name + "[t]";
    return s + argList(shared) + ");";
  };
  if (target == Target::Cpu) {
    os << "static Status " << name << "(Context &" << arrays << sharedParams << ") {\n";
    if (total >= kParallelThreshold)
      os << "#pragma omp parallel for schedule(static)\n";
    os << "  for (int64_t c = 0; c < " << chunks << "; ++c) {\n"
       << "    const int32_t t = " << name << "_tensor[c];\n"
       << "    for (int64_t i = " << name << "_begin[c]; i < " << name << "_end[c]; ++i)\n"
       << "      " << callBody("") << "\n"
       << "  }\n  return Status();\n}\n\n";
    return name;
  }
  // CUDA: the pointer arrays travel by value in one struct (kernel
  // parameters; the emitter keeps a launch under 4 KiB of them).
  os << "struct " << name << "_tensors {\n";
  for (const KernelParam &p : perTensor)
    os << "  " << (p.output ? "" : "const ") << p.type << " *" << p.name << "["
       << counts.size() << "];\n";
  os << "};\n"
     << "__global__ void " << name << "_kernel(" << name << "_tensors a" << sharedParams
     << ") {\n"
     << "  const int32_t t = " << name << "_tensor[blockIdx.x];\n"
     << "  for (int64_t i = " << name << "_begin[blockIdx.x] + threadIdx.x; i < " << name
     << "_end[blockIdx.x]; i += blockDim.x)\n"
     << "    " << callBody("a.") << "\n}\n"
     << "static Status " << name << "(Context &ctx" << arrays << sharedParams << ") {\n"
     << "  " << name << "_tensors a;\n"
     << "  for (int t = 0; t < " << counts.size() << "; ++t) {\n";
  for (const KernelParam &p : perTensor)
    os << "    a." << p.name << "[t] = " << p.name << "[t];\n";
  os << "  }\n";
  if (chunks > 0)
    os << "  " << name << "_kernel<<<" << chunks << ", " << kBlockSize
       << ", 0, tk::stream(ctx)>>>(a" << argList(shared) << ");\n";
  os << "  return tk::checkLaunch(\"" << name << "\");\n}\n\n";
  return name;
}

std::vector<int64_t> trainc::codegen::rowMajorStrides(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

std::string trainc::codegen::decomposeIndex(llvm::ArrayRef<int64_t> shape,
                                            llvm::StringRef index,
                                            llvm::StringRef prefix,
                                            llvm::StringRef indent,
                                            llvm::ArrayRef<bool> used,
                                            llvm::StringRef inner) {
  std::string s;
  llvm::raw_string_ostream os(s);
  std::vector<int64_t> strides = rowMajorStrides(shape);
  // Outer coordinates by division, the innermost by remainder: one divide
  // per axis, no loop-carried state.
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!used.empty() && !used[d])
      continue;
    os << indent << "const int64_t " << prefix << d << " = ";
    if (shape[d] == 1) {
      os << "0;\n";
      continue;
    }
    if (!inner.empty() && d + 1 == shape.size() && d != 0) {
      os << inner << ";\n";
      continue;
    }
    if (strides[d] == 1)
      os << index;
    else
      os << "(" << index << " / " << strides[d] << ")";
    if (d != 0)
      os << " % " << shape[d];
    os << ";\n";
  }
  return s;
}

std::string trainc::codegen::linearIndex(llvm::ArrayRef<int64_t> strides,
                                         int64_t base, llvm::StringRef prefix) {
  std::string s = base ? std::to_string(base) : "";
  for (size_t d = 0; d < strides.size(); ++d) {
    if (strides[d] == 0)
      continue;
    if (!s.empty())
      s += " + ";
    s += prefix.str() + std::to_string(d);
    if (strides[d] != 1)
      s += " * " + std::to_string(strides[d]);
  }
  return s.empty() ? "0" : s;
}
