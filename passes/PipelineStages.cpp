//===- PipelineStages.cpp - @loss cut into pipeline stages ----------------===//
//
// trainc compile --pipeline-stages=S: the ops of @loss that read a
// parameter (directly or through such an op) are "anchored", and the cuts
// lie between them. Each anchored op belongs to one stage; the ops that read
// no parameter (constants, label masks) are cloned where they are read.
// What is defined before a cut and read after it crosses the cut as an
// explicit tc.send / tc.recv pair. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"
#include "passes/Liveness.h"
#include "ir/OpCost.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <limits>

namespace trainc {
#define GEN_PASS_DEF_PIPELINESTAGES
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

/// A cut is crossed by at most this many tensors when the pass picks it.
constexpr int64_t kMaxCrossing = 4;
/// The link a boundary's tensors cross (forward, then their gradients
/// back), for the choice of cuts: 25 GB/s, an InfiniBand HDR link.
constexpr double kLinkBytesPerSecond = 25e9;
/// A training step's time over its forward's (the backward computes about
/// twice the forward's products).
constexpr double kStepOverForward = 3.0;

std::string nodeName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string n = nodeName(inner); !n.empty())
        return n;
  return "";
}

/// @loss's ops as the cut sees them.
struct Graph {
  mutable func::FuncOp loss;
  /// The ops that read a parameter, in order, and their positions.
  std::vector<Operation *> anchored;
  llvm::DenseMap<Operation *, int64_t> position;
  /// What may cross a cut: the anchored ops' results and the parameter
  /// arguments, each with its first definition position (a parameter: its
  /// first reader's) and its last reader's position (npos: read by the last
  /// stage's return). Ordered by definition.
  struct Crossing {
    Value value;
    int64_t def, lastUse;
  };
  std::vector<Crossing> values;
  /// The positions of the first readers of the trainable parameters.
  std::vector<int64_t> owners;
  /// Seconds of each anchored op's step (forward and backward).
  std::vector<double> seconds;

  static constexpr int64_t npos = std::numeric_limits<int64_t>::max();

  int64_t size() const { return static_cast<int64_t>(anchored.size()); }
  bool isParam(Value v) const {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && loss.getArgAttr(arg.getArgNumber(), tc::kParamAttrName);
  }
  bool isAnchored(Operation *op) const { return position.count(op); }

  explicit Graph(func::FuncOp loss) : loss(loss) {
    Block &body = loss.getBody().front();
    llvm::DenseSet<Value> reads;
    for (BlockArgument arg : loss.getArguments())
      if (isParam(arg))
        reads.insert(arg);
    for (Operation &op : body.without_terminator())
      if (llvm::any_of(op.getOperands(), [&](Value v) { return reads.contains(v); })) {
        position[&op] = size();
        anchored.push_back(&op);
        seconds.push_back(kStepOverForward * opSeconds(&op));
        for (Value r : op.getResults())
          reads.insert(r);
      }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    auto lastUse = [&](Value v) {
      int64_t last = -1;
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (user == ret.getOperation()) {
          unsigned k = use.getOperandNumber();
          // The loss and the per-sample losses are the last stage's; the
          // updates their own stage's; other outputs are not trained.
          if (k == 0 || loss.getResultAttr(k, tc::kSampleLossesAttrName))
            return npos;
          continue;
        }
        last = std::max(last, position.lookup(user));
      }
      return last;
    };
    for (BlockArgument arg : loss.getArguments()) {
      if (!isParam(arg) || arg.use_empty())
        continue;
      int64_t first = npos;
      for (Operation *user : arg.getUsers())
        first = std::min(first, position.lookup(user));
      values.push_back({arg, first, lastUse(arg)});
      auto symbol = loss.getArgAttrOfType<FlatSymbolRefAttr>(arg.getArgNumber(),
                                                             tc::kParamAttrName);
      auto param = SymbolTable::lookupNearestSymbolFrom<tc::ParamOp>(loss, symbol);
      if (param && param.getTrainable())
        owners.push_back(first);
    }
    for (Operation *op : anchored)
      for (Value r : op->getResults())
        values.push_back({r, position[op], lastUse(r)});
    llvm::stable_sort(values, [](const Crossing &a, const Crossing &b) { return a.def < b.def; });
    llvm::sort(owners);
  }

  /// The tensors and bytes that cross a cut after position p.
  std::pair<int64_t, int64_t> crossing(int64_t p) const {
    int64_t count = 0, bytes = 0;
    for (const Crossing &c : values)
      if (c.def <= p && p < c.lastUse) {
        ++count;
        bytes += valueBytes(c.value);
      }
    return {count, bytes};
  }

  /// Whether positions [from, to] hold the first reader of a trainable
  /// parameter.
  bool ownsParam(int64_t from, int64_t to) const {
    auto it = llvm::lower_bound(owners, from);
    return it != owners.end() && *it <= to;
  }
};

