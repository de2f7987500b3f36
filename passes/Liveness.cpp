//===- Liveness.cpp - buffer lifetimes of a function, by kind -------------===//

#include "passes/Liveness.h"

#include "ir/StepAbi.h"

#include "ir/TcAttrs.h"
#include "runtime/include/trainc_rt/defaults.h"
#include "ir/TcOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseSet.h"

#include <algorithm>

using namespace mlir;
using namespace trainc;

namespace {

/// The parameter or state argument that a fused optimizer update may
/// overwrite in place: the result goes straight back to that argument's own
/// slot (the return's tc.update / tc.state_update), and nothing after the
/// update, the return included, reads the old value. Null otherwise.
Value inPlaceArgument(OpResult result) {
  Operation *op = result.getOwner();
  auto arg = dyn_cast_or_null<BlockArgument>(tc::replacedOperand(result));
  auto func = dyn_cast<func::FuncOp>(op->getParentOp());
  if (!arg || !func)
    return nullptr;
  // The return writes it back; other readers (an accumulated gradient's
  // update) read the new value from the argument's buffer.
  OpOperand *use = nullptr;
  for (OpOperand &u : result.getUses()) {
    if (!isa<func::ReturnOp>(u.getOwner()))
      continue;
    if (use)
      return nullptr; // returned twice
    use = &u;
  }
  if (!use)
    return nullptr;
  unsigned slot = use->getOperandNumber(), argIndex = arg.getArgNumber();
  Attribute param = func.getArgAttr(argIndex, tc::kParamAttrName);
  Attribute state = func.getArgAttr(argIndex, tc::kStateAttrName);
  bool sameSlot = (param && func.getResultAttr(slot, tc::kUpdateAttrName) == param) ||
                  (state && func.getResultAttr(slot, tc::kStateUpdateAttrName) == state);
  if (!sameSlot)
    return nullptr;
  // The argument and every view of it: none may be read after the update.
  SmallVector<Value> aliases = {arg};
  for (Operation &other : arg.getParentBlock()->getOperations())
    for (OpResult r : other.getResults())
      if (Value source = tc::viewSource(r); source && llvm::is_contained(aliases, source))
        aliases.push_back(r);
  for (Value alias : aliases)
    for (Operation *user : alias.getUsers())
      if (user != op && op->isBeforeInBlock(user))
        return nullptr;
  return arg;
}

/// The operand a result aliases (views, in-place updates, a GEMM that
/// accumulates into its gradient accumulator), or null if it needs its own
/// buffer.
Value aliasedOperand(OpResult result) {
  if (Value arg = inPlaceArgument(result))
    return arg;
  if (auto accumulate = tc::accumulatingGemmUser(result.getOwner());
      accumulate && inPlaceArgument(cast<OpResult>(accumulate.getResult())))
    return accumulate.getAccumulator();
  return tc::viewSource(result);
}

} // namespace

int64_t trainc::tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t bits = tensor.getElementType().getIntOrFloatBitWidth();
  int64_t bytes = bits == 1 ? 1 : bits / 8; // i1 is stored as one byte
  return tensor.getNumElements() * bytes;
}

StringRef trainc::bufferKindName(BufferKind kind) {
  switch (kind) {
  case BufferKind::Saved:
    return "saved for the backward";
  case BufferKind::Gradient:
    return "gradients";
  case BufferKind::WeightCopy:
    return "weight copies";
  case BufferKind::Temporary:
    return "temporaries";
  }
  return "";
}

void trainc::sinkToFirstReaders(llvm::ArrayRef<Operation *> ops) {
  for (Operation *op : llvm::reverse(ops)) {
    Operation *first = nullptr;
    for (Operation *user : op->getUsers())
      if (user->getBlock() == op->getBlock() && (!first || user->isBeforeInBlock(first)))
        first = user;
    if (first && op->isBeforeInBlock(first))
      op->moveBefore(first);
  }
}

bool trainc::isBackwardLoc(Location loc) { return tc::markedPhase(loc).has_value(); }

