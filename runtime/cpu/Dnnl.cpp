//===- Dnnl.cpp - the CPU target's convolutions on oneDNN -----------------===//
//
// One oneDNN primitive per convolution shape, kind, element type and thread
// count, made on first use and kept (oneDNN picks the kernel and its blocked
// layouts for the CPU it runs on, so a primitive is worth keeping: making one
// takes far longer than running it). Where the kernel it picked would split
// a sum over the threads, the images go in chunks fixed by the shape to
// one-thread primitives instead (one per chunk shape and thread). Each call
// reorders the NCHW operands into the layouts the primitive chose, in this
// thread's scratch buffers, runs it, and reorders the result back. A shape oneDNN has no kernel for is
// remembered too, and the caller runs its own path.
//
//===----------------------------------------------------------------------===//

#include "Dnnl.h"
#include "../common/KernelChecks.h"
#include "DnnlCommon.h"

#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace trainc::cpu::dnnl_common {

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream &threadStream() {
  thread_local dnnl::stream stream(cpuEngine());
  return stream;
}

std::optional<dnnl::memory::data_type> dnnlType(::trainc::rt::DType type) {
  using Dt = dnnl::memory::data_type;
  switch (type) {
  case ::trainc::rt::DType::F32: return Dt::f32;
  case ::trainc::rt::DType::BF16: return Dt::bf16;
  case ::trainc::rt::DType::F16: return Dt::f16;
  default: return std::nullopt;
  }
}

void *scratch(int slot, size_t bytes) {
  thread_local std::vector<char> buffers[6];
  std::vector<char> &buffer = buffers[slot];
  if (buffer.size() < bytes)
    buffer.resize(bytes);
  return buffer.data();
}

OneThread::OneThread() : saved(omp_get_max_threads()) { omp_set_num_threads(1); }
OneThread::~OneThread() { omp_set_num_threads(saved); }

bool environmentSays(const char *name, const char *value) {
  const char *choice = std::getenv(name);
  return choice && std::strcmp(choice, value) == 0;
}

} // namespace trainc::cpu::dnnl_common

