//===- Members.h - the trainer processes of trainc pbt ---------*- C++ -*-===//
//
// A member of the population is a folder, RUN/members/NN/:
//   checkpoint/    the trainer's --checkpoint-dir (checkpoint.safetensors
//                  and checkpoint.json)
//   log.jsonl      the trainer's --log, continued across ready points
//   trainer.log    the trainer's stdout and stderr, appended
//   lock           held (flock) by the member's running trainer
//
// A trainer runs until the next ready point (--until-step) and resumes its
// checkpoint (--resume=auto). It holds the member's lock while it runs and
// gets SIGTERM when the driver dies (PR_SET_PDEATHSIG), so that a driver
// started again never runs a second trainer on the same folder: it waits
// for the first to save and end.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_TOOLS_PBT_MEMBERS_H
#define TRAINC_TOOLS_PBT_MEMBERS_H

#include "trainc_rt/status.h"

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace trainc::pbt {

using rt::Status;

std::string memberDir(const std::string &run, int member);
std::string checkpointDir(const std::string &run, int member);

/// How a trainer ended.
enum class Outcome { Trained, Diverged, Stopped, Failed };

struct Finished {
  int member;
  Outcome outcome;
  /// The exit status or the signal, for the message.
  std::string how;
};

/// Runs members' trainers, at most `parallel` at once.
class Runner {
public:
  Runner(std::string run, int parallel) : run(std::move(run)), parallel(parallel) {}
  ~Runner();

  /// Starts `argv` for `member` (after waiting for an earlier trainer of
  /// the member, a driver's before this one, to end), its output appended
  /// to the member's trainer.log after a line naming the round.
  Status start(int member, const std::vector<std::string> &argv, const std::string &header);
  bool full() const { return static_cast<int>(running.size()) >= parallel; }
  bool idle() const { return running.empty(); }
  /// Waits for one trainer to end. A signal to the driver (SIGINT,
  /// SIGTERM) is passed on to the trainers, which checkpoint and end; then
  /// `interrupted` is set and the remaining trainers are waited for.
  Status waitOne(Finished &finished);
  /// SIGTERM to every running trainer.
  void stopAll();

private:
  std::string run;
  int parallel;
  std::map<pid_t, int> running;
};

/// Installs the driver's SIGINT and SIGTERM handlers (without SA_RESTART,
/// so that waiting is interrupted) and says whether one came.
void catchStopSignals();
int stopSignal();

/// The member's checkpoint step and the run's total steps (checkpoint.json);
/// false where it has no checkpoint yet.
Status readCheckpointStep(const std::string &run, int member, bool &exists, int64_t &step,
                          int64_t &totalSteps);

/// The `key` value of the member's last evaluation after step `step` in its
/// log.
Status readScore(const std::string &run, int member, const std::string &key, int64_t step,
                 double &score);

/// Replaces `member`'s checkpoint by a copy of `parent`'s, byte for byte;
/// each file is written whole or not at all, so a kill leaves one of the two
/// (and copying again completes it).
Status copyCheckpoint(const std::string &run, int parent, int member);

/// The last line the member's trainer wrote (its error, after a failure).
std::string lastTrainerLine(const std::string &run, int member);

/// Creates `path` as a folder (a symlink or a file there is an error).
Status makeFolder(const std::string &path);

} // namespace trainc::pbt

#endif // TRAINC_TOOLS_PBT_MEMBERS_H
