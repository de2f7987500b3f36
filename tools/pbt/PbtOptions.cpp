//===- PbtOptions.cpp - the command line of trainc pbt --------------------===//

#include "PbtOptions.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>

namespace trainc::pbt {

const char *const kPbtUsage =
    "usage: trainc pbt --population N --ready-every STEPS --hyper NAME=SCALE:LOW,HIGH...\n"
    "                  [options] --dir RUN -- TRAINER [TRAINER FLAGS...]\n"
    "\n"
    "Population-based training (Jaderberg et al. 2017): N members train with their own\n"
    "hyperparameters, each a run of TRAINER. Every STEPS steps each member evaluates; the\n"
    "worst copy the weights and optimizer state of one of the best (exploit) and perturb the\n"
    "copied hyperparameters (explore), then all train on. RUN keeps the driver's state\n"
    "(pbt.json), the lineage (lineage.jsonl) and each member's checkpoint and logs\n"
    "(members/NN/); run the same command again after a stop or a kill and it continues.\n"
    "\n"
    "  --population N          members (2 to 1024)\n"
    "  --ready-every STEPS     optimizer steps between ready points\n"
    "  --hyper NAME=log:LOW,HIGH | NAME=lin:LOW,HIGH\n"
    "                          a searched hyperparameter, drawn log-uniformly (LOW > 0) or\n"
    "                          uniformly at the start, passed as the trainer's --NAME: lr,\n"
    "                          momentum, weight_decay, beta1, beta2, eps, trust_coefficient,\n"
    "                          clip_grad_norm (repeat the flag for more)\n"
    "  --exploit truncation:F  the bottom F of the ranked members copy one of the top F,\n"
    "                          0 < F <= 0.5 (truncation:0.25)\n"
    "  --explore perturb:F1,F2,... | resample:P\n"
    "                          each copied value times one of the factors (perturb:0.8,1.25),\n"
    "                          or drawn again with probability P, else perturbed by 0.8 or\n"
    "                          1.25; values stay within LOW and HIGH\n"
    "  --metric M              eval_accuracy (default), eval_loss (lower is better) or\n"
    "                          eval_topK (the trainer's --topk K); needs --eval-data\n"
    "  --seed S                the draws of the driver (0); the trainer's own --seed is kept\n"
    "  --parallel P            members trained at once (1); each trainer gets\n"
    "                          cores / P threads unless its flags set --threads\n"
    "  --hosts H:S,...         across machines: each member runs as `mpirun -np 1\n"
    "                          --host H` on a host with one of its S slots free (RUN and\n"
    "                          the data on a file system every host shares; the trainer's\n"
    "                          --threads is yours to set)\n"
    "  --mpirun-arg WORD       one more word for those mpirun commands (repeat it)\n"
    "  --stop-after-rounds R   stop after R more ready points; rerun to continue\n"
    "  --export MODEL.onnx     at the end, the best member's trained model\n"
    "  --dir RUN               the run's folder (created; a rerun continues it)\n"
    "\n"
    "The driver adds to each member's trainer flags: --checkpoint-dir, --resume=auto,\n"
    "--until-step, --log and the hyperparameters' flags; it refuses those in TRAINER FLAGS.\n"
    "A member whose loss diverges (the trainer's exit status 3) is replaced like a\n"
    "bottom-ranked one. Given --seed, the result does not depend on --parallel or on\n"
    "kills and reruns.\n";

namespace {

/// The hyperparameters a trainer takes as flags and resumes with a new value
/// (none of them is recorded in a checkpoint), with whether the value must
/// stay below 1.
struct Known {
  const char *name;
  bool belowOne;
};
constexpr Known kKnownHypers[] = {
    {"lr", false},   {"momentum", false}, {"weight_decay", false}, {"beta1", true},
    {"beta2", true}, {"eps", false},      {"trust_coefficient", false},
    {"clip_grad_norm", false}};

/// A non-negative decimal number: digits, an optional fraction and an
/// optional exponent; no sign, hex, inf or nan.
bool parseNumber(const std::string &text, double &out) {
  size_t i = 0, digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
    ++i, ++digits;
  if (i < text.size() && text[i] == '.')
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i)
      ++digits;
  if (digits == 0)
    return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-'))
      ++i;
    size_t exponent = 0;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i)
      ++exponent;
    if (exponent == 0)
      return false;
  }
  if (i != text.size())
    return false;
  errno = 0;
  out = std::strtod(text.c_str(), nullptr);
  return errno == 0 && std::isfinite(out);
}

