//===- ProgramOptions.cpp - the command line of a compiled program --------===//
//
// Every flag is one CLI11 definition: its name, value name, help line and a
// validator that checks the text before CLI11 converts it. Validators are
// strict (decimal only: no hex, no sign where none belongs, no trailing
// text) and record their message, so errors read as they always have
// ("--workers needs an integer in [0, 64], got 'two'"), not as CLI11 words
// them.
//
//===----------------------------------------------------------------------===//

#include "ProgramOptions.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace trainc::rt::detail {
namespace {

/// The options and their validators share the first validation error.
struct Parser {
  CLI::App app;
  std::string firstError;

  explicit Parser(const std::string &description, const std::string &name)
      : app(description, name) {}

  std::string error(const std::string &message) {
    if (firstError.empty())
      firstError = message;
    return message;
  }

  /// A folder or file name: any non-empty text.
  CLI::Option *text(const std::string &name, std::string &out, const std::string &valueName,
                    const std::string &help) {
    return app.add_option(name, out, help)
        ->type_name(valueName)
        ->check(CLI::Validator(
            [this, name](std::string &value) {
              return value.empty() ? error(name + " needs a non-empty value") : std::string();
            },
            "", "non-empty"));
  }

  /// A decimal integer in [0, high] (at least `low`): digits only.
  template <typename T>
  CLI::Option *integer(const std::string &name, T &out, uint64_t low, uint64_t high,
                       const std::string &valueName, const std::string &help) {
    auto check = [this, name, low, high](std::string &value) {
      const char *begin = value.data(), *end = value.data() + value.size();
      uint64_t v = 0;
      std::errc ec = std::errc::invalid_argument;
      if (!value.empty() && value[0] >= '0' && value[0] <= '9') {
        auto result = std::from_chars(begin, end, v);
        ec = result.ptr == end ? result.ec : std::errc::invalid_argument;
      }
      if (ec != std::errc() || v < low || v > high)
        return error(name + " needs an integer in [" + std::to_string(low) + ", " +
                     std::to_string(high) + "], got '" + value + "'");
      return std::string();
    };
    return app.add_option(name, out, help)->type_name(valueName)->check(
        CLI::Validator(check, "", "range"));
  }

  /// Why `value` is not a non-negative decimal number (digits, an optional
  /// fraction and exponent; no sign, hex, inf or nan) that the device's f32
  /// holds: out of its range, or rounded to 0 from a non-zero text. With
  /// `belowOne`, in [0, 1). Empty: it is one.
  static std::string numberError(const std::string &name, const std::string &value,
                                 bool belowOne) {
    std::string what = belowOne ? " needs a decimal number in [0, 1)"
                                : " needs a non-negative decimal number";
    size_t i = 0, digits = 0, nonZero = 0;
    auto scanDigits = [&]() {
      for (; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i, ++digits)
        nonZero += value[i] != '0';
    };
    scanDigits();
    if (i < value.size() && value[i] == '.') {
      ++i;
      scanDigits();
    }
    bool ok = digits > 0;
    if (ok && i < value.size() && (value[i] == 'e' || value[i] == 'E')) {
      ++i;
      if (i < value.size() && (value[i] == '+' || value[i] == '-'))
        ++i;
      size_t exponentStart = i;
      for (; i < value.size() && value[i] >= '0' && value[i] <= '9'; ++i) {
      }
      ok = i > exponentStart;
    }
    if (!ok || i != value.size())
      return name + what + ", got '" + value + "'";
    errno = 0;
    double v = std::strtod(value.c_str(), nullptr);
    if (!std::isfinite(v) || v > std::numeric_limits<float>::max())
      return name + ": " + value + " is out of range (the step computes in f32)";
    if (nonZero > 0 && static_cast<float>(v) == 0.0f)
      return name + ": " + value + " rounds to 0 (the step computes in f32)";
    if (belowOne && v >= 1.0)
      return name + what + ", got '" + value + "'";
    return std::string();
  }

  /// A number as numberError accepts it; `keyword` (when given) is accepted
  /// too and sets `keywordGiven` instead.
  CLI::Option *number(const std::string &name, double &out, const std::string &valueName,
                      const std::string &help, bool belowOne = false,
                      const char *keyword = nullptr, bool *keywordGiven = nullptr) {
    auto check = [this, name, belowOne, keyword](std::string &value) {
      if (keyword && value == keyword)
        return std::string();
      std::string message = numberError(name, value, belowOne);
      return message.empty() ? message : error(message);
    };
    // Converted with strtod (CLI11 goes through long double, which can round
    // twice), after the validator accepted the text.
    return app
        .add_option_function<std::string>(
            name,
            [&out, keyword, keywordGiven](const std::string &value) {
              if (keyword && value == keyword)
                *keywordGiven = true;
              else
                out = std::strtod(value.c_str(), nullptr);
            },
            help)
        ->type_name(valueName)
        ->check(CLI::Validator(check, "", "number"));
  }

