//===- Plot.cpp - curves drawn by matplotlib ------------------------------===//

#include "Plot.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

namespace trainc::rt::detail {

/// python/trainc_plot.py (PlotScript.cpp, generated at build time).
extern const char kPlotScript[];

namespace {

/// Why `python` could not draw (empty: it drew). `missing`: python3 or
/// matplotlib is not there (another python3 may have them).
std::string runScript(const std::string &python, const std::vector<std::string> &args,
                      bool &missing) {
  std::vector<std::string> words = {python, "-c", kPlotScript};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  missing = true;
  pid_t child = 0;
  int spawned = posix_spawnp(&child, python.c_str(), nullptr, nullptr, argv.data(), environ);
  if (spawned != 0)
    return "cannot run " + python + " (" + std::strerror(spawned) + ")";
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      return std::string("waiting for ") + python + ": " + std::strerror(errno);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return "";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
    return python + " has no matplotlib";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return "cannot run " + python;
  missing = false;
  return "the plot script failed (" +
         (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                            : "signal " + std::to_string(WTERMSIG(status))) +
         "; its message is above)";
}

} // namespace

/// $TRAINC_PYTHON where set; else python3 on PATH, then Debian's
/// /usr/bin/python3 (a virtual environment's python3 often lacks
/// matplotlib).
Status drawCurves(const std::vector<std::string> &args) {
  std::vector<std::string> pythons;
  if (const char *chosen = std::getenv("TRAINC_PYTHON"); chosen && *chosen)
    pythons = {chosen};
  else
    pythons = {"python3", "/usr/bin/python3"};
  std::string why;
  for (const std::string &python : pythons) {
    bool missing = false;
    std::string failed = runScript(python, args, missing);
    if (failed.empty())
      return Status();
    if (!missing)
      return Status::error(failed);
    why += (why.empty() ? "" : "; ") + failed;
  }
  return Status::error(why + " (the plot needs python3 with matplotlib: Debian's "
                             "python3-matplotlib, or TRAINC_PYTHON=/path/to/python3)");
}

} // namespace trainc::rt::detail
