//===- ProgramEmitter.h - the emitter's shared state ------------*- C++ -*-===//
//
// Private to codegen/: the emitter of one program, split by concern over
// EmitProgram.cpp (arguments, the walk, the program description and main),
// KernelGroups.cpp (generated element kernels: pointwise groups, dropout,
// optimizer updates), DataMovement.cpp (transposes, slices, concatenation,
// indexing) and LibraryCalls.cpp (calls into the runtime's kernels); where
// each value lives is BufferBinding's.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_CODEGEN_PROGRAMEMITTER_H
#define TRAINC_CODEGEN_PROGRAMEMITTER_H

#include "codegen/BufferBinding.h"
#include "codegen/Escape.h"
#include "codegen/Emitter.h"
#include "codegen/KernelWriter.h"

#include "ir/StepAbi.h"
#include "ir/TcOps.h"
#include "runtime/include/trainc_rt/abi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace trainc::codegen {

/// The C++ element type of a tensor type, or "" if codegen does not support it.
std::string cType(mlir::Type type);
/// A cast of a parameter (an f32 master weight) to f16/bf16.
bool isWeightCast(mlir::Operation *op);
std::string valueType(mlir::Type type);
/// The runtime's DType enumerator of a tensor type.
std::string dtypeEnum(mlir::Type type);
int64_t elementBytes(mlir::Type type);
llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);
int64_t countOf(mlir::Value v);
/// "2x3x4", or "scalar".
std::string shapeText(llvm::ArrayRef<int64_t> shape);
/// The ONNX node name a location carries.
std::string nodeName(mlir::Location loc);
/// The ONNX nodes `ops` compute (a tc.fused group's: its inner ops'), each
/// once and quoted: "'a', 'b'", the first six and "and N more".
std::string nodeList(llvm::ArrayRef<mlir::Operation *> ops);
/// A float literal of the element type (f32 gets an `f` suffix).
std::string literal(double v, bool f32);
/// The element strides and base offset of a strided slice of a tensor of
/// shape `in` (the slice's positions, as a view of the sliced tensor).
std::pair<std::vector<int64_t>, int64_t> sliceStrides(llvm::ArrayRef<int64_t> in,
                                                      llvm::ArrayRef<int64_t> starts,
                                                      llvm::ArrayRef<int64_t> steps);
/// Per-axis strides to read `in` broadcast to `out` (numpy rules): 0 on
/// broadcast axes.
std::vector<int64_t> broadcastStrides(llvm::ArrayRef<int64_t> in, llvm::ArrayRef<int64_t> out);

class ProgramEmitter {
  using LogicalResult = mlir::LogicalResult;
  using Operation = mlir::Operation;
  using Value = mlir::Value;
  using Type = mlir::Type;
  using StringRef = llvm::StringRef;
  template <typename T> using ArrayRef = llvm::ArrayRef<T>;
  template <typename T> using FailureOr = mlir::FailureOr<T>;
  using ModuleOp = mlir::ModuleOp;
  using OpResult = mlir::OpResult;
  using DenseElementsAttr = mlir::DenseElementsAttr;
  using raw_ostream = llvm::raw_ostream;
public:
  ProgramEmitter(ModuleOp module, const EmitOptions &options, std::vector<char> &blob)
      : module(module), options(options), kernels(options.target), blob(blob) {}

  LogicalResult run(raw_ostream &os);
  /// A pipeline stage's module (options.stageNamespace): its training step's
  /// functions and tables, and a Program `kProgram` without a forward, in
  /// that namespace.
  LogicalResult runStage(raw_ostream &os);

private:
  struct ParamEntry {
    std::string name;
    Type type;
    uint64_t offset, bytes;
    bool trainable, constant, noDecay;
    /// The batch normalization whose running statistic it is (ParamInfo's
    /// statisticOf), or empty.
    std::string statisticOf = {};
    double statisticMomentum = 0;
  };

