//===- Fuse.cpp - group chains of pointwise ops into tc.fused kernels -----===//
//
// One walk over each function in order. Every fusible op either joins the
// open groups of its producers that compute its shape (merging them), or an
// open group of its shape that reads one of its operands too, or starts a
// group. A group is open while no op outside it has read one of its
// values: then every op after the group's first member that the group does
// not contain either precedes all uses of the group's values or does not
// touch them, so the group can be emitted at its last member without
// reordering anything. Groups of two or more ops become tc.fused regions.
// A copying tc.slice that only such groups (or lone pointwise ops) of its
// shape read then moves into them: each reads the sliced elements from the
// slice's input, and the copy is gone (an LSTM step's four gates, column
// blocks of one GEMM output).
//
//===----------------------------------------------------------------------===//

#include "ir/TcOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <algorithm>

namespace trainc {
#define GEN_PASS_DEF_FUSE
#include "passes/Passes.h.inc"
} // namespace trainc

using namespace mlir;
using namespace trainc;

namespace {

struct Group {
  /// Members in function order.
  SmallVector<Operation *> ops;
  bool open = true;
  /// Merged into another group (its ops moved there).
  bool merged = false;
};

ArrayRef<int64_t> resultShape(Operation *op) {
  return cast<RankedTensorType>(op->getResult(0).getType()).getShape();
}

/// The kernel's name: the distinct op names in order, at most four.
std::string kernelName(ArrayRef<Operation *> ops) {
  SmallVector<StringRef> names;
  for (Operation *op : ops) {
    StringRef n = op->getName().stripDialect();
    if (!llvm::is_contained(names, n))
      names.push_back(n);
  }
  std::string s;
  for (size_t i = 0; i < names.size() && i < 4; ++i)
    s += (i ? "_" : "") + names[i].str();
  if (names.size() > 4)
    s += "_etc";
  return s;
}

struct FusePass : trainc::impl::FuseBase<FusePass> {
  using FuseBase::FuseBase;