namespace trainc::cpu::dnnl_conv {
using ::trainc::rt::Conv2dDesc;
using ::trainc::rt::DType;
using ::trainc::rt::Status;
using namespace ::trainc::cpu::dnnl_common;

namespace {

using Dt = dnnl::memory::data_type;
using Tag = dnnl::memory::format_tag;

enum class Kind { Forward, BackwardData };

/// A convolution shape, kind and type, and the thread count the primitive
/// is made for: the cache's key (a primitive divides its work for the
/// threads it was made for).
using Key = std::array<int64_t, 23>;

Key keyOf(Kind kind, DType type, bool bias, const Conv2dDesc &d, int threads) {
  return {int64_t(kind), int64_t(type), bias,        d.n,       d.c,          d.h,
          d.w,           d.m,           d.kh,        d.kw,      d.strideH,    d.strideW,
          d.padTop,      d.padLeft,     d.padBottom, d.padRight, d.dilationH, d.dilationW,
          d.groups,      d.outH,        d.outW,      threads,   d.channelsLast};
}

/// Images per call of a one-thread primitive: about 2^22 multiply-adds,
/// fixed by the shape. A convolution whose kernel splits a sum over the
/// threads (oneDNN's GEMM-based one, which AVX2 CPUs get for grouped
/// convolutions: other bits at 5 threads than at 1) runs as such chunks in
/// parallel instead, so no sum depends on the thread count.
int64_t imagesPerChunk(const Conv2dDesc &d) {
  int64_t perImage = std::max<int64_t>(
      1, d.m * d.outH * d.outW * (d.c / std::max<int64_t>(d.groups, 1)) * d.kh * d.kw);
  return std::clamp<int64_t>((int64_t(1) << 22) / perImage, 1, d.n);
}

/// One operand of a primitive: the NCHW (or NHWC) tensor the caller passes, and the
/// layout the primitive reads or writes it in, with the reorder between
/// them when they differ.
struct Operand {
  int arg = 0;
  bool output = false;
  dnnl::memory user, inside;
  std::optional<dnnl::reorder> reorder;
};

struct Entry {
  bool available = false;
  /// The kernel divides the output among the threads and sums each
  /// element on one (oneDNN's direct "jit:" and "brg" kernels); otherwise
  /// it runs in chunks of images on one-thread primitives.
  bool splitsNoSum = false;
  dnnl::primitive primitive;
  std::vector<Operand> operands;
};

/// Whether oneDNN's implementation `name` computes each output element's
/// sum on one thread: its direct convolutions do (they divide images,
/// channel blocks and rows among the threads); its GEMM-based ones divide
/// the sum over the channels and window.
bool splitsNoSum(const std::string &name) {
  return name.rfind("jit:", 0) == 0 || name.rfind("brg", 0) == 0;
}

dnnl::memory::dims dimsOf(std::initializer_list<int64_t> values) {
  return dnnl::memory::dims(values.begin(), values.end());
}

struct Descs {
  dnnl::memory::desc src, weights, dst, bias;
  dnnl::memory::desc userSrc, userWeights, userDst;
  dnnl::memory::dims strides, dilates, padL, padR;
};

Descs descsOf(Dt type, const Conv2dDesc &d, bool bias) {
  Descs s;
  auto src = dimsOf({d.n, d.c, d.h, d.w}), dst = dimsOf({d.n, d.m, d.outH, d.outW});
  auto weights = d.groups > 1
                     ? dimsOf({d.groups, d.m / d.groups, d.c / d.groups, d.kh, d.kw})
                     : dimsOf({d.m, d.c, d.kh, d.kw});
  // Channels-last: NHWC activations, OHWI weights (per group, [g][o][h][w][i]).
  Tag weightTag = d.groups > 1 ? (d.channelsLast ? Tag::abdec : Tag::goihw)
                               : (d.channelsLast ? Tag::ohwi : Tag::oihw);
  Tag activationTag = d.channelsLast ? Tag::nhwc : Tag::nchw;
  s.src = dnnl::memory::desc(src, type, Tag::any);
  s.weights = dnnl::memory::desc(weights, type, Tag::any);
  s.dst = dnnl::memory::desc(dst, type, Tag::any);
  if (bias)
    s.bias = dnnl::memory::desc(dimsOf({d.m}), type, Tag::x);
  s.userSrc = dnnl::memory::desc(src, type, activationTag);
  s.userWeights = dnnl::memory::desc(weights, type, weightTag);
  s.userDst = dnnl::memory::desc(dst, type, activationTag);
  s.strides = dimsOf({d.strideH, d.strideW});
  s.dilates = dimsOf({d.dilationH - 1, d.dilationW - 1});
  s.padL = dimsOf({d.padTop, d.padLeft});
  s.padR = dimsOf({d.padBottom, d.padRight});
  return s;
}

Operand operand(int arg, const dnnl::memory::desc &user, const dnnl::memory::desc &inside,
                bool output) {
  Operand o;
  o.arg = arg;
  o.output = output;
  dnnl::engine &engine = cpuEngine();
  o.user = dnnl::memory(user, engine, DNNL_MEMORY_NONE);
  if (inside == user) {
    o.inside = o.user;
  } else {
    o.inside = dnnl::memory(inside, engine, DNNL_MEMORY_NONE);
    o.reorder = output ? dnnl::reorder(o.inside, o.user) : dnnl::reorder(o.user, o.inside);
  }
  return o;
}

/// The primitive of `key`, made now: throws dnnl::error where oneDNN has
/// no kernel.
void build(Entry &e, Kind kind, Dt type, const Conv2dDesc &d, bool bias) {
  dnnl::engine &engine = cpuEngine();
  Descs s = descsOf(type, d, bias);
  auto algorithm = dnnl::algorithm::convolution_direct;
  auto forwardDesc =
      bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, s.src,
                                             s.weights, s.bias, s.dst, s.strides, s.dilates,
                                             s.padL, s.padR)
           : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algorithm, s.src,
                                             s.weights, s.dst, s.strides, s.dilates, s.padL,
                                             s.padR);
  dnnl::convolution_forward::primitive_desc forward(forwardDesc, engine);
  if (kind == Kind::Forward) {
    e.splitsNoSum = splitsNoSum(forward.impl_info_str());
    e.primitive = dnnl::convolution_forward(forward);
    e.operands = {operand(DNNL_ARG_SRC, s.userSrc, forward.src_desc(), false),
                  operand(DNNL_ARG_WEIGHTS, s.userWeights, forward.weights_desc(), false),
                  operand(DNNL_ARG_DST, s.userDst, forward.dst_desc(), true)};
    if (bias)
      e.operands.insert(e.operands.begin() + 2,
                        operand(DNNL_ARG_BIAS, s.bias, forward.bias_desc(), false));
  } else {
    dnnl::convolution_backward_data::primitive_desc pd(
        dnnl::convolution_backward_data::desc(algorithm, s.src, s.weights, s.dst, s.strides,
                                              s.dilates, s.padL, s.padR),
        engine, forward);
    e.splitsNoSum = splitsNoSum(pd.impl_info_str());
    e.primitive = dnnl::convolution_backward_data(pd);
    e.operands = {operand(DNNL_ARG_DIFF_DST, s.userDst, pd.diff_dst_desc(), false),
                  operand(DNNL_ARG_WEIGHTS, s.userWeights, pd.weights_desc(), false),
                  operand(DNNL_ARG_DIFF_SRC, s.userSrc, pd.diff_src_desc(), true)};
  }
  e.available = true;
}

