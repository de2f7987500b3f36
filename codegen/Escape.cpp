//===- Escape.cpp - model and user strings in generated source ------------===//

#include "codegen/Escape.h"

#include <cstdio>

using namespace trainc::codegen;

namespace {

bool isPrintableAscii(unsigned char c) { return c >= 0x20 && c < 0x7f; }

std::string hexByte(unsigned char c) {
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "\\x%02x", c);
  return buffer;
}

std::string octalByte(unsigned char c) {
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "\\%03o", c);
  return buffer;
}

} // namespace

std::string trainc::codegen::commentText(llvm::StringRef text, size_t maxBytes) {
  llvm::StringRef shown = text.take_front(maxBytes);
  std::string out;
  out.reserve(shown.size());
  char previous = 0;
  for (char ch : shown) {
    auto c = static_cast<unsigned char>(ch);
    bool escape = !isPrintableAscii(c) || c == '\\' || (c == '?' && previous == '?') ||
                  (c == '/' && previous == '*');
    out += escape ? hexByte(c) : std::string(1, ch);
    // An escaped byte is not the first half of a pair any more.
    previous = escape ? 0 : ch;
  }
  if (shown.size() < text.size())
    out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string trainc::codegen::commentLine(llvm::StringRef text, llvm::StringRef indent) {
  return indent.str() + "// " + commentText(text) + "\n";
}

std::string trainc::codegen::cStringLiteral(llvm::StringRef text) {
  std::string out = "\"";
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\\': out += "\\\\"; break;
    case '"': out += "\\\""; break;
    case '?': out += "\\?"; break;
    default:
      if (isPrintableAscii(c))
        out += ch;
      else
        out += octalByte(c);
    }
  }
  return out + "\"";
}

std::string trainc::codegen::asmStringLiteral(llvm::StringRef text) {
  std::string out = "\"";
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\\' || c == '"')
      out += std::string("\\") + ch;
    else if (isPrintableAscii(c))
      out += ch;
    else
      out += octalByte(c);
  }
  return out + "\"";
}

std::string trainc::codegen::designated(llvm::ArrayRef<Field> fields, bool block) {
  std::string out = "{";
  for (const Field &field : fields) {
    if (block)
      out += "\n    ";
    else if (out.size() > 1)
      out += " ";
    out += "." + field.name.str() + " = " + field.value + ",";
  }
  if (!block && !fields.empty())
    out.pop_back();
  return out + (block ? "\n}" : "}");
}