  /// A flag whose value is one of `choices` ("a|b|c"), handed to `set`.
  CLI::Option *choice(const std::string &name, const std::string &choices,
                      const std::string &help, std::function<void(const std::string &)> set) {
    std::vector<std::string> words;
    for (size_t at = 0;;) {
      size_t bar = choices.find('|', at);
      words.push_back(choices.substr(at, bar - at));
      if (bar == std::string::npos)
        break;
      at = bar + 1;
    }
    std::string listed;
    for (size_t i = 0; i < words.size(); ++i)
      listed += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
    return app.add_option_function<std::string>(name, std::move(set), help)
        ->type_name(choices)
        ->check(CLI::Validator(
            [this, name, words, listed](std::string &v) {
              if (std::find(words.begin(), words.end(), v) != words.end())
                return std::string();
              return error(name + " must be " + listed + ", got '" + v + "'");
            },
            "", choices));
  }

  /// A validator that runs `parse` on the text: its error is the flag's.
  CLI::Validator parsing(std::function<Status(const std::string &)> parse,
                         const std::string &what) {
    return CLI::Validator(
        [this, parse](std::string &value) {
          Status parsed = parse(value);
          return parsed.ok() ? std::string() : error(parsed.message());
        },
        "", what);
  }

  CLI::Option *flag(const std::string &name, bool &out, const std::string &help) {
    return app.add_flag(name, out, help)->disable_flag_override();
  }
};

std::string description(const char *argv0, const Program &program) {
  std::string p = argv0;
  char model[768];
  const TrainStep *train = program.train;
  std::snprintf(model, sizeof(model),
                "Model '%s', compiled by trainc for %s, batch size %lld, %s%s%s.\n\n"
                "Examples:\n"
                "  %s --data train/ --eval-data val/ --epochs 10 --lr %s --checkpoint-dir ckpt/\n"
                "  %s --predict --params trained/ --data val/ --out predictions/\n",
                program.modelName ? program.modelName : "?", program.target ? program.target : "?",
                static_cast<long long>(program.batchSize),
                train ? "a trainer with optimizer " : "a prediction program",
                train ? name(train->optimizer) : "",
                train ? (std::string(", precision ") + name(train->precision)).c_str() : "",
                argv0, train && isAdam(train->optimizer) ? "1e-3" : "0.01",
                argv0);
  return "usage: " + p +
         " --data DIR [--eval-data DIR] (--epochs N | --steps N) [--lr X|auto]\n"
         "          [--momentum M] [--weight-decay W] [--beta1 B] [--beta2 B] [--eps E]\n"
         "          [--trust-coefficient T] [--tensorboard DIR]\n"
         "          [--clip-grad-norm X]\n"
         "          [--seed S] [--no-shuffle] [--workers N] [--save-params DIR] [--log FILE]\n"
         "          [--export MODEL.onnx] [--checkpoint-dir DIR [--checkpoint-every N]\n"
         "          [--keep-last K] [--keep-best METRIC] [--resume[=auto]\n"
         "          [--resume-other-model]]] [--params DIR] [--eval-every N] [--topk K]\n"
         "          [--eval-output NAME] [--early-stop-patience N [--early-stop-min-delta D]]\n"
         "          [--lr-schedule constant|step|cosine|onecycle|cyclic] [--warmup-steps N]\n"
         "          [--step-size N] [--gamma G] [--min-lr X] [--pct-start P]\n"
         "          [--div-factor D] [--final-div-factor F] [--three-phase]\n"
         "          [--cycle-momentum true|false] [--base-momentum M] [--max-momentum M]\n"
         "          [--cyclic-mode triangular|triangular2|exp_range] [--cyclic-gamma G]\n"
         "          [--scale-growth-interval N]\n"
         "          [--grad-accum K] [--micro-batches M] [--cuda-graph on|off]\n"
         "          [--cudnn-benchmark on|off]\n"
         "          [--cudnn-cache FILE|off] [--deterministic] [--comm-timeout SECONDS]\n"
         "          [--comm-overlap auto|on|off]\n"
         "          [--ema-decay D [--ema-warmup] | --swa-start S [--swa-every E]\n"
         "          [--swa-lr X [--swa-anneal-steps N] [--swa-anneal cos|linear]]]\n"
         "          [--eval-averaged] [--normalize INPUT:MEANS:STDS]...\n"
         "          [--augment crop:P,flip] [--report-memory]\n"
         "       " + p + " --find-lr --data DIR [--find-lr-steps N] [--find-lr-min X]\n"
         "          [--find-lr-max X] [--find-lr-out PREFIX]\n"
         "       " + p + " --predict --data DIR --out OUTDIR [--threads N]\n"
         "          [--normalize INPUT:MEANS:STDS]...\n"
         "       " + p + " --run --data DIR --out OUTDIR [--threads N]\n"
         "       " + p + " --info\n"
         "       " + p + " --help\n"
         "\n" + model + "\n";
}

/// An on|off flag bound to `value`.
void onOff(Parser &parser, const std::string &name, bool &value, const std::string &help) {
  parser.choice(name, "on|off", help, [&value](const std::string &text) { value = text == "on"; });
}

/// Defines every flag on `parser`, bound to `options`.
/// The evaluation flags (--eval-every, --topk, --keep-best, early stopping).
void defineEvaluationFlags(Parser &parser, TrainOptions &t) {
  parser.integer("--eval-every", t.evalEvery, 1, static_cast<uint64_t>(kMaxTrainSteps), "N",
                 "with --eval-data: evaluate every N steps too (not only at epochs' ends)");
  parser.integer("--topk", t.topk, 2, 1000000, "K",
                 "with --eval-data: the top-K accuracy too (eval_topK in the log)");
  parser.text("--eval-output", t.evalOutput, "NAME",
              "with --eval-data: the output evaluated (default: the first)");
  parser.text("--keep-best", t.keepBest, "METRIC",
              "with --eval-data and --checkpoint-dir: keep DIR/best, the checkpoint of the best "
              "eval_loss, eval_accuracy or eval_topK so far");
  parser.integer("--keep-last", t.keepLast, 1, 1000000, "K",
                 "with --checkpoint-dir: keep DIR/step-N of the last K checkpoints (the latest "
                 "stays DIR/checkpoint.*)");
  parser.integer("--early-stop-patience", t.earlyStopPatience, 1, 1000000000, "N",
                 "with --eval-data: stop after N evaluations without improvement (of the "
                 "--keep-best metric, else eval_loss)");
  parser.number("--early-stop-min-delta", t.earlyStopMinDelta, "D",
                "an improvement is by more than D (0)");
}

/// --lr-schedule and the parameters of its schedules.
void defineScheduleFlags(Parser &parser, TrainOptions &t) {
  parser.choice("--lr-schedule", "constant|step|cosine|onecycle|cyclic",
                "per-step learning rate, as PyTorch's StepLR, CosineAnnealingLR, OneCycleLR "
                "and CyclicLR (constant)",
                [&t](const std::string &k) { t.schedule.kind = *parseSchedule(k); });
  parser.integer("--warmup-steps", t.schedule.warmupSteps, 0, static_cast<uint64_t>(kMaxTrainSteps), "N",
                 "scale the schedule by min(1, (step + 1) / N)");
  parser.integer("--step-size", t.schedule.stepSize, 0, static_cast<uint64_t>(kMaxTrainSteps), "N",
                 "step: steps per decay; cyclic: steps up (2000)");
  parser.number("--gamma", t.schedule.gamma, "G", "step: the decay factor (0.1)");
  parser.integer("--scale-growth-interval", t.scaleGrowthInterval, 1, 1u << 24, "N",
                 "fp16 dynamic loss scaling: double the scale after N good steps in a row "
                 "(2000)");
  parser.number("--min-lr", t.schedule.minLr, "X", "cosine: the final lr (0); cyclic: the lowest (lr/10)");
  LrSchedule &o = t.schedule;
  parser.number("--pct-start", o.pctStart, "P",
                "onecycle: the share of the steps spent raising the learning rate (0.3)", true);
  parser.number("--div-factor", o.divFactor, "D", "onecycle: the first lr is lr / D (25)");
  parser.number("--final-div-factor", o.finalDivFactor, "F",
                "onecycle: the last lr is the first / F (1e4)");
  parser.flag("--three-phase", o.threePhase,
              "onecycle: back down to the first lr symmetrically, then to the last (fastai's "
              "shape is the default two phases)");
  parser.choice("--anneal-strategy", "cos|linear", "onecycle: how each phase moves (cos)",
                [&o](const std::string &v) { o.anneal = parseAnneal(v); });
  parser.choice("--cycle-momentum", "true|false",
                "onecycle and cyclic: cycle the momentum (SGD, LARS) or beta1 (Adam, AdamW, "
                "LAMB) against the learning rate, between --base-momentum and --max-momentum "
                "(true)",
                [&o](const std::string &v) { o.cycleMomentum = v == "true"; });
  parser.number("--base-momentum", o.baseMomentum, "M",
                "onecycle and cyclic: the momentum at the peak learning rate (0.85; cyclic 0.8)",
                true);
  parser.number("--max-momentum", o.maxMomentum, "M",
                "onecycle and cyclic: the momentum at the lowest learning rate (0.95; cyclic "
                "0.9)",
                true);
  parser.choice("--cyclic-mode", "triangular|triangular2|exp_range",
                "cyclic: the cycle's amplitude constant, halved every cycle, or times "
                "gamma^step (triangular)",
                [&o](const std::string &v) { o.cyclicMode = parseCyclicMode(v); });
  parser.number("--cyclic-gamma", o.cyclicGamma, "G", "cyclic exp_range: the decay (1)");
  parser.integer("--step-size-down", o.stepSizeDown, 1, static_cast<uint64_t>(kMaxTrainSteps),
                 "N", "cyclic: steps down (as many as up)");
}

/// Weight averaging: EMA, SWA with SWALR.
void defineAveragingFlags(Parser &parser, TrainOptions &t) {
  AveragingOptions &a = t.averaging;
  parser.number("--ema-decay", a.emaDecay, "D",
                "keep an exponential moving average of the weights and batch-norm statistics "
                "(timm's ModelEmaV2): after every optimizer step, D * average + (1 - D) * "
                "weights; --export, --save-params and checkpoints carry it",
                true);
  parser.flag("--ema-warmup", a.emaWarmup,
              "--ema-decay: the decay of update k is min(D, 1 - k^(-2/3)) (timm's ModelEmaV3 "
              "warmup; the first update copies)");
  parser.integer("--swa-start", a.swaStart, 0, static_cast<uint64_t>(kMaxTrainSteps), "S",
                 "stochastic weight averaging (torch.optim.swa_utils.AveragedModel): the "
                 "average of the weights after every step k > S with (k - S) % E == 0; "
                 "--export, --save-params and checkpoints carry it");
  parser.integer("--swa-every", a.swaEvery, 1, static_cast<uint64_t>(kMaxTrainSteps), "E",
                 "--swa-start: average every E steps (1)");
  parser.number("--swa-lr", a.swaLr, "X",
                "--swa-start: from step S + 1 on, anneal the learning rate to X (SWALR)");
  parser.integer("--swa-anneal-steps", a.swaAnnealSteps, 0,
                 static_cast<uint64_t>(kMaxTrainSteps), "N",
                 "--swa-lr: steps of the anneal (10; 0: X at once)");
  parser.choice("--swa-anneal", "cos|linear", "--swa-lr: the anneal's shape (cos)",
                [&a](const std::string &v) { a.swaAnneal = parseAnneal(v); });
  parser.flag("--eval-averaged", a.evalAveraged,
              "with --eval-data: evaluate the averaged weights (--ema-decay, --swa-start)");
}

/// --sampler and its parameters (Sampler.h).
void defineSamplerFlags(Parser &parser, TrainOptions &t) {
  SamplerOptions &s = t.sampler;
  parser.choice("--sampler", "uniform|priority|mh",
                "which samples each batch trains: uniform (default: every sample once an "
                "epoch, shuffled); priority: drawn with probability (loss + eps)^alpha from "
                "each sample's last loss (a sum tree); mh: a Metropolis-Hastings chain per "
                "row with acceptance min(1, p_j / p_i); both weight each loss by (N P(i))^-beta "
                "/ max",
                [&s](const std::string &v) {
                  s.kind = v == "priority" ? SamplerKind::Priority
                           : v == "mh"     ? SamplerKind::MetropolisHastings
                                           : SamplerKind::Uniform;
                });
  parser.number("--priority-alpha", s.alpha, "A",
                "--sampler: priorities are (loss + eps)^A (priority 0.6, mh 1)");
  parser.number("--priority-beta", s.beta, "B",
                "--sampler: the importance weights' exponent at step 1, annealed to 1 over the "
                "run, in [0, 1] (0.4)");
  parser.number("--priority-eps", s.eps, "E", "--sampler: added to every loss, > 0 (1e-6)");
  parser.choice("--select", "topk|prob",
                "selective backprop (a program compiled with --select-batch=B): the forward "
                "over B candidates at a time picks the samples a step trains: topk, the "
                "largest losses of the next B (the compiled batch, or --select-fraction of "
                "B); prob, each candidate kept with probability CDF(loss)^beta over the last "
                "losses seen, until the batch is full",
                [&t](const std::string &v) {
                  t.select.kind = v == "prob" ? SelectOptions::Kind::Prob
                                              : SelectOptions::Kind::TopK;
                });
  parser.number("--select-fraction", t.select.fraction, "F",
                "--select=topk: the share of the B candidates each step trains (default: the "
                "compiled batch over B)");
  parser.number("--select-beta", t.select.beta, "BETA",
                "--select=prob: a candidate is kept with probability CDF(loss)^BETA (1)");
  parser.integer("--select-history", t.select.history, 1, 100000000, "R",
                 "--select=prob: the losses the CDF is over, the last R seen (1024)");
  parser.text("--trace-batches", s.tracePath, "FILE",
              "--sampler or --select: every batch's rows (and weights, candidates, losses) as "
              "JSON lines");
}

/// How sample files become inputs: --normalize (repeatable), --augment.
void defineSampleFlags(Parser &parser, TrainOptions &t) {
  SampleOptions &s = t.samples;
  parser.app
      .add_option_function<std::vector<std::string>>(
          "--normalize",
          [&s](const std::vector<std::string> &values) {
            for (const std::string &value : values) {
              s.normalize.emplace_back();
              (void)parseNormalization(value, s.normalize.back()); // checked below
            }
          },
          "INPUT:M1,M2,...:S1,S2,...: (x - mean) / std per channel of an f32 input, as "
          "torchvision's Normalize (after a uint8 file's / 255, as ToTensor); one value or one "
          "per channel; repeat for other inputs")
      ->type_name("INPUT:MEANS:STDS")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check(parser.parsing(
          [](const std::string &value) {
            Normalization n;
            return parseNormalization(value, n);
          },
          "normalization"));
  parser.app
      .add_option_function<std::string>(
          "--augment", [&s](const std::string &value) { (void)parseAugment(value, s); },
          "crop:P,flip: each training sample of the image input as torchvision's "
          "RandomCrop(padding=P) and RandomHorizontalFlip, drawn from the seed, the epoch "
          "and the sample (a resumed run draws the same)")
      ->type_name("crop:P,flip")
      ->check(parser.parsing(
          [](const std::string &value) {
            SampleOptions o;
            return parseAugment(value, o);
          },
          "augment"));
}

/// The LR range test (--find-lr) and its parameters.
void defineRangeTestFlags(Parser &parser, TrainOptions &t) {
  RangeTestOptions &r = t.rangeTest;
  parser.flag("--find-lr", t.findLr,
              "the LR range test instead of training: from the initial weights, the learning "
              "rate grows exponentially over the steps; prints the suggested rate and writes "
              "the curve (PREFIX.jsonl, PREFIX.png); the model is left as it was");
  parser.integer("--find-lr-steps", r.steps, 2, 1000000, "N", "the range test's steps (100)");
  parser.number("--find-lr-min", r.minLr, "X", "the range test's first learning rate (1e-7)");
  parser.number("--find-lr-max", r.maxLr, "X", "the range test's last learning rate (10)");
  parser.text("--find-lr-out", r.outPrefix, "PREFIX",
              "the range test's curve: PREFIX.jsonl and PREFIX.png (find-lr)");
}

void defineKfacFlags(Parser &parser, TrainOptions &t) {
  parser.number("--kfac-damping", t.kfacDamping, "L",
                "K-FAC: the damping lambda; sqrt(L) joins the diagonal of each factor before "
                "it is inverted (1e-3)");
  parser.number("--kfac-stat-decay", t.kfacStatDecay, "D",
                "K-FAC: the factors' running average keeps D of the old value (0.95)", true);
  parser.number("--kfac-kl-clip", t.kfacKlClip, "C",
                "K-FAC: the update is scaled so that lr^2 g^T F^-1 g stays at most C (1e-3)");
  parser.integer("--kfac-inverse-every", t.kfacInverseEvery, 1, 1000000, "T",
                 "K-FAC: invert the factors at step 1 and every T steps after (10)");
}

void defineAsyncFlags(Parser &parser, TrainOptions &t) {
  parser.integer("--async-workers", t.asyncWorkers, 2, 64, "N",
                 "asynchronous SGD on one machine (Hogwild!): N steps at once, each on its own "
                 "batches, arena and dropout keys, updating the shared parameters without "
                 "locks; not deterministic (runs differ), checkpoints and evaluations see one "
                 "state (the CPU target splits --threads between the workers; CUDA: a stream "
                 "each)");
  parser.flag("--async", t.asyncRanks,
              "a --data-parallel trainer under mpirun: asynchronous SGD over a parameter "
              "server in rank 0 (MPI one-sided); each rank trains its share of the epochs "
              "without waiting for the others (no gradient sums); not deterministic");
  parser.integer("--staleness-bound", t.stalenessBound, 1, 1000000000, "K",
                 "--async: a rank waits while it is K steps ahead of the slowest (none)");
}

void defineProfileFlags(Parser &parser, TrainOptions &t) {
  ProfileOptions &p = t.profile;
  parser.app
      .add_option_function<std::string>(
          "--profile",
          [&p](const std::string &value) {
            p.enabled = true;
            p.tracePath = value;
          },
          "time every kernel and library call of a window of steps after a warm-up and "
          "print a table sorted by time (kernel, ONNX nodes, forward/backward/update, calls, "
          "total and mean time, share of the step, GFLOP/s or GB/s); =FILE also writes a "
          "Chrome trace (JSON: Perfetto, chrome://tracing)")
      ->expected(0, 1)
      ->default_str("")
      ->type_name("[=FILE]");
  parser.integer("--profile-warmup", p.warmup, 0, 1000000, "N",
                 "--profile: steps before the window (5)");
  parser.integer("--profile-steps", p.steps, 1, 10000, "N",
                 "--profile: steps in the window (20)");
}

void define(Parser &parser, Options &options) {
  TrainOptions &t = options.train;
  CLI::App &app = parser.app;
  app.set_help_flag();
  app.allow_extras();
  app.get_formatter()->column_width(28);
  parser.flag("--help,-h", options.help, "print this help");
  parser.flag("--info", options.info,
              "print the inputs, outputs, sizes and fingerprint (and the training step: "
              "inputs, hyperparameters, optimizer state)");
  parser.flag("--predict", options.predict,
              "run the forward pass over DIR/<input>.npy and write OUTDIR/<output>.npy (one row "
              "per sample)");
  parser.flag("--run", options.runOnce,
              "one forward pass over inputs of exactly the compiled shapes; outputs as computed");
  parser.text("--data", options.dataDir, "DIR",
              "folder with one .npy file per model input (training: and label.npy)");
  parser.text("--out", options.outDir, "OUTDIR", "folder for the outputs (created if needed)");
  parser.text("--per-sample-loss", options.perSampleLossPath, "FILE.npy",
              "--predict: also each sample's loss against DIR/label.npy, float32 [N] (a "
              "program compiled with --select-batch: its selection entry computes them)");
  parser.integer("--threads", options.threads, 1, 4096, "N",
                 "CPU threads for kernels (default: OMP_NUM_THREADS or all cores)");
  parser.text("--params", t.paramsDir, "DIR",
              "start from DIR/<parameter>.npy (as --save-params wrote them) instead of the "
              "model's initial values");
  parser.text("--eval-data", t.evalDir, "DIR",
              "after every epoch: held-out loss and accuracy on DIR/<input>.npy and "
              "DIR/label.npy");
  parser.integer("--epochs", t.epochs, 0, 1000000000, "N", "epochs to train");
  parser.integer("--steps", t.steps, 0, static_cast<uint64_t>(kMaxTrainSteps), "N",
                 "steps to train (instead of --epochs)");
  parser.number("--lr", t.lr, "X|auto",
                "learning rate (SGD and LARS 0.01, Adam, AdamW and LAMB 0.001); auto: the LR "
                "range test's suggestion (--find-lr, then training at it)",
                false, "auto", &t.lrAuto);
  parser.number("--momentum", t.momentum, "M", "SGD and LARS momentum (0)");
  parser.number("--weight-decay", t.weightDecay, "W", "weight decay (0; AdamW and LAMB 0.01)");
  parser.number("--beta1", t.beta1, "B", "Adam and LAMB beta1, in [0, 1) (0.9)", true);
  parser.number("--beta2", t.beta2, "B", "Adam and LAMB beta2, in [0, 1) (0.999)", true);
  parser.number("--eps", t.eps, "E", "Adam, LAMB and LARS epsilon (1e-8)");
  defineKfacFlags(parser, t);
  parser.number("--trust-coefficient", t.trustCoefficient, "T",
                "LARS: the trust coefficient of the layer-wise learning rate (0.001)");
  parser.number("--clip-grad-norm", t.clipGradNorm, "X",
                "max gradient norm of a trainer compiled with --clip-grad-norm");
  parser.integer("--seed", t.seed, 0, std::numeric_limits<uint64_t>::max(), "S",
                 "seed of the shuffle and the dropout masks, in [0, 2^64 - 1] (0)");
  app.add_flag_callback("--no-shuffle", [&t]() { t.shuffle = false; }, "train in file order")
      ->disable_flag_override();
  parser.flag("--report-memory", t.reportMemory,
              "after training: the arena's planned bytes and the bytes the steps wrote (its "
              "high-water mark)");
  parser.integer("--workers", t.workers, 0, 64, "N",
                 "threads that fill upcoming batches (0: the loop fills them; default 1, and 0 "
                 "for a CPU program whose data files are all read whole at open)");
  parser.text("--save-params", t.saveDir, "DIR", "write the trained parameters, one .npy each");
  parser.text("--log", t.logPath, "FILE",
              "JSON lines: step, epoch, loss, lr per step; epoch, eval_loss, eval_accuracy per "
              "evaluation");
  parser.text("--tensorboard", t.tensorboardDir, "DIR",
              "the log's scalars (loss, lr, momentum, gradient norm, evaluations) as "
              "TensorBoard event files in DIR, a new file per run");
  parser.text("--export", t.exportPath, "MODEL.onnx",
              "after training: the ONNX model with the trained parameters");
  parser.text("--checkpoint-dir", t.checkpointDir, "DIR",
              "write DIR/checkpoint.safetensors and DIR/checkpoint.json");
  parser.integer("--checkpoint-every", t.checkpointEvery, 1,
                 static_cast<uint64_t>(kMaxTrainSteps), "N",
                 "checkpoint every N steps (default: at every epoch's end)");
  defineAsyncFlags(parser, t);
  defineProfileFlags(parser, t);
  parser.integer("--until-step", t.untilStep, 1, static_cast<uint64_t>(kMaxTrainSteps), "N",
                 "pause after step N: evaluate (with --eval-data), checkpoint and end; "
                 "--resume continues the run, whose schedule still spans --steps or --epochs");
  parser.app
      .add_option_function<std::string>(
          "--resume",
          [&t](const std::string &value) {
            t.resume = value != "auto";
            t.resumeAuto = value == "auto";
          },
          "continue from the checkpoint in --checkpoint-dir; auto: where there is one, else "
          "start")
      ->expected(0, 1)
      ->default_str("")
      ->type_name("[auto]")
      ->check(CLI::Validator(
          [&parser](std::string &v) {
            if (v.empty() || v == "auto")
              return std::string();
            return parser.error("--resume takes no value, or auto; got '" + v + "'");
          },
          "", "auto"));
  parser.flag("--resume-other-model", t.resumeOtherModel,
              "with --resume: accept a checkpoint of a changed model (every tensor must "
              "still match by name, dtype and shape)");
  parser.integer("--grad-accum", t.gradAccum, 1, 1000000, "K",
                 "batches per optimizer step (a program compiled with --grad-accum; its K "
                 "by default): the step's gradient is the group's mean, a short last group "
                 "included");
  parser.integer("--micro-batches", t.microBatches, 1, 1000000, "M",
                 "a pipeline-parallel trainer's micro-batches per optimizer step (its "
                 "compiled --micro-batches by default), run in the 1F1B order");
  onOff(parser, "--cuda-graph", t.cudaGraph,
        "on (default): record the training step as a CUDA graph at its second run and "
        "replay it with one launch; off: launch its kernels one by one (no effect on the "
        "CPU target)");
  onOff(parser, "--cudnn-benchmark", t.cudnnBenchmark,
        "on (default): time cuDNN's algorithms for each convolution shape at its first call "
        "and keep the fastest; off: cuDNN's heuristic choice (no effect on the CPU target)");
  parser.text("--cudnn-cache", t.cudnnCache, "FILE|off",
              "where --cudnn-benchmark keeps its choices for later runs on the same device, "
              "cuDNN and program (default: this program's path + .cudnn-cache; off: search "
              "every run; no effect on the CPU target)");
  parser.number("--comm-timeout", t.commTimeout, "SECONDS",
                "data parallelism (mpirun): how long a sum over the ranks waits for the others "
                "before the run stops with an error (default 300; 0: forever)");
  parser.choice("--comm-overlap", "auto|on|off",
                "data parallelism (mpirun): on: each bucket's sum over the ranks runs while the "
                "backward goes on (a second CUDA stream; a thread on the CPU); off: in the "
                "step's order; auto (default): on, but on the CPU target only where this "
                "process may run on more cores than its kernels' threads (the summing thread "
                "would otherwise take their time)",
                [&t](const std::string &text) {
                  t.commOverlap = text == "on"    ? CommOverlap::On
                                  : text == "off" ? CommOverlap::Off
                                                  : CommOverlap::Auto;
                });
  parser.flag("--deterministic", t.deterministic,
              "deterministic convolution algorithms only (the CPU target's always are)");
  defineEvaluationFlags(parser, t);
  defineScheduleFlags(parser, t);
  defineRangeTestFlags(parser, t);
  defineAveragingFlags(parser, t);
  defineSampleFlags(parser, t);
  defineSamplerFlags(parser, t);
}

/// CLI11's own errors (a missing value, a value for a flag, a repeated
/// option) in the program's words.
std::string parseErrorText(const CLI::ParseError &e) {
  std::string what = e.what();
  size_t colon = what.find(':');
  std::string name = what.substr(0, colon == std::string::npos ? 0 : colon);
  if (what.find("disallowed flag override") != std::string::npos)
    return "--" + what.substr(0, what.find(' ')) + " takes no value";
  if (!name.empty() && what.find("required") != std::string::npos &&
      what.find("missing") != std::string::npos)
    return name + " needs a value";
  if (!name.empty() && what.find("At Most 1") != std::string::npos)
    return name + " is given more than once";
  return what;
}

/// Edit distance between two flag names (insertions, deletions and
/// substitutions), for suggesting a near miss.
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

/// "; did you mean --X?" for an unknown --flag within a quarter of its
/// length (at least 1) of a real flag's spelling, else nothing.
std::string nearMiss(const CLI::App &app, const std::string &argument) {
  if (argument.rfind("--", 0) != 0)
    return "";
  std::string name = argument.substr(2, argument.find('=') - 2);
  std::string best;
  size_t bestDistance = std::max<size_t>(1, name.size() / 4) + 1;
  for (const CLI::Option *option : app.get_options())
    for (const std::string &candidate : option->get_lnames()) {
      size_t distance = editDistance(name, candidate);
      if (distance < bestDistance) {
        best = candidate;
        bestDistance = distance;
      }
    }
  return best.empty() ? "" : "; did you mean --" + best + "?";
}

} // namespace