/// A primitive made now for the calling thread's OpenMP thread count, or
/// one marked unavailable where oneDNN has no kernel for it (the caller's
/// path runs).
std::unique_ptr<Entry> makeEntry(Kind kind, DType type, const Conv2dDesc &d, bool bias) {
  auto entry = std::make_unique<Entry>();
  if (std::optional<Dt> dt = dnnlType(type)) {
    try {
      build(*entry, kind, *dt, d, bias);
    } catch (const dnnl::error &) {
      entry->available = false;
    }
  }
  return entry;
}

/// The primitive of a convolution made for the process's thread count
/// (made on first use and kept; the caller's thread runs it).
Entry &sharedEntryOf(Kind kind, DType type, const Conv2dDesc &d, bool bias) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Entry>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Entry> &slot = cache[keyOf(kind, type, bias, d, omp_get_max_threads())];
  if (!slot)
    slot = makeEntry(kind, type, d, bias);
  return *slot;
}

/// This thread's one-thread primitive of a chunk of images (made on first
/// use; its memory objects are this thread's).
Entry &chunkEntryOf(Kind kind, DType type, const Conv2dDesc &d, bool bias) {
  thread_local std::map<Key, std::unique_ptr<Entry>> cache;
  std::unique_ptr<Entry> &slot = cache[keyOf(kind, type, bias, d, 1)];
  if (!slot) {
    OneThread one;
    slot = makeEntry(kind, type, d, bias);
  }
  return *slot;
}

std::atomic<uint64_t> runCount{0};

/// A primitive on the calling thread: `pointers` are its operands in the
/// primitive's order.
Status runEntry(const char *name, Entry &e, std::initializer_list<const void *> pointers) {
  try {
    dnnl::stream &stream = threadStream();
    std::unordered_map<int, dnnl::memory> args;
    auto pointer = pointers.begin();
    int slot = 0;
    for (Operand &o : e.operands) {
      o.user.set_data_handle(const_cast<void *>(*pointer++));
      if (o.reorder)
        o.inside.set_data_handle(scratch(slot++, o.inside.get_desc().get_size()));
      if (o.reorder && !o.output)
        o.reorder->execute(stream, o.user, o.inside);
      args[o.arg] = o.inside;
    }
    e.primitive.execute(stream, args);
    for (Operand &o : e.operands)
      if (o.reorder && o.output)
        o.reorder->execute(stream, o.inside, o.user);
    stream.wait();
  } catch (const dnnl::error &error) {
    return Status::error(std::string(name) + ": oneDNN: " + error.what());
  }
  return Status();
}

