//===- Pbt.cpp - trainc pbt: population-based training --------------------===//

#include "Pbt.h"

#include "../../runtime/common/FileIO.h"
#include "Members.h"
#include "PbtOptions.h"
#include "Population.h"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <map>
#include <optional>

namespace trainc::pbt {
namespace {

using Json = nlohmann::json;

enum class Phase { Train, Copy, Done };
constexpr const char *kPhaseNames[] = {"train", "copy", "done"};

struct MemberState {
  Hypers hypers;
  /// The member whose checkpoint it last copied (-1: none).
  int parent = -1;
  /// The last round whose ready point it reached (-1: none yet), the step
  /// it was at and its metric there (NaN: it diverged).
  int64_t readyRound = -1, step = 0;
  double score = std::nan("");
};

/// What pbt.json holds.
struct State {
  Json identity;
  uint64_t rng = 0;
  /// The ready point the members train towards: step (round + 1) * R.
  int64_t round = 0;
  Phase phase = Phase::Train;
  /// The trainer's steps, from the first checkpoint (0: not known yet).
  int64_t totalSteps = 0;
  std::vector<MemberState> members;
  /// Copy phase: (parent, member) checkpoints still to copy.
  std::vector<std::pair<int, int>> copies;
  Json lineage = Json::array();
};

Json hypersJson(const Hypers &hypers) {
  Json json = Json::object();
  for (const auto &[name, value] : hypers)
    json[name] = value;
  return json;
}

Json scoreJson(double score) { return std::isnan(score) ? Json(nullptr) : Json(score); }

Json toJson(const State &s) {
  Json members = Json::array();
  for (const MemberState &m : s.members)
    members.push_back({{"hypers", hypersJson(m.hypers)},
                       {"parent", m.parent < 0 ? Json(nullptr) : Json(m.parent)},
                       {"ready_round", m.readyRound},
                       {"step", m.step},
                       {"score", scoreJson(m.score)}});
  Json copies = Json::array();
  for (const auto &[parent, member] : s.copies)
    copies.push_back({{"parent", parent}, {"member", member}});
  return {{"format", "trainc pbt 1"},
          {"options", s.identity},
          {"rng", std::to_string(s.rng)},
          {"round", s.round},
          {"phase", kPhaseNames[static_cast<int>(s.phase)]},
          {"total_steps", s.totalSteps},
          {"members", members},
          {"copies", copies},
          {"lineage", s.lineage}};
}

/// Reads pbt.json back; anything but what toJson writes is an error naming
/// the file (a state edited by hand or damaged is not guessed at).
std::optional<State> fromJson(const Json &json, const Options &o, const std::string &path,
                              std::string &error) {
  State s;
  try {
    if (json.at("format") != "trainc pbt 1")
      throw std::runtime_error("not a trainc pbt state");
    s.identity = json.at("options");
    s.rng = std::stoull(json.at("rng").get<std::string>());
    s.round = json.at("round").get<int64_t>();
    const std::string phase = json.at("phase").get<std::string>();
    auto named = std::find(std::begin(kPhaseNames), std::end(kPhaseNames), phase);
    if (named == std::end(kPhaseNames))
      throw std::runtime_error("unknown phase '" + phase + "'");
    s.phase = static_cast<Phase>(named - std::begin(kPhaseNames));
    s.totalSteps = json.at("total_steps").get<int64_t>();
    for (const Json &m : json.at("members")) {
      MemberState member;
      for (const HyperSpace &space : o.hypers)
        member.hypers[space.name] = m.at("hypers").at(space.name).get<double>();
      member.parent = m.at("parent").is_null() ? -1 : m.at("parent").get<int>();
      member.readyRound = m.at("ready_round").get<int64_t>();
      member.step = m.at("step").get<int64_t>();
      member.score = m.at("score").is_null() ? std::nan("") : m.at("score").get<double>();
      s.members.push_back(member);
    }
    for (const Json &c : json.at("copies"))
      s.copies.push_back({c.at("parent").get<int>(), c.at("member").get<int>()});
    s.lineage = json.at("lineage");
    const int n = static_cast<int>(s.members.size());
    for (const auto &[parent, member] : s.copies)
      if (parent < 0 || parent >= n || member < 0 || member >= n || parent == member)
        throw std::runtime_error("a copy names no member");
    if (n != o.population || s.round < 0 || s.totalSteps < 0 || !s.lineage.is_array())
      throw std::runtime_error("inconsistent fields");
  } catch (const std::exception &e) {
    error = path + " is damaged or not a trainc pbt state (" + e.what() + ")";
    return std::nullopt;
  }
  return s;
}

/// The first field where the saved options and this command's differ.
std::string firstDifference(const Json &saved, const Json &now) {
  for (auto it = now.begin(); it != now.end(); ++it)
    if (!saved.contains(it.key()) || saved[it.key()] != it.value())
      return it.key();
  return saved == now ? "" : "options";
}

class Driver {
public:
  explicit Driver(Options options) : o(std::move(options)), runner(o.dir, o.parallel) {}
  int run();

private:
  Status prepareFolder();
  Status loadOrStart();
  Status save();
  Status trainRound(bool &stopped);
  Status finishMember(const Finished &finished);
  Status exploitRound();
  Status copyCheckpoints();
  Status finish();
  std::vector<std::string> trainerArgs(int member, std::optional<int64_t> until) const;
  /// --hosts: `mpirun -np 1 --host H ...` on a host with a free slot (taken
  /// for `member`), before the trainer's command; nothing without --hosts.
  std::vector<std::string> placement(int member);
  void release(int member);
  double rankScore(double score) const { return o.metric.lowerIsBetter ? -score : score; }
  int64_t target() const {
    const int64_t step = (state.round + 1) * o.readyEvery;
    return state.totalSteps > 0 ? std::min(step, state.totalSteps) : step;
  }
  std::string path(const std::string &name) const { return o.dir + "/" + name; }

