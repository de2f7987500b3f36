//===- Remat.cpp - rematerialization: recompute in the backward what is cheap ===//
//
// Which forward values the backward keeps and which it recomputes is a
// minimum cut, as in PyTorch's min-cut partitioner (functorch's
// min_cut_rematerialization_partition): every forward value v is an edge
// in(v) -> out(v) whose capacity is what keeping v costs; its readers hang
// off out(v) with infinite edges; the source feeds the ops that must run in
// the forward (those whose recomputation is not allowed), the sink drains
// the values the backward reads. A cut separates what the forward computes
// from what the backward recomputes, and the edges it crosses are the
// values kept for the backward. The capacity of an edge is the value's size
// times 1.1^d (d: its distance from the backward, at most 40), which keeps
// a value near the backward rather than an equally large one further up
// (otherwise a residual stream would be recomputed from every earlier
// block). Block arguments and constants cost nothing; a value the step
// returns is kept anyway and costs nothing either.
//
// What may be recomputed: views (free), pointwise ops, casts, data
// movement (transpose, expand, slice, concat, gather) and training-mode
// dropout (its mask is a function of the step's key, so the same mask
// comes back), and the memory-bound library ops (layer and batch
// normalization, softmax, pooling). Never: reductions, losses, and the
// contractions (matmul, gemm, conv) unless a --memory-budget needs them.
//
// With a budget, the contractions are allowed one at a time, cheapest
// first (the fewest multiply-adds per byte of result: the reduction length
// K of a GEMM, C*KH*KW of a convolution), re-running the cut each time and
// measuring the step's peak of live bytes, until the peak fits. This is a
// greedy: a subset of the contractions, not the prefix of one order, could
// sometimes fit with less recompute; an exact choice is a knapsack over the
// peak, which depends on the whole schedule.
//
// Recomputation goes just before the first op of the backward that reads
// it, again for a reader further on (kShareWindow), and a pointwise chain
// is cloned apart for the library ops that read it (what they read is
// stored; what pointwise readers read fuses into them). Clones carry
// `tc.recomputed = k` (the k-th clone of an op: CSE folds a clone neither
// back into the forward's op nor into another clone) and the location
// "recompute of <node>", marked #tc.phase<recompute>.
//
//===----------------------------------------------------------------------===//

#include "ir/TcAttrs.h"
#include "ir/TcOps.h"
#include "passes/Liveness.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <vector>

namespace trainc {
#define GEN_PASS_DEF_REMAT
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

constexpr int64_t kInfinite = int64_t(1) << 60;

/// How an op's result may be recomputed.
enum class Recompute {
  View,          // aliases its operand: free
  Pointwise,     // one pass over its elements
  Normalization, // a library op that reads its input once or twice
  Contraction,   // GEMM or convolution: only under a budget
  Never,
};

/// The op's recompute class, from its traits (TcBase.td).
Recompute recomputeKind(Operation *op) {
  if (tc::isView(op))
    return Recompute::View;
  // Training dropout redraws its mask from the step's key: one pass.
  if (op->hasTrait<tc::OpTrait::Pointwise>() || op->hasTrait<tc::OpTrait::DataMovement>() ||
      isa<tc::DropoutOp>(op))
    return Recompute::Pointwise;
  if (op->hasTrait<tc::OpTrait::Normalization>())
    return Recompute::Normalization;
  if (op->hasTrait<tc::OpTrait::Contraction>())
    return Recompute::Contraction;
  return Recompute::Never;
}

/// Multiply-adds per result element of a contraction (its reduction length).
int64_t reductionLength(Operation *op) {
  if (auto conv = dyn_cast<tc::ConvOp>(op)) {
    auto w = cast<RankedTensorType>(conv.getWeight().getType());
    return w.getNumElements() / w.getDimSize(0);
  }
  auto a = cast<RankedTensorType>(op->getOperand(0).getType());
  auto transA = op->getAttrOfType<BoolAttr>("trans_a");
  return a.getDimSize(a.getRank() - (transA && transA.getValue() ? 2 : 1));
}

/// Dinic's maximum flow, for the minimum cut. Written here: the cut is a
/// few dozen lines over a graph of a few thousand nodes, and LLVM/MLIR have
/// no flow algorithm.
class MinCut {
public:
  explicit MinCut(int nodes) : adjacent(nodes), level(nodes), next(nodes) {}

