//===- KernelWriter.cpp - generated kernels for both targets --------------===//

#include "codegen/KernelWriter.h"

#include "codegen/Escape.h"
#include "runtime/include/trainc_rt/defaults.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cctype>

using namespace trainc::codegen;

namespace {

/// Element loops this small stay on one thread: forking costs more (the
/// runtime's kernels use the same bound).
constexpr int64_t kParallelThreshold = trainc::rt::kCpuParallelWork;
/// What a transcendental call (exp, tanh, sigmoid, ...) costs an element,
/// in simple operations: such a loop is worth the threads sooner (an LSTM
/// cell's 8192 elements of three sigmoids and two tanh run 22% faster on
/// two threads than on one).
constexpr int64_t kTranscendentalCost = 16;

/// Whether an element loop of `count` runs on every thread: its work, the
/// elements times the body's cost (one, plus kTranscendentalCost a call to
/// a transcendental function), reaches kParallelThreshold.
bool worthThreads(int64_t count, llvm::StringRef body, int64_t elementWork = 0) {
  if (elementWork > 0)
    return count > 1 && count * elementWork >= kParallelThreshold;
  static const char *const calls[] = {"expf(", "logf(", "tanhf(", "erff(", "powf(",
                                      "sigmoid(", "gelu", "sinf(", "cosf(", "tanf(",
                                      "sinhf(", "coshf(", "asinf(", "acosf("};
  int64_t perElement = 1;
  for (const char *call : calls)
    for (size_t at = body.find(call); at != llvm::StringRef::npos; at = body.find(call, at + 1))
      perElement += kTranscendentalCost;
  return count >= kParallelThreshold ||
         (count > 1 && count * perElement >= kParallelThreshold);
}
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
                                    bool cpuRange, int64_t innerExtent, int64_t elementWork) {
  const bool rows = innerExtent > 1;
  std::string key = what.str() + '\n' + std::to_string(count) + (mayAlias ? " alias" : "") +
                    (cpuRange ? " range" : "") + " inner " + std::to_string(innerExtent) +
                    " work " + std::to_string(elementWork) + "\n";
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
    if (rows) {
      // The range cut at row ends: each piece a plain loop over `inner`,
      // which the compiler vectorizes (i % extent per element it does not).
      os << "  for (int64_t i = begin; i < end;) {\n"
         << "    const int64_t first = i % " << innerExtent << ";\n"
         << "    int64_t stop = i - first + " << innerExtent << ";\n"
         << "    if (stop > end)\n      stop = end;\n"
         << "    for (int64_t inner = first; i < stop; ++i, ++inner)\n"
         << "      " << name << "_body(i, inner" << argList(params) << ");\n  }\n}\n\n";
      return name;
    }
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
      if (worthThreads(count, body))
        os << "#pragma omp parallel for schedule(static)\n";
      os << "  for (int64_t c = 0; c < " << chunks << "; ++c)\n"
         << "    " << name << "_rows(c * " << chunk << ", c == " << chunks - 1 << " ? "
         << rowCount << " : (c + 1) * " << chunk << argList(params) << ");\n";
    }
    os << "  return Status();\n}\n\n";
    return name;
  }
  if (target == Target::Cpu) {
    // Elements [begin, end) in a function of __restrict__ pointers, as the
    // rows above: inlined into the launcher's OpenMP loop the pointers lose
    // __restrict__, and with more than a few of them g++ gives up checking
    // their overlap at run time, so the loop (and its vector math) ran
    // scalar. The launcher's loop runs over chunks.
    const int64_t chunks = (count + kCpuRowChunk - 1) / kCpuRowChunk;
    os << "__attribute__((noinline)) static void " << name << "_span(int64_t begin, int64_t end"
       << paramList(params, !mayAlias) << ") {\n"
       << "  for (int64_t i = begin; i < end; ++i)\n"
       << "    " << name << "_body(i" << argList(params) << ");\n}\n"
       << "static Status " << name << "(Context &" << launchParams << ") {\n";
    if (chunks > 1 && worthThreads(count, body, elementWork))
      os << "#pragma omp parallel for schedule(static)\n"
         << "  for (int64_t c = 0; c < " << chunks << "; ++c)\n"
         << "    " << name << "_span(c * " << kCpuRowChunk << ", c == " << chunks - 1 << " ? "
         << count << " : (c + 1) * " << kCpuRowChunk << argList(params) << ");\n";
    else
      os << "  " << name << "_span(0, " << count << argList(params) << ");\n";
    os << "  return Status();\n}\n\n";
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

/// The OpenMP loop over a multi-tensor kernel's chunks. Dynamic: the
/// chunks differ in size (a large tensor's full chunks, then each small
/// tensor's one), and a static split gave one thread the large tensor's
/// chunks and the other the small ones (the zoo MLP's SGD update: 90% of
/// the elements on one of two threads). A chunk computes its elements, or
/// its partial sums, alike whichever thread runs it.
constexpr const char *kChunkLoop = "#pragma omp parallel for schedule(dynamic, 1)\n";

int64_t KernelWriter::writeChunkTables(llvm::raw_ostream &os, llvm::StringRef name,
                                       llvm::ArrayRef<int64_t> counts, int64_t &total,
                                       bool firstChunks) {
  // Chunks (tensor, begin, end): a CPU thread's or a CUDA block's share.
  const int64_t chunk = target == Target::Cpu ? 16384 : 4096;
  std::string tensors, begins, ends, firsts;
  int64_t chunks = 0;
  total = 0;
  for (auto [t, count] : llvm::enumerate(counts)) {
    total += count;
    firsts += std::to_string(chunks) + ", ";
    for (int64_t b = 0; b < count; b += chunk, ++chunks) {
      tensors += std::to_string(t) + ", ";
      begins += std::to_string(b) + ", ";
      ends += std::to_string(std::min(count, b + chunk)) + ", ";
    }
  }
  firsts += std::to_string(chunks) + ", ";
  std::string qualifier = target == Target::Cuda ? "__device__ const" : "const";
  os << qualifier << " int32_t " << name << "_tensor[] = {" << tensors << "};\n"
     << qualifier << " int64_t " << name << "_begin[] = {" << begins << "};\n"
     << qualifier << " int64_t " << name << "_end[] = {" << ends << "};\n";
  if (firstChunks)
    os << qualifier << " int64_t " << name << "_first[] = {" << firsts << "};\n";
  return chunks;
}

std::string KernelWriter::fillTensorStruct(llvm::StringRef name,
                                           llvm::ArrayRef<KernelParam> perTensor,
                                           size_t tensors) {
  std::string s = "  " + name.str() + "_tensors a;\n  for (int t = 0; t < " +
                  std::to_string(tensors) + "; ++t) {\n";
  for (const KernelParam &p : perTensor)
    s += "    a." + p.name + "[t] = " + p.name + "[t];\n";
  return s + "  }\n";
}

void KernelWriter::writeTensorStruct(llvm::raw_ostream &os, llvm::StringRef name,
                                     llvm::ArrayRef<KernelParam> perTensor, size_t tensors) {
  os << "struct " << name << "_tensors {\n";
  for (const KernelParam &p : perTensor)
    os << "  " << (p.output ? "" : "const ") << p.type << " *" << p.name << "[" << tensors
       << "];\n";
  os << "};\n";
}

namespace {

/// `name_body(i, a.x[t], ..., shared..., extra)`: a per-element call.
std::string elementCall(llvm::StringRef function, llvm::ArrayRef<KernelParam> perTensor,
                        llvm::ArrayRef<KernelParam> shared, llvm::StringRef prefix,
                        llvm::StringRef extra = "") {
  std::string s = function.str() + "(i";
  for (const KernelParam &p : perTensor)
    s += ", " + prefix.str() + p.name + "[t]";
  return s + argList(shared) + extra.str() + ");";
}

/// The launcher's parameters: `const float *const *param, ...` then the
/// shared pointers.
std::string launcherParams(llvm::ArrayRef<KernelParam> perTensor,
                           llvm::ArrayRef<KernelParam> shared) {
  std::string arrays;
  for (const KernelParam &p : perTensor)
    arrays += std::string(", ") + (p.output ? "" : "const ") + p.type + " *const *" + p.name;
  return arrays + paramList(shared, false);
}

/// The offsets in `body` where `name` stands as a whole identifier (not
/// part of a longer one).
std::vector<size_t> usesOf(llvm::StringRef body, llvm::StringRef name) {
  auto isIdentifier = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::vector<size_t> uses;
  for (size_t at = body.find(name); at != llvm::StringRef::npos; at = body.find(name, at + 1))
    if ((at == 0 || !isIdentifier(body[at - 1])) &&
        (at + name.size() == body.size() || !isIdentifier(body[at + name.size()])))
      uses.push_back(at);
  return uses;
}

/// `(void)x;` for each of `names` that `body` does not use (an identifier
/// of the body's own), then `body`: the bodies of one kernel share one
/// parameter list, and each reads only some of it.
std::string markUnused(llvm::ArrayRef<std::string> names, llvm::StringRef body) {
  std::string unused;
  for (const std::string &name : names)
    if (usesOf(body, name).empty())
      unused += "(void)" + name + "; ";
  return unused.empty() ? body.str() : "  " + unused + "// not read here\n" + body.str();
}

/// Whether every use of identifier `name` in `body` is `name[0]`.
bool readsOnlyFirst(llvm::StringRef body, llvm::StringRef name) {
  const std::vector<size_t> uses = usesOf(body, name);
  return !uses.empty() && llvm::all_of(uses, [&](size_t at) {
    return body.substr(at + name.size()).starts_with("[0]");
  });
}

/// `call` (`f(i, a, b, ...)`) with the argument `name` replaced by `with`.
std::string replaceArgument(llvm::StringRef call, llvm::StringRef name, llvm::StringRef with) {
  for (const char *before : {", ", "("})
    for (const char *after : {",", ")"}) {
      const std::string whole = before + name.str() + after;
      const size_t at = call.find(whole);
      if (at != llvm::StringRef::npos)
        return call.take_front(at).str() + before + with.str() + after +
               call.drop_front(at + whole.size()).str();
    }
  return call.str();
}

} // namespace

std::string KernelWriter::addMultiTensorKernel(llvm::StringRef what,
                                               llvm::ArrayRef<std::string> comment,
                                               llvm::ArrayRef<KernelParam> perTensor,
                                               llvm::ArrayRef<KernelParam> shared,
                                               llvm::ArrayRef<int64_t> counts,
                                               llvm::StringRef body) {
  std::string name = nextName(what);
  llvm::raw_string_ostream os(out);
  for (const std::string &line : comment)
    os << commentLine(line);
  std::string bodyParams = paramList(perTensor, false) + paramList(shared, false);
  os << "TRAINC_HD void " << name << "_body(int64_t i" << bodyParams << ") {\n"
     << body << "}\n";
  int64_t total = 0;
  const int64_t chunks = writeChunkTables(os, name, counts, total);
  std::string call = elementCall(name + "_body", perTensor, shared, "");
  std::string launcher = "static Status " + name + "(Context &" +
                         (target == Target::Cuda ? "ctx" : "") +
                         launcherParams(perTensor, shared) + ") {\n";
  if (target == Target::Cpu) {
    // Not inlined into the step: there the element loop lost its
    // vectorization (the loop alone is vectorized).
    os << "__attribute__((noinline)) " << launcher;
    if (total >= kParallelThreshold)
      os << kChunkLoop;
    // ivdep: element i reads and writes only index i of each tensor (in
    // place or not) and the shared values are never written, so the
    // vectorizer may ignore the dependences it cannot rule out (an output
    // that may alias its input or a hyperparameter).
    // A shared input the body reads only as x[0] (a hyperparameter) is
    // read once a chunk into a local: the element loop writes through
    // pointers that may alias it, so it was loaded again every element.
    std::string hoisted, hoistedCall = call;
    for (const KernelParam &p : shared)
      if (!p.output && readsOnlyFirst(body, p.name)) {
        hoisted += "    const " + p.type + " " + p.name + "_value = " + p.name + "[0];\n";
        hoistedCall = replaceArgument(hoistedCall, p.name, "&" + p.name + "_value");
      }
    os << "  for (int64_t c = 0; c < " << chunks << "; ++c) {\n"
       << "    const int32_t t = " << name << "_tensor[c];\n"
       << hoisted << "#pragma GCC ivdep\n"
       << "    for (int64_t i = " << name << "_begin[c]; i < " << name << "_end[c]; ++i)\n"
       << "      " << hoistedCall << "\n"
       << "  }\n  return Status();\n}\n\n";
    return name;
  }
  // CUDA: the pointer arrays travel by value in one struct (kernel
  // parameters; the emitter keeps a launch under 4 KiB of them).
  writeTensorStruct(os, name, perTensor, counts.size());
  os << "__global__ void " << name << "_kernel(" << name << "_tensors a"
     << paramList(shared, false) << ") {\n"
     << "  const int32_t t = " << name << "_tensor[blockIdx.x];\n"
     << "  for (int64_t i = " << name << "_begin[blockIdx.x] + threadIdx.x; i < " << name
     << "_end[blockIdx.x]; i += blockDim.x)\n"
     << "    " << elementCall(name + "_body", perTensor, shared, "a.") << "\n}\n"
     << launcher << fillTensorStruct(name, perTensor, counts.size());
  if (chunks > 0)
    os << "  " << name << "_kernel<<<" << chunks << ", " << kBlockSize
       << ", 0, tk::stream(ctx)>>>(a" << argList(shared) << ");\n";
  os << "  return tk::checkLaunch(\"" << name << "\");\n}\n\n";
  return name;
}

std::string KernelWriter::addMultiTensorNormKernel(
    llvm::StringRef what, llvm::ArrayRef<std::string> comment,
    llvm::ArrayRef<KernelParam> perTensor, llvm::ArrayRef<KernelParam> shared,
    llvm::ArrayRef<int64_t> counts, llvm::StringRef normBody, llvm::StringRef factorBody,
    llvm::StringRef applyBody) {
  std::string name = nextName(what);
  llvm::raw_string_ostream os(out);
  for (const std::string &line : comment)
    os << commentLine(line);
  std::string bodyParams = paramList(perTensor, false) + paramList(shared, false);
  std::vector<std::string> names, sharedNames = {"sa", "sb"};
  for (const KernelParam &p : perTensor)
    names.push_back(p.name);
  for (const KernelParam &p : shared) {
    names.push_back(p.name);
    sharedNames.push_back(p.name);
  }
  names.push_back("sa");
  names.push_back("sb");
  os << "TRAINC_HD void " << name << "_norm_body(int64_t i" << bodyParams
     << ", double &sa, double &sb) {\n"
     << markUnused(names, normBody) << "}\n"
     << "TRAINC_HD float " << name << "_factor_of(double sa, double sb"
     << paramList(shared, false) << ") {\n"
     << markUnused(sharedNames, factorBody) << "}\n";
  names.pop_back();
  names.back() = "factor";
  os << "TRAINC_HD void " << name << "_apply_body(int64_t i" << bodyParams
     << ", float factor) {\n"
     << markUnused(names, applyBody) << "}\n";
  int64_t total = 0;
  const int64_t chunks = writeChunkTables(os, name, counts, total, true);
  NormLaunch launch{name, perTensor, shared, chunks, total, counts.size(),
                    "static Status " + name + "(Context &" +
                        (target == Target::Cuda ? "ctx" : "") +
                        launcherParams(perTensor, shared) + ") {\n"};
  if (target == Target::Cpu)
    writeNormLauncherCpu(os, launch);
  else
    writeNormLauncherCuda(os, launch);
  return name;
}

namespace {

/// One tensor's sums (`sa`, `sb`): its chunks' partial sums in chunk order.
std::string sumChunks(const std::string &name) {
  return "    double sa = 0.0, sb = 0.0;\n"
         "    for (int64_t c = " + name + "_first[t]; c < " + name + "_first[t + 1]; ++c) {\n"
         "      sa += " + name + "_partial[2 * c];\n"
         "      sb += " + name + "_partial[2 * c + 1];\n    }\n";
}

} // namespace

/// The CPU launcher: the chunks' sums (threads), each tensor's factor, then
/// the chunks' steps (threads).
void KernelWriter::writeNormLauncherCpu(llvm::raw_ostream &os, const NormLaunch &l) {
  const std::string &name = l.name;
  std::string parallel = l.total >= kParallelThreshold ? kChunkLoop : "";
  os << "static double " << name << "_partial[2 * " << std::max<int64_t>(l.chunks, 1) << "];\n"
     << "static float " << name << "_factor[" << l.tensors << "];\n"
     << l.launcher
     << parallel << "  for (int64_t c = 0; c < " << l.chunks << "; ++c) {\n"
     << "    const int32_t t = " << name << "_tensor[c];\n"
     << "    double sa = 0.0, sb = 0.0;\n"
     << "    for (int64_t i = " << name << "_begin[c]; i < " << name << "_end[c]; ++i)\n"
     << "      " << elementCall(name + "_norm_body", l.perTensor, l.shared, "", ", sa, sb")
     << "\n"
     << "    " << name << "_partial[2 * c] = sa;\n"
     << "    " << name << "_partial[2 * c + 1] = sb;\n  }\n"
     << "  for (int32_t t = 0; t < " << l.tensors << "; ++t) {\n"
     << sumChunks(name) << "    " << name << "_factor[t] = " << name << "_factor_of(sa, sb"
     << argList(l.shared) << ");\n  }\n"
     << parallel << "  for (int64_t c = 0; c < " << l.chunks << "; ++c) {\n"
     << "    const int32_t t = " << name << "_tensor[c];\n"
     << "    const float factor = " << name << "_factor[t];\n"
     << "    for (int64_t i = " << name << "_begin[c]; i < " << name << "_end[c]; ++i)\n"
     << "      " << elementCall(name + "_apply_body", l.perTensor, l.shared, "", ", factor")
     << "\n  }\n  return Status();\n}\n\n";
}

/// The CUDA launcher: three kernels on the stream, a block per chunk for
/// the sums (a fixed tree over the block, blockSum2), a thread per tensor
/// for its factor, a block per chunk for the steps.
void KernelWriter::writeNormLauncherCuda(llvm::raw_ostream &os, const NormLaunch &l) {
  const std::string &name = l.name;
  writeTensorStruct(os, name, l.perTensor, l.tensors);
  std::string sharedParams = paramList(l.shared, false), sharedArgs = argList(l.shared);
  std::string loop = "  for (int64_t i = " + name + "_begin[blockIdx.x] + threadIdx.x; i < " +
                     name + "_end[blockIdx.x]; i += blockDim.x)\n";
  os << "__device__ double " << name << "_partial[2 * " << std::max<int64_t>(l.chunks, 1)
     << "];\n"
     << "__device__ float " << name << "_factor[" << l.tensors << "];\n"
     << "__global__ void " << name << "_norm_kernel(" << name << "_tensors a" << sharedParams
     << ") {\n"
     << "  const int32_t t = " << name << "_tensor[blockIdx.x];\n"
     << "  double sa = 0.0, sb = 0.0;\n"
     << loop << "    " << elementCall(name + "_norm_body", l.perTensor, l.shared, "a.", ", sa, sb")
     << "\n"
     << "  trainc::gen::blockSum2<" << kBlockSize << ">(sa, sb);\n"
     << "  if (threadIdx.x == 0) {\n"
     << "    " << name << "_partial[2 * blockIdx.x] = sa;\n"
     << "    " << name << "_partial[2 * blockIdx.x + 1] = sb;\n  }\n}\n"
     << "__global__ void " << name << "_factor_kernel(int32_t tensors" << sharedParams << ") {\n"
     << "  const int32_t t = blockIdx.x * blockDim.x + threadIdx.x;\n"
     << "  if (t < tensors) {\n"
     << sumChunks(name) << "    " << name << "_factor[t] = " << name << "_factor_of(sa, sb"
     << sharedArgs << ");\n  }\n}\n"
     << "__global__ void " << name << "_apply_kernel(" << name << "_tensors a" << sharedParams
     << ") {\n"
     << "  const int32_t t = " << name << "_tensor[blockIdx.x];\n"
     << "  const float factor = " << name << "_factor[t];\n"
     << loop << "    "
     << elementCall(name + "_apply_body", l.perTensor, l.shared, "a.", ", factor") << "\n}\n"
     << l.launcher << fillTensorStruct(name, l.perTensor, l.tensors);
  if (l.chunks > 0)
    os << "  " << name << "_norm_kernel<<<" << l.chunks << ", " << kBlockSize
       << ", 0, tk::stream(ctx)>>>(a" << sharedArgs << ");\n"
       << "  " << name << "_factor_kernel<<<" << (l.tensors + kBlockSize - 1) / kBlockSize
       << ", " << kBlockSize << ", 0, tk::stream(ctx)>>>(" << l.tensors << sharedArgs << ");\n"
       << "  " << name << "_apply_kernel<<<" << l.chunks << ", " << kBlockSize
       << ", 0, tk::stream(ctx)>>>(a" << sharedArgs << ");\n";
  os << "  return tk::checkLaunch(\"" << name << "\");\n}\n\n";
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
  // per axis, no loop-carried state. With the loop's inner coordinate, the
  // outer ones divide the row's start (i - inner): g++ then sees them
  // constant along the inner loop, and an access at a row's offset plus
  // the inner coordinate is contiguous (it vectorizes).
  const std::string outer =
      inner.empty() ? index.str() : "(" + index.str() + " - " + inner.str() + ")";
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
      os << "(" << outer << " / " << strides[d] << ")";
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