/// A result that gets a buffer of its own at its definition (not a view,
/// an update in place, a constant, an output's slot, a bucket's member or
/// a received tensor).
static bool ownsBuffer(Value v) {
  auto result = dyn_cast<OpResult>(v);
  if (!result || !isa<func::FuncOp>(result.getOwner()->getParentOp()))
    return false;
  Operation *def = result.getOwner();
  return !isa<tc::ConstantOp, tc::AllReduceOp, tc::RecvOp>(def) && !aliasedOperand(result) &&
         !tc::isPlacedOutput(result);
}

void BufferLiveness::findInPlaceConcats(Block &body) {
  for (auto concat : body.getOps<tc::ConcatOp>()) {
    Value joined = concat.getResult();
    ArrayRef<int64_t> shape = cast<RankedTensorType>(joined.getType()).getShape();
    const int64_t axis = concat.getAxis();
    if (!ownsBuffer(joined) || concatPieces.count(joined) ||
        llvm::any_of(shape.take_front(axis), [](int64_t d) { return d != 1; }))
      continue;
    SmallVector<std::pair<Value, int64_t>> pieces;
    int64_t offset = 0;
    bool fits = true;
    for (Value piece : concat.getInputs()) {
      fits = fits && ownsBuffer(piece) && !concatPieces.count(piece) &&
             !inPlaceConcats.contains(piece.getDefiningOp()) &&
             offset % rt::kBucketMemberAlignment == 0 &&
             llvm::none_of(pieces, [&](auto &p) { return p.first == piece; });
      pieces.push_back({piece, offset});
      offset += tensorBytes(piece.getType());
    }
    if (!fits)
      continue;
    for (auto [piece, at] : pieces)
      concatPieces[piece] = {joined, at};
    inPlaceConcats.insert(concat);
  }
}

bool BufferLiveness::concatInPlace(Operation *concat) const {
  return inPlaceConcats.contains(concat);
}

