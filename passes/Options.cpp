//===- Options.cpp - the typed options of trainc compile and its phases ---===//

#include "passes/Options.h"

#include "llvm/Support/Format.h"

#include <cstdio>

std::optional<float> trainc::parseFixedLossScale(llvm::StringRef text) {
  double value = 0;
  // Decimal only: getAsDouble would read hex floats and inf/nan spellings.
  if (text.empty() || text.find_first_of("xXpPiInN") != llvm::StringRef::npos ||
      text.getAsDouble(value))
    return std::nullopt;
  float scale = static_cast<float>(value);
  if (!(scale >= 1.17549435082228751e-38f) || !(scale <= 3.40282346638528860e38f))
    return std::nullopt;
  return scale;
}

std::optional<trainc::LossScale> trainc::parseLossScale(llvm::StringRef text) {
  if (text == rt::name(rt::LossScaling::Dynamic))
    return LossScale{rt::LossScaling::Dynamic, 0.0f};
  if (text == rt::name(rt::LossScaling::None))
    return LossScale{rt::LossScaling::None, 0.0f};
  if (std::optional<float> value = parseFixedLossScale(text))
    return LossScale{rt::LossScaling::Fixed, *value};
  return std::nullopt;
}

std::string trainc::lossScaleText(const LossScale &scale) {
  if (scale.scaling != rt::LossScaling::Fixed)
    return rt::name(scale.scaling);
  // Nine significant digits read back as the same f32.
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", static_cast<double>(scale.value));
  return text;
}

bool llvm::cl::parser<trainc::LossScale>::parse(Option &option, StringRef, StringRef text,
                                                trainc::LossScale &value) {
  if (std::optional<trainc::LossScale> parsed = trainc::parseLossScale(text)) {
    value = *parsed;
    return false;
  }
  errs() << "error: --" << option.ArgStr
         << " must be dynamic, none or a positive number from 2^-126 to 3.4e38 (an f32 "
            "scale whose reciprocal f32 holds), got '"
         << text << "'\n";
  return true;
}

void llvm::cl::parser<trainc::LossScale>::printOptionDiff(
    const Option &option, const trainc::LossScale &value, const OptionValue<trainc::LossScale> &,
    size_t globalWidth) const {
  printOptionName(option, globalWidth);
  outs() << "= " << trainc::lossScaleText(value) << "\n";
}