/// Moves every op that reads only parameters and constants (the mixed-
/// precision phase's weight casts, which it places at the top of @loss) to
/// just before its first reader, so that a parameter belongs to the stage
/// of the layer that reads it, not to the first stage.
void sinkParameterOps(func::FuncOp loss) {
  Block &body = loss.getBody().front();
  llvm::DenseSet<Value> fromParams;
  for (BlockArgument arg : loss.getArguments())
    if (loss.getArgAttr(arg.getArgNumber(), tc::kParamAttrName))
      fromParams.insert(arg);
  SmallVector<Operation *> candidates;
  for (Operation &op : body.without_terminator()) {
    if (isa<tc::ConstantOp>(op)) {
      fromParams.insert(op.getResult(0));
      continue;
    }
    bool onlyParams = op.getNumOperands() > 0 && op.getNumRegions() == 0 &&
                      isMemoryEffectFree(&op) &&
                      llvm::all_of(op.getOperands(), [&](Value v) { return fromParams.contains(v); });
    if (!onlyParams)
      continue;
    candidates.push_back(&op);
    for (Value r : op.getResults())
      fromParams.insert(r);
  }
  sinkToFirstReaders(candidates);
}

/// The name a crossing tensor has in the IR and the tables.
std::string tensorName(func::FuncOp loss, Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    if (auto symbol = loss.getArgAttrOfType<FlatSymbolRefAttr>(arg.getArgNumber(),
                                                               tc::kParamAttrName))
      return symbol.getValue().str();
  auto result = cast<OpResult>(v);
  std::string name = nodeName(result.getOwner()->getLoc());
  if (name.empty())
    name = result.getOwner()->getName().getStringRef().str();
  if (result.getResultNumber() > 0)
    name += ":" + std::to_string(result.getResultNumber());
  return name;
}

