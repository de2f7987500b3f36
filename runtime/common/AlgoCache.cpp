//===- AlgoCache.cpp - cuDNN algorithm choices kept across runs -----------===//

#include "AlgoCache.h"
#include "FileIO.h"

#include <cerrno>
#include <sys/stat.h>

namespace trainc::rt {

namespace {

constexpr char kHeader[] = "trainc cudnn-cache 1";

bool isDirection(const std::string &s) { return s == "fwd" || s == "data" || s == "filter"; }

/// A non-negative decimal integer of at most 18 digits (no sign, no spaces).
bool parseCount(const std::string &s, int64_t &value) {
  if (s.empty() || s.size() > 18)
    return false;
  value = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

/// Splits on single spaces.
std::vector<std::string> fields(const std::string &line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t space = line.find(' ', start);
    out.push_back(line.substr(start, space - start));
    if (space == std::string::npos)
      return out;
    start = space + 1;
  }
}

/// Whether `key` is "<direction>:<v>,<v>,..." as keyOf() makes it.
bool validKey(const std::string &direction, const std::string &values) {
  if (!isDirection(direction) || values.empty())
    return false;
  size_t count = 0, start = 0;
  while (start <= values.size()) {
    size_t comma = values.find(',', start);
    std::string v = values.substr(start, comma - start);
    int64_t ignored;
    if (!parseCount(v, ignored) || ++count > AlgoCache::kMaxKeyValues)
      return false;
    if (comma == std::string::npos)
      return true;
    start = comma + 1;
  }
  return false;
}

} // namespace

AlgoCache::AlgoCache(std::string identity) : identity(std::move(identity)) {
  for (char &c : this->identity)
    if (c == '\n' || c == '\r')
      c = ' ';
}

std::string AlgoCache::keyOf(const std::string &direction, const std::vector<int64_t> &values) {
  std::string key = direction + " ";
  for (size_t i = 0; i < values.size(); ++i)
    key += (i ? "," : "") + std::to_string(values[i] < 0 ? 0 : values[i]);
  return key;
}

void AlgoCache::load(const std::string &path, std::string &note) {
  note.clear();
  choices.clear();
  dirty = foreign = false;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      note = "cannot inspect '" + path + "'";
      foreign = true;
    }
    return;
  }
  std::string bytes;
  Status read = readRegularFile(path, "", kMaxBytes, bytes);
  if (!S_ISREG(st.st_mode) || !read.ok()) {
    note = "'" + path + "' is not a regular file of at most 1 MiB; not used or replaced";
    foreign = true;
    return;
  }
  // Lines, each ended by '\n'.
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) {
      note = "'" + path + "' ends in the middle of a line; not used";
      return;
    }
    lines.push_back(bytes.substr(start, end - start));
    start = end + 1;
  }
  if (lines.empty() || lines[0] != kHeader) {
    note = "'" + path + "' is not a trainc cuDNN cache file; not used or replaced";
    foreign = true;
    return;
  }
  if (lines.size() < 2 || lines[1] != "identity " + identity) {
    note = "'" + path + "' was made for another device, cuDNN, program or --deterministic; "
           "searching again";
    dirty = true; // Replaced by this run's choices.
    return;
  }
  std::map<std::string, AlgoChoice> read_choices;
  for (size_t i = 2; i < lines.size(); ++i) {
    std::vector<std::string> f = fields(lines[i]);
    int64_t algo = 0, math = 0;
    if (f.size() != 4 || !validKey(f[0], f[1]) || !parseCount(f[2], algo) ||
        !parseCount(f[3], math) || algo >= kMaxAlgo || math >= kMaxMathType ||
        read_choices.size() >= kMaxEntries) {
      note = "'" + path + "' line " + std::to_string(i + 1) + " is malformed; not used";
      dirty = true;
      return;
    }
    read_choices[f[0] + " " + f[1]] = {static_cast<int>(algo), static_cast<int>(math)};
  }
  choices = std::move(read_choices);
}

std::string AlgoCache::text() const {
  std::string out = std::string(kHeader) + "\nidentity " + identity + "\n";
  for (const auto &[key, choice] : choices)
    out += key + " " + std::to_string(choice.algo) + " " + std::to_string(choice.mathType) +
           "\n";
  return out;
}

Status AlgoCache::save(const std::string &path) {
  if (!dirty)
    return Status();
  if (foreign)
    return Status::error("--cudnn-cache: '" + path +
                         "' is not a trainc cuDNN cache file; left as it is");
  TRAINC_RETURN_IF_ERROR(checkReplaceable(path, "--cudnn-cache"));
  std::string out = text();
  TRAINC_RETURN_IF_ERROR(writeFileAtomically(path, "--cudnn-cache", out.data(), out.size()));
  dirty = false;
  return Status();
}

const AlgoChoice *AlgoCache::find(const std::string &key) const {
  auto it = choices.find(key);
  return it == choices.end() ? nullptr : &it->second;
}

void AlgoCache::insert(const std::string &key, AlgoChoice choice) {
  auto it = choices.find(key);
  if (it != choices.end()) {
    if (it->second.algo == choice.algo && it->second.mathType == choice.mathType)
      return;
    it->second = choice;
  } else if (choices.size() < kMaxEntries) {
    choices.emplace(key, choice);
  } else {
    return;
  }
  dirty = true;
}

} // namespace trainc::rt