  LogicalResult declareArguments(mlir::func::FuncOp func);
  LogicalResult emitOp(Operation *op);
  /// Library calls (LibraryCalls.cpp): contractions, convolution, pooling,
  /// normalization, softmax, reductions, gathers, losses.
  LogicalResult emitLibraryCall(Operation *op);
  /// Data movement (DataMovement.cpp): transposes, slices, concatenation,
  /// expand and the indexing ops.
  LogicalResult emitDataMovement(Operation *op);
  LogicalResult emitPointwise(Operation *op);
  /// A tc.fused group, or one pointwise op (a group of one), as one kernel.
  LogicalResult emitFused(tc::FusedOp fused);
  /// With `product` set, the group is a library op's epilogue: `product` (the
  /// GEMM's or norm's value) is read in place from output `productOutput`,
  /// which the library wrote first. With `kernel` set, the kernel (on the
  /// CPU a range function) is only built, its name stored in `kernel`, for
  /// emitEpilogueGroup or emitNormGroup to call. `note` is a first comment
  /// line.
  LogicalResult emitGroup(Operation *anchor, ArrayRef<Operation *> ops, ArrayRef<Value> inputs,
                          ArrayRef<std::string> inputPtrs, ArrayRef<Value> outputs,
                          ArrayRef<std::string> outputPtrs, StringRef what,
                          Value product = nullptr, unsigned productOutput = 0,
                          std::string *kernel = nullptr, StringRef note = "");
  /// A tc.fused group headed by a matmul: one tk::gemmEpilogue call (the
  /// CPU runs the group over each finished block; CUDA uses cuBLASLt's
  /// bias, ReLU and accumulation epilogues where they express the group),
  /// or on CUDA the GEMM and then the group's kernel.
  LogicalResult emitEpilogueGroup(tc::FusedOp fused, Operation *head);
  /// The `trainc::rt::GemmEpilogue{...}` that adds a tc.gemm's C in the
  /// library call (a bias row or a whole matrix; none without C), with the
  /// given activation and range function.
  std::string gemmEpilogueArg(Value c, Value result, StringRef activation, StringRef range,
                              StringRef env);
  /// A tc.fused group headed by a normalization: on the CPU one call of the
  /// norm with its prologue and epilogue kernels as range functions (a
  /// trainc::rt::NormFusion), on CUDA the prologue's kernel, the norm, the
  /// epilogue's kernel.
  LogicalResult emitNormGroup(tc::FusedOp fused, Operation *head);
  /// A normalization group's prologue or epilogue kernel (built, not
  /// called) and its arguments; an epilogue sets `productPtr` to the result
  /// the norm writes and the epilogue finishes.
  /// The buffer of a value of `fused`'s block: its input's, or the result
  /// that yields it ("" for an intermediate).
  std::string groupValuePtr(tc::FusedOp fused, Value v);
  struct NormPart {
    std::string kernel, args;
  };
  LogicalResult emitNormPart(tc::FusedOp fused, Operation *head, ArrayRef<Operation *> ops,
                             bool isEpilogue, NormPart &part, std::string &productPtr);
  /// The runtime call of a normalization op, its values' buffers from
  /// `pointer`, with `fusion` (a pointer expression to a NormFusion, or
  /// empty) as the last argument.
  void emitNormCall(Operation *op, llvm::function_ref<std::string(Value)> pointer,
                    StringRef fusion);
  /// An optimizer update: runs of updates of one kind become one
  /// multi-tensor kernel, emitted at the run's last update.
  LogicalResult emitUpdate(Operation *op);
  LogicalResult emitUpdates(ArrayRef<Operation *> ops);
  LogicalResult emitNonfiniteProbe(tc::NonfiniteProbeOp op);
  LogicalResult emitAllReduce(tc::AllReduceOp op);
  void waitForSums(Operation *op);
  void waitForBucket(int64_t bucket);
  /// Gradient accumulation: runs of tc.accumulate_grad with the same
  /// weight and keep become one multi-tensor kernel.
  LogicalResult emitAccumulate(Operation *op);
  /// Whether the plan folded `op`'s gradient accumulation into it (see
  /// tc::accumulatingGemmUser: the GEMM has no buffer of its own).
  bool gemmAccumulates(Operation *op);
  /// The GEMM's alpha (times `alpha`) and beta when it accumulates: the
  /// host copies of the accumulate op's weight and keep.
  std::pair<std::string, std::string> accumulatingScales(Operation *gemm, float alpha);
  LogicalResult emitWeightCast(Operation *op);
  void describeRun(ArrayRef<Operation *> ops, std::vector<std::string> &comment,
                   std::vector<int64_t> &counts);
  LogicalResult emitIndexing(Operation *op);
  void emitConcatRun(tc::ConcatOp op, ArrayRef<Value> run, int64_t first, int64_t step,
                     ArrayRef<int64_t> outStrides);
  LogicalResult emitStridedCopy(Operation *op, StringRef what, Value in,
                                ArrayRef<int64_t> shape, ArrayRef<int64_t> inStrides,
                                int64_t inBase, ArrayRef<int64_t> outStrides,
                                int64_t outBase, StringRef outPtr);
  /// A matmul as a row-major (batched) GEMM: operands, leading dimensions
  /// and strides as the runtime's gemm takes them.
  struct GemmDims {
    bool transA, transB;
    int64_t m, n, k, lda, ldb, strideA, strideB, batch;
    std::string a, b;
    /// "transA, transB, m, n, k, [alpha, ]A, lda, strideA, B, ldb, strideB".
    std::string operands(StringRef alpha = "") const;
    /// ", ldc, strideC, batch" after C.
    std::string outputTail() const;
  };
  FailureOr<GemmDims> matmulDims(tc::MatMulOp op, Value lhs, Value rhs);
  GemmDims gemmDims(tc::GemmOp op, Value a, Value b);
  LogicalResult emitMatMul(tc::MatMulOp op);
  LogicalResult emitGemm(tc::GemmOp op);
  LogicalResult emitConv(tc::ConvOp op);
  /// tc.damped_inverse: tk::dampedInverse with its hyperparameters read on the host.
  LogicalResult emitDampedInverse(tc::DampedInverseOp op);
  LogicalResult emitConvBackward(Operation *op);
  void callWithDesc(StringRef type, const std::string &desc, const std::string &statement);
  LogicalResult emitPool(Operation *op);
  LogicalResult emitReduce(Operation *op, ArrayRef<int64_t> axes, StringRef kind);
  LogicalResult emitLoss(Operation *op);
  LogicalResult emitReturn(mlir::func::ReturnOp op);
  /// The buffer of output `k` of `func` (a forward output, the loss, the
  /// per-sample losses), or "" (a parameter or state update).
  std::string outputBuffer(mlir::func::FuncOp func, unsigned k, mlir::Type type);
  /// Places each output that an op of `func` computes in its output buffer
  /// (BufferBinding::placeAt), so that no copy ends the function.
  void placeOutputs(mlir::func::FuncOp func);
  /// tc.send and tc.recv: an entry of the links table and the statement of
  /// the links function that writes where the tensor lives; before the
  /// first received gradient, kBackwardMarker.
  LogicalResult emitLink(Operation *op);