  void addEdge(int from, int to, int64_t capacity) {
    adjacent[from].push_back(edges.size());
    edges.push_back({to, capacity});
    adjacent[to].push_back(edges.size());
    edges.push_back({from, 0});
  }

  /// Runs the flow; then sourceSide(n) tells the two sides of a minimum cut.
  void solve(int source, int sink) {
    while (bfs(source, sink)) {
      std::fill(next.begin(), next.end(), 0);
      while (push(source, sink, kInfinite) > 0) {
      }
    }
    bfs(source, -1); // levels >= 0: reachable from the source
  }
  bool sourceSide(int node) const { return level[node] >= 0; }

private:
  struct Edge {
    int to;
    int64_t capacity;
  };

  bool bfs(int source, int sink) {
    std::fill(level.begin(), level.end(), -1);
    std::queue<int> queue;
    level[source] = 0;
    queue.push(source);
    while (!queue.empty()) {
      int node = queue.front();
      queue.pop();
      for (size_t e : adjacent[node])
        if (edges[e].capacity > 0 && level[edges[e].to] < 0) {
          level[edges[e].to] = level[node] + 1;
          queue.push(edges[e].to);
        }
    }
    return sink >= 0 && level[sink] >= 0;
  }

  // Iterative depth-first augmentation along the level graph.
  int64_t push(int source, int sink, int64_t limit) {
    std::vector<std::pair<int, size_t>> path; // (node, edge taken)
    int node = source;
    while (true) {
      if (node == sink) {
        int64_t flow = limit;
        for (auto &[n, e] : path)
          flow = std::min(flow, edges[e].capacity);
        for (auto &[n, e] : path) {
          edges[e].capacity -= flow;
          edges[e ^ 1].capacity += flow;
        }
        return flow;
      }
      bool advanced = false;
      for (size_t &i = next[node]; i < adjacent[node].size(); ++i) {
        size_t e = adjacent[node][i];
        if (edges[e].capacity > 0 && level[edges[e].to] == level[node] + 1) {
          path.push_back({node, e});
          node = edges[e].to;
          advanced = true;
          break;
        }
      }
      if (advanced)
        continue;
      if (path.empty())
        return 0;
      level[node] = -1; // a dead end: never again this phase
      node = path.back().first;
      path.pop_back();
      ++next[node];
    }
  }

  std::vector<Edge> edges;
  std::vector<std::vector<size_t>> adjacent;
  std::vector<int> level;
  std::vector<size_t> next;
};

/// The first op of the backward (not a constant), or null.
Operation *backwardBegin(Block &body) {
  for (Operation &op : body)
    if (!isa<tc::ConstantOp>(op) && isBackwardLoc(op.getLoc()))
      return &op;
  return nullptr;
}

/// The forward values of `func` the backward recomputes under a minimum
/// cut, in the body's order; `allowed(i)`: whether the contraction that is
/// op i of the body may be recomputed.
std::vector<Value> chooseRecomputed(func::FuncOp func, Operation *begin,
                                    llvm::function_ref<bool(int64_t)> allowed) {
  Block &body = func.getBody().front();
  std::vector<Operation *> forward;
  llvm::DenseMap<Value, int> node; // forward value -> its index
  std::vector<Value> values;
  for (Operation &op : body) {
    if (&op == begin)
      break;
    forward.push_back(&op);
    if (isa<tc::ConstantOp>(op))
      continue;
    for (Value r : op.getResults()) {
      node[r] = values.size();
      values.push_back(r);
    }
  }
  if (values.empty())
    return {};
  // Readers: in the backward (the return apart), or the return.
  std::vector<bool> readByBackward(values.size()), returned(values.size());
  for (Operation *op = begin; op; op = op->getNextNode())
    for (Value operand : op->getOperands())
      if (auto it = node.find(operand); it != node.end())
        (op->hasTrait<OpTrait::IsTerminator>() ? returned : readByBackward)[it->second] = true;
  // Distance from the backward, over forward users.
  constexpr int kFar = 40;
  std::vector<int> distance(values.size(), kFar);
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    Operation *op = *it;
    for (Value r : op->getResults()) {
      auto own = node.find(r);
      if (own == node.end())
        continue;
      int &d = distance[own->second];
      if (readByBackward[own->second])
        d = 1;
      for (Operation *user : r.getUsers())
        for (Value u : user->getResults())
          if (auto other = node.find(u); other != node.end())
            d = std::min(d, distance[other->second] + 1);
    }
  }

