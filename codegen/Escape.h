//===- Escape.h - model and user strings in generated source ---*- C++ -*-===//
//
// Every string that comes from the model (node, tensor, graph and model
// names) or from the command line (paths) reaches the generated C++ / CUDA
// source through these helpers, and only through them: a name is data, never
// code. Nothing a name holds can end a comment line, continue it onto the next
// one, close a string literal or form a trigraph.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_CODEGEN_ESCAPE_H
#define TRAINC_CODEGEN_ESCAPE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

#include <string>

namespace trainc::codegen {

/// `text` made safe inside a `//` (or `/* */`) comment: printable ASCII stays
/// as it is, except that a backslash, a `?` after a `?` (trigraphs) and a `/`
/// after a `*` are written as `\x5c`, `\x3f` and `\x2f`; control characters
/// and non-ASCII bytes as `\xNN`. The result never ends in a backslash. Text
/// longer than `maxBytes` is cut there and ends with "... (N bytes)".
std::string commentText(llvm::StringRef text, size_t maxBytes = 200);

/// `// <commentText(text)>` and a newline, after `indent`.
std::string commentLine(llvm::StringRef text, llvm::StringRef indent = "");

/// A C/C++ (and CUDA) string literal, quotes included, whose value is exactly
/// the bytes of `text`: \n \r \t \\ \" and \? (no trigraphs) escaped, other
/// bytes outside printable ASCII as three-digit octal escapes (which never
/// swallow a following digit the way \x does).
std::string cStringLiteral(llvm::StringRef text);

/// A GNU assembler string (quotes included) whose value is `text`, for
/// directives such as `.incbin "PATH"`: backslash and quote escaped, bytes
/// outside printable ASCII as octal escapes.
std::string asmStringLiteral(llvm::StringRef text);

/// One field of a designated initializer: its name and its value as C++.
struct Field {
  llvm::StringRef name;
  std::string value;
  Field(llvm::StringRef name, std::string value) : name(name), value(std::move(value)) {}
  Field(llvm::StringRef name, int64_t value) : name(name), value(std::to_string(value)) {}
};

/// A C++20 designated initializer, `{.a = 1, .b = x}`: generated code names
/// every field of a runtime struct it fills, so a field moved or renamed in
/// the runtime's header is a compile error there, not a shifted value.
/// With `block`, one field a line.
std::string designated(llvm::ArrayRef<Field> fields, bool block = false);

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_ESCAPE_H