struct PipelineStagesPass : trainc::impl::PipelineStagesBase<PipelineStagesPass> {
  using PipelineStagesBase::PipelineStagesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t count = stages;
    if (count == 1 && !boundaries.empty())
      count = static_cast<int64_t>(boundaries.size()) + 1;
    if (count <= 1)
      return;
    auto loss = module.lookupSymbol<func::FuncOp>("loss");
    if (!loss) {
      module.emitError("--pipeline-stages cuts the training graph: it needs @loss (--loss)");
      return signalPassFailure();
    }
    if (!boundaries.empty() && static_cast<int64_t>(boundaries.size()) != count - 1) {
      module.emitError("--stage-boundaries names ")
          << boundaries.size() << " nodes; --pipeline-stages=" << count << " needs "
          << count - 1;
      return signalPassFailure();
    }
    sinkParameterOps(loss);
    Graph graph(loss);
    FailureOr<std::vector<int64_t>> cuts =
        boundaries.empty() ? chooseCuts(graph, count) : namedCuts(graph, count);
    if (failed(cuts) || failed(buildStages(module, graph, *cuts)))
      return signalPassFailure();
    loss.erase();
    module->setAttr(tc::kPipelineStagesAttrName,
                    Builder(module.getContext()).getI64IntegerAttr(count));
  }

  /// The cuts (after these anchored positions) that minimize the largest
  /// stage's time, its boundary's transfer included.
  FailureOr<std::vector<int64_t>> chooseCuts(const Graph &g, int64_t count) {
    const int64_t n = g.size();
    std::vector<double> prefix(n + 1, 0.0);
    for (int64_t j = 0; j < n; ++j)
      prefix[j + 1] = prefix[j] + g.seconds[j];
    // The candidate ends of a stage: each allowed cut, then the last op.
    std::vector<int64_t> ends;
    std::vector<double> transfer;
    for (int64_t p = 0; p + 1 < n; ++p) {
      auto [tensors, bytes] = g.crossing(p);
      if (tensors <= kMaxCrossing) {
        ends.push_back(p);
        transfer.push_back(2.0 * static_cast<double>(bytes) / kLinkBytesPerSecond);
      }
    }
    ends.push_back(n - 1);
    transfer.push_back(0.0);
    const size_t m = ends.size();
    const double inf = std::numeric_limits<double>::infinity();
    // best[k][e]: the least largest stage time of k + 1 stages ending at
    // ends[e]; from[k][e] the end of the stage before.
    std::vector<std::vector<double>> best(count, std::vector<double>(m, inf));
    std::vector<std::vector<int64_t>> from(count, std::vector<int64_t>(m, -1));
    for (size_t e = 0; e < m; ++e)
      if (g.ownsParam(0, ends[e]))
        best[0][e] = prefix[ends[e] + 1] + transfer[e];
    for (int64_t k = 1; k < count; ++k)
      for (size_t e = 0; e < m; ++e)
        for (size_t q = 0; q < e; ++q) {
          if (best[k - 1][q] == inf || !g.ownsParam(ends[q] + 1, ends[e]))
            continue;
          double stage = prefix[ends[e] + 1] - prefix[ends[q] + 1] + transfer[e];
          double worst = std::max(best[k - 1][q], stage);
          if (worst < best[k][e]) {
            best[k][e] = worst;
            from[k][e] = static_cast<int64_t>(q);
          }
        }
    if (best[count - 1][m - 1] == inf) {
      getOperation().emitError("--pipeline-stages=")
          << count << ": the training graph has no " << count - 1
          << " cuts that each cross at most " << kMaxCrossing
          << " tensors and leave every stage a trainable parameter of its own; use fewer "
             "stages or name the cuts with --stage-boundaries";
      return failure();
    }
    std::vector<int64_t> cuts;
    for (int64_t k = count - 1, e = static_cast<int64_t>(m) - 1; k > 0; --k) {
      e = from[k][e];
      cuts.insert(cuts.begin(), ends[e]);
    }
    return cuts;
  }

  /// --stage-boundaries: after the last op of each named node.
  FailureOr<std::vector<int64_t>> namedCuts(const Graph &g, int64_t count) {
    std::vector<int64_t> cuts;
    for (const std::string &node : boundaries) {
      int64_t at = -1;
      bool free = false;
      for (Operation &op : g.loss.getBody().front().without_terminator()) {
        if (nodeName(op.getLoc()) != node)
          continue;
        if (g.isAnchored(&op))
          at = std::max(at, g.position.lookup(&op));
        else
          free = true;
      }
      if (at < 0) {
        auto diag = getOperation().emitError("--stage-boundaries: ");
        if (free)
          diag << "ONNX node '" << node
               << "' reads no parameter (its ops are cloned into the stages that read "
                  "them); name a node of the model's layers";
        else
          diag << "no ONNX node '" << node << "' in the training graph";
        return failure();
      }
      if (!cuts.empty() && at <= cuts.back()) {
        getOperation().emitError("--stage-boundaries: '")
            << node << "' does not come after '" << boundaries[cuts.size() - 1]
            << "' in the graph: name the boundaries in graph order";
        return failure();
      }
      if (at + 1 >= g.size()) {
        getOperation().emitError("--stage-boundaries: nothing that reads a parameter follows '")
            << node << "': the last stage would be empty";
        return failure();
      }
      cuts.push_back(at);
    }
    for (int64_t k = 0; k < count; ++k) {
      int64_t from = k == 0 ? 0 : cuts[k - 1] + 1, to = k + 1 == count ? g.size() - 1 : cuts[k];
      if (!g.ownsParam(from, to)) {
        getOperation().emitError("--stage-boundaries: stage ")
            << k << " (" << (k == 0 ? "the start" : "after '" + boundaries[k - 1] + "'")
            << " to " << (k + 1 == count ? "the end" : "'" + boundaries[k] + "'")
            << ") reads no trainable parameter of its own";
        return failure();
      }
    }
    return cuts;
  }

  LogicalResult buildStages(ModuleOp module, const Graph &g, const std::vector<int64_t> &cuts);
};

