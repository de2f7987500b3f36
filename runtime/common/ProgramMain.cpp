//===- ProgramMain.cpp - the command line of a compiled program -----------===//
//
// The generated main() is `return trainc::rt::programMain(argc, argv,
// kProgram);`. Everything here goes through Context, so the CPU and CUDA
// targets share it. Errors are printed to stderr and turned into exit code 1;
// nothing here calls exit().
//
//===----------------------------------------------------------------------===//

#include "BatchLoader.h"
#include "FileIO.h"
#include "Npy.h"
#include "ProcessWaits.h"
#include "ProgramOptions.h"
#include "ProgramSupport.h"
#include "TrainChecks.h"
#include "trainc_rt/defaults.h"
#include "trainc_rt/device.h"
#include "trainc_rt/program.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#include <unistd.h>
#endif

namespace trainc::rt {
namespace detail {

std::string shapeText(const TensorInfo &t) {
  std::string text = std::string(dtypeName(t.dtype)) + "[";
  for (int i = 0; i < t.rank; ++i)
    text += (i ? ", " : "") + std::to_string(t.shape[i]);
  return text + "]";
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

/// Bytes of one tensor, or of one sample (all axes but the first).
uint64_t tensorBytes(const TensorInfo &t, int firstAxis) {
  uint64_t count = 1;
  for (int i = firstAxis; i < t.rank; ++i)
    count *= static_cast<uint64_t>(t.shape[i]);
  return count * dtypeSize(t.dtype);
}

Status checkTensorInfo(const char *kind, const TensorInfo &t) {
  std::string name = t.name ? t.name : "<null>";
  if (!t.name || !*t.name)
    return Status::error(std::string(kind) + " has no name");
  if (t.rank < 0 || t.rank > kMaxRank)
    return Status::error(std::string(kind) + " " + name + ": invalid rank " +
                         std::to_string(t.rank));
  if (dtypeSize(t.dtype) == 0)
    return Status::error(std::string(kind) + " " + name + ": invalid dtype " +
                         std::to_string(static_cast<int32_t>(t.dtype)));
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] <= 0)
      return Status::error(std::string(kind) + " " + name + ": invalid shape " +
                           shapeText(t));
  return Status();
}

/// Consistency of what the generated code describes; a failure here is a
/// compiler bug, reported instead of trusted.
Status checkStepInputs(const TrainStep &train, int64_t batchSize);
Status checkParams(const Program &program);

Status checkProgram(const Program &program) {
  if (program.batchSize <= 0)
    return Status::error("invalid batch size " +
                         std::to_string(program.batchSize));
  if (!program.forward)
    return Status::error("program has no forward function");
  if (program.numInputs < 0 || program.numOutputs < 0 ||
      program.numParams < 0 || (program.numInputs && !program.inputs) ||
      (program.numOutputs && !program.outputs) ||
      (program.numParams && !program.params))
    return Status::error("program tables are inconsistent");
  for (int i = 0; i < program.numInputs; ++i)
    TRAINC_RETURN_IF_ERROR(checkTensorInfo("input", program.inputs[i]));
  for (int i = 0; i < program.numOutputs; ++i)
    TRAINC_RETURN_IF_ERROR(checkTensorInfo("output", program.outputs[i]));
  // The trainer fills every data input, label and sample-weight buffer with
  // one batch of rows: a table whose first axis is not the batch would be
  // filled past its end.
  if (program.train)
    TRAINC_RETURN_IF_ERROR(checkStepInputs(*program.train, program.batchSize));
  if (const Pipeline *pipeline = program.pipeline) {
    if (pipeline->numStages < 2 || !pipeline->stages)
      return Status::error("program tables are inconsistent");
    for (int s = 0; s < pipeline->numStages; ++s) {
      const Program &stage = *pipeline->stages[s];
      if (!stage.train || stage.batchSize != program.batchSize ||
          (stage.train->numLinks && !stage.train->links))
        return Status::error("pipeline stage " + std::to_string(s) + " is inconsistent");
      TRAINC_RETURN_IF_ERROR(checkStepInputs(*stage.train, program.batchSize));
      TRAINC_RETURN_IF_ERROR(checkParams(stage));
    }
  }
  return checkParams(program);
}

Status checkStepInputs(const TrainStep &train, int64_t batchSize) {
  if (train.numInputs < 0 || (train.numInputs && !train.inputs))
    return Status::error("program tables are inconsistent");
  for (int i = 0; i < train.numInputs; ++i) {
    const TensorInfo &t = train.inputs[i];
    TRAINC_RETURN_IF_ERROR(checkTensorInfo("step input", t));
    if (t.role != InputRole::DropoutKey && (t.rank == 0 || t.shape[0] != batchSize))
      return Status::error("step input " + std::string(t.name) + " " + shapeText(t) +
                           " does not have the program's batch size " +
                           std::to_string(batchSize) + " as its first axis; recompile the model");
  }
  return Status();
}

Status checkParams(const Program &program) {
  for (int i = 0; i < program.numParams; ++i) {
    const ParamInfo &p = program.params[i];
    TRAINC_RETURN_IF_ERROR(checkTensorInfo("parameter", p.tensor));
    if (p.bytes != tensorBytes(p.tensor))
      return Status::error("parameter " + std::string(p.tensor.name) + ": " +
                           std::to_string(p.bytes) + " initial bytes for " +
                           shapeText(p.tensor));
    if (p.blobOffset > program.paramBlobBytes ||
        p.bytes > program.paramBlobBytes - p.blobOffset || !program.paramBlob)
      return Status::error("parameter " + std::string(p.tensor.name) +
                           ": initial value lies outside the parameter blob");
  }
  return Status();
}

void printTrainStep(const TrainStep *train);
void printPipeline(const Pipeline &pipeline);

void printInfo(const Program &program) {
  std::printf("model: %s\n", program.modelName ? program.modelName : "?");
  std::printf("target: %s\n", program.target ? program.target : "?");
  std::printf("batch size: %lld\n", static_cast<long long>(program.batchSize));
  std::printf("inputs:\n");
  for (int i = 0; i < program.numInputs; ++i)
    std::printf("  %s: %s\n", program.inputs[i].name,
                shapeText(program.inputs[i]).c_str());
  std::printf("outputs:\n");
  for (int i = 0; i < program.numOutputs; ++i)
    std::printf("  %s: %s\n", program.outputs[i].name,
                shapeText(program.outputs[i]).c_str());
  // Constants of the computation travel with the parameters but are not
  // part of the model, so they are counted apart.
  uint64_t paramBytes = 0, constantBytes = 0;
  int params = 0, trainable = 0, constants = 0, statistics = 0;
  for (int i = 0; i < program.numParams; ++i) {
    const ParamInfo &p = program.params[i];
    if (p.constant) {
      ++constants;
      constantBytes += p.bytes;
      continue;
    }
    ++params;
    paramBytes += p.bytes;
    trainable += p.trainable ? 1 : 0;
    statistics += p.statisticOf ? 1 : 0;
  }
  std::printf("parameters: %d (%d trainable", params, trainable);
  if (statistics > 0)
    std::printf(", %d batch-norm running statistics", statistics);
  std::printf("), %llu bytes\n", static_cast<unsigned long long>(paramBytes));
  std::printf("constants: %d, %llu bytes\n", constants,
              static_cast<unsigned long long>(constantBytes));
  std::printf("arena: %llu bytes\n",
              static_cast<unsigned long long>(program.arenaBytes));
  std::printf("kernels per forward pass: %d (%d generated, %d library calls)\n",
              program.generatedKernels + program.libraryCalls, program.generatedKernels,
              program.libraryCalls);
#ifdef _OPENMP
  const char *policy = std::getenv("OMP_WAIT_POLICY");
  const char *spin = std::getenv("GOMP_SPINCOUNT");
  std::printf("openmp waits: %s%s%s\n", policy ? "OMP_WAIT_POLICY=" : "", policy ? policy : "",
              spin ? (std::string(policy ? ", " : "") + "GOMP_SPINCOUNT=" + spin).c_str() : "");
  const char *blasThreads = std::getenv("OPENBLAS_NUM_THREADS");
  std::printf("openblas threads: %s\n", blasThreads ? blasThreads : "OpenBLAS's default");
#endif
  if (program.fingerprint)
    std::printf("fingerprint: %s\n", program.fingerprint);
  else
    std::printf("fingerprint: none (--resume cannot check that a checkpoint was "
                "written by this program)\n");
  if (program.modelFingerprint)
    std::printf("model fingerprint: %s (checkpoints of this model resume here, whatever "
                "speed flags built them)\n",
                program.modelFingerprint);
  if (program.train)
    printTrainStep(program.train);
  if (const SelectStep *select = program.select) {
    std::printf("selection entry (--select): the forward and each sample's loss over %lld "
                "candidates, no backward\n  inputs:",
                static_cast<long long>(select->batch));
    for (int i = 0; i < select->numInputs; ++i)
      std::printf("%s %s: %s", i ? "," : "", select->inputs[i].name,
                  shapeText(select->inputs[i]).c_str());
    std::printf("\n  arena: %llu bytes\n  kernels per selection: %d (%d generated, %d library "
                "calls)\n",
                static_cast<unsigned long long>(select->arenaBytes),
                select->generatedKernels + select->libraryCalls, select->generatedKernels,
                select->libraryCalls);
  }
  if (program.pipeline)
    printPipeline(*program.pipeline);
}

/// A pipeline-parallel trainer: each stage's parameters, what it sends and
/// receives per micro-batch, and its training step.
void printPipeline(const Pipeline &pipeline) {
  std::printf("pipeline parallelism: %d stages, one per rank (mpirun -np %d, or a multiple: "
              "stages x replicas, stage-major), %lld micro-batches per step by default in "
              "the 1F1B order\n",
              pipeline.numStages, pipeline.numStages,
              static_cast<long long>(pipeline.microBatches));
  for (int s = 0; s < pipeline.numStages; ++s) {
    const Program &stage = *pipeline.stages[s];
    uint64_t paramBytes = 0;
    int params = 0;
    for (int i = 0; i < stage.numParams; ++i)
      if (!stage.params[i].constant) {
        paramBytes += stage.params[i].bytes;
        ++params;
      }
    const int inFlight =
        static_cast<int>(std::min<int64_t>(pipeline.numStages - s, pipeline.microBatches));
    std::printf("stage %d: %d parameters, %llu bytes; estimated %.3g s per micro-batch (its "
                "forward and backward at 20 TFLOP/s and 1 TB/s); %d micro-batch%s in flight "
                "at most, each with an arena of its own\n",
                s, params, static_cast<unsigned long long>(paramBytes),
                pipeline.stageSeconds ? pipeline.stageSeconds[s] : 0.0, inFlight,
                inFlight == 1 ? "" : "es");
    const TrainStep &train = *stage.train;
    for (int i = 0; i < train.numLinks; ++i) {
      const PipelineLink &link = train.links[i];
      std::printf("  %s %s'%s' %s stage %d: %llu bytes per micro-batch\n",
                  link.send ? "sends" : "receives", link.gradient ? "the gradient of " : "",
                  link.tensor, link.send ? "to" : "from", link.peer,
                  static_cast<unsigned long long>(link.bytes));
    }
    printTrainStep(&train);
  }
}

void printTrainStep(const TrainStep *train) {
  std::printf("training step: optimizer %s, precision %s", name(train->optimizer),
              name(train->precision));
  if (train->clipGradNorm > 0)
    std::printf(", gradient norm clipped at %g", train->clipGradNorm);
  if (train->lossScaling == LossScaling::Dynamic)
    std::printf(", dynamic loss scaling (scale %g at the start, x0.5 and the step skipped "
                "on inf/NaN gradients, x2 after --scale-growth-interval good steps, %lld; the "
                "scale, the good-step count and the skipped steps are optimizer state, in "
                "checkpoints)",
                double(kInitialLossScale), static_cast<long long>(kScaleGrowthInterval));
  else if (train->lossScaling == LossScaling::Fixed)
    std::printf(", loss scale %.9g (fixed; steps with inf/NaN gradients skipped)",
                train->fixedLossScale);
  std::printf("\n  step inputs:\n");
  for (int i = 0; i < train->numInputs; ++i) {
    std::string name = train->inputs[i].name;
    bool made = train->inputs[i].role == InputRole::SampleWeights ||
                train->inputs[i].role == InputRole::SampleMask ||
                train->inputs[i].role == InputRole::DropoutKey;
    std::printf("    %s: %s%s\n", name.c_str(), shapeText(train->inputs[i]).c_str(),
                made ? " (set by the trainer)" : "");
  }
  std::printf("  hyperparameters:");
  for (int i = 0; i < train->numHypers; ++i)
    std::printf(" %s", name(train->hypers[i]));
  uint64_t stateBytes = 0;
  for (int i = 0; i < train->numStates; ++i)
    stateBytes += tensorBytes(train->states[i].tensor);
  std::printf("\n  optimizer state: %d tensors, %llu bytes\n", train->numStates,
              static_cast<unsigned long long>(stateBytes));
  std::printf("  arena: %llu bytes\n", static_cast<unsigned long long>(train->arenaBytes));
  std::printf("  kernels per training step: %d (%d generated, %d library calls)\n",
              train->generatedKernels + train->libraryCalls, train->generatedKernels,
              train->libraryCalls);
  if (train->channelsLastOps)
    std::printf("  layout: channels-last (NHWC) in %d convolution, pooling and batch-norm "
                "calls per step; parameters stay in ONNX's layout\n",
                train->channelsLastOps);
  if (train->padTo) {
    std::printf("  padding to multiples of %d (--pad-to): %llu bytes of pad and crop copies "
                "per step%s\n",
                train->padTo, static_cast<unsigned long long>(train->paddingCopyBytes),
                train->padding && *train->padding ? "" : "; nothing needed padding");
    // One line per ONNX node and dimension.
    for (const char *line = train->padding; line && *line;) {
      const char *end = std::strchr(line, '\n');
      int length = static_cast<int>(end ? end - line : std::strlen(line));
      std::printf("    %.*s\n", length, line);
      line = end ? end + 1 : line + length;
    }
  }
  if (train->dataParallelBuckets)
    std::printf("  data parallelism: the gradients are combined over the ranks (mpirun) in "
                "%d bucket%s per step\n",
                train->dataParallelBuckets, train->dataParallelBuckets == 1 ? "" : "s");
  if (train->accumulate)
    std::printf("  gradient accumulation: %lld micro-batches per step by default; kernels per "
                "micro-batch: %d (%d generated, %d library calls)\n",
                static_cast<long long>(train->gradAccum),
                train->accumulateGeneratedKernels + train->accumulateLibraryCalls,
                train->accumulateGeneratedKernels, train->accumulateLibraryCalls);
}

Status allocateDevice(Context &context, size_t bytes, DevicePtr &result) {
  void *ptr = nullptr;
  TRAINC_RETURN_IF_ERROR(context.allocate(&ptr, bytes));
  result = DevicePtr(ptr, DeviceFree{&context});
  return Status();
}

Status allocatePinned(Context &context, size_t bytes, HostPtr &result) {
  void *ptr = nullptr;
  TRAINC_RETURN_IF_ERROR(context.allocateHost(&ptr, bytes));
  result = HostPtr(ptr, HostFree{&context});
  return Status();
}

/// Tensor names become file names; refuse the ones that would escape the
/// folder or name a folder.
Status checkFileName(const char *kind, const char *name) {
  std::string text = name;
  if (text == "." || text == ".." || text.find('/') != std::string::npos)
    return Status::error(std::string(kind) + " name '" + text +
                         "' cannot be used as a file name");
  return Status();
}

/// Reads a parameter saved by --save-params: a regular file no larger than
/// the parameter's .npy can be (a huge or endless file is refused unread),
/// of its dtype and shape, and finite.
Status readSavedParam(const ParamInfo &p, const std::string &path,
                      std::vector<unsigned char> &bytes) {
  const std::string name = p.tensor.name;
  NpyArray saved;
  Status opened = NpyArray::open(path, saved, npyMaxFileBytes(p.bytes));
  if (!opened.ok())
    return Status::error("parameter " + name + ": " + opened.message());
  std::vector<int64_t> shape(p.tensor.shape, p.tensor.shape + p.tensor.rank);
  if (saved.dtype() != p.tensor.dtype || saved.shape() != shape || saved.dataBytes() != p.bytes)
    return Status::error("parameter " + name + ": " + path + " is " +
                         dtypeName(saved.dtype()) + shapeText(saved.shape()) + ", expected " +
                         shapeText(p.tensor));
  TRAINC_RETURN_IF_ERROR(saved.readAll(bytes));
  int64_t bad = firstNonFinite(p.tensor.dtype, bytes.data(), saved.numElements());
  if (bad >= 0)
    return Status::error("parameter " + name + ": " + path + " holds NaN or infinity (element " +
                         std::to_string(bad) + ")");
  return Status();
}

/// Device state of a program: a context, the parameters and constants with
/// their initial values, the arena, and one buffer per input and output of
/// the compiled shape.
Status uploadParams(Context &context, const Program &program, const std::string &paramsDir,
                    std::vector<DevicePtr> &params, std::vector<void *> &pointers) {
  for (int i = 0; i < program.numParams; ++i) {
    const ParamInfo &p = program.params[i];
    params.emplace_back(nullptr, DeviceFree{&context});
    TRAINC_RETURN_IF_ERROR(allocateDevice(context, p.bytes, params.back()));
    const void *source = program.paramBlob + p.blobOffset;
    std::vector<unsigned char> saved;
    if (!paramsDir.empty() && !p.constant) {
      TRAINC_RETURN_IF_ERROR(checkFileName("parameter", p.tensor.name));
      std::string path = paramsDir + "/" + p.tensor.name + ".npy";
      TRAINC_RETURN_IF_ERROR(readSavedParam(p, path, saved));
      source = saved.data();
    }
    TRAINC_RETURN_IF_ERROR(context.copyToDevice(params.back().get(), source, p.bytes));
    // The host copy must stay valid until the (possibly asynchronous) copy ran.
    TRAINC_RETURN_IF_ERROR(context.synchronize());
    pointers.push_back(params.back().get());
  }
  return Status();
}

struct PredictionDevice {
  std::unique_ptr<Context> context;
  std::vector<DevicePtr> params, inputs, outputs;
  DevicePtr arena{nullptr, DeviceFree{nullptr}};
  std::vector<void *> paramPtrs, inputPtrs, outputPtrs;
  ForwardArgs args{};

