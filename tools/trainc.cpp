//===- trainc.cpp - the trainc driver -------------------------------------===//
//
//   trainc import model.onnx [--batch-size=N] [-o out.mlir]
//   trainc check  model.onnx
//
//===----------------------------------------------------------------------===//

#include "frontend/Frontend.h"
#include "ir/TcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace llvm;

namespace {

cl::OptionCategory category("trainc options");

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx | model.onnxtxt>"),
                               cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Write the output to this file (default: stdout)"),
                                cl::value_desc("file"), cl::init("-"), cl::cat(category));
cl::opt<int64_t> batchSize("batch-size",
                           cl::desc("Bind the symbolic batch dimension (axis 0) of the "
                                    "model's inputs to N"),
                           cl::value_desc("N"), cl::init(0), cl::cat(category));
cl::opt<int64_t> elideConstants(
    "elide-constants",
    cl::desc("Print constants and initial values with more than N elements as "
             "'dense_resource<__elided__>' (0 prints everything)"),
    cl::value_desc("N"), cl::init(16), cl::cat(category));
cl::opt<bool> printDebugInfo("print-debuginfo",
                             cl::desc("Print locations (ONNX node names) with the IR"),
                             cl::init(false), cl::cat(category));

const char *kUsage = R"(trainc: an ahead-of-time training compiler for ONNX models

usage:
  trainc import MODEL [--batch-size=N] [-o FILE]   print the tc IR of the model
  trainc check  MODEL                              report which ops are supported
  trainc help | --help | --version

MODEL is a binary .onnx file or an ONNX text-format file (.onnxtxt).
Run 'trainc COMMAND --help' for the options of a command.
)";

int runImport() {
  mlir::MLIRContext context;
  trainc::frontend::ImportOptions options;
  if (batchSize.getNumOccurrences()) {
    if (batchSize < 1) {
      errs() << "error: --batch-size must be at least 1, got " << batchSize << "\n";
      return 1;
    }
    options.batchSize = batchSize;
  }
  auto module = trainc::frontend::importModelFile(inputPath, options, context, errs());
  if (!module)
    return 1;
  std::error_code ec;
  ToolOutputFile out(outputPath, ec, sys::fs::OF_None);
  if (ec) {
    errs() << "error: cannot write '" << outputPath << "': " << ec.message() << "\n";
    return 1;
  }
  mlir::OpPrintingFlags flags;
  if (elideConstants > 0)
    flags.elideLargeElementsAttrs(elideConstants);
  if (printDebugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  module->print(out.os(), flags);
  out.os() << "\n";
  out.keep();
  return 0;
}

int runCheck() {
  auto summary = trainc::frontend::summarizeModelFile(inputPath, errs());
  if (!summary)
    return 1;
  outs() << "model: " << inputPath << "\n"
         << "opset: " << summary->opset << "\n";
  if (!summary->producer.empty())
    outs() << "producer: " << summary->producer << "\n";
  outs() << "\n";
  auto row = [](StringRef op, StringRef count, StringRef import,
                StringRef gradient, StringRef note) {
    outs() << left_justify(op, 28) << " " << right_justify(count, 5) << "  "
           << left_justify(import, 6) << " " << left_justify(gradient, 9) << " "
           << note << "\n";
  };
  row("op type", "count", "import", "gradient", "maps to");
  int missing = 0;
  for (const auto &op : summary->ops) {
    std::string name = op.domain == "ai.onnx" ? op.opType : op.domain + "." + op.opType;
    // Reverse-mode gradients arrive with the autodiff phase; until then no op
    // has a gradient rule, and the column says so.
    row(name, std::to_string(op.count), op.imported ? "yes" : "NO", "not yet",
        op.note);
    missing += op.imported ? 0 : 1;
  }
  outs() << "\n";
  if (missing) {
    outs() << missing << " op type(s) cannot be imported\n";
    return 1;
  }
  outs() << "all " << summary->ops.size() << " op types import\n";
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    outs() << kUsage;
    return argc < 2 ? 1 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    outs() << "trainc 0.1 (LLVM/MLIR " << LLVM_VERSION_STRING << ")\n";
    return 0;
  }
  std::string command = argv[1];
  if (command != "import" && command != "check") {
    errs() << "error: unknown command '" << command << "'\n\n" << kUsage;
    return 1;
  }
  cl::HideUnrelatedOptions(category);
  std::string overview = "trainc " + command;
  // Parse the command's own options, with "trainc COMMAND" as the program.
  std::string program = std::string(argv[0]) + " " + command;
  std::vector<const char *> args = {program.c_str()};
  args.insert(args.end(), argv + 2, argv + argc);
  if (!cl::ParseCommandLineOptions(static_cast<int>(args.size()), args.data(),
                                   overview, &errs()))
    return 1;
  if (inputPath.empty()) {
    errs() << "error: no model given\n\n" << kUsage;
    return 1;
  }
  return command == "import" ? runImport() : runCheck();
}
