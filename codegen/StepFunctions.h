//===- StepFunctions.h - a generated function in parts of bounded size -*- C++ -*-===//
//
// A C++ compiler's optimizer takes time that grows faster than linearly with
// the size of one function, so a long step is written as several functions
// of at most a bounded number of ops, each declaring the pointers it uses,
// and one function calling them in order. No MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_CODEGEN_STEPFUNCTIONS_H
#define TRAINC_CODEGEN_STEPFUNCTIONS_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace trainc::codegen {

/// The ops one part holds at most.
inline constexpr int kOpsPerPart = 96;

/// The text of `Status NAME(Context &ctx, const ARGS &args)` with `doc`
/// above it, running `body`: the emitter's statements, each op's starting
/// with its `  // ` comment line, and pointer declarations
/// (`  [const] T *NAME = ..._cast<...>(args...);`) anywhere among them.
/// A body of more than kOpsPerPart ops becomes parts `NAME_partK`.
std::string stepFunction(llvm::StringRef name, llvm::StringRef argsType, llvm::StringRef doc,
                         const std::string &body);

/// The line at which a pipeline stage's step is cut into its two parts:
/// before its first received gradient.
inline constexpr const char *kBackwardMarker =
    "  // -- the backward: the rest runs once the next stage's gradients are here --\n";

/// The pointer declarations of `from` (lines as stepFunction describes
/// them) that `text` uses, then `text`: a body of its own for statements
/// cut from a longer one.
std::string withDeclarations(const std::string &from, const std::string &text);
/// `text` without its pointer declarations.
std::string withoutDeclarations(const std::string &text);

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_STEPFUNCTIONS_H