  Status prepare(const Program &program, const std::string &paramsDir) {
    TRAINC_RETURN_IF_ERROR(createContext(context));
    TRAINC_RETURN_IF_ERROR(uploadParams(*context, program, paramsDir, params, paramPtrs));
    arena = DevicePtr(nullptr, DeviceFree{context.get()});
    TRAINC_RETURN_IF_ERROR(allocateDevice(*context, program.arenaBytes, arena));
    for (int i = 0; i < program.numInputs; ++i) {
      inputs.emplace_back(nullptr, DeviceFree{context.get()});
      TRAINC_RETURN_IF_ERROR(
          allocateDevice(*context, tensorBytes(program.inputs[i]), inputs.back()));
      inputPtrs.push_back(inputs.back().get());
    }
    for (int i = 0; i < program.numOutputs; ++i) {
      outputs.emplace_back(nullptr, DeviceFree{context.get()});
      TRAINC_RETURN_IF_ERROR(
          allocateDevice(*context, tensorBytes(program.outputs[i]), outputs.back()));
      outputPtrs.push_back(outputs.back().get());
    }
    args = ForwardArgs{inputPtrs.data(), outputPtrs.data(), paramPtrs.data(),
                       static_cast<char *>(arena.get())};
    return Status();
  }
};

/// --run: one forward pass; inputs must have exactly the compiled shapes, and
/// outputs (of any shape) are written whole.
Status runOnce(const Program &program, const Options &options) {
  if (options.dataDir.empty() || options.outDir.empty())
    return Status::error("--run needs --data DIR and --out OUTDIR");
  std::vector<NpyArray> arrays(program.numInputs);
  for (int i = 0; i < program.numInputs; ++i) {
    const TensorInfo &t = program.inputs[i];
    TRAINC_RETURN_IF_ERROR(checkFileName("input", t.name));
    std::string path = options.dataDir + "/" + t.name + ".npy";
    Status opened = NpyArray::open(path, arrays[i]);
    if (!opened.ok())
      return Status::error("input " + std::string(t.name) + ": " + opened.message());
    std::vector<int64_t> compiled(t.shape, t.shape + t.rank);
    if (arrays[i].dtype() != t.dtype || arrays[i].shape() != compiled)
      return Status::error("input " + std::string(t.name) + ": " + path + " is " +
                           dtypeName(arrays[i].dtype()) + shapeText(arrays[i].shape()) +
                           ", expected exactly " + shapeText(t));
  }
  // Outputs replace only absent or regular files, checked before any work.
  for (int i = 0; i < program.numOutputs; ++i) {
    TRAINC_RETURN_IF_ERROR(checkFileName("output", program.outputs[i].name));
    TRAINC_RETURN_IF_ERROR(checkReplaceable(
        options.outDir + "/" + program.outputs[i].name + ".npy", "--out"));
  }
  std::vector<std::vector<unsigned char>> hostInputs(program.numInputs);
  for (int i = 0; i < program.numInputs; ++i)
    TRAINC_RETURN_IF_ERROR(arrays[i].readAll(hostInputs[i]));
  std::error_code error;
  std::filesystem::create_directories(options.outDir, error);
  if (error)
    return Status::error("cannot create output folder " + options.outDir + ": " +
                         error.message());
  PredictionDevice device;
  TRAINC_RETURN_IF_ERROR(device.prepare(program, options.train.paramsDir));
  for (int i = 0; i < program.numInputs; ++i)
    TRAINC_RETURN_IF_ERROR(device.context->copyToDevice(
        device.inputPtrs[i], hostInputs[i].data(), tensorBytes(program.inputs[i])));
  TRAINC_RETURN_IF_ERROR(program.forward(*device.context, device.args));
  TRAINC_RETURN_IF_ERROR(device.context->synchronize());
  for (int i = 0; i < program.numOutputs; ++i) {
    const TensorInfo &t = program.outputs[i];
    std::vector<unsigned char> host(tensorBytes(t));
    TRAINC_RETURN_IF_ERROR(
        device.context->copyToHost(host.data(), device.outputPtrs[i], host.size()));
    NpyWriter writer;
    TRAINC_RETURN_IF_ERROR(writer.open(options.outDir + "/" + t.name + ".npy", t.dtype,
                                       std::vector<int64_t>(t.shape, t.shape + t.rank),
                                       "--out"));
    TRAINC_RETURN_IF_ERROR(writer.append(host.data(), host.size()));
    TRAINC_RETURN_IF_ERROR(writer.close());
  }
  return Status();
}

/// Opens DIR/<name>.npy for each of `infos` and checks dtype, the per-sample
/// shape (all axes but the first) and that all have one sample count.
Status openSampleInputs(const std::string &dir, const TensorInfo *infos, int count,
                        std::vector<NpyArray> &arrays, int64_t &samples) {
  arrays.clear();
  arrays.resize(count);
  samples = -1;
  std::string samplesFrom;
  for (int i = 0; i < count; ++i) {
    const TensorInfo &t = infos[i];
    TRAINC_RETURN_IF_ERROR(checkFileName("input", t.name));
    std::string path = dir + "/" + t.name + ".npy";
    Status opened = NpyArray::open(path, arrays[i]);
    if (!opened.ok())
      return Status::error("input " + std::string(t.name) + ": " +
                           opened.message());
    const NpyArray &array = arrays[i];
    // A uint8 file of an f32 input: images as stored (SampleTransform.h).
    const bool image = array.dtype() == DType::U8 && t.dtype == DType::F32;
    if (array.dtype() != t.dtype && !image)
      return Status::error(
          "input " + std::string(t.name) + ": " + path + " has dtype " +
          dtypeName(array.dtype()) + " (" + npyDescr(array.dtype()) +
          "), expected " + dtypeName(t.dtype) + " (" +
          (npyDescr(t.dtype) ? npyDescr(t.dtype) : "none") + ")" +
          (t.dtype == DType::F32 ? " or uint8 images (|u1)" : ""));
    const std::vector<int64_t> &shape = array.shape();
    bool shapeOk = static_cast<int>(shape.size()) == t.rank &&
                   std::equal(shape.begin() + 1, shape.end(), t.shape + 1);
    // Or H x W x C, ToTensor's layout.
    if (image && t.rank == 4 && shape.size() == 4 && shape[1] == t.shape[2] &&
        shape[2] == t.shape[3] && shape[3] == t.shape[1])
      shapeOk = true;
    if (!shapeOk) {
      std::string expected = "(N";
      for (int d = 1; d < t.rank; ++d)
        expected += ", " + std::to_string(t.shape[d]);
      expected += t.rank == 1 ? ",)" : ")";
      return Status::error("input " + std::string(t.name) + ": " + path +
                           " has shape " + shapeText(shape) + ", expected " +
                           expected + " (N samples of the compiled shape " +
                           shapeText(t) + ")");
    }
    if (samples < 0) {
      samples = shape[0];
      samplesFrom = path;
    } else if (shape[0] != samples) {
      return Status::error("input " + std::string(t.name) + ": " + path +
                           " has " + std::to_string(shape[0]) +
                           " samples, but " + samplesFrom + " has " +
                           std::to_string(samples));
    }
  }
  return Status();
}

/// --predict --per-sample-loss: the selection entry over the data in
/// batches of its size (a short last one padded, its rows' weights and mask
/// 0), each sample's loss appended to the file.
Status writeSampleLosses(const Program &program, const Options &options, Context &context,
                         const std::vector<void *> &params) {
  const SelectStep &select = *program.select;
  std::vector<TensorInfo> files;
  std::vector<uint64_t> offsets;
  uint64_t slotBytes = 0;
  int weights = -1, mask = -1;
  for (int i = 0; i < select.numInputs; ++i) {
    offsets.push_back(slotBytes);
    slotBytes += (tensorBytes(select.inputs[i]) + 255) / 256 * 256;
    if (select.inputs[i].role == InputRole::SampleWeights)
      weights = i;
    else if (select.inputs[i].role == InputRole::SampleMask)
      mask = i;
    else
      files.push_back(select.inputs[i]);
  }
  std::vector<NpyArray> arrays;
  int64_t samples = 0;
  TRAINC_RETURN_IF_ERROR(openSampleInputs(options.dataDir, files.data(),
                                          static_cast<int>(files.size()), arrays, samples));
  std::vector<SampleTransform> transforms;
  TRAINC_RETURN_IF_ERROR(sampleTransforms(files.data(), static_cast<int>(files.size()), arrays,
                                          options.train.samples, false, 0, transforms));
  std::vector<BatchField> fields;
  for (size_t f = 0, i = 0; i < static_cast<size_t>(select.numInputs); ++i)
    if (static_cast<int>(i) != weights && static_cast<int>(i) != mask) {
      fields.push_back({&arrays[f], tensorBytes(files[f], 1), offsets[i], &transforms[f]});
      ++f;
    }
  DevicePtr slot(nullptr, DeviceFree{&context}), outputs(nullptr, DeviceFree{&context}),
      arena(nullptr, DeviceFree{&context});
  TRAINC_RETURN_IF_ERROR(allocateDevice(context, std::max<uint64_t>(slotBytes, 256), slot));
  TRAINC_RETURN_IF_ERROR(allocateDevice(context, 256 + select.batch * 4, outputs));
  TRAINC_RETURN_IF_ERROR(allocateDevice(context, select.arenaBytes, arena));
  std::vector<void *> inputPtrs;
  for (uint64_t at : offsets)
    inputPtrs.push_back(static_cast<char *>(slot.get()) + at);
  std::vector<void *> outputPtrs = {outputs.get(), static_cast<char *>(outputs.get()) + 256};
  const ForwardArgs args{inputPtrs.data(), outputPtrs.data(), params.data(),
                         static_cast<char *>(arena.get())};
  NpyWriter writer;
  TRAINC_RETURN_IF_ERROR(
      writer.open(options.perSampleLossPath, DType::F32, {samples}, "--per-sample-loss"));
  std::vector<char> host(std::max<uint64_t>(slotBytes, 256), 0);
  std::vector<float> losses(select.batch);
  std::vector<int64_t> order(samples);
  std::iota(order.begin(), order.end(), 0);
  for (int64_t first = 0; first < samples; first += select.batch) {
    const int64_t count = std::min(select.batch, samples - first);
    TRAINC_RETURN_IF_ERROR(fillBatch(fields, select.batch, order.data(), first, count,
                                     host.data()));
    for (int index : {weights, mask})
      if (index >= 0) {
        float *row = reinterpret_cast<float *>(host.data() + offsets[index]);
        std::fill(row, row + select.batch, 0.0f);
        std::fill(row, row + count, 1.0f);
      }
    TRAINC_RETURN_IF_ERROR(context.copyToDevice(slot.get(), host.data(), host.size()));
    TRAINC_RETURN_IF_ERROR(select.run(context, args));
    TRAINC_RETURN_IF_ERROR(context.copyToHost(losses.data(), outputPtrs[1], count * 4));
    TRAINC_RETURN_IF_ERROR(writer.append(losses.data(), count * 4));
  }
  return writer.close();
}

Status runPredict(const Program &program, const Options &options) {
  if (options.dataDir.empty() || options.outDir.empty())
    return Status::error("--predict needs --data DIR and --out OUTDIR");
  if (!options.perSampleLossPath.empty()) {
    if (!program.select)
      return Status::error("--per-sample-loss needs a program compiled with --select-batch=B "
                           "(its selection entry computes each sample's loss)");
    TRAINC_RETURN_IF_ERROR(checkReplaceable(options.perSampleLossPath, "--per-sample-loss"));
  }
  if (program.numInputs == 0)
    return Status::error("--predict needs a program with inputs");
  const int64_t batch = program.batchSize;

  // Every check that needs no data runs before anything is read or written.
  for (int i = 0; i < program.numInputs; ++i) {
    const TensorInfo &t = program.inputs[i];
    TRAINC_RETURN_IF_ERROR(checkFileName("input", t.name));
    if (t.rank == 0 || t.shape[0] != batch)
      return Status::error("input " + std::string(t.name) + " " + shapeText(t) +
                           " has no batch axis; --predict needs inputs whose "
                           "first axis is the batch size " +
                           std::to_string(batch));
  }
  for (int i = 0; i < program.numOutputs; ++i) {
    const TensorInfo &t = program.outputs[i];
    TRAINC_RETURN_IF_ERROR(checkFileName("output", t.name));
    if (t.rank == 0 || t.shape[0] != batch)
      return Status::error("output " + std::string(t.name) + " " +
                           shapeText(t) +
                           " has no batch axis; --predict needs per-sample "
                           "outputs");
    // Outputs replace only absent or regular files (never a FIFO, a device
    // or a symlink), checked before any work.
    TRAINC_RETURN_IF_ERROR(
        checkReplaceable(options.outDir + "/" + t.name + ".npy", "--out"));
  }

  std::vector<NpyArray> arrays;
  int64_t samples = 0;
  TRAINC_RETURN_IF_ERROR(openSampleInputs(options.dataDir, program.inputs,
                                          program.numInputs, arrays, samples));
  TRAINC_RETURN_IF_ERROR(checkIndexInputs(program.inputs, program.numInputs, arrays, samples));
  // uint8 images and --normalize, as training read them (never augmented).
  std::vector<SampleTransform> transforms;
  TRAINC_RETURN_IF_ERROR(sampleTransforms(program.inputs, program.numInputs, arrays,
                                          options.train.samples, false, 0, transforms));
  std::vector<int64_t> order(samples);
  std::iota(order.begin(), order.end(), 0);

  // Outputs are streamed batch by batch into their files.
  std::error_code error;
  std::filesystem::create_directories(options.outDir, error);
  if (error)
    return Status::error("cannot create output folder " + options.outDir +
                         ": " + error.message());
  std::vector<NpyWriter> writers(program.numOutputs);
  for (int i = 0; i < program.numOutputs; ++i) {
    const TensorInfo &t = program.outputs[i];
    std::vector<int64_t> shape(t.shape, t.shape + t.rank);
    shape[0] = samples;
    TRAINC_RETURN_IF_ERROR(writers[i].open(
        options.outDir + "/" + t.name + ".npy", t.dtype, shape, "--out"));
  }

  PredictionDevice device;
  TRAINC_RETURN_IF_ERROR(device.prepare(program, options.train.paramsDir));
  Context *context = device.context.get();
  std::vector<void *> &inputPtrs = device.inputPtrs, &outputPtrs = device.outputPtrs;
  std::vector<uint64_t> inputSampleBytes, outputSampleBytes;
  uint64_t stagingBytes = 0;
  for (int i = 0; i < program.numInputs; ++i)
    inputSampleBytes.push_back(tensorBytes(program.inputs[i], 1));
  for (int i = 0; i < program.numOutputs; ++i) {
    outputSampleBytes.push_back(tensorBytes(program.outputs[i], 1));
    stagingBytes = std::max(stagingBytes, tensorBytes(program.outputs[i]));
  }
  std::vector<unsigned char> staging(stagingBytes);
  // One host buffer per input: rows are read from the files batch by batch,
  // never the whole data set at once.
  std::vector<std::vector<unsigned char>> inputStaging(program.numInputs);
  for (int i = 0; i < program.numInputs; ++i)
    inputStaging[i].resize(tensorBytes(program.inputs[i]));

  const auto start = std::chrono::steady_clock::now();
  const int64_t batches = (samples + batch - 1) / batch;
  for (int64_t b = 0; b < batches; ++b) {
    const int64_t first = b * batch;
    const int64_t count = std::min(batch, samples - first);
    for (int i = 0; i < program.numInputs; ++i) {
      const uint64_t rowBytes = inputSampleBytes[i];
      char *device = static_cast<char *>(inputPtrs[i]);
      const std::vector<BatchField> field{{&arrays[i], rowBytes, 0, &transforms[i]}};
      TRAINC_RETURN_IF_ERROR(fillBatch(field, count, order.data(), first, count,
                                       reinterpret_cast<char *>(inputStaging[i].data())));
      TRAINC_RETURN_IF_ERROR(
          context->copyToDevice(device, inputStaging[i].data(), count * rowBytes));
      // The short last batch is padded with zeros: the padding rows are
      // computed and dropped, but must not be garbage (NaN could trip
      // checks in the step).
      if (count < batch)
        TRAINC_RETURN_IF_ERROR(context->fill(device + count * rowBytes, 0,
                                             (batch - count) * rowBytes));
    }
    Status ran = program.forward(*context, device.args);
    if (!ran.ok())
      return Status::error("forward failed on batch " + std::to_string(b) +
                           " (samples " + std::to_string(first) + " to " +
                           std::to_string(first + count - 1) +
                           "): " + ran.message());
    TRAINC_RETURN_IF_ERROR(context->synchronize());
    for (int i = 0; i < program.numOutputs; ++i) {
      const uint64_t bytes = count * outputSampleBytes[i];
      TRAINC_RETURN_IF_ERROR(
          context->copyToHost(staging.data(), outputPtrs[i], bytes));
      TRAINC_RETURN_IF_ERROR(writers[i].append(staging.data(), bytes));
    }
  }
  for (NpyWriter &writer : writers)
    TRAINC_RETURN_IF_ERROR(writer.close());
  if (!options.perSampleLossPath.empty())
    TRAINC_RETURN_IF_ERROR(writeSampleLosses(program, options, *context, device.paramPtrs));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::fprintf(stderr,
               "predict: %lld samples, %lld batches of %lld, %.3f s "
               "(%.1f samples/s), outputs in %s\n",
               static_cast<long long>(samples), static_cast<long long>(batches),
               static_cast<long long>(batch), seconds,
               seconds > 0 ? samples / seconds : 0.0, options.outDir.c_str());
  return Status();
}

/// --predict and --run read the data, the parameters and the thread count;
/// any training flag with them is an error (it would change nothing). A
/// checkpoint is not read by them: the hint says how its parameters get in.
Status checkForwardFlags(const Options &options) {
  if (!options.predict && !options.runOnce)
    return Status();
  const char *mode = options.predict ? "--predict" : "--run";
  static const char *const kUsed[] = {"--predict", "--run",    "--data",      "--out",
                                      "--threads", "--params", "--normalize", "--info",
                                      "--help",    "--per-sample-loss"};
  for (const std::string &flag : options.given) {
    if (flag == "--normalize" && options.runOnce)
      return Status::error("--normalize: --run takes the inputs as they are; --predict "
                           "normalizes");
    if (std::find(std::begin(kUsed), std::end(kUsed), flag) != std::end(kUsed))
      continue;
    if (flag == "--checkpoint-dir" || flag == "--resume")
      return Status::error(std::string(mode) + " does not read checkpoints (it would predict "
                           "with the model's initial weights): give it the trained parameters "
                           "with --params DIR, the folder a training run's --save-params "
                           "wrote");
    return Status::error(flag + " is a training flag; " + mode +
                         " reads only --data, --out, --params, --normalize, --per-sample-loss and "
                         "--threads");
  }
  return Status();
}

/// The LR range test's flags: its parameters only with --find-lr or
/// --lr=auto; with --find-lr alone (no training after it), no flag that only
/// training reads (the schedule's flags but those that set the test's
/// momentum, see momentumAtPeak). --lr=auto implies --find-lr.
Status checkRangeTestFlags(Options &options) {
  TrainOptions &t = options.train;
  t.findLr |= t.lrAuto;
  auto given = [&](const char *flag) {
    return std::find(options.given.begin(), options.given.end(), flag) != options.given.end();
  };
  if (!t.findLr) {
    for (const char *flag : {"--find-lr-steps", "--find-lr-min", "--find-lr-max", "--find-lr-out"})
      if (given(flag))
        return Status::error(std::string(flag) + " is a parameter of the LR range test; add "
                             "--find-lr (or --lr=auto to train at its suggestion after it)");
    return Status();
  }
  const std::string &prefix = t.rangeTest.outPrefix;
  if (prefix.back() == '/' || prefix == "." || prefix == ".." ||
      (prefix.size() > 2 && prefix.compare(prefix.size() - 3, 3, "/..") == 0) ||
      (prefix.size() > 1 && prefix.compare(prefix.size() - 2, 2, "/.") == 0))
    return Status::error("--find-lr-out " + prefix + ": a prefix of file names "
                         "(PREFIX.jsonl and PREFIX.png), not a folder");
  if (!(t.rangeTest.minLr < t.rangeTest.maxLr))
    return Status::error("--find-lr-min must be below --find-lr-max (the range test's rate "
                         "grows from one to the other)");
  if (t.lrAuto && t.resume)
    return Status::error("--lr=auto runs the range test from the initial weights, before "
                         "step 1; a resumed run goes on at the rate it had: give --lr");
  if (t.lrAuto)
    return Status();
  static const char *const kTrainingOnly[] = {
      "--epochs",        "--steps",         "--eval-data",      "--save-params",
      "--log",           "--export",        "--checkpoint-dir", "--checkpoint-every",
      "--tensorboard",   "--eval-every",    "--topk",           "--eval-output",
      "--keep-best",     "--keep-last",     "--early-stop-patience",
      "--early-stop-min-delta", "--until-step", "--async-workers", "--async", "--staleness-bound",
      "--resume",        "--resume-other-model", "--report-memory", "--lr",
      "--warmup-steps",  "--step-size",     "--step-size-down", "--gamma",
      "--min-lr",        "--pct-start",     "--div-factor",     "--final-div-factor",
      "--three-phase",   "--anneal-strategy", "--max-momentum", "--cyclic-mode",
      "--cyclic-gamma",  "--ema-decay",     "--ema-warmup",     "--swa-start",
      "--swa-every",     "--swa-lr",        "--swa-anneal-steps", "--swa-anneal",
      "--eval-averaged", "--profile",      "--profile-warmup", "--profile-steps"};
  for (const char *flag : kTrainingOnly)
    if (given(flag))
      return Status::error(std::string(flag) + " is a training flag; --find-lr runs only the "
                           "range test (--lr=auto trains after it, at the suggested rate)");
  return Status();
}

/// --profile's parameters only with it; not for a pipeline's stages (other
/// processes run them) nor for a program without a calls table.
Status checkProfileFlags(const Options &options, const Program &program) {
  const ProfileOptions &p = options.train.profile;
  if (!p.enabled) {
    for (const char *flag : {"--profile-warmup", "--profile-steps"})
      if (std::find(options.given.begin(), options.given.end(), flag) != options.given.end())
        return Status::error(std::string(flag) + " is a parameter of --profile; add it");
    return Status();
  }
  if (program.pipeline)
    return Status::error("--profile is not for a pipeline-parallel trainer yet: its stages "
                         "run in the other processes");
  if (program.numCalls == 0)
    return Status::error("--profile: this program has no table of its calls (compile it "
                         "again with this trainc)");
  if (!p.tracePath.empty()) {
    TRAINC_RETURN_IF_ERROR(checkReplaceable(p.tracePath, "--profile"));
    std::string folder = std::filesystem::path(p.tracePath).parent_path().string();
    std::error_code error;
    if (!std::filesystem::is_directory(folder.empty() ? "." : folder, error))
      return Status::error("--profile=" + p.tracePath + ": " + folder + " is not a folder");
  }
  return Status();
}

int run(int argc, char **argv, const Program &program) {
  const char *argv0 = argc > 0 && argv[0] ? argv[0] : "program";
  Options options;
  Status parsed = parseArgs(argc, argv, options);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s: error: %s (see --help)\n", argv0,
                 parsed.message().c_str());
    return 1;
  }
  if (options.help) {
    printUsage(stdout, argv0, program, true);
    return 0;
  }
  if (options.predict && options.runOnce) {
    std::fprintf(stderr, "%s: error: --predict and --run exclude each other\n", argv0);
    return 1;
  }
  if (!options.perSampleLossPath.empty() && !options.predict) {
    std::fprintf(stderr, "%s: error: --per-sample-loss is a --predict flag\n", argv0);
    return 1;
  }
  if (Status used = checkForwardFlags(options); !used.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", argv0, used.message().c_str());
    return 1;
  }
  if (Status used = checkRangeTestFlags(options); !used.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", argv0, used.message().c_str());
    return 1;
  }
  if (Status used = checkProfileFlags(options, program); !used.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", argv0, used.message().c_str());
    return 1;
  }
  bool training = !options.predict && !options.runOnce && !options.dataDir.empty();
  if (!options.info && !options.predict && !options.runOnce && !training) {
    printUsage(stderr, argv0, program, false);
    return 1;
  }
  if (Status checked = checkProgram(program); !checked.ok()) {
    std::fprintf(stderr, "%s: error: invalid program: %s\n", argv0,
                 checked.message().c_str());
    return 1;
  }
  if (options.info)
    printInfo(program);
  if (!options.predict && !options.runOnce && !training)
    return 0;
  if (options.threads > 0) {
#ifdef _OPENMP
    omp_set_num_threads(options.threads);
#endif
  }
  Status predicted = training         ? runTraining(program, options.train)
                     : options.runOnce ? runOnce(program, options)
                                       : runPredict(program, options);
  if (!predicted.ok()) {
    std::fprintf(stderr, "%s: error: %s\n", argv0, predicted.message().c_str());
    return predicted.isLossDiverged() ? kExitLossDiverged : 1;
  }
  return 0;
}

} // namespace detail