  void runOnOperation() override {
    if (maxOps < 2) {
      getOperation().emitError("trainc-fuse: max-ops must be at least 2");
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        fuseFunction(func);
  }

  void fuseFunction(func::FuncOp func) {
    std::vector<Group> groups;
    DenseMap<Operation *, unsigned> groupOf;
    auto find = [&](Operation *op) -> std::optional<unsigned> {
      if (!op)
        return std::nullopt;
      auto it = groupOf.find(op);
      if (it == groupOf.end())
        return std::nullopt;
      return it->second;
    };

    for (Operation &op : func.getBody().front()) {
      bool fusible = tc::isFusible(&op) && op.getNumResults() == 1;
      // Open producer groups of this op's shape: the op joins them.
      llvm::SetVector<unsigned> join;
      llvm::SetVector<unsigned> used;
      for (Value operand : op.getOperands()) {
        std::optional<unsigned> g = find(operand.getDefiningOp());
        if (!g)
          continue;
        used.insert(*g);
        if (fusible && groups[*g].open &&
            resultShape(groups[*g].ops.front()) == resultShape(&op))
          join.insert(*g);
      }
      // Keep the merged group within the size bound.
      size_t total = 1;
      SmallVector<unsigned> accepted;
      for (unsigned g : join)
        if (total + groups[g].ops.size() <= static_cast<size_t>(maxOps)) {
          total += groups[g].ops.size();
          accepted.push_back(g);
        }
      // Every other group this op reads is sealed: its values are now read
      // outside it.
      for (unsigned g : used)
        if (!llvm::is_contained(accepted, g))
          groups[g].open = false;
      if (!fusible)
        continue;
      if (std::optional<unsigned> sibling = openSibling(&op, groups, groupOf);
          sibling && !llvm::is_contained(accepted, *sibling) &&
          total + groups[*sibling].ops.size() <= static_cast<size_t>(maxOps)) {
        accepted.push_back(*sibling);
        total += groups[*sibling].ops.size();
      }
      if (accepted.empty()) {
        groupOf[&op] = groups.size();
        groups.push_back({{&op}});
        continue;
      }
      unsigned into = accepted.front();
      for (unsigned g : llvm::drop_begin(accepted)) {
        for (Operation *member : groups[g].ops) {
          groups[into].ops.push_back(member);
          groupOf[member] = into;
        }
        groups[g].ops.clear();
        groups[g].merged = true;
      }
      groups[into].ops.push_back(&op);
      groupOf[&op] = into;
      llvm::sort(groups[into].ops,
                 [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    }

    for (Group &group : groups)
      if (!group.merged && group.ops.size() >= 2)
        formGroup(group.ops);
    if (epilogues) {
      attachEpilogues(func);
      attachNormGroups(func);
    }
    absorbSlices(func);
    // Splat constants that only groups read are now dead.
    SmallVector<Operation *> dead;
    for (auto constant : func.getBody().front().getOps<tc::ConstantOp>())
      if (constant->use_empty())
        dead.push_back(constant);
    for (Operation *op : dead)
      op->erase();
  }

  /// An open group of `op`'s shape that reads one of `op`'s operands too
  /// (two kernels over one shape that share an input: the sample weights
  /// of the loss's terms, the count its mean divides by): `op` joins it,
  /// and the input is read once. None otherwise.
  std::optional<unsigned> openSibling(Operation *op, const std::vector<Group> &groups,
                                      const DenseMap<Operation *, unsigned> &groupOf) {
    for (Value operand : op->getOperands()) {
      if (tc::isSplatConstant(operand.getDefiningOp()))
        continue;
      for (Operation *reader : operand.getUsers()) {
        auto it = groupOf.find(reader);
        if (reader == op || it == groupOf.end())
          continue;
        const Group &g = groups[it->second];
        if (g.open && !g.merged && resultShape(g.ops.front()) == resultShape(op) &&
            g.ops.front()->isBeforeInBlock(op))
          return it->second;
      }
    }
    return std::nullopt;
  }

  /// The ops of `func`'s body that `pred` holds for, in order (collected
  /// first: attaching a head rewrites the body).
  static SmallVector<Operation *> opsWhere(func::FuncOp func, bool (*pred)(Operation *)) {
    SmallVector<Operation *> ops;
    for (Operation &op : func.getBody().front())
      if (pred(&op))
        ops.push_back(&op);
    return ops;
  }

  /// Each GEMM (tc::isEpilogueHead) whose value one group (or one pointwise
  /// op of its shape) alone reads becomes that group's head.
  void attachEpilogues(func::FuncOp func) {
    for (Operation *head : opsWhere(func, tc::isEpilogueHead)) {
      Value product = head->getResult(0);
      if (product.use_empty())
        continue;
      Operation *user = *product.getUsers().begin();
      if (llvm::any_of(product.getUsers(), [&](Operation *u) { return u != user; }))
        continue; // also read elsewhere: it needs its own buffer anyway
      ArrayRef<int64_t> shape = resultShape(head);
      auto fused = dyn_cast<tc::FusedOp>(user);
      if (!fused) {
        if (!tc::isFusible(user) || user->getNumResults() != 1 ||
            resultShape(user) != shape)
          continue;
        fused = formGroup({user});
      }
      bool headed = llvm::any_of(fused.getBlock().without_terminator(),
                                 [](Operation &op) { return tc::isEpilogueHead(&op); });
      if (fused.getIterationShape() != shape || !hasF32Result(fused) || headed)
        continue; // one GEMM a group: a second product stays an input
      absorb(fused, head);
      head->erase();
    }
  }

  /// Each tc.slice that copies (not a view) and that only pointwise groups
  /// of its shape read, or lone pointwise ops of its shape (each made a
  /// group), moves into each of them; the groups read its input instead.
  void absorbSlices(func::FuncOp func) {
    for (Operation *op : opsWhere(func, [](Operation *op) { return isa<tc::SliceOp>(op); })) {
      auto slice = cast<tc::SliceOp>(op);
      Value part = slice.getResult();
      if (slice.getViewSource(0) || part.use_empty())
        continue;
      ArrayRef<int64_t> shape = resultShape(slice);
      llvm::SetVector<Operation *> readers(part.getUsers().begin(), part.getUsers().end());
      if (!llvm::all_of(readers, [&](Operation *u) {
            return pointwiseGroup(u, shape) && !takesAsKey(u, part);
          }))
        continue;
      for (Operation *reader : readers) {
        auto fused = dyn_cast<tc::FusedOp>(reader);
        absorb(fused ? fused : formGroup({reader}), slice);
      }
      slice->erase();
    }
  }

  /// Whether `reader` (a group or a lone op) takes `v` as a dropout's key,
  /// which a kernel receives as a pointer and never reads element by
  /// element: a slice that is a key stays a copy.
  static bool takesAsKey(Operation *reader, Value v) {
    auto isKey = [](OpOperand &use) {
      return isa<tc::DropoutOp>(use.getOwner()) && use.getOperandNumber() == 1;
    };
    auto fused = dyn_cast<tc::FusedOp>(reader);
    for (OpOperand &operand : reader->getOpOperands()) {
      if (operand.get() != v)
        continue;
      if (!fused ? isKey(operand)
                 : llvm::any_of(fused.getBlock().getArgument(operand.getOperandNumber()).getUses(),
                                isKey))
        return true;
    }
    return false;
  }

  /// Each normalization (tc::isNormHead) takes the group (or lone
  /// pointwise op of its shape) that computes its streamed operand as its
  /// prologue and the one that alone reads its first result as its
  /// epilogue, where that keeps every value's readers after the group.
  void attachNormGroups(func::FuncOp func) {
    for (Operation *head : opsWhere(func, tc::isNormHead)) {
      ArrayRef<int64_t> shape = resultShape(head);
      Operation *prologue = pointwiseGroup(tc::streamedOperand(head).getDefiningOp(), shape);
      Operation *epilogue = nullptr;
      Value product = head->getResult(0);
      if (!product.use_empty()) {
        Operation *user = *product.getUsers().begin();
        if (llvm::all_of(product.getUsers(), [&](Operation *u) { return u == user; }) &&
            hasF32Result(user))
          epilogue = pointwiseGroup(user, shape);
      }
      // The epilogue reads the head's first result only (a model may read
      // a running statistic: the trainer refuses that, naming the node).
      if (epilogue && llvm::any_of(llvm::drop_begin(head->getResults()), [&](Value r) {
            return llvm::is_contained(r.getUsers(), epilogue);
          }))
        epilogue = nullptr;
      // The head reads no prologue value but its streamed operand.
      if (prologue && llvm::any_of(head->getOpOperands(), [&](OpOperand &o) {
            return o.get().getDefiningOp() == prologue &&
                   o.get() != tc::streamedOperand(head);
          }))
        prologue = nullptr;
      SmallVector<Operation *> parts = chooseParts(prologue, head, epilogue);
      if (parts.size() < 2)
        continue;
      SmallVector<Operation *> members;
      for (Operation *part : parts)
        llvm::append_range(members, part == head ? SmallVector<Operation *>{head} : unfuse(part));
      // The head reads its streamed operand and its other results from
      // memory; an inference batch norm writes no statistics.
      SmallVector<Value> keep = {tc::streamedOperand(head)};
      auto bn = dyn_cast<tc::BatchNormOp>(head);
      if (!bn || bn.getTraining())
        llvm::append_range(keep, llvm::drop_begin(head->getResults()));
      // Prologue values the epilogue reads are read from memory too.
      for (Operation *member : members)
        if (member->isBeforeInBlock(head))
          for (Value r : member->getResults())
            if (llvm::any_of(r.getUsers(),
                             [&](Operation *u) { return head->isBeforeInBlock(u); }))
              keep.push_back(r);
      formGroup(members, keep, head);
    }
  }

  /// The prologue, head and epilogue (in order, each where there is one)
  /// that can be one group: the group goes where its last part is, so every
  /// reader of a part's values outside the parts must come after that. The
  /// epilogue is dropped first (the running statistics' readers may precede
  /// it), then the prologue. Fewer than two parts: nothing to fuse.
  static SmallVector<Operation *> chooseParts(Operation *prologue, Operation *head,
                                              Operation *epilogue) {
    using Choice = std::pair<Operation *, Operation *>;
    for (auto [pro, epi] : {Choice{prologue, epilogue}, Choice{prologue, nullptr},
                            Choice{nullptr, epilogue}}) {
      SmallVector<Operation *> parts;
      for (Operation *part : std::initializer_list<Operation *>{pro, head, epi})
        if (part)
          parts.push_back(part);
      if (parts.size() >= 2 && readersFollow(parts))
        return parts;
    }
    return {};
  }

  /// `op` as a group of pointwise ops over `shape` that no library op
  /// heads: a tc.fused, or a lone fusible op with one result. Null otherwise.
  static Operation *pointwiseGroup(Operation *op, ArrayRef<int64_t> shape) {
    if (!op)
      return nullptr;
    if (auto fused = dyn_cast<tc::FusedOp>(op))
      return fused.getIterationShape() == shape && !tc::groupHead(fused.getBlock()) ? op
                                                                                    : nullptr;
    return tc::isFusible(op) && !isa<tc::ConstantOp>(op) && op->getNumResults() == 1 &&
                   resultShape(op) == shape
               ? op
               : nullptr;
  }

  static bool hasF32Result(Operation *op) {
    return llvm::any_of(op->getResultTypes(), [](Type t) {
      return cast<RankedTensorType>(t).getElementType().isF32();
    });
  }

  /// Whether every reader of the parts' results that is not a part comes
  /// after the last part (parts in function order).
  static bool readersFollow(ArrayRef<Operation *> parts) {
    for (Operation *part : parts)
      for (Value r : part->getResults())
        for (Operation *user : r.getUsers())
          if (!llvm::is_contained(parts, user) && !parts.back()->isBeforeInBlock(user))
            return false;
    return true;
  }

  /// Replaces a tc.fused by its ops, in place; returns them (splat constants
  /// left out: formGroup inlines them again). A lone op is returned as is.
  static SmallVector<Operation *> unfuse(Operation *op) {
    auto fused = dyn_cast<tc::FusedOp>(op);
    if (!fused)
      return {op};
    IRMapping map;
    for (auto [input, arg] : llvm::zip(fused.getInputs(), fused.getBlock().getArguments()))
      map.map(arg, input);
    OpBuilder builder(fused);
    SmallVector<Operation *> ops;
    for (Operation &inner : fused.getBlock().without_terminator()) {
      Operation *clone = builder.clone(inner, map);
      if (!tc::isSplatConstant(clone))
        ops.push_back(clone);
    }
    auto yield = cast<tc::YieldOp>(fused.getBlock().getTerminator());
    for (auto [result, value] : llvm::zip(fused.getResults(), yield.getValues()))
      result.replaceAllUsesWith(map.lookup(value));
    fused->erase();
    return ops;
  }

  /// Copies `op` (a GEMM heading the group, or a slice it reads) into the
  /// start of `fused`, which reads its value, and names the kernel after it;
  /// the caller erases `op` once nothing else reads it.
  void absorb(tc::FusedOp fused, Operation *op) {
    Block &block = fused.getBlock();
    auto argFor = [&](Value x) -> Value {
      for (auto [k, input] : llvm::enumerate(fused.getInputs()))
        if (input == x)
          return block.getArgument(k);
      fused->insertOperands(fused->getNumOperands(), {x});
      return block.addArgument(x.getType(), x.getLoc());
    };
    IRMapping map;
    for (Value operand : op->getOperands())
      map.map(operand, argFor(operand));
    // A GEMM goes first; slices after the slices already there, in order.
    OpBuilder inner = OpBuilder::atBlockBegin(&block);
    if (isa<tc::SliceOp>(op)) {
      Operation *at = &block.front();
      while (isa<tc::SliceOp>(at))
        at = at->getNextNode();
      inner.setInsertionPoint(at);
    }
    Operation *clone = inner.clone(*op, map);
    Value product = op->getResult(0);
    unsigned index = llvm::find(fused.getInputs(), product) - fused.getInputs().begin();
    block.getArgument(index).replaceAllUsesWith(clone->getResult(0));
    fused->eraseOperand(index);
    block.eraseArgument(index);
    std::string stem = (op->getName().stripDialect() + "_").str();
    if (!StringRef(fused.getKernel()).starts_with(stem))
      fused.setKernel(stem + fused.getKernel().str());
  }

  /// One tc.fused of `ops` (in function order) where the last is. Its
  /// results are the values read outside it and those in `keep`; with a
  /// normalization `head`, the values of its shape come first.
  tc::FusedOp formGroup(ArrayRef<Operation *> ops, ArrayRef<Value> keep = {},
                        Operation *head = nullptr) {
    llvm::SmallPtrSet<Operation *, 16> members(ops.begin(), ops.end());
    llvm::SetVector<Value> inputs;
    SmallVector<Value> outputs;
    for (Operation *op : ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if ((def && members.contains(def)) || tc::isSplatConstant(def))
          continue;
        inputs.insert(operand);
      }
      for (Value result : op->getResults())
        if (llvm::is_contained(keep, result) ||
            llvm::any_of(result.getUsers(),
                         [&](Operation *user) { return !members.contains(user); }))
          outputs.push_back(result);
    }
    if (head)
      std::stable_partition(outputs.begin(), outputs.end(), [&](Value v) {
        return cast<RankedTensorType>(v.getType()).getShape() == resultShape(head);
      });
    Operation *last = ops.back();
    OpBuilder builder(last);
    SmallVector<Type> types;
    for (Value v : outputs)
      types.push_back(v.getType());
    SmallVector<Location> locations;
    for (Operation *op : ops)
      locations.push_back(op->getLoc());
    Location loc = builder.getFusedLoc(locations);
    auto fused = builder.create<tc::FusedOp>(loc, types, builder.getStringAttr(kernelName(ops)),
                                             inputs.getArrayRef());
    Block *block = new Block();
    fused.getBody().push_back(block);
    IRMapping map;
    for (Value input : inputs)
      map.map(input, block->addArgument(input.getType(), input.getLoc()));
    OpBuilder inner = OpBuilder::atBlockEnd(block);
    for (Operation *op : ops) {
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            tc::isSplatConstant(def) && !map.contains(operand))
          map.map(operand, inner.clone(*def)->getResult(0));
      inner.clone(*op, map);
    }
    SmallVector<Value> yielded;
    for (Value v : outputs)
      yielded.push_back(map.lookup(v));
    inner.create<tc::YieldOp>(loc, yielded);
    for (auto [v, r] : llvm::zip(outputs, fused.getResults()))
      v.replaceAllUsesWith(r);
    for (Operation *op : llvm::reverse(ops))
      op->erase();
    return fused;
  }
};

} // namespace