  Options o;
  State state;
  Runner runner;
  rt::FileHandle lock;
  int threads = 0;
  /// --hosts: the members running on each host, and each running member's
  /// host.
  std::vector<int> hostUse;
  std::map<int, size_t> memberHost;
};

/// Cores this process may run on (its affinity mask).
int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
}

std::string valueText(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

Status Driver::prepareFolder() {
  struct stat info {};
  const bool existed = ::stat(o.dir.c_str(), &info) == 0;
  if (existed && !S_ISDIR(info.st_mode))
    return Status::error("--dir " + o.dir + " is not a folder");
  if (!existed)
    TRAINC_RETURN_IF_ERROR(makeFolder(o.dir));
  const std::string lockPath = path("pbt.lock");
  lock = rt::FileHandle(::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!lock.valid())
    return Status::error("opening " + lockPath + ": " + std::strerror(errno));
  if (::flock(lock.fd(), LOCK_EX | LOCK_NB) != 0)
    return Status::error("another trainc pbt runs in " + o.dir + " (it holds " + lockPath + ")");
  if (existed && ::lstat(path("pbt.json").c_str(), &info) != 0) {
    // Only the lock file we just made may be there.
    DIR *d = ::opendir(o.dir.c_str());
    bool others = false;
    while (dirent *entry = d ? ::readdir(d) : nullptr)
      others |= std::strcmp(entry->d_name, ".") && std::strcmp(entry->d_name, "..") &&
                std::strcmp(entry->d_name, "pbt.lock") && std::strcmp(entry->d_name, "members");
    if (d)
      ::closedir(d);
    if (others)
      return Status::error("--dir " + o.dir + " holds files but no pbt.json: give a new or "
                           "empty folder");
  }
  TRAINC_RETURN_IF_ERROR(makeFolder(path("members")));
  for (int m = 0; m < o.population; ++m) {
    TRAINC_RETURN_IF_ERROR(makeFolder(memberDir(o.dir, m)));
    TRAINC_RETURN_IF_ERROR(makeFolder(checkpointDir(o.dir, m)));
  }
  return Status();
}

Status Driver::save() {
  std::string lines;
  for (const Json &record : state.lineage)
    lines += record.dump() + "\n";
  TRAINC_RETURN_IF_ERROR(
      rt::writeFileAtomically(path("lineage.jsonl"), "lineage", lines.data(), lines.size()));
  const std::string text = toJson(state).dump(1) + "\n";
  return rt::writeFileAtomically(path("pbt.json"), "the driver's state", text.data(),
                                 text.size());
}

Status Driver::loadOrStart() {
  const std::string statePath = path("pbt.json");
  struct stat info {};
  if (::lstat(statePath.c_str(), &info) != 0) {
    state.identity = o.identity();
    Rng rng(o.seed);
    for (int m = 0; m < o.population; ++m) {
      MemberState member;
      member.hypers = drawAll(o.hypers, rng);
      state.lineage.push_back({{"event", "start"},
                               {"round", 0},
                               {"member", m},
                               {"step", 0},
                               {"hypers", hypersJson(member.hypers)}});
      state.members.push_back(member);
    }
    state.rng = rng.saved();
    std::fprintf(stderr, "pbt: %d members, ready every %lld steps, in %s\n", o.population,
                 static_cast<long long>(o.readyEvery), o.dir.c_str());
    return save();
  }
  std::string text;
  TRAINC_RETURN_IF_ERROR(rt::readRegularFile(statePath, "the driver's state", 1u << 30, text));
  Json json = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  // The options first: the rest of the state is read as they shape it.
  const Json saved = json.is_object() ? json.value("options", Json()) : Json();
  const std::string differs = saved.is_object() ? firstDifference(saved, o.identity()) : "";
  if (!differs.empty())
    return Status::error(o.dir + " was started with other options (" + differs + ": " +
                         saved.value(differs, Json()).dump() + ", this command: " +
                         o.identity().value(differs, Json()).dump() +
                         "); rerun it with the same options, or give another --dir");
  std::string error;
  std::optional<State> loaded = fromJson(json, o, statePath, error);
  if (!loaded)
    return Status::error(error);
  state = std::move(*loaded);
  std::fprintf(stderr, "pbt: continuing %s at round %lld (%s)\n", o.dir.c_str(),
               static_cast<long long>(state.round + 1),
               kPhaseNames[static_cast<int>(state.phase)]);
  return save(); // the lineage file as the state has it
}

std::vector<std::string> Driver::placement(int member) {
  if (o.hosts.empty())
    return {};
  hostUse.resize(o.hosts.size(), 0);
  size_t h = 0;
  while (h + 1 < o.hosts.size() && hostUse[h] >= o.hosts[h].second)
    ++h;
  ++hostUse[h];
  memberHost[member] = h;
  std::vector<std::string> words = {"mpirun", "-np", "1", "--host", o.hosts[h].first};
  words.insert(words.end(), o.mpirunArgs.begin(), o.mpirunArgs.end());
  return words;
}

void Driver::release(int member) {
  auto it = memberHost.find(member);
  if (it == memberHost.end())
    return;
  --hostUse[it->second];
  memberHost.erase(it);
}

std::vector<std::string> Driver::trainerArgs(int member, std::optional<int64_t> until) const {
  std::vector<std::string> args = o.trainer;
  args.insert(args.end(), {"--checkpoint-dir", checkpointDir(o.dir, member)});
  if (until)
    args.insert(args.end(), {"--resume=auto", "--until-step", std::to_string(*until), "--log",
                             memberDir(o.dir, member) + "/log.jsonl"});
  else
    args.push_back("--resume");
  for (const HyperSpace &space : o.hypers)
    args.insert(args.end(),
                {space.flag(), valueText(state.members[member].hypers.at(space.name))});
  if (threads > 0)
    args.insert(args.end(), {"--threads", std::to_string(threads)});
  return args;
}

Status Driver::finishMember(const Finished &done) {
  MemberState &member = state.members[done.member];
  const std::string logs = memberDir(o.dir, done.member) + "/trainer.log";
  switch (done.outcome) {
  case Outcome::Stopped:
    return Status();
  case Outcome::Failed: {
    const std::string said = lastTrainerLine(o.dir, done.member);
    return Status::error("member " + std::to_string(done.member) + "'s trainer failed (" +
                         done.how + (said.empty() ? "" : ": " + said) + "); its output is in " +
                         logs);
  }
  case Outcome::Diverged:
    std::fprintf(stderr, "member %d: the loss diverged (%s); it takes a better member's place\n",
                 done.member, logs.c_str());
    member.readyRound = state.round;
    member.score = std::nan("");
    return save();
  case Outcome::Trained:
    break;
  }
  bool exists = false;
  int64_t step = 0, total = 0;
  TRAINC_RETURN_IF_ERROR(readCheckpointStep(o.dir, done.member, exists, step, total));
  if (!exists)
    return Status::error("member " + std::to_string(done.member) + "'s trainer wrote no "
                         "checkpoint (see " + logs + ")");
  if (state.totalSteps == 0)
    state.totalSteps = total;
  if (total != state.totalSteps || step != target())
    return Status::error("member " + std::to_string(done.member) + " stopped at step " +
                         std::to_string(step) + " of " + std::to_string(total) +
                         ", not at the ready point " + std::to_string(target()) + " of " +
                         std::to_string(state.totalSteps) + " (see " + logs + ")");
  TRAINC_RETURN_IF_ERROR(readScore(o.dir, done.member, o.metric.key, step, member.score));
  member.readyRound = state.round;
  member.step = step;
  return save();
}

Status Driver::trainRound(bool &stopped) {
  std::vector<int> waiting;
  for (int m = 0; m < o.population; ++m)
    if (state.members[m].readyRound < state.round)
      waiting.push_back(m);
  Status failed;
  size_t next = 0;
  while ((next < waiting.size() && failed.ok() && !stopSignal()) || !runner.idle()) {
    if (next < waiting.size() && failed.ok() && !stopSignal() && !runner.full()) {
      const int m = waiting[next++];
      const int64_t until = (state.round + 1) * o.readyEvery;
      std::vector<std::string> argv = placement(m);
      for (std::string &word : trainerArgs(m, until))
        argv.push_back(std::move(word));
      Status started = runner.start(
          m, argv,
          "== trainc pbt: round " + std::to_string(state.round + 1) + ", to step " +
              std::to_string(until));
      if (!started.ok()) {
        release(m);
        if (failed.ok())
          failed = started;
      }
      continue;
    }
    Finished done;
    TRAINC_RETURN_IF_ERROR(runner.waitOne(done));
    release(done.member);
    Status finished = finishMember(done);
    if (!finished.ok() && failed.ok()) {
      failed = finished;
      runner.stopAll();
    }
  }
  TRAINC_RETURN_IF_ERROR(failed);
  stopped = stopSignal() != 0;
  return Status();
}

Status Driver::copyCheckpoints() {
  for (const auto &[parent, member] : state.copies)
    TRAINC_RETURN_IF_ERROR(copyCheckpoint(o.dir, parent, member));
  state.copies.clear();
  state.phase = Phase::Train;
  return save();
}

Status Driver::exploitRound() {
  std::vector<double> scores;
  std::vector<Hypers> hypers;
  for (int m = 0; m < o.population; ++m) {
    const MemberState &member = state.members[m];
    state.lineage.push_back({{"event", "ready"},
                             {"round", state.round + 1},
                             {"member", m},
                             {"step", member.step},
                             {"metric", o.metric.key},
                             {"score", scoreJson(member.score)},
                             {"diverged", std::isnan(member.score)},
                             {"hypers", hypersJson(member.hypers)},
                             {"parent", member.parent < 0 ? Json(nullptr) : Json(member.parent)}});
    scores.push_back(rankScore(member.score));
    hypers.push_back(member.hypers);
  }
  if (std::all_of(scores.begin(), scores.end(), [](double s) { return std::isnan(s); }))
    return Status::error("every member diverged before step " + std::to_string(target()) +
                         "; lower the searched ranges' HIGH (the members' output is in " +
                         o.dir + "/members/NN/trainer.log)");
  const bool last = state.totalSteps > 0 && target() == state.totalSteps;
  if (last) {
    state.phase = Phase::Done;
    return save();
  }
  Rng rng(state.rng);
  std::vector<Replacement> replaced =
      exploitAndExplore(scores, hypers, o.hypers, o.exploit, o.explore, rng);
  state.rng = rng.saved();
  for (const Replacement &r : replaced) {
    MemberState &member = state.members[r.member];
    const MemberState &parent = state.members[r.parent];
    state.lineage.push_back(
        {{"event", "exploit"},
         {"round", state.round + 1},
         {"member", r.member},
         {"step", parent.step},
         {"parent", r.parent},
         {"parent_score", scoreJson(parent.score)},
         {"score", scoreJson(member.score)},
         {"why", r.diverged ? "diverged" : "truncation"},
         {"explore", o.explore.kind == ExploreKind::Perturb ? "perturb" : "resample"},
         {"hypers_before", hypersJson(member.hypers)},
         {"hypers", hypersJson(r.after)}});
    std::fprintf(stderr, "round %lld: member %d (%s %s) copies member %d (%s)\n",
                 static_cast<long long>(state.round + 1), r.member, o.metric.key.c_str(),
                 scoreJson(member.score).dump().c_str(), r.parent,
                 scoreJson(parent.score).dump().c_str());
    member.hypers = r.after;
    member.parent = r.parent;
    member.step = parent.step;
    member.score = parent.score;
    state.copies.push_back({r.parent, r.member});
  }
  ++state.round;
  state.phase = Phase::Copy;
  return save();
}

Status Driver::finish() {
  int best = -1;
  for (int m = 0; m < o.population; ++m) {
    const double score = rankScore(state.members[m].score);
    if (!std::isnan(score) && (best < 0 || score > rankScore(state.members[best].score)))
      best = m;
  }
  std::printf("%-7s %-14s %-10s", "member", o.metric.key.c_str(), "step");
  for (const HyperSpace &space : o.hypers)
    std::printf(" %-14s", space.name.c_str());
  std::printf(" parent\n");
  for (int m = 0; m < o.population; ++m) {
    const MemberState &member = state.members[m];
    std::printf("%-7d %-14s %-10lld", m, scoreJson(member.score).dump().c_str(),
                static_cast<long long>(member.step));
    for (const HyperSpace &space : o.hypers)
      std::printf(" %-14s", valueText(member.hypers.at(space.name)).c_str());
    std::printf(" %s%s\n", member.parent < 0 ? "-" : std::to_string(member.parent).c_str(),
                m == best ? "  (best)" : "");
  }
  const MemberState &winner = state.members[best];
  Json summary = {{"member", best},
                  {"metric", o.metric.key},
                  {"score", winner.score},
                  {"step", winner.step},
                  {"hypers", hypersJson(winner.hypers)},
                  {"checkpoint", checkpointDir(o.dir, best)}};
  const std::string text = summary.dump(1) + "\n";
  TRAINC_RETURN_IF_ERROR(
      rt::writeFileAtomically(path("best.json"), "best.json", text.data(), text.size()));
  std::fprintf(stderr, "pbt: the best member is %d (%s %s after step %lld); its checkpoint is "
                       "%s (best.json)\n",
               best, o.metric.key.c_str(), valueText(winner.score).c_str(),
               static_cast<long long>(winner.step), checkpointDir(o.dir, best).c_str());
  if (o.exportPath.empty())
    return Status();
  std::vector<std::string> args = placement(best);
  for (std::string &word : trainerArgs(best, std::nullopt))
    args.push_back(std::move(word));
  args.insert(args.end(), {"--export", o.exportPath});
  TRAINC_RETURN_IF_ERROR(runner.start(best, args, "== trainc pbt: --export " + o.exportPath));
  Finished done;
  TRAINC_RETURN_IF_ERROR(runner.waitOne(done));
  release(done.member);
  if (done.outcome != Outcome::Trained)
    return Status::error("exporting member " + std::to_string(best) + " failed (" + done.how +
                         "); its output is in " + memberDir(o.dir, best) + "/trainer.log");
  std::fprintf(stderr, "pbt: wrote %s\n", o.exportPath.c_str());
  return Status();
}

int Driver::run() {
  catchStopSignals();
  bool threadsGiven = false;
  for (const std::string &arg : o.trainer)
    threadsGiven |= arg == "--threads" || arg.rfind("--threads=", 0) == 0;
  if (!threadsGiven && o.hosts.empty())
    threads = std::max(1, usableCores() / o.parallel);
  Status status = prepareFolder();
  if (status.ok())
    status = loadOrStart();
  int64_t rounds = 0;
  bool stopped = false;
  while (status.ok() && state.phase != Phase::Done && !stopped) {
    if (state.phase == Phase::Copy) {
      status = copyCheckpoints();
      if (status.ok() && o.stopAfterRounds > 0 && rounds >= o.stopAfterRounds) {
        std::fprintf(stderr, "pbt: stopped after %lld rounds (--stop-after-rounds); the same "
                             "command continues\n",
                     static_cast<long long>(rounds));
        return 0;
      }
      continue;
    }
    status = trainRound(stopped);
    if (status.ok() && !stopped) {
      status = exploitRound();
      ++rounds;
    }
  }
  if (status.ok() && stopped) {
    std::fprintf(stderr, "pbt: stopped by a signal in round %lld; the same command continues\n",
                 static_cast<long long>(state.round + 1));
    return 130;
  }
  if (status.ok())
    status = finish();
  if (!status.ok()) {
    std::fprintf(stderr, "trainc pbt: error: %s\n", status.message().c_str());
    return 1;
  }
  return 0;
}

} // namespace

int runPbt(const std::vector<std::string> &args) {
  std::string error;
  std::optional<Options> options = parseOptions(args, error);
  if (!options) {
    std::fprintf(stderr, "trainc pbt: error: %s (see trainc pbt --help)\n", error.c_str());
    return 1;
  }
  if (options->help) {
    std::fputs(kPbtUsage, stdout);
    return 0;
  }
  return Driver(std::move(*options)).run();
}

} // namespace trainc::pbt