/// The convolution: on the process's threads where its kernel splits no
/// sum, else over chunks of images (imagesPerChunk) in parallel. `in` is x
/// (forward) or dy (backward data), `out` y or dx; `bias` only for the
/// forward.
Status run(const char *name, Kind kind, DType type, const Conv2dDesc &d, const void *in,
           const void *w, const void *bias, void *out, bool &ran) {
  ran = false;
  Entry &shared = sharedEntryOf(kind, type, d, bias);
  if (!shared.available)
    return Status();
  if (shared.splitsNoSum) {
    TRAINC_RETURN_IF_ERROR(bias ? runEntry(name, shared, {in, w, bias, out})
                                : runEntry(name, shared, {in, w, out}));
    ran = true;
    ++runCount;
    return Status();
  }
  const int64_t per = imagesPerChunk(d), chunks = (d.n + per - 1) / per;
  Conv2dDesc whole = d, tail = d;
  whole.n = per;
  tail.n = d.n - (chunks - 1) * per;
  // Every chunk's primitive must exist on this CPU; the tail's may differ.
  if (!chunkEntryOf(kind, type, whole, bias).available ||
      !chunkEntryOf(kind, type, tail, bias).available)
    return Status();
  const size_t element = type == DType::F32 ? 4 : 2;
  const size_t xImage = size_t(d.c * d.h * d.w) * element;
  const size_t yImage = size_t(d.m * d.outH * d.outW) * element;
  const size_t inImage = kind == Kind::Forward ? xImage : yImage;
  const size_t outImage = kind == Kind::Forward ? yImage : xImage;
  std::vector<Status> failed(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const Conv2dDesc &shape = c == chunks - 1 ? tail : whole;
    OneThread one;
    Entry &e = chunkEntryOf(kind, type, shape, bias);
    const char *chunkIn = static_cast<const char *>(in) + size_t(c * per) * inImage;
    char *chunkOut = static_cast<char *>(out) + size_t(c * per) * outImage;
    if (!e.available) {
      failed[size_t(c)] = Status::error(std::string(name) + ": oneDNN made no primitive for a "
                                                            "chunk on this thread");
      continue;
    }
    failed[size_t(c)] = bias ? runEntry(name, e, {chunkIn, w, bias, chunkOut})
                             : runEntry(name, e, {chunkIn, w, chunkOut});
  }
  for (const Status &status : failed)
    TRAINC_RETURN_IF_ERROR(status);
  ran = true;
  ++runCount;
  return Status();
}

} // namespace

uint64_t runs() { return runCount.load(); }

bool enabled() { return !environmentSays("TRAINC_CPU_CONV", "im2col"); }

Status forward(DType type, const Conv2dDesc &d, const void *x, const void *w, const void *bias,
               void *y, bool &ran) {
  return run("conv2d", Kind::Forward, type, d, x, w, bias, y, ran);
}

namespace {

/// reorderOutweighs' bounds: output positions of all images, and weights.
constexpr int64_t kFewColumns = 64;
constexpr int64_t kLargeWeights = int64_t(1) << 16;

/// Whether oneDNN's reorder of the weights into its blocked layout, which
/// every call makes (they change each step), costs about what the
/// convolution itself does: few output positions in all (at most 64
/// multiply-adds per weight) and weights large enough that reading and
/// writing them all is not lost in the call's overhead. Only f32: the
/// caller's path is one batched GEMM on the weights as they are, then
/// col2im (bf16 would be widened first). Channels-last too, though there
/// the caller transposes the weights (as costly as the reorder): NHWC
/// and NCHW then take the same path, and train to the same weights
/// within float rounding (a different kernel for one layer moved
/// ResNet-18's weights 2e-4 apart in 3 steps). On 2 AVX-512 cores,
/// ResNet-18's stage-4 backward data (512 channels, 2x2 outputs, batch 8:
/// 32 multiply-adds a weight) took 0.94-1.03 ms on oneDNN, half of it the
/// 9.4 MB reorder, and 0.55-0.65 ms on the batched GEMM; stage 3 (256
/// channels, 4x4 outputs: 128 a weight) stays 25-30% faster on oneDNN.
/// The forward of stage 4 is a tie (3.16 vs 3.23 ms for its four
/// convolutions): it stays on oneDNN.
bool reorderOutweighs(DType type, const Conv2dDesc &d) {
  const int64_t columns = d.n * d.outH * d.outW; // multiply-adds per weight
  return type == DType::F32 && columns <= kFewColumns && weightCount(d) >= kLargeWeights;
}

} // namespace

Status backwardData(DType type, const Conv2dDesc &d, const void *dy, const void *w, void *dx,
                    bool &ran) {
  // oneDNN's backward data of an input with 1 to 3 channels (an image
  // model's first layer) was 1.4-4x slower than im2col + sgemm on 2 cores
  // of an AVX-512 CPU (LeNet's 1-channel 5x5, ResNet's 3-channel 7x7 stem).
  if (d.c < 4 || reorderOutweighs(type, d)) {
    ran = false;
    return Status();
  }
  return run("conv2dBackwardData", Kind::BackwardData, type, d, dy, w, nullptr, dx, ran);
}

} // namespace trainc::cpu::dnnl_conv
