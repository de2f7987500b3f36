//===- TrainCheckpoints.cpp - a run's checkpoints on the device -----------===//

#include "TrainCheckpoints.h"

#include "FileIO.h"
#include "Npy.h"
#include "TrainChecks.h"
#include "ProgramSupport.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace trainc::rt::detail {

TrainCheckpoints::TrainCheckpoints(Context &context, const Program &program,
                                   const std::vector<void *> &params,
                                   const std::vector<void *> &states, WeightAverage &average)
    : context(context), program(program), average(average) {
  for (int i = 0; i < program.numParams; ++i)
    if (!program.params[i].constant)
      add(std::string("param/") + program.params[i].tensor.name, program.params[i].tensor,
          params[i], -1);
  const TrainStep &train = *program.train;
  for (int i = 0; i < train.numStates; ++i) {
    const StateInfo &state = train.states[i];
    // Gradient accumulators are overwritten by the next group's first batch,
    // the gradient norm by the next step: neither is part of the run's state.
    if (state.role == StateRole::GradAccum || state.role == StateRole::GradNorm)
      continue;
    bool scalar = isLossScalerState(state.role) && tensorBytes(state.tensor) == 4;
    add(std::string("state/") + state.tensor.name, state.tensor, states[i], scalar ? i : -1);
  }
  if (average.enabled())
    for (int i = 0; i < program.numParams; ++i)
      if (!program.params[i].constant)
        add(std::string("average/") + program.params[i].tensor.name, program.params[i].tensor,
            average.params()[i], -1);
}

void TrainCheckpoints::add(const std::string &name, const TensorInfo &tensor, void *buffer,
                           int scalerState) {
  specs.push_back({name, tensor.dtype, std::vector<int64_t>(tensor.shape, tensor.shape + tensor.rank),
                   {}});
  slots.push_back({buffer, tensorBytes(tensor), scalerState});
}

void TrainCheckpoints::addHostTensor(const std::string &name, DType dtype, int64_t count) {
  specs.push_back({name, dtype, {count}, {}});
  slots.push_back({nullptr, static_cast<uint64_t>(count) * dtypeSize(dtype), -1});
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

namespace {

constexpr const char *kCheckpointFiles[] = {"checkpoint.safetensors", "checkpoint.json"};

/// N of a folder named step-N (digits only), else -1.
int64_t stepFolderNumber(const std::string &name) {
  if (name.size() < 6 || name.size() > 20 || name.compare(0, 5, "step-") != 0)
    return -1;
  int64_t n = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9')
      return -1;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

/// Removes a step-N folder that holds nothing but checkpoint files (a
/// folder with anything else of the user's stays, with a note).
Status removeStepFolder(const std::filesystem::path &folder) {
  std::error_code error;
  for (const auto &entry : std::filesystem::directory_iterator(folder, error)) {
    const std::string name = entry.path().filename().string();
    bool ours = false;
    for (const char *file : kCheckpointFiles)
      ours |= name == file;
    if (!ours || !entry.is_regular_file(error) || entry.is_symlink(error)) {
      std::fprintf(stderr, "note: --keep-last leaves %s: it holds %s, which is not a "
                           "checkpoint file\n",
                   folder.c_str(), name.c_str());
      return Status();
    }
  }
  std::filesystem::remove_all(folder, error);
  if (error)
    return Status::error("--keep-last: cannot remove " + folder.string() + ": " +
                         error.message());
  return Status();
}

} // namespace

Status TrainCheckpoints::keepLast(const std::string &dir, int64_t step, int64_t count) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path folder = fs::path(dir) / ("step-" + std::to_string(step));
  if (fs::is_symlink(folder, error) || (fs::exists(folder, error) && !fs::is_directory(folder)))
    return Status::error("--keep-last: " + folder.string() + " exists and is not a folder");
  if (fs::exists(folder, error))
    TRAINC_RETURN_IF_ERROR(removeStepFolder(folder)); // a resumed run saving the step again
  fs::create_directories(folder, error);
  if (error)
    return Status::error("--keep-last: cannot create " + folder.string() + ": " +
                         error.message());
  for (const char *file : kCheckpointFiles) {
    fs::create_hard_link(fs::path(dir) / file, folder / file, error);
    if (error) {
      error.clear();
      fs::copy_file(fs::path(dir) / file, folder / file, error);
    }
    if (error)
      return Status::error("--keep-last: cannot keep " + (folder / file).string() + ": " +
                           error.message());
  }
  // The step-N folders, newest first; those past the last `count` go.
  std::vector<std::pair<int64_t, fs::path>> kept;
  for (const auto &entry : fs::directory_iterator(dir, error)) {
    const int64_t n = stepFolderNumber(entry.path().filename().string());
    if (n >= 0 && entry.is_directory(error) && !entry.is_symlink(error))
      kept.emplace_back(n, entry.path());
  }
  std::sort(kept.begin(), kept.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  for (size_t i = static_cast<size_t>(count); i < kept.size(); ++i)
    TRAINC_RETURN_IF_ERROR(removeStepFolder(kept[i].second));
  return Status();
}

Status TrainCheckpoints::restore(const std::string &dir, const ResumeExpectation &expect,
                                 ResumePoint &point) {
  // The reader checks every tensor against the file and fills its bytes.
  std::vector<CheckpointTensor> tensors = specs;
  TRAINC_RETURN_IF_ERROR(readCheckpoint(dir, expect, tensors, point));
  average.setUpdates(point.averagedUpdates);
  hostBytes.clear();
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!slots[i].buffer) {
      hostBytes[tensors[i].name] = tensors[i].bytes;
      continue;
    }
    TRAINC_RETURN_IF_ERROR(
        context.copyToDevice(slots[i].buffer, tensors[i].bytes.data(), slots[i].bytes));
  }
  // `tensors` holds the host bytes until the copies are done.
  return context.synchronize();
}

