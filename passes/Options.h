//===- Options.h - the typed options of trainc compile and its phases -*- C++ -*-===//
//
// The enum-like options (--loss, --optimizer, --precision, --loss-scale,
// --layout, --remat, ...) are parsed once, where LLVM's command line reads
// them, into enums: trainc compile's flags, PipelineOptions and the phases'
// own pass options hold the same types, and no pass compares option
// strings.
//
// Each enum's names come from one X-macro list (the runtime's, abi.h, for
// the optimizer, the precision and the loss scaling). `llvm::cl::parser` is
// specialized for every such enum, so a `cl::opt<E>` or a pass `Option<E>`
// knows its values without `cl::values` and refuses any other text with
//   error: --precision must be fp32, bf16 or fp16, got 'int8'
// Plain LLVM support, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_PASSES_OPTIONS_H
#define TRAINC_PASSES_OPTIONS_H

#include "runtime/include/trainc_rt/abi.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace trainc {

/// The loss the loss phase attaches (--loss).
#define TRAINC_LOSS_KINDS(X)                                                   \
  X(CrossEntropy, "cross-entropy")                                             \
  X(Mse, "mse")                                                                \
  X(Bce, "bce")                                                                \
  X(Output, "output")

/// The activation layout of convolutions, pooling and batch norm
/// (--layout); trainc compile resolves auto before the pipeline runs.
#define TRAINC_LAYOUTS(X)                                                      \
  X(Nchw, "nchw")                                                              \
  X(Nhwc, "nhwc")                                                              \
  X(Auto, "auto")

/// Rematerialization (--remat).
#define TRAINC_REMATS(X)                                                       \
  X(None, "none")                                                              \
  X(Auto, "auto")

/// Kernel fusion (--fuse): pointwise groups with GEMM epilogues, pointwise
/// groups only, or one kernel per op.
#define TRAINC_FUSIONS(X)                                                      \
  X(Auto, "auto")                                                              \
  X(Pointwise, "pointwise")                                                    \
  X(None, "none")

#define TRAINC_OPTION_ENUMERATOR(e, name) e,
#define TRAINC_OPTION_NAME(e, name) name,

/// Declares `enum class Type` and the OptionEnum traits of its values.
#define TRAINC_DECLARE_OPTION_ENUM(Type, LIST)                                 \
  enum class Type : int32_t { LIST(TRAINC_OPTION_ENUMERATOR) };                \
  template <> struct OptionEnum<Type> {                                        \
    static constexpr const char *names[] = {LIST(TRAINC_OPTION_NAME)};         \
    static constexpr int count = sizeof(names) / sizeof(names[0]);             \
    static constexpr const char *name(Type value) {                            \
      return names[static_cast<int>(value)];                                   \
    }                                                                          \
  };

/// What an option enum E offers: `count` values 0..count-1 and `name(E)`.
template <class E> struct OptionEnum;

TRAINC_DECLARE_OPTION_ENUM(LossKind, TRAINC_LOSS_KINDS)
TRAINC_DECLARE_OPTION_ENUM(Layout, TRAINC_LAYOUTS)
TRAINC_DECLARE_OPTION_ENUM(Remat, TRAINC_REMATS)
TRAINC_DECLARE_OPTION_ENUM(Fusion, TRAINC_FUSIONS)

/// The runtime's enums that are options too (abi.h names them).
#define TRAINC_RUNTIME_OPTION_ENUM(Type)                                       \
  template <> struct OptionEnum<rt::Type> {                                    \
    static constexpr int count = rt::kNum##Type##s;                            \
    static constexpr const char *name(rt::Type value) { return rt::name(value); } \
  };
TRAINC_RUNTIME_OPTION_ENUM(Optimizer)
TRAINC_RUNTIME_OPTION_ENUM(Precision)
TRAINC_RUNTIME_OPTION_ENUM(SampleWeightNorm)
#undef TRAINC_RUNTIME_OPTION_ENUM

/// The name of an option's value, as flags and IR spell it.
template <class E> const char *optionName(E value) { return OptionEnum<E>::name(value); }

/// The value named `text`, or none.
template <class E> std::optional<E> parseOption(llvm::StringRef text) {
  for (int i = 0; i < OptionEnum<E>::count; ++i)
    if (text == OptionEnum<E>::name(static_cast<E>(i)))
      return static_cast<E>(i);
  return std::nullopt;
}

/// The names of E's values joined by `separator`, the last two by `last`.
template <class E> std::string joinOptionNames(const char *separator, const char *last) {
  std::string text;
  for (int i = 0; i < OptionEnum<E>::count; ++i)
    text += std::string(i == 0 ? "" : i + 1 == OptionEnum<E>::count ? last : separator) +
            OptionEnum<E>::name(static_cast<E>(i));
  return text;
}
/// "a, b or c": the values of E for a message.
template <class E> std::string optionChoices() { return joinOptionNames<E>(", ", " or "); }

