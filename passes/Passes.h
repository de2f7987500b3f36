//===- Passes.h - trainc passes --------------------------------*- C++ -*-===//

#ifndef TRAINC_PASSES_PASSES_H
#define TRAINC_PASSES_PASSES_H

#include "passes/Options.h"

#include "mlir/Pass/Pass.h"

#include <memory>

namespace trainc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace trainc

#endif // TRAINC_PASSES_PASSES_H