  uint64_t appendToBlob(DenseElementsAttr value);
  std::string ptr(Value v) { return buffers.ptr(v); }
  std::string opComment(Operation *op);
  /// A call of the step: TRAINC_CALL with its id in Program::calls.
  void call(const std::string &statement) {
    bool library = llvm::StringRef(statement).starts_with("tk::") ||
                   llvm::StringRef(statement).starts_with("ctx.");
    ++(library ? libraryCalls : generatedCalls);
    body += "  TRAINC_CALL(ctx, " + std::to_string(profiledCall(statement)) + ", " + statement +
            ");\n";
  }
  /// The row of Program::calls (--profile) of a call emitted now for
  /// `callOps`, and its id (ProfiledCalls.cpp).
  int profiledCall(const std::string &statement);
  /// The part of the step `op` is in (the function's ops in order).
  rt::StepPart stepPart(Operation *op);
  /// kCalls, every call's row, and the Program fields that point at it.
  void emitCallTable(raw_ostream &os);
  std::vector<Field> callTableFields() const;

  ModuleOp module;
  const EmitOptions &options;
  KernelWriter kernels;
  std::vector<char> &blob;
  std::vector<ParamEntry> params;
  llvm::StringMap<unsigned> paramIndex;
  /// An optimizer state argument: its name, type, role and initial value.
  struct StateEntry {
    std::string name;
    Type type;
    tc::StateRole role;
    double init = 0;
    bool operator==(const StateEntry &other) const {
      return name == other.name && type == other.type && role == other.role;
    }
  };
  /// Per emitted function: its inputs, outputs (forward), hyperparameters and
  /// optimizer state (training step), value names and body.
  std::vector<std::pair<std::string, Type>> inputs, outputs;
  std::vector<StateEntry> states;
  /// The role of each input.
  std::vector<rt::InputRole> inputRoles;
  std::vector<tc::Hyper> hypers;
  bool trainRole = false;
  /// The C++ pointer of every value of the function (BufferBinding.h).
  BufferBinding buffers;
  /// Each hyperparameter argument's index in TrainArgs::hypers.
  llvm::DenseMap<Value, size_t> hyperIndex;
  /// The hyperparameters a step reads on the host (TrainArgs::hostHypers),
  /// over the whole program: a recorded step graph holds their values.
  std::set<size_t> hostReadHypers;
  /// Results of buckets whose sum over the ranks was started and not yet
  /// waited for, with their bucket.
  llvm::DenseMap<Value, int64_t> pendingSums;
  /// The buckets started in the current function.
  std::set<int64_t> startedBuckets;
  std::string body;
  /// Updates of the current run (emitUpdate), weight casts of the current
  /// run (emitWeightCast).
  std::vector<Operation *> pendingUpdates, pendingCasts, pendingAccumulates;
  /// Set while @accumulate_step is emitted: its hyperparameters and states
  /// take the indices of @train_step's (the trainer hands both the same
  /// TrainArgs), looked up by name in `hypers` and `states`.
  bool sharedTables = false;
  /// Launches of generated kernels and runtime calls in the function.
  int generatedCalls = 0, libraryCalls = 0;
  int64_t arenaBytes = 0;
  /// A pipeline stage's sends and receives (PipelineLink) in the current
  /// function, and the statements that write their pointers.
  struct LinkEntry {
    std::string tensor;
    bool send, gradient;
    int64_t peer, slot;
    Type type;
    bool operator==(const LinkEntry &o) const {
      return tensor == o.tensor && send == o.send && gradient == o.gradient && peer == o.peer &&
             slot == o.slot && type == o.type;
    }
  };
  std::vector<LinkEntry> links;
  std::string linkStatements;
  /// --profile's table: one row per call of every function.
  struct CallEntry {
    std::string kernel, op, nodes, function;
    rt::StepPart part;
    double flops = 0, bytes = 0;
  };
  std::vector<CallEntry> callTable;
  /// The ops the calls emitted now compute (emitOp's op, or an update
  /// run's); the first call counts their cost.
  std::vector<Operation *> callOps;
  bool callCostTaken = false;
  /// The current function's name, and whether its backward has begun.
  std::string functionName;
  bool pastBackward = false;

