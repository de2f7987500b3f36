//===- ProcessWaits.cpp - how a CPU program's threads wait ----------------===//

#include "ProcessWaits.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace trainc::rt::detail {

std::optional<int> procsRunning(std::string_view statText) {
  constexpr std::string_view kKey = "procs_running ";
  for (size_t at = 0; at < statText.size();) {
    size_t end = statText.find('\n', at);
    if (end == std::string_view::npos)
      end = statText.size();
    std::string_view line = statText.substr(at, end - at);
    at = end + 1;
    if (line.substr(0, kKey.size()) != kKey)
      continue;
    std::string_view digits = line.substr(kKey.size());
    int count = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || count < 0)
      return std::nullopt;
    return count;
  }
  return std::nullopt;
}

const char *spinCountFor(std::optional<int> othersRunnable) {
  return othersRunnable && *othersRunnable == 0 ? kLongSpinCount : kShortSpinCount;
}

char taskState(std::string_view taskStatText) {
  // "TID (COMM) S ...": the name may hold spaces and parentheses, the last
  // ") " ends it.
  const size_t close = taskStatText.rfind(") ");
  if (close == std::string_view::npos || close + 2 >= taskStatText.size())
    return 0;
  return taskStatText[close + 2];
}

namespace {

std::string readText(const std::filesystem::path &path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// This process's threads in state R (-1: /proc/self/task cannot be read).
int ownRunnableThreads() {
  std::error_code ec;
  int running = 0;
  for (const auto &task : std::filesystem::directory_iterator("/proc/self/task", ec))
    running += taskState(readText(task.path() / "stat")) == 'R';
  return ec ? -1 : running;
}

} // namespace

std::optional<int> otherRunnableTasks() {
  constexpr int kReads = 4;
  std::optional<int> fewest;
  for (int i = 0; i < kReads; ++i) {
    if (i > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    const std::optional<int> all = procsRunning(readText("/proc/stat"));
    const int own = ownRunnableThreads();
    if (!all || own < 1)
      return std::nullopt;
    const int others = std::max(0, *all - own);
    fewest = std::min(fewest.value_or(others), others);
  }
  return fewest;
}

} // namespace trainc::rt::detail