LogicalResult PipelineStagesPass::buildStages(ModuleOp module, const Graph &g,
                                              const std::vector<int64_t> &cuts) {
  const int64_t count = static_cast<int64_t>(cuts.size()) + 1;
  auto stageAt = [&](int64_t position) {
    if (position == Graph::npos)
      return count - 1;
    return static_cast<int64_t>(llvm::lower_bound(cuts, position) - cuts.begin());
  };
  func::FuncOp loss = g.loss;
  Block &body = loss.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // Each crossing value: its defining stage and its last reading stage.
  llvm::DenseMap<Value, std::pair<int64_t, int64_t>> span;
  for (const Graph::Crossing &c : g.values)
    span[c.value] = {stageAt(c.def), c.lastUse < 0 ? stageAt(c.def) : stageAt(c.lastUse)};
  for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
    bool last = k == 0 || loss.getResultAttr(k, tc::kSampleLossesAttrName);
    if (last && span.count(v) && span[v].first != count - 1)
      return loss.emitError("--pipeline-stages: the loss is computed before the last stage");
  }
  OpBuilder b(module.getContext());
  b.setInsertionPoint(loss);
  for (int64_t s = 0; s < count; ++s) {
    // What stage s computes: its anchored ops and the parameter-free ops
    // they read, found backwards.
    llvm::DenseSet<Operation *> ops;
    for (Operation &op : llvm::reverse(body.without_terminator())) {
      bool take = g.isAnchored(&op)
                      ? stageAt(g.position.lookup(&op)) == s
                      : llvm::any_of(op.getUsers(), [&](Operation *u) { return ops.contains(u); });
      if (take)
        ops.insert(&op);
    }
    // What it receives and sends, in definition order.
    std::vector<Value> received, sent;
    for (const Graph::Crossing &c : g.values) {
      auto [def, use] = span[c.value];
      if (def < s && s <= use)
        received.push_back(c.value);
      if (def <= s && s < use)
        sent.push_back(c.value);
    }
    // The arguments its ops read (a parameter only in its owning stage).
    IRMapping map;
    SmallVector<unsigned> args;
    for (BlockArgument arg : loss.getArguments()) {
      bool owned = !g.isParam(arg) || (span.count(arg) && span[arg].first == s);
      bool read = llvm::any_of(arg.getUsers(), [&](Operation *u) { return ops.contains(u); }) ||
                  llvm::is_contained(sent, Value(arg));
      if (owned && read)
        args.push_back(arg.getArgNumber());
    }
    // The results: the loss's of the last stage, the updates of their own.
    SmallVector<unsigned> results;
    for (auto [k, v] : llvm::enumerate(ret.getOperands())) {
      Operation *def = v.getDefiningOp();
      bool here = def ? ops.contains(def) : llvm::is_contained(args, cast<BlockArgument>(v).getArgNumber());
      bool update = loss.getResultAttr(k, tc::kUpdateAttrName) != nullptr;
      if (here && (update || s == count - 1))
        results.push_back(static_cast<unsigned>(k));
    }
    SmallVector<Type> argTypes, resultTypes;
    SmallVector<Location> argLocs;
    for (unsigned a : args) {
      argTypes.push_back(loss.getArgument(a).getType());
      argLocs.push_back(loss.getArgument(a).getLoc());
    }
    // A stage before the last returns the loss 0 first, as every training
    // step does (its ABI): the loss is the last stage's.
    const bool zeroLoss = s + 1 < count;
    if (zeroLoss)
      resultTypes.push_back(ret.getOperand(0).getType());
    for (unsigned k : results)
      resultTypes.push_back(ret.getOperand(k).getType());
    auto fn = b.create<func::FuncOp>(loss.getLoc(), "stage" + std::to_string(s) + "_loss",
                                     b.getFunctionType(argTypes, resultTypes));
    Block *entry = fn.addEntryBlock();
    for (auto [i, a] : llvm::enumerate(args)) {
      entry->getArgument(i).setLoc(argLocs[i]);
      fn.setArgAttrs(i, loss.getArgAttrDict(a));
      map.map(loss.getArgument(a), entry->getArgument(i));
    }
    if (zeroLoss)
      fn.setResultAttrs(0, loss.getResultAttrDict(0));
    for (auto [i, k] : llvm::enumerate(results))
      fn.setResultAttrs(i + (zeroLoss ? 1 : 0), loss.getResultAttrDict(k));
    OpBuilder in = OpBuilder::atBlockEnd(entry);
    for (auto [slot, v] : llvm::enumerate(received)) {
      auto recv = in.create<tc::RecvOp>(v.getLoc(), v.getType(), s - 1,
                                        static_cast<int64_t>(slot), /*gradient=*/false,
                                        tensorName(loss, v));
      map.map(v, recv.getResult());
    }
    double seconds = 0.0;
    for (Operation &op : body.without_terminator())
      if (ops.contains(&op)) {
        in.clone(op, map);
        if (g.isAnchored(&op))
          seconds += g.seconds[g.position.lookup(&op)];
      }
    int64_t sendBytes = 0;
    for (auto [slot, v] : llvm::enumerate(sent)) {
      in.create<tc::SendOp>(v.getLoc(), map.lookup(v), s + 1, static_cast<int64_t>(slot),
                            /*gradient=*/false, tensorName(loss, v));
      sendBytes += valueBytes(v);
    }
    SmallVector<Value> returned;
    if (zeroLoss) {
      auto type = cast<RankedTensorType>(ret.getOperand(0).getType());
      returned.push_back(
          in.create<tc::ConstantOp>(NameLoc::get(in.getStringAttr("the loss is the last stage's")),
                                    DenseElementsAttr::get(type, in.getZeroAttr(type.getElementType())))
              .getResult());
    }
    for (unsigned k : results)
      returned.push_back(map.lookup(ret.getOperand(k)));
    in.create<func::ReturnOp>(ret.getLoc(), returned);
    fn->setAttr(tc::kStageCostAttrName, in.getF64FloatAttr(seconds));
    fn->setAttr(tc::kStageSendBytesAttrName, in.getI64IntegerAttr(sendBytes));
  }
  return success();
}

} // namespace