#ifdef _OPENMP
/// Sets, for libgomp and OpenBLAS, what they read once when they are loaded
/// (ProcessWaits.h: the spin between parallel regions, OpenBLAS's threads),
/// and runs the program again with it, once. The user's OMP_WAIT_POLICY or
/// GOMP_SPINCOUNT is left as it is; OPENBLAS_NUM_THREADS becomes 1 (this
/// program never runs OpenBLAS on more threads). If the program cannot run
/// itself again, the environment is put back and it goes on as loaded.
void setThreadWaits(char **argv) {
  const bool userWaits = std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT");
  const char *blas = std::getenv("OPENBLAS_NUM_THREADS");
  const bool blasOne = blas && std::strcmp(blas, "1") == 0;
  if (userWaits && blasOne)
    return;
  const std::optional<std::string> userBlas = blas ? std::optional<std::string>(blas) : std::nullopt;
  if (!userWaits &&
      setenv("GOMP_SPINCOUNT", detail::spinCountFor(detail::otherRunnableTasks()), 1) != 0)
    return;
  if (setenv("OPENBLAS_NUM_THREADS", "1", 1) == 0)
    execv("/proc/self/exe", argv);
  if (!userWaits)
    unsetenv("GOMP_SPINCOUNT");
  if (userBlas)
    setenv("OPENBLAS_NUM_THREADS", userBlas->c_str(), 1);
  else
    unsetenv("OPENBLAS_NUM_THREADS");
}
#endif

void prepareProcess(int argc, char **argv) {
#ifdef _OPENMP
  if (argc > 0 && argv && argv[0])
    setThreadWaits(argv);
#else
  (void)argc;
  (void)argv;
#endif
}

int programMain(int argc, char **argv, const Program &program) {
  // The runtime reports errors as Status; this only catches what the C++
  // library throws (std::bad_alloc for a huge batch), so that the process
  // still ends with a message and exit code 1 instead of terminate().
  try {
    return detail::run(argc, argv, program);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "%s: error: %s\n",
                 argc > 0 && argv[0] ? argv[0] : "program", e.what());
    return 1;
  }
}

} // namespace trainc::rt