  const int source = 0, sink = 1;
  auto in = [](int v) { return 2 + 2 * v; };
  auto out = [](int v) { return 3 + 2 * v; };
  MinCut graph(2 + 2 * values.size());
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(forward))
    position[op] = i;
  for (auto [v, value] : llvm::enumerate(values)) {
    Operation *op = value.getDefiningOp();
    Recompute kind = recomputeKind(op);
    bool banned = kind == Recompute::Never ||
                  (kind == Recompute::Contraction && !allowed(position[op]));
    int64_t keep;
    if (returned[v])
      keep = 0;
    else if (kind == Recompute::View)
      keep = kInfinite;
    else
      keep = int64_t(std::ceil(double(tensorBytes(value.getType())) * std::pow(1.1, distance[v])));
    graph.addEdge(in(v), out(v), keep);
    if (banned || returned[v])
      graph.addEdge(source, in(v), kInfinite);
    for (Value operand : op->getOperands())
      if (auto it = node.find(operand); it != node.end())
        graph.addEdge(out(it->second), in(v), kInfinite);
    if (readByBackward[v])
      graph.addEdge(out(v), sink, kInfinite);
  }
  graph.solve(source, sink);

  // Recomputed: what the backward reads on the far side of the cut, and
  // what that needs on the same side.
  std::vector<bool> recomputed(values.size());
  std::vector<int> stack;
  for (size_t v = 0; v < values.size(); ++v)
    if (readByBackward[v] && !graph.sourceSide(in(v)))
      stack.push_back(v);
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    if (recomputed[v])
      continue;
    recomputed[v] = true;
    for (Value operand : values[v].getDefiningOp()->getOperands())
      if (auto it = node.find(operand); it != node.end() && !graph.sourceSide(in(it->second)))
        stack.push_back(it->second);
  }
  std::vector<Value> chosen;
  for (size_t v = 0; v < values.size(); ++v)
    if (recomputed[v])
      chosen.push_back(values[v]);
  return chosen;
}

Location recomputeLoc(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return tc::phaseLoc("recompute of " + name.getName().str(), name.getChildLoc(),
                        tc::StepPhase::Recompute);
  return tc::phaseLoc("recompute", loc, tc::StepPhase::Recompute);
}

/// A recomputed op is cloned again for a reader more than this many ops
/// after the op its previous clone was placed before: one clone serving
/// readers far apart would be live from the first to the last (a stem
/// activation recomputed for layer 1's backward would stay until the
/// stem's own backward). Readers within the window share one clone.
constexpr int64_t kShareWindow = 12;