  /// What one emitted function contributes to the program.
  struct Emitted {
    std::string body;
    std::vector<LinkEntry> links;
    std::string linkStatements;
    std::vector<std::pair<std::string, Type>> inputs, outputs;
    std::vector<StateEntry> states;
    std::vector<tc::Hyper> hypers;
    std::vector<rt::InputRole> roles;
    int64_t arena = 0;
    int generated = 0, library = 0;
  };
  LogicalResult declareParams();
  FailureOr<Emitted> emitFunction(mlir::func::FuncOp func, bool train,
                                  const Emitted *tables = nullptr);

  /// The program description after the step functions (ProgramTables.cpp).
  struct Functions {
    mlir::func::FuncOp forwardFunc, stepFunc, selectFunc;
    const Emitted *forward, *train, *accumulate, *select;
    int64_t batch;
  };
  /// The rows of the table an integer input indexes, and the node that
  /// reads it (indexLimits).
  struct IndexLimit {
    int64_t rows;
    std::string node;
  };
  static llvm::StringMap<IndexLimit> indexLimits(mlir::func::FuncOp func);
  LogicalResult emitTables(raw_ostream &os, const Functions &fns);
  /// Marks the parameters the forward's batch normalizations read as
  /// running statistics (ParamEntry::statisticOf).
  void markStatistics(mlir::func::FuncOp forward);
  static std::string tensorInfo(const std::string &name, Type type,
                                std::optional<rt::InputRole> role,
                                const llvm::StringMap<IndexLimit> &limits);
  static void emitTensorTable(raw_ostream &os, const char *name,
                              const std::vector<std::pair<std::string, Type>> &entries,
                              const std::vector<rt::InputRole> &roles,
                              const llvm::StringMap<IndexLimit> &limits);
  LogicalResult emitTrainStepTable(raw_ostream &os, mlir::func::FuncOp step,
                                   const Emitted &train, const Emitted *accumulate,
                                   const llvm::StringMap<IndexLimit> &limits);
  /// A pipeline stage's step functions, cut at kBackwardMarker, and their
  /// links functions.
  void emitStageFunctions(raw_ostream &os, const Emitted &fn, llvm::StringRef name,
                          llvm::StringRef what);
  void emitLinkTable(raw_ostream &os, const Emitted &train);
  void emitParamTable(raw_ostream &os);
  LogicalResult emitExportTable(raw_ostream &os);
};

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_PROGRAMEMITTER_H