bool parseInteger(const std::string &text, int64_t low, int64_t high, int64_t &out) {
  if (text.empty() || text.size() > 18 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  out = std::stoll(text);
  return out >= low && out <= high;
}

std::vector<std::string> splitCommas(const std::string &text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma - start));
    if (comma == std::string::npos)
      return parts;
    start = comma + 1;
  }
}

std::string parseHyper(const std::string &text, std::vector<HyperSpace> &hypers) {
  const std::string shape = "--hyper needs NAME=log:LOW,HIGH or NAME=lin:LOW,HIGH, got '" +
                            text + "'";
  size_t equals = text.find('='), colon = text.find(':');
  if (equals == std::string::npos || colon == std::string::npos || colon < equals)
    return shape;
  HyperSpace space;
  space.name = text.substr(0, equals);
  const std::string scale = text.substr(equals + 1, colon - equals - 1);
  const std::vector<std::string> bounds = splitCommas(text.substr(colon + 1));
  const Known *known = nullptr;
  for (const Known &k : kKnownHypers)
    if (space.name == k.name)
      known = &k;
  if (!known) {
    std::string names;
    for (const Known &k : kKnownHypers)
      names += std::string(names.empty() ? "" : ", ") + k.name;
    return "--hyper " + text + ": '" + space.name + "' is not a hyperparameter the trainer "
           "resumes with a new value (" + names + ")";
  }
  if (scale != "log" && scale != "lin")
    return "--hyper " + text + ": the scale is log or lin, got '" + scale + "'";
  space.scale = scale == "log" ? Scale::Log : Scale::Linear;
  if (bounds.size() != 2 || !parseNumber(bounds[0], space.low) ||
      !parseNumber(bounds[1], space.high))
    return shape + " (LOW and HIGH are non-negative decimal numbers)";
  if (space.low > space.high)
    return "--hyper " + text + ": LOW is above HIGH";
  if (space.scale == Scale::Log && !(space.low > 0))
    return "--hyper " + text + ": a log scale needs LOW > 0";
  if (known->belowOne && !(space.high < 1))
    return "--hyper " + text + ": " + space.name + " must stay below 1";
  for (const HyperSpace &other : hypers)
    if (other.name == space.name)
      return "--hyper " + space.name + " is given twice";
  hypers.push_back(space);
  return "";
}

std::string parseExploit(const std::string &text, ExploitRule &rule) {
  const std::string prefix = "truncation:";
  if (text.rfind(prefix, 0) != 0 || !parseNumber(text.substr(prefix.size()), rule.fraction) ||
      !(rule.fraction > 0) || rule.fraction > 0.5)
    return "--exploit needs truncation:F with 0 < F <= 0.5 (the bottom F copy the top F), "
           "got '" + text + "'";
  return "";
}

std::string parseExplore(const std::string &text, ExploreRule &rule) {
  if (text.rfind("perturb:", 0) == 0) {
    rule.kind = ExploreKind::Perturb;
    rule.factors.clear();
    for (const std::string &part : splitCommas(text.substr(8))) {
      double factor = 0;
      if (!parseNumber(part, factor) || !(factor > 0))
        return "--explore perturb: needs factors > 0 separated by commas, got '" + text + "'";
      rule.factors.push_back(factor);
    }
    return "";
  }
  if (text.rfind("resample:", 0) == 0) {
    rule.kind = ExploreKind::Resample;
    if (!parseNumber(text.substr(9), rule.probability) || rule.probability > 1)
      return "--explore resample:P needs a probability in [0, 1], got '" + text + "'";
    return "";
  }
  return "--explore needs perturb:F1,F2,... or resample:P, got '" + text + "'";
}

std::string parseMetric(const std::string &text, Metric &metric) {
  metric.key = text;
  metric.lowerIsBetter = text == "eval_loss";
  int64_t k = 0;
  if (text == "eval_loss" || text == "eval_accuracy" ||
      (text.rfind("eval_top", 0) == 0 && parseInteger(text.substr(8), 2, 1000000, k)))
    return "";
  return "--metric needs eval_accuracy, eval_loss or eval_topK (K from the trainer's --topk), "
         "got '" + text + "'";
}

