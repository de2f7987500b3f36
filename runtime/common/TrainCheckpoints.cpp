//===- TrainCheckpoints.cpp - a run's checkpoints on the device -----------===//

#include "TrainCheckpoints.h"

#include "FileIO.h"
#include "Npy.h"
#include "TrainChecks.h"
#include "ProgramSupport.h"

#include <cstdio>
#include <cstring>
#include <filesystem>

namespace trainc::rt::detail {

TrainCheckpoints::TrainCheckpoints(Context &context, const Program &program,
                                   const std::vector<void *> &params,
                                   const std::vector<void *> &states)
    : context(context), program(program) {
  for (int i = 0; i < program.numParams; ++i)
    if (!program.params[i].constant)
      add(std::string("param/") + program.params[i].tensor.name, program.params[i].tensor,
          params[i], -1);
  const TrainStep &train = *program.train;
  for (int i = 0; i < train.numStates; ++i) {
    const StateInfo &state = train.states[i];
    if (state.role == StateRole::GradAccum)
      continue;
    bool scalar = isLossScalerState(state.role) && tensorBytes(state.tensor) == 4;
    add(std::string("state/") + state.tensor.name, state.tensor, states[i], scalar ? i : -1);
  }
}

void TrainCheckpoints::add(const std::string &name, const TensorInfo &tensor, void *buffer,
                           int scalerState) {
  specs.push_back({name, tensor.dtype, std::vector<int64_t>(tensor.shape, tensor.shape + tensor.rank),
                   {}});
  slots.push_back({buffer, tensorBytes(tensor), scalerState});
}

Status TrainCheckpoints::prepareFolder(const std::string &dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    return Status::error("cannot write checkpoints to " + dir + ": " + error.message());
  // A temporary file next to the checkpoint, as writing one makes (never an
  // open() of an existing name, which could block on a FIFO), removed again.
  AtomicFile probe;
  Status writable = probe.open(dir + "/checkpoint.probe", "checkpoint");
  if (!writable.ok())
    return Status::error("cannot write checkpoints to " + dir + " (" + writable.message() + ")");
  probe.abandon();
  // What writes cut short by a kill left behind (model-sized files).
  return removeStaleTemporaries(dir);
}

Status TrainCheckpoints::restore(const std::string &dir, const ResumeExpectation &expect,
                                 ResumePoint &point) {
  // The reader checks every tensor against the file and fills its bytes.
  std::vector<CheckpointTensor> tensors = specs;
  TRAINC_RETURN_IF_ERROR(readCheckpoint(dir, expect, tensors, point));
  for (size_t i = 0; i < tensors.size(); ++i)
    TRAINC_RETURN_IF_ERROR(
        context.copyToDevice(slots[i].buffer, tensors[i].bytes.data(), slots[i].bytes));
  // `tensors` holds the host bytes until the copies are done.
  return context.synchronize();
}

Status TrainCheckpoints::save(const std::string &dir,
                              const std::map<std::string, std::string> &run,
                              const CheckpointPosition &at) {
  std::vector<CheckpointTensor> tensors = specs;
  std::map<std::string, std::string> manifest = run;
  manifest["step"] = std::to_string(at.step);
  manifest["epoch"] = std::to_string(at.epoch);
  manifest["batch"] = std::to_string(at.nextBatch);
  manifest["rng"] = at.rng;
  for (size_t i = 0; i < tensors.size(); ++i) {
    tensors[i].bytes.resize(slots[i].bytes);
    TRAINC_RETURN_IF_ERROR(
        context.copyToHost(tensors[i].bytes.data(), slots[i].buffer, slots[i].bytes));
    // The loss scaler, readable without the tensors (which hold it too).
    if (int state = slots[i].lossScalerState; state >= 0) {
      float value = 0;
      std::memcpy(&value, tensors[i].bytes.data(), 4);
      char text[32];
      std::snprintf(text, sizeof(text), "%.9g", value);
      manifest[program.train->states[state].tensor.name] = text;
    }
  }
  return writeCheckpoint(dir, tensors, manifest);
}

Status exportTrainedModel(Context &context, const Program &program,
                          const std::vector<void *> &params, const std::string &path) {
  const ExportInfo *info = program.exportInfo;
  uint64_t largest = 0;
  TRAINC_RETURN_IF_ERROR(checkExportLayout(program, largest));
  AtomicFile file;
  TRAINC_RETURN_IF_ERROR(file.open(path, "--export"));
  std::vector<char> host(largest);
  const unsigned char *segment = info->segments;
  for (int k = 0; k < info->numPieces; ++k) {
    const ExportPiece &piece = info->pieces[k];
    TRAINC_RETURN_IF_ERROR(file.write(segment, piece.segmentBytes));
    segment += piece.segmentBytes;
    if (piece.param < 0)
      continue;
    TRAINC_RETURN_IF_ERROR(context.copyToHost(host.data(), params[piece.param],
                                               piece.paramBytes));
    TRAINC_RETURN_IF_ERROR(file.write(host.data(), piece.paramBytes));
  }
  TRAINC_RETURN_IF_ERROR(file.commit());
  std::fprintf(stderr, "exported the trained model to %s\n", path.c_str());
  return Status();
}

Status saveTrainedParams(Context &context, const Program &program,
                         const std::vector<void *> &params, const std::string &dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    return Status::error("cannot create " + dir + ": " + error.message());
  for (int i = 0; i < program.numParams; ++i) {
    const ParamInfo &p = program.params[i];
    if (p.constant)
      continue; // names checked with the targets, before step 1
    std::vector<char> host(p.bytes);
    TRAINC_RETURN_IF_ERROR(context.copyToHost(host.data(), params[i], p.bytes));
    NpyWriter writer;
    TRAINC_RETURN_IF_ERROR(writer.open(dir + "/" + p.tensor.name + ".npy",
                                       p.tensor.dtype,
                                       std::vector<int64_t>(p.tensor.shape,
                                                            p.tensor.shape + p.tensor.rank),
                                       "--save-params"));
    TRAINC_RETURN_IF_ERROR(writer.append(host.data(), host.size()));
    TRAINC_RETURN_IF_ERROR(writer.close());
  }
  return Status();
}

} // namespace trainc::rt::detail
