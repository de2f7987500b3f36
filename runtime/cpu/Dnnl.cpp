//===- Dnnl.cpp - the CPU target's convolutions on oneDNN -----------------===//
//
// One oneDNN primitive per convolution shape, kind, element type and thread
// count, made on first use and kept (oneDNN picks the kernel and its blocked layouts for
// the CPU it runs on, so a primitive is worth keeping: making one takes far
// longer than running it). Each call reorders the NCHW operands into the
// layouts the primitive chose, in this thread's scratch buffers, runs it,
// and reorders the result back. A shape oneDNN has no kernel for is
// remembered too, and the caller runs its own path.
//
//===----------------------------------------------------------------------===//

#include "Dnnl.h"
#include "DnnlCommon.h"

#include <omp.h>

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
  thread_local std::vector<char> buffers[5];
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

/// A convolution shape, kind and type, and the thread count: the cache's
/// key (a primitive divides its work for the threads it was made for).
using Key = std::array<int64_t, 22>;

Key keyOf(Kind kind, DType type, bool bias, const Conv2dDesc &d) {
  return {int64_t(kind), int64_t(type), bias,        d.n,       d.c,          d.h,
          d.w,           d.m,           d.kh,        d.kw,      d.strideH,    d.strideW,
          d.padTop,      d.padLeft,     d.padBottom, d.padRight, d.dilationH, d.dilationW,
          d.groups,      d.outH,        d.outW,      omp_get_max_threads()};
}

/// One operand of a primitive: the NCHW tensor the caller passes, and the
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
  dnnl::primitive primitive;
  std::vector<Operand> operands;
};

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
  Tag weightTag = d.groups > 1 ? Tag::goihw : Tag::oihw;
  s.src = dnnl::memory::desc(src, type, Tag::any);
  s.weights = dnnl::memory::desc(weights, type, Tag::any);
  s.dst = dnnl::memory::desc(dst, type, Tag::any);
  if (bias)
    s.bias = dnnl::memory::desc(dimsOf({d.m}), type, Tag::x);
  s.userSrc = dnnl::memory::desc(src, type, Tag::nchw);
  s.userWeights = dnnl::memory::desc(weights, type, weightTag);
  s.userDst = dnnl::memory::desc(dst, type, Tag::nchw);
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
    e.primitive = dnnl::convolution_backward_data(pd);
    e.operands = {operand(DNNL_ARG_DIFF_DST, s.userDst, pd.diff_dst_desc(), false),
                  operand(DNNL_ARG_WEIGHTS, s.userWeights, pd.weights_desc(), false),
                  operand(DNNL_ARG_DIFF_SRC, s.userSrc, pd.diff_src_desc(), true)};
  }
  e.available = true;
}

/// The cached primitive of a convolution (made on first use).
Entry &entryOf(Kind kind, DType type, const Conv2dDesc &d, bool bias) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Entry>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Entry> &slot = cache[keyOf(kind, type, bias, d)];
  if (!slot) {
    slot = std::make_unique<Entry>();
    if (std::optional<Dt> dt = dnnlType(type)) {
      try {
        build(*slot, kind, *dt, d, bias);
      } catch (const dnnl::error &) {
        slot->available = false; // no kernel for it here: the caller's path runs
      }
    }
  }
  return *slot;
}

std::atomic<uint64_t> runCount{0};

Status run(const char *name, Kind kind, DType type, const Conv2dDesc &d,
           std::initializer_list<const void *> pointers, bool bias, bool &ran) {
  ran = false;
  Entry &e = entryOf(kind, type, d, bias);
  if (!e.available)
    return Status();
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
  ran = true;
  ++runCount;
  return Status();
}

} // namespace

uint64_t runs() { return runCount.load(); }

bool enabled() { return !environmentSays("TRAINC_CPU_CONV", "im2col"); }

Status forward(DType type, const Conv2dDesc &d, const void *x, const void *w, const void *bias,
               void *y, bool &ran) {
  if (bias)
    return run("conv2d", Kind::Forward, type, d, {x, w, bias, y}, true, ran);
  return run("conv2d", Kind::Forward, type, d, {x, w, y}, false, ran);
}

Status backwardData(DType type, const Conv2dDesc &d, const void *dy, const void *w, void *dx,
                    bool &ran) {
  // oneDNN's backward data of an input with 1 to 3 channels (an image
  // model's first layer) was 1.4-4x slower than im2col + sgemm on 2 cores
  // of an AVX-512 CPU (LeNet's 1-channel 5x5, ResNet's 3-channel 7x7 stem).
  if (d.c < 4) {
    ran = false;
    return Status();
  }
  return run("conv2dBackwardData", Kind::BackwardData, type, d, {dy, w, dx}, false, ran);
}

} // namespace trainc::cpu::dnnl_conv