/// Whether `args` (the trainer's flags) hold `flag`, as "--flag", "--flag=V".
bool hasFlag(const std::vector<std::string> &args, const std::string &flag) {
  for (size_t i = 1; i < args.size(); ++i)
    if (args[i] == flag || args[i].rfind(flag + "=", 0) == 0)
      return true;
  return false;
}

/// The value of `flag` in `args` ("" if absent).
std::string flagValue(const std::vector<std::string> &args, const std::string &flag) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == flag && i + 1 < args.size())
      return args[i + 1];
    if (args[i].rfind(flag + "=", 0) == 0)
      return args[i].substr(flag.size() + 1);
  }
  return "";
}

std::string checkTrainer(const Options &o) {
  if (o.trainer.empty())
    return "no trainer after '--' (trainc pbt ... --dir RUN -- ./trainer --data D ...)";
  const std::string &program = o.trainer[0];
  if (program.find('/') != std::string::npos && ::access(program.c_str(), X_OK) != 0)
    return "the trainer " + program + " is not an executable file";
  struct Owned {
    const char *flag, *why;
  };
  static const Owned kOwned[] = {
      {"--checkpoint-dir", "each member's is RUN/members/NN/checkpoint"},
      {"--resume", "members resume at every ready point"},
      {"--resume-other-model", "members resume their own model"},
      {"--until-step", "the driver pauses members at the ready points"},
      {"--log", "each member's is RUN/members/NN/log.jsonl"},
      {"--export", "give trainc pbt --export: the best member's model"},
      {"--save-params", "give trainc pbt --export: the best member's model"},
      {"--tensorboard", "the members' logs are in RUN/members/NN/log.jsonl"},
      {"--keep-best", "the driver keeps the members, not their best checkpoints"},
      {"--keep-last", "an exploited member's checkpoint is replaced"},
      {"--early-stop-patience", "a member cannot stop the population"},
      {"--early-stop-min-delta", "a member cannot stop the population"},
      {"--find-lr", "the range test is a run of its own"},
      {"--predict", "members train"},
      {"--run", "members train"},
      {"--info", "members train"},
  };
  for (const Owned &owned : kOwned)
    if (hasFlag(o.trainer, owned.flag))
      return std::string("the trainer's ") + owned.flag + " is the driver's to set (" +
             owned.why + ")";
  for (const HyperSpace &space : o.hypers)
    if (hasFlag(o.trainer, space.flag()))
      return "the trainer's " + space.flag() + " is searched (--hyper " + space.name +
             "=...); drop it from the trainer's flags";
  if (flagValue(o.trainer, "--lr") == "auto")
    return "the trainer's --lr auto runs the range test before step 1, and members resume "
           "at every ready point: give --lr or --hyper lr=...";
  if (!hasFlag(o.trainer, "--data"))
    return "the trainer's flags need --data DIR";
  if (!hasFlag(o.trainer, "--eval-data"))
    return "--metric " + o.metric.key + " is a held-out metric: the trainer's flags need "
           "--eval-data DIR";
  if (o.metric.key.rfind("eval_top", 0) == 0 &&
      flagValue(o.trainer, "--topk") != o.metric.key.substr(8))
    return "--metric " + o.metric.key + " needs the trainer's --topk " + o.metric.key.substr(8);
  return "";
}

} // namespace

nlohmann::json Options::identity() const {
  nlohmann::json hyperJson = nlohmann::json::array();
  for (const HyperSpace &space : hypers)
    hyperJson.push_back({{"name", space.name},
                         {"scale", space.scale == Scale::Log ? "log" : "lin"},
                         {"low", space.low},
                         {"high", space.high}});
  return {{"population", population},
          {"ready_every", readyEvery},
          {"hypers", hyperJson},
          {"exploit", {{"truncation", exploit.fraction}}},
          {"explore",
           explore.kind == ExploreKind::Perturb
               ? nlohmann::json{{"perturb", explore.factors}}
               : nlohmann::json{{"resample", explore.probability}}},
          {"metric", metric.key},
          {"seed", std::to_string(seed)},
          {"trainer", trainer}};
}

