//===- StepFunctions.cpp - a generated function in parts of bounded size --===//

#include "codegen/StepFunctions.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Regex.h"

#include <vector>

using namespace trainc::codegen;

namespace {

/// Whether `c` can be part of a C++ identifier.
bool identChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_';
}

/// The identifiers of a line, its `//` comment left out.
void identifiers(llvm::StringRef line, llvm::StringSet<> &out) {
  line = line.substr(0, line.find("//"));
  size_t i = 0;
  while (i < line.size()) {
    if (!identChar(line[i])) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < line.size() && identChar(line[j]))
      ++j;
    out.insert(line.slice(i, j));
    i = j;
  }
}

const llvm::Regex &declarationLine() {
  static const llvm::Regex decl("^  (const )?[A-Za-z0-9_:]+ \\*([a-z]+[0-9]+) = "
                                "(static_cast|reinterpret_cast)<");
  return decl;
}
/// The identifiers of every line of `text`.
llvm::StringSet<> identifiersOf(llvm::StringRef text) {
  llvm::StringSet<> used;
  while (!text.empty()) {
    auto [line, tail] = text.split('\n');
    identifiers(line, used);
    text = tail;
  }
  return used;
}
} // namespace

std::string trainc::codegen::withDeclarations(const std::string &from, const std::string &text) {
  const llvm::StringSet<> used = identifiersOf(text);
  std::string out;
  llvm::StringSet<> declared;
  llvm::StringRef lines = from;
  while (!lines.empty()) {
    auto [line, tail] = lines.split('\n');
    lines = tail;
    llvm::SmallVector<llvm::StringRef, 4> match;
    if (declarationLine().match(line, &match) && used.contains(match[2]) &&
        declared.insert(match[2]).second)
      out += line.str() + "\n";
  }
  return out + text;
}

std::string trainc::codegen::withoutDeclarations(const std::string &text) {
  std::string out;
  llvm::StringRef lines(text);
  while (!lines.empty()) {
    auto [line, tail] = lines.split('\n');
    lines = tail;
    if (!declarationLine().match(line))
      out += line.str() + "\n";
  }
  return out;
}

std::string trainc::codegen::stepFunction(llvm::StringRef name, llvm::StringRef argsType,
                                          llvm::StringRef doc, const std::string &body) {
  std::string signature = "(Context &ctx, const trainc::rt::" + argsType.str() + " &args)";
  // Split the body into declarations and op chunks.
  const llvm::Regex &decl = declarationLine();
  std::vector<std::pair<std::string, std::string>> decls; // name, line
  std::vector<std::string> chunks;
  llvm::StringRef rest(body);
  while (!rest.empty()) {
    auto [line, tail] = rest.split('\n');
    rest = tail;
    llvm::SmallVector<llvm::StringRef, 4> match;
    if (decl.match(line, &match)) {
      decls.emplace_back(match[2].str(), line.str());
      continue;
    }
    if (chunks.empty() || (line.starts_with("  // ")))
      chunks.emplace_back();
    chunks.back() += line.str() + "\n";
  }
  std::string out;
  auto function = [&](const std::string &fn, const std::string &text, llvm::StringRef comment) {
    const llvm::StringSet<> used = identifiersOf(text);
    out += comment.str() + "Status " + fn + signature + " {\n  (void)ctx;\n  (void)args;\n";
    for (const auto &[n, line] : decls)
      if (used.contains(n))
        out += line + "\n";
    out += text + "  return Status();\n}\n\n";
  };
  if (chunks.size() <= static_cast<size_t>(kOpsPerPart))
    // One function, as the emitter wrote it: each pointer beside its op.
    return doc.str() + "Status " + name.str() + signature + " {\n  (void)ctx;\n" + body +
           "  return Status();\n}\n\n";
  std::string calls;
  int parts = 0;
  for (size_t begin = 0; begin < chunks.size(); begin += kOpsPerPart, ++parts) {
    std::string text;
    for (size_t k = begin; k < chunks.size() && k < begin + kOpsPerPart; ++k)
      text += chunks[k];
    std::string fn = name.str() + "_part" + std::to_string(parts);
    function(fn, text,
             "/// Part " + std::to_string(parts) + " of " + name.str() + ".\nstatic ");
    calls += "  TRAINC_RETURN_IF_ERROR(" + fn + "(ctx, args));\n";
  }
  out += doc.str() + "Status " + name.str() + signature + " {\n" + calls +
         "  return Status();\n}\n\n";
  return out;
}