/// Clones the ops of `chosen` into the backward, each just before the
/// first backward op that reads it (or reads a clone that needs it), again
/// for readers beyond kShareWindow, and points the backward's reads at the
/// clones. Erases the forward ops left dead. Returns the number of clones.
int64_t recompute(func::FuncOp func, Operation *begin, llvm::ArrayRef<Value> chosen) {
  Block &body = func.getBody().front();
  std::vector<Operation *> order;
  llvm::DenseMap<Operation *, int64_t> index;
  for (Operation &op : body) {
    index[&op] = order.size();
    order.push_back(&op);
  }
  int64_t beginIndex = index[begin];
  // The chosen ops in the body's order (an op with two chosen results once).
  std::vector<Operation *> ops;
  llvm::DenseSet<Value> isChosen(chosen.begin(), chosen.end());
  for (Value v : chosen)
    if (ops.empty() || ops.back() != v.getDefiningOp())
      ops.push_back(v.getDefiningOp());
  // Clusters of an op: each the index of the op its clone goes before, and
  // the last demand it serves. Demands are the indices of backward readers
  // and of the places of the clones (of chosen ops) that read it.
  // A pointwise op read by pointwise ops of the backward (which fusion
  // merges with it: nothing is stored) and by a library op (which needs it
  // stored) gets one clone for each kind of reader: the stored one then
  // holds only what the library op reads (a GELU's output for the next
  // GEMM's weight gradient, not the intermediates of its gradient).
  auto pointwise = [](Operation *op) {
    return op->hasTrait<tc::OpTrait::Pointwise>() || recomputeKind(op) == Recompute::Pointwise;
  };
  // The kind of a demand on `def`: 1 from a library op of the backward or
  // from a clone serving one (the chain up to the stored value is
  // recomputed apart), else 0. Only a pointwise op tells them apart.
  auto split = [](Operation *def) { return recomputeKind(def) == Recompute::Pointwise; };
  auto kindOf = [&](Operation *def, Operation *reader) {
    return split(def) && !pointwise(reader) ? 1 : 0;
  };
  struct Cluster {
    int kind;
    int64_t at, last;
    Operation *clone = nullptr;
  };
  llvm::DenseMap<Operation *, std::vector<Cluster>> clusters;
  auto serving = [&](Operation *def, int64_t demand, int kind) -> Cluster & {
    for (Cluster &c : clusters[def])
      if (c.kind == kind && c.at <= demand && demand <= c.last)
        return c;
    llvm_unreachable("every demand has a cluster");
  };
  for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
    Operation *def = *it;
    std::vector<std::pair<int, int64_t>> demands; // (kind, index)
    for (Value result : def->getResults()) {
      if (!isChosen.contains(result))
        continue; // e.g. a batch norm's running statistics: the return's
      for (Operation *user : result.getUsers()) {
        if (index.count(user) && index[user] >= beginIndex)
          demands.push_back({kindOf(def, user), index[user]});
        else if (auto found = clusters.find(user); found != clusters.end())
          for (const Cluster &c : found->second)
            demands.push_back({split(def) ? c.kind : 0, c.at});
      }
    }
    llvm::sort(demands);
    std::vector<Cluster> &mine = clusters[def];
    for (auto [kind, d] : demands) {
      if (mine.empty() || mine.back().kind != kind || d - mine.back().at > kShareWindow)
        mine.push_back({kind, d, d});
      else
        mine.back().last = d;
    }
  }
  OpBuilder builder(func.getContext());
  int64_t count = 0;
  llvm::DenseSet<Operation *> chosenOps(ops.begin(), ops.end());
  for (Operation *def : ops) {
    for (Cluster &c : clusters[def]) {
      IRMapping mapping;
      for (Value operand : def->getOperands())
        if (Operation *producer = operand.getDefiningOp(); producer && chosenOps.contains(producer))
          mapping.map(operand, serving(producer, c.at, split(producer) ? c.kind : 0).clone->getResult(
                                   cast<OpResult>(operand).getResultNumber()));
      builder.setInsertionPoint(order[c.at]);
      c.clone = builder.clone(*def, mapping);
      c.clone->setLoc(recomputeLoc(def->getLoc()));
      // The attribute's value tells the clones of one op apart, so CSE
      // folds neither into the forward's op nor into each other.
      c.clone->setAttr(tc::kRecomputedAttrName, builder.getI64IntegerAttr(clusters[def].size() > 1
                                                                    ? &c - clusters[def].data()
                                                                    : 0));
      ++count;
    }
  }
  // The backward reads the clone serving it.
  for (Operation *def : ops)
    for (OpResult result : def->getResults()) {
      if (!isChosen.contains(result))
        continue;
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : result.getUses())
        if (index.count(use.getOwner()) && index[use.getOwner()] >= beginIndex)
          uses.push_back(&use);
      for (OpOperand *use : uses)
        use->set(serving(def, index[use->getOwner()], kindOf(def, use->getOwner()))
                     .clone->getResult(result.getResultNumber()));
    }
  // The forward ops nothing reads any more.
  for (Operation *op = begin->getPrevNode(); op;) {
    Operation *prev = op->getPrevNode();
    if (op->use_empty() && isMemoryEffectFree(op))
      op->erase();
    op = prev;
  }
  return count;
}

/// Moves each op that reads only arguments and constants (a parameter's
/// bf16 copy, which the mixed-precision phase makes at the top of the
/// step) to just before its first reader, so it is not live from the
/// step's start: all weight copies at once were the forward's peak.
void sinkArgumentOps(func::FuncOp func) {
  Block &body = func.getBody().front();
  SmallVector<Operation *> candidates;
  for (Operation &op : body) {
    bool fromArguments = op.getNumOperands() > 0 && llvm::all_of(op.getOperands(), [](Value v) {
      return isa<BlockArgument>(v) || isa_and_nonnull<tc::ConstantOp>(v.getDefiningOp());
    });
    if (fromArguments && !isa<tc::ConstantOp>(op) && !op.hasTrait<OpTrait::IsTerminator>() &&
        op.getNumRegions() == 0 && isMemoryEffectFree(&op))
      candidates.push_back(&op);
  }
  sinkToFirstReaders(candidates);
}

