//===- Members.cpp - the trainer processes of trainc pbt ------------------===//

#include "Members.h"

#include "../../runtime/common/FileIO.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace trainc::pbt {

using rt::AtomicFile;
using rt::FileHandle;

namespace {

volatile sig_atomic_t gStopSignal = 0;

void onStopSignal(int signal) { gStopSignal = signal; }

std::string errnoText(const std::string &what) { return what + ": " + std::strerror(errno); }

/// A number kept as text in checkpoint.json ("step": "40").
bool integerField(const nlohmann::json &json, const char *key, int64_t &out) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_string())
    return false;
  const std::string &text = it->get_ref<const std::string &>();
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  out = std::stoll(text);
  return true;
}

} // namespace

std::string memberDir(const std::string &run, int member) {
  char name[16];
  std::snprintf(name, sizeof(name), "%02d", member);
  return run + "/members/" + name;
}

std::string checkpointDir(const std::string &run, int member) {
  return memberDir(run, member) + "/checkpoint";
}

void catchStopSignals() {
  struct sigaction action {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0; // no SA_RESTART: waitpid returns EINTR
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int stopSignal() { return gStopSignal; }

Status makeFolder(const std::string &path) {
  if (::mkdir(path.c_str(), 0755) == 0)
    return Status();
  struct stat info {};
  if (errno == EEXIST && ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
    return Status();
  return Status::error(errno == EEXIST ? path + " exists and is not a folder"
                                       : errnoText("creating " + path));
}

Runner::~Runner() {
  stopAll();
  for (auto &[pid, member] : running) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

void Runner::stopAll() {
  for (auto &[pid, member] : running)
    ::kill(pid, SIGTERM);
}

Status Runner::start(int member, const std::vector<std::string> &argv,
                     const std::string &header) {
  const std::string folder = memberDir(run, member);
  const std::string lockPath = folder + "/lock", logPath = folder + "/trainer.log";
  FileHandle lock(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!lock.valid())
    return Status::error(errnoText("opening " + lockPath));
  if (::flock(lock.fd(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK)
      return Status::error(errnoText("locking " + lockPath));
    std::fprintf(stderr, "member %d: waiting for its trainer of an earlier driver to end\n",
                 member);
    while (::flock(lock.fd(), LOCK_EX) != 0) {
      if (errno != EINTR || gStopSignal)
        return Status::error(gStopSignal ? "stopped" : errnoText("locking " + lockPath));
    }
  }
  rt::FileHandle log;
  TRAINC_RETURN_IF_ERROR(rt::openAppendFile(logPath, "the member's trainer.log", log));
  std::string line = header + "\n";
  TRAINC_RETURN_IF_ERROR(rt::writeAll(log, logPath, line.data(), line.size()));
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t driver = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0)
    return Status::error(errnoText("starting the trainer of member " + std::to_string(member)));
  if (pid == 0) {
    // The trainer ends (checkpointing) when the driver dies, and keeps the
    // member's lock until it has.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != driver)
      ::_exit(1);
    ::fcntl(lock.fd(), F_SETFD, 0);
    ::dup2(log.fd(), STDOUT_FILENO);
    ::dup2(log.fd(), STDERR_FILENO);
    ::execvp(args[0], args.data());
    const std::string failed = "trainc pbt: cannot run " + argv[0] + ": " +
                               std::strerror(errno) + "\n";
    (void)!::write(STDERR_FILENO, failed.data(), failed.size());
    ::_exit(127);
  }
  running[pid] = member;
  return Status();
}

Status Runner::waitOne(Finished &finished) {
  int status = 0;
  pid_t pid;
  bool passedOn = false;
  while ((pid = ::waitpid(-1, &status, 0)) < 0 || !running.count(pid)) {
    if (pid < 0 && errno != EINTR)
      return Status::error(errnoText("waiting for the trainers"));
    if (gStopSignal && !passedOn) {
      stopAll();
      passedOn = true;
    }
  }
  finished.member = running[pid];
  running.erase(pid);
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    finished.how = "exit status " + std::to_string(code);
    finished.outcome = code == 0                     ? Outcome::Trained
                       : code == rt::kExitLossDiverged ? Outcome::Diverged
                       : gStopSignal                   ? Outcome::Stopped
                                                       : Outcome::Failed;
  } else {
    finished.how = "signal " + std::to_string(WTERMSIG(status));
    finished.outcome = gStopSignal ? Outcome::Stopped : Outcome::Failed;
  }
  return Status();
}

Status readCheckpointStep(const std::string &run, int member, bool &exists, int64_t &step,
                          int64_t &totalSteps) {
  const std::string path = checkpointDir(run, member) + "/checkpoint.json";
  struct stat info {};
  exists = ::lstat(path.c_str(), &info) == 0;
  if (!exists)
    return Status();
  std::string text;
  TRAINC_RETURN_IF_ERROR(rt::readRegularFile(path, "checkpoint", 1 << 20, text));
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !integerField(json, "step", step))
    return Status::error(path + " is not a trainer's checkpoint manifest");
  if (!integerField(json, "total_steps", totalSteps))
    return Status::error(path + " has no total_steps: the trainer predates trainc pbt; "
                         "compile it again");
  return Status();
}

Status readScore(const std::string &run, int member, const std::string &key, int64_t step,
                 double &score) {
  const std::string path = memberDir(run, member) + "/log.jsonl";
  FileHandle file;
  uint64_t size = 0;
  TRAINC_RETURN_IF_ERROR(rt::openRegularFile(path, "the member's log", file, size));
  std::ifstream stream(path);
  std::string line;
  bool found = false;
  while (std::getline(stream, line)) {
    if (line.find("\"eval_") == std::string::npos)
      continue;
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    auto at = record.is_object() ? record.find("step") : record.end();
    if (at == record.end() || !at->is_number_integer() || at->get<int64_t>() != step)
      continue;
    auto value = record.find(key);
    if (value == record.end())
      return Status::error(path + ": the evaluation after step " + std::to_string(step) +
                           " has no " + key);
    found = true;
    // A non-finite metric is logged as null: the member diverged.
    score = value->is_number() ? value->get<double>() : std::nan("");
  }
  if (!found)
    return Status::error(path + " holds no evaluation after step " + std::to_string(step) +
                         " (see " + memberDir(run, member) + "/trainer.log)");
  return Status();
}

std::string lastTrainerLine(const std::string &run, int member) {
  const std::string path = memberDir(run, member) + "/trainer.log";
  FileHandle file;
  uint64_t size = 0;
  if (!rt::openRegularFile(path, "", file, size).ok())
    return "";
  const uint64_t bytes = std::min<uint64_t>(size, 4096);
  std::string tail(bytes, '\0');
  if (!rt::readAt(file, path, size - bytes, tail.data(), bytes).ok())
    return "";
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r'))
    tail.pop_back();
  return tail.substr(tail.find_last_of('\n') + 1);
}

Status copyCheckpoint(const std::string &run, int parent, int member) {
  for (const char *name : {"checkpoint.safetensors", "checkpoint.json"}) {
    const std::string from = checkpointDir(run, parent) + "/" + name,
                      to = checkpointDir(run, member) + "/" + name;
    FileHandle source;
    uint64_t size = 0;
    TRAINC_RETURN_IF_ERROR(rt::openRegularFile(from, "checkpoint", source, size));
    AtomicFile target;
    TRAINC_RETURN_IF_ERROR(target.open(to, "checkpoint"));
    std::vector<char> buffer(std::min<uint64_t>(size, 16u << 20));
    for (uint64_t offset = 0; offset < size; offset += buffer.size()) {
      const size_t bytes = static_cast<size_t>(std::min<uint64_t>(buffer.size(), size - offset));
      TRAINC_RETURN_IF_ERROR(rt::readAt(source, from, offset, buffer.data(), bytes));
      TRAINC_RETURN_IF_ERROR(target.write(buffer.data(), bytes));
    }
    TRAINC_RETURN_IF_ERROR(target.commit());
  }
  return Status();
}

} // namespace trainc::pbt