std::optional<Options> parseOptions(const std::vector<std::string> &args, std::string &error) {
  Options o;
  size_t end = std::find(args.begin(), args.end(), "--") - args.begin();
  if (end < args.size())
    o.trainer.assign(args.begin() + end + 1, args.end());
  std::set<std::string> seen;
  for (size_t i = 0; i < end; ++i) {
    std::string flag = args[i], value;
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      return o;
    }
    const size_t equals = flag.find('=');
    const bool inlineValue = equals != std::string::npos;
    if (inlineValue) {
      value = flag.substr(equals + 1);
      flag = flag.substr(0, equals);
    } else if (i + 1 < end) {
      value = args[++i];
    } else {
      error = flag + (flag.rfind("--", 0) == 0 ? " needs a value" : ": not a flag of trainc pbt");
      return std::nullopt;
    }
    if (flag != "--hyper" && flag != "--mpirun-arg" && !seen.insert(flag).second) {
      error = flag + " is given twice";
      return std::nullopt;
    }
    int64_t n = 0;
    if (flag == "--population") {
      if (!parseInteger(value, 2, 1024, n))
        error = "--population needs an integer in [2, 1024], got '" + value + "'";
      o.population = static_cast<int>(n);
    } else if (flag == "--ready-every") {
      if (!parseInteger(value, 1, 1000000000000LL, n))
        error = "--ready-every needs a number of steps in [1, 10^12], got '" + value + "'";
      o.readyEvery = n;
    } else if (flag == "--hyper") {
      error = parseHyper(value, o.hypers);
    } else if (flag == "--exploit") {
      error = parseExploit(value, o.exploit);
    } else if (flag == "--explore") {
      error = parseExplore(value, o.explore);
    } else if (flag == "--metric") {
      error = parseMetric(value, o.metric);
    } else if (flag == "--seed") {
      errno = 0;
      char *stop = nullptr;
      o.seed = std::strtoull(value.c_str(), &stop, 10);
      if (value.empty() || !std::isdigit(static_cast<unsigned char>(value[0])) || *stop ||
          errno)
        error = "--seed needs an integer in [0, 2^64 - 1], got '" + value + "'";
    } else if (flag == "--parallel") {
      if (!parseInteger(value, 1, 1024, n))
        error = "--parallel needs an integer in [1, 1024], got '" + value + "'";
      o.parallel = static_cast<int>(n);
    } else if (flag == "--hosts") {
      for (const std::string &part : splitCommas(value)) {
        const size_t colon = part.rfind(':');
        const std::string host = part.substr(0, colon);
        const bool named = !host.empty() && host.find_first_not_of(
                                                "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
                                                "UVWXYZ0123456789.-_") == std::string::npos;
        if (colon == std::string::npos || !named ||
            !parseInteger(part.substr(colon + 1), 1, 1024, n)) {
          error = "--hosts needs HOST:SLOTS,... (a host name and 1 to 1024 slots), got '" +
                  part + "'";
          break;
        }
        o.hosts.push_back({host, static_cast<int>(n)});
      }
    } else if (flag == "--mpirun-arg") {
      o.mpirunArgs.push_back(value);
    } else if (flag == "--stop-after-rounds") {
      if (!parseInteger(value, 1, 1000000000000LL, n))
        error = "--stop-after-rounds needs a positive integer, got '" + value + "'";
      o.stopAfterRounds = n;
    } else if (flag == "--export" || flag == "--dir") {
      if (value.empty())
        error = flag + " needs a non-empty value";
      (flag == "--dir" ? o.dir : o.exportPath) = value;
    } else {
      error = flag + ": not a flag of trainc pbt (the trainer's flags go after '--')";
    }
    if (!error.empty())
      return std::nullopt;
  }
  int slots = 0;
  for (const auto &host : o.hosts)
    slots += host.second;
  if (!o.hosts.empty()) {
    if (seen.count("--parallel"))
      error = "--parallel is the slots of --hosts; give one of them";
    o.parallel = std::min(slots, 1024);
  } else if (!o.mpirunArgs.empty()) {
    error = "--mpirun-arg is a word of --hosts' mpirun commands; give --hosts";
  }
  if (!error.empty())
    return std::nullopt;
  if (o.population == 0)
    error = "--population N is needed";
  else if (o.readyEvery == 0)
    error = "--ready-every STEPS is needed";
  else if (o.hypers.empty())
    error = "at least one --hyper NAME=SCALE:LOW,HIGH is needed";
  else if (o.dir.empty())
    error = "--dir RUN is needed";
  else if (end == args.size())
    error = "the trainer's command goes after '--' (trainc pbt ... --dir RUN -- ./trainer ...)";
  else
    error = checkTrainer(o);
  if (!error.empty())
    return std::nullopt;
  return o;
}

} // namespace trainc::pbt