TrainOptions Options::defaultTrainOptions() {
  TrainOptions t;
  t.lr = t.momentum = t.weightDecay = t.beta1 = t.beta2 = t.eps = t.trustCoefficient =
      t.clipGradNorm = t.kfacDamping = t.kfacStatDecay = t.kfacKlClip = std::nan("");
  t.sampler.alpha = t.sampler.beta = t.sampler.eps = std::nan("");
  return t;
}

Status parseArgs(int argc, char **argv, Options &options) {
  Parser parser("", argc > 0 && argv[0] ? argv[0] : "program");
  define(parser, options);
  try {
    parser.app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return Status::error(!parser.firstError.empty() ? parser.firstError : parseErrorText(e));
  }
  for (const std::string &extra : parser.app.remaining())
    return Status::error("unknown argument '" + extra + "'" + nearMiss(parser.app, extra));
  for (const CLI::Option *option : parser.app.get_options())
    if (option->count() > 0 && !option->get_lnames().empty())
      options.given.push_back("--" + option->get_lnames().front());
  options.train.dataDir = options.dataDir;
  return Status();
}

void printUsage(FILE *stream, const char *argv0, const Program &program, bool full) {
  if (!full) {
    std::fputs(description(argv0, program).c_str(), stream);
    std::fputs("\n(--help lists every flag)\n", stream);
    return;
  }
  Options options;
  Parser parser(description(argv0, program), argv0);
  define(parser, options);
  parser.app.get_formatter()->label("Usage", "Flags");
  std::string help = parser.app.help();
  // CLI11 adds its own "Flags: PROG [OPTIONS]" line after the description;
  // the synopsis above says more.
  size_t at = help.find("Flags: ");
  if (at != std::string::npos) {
    size_t end = help.find('\n', at);
    help.erase(at, end == std::string::npos ? std::string::npos : end - at + 1);
  }
  std::fputs(help.c_str(), stream);
}

} // namespace trainc::rt::detail