struct RematPass : trainc::impl::RematBase<RematPass> {
  using RematBase::RematBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto step = module.lookupSymbol<func::FuncOp>("train_step");
    if (!step || step.isExternal())
      return;
    if (memoryBudget < 0) {
      module.emitError("trainc-remat: memory-budget must be positive");
      return signalPassFailure();
    }
    Block &body = step.getBody().front();
    Operation *begin = backwardBegin(body);
    if (!begin)
      return;
    BufferLiveness before(step);

    // The contractions the budget may recompute, cheapest first.
    std::vector<int64_t> contractions; // body indices
    std::vector<Operation *> ops;
    for (Operation &op : body) {
      if (&op == begin)
        break;
      if (recomputeKind(&op) == Recompute::Contraction)
        contractions.push_back(ops.size());
      ops.push_back(&op);
    }
    std::stable_sort(contractions.begin(), contractions.end(), [&](int64_t a, int64_t b) {
      return reductionLength(ops[a]) < reductionLength(ops[b]);
    });
    size_t allowedCount = 0; // a prefix of `contractions`
    auto allowed = [&](int64_t i) {
      auto end = contractions.begin() + allowedCount;
      return std::find(contractions.begin(), end, i) != end;
    };
    if (memoryBudget > 0) {
      // The peak of live bytes with the first n contractions allowed.
      auto peakWith = [&](size_t n) {
        allowedCount = n;
        auto trial = cast<func::FuncOp>(step->clone());
        Block &trialBody = trial.getBody().front();
        Operation *trialBegin = backwardBegin(trialBody);
        recompute(trial, trialBegin, chooseRecomputed(trial, trialBegin, allowed));
        sinkArgumentOps(trial);
        int64_t peak = BufferLiveness(trial).peakBytes();
        trial.erase();
        return peak;
      };
      // More recomputation is not always a lower peak (a long recomputed
      // chain is live at once): the error names the best prefix's peak.
      size_t n = 0;
      int64_t peak = peakWith(0), best = peak;
      while (peak > memoryBudget && n < contractions.size()) {
        peak = peakWith(++n);
        best = std::min(best, peak);
      }
      if (peak > memoryBudget) {
        peak = best;
        step.emitError(llvm::formatv(
            "--memory-budget={0} bytes cannot be met: the smallest peak of live bytes "
            "rematerialization reaches is {1} bytes ({2:F1} MiB; it recomputes pointwise "
            "ops and normalizations, then GEMMs and convolutions, fewest multiply-adds "
            "per byte first); raise the budget or lower the batch size",
            memoryBudget.getValue(), peak, peak / 1048576.0));
        return signalPassFailure();
      }
      allowedCount = n;
    }

    std::vector<Value> chosen = chooseRecomputed(step, begin, allowed);
    int64_t cloned = recompute(step, begin, chosen);
    sinkArgumentOps(step);
    BufferLiveness after(step);
    Builder b(module.getContext());
    int64_t contractionsRecomputed = 0;
    step.walk([&](Operation *op) {
      if (op->hasAttr(tc::kRecomputedAttrName) && recomputeKind(op) == Recompute::Contraction)
        ++contractionsRecomputed;
    });
    step->setAttr(tc::kRematAttrName,
                  b.getDictionaryAttr({
                      b.getNamedAttr("recomputed_ops", b.getI64IntegerAttr(cloned)),
                      b.getNamedAttr("recomputed_contractions",
                                     b.getI64IntegerAttr(contractionsRecomputed)),
                      b.getNamedAttr("saved_before", b.getI64IntegerAttr(before.totalBytes(
                                                         BufferKind::Saved))),
                      b.getNamedAttr("saved_after", b.getI64IntegerAttr(after.totalBytes(
                                                        BufferKind::Saved))),
                      b.getNamedAttr("peak_before", b.getI64IntegerAttr(before.peakBytes())),
                      b.getNamedAttr("peak_after", b.getI64IntegerAttr(after.peakBytes())),
                  }));
  }
};

} // namespace