Status TrainCheckpoints::save(const std::string &dir,
                              const std::map<std::string, std::string> &run,
                              const CheckpointPosition &at,
                              const std::map<std::string, std::vector<char>> &host) {
  std::vector<CheckpointTensor> tensors = specs;
  std::map<std::string, std::string> manifest = run;
  manifest["step"] = std::to_string(at.step);
  manifest["epoch"] = std::to_string(at.epoch);
  manifest["batch"] = std::to_string(at.nextBatch);
  manifest["rng"] = at.rng;
  if (average.enabled())
    manifest["averaged_updates"] = std::to_string(average.updates());
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!slots[i].buffer) {
      auto it = host.find(tensors[i].name);
      if (it == host.end() || it->second.size() != slots[i].bytes)
        return Status::error("checkpoint: no state for " + tensors[i].name);
      tensors[i].bytes = it->second;
      continue;
    }
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

/// The parameters on the device, `params` in the program's order.
static ParamFetch fromDevice(Context &context, const Program &program,
                             const std::vector<void *> &params) {
  return [&context, &program, &params](int index, void *host) {
    return context.copyToHost(host, params[index], program.params[index].bytes);
  };
}

Status exportTrainedModel(Context &context, const Program &program,
                          const std::vector<void *> &params, const std::string &path) {
  return exportTrainedModel(program, fromDevice(context, program, params), path);
}

Status saveTrainedParams(Context &context, const Program &program,
                         const std::vector<void *> &params, const std::string &dir) {
  return saveTrainedParams(program, fromDevice(context, program, params), dir);
}

Status exportTrainedModel(const Program &program, const ParamFetch &fetch,
                          const std::string &path) {
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
    TRAINC_RETURN_IF_ERROR(fetch(piece.param, host.data()));
    TRAINC_RETURN_IF_ERROR(file.write(host.data(), piece.paramBytes));
  }
  TRAINC_RETURN_IF_ERROR(file.commit());
  std::fprintf(stderr, "exported the trained model to %s\n", path.c_str());
  return Status();
}

Status saveTrainedParams(const Program &program, const ParamFetch &fetch, const std::string &dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    return Status::error("cannot create " + dir + ": " + error.message());
  for (int i = 0; i < program.numParams; ++i) {
    const ParamInfo &p = program.params[i];
    if (p.constant)
      continue; // names checked with the targets, before step 1
    std::vector<char> host(p.bytes);
    TRAINC_RETURN_IF_ERROR(fetch(i, host.data()));
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