/// fp16 loss scaling (--loss-scale=dynamic|none|VALUE): none, GradScaler's
/// dynamic scale, or a fixed scale.
struct LossScale {
  rt::LossScaling scaling = rt::LossScaling::None;
  /// The fixed scale (rt::LossScaling::Fixed).
  float value = 0.0f;
  bool operator==(const LossScale &other) const {
    return scaling == other.scaling && value == other.value;
  }
};

/// A fixed loss scale given as text: a decimal number whose f32 value is
/// from 2^-126 (FLT_MIN, so that its reciprocal, the unscale factor, is
/// finite in f32 too) to FLT_MAX; none for anything else.
std::optional<float> parseFixedLossScale(llvm::StringRef text);
/// dynamic, none or a fixed scale; none for anything else.
std::optional<LossScale> parseLossScale(llvm::StringRef text);
/// How --loss-scale spells `scale` (the text parseLossScale reads back).
std::string lossScaleText(const LossScale &scale);
inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const LossScale &scale) {
  return os << lossScaleText(scale);
}

/// The parser of an option enum: knows every value of E and refuses other
/// text with "error: --FLAG must be a, b or c, got 'x'". Mirrors
/// llvm::cl::parser<E>'s members (MLIR's pass options read `Values`).
template <class E> class OptionEnumParser : public llvm::cl::generic_parser_base {
protected:
  struct OptionInfo : GenericOptionInfo {
    OptionInfo(llvm::StringRef name, E value)
        : GenericOptionInfo(name, ""), V(value) {}
    llvm::cl::OptionValue<E> V;
  };
  llvm::SmallVector<OptionInfo, 8> Values;

public:
  using parser_data_type = E;

  OptionEnumParser(llvm::cl::Option &option) : generic_parser_base(option) {
    for (int i = 0; i < OptionEnum<E>::count; ++i)
      Values.emplace_back(OptionEnum<E>::name(static_cast<E>(i)), static_cast<E>(i));
  }
  unsigned getNumOptions() const override { return unsigned(Values.size()); }
  llvm::StringRef getOption(unsigned n) const override { return Values[n].Name; }
  llvm::StringRef getDescription(unsigned n) const override { return Values[n].HelpStr; }
  const llvm::cl::GenericOptionValue &getOptionValue(unsigned n) const override {
    return Values[n].V;
  }
  /// `--FLAG=<a|b|c>  - help` on one line, as the other flags print.
  size_t getOptionWidth(const llvm::cl::Option &option) const override {
    return synopsis(option).size() + 3; // as basic_parser counts its own
  }
  void printOptionInfo(const llvm::cl::Option &option, size_t width) const override {
    std::string text = synopsis(option);
    llvm::outs() << text;
    llvm::cl::Option::printHelpStr(option.HelpStr, width, text.size() + 3);
  }
  /// True on error, after printing it.
  bool parse(llvm::cl::Option &option, llvm::StringRef, llvm::StringRef text, E &value) {
    if (std::optional<E> parsed = parseOption<E>(text)) {
      value = *parsed;
      return false;
    }
    llvm::errs() << "error: --" << option.ArgStr << " must be " << optionChoices<E>()
                 << ", got '" << text << "'\n";
    return true;
  }

private:
  static std::string synopsis(const llvm::cl::Option &option) {
    return "  --" + option.ArgStr.str() + "=<" + joinOptionNames<E>("|", "|") + ">";
  }
};

} // namespace trainc

/// Every option enum parses with its names (a tool declares the parser of
/// an enum of its own with TRAINC_OPTION_ENUM_PARSER in llvm::cl);
/// --loss-scale with parseLossScale.
#define TRAINC_OPTION_ENUM_PARSER(Type)                                        \
  template <> class parser<Type> : public trainc::OptionEnumParser<Type> {     \
  public:                                                                      \
    using OptionEnumParser::OptionEnumParser;                                  \
  };
namespace llvm::cl {
TRAINC_OPTION_ENUM_PARSER(trainc::LossKind)
TRAINC_OPTION_ENUM_PARSER(trainc::Layout)
TRAINC_OPTION_ENUM_PARSER(trainc::Remat)
TRAINC_OPTION_ENUM_PARSER(trainc::Fusion)
TRAINC_OPTION_ENUM_PARSER(trainc::rt::Optimizer)
TRAINC_OPTION_ENUM_PARSER(trainc::rt::Precision)
TRAINC_OPTION_ENUM_PARSER(trainc::rt::SampleWeightNorm)

template <> class parser<trainc::LossScale> : public basic_parser<trainc::LossScale> {
public:
  parser(Option &option) : basic_parser(option) {}
  /// True on error, after printing it.
  bool parse(Option &option, StringRef, StringRef text, trainc::LossScale &value);
  StringRef getValueName() const override { return "dynamic|none|VALUE"; }
  void printOptionDiff(const Option &option, const trainc::LossScale &value,
                       const OptionValue<trainc::LossScale> &, size_t globalWidth) const;
};
} // namespace llvm::cl

#endif // TRAINC_PASSES_OPTIONS_H