BufferLiveness::BufferLiveness(Operation *op) {
  auto func = cast<func::FuncOp>(op);
  Block &body = func.getBody().front();
  findInPlaceConcats(body);
  // Root buffer of each view (a view keeps its root alive).
  llvm::DenseMap<Value, Value> root;
  auto rootOf = [&](Value v) {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  llvm::DenseSet<unsigned> readByBackward; // forward buffers a backward op reads
  int64_t index = 0;
  for (Operation &inner : body) {
    // The backward begins at its first op that is not a constant (constants
    // may be hoisted anywhere).
    if (boundary < 0 && !isa<tc::ConstantOp>(inner) && isBackwardLoc(inner.getLoc()))
      boundary = index;
    if (isa<tc::AllReduceOp>(inner) && inner.getNumResults() > 0) {
      // One buffer for the bucket; its members are views of it at aligned
      // offsets (their readers keep the whole bucket alive).
      Value first = inner.getResult(0);
      unsigned bucket = lives.size();
      int64_t bytes = 0;
      for (OpResult result : inner.getResults()) {
        members[result] = {bucket, bytes};
        if (result != first)
          root[result] = first;
        bytes += (tensorBytes(result.getType()) + rt::kBucketMemberAlignment - 1) /
                 rt::kBucketMemberAlignment * rt::kBucketMemberAlignment;
      }
      owner[first] = bucket;
      lives.push_back({first, bytes, index, index});
    }
    for (OpResult result : inner.getResults()) {
      if (members.count(result))
        continue;
      if (auto piece = concatPieces.find(result); piece != concatPieces.end()) {
        // Computed in its place in the concat's buffer, which begins here
        // if this is its first piece.
        auto [joined, at] = piece->second;
        if (!owner.count(joined)) {
          owner[joined] = lives.size();
          lives.push_back({joined, tensorBytes(joined.getType()), index, index});
        }
        members[result] = {owner[joined], at};
        root[result] = joined;
        continue;
      }
      if (owner.count(result))
        continue; // an in-place concat's buffer, made with its first piece
      if (Value alias = aliasedOperand(result)) {
        root[result] = rootOf(alias);
        continue;
      }
      if (isa<tc::ConstantOp>(inner))
        continue; // constants live with the parameters
      if (tc::isPlacedOutput(result))
        continue; // in the output's buffer
      owner[result] = lives.size();
      lives.push_back({result, tensorBytes(result.getType()), index, index});
    }
    bool backwardReader = boundary >= 0 && !inner.hasTrait<OpTrait::IsTerminator>();
    for (Value operand : inner.getOperands()) {
      auto it = owner.find(rootOf(operand));
      if (it == owner.end())
        continue;
      lives[it->second].last = std::max(lives[it->second].last, index);
      if (backwardReader && lives[it->second].first < boundary)
        readByBackward.insert(it->second);
    }
    ++index;
  }
  ops = index;
  // A pipeline stage's sent tensors stay until the step ends: the trainer
  // sends them from their buffers after the step's part, and receives a
  // gradient while they are still on their way.
  // Its received tensors arrive before the step's part that reads them
  // runs: an activation before the step, a gradient before the part that
  // starts at the first received gradient.
  int64_t at = 0, backwardPart = -1;
  for (Operation &inner : body) {
    if (auto send = dyn_cast<tc::SendOp>(inner))
      if (auto it = owner.find(rootOf(send.getValue())); it != owner.end())
        lives[it->second].last = ops - 1;
    if (auto recv = dyn_cast<tc::RecvOp>(inner)) {
      if (recv.getGradient() && backwardPart < 0)
        backwardPart = at;
      if (auto it = owner.find(recv.getResult()); it != owner.end())
        lives[it->second].first = recv.getGradient() ? backwardPart : 0;
    }
    ++at;
  }

  // Kinds: gradients are what the optimizer's updates read as gradients,
  // or what the step returns as tc.grad; a parameter's cast is its weight
  // copy; other forward values that a backward op reads (not only the
  // return: the loss) are saved for the backward.
  auto markGradient = [&](Value v) {
    auto it = owner.find(rootOf(v));
    if (it != owner.end())
      lives[it->second].kind = BufferKind::Gradient;
  };
  for (Operation &inner : body)
    if (inner.hasTrait<tc::OpTrait::ParamUpdate>() || isa<tc::AccumulateGradOp>(inner))
      markGradient(inner.getOperand(1));
  if (auto ret = dyn_cast<func::ReturnOp>(body.getTerminator()))
    for (auto [k, v] : llvm::enumerate(ret.getOperands()))
      if (func.getResultAttr(k, tc::kGradAttrName))
        markGradient(v);
  for (BufferLife &life : lives) {
    if (life.kind == BufferKind::Gradient)
      continue;
    auto arg = isa<tc::CastOp>(life.value.getDefiningOp())
                   ? dyn_cast<BlockArgument>(life.value.getDefiningOp()->getOperand(0))
                   : BlockArgument();
    if (arg && func.getArgAttr(arg.getArgNumber(), tc::kParamAttrName))
      life.kind = BufferKind::WeightCopy;
    else if (readByBackward.contains(&life - lives.data()))
      life.kind = BufferKind::Saved;
  }

  int64_t best = -1;
  for (int64_t i = 0; i < ops; ++i)
    if (int64_t live = liveBytes(i); live > best) {
      best = live;
      peakAt = i;
    }
}

std::optional<unsigned> BufferLiveness::bufferOf(Value result) const {
  auto it = owner.find(result);
  if (it == owner.end())
    return std::nullopt;
  return it->second;
}

std::optional<std::pair<unsigned, int64_t>> BufferLiveness::bucketMemberOf(Value result) const {
  auto it = members.find(result);
  if (it == members.end())
    return std::nullopt;
  return it->second;
}

int64_t BufferLiveness::liveBytes(int64_t index) const {
  int64_t sum = 0;
  for (const BufferLife &life : lives)
    if (life.first <= index && index <= life.last)
      sum += life.bytes;
  return sum;
}

int64_t BufferLiveness::liveBytes(int64_t index, BufferKind kind) const {
  int64_t sum = 0;
  for (const BufferLife &life : lives)
    if (life.kind == kind && life.first <= index && index <= life.last)
      sum += life.bytes;
  return sum;
}

int64_t BufferLiveness::totalBytes(BufferKind kind) const {
  int64_t sum = 0;
  for (const BufferLife &life : lives)
    if (life.kind == kind)
      sum += life.bytes;
  return sum;
}
