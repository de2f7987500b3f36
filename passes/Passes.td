//===- Passes.td - trainc passes ---------------------------*- tablegen -*-===//

#ifndef TRAINC_PASSES_TD
#define TRAINC_PASSES_TD

include "mlir/Pass/PassBase.td"

def FoldBiasBeforeBatchNorm : Pass<"trainc-fold-bias-bn", "mlir::ModuleOp"> {
  let summary = "drop the bias of a conv/gemm that feeds a training-mode batch_norm";
  let description = [{
    In training mode BatchNormalization subtracts the batch mean per channel, so
    a per-channel bias added just before it cancels exactly; computing it (and
    its gradient) is wasted work. The pass removes the bias operand of
    `tc.conv` (and the `C` operand of `tc.gemm` when it is a per-column vector
    feeding a batch_norm over [N, C]) when the op's only user is a
    `tc.batch_norm {training = true}` on the same channel axis. The parameter
    stays in the module, so the exported model and the inference forward keep
    it. Two things keep the result PyTorch's:
    - PyTorch's running mean still contains the bias, so the pass adds
      `(1 - momentum) * beta * bias` to the updated running mean;
    - the bias argument is marked `tc.folded_bias`, and autodiff gives it the
      gradient 0 (its exact value), so momentum and weight decay still move it
      as in PyTorch.
    In `trainc compile` it is the phase `fold-bias-bn`, after `loss`.

    Before:
    ```mlir
    %y = tc.conv %x, %w, %b {...} : (...) -> tensor<2x64x8x8xf32>
    %z, %m, %v = tc.batch_norm %y, %g, %beta, %rm, %rv {training = true} : ...
    ```
    After:
    ```mlir
    %y = tc.conv %x, %w {...} : (...) -> tensor<2x64x8x8xf32>
    %z, %m, %v = tc.batch_norm %y, %g, %beta, %rm, %rv {training = true} : ...
    %share = tc.constant dense<1.000000e-01> : tensor<f32>
    %t = tc.mul %b, %share : ...
    %m2 = tc.add %m, %t : ...   // the running mean PyTorch computes
    ```
    It must not fire for inference-mode batch_norm (the running mean does not
    cancel the bias) or when the conv result has other users.
  }];
}

def MixedPrecision : Pass<"trainc-mixed-precision", "mlir::ModuleOp"> {
  let summary = "autocast: contractions in bf16/f16 with f32 accumulation, the rest by PyTorch's rules";
  let description = [{
    Rewrites `@loss` (before autodiff, so the backward follows the casts) with
    the rules of PyTorch's autocast:
    - `tc.matmul`, `tc.gemm` and `tc.conv` read their f32 operands cast to the
      low type and accumulate in f32. Their result is low precision; a gemm's
      C stays f32 (`out_type = f32`, one cast rounds the biased sum), a
      conv's bias is cast with its weight;
    - softmax, log-softmax, batch/layer norm, reductions, exp, log, pow,
      reciprocal and the losses read f32;
    - other pointwise ops (and concat) compute in the widest type of their
      operands that are not parameters or constants; those are cast to it;
    - reshape, transpose, expand and slice keep their input's type;
    - every other op reads f32 (its runtime kernel is f32);
    - `@loss`'s results keep their declared types.
    With `legalize-step` (run after autodiff, in the same phase of `trainc
    compile`) it only makes the ops of `@train_step` that the last rule
    sends to f32 read f32 (a gradient rule builds them in its operands' type,
    a bias gradient's reduce_sum of a bf16 dy) and casts their results back.
    Parameters stay f32: they are the master weights the optimizer updates.
    Casts are placed once per value; the cleanup after the phase folds the
    round trips (`tc.cast` folds) and autodiff's casts cancel the same way.
    `@forward` (prediction and export) stays f32. With `precision=fp32` the
    pass changes nothing. In `trainc compile` it is the phase
    `mixed-precision` (`--precision`), after `fold-bias-bn`; the phase
    `autodiff` then runs it again with `legalize-step`.

    `loss-scale` (fp16 only) records the loss scaling of the training step as
    the module attribute `tc.loss_scale`: `dynamic` (GradScaler's: scale 2^16
    at the start, halved on a step with inf/NaN gradients, doubled after
    `scale_growth_interval` good steps) or a fixed positive scale. Autodiff
    then seeds the backward with the scale, and the optimizer phase unscales
    the gradients, skips a step whose gradients are not finite and updates
    the scale, all on the device. `none` (the default) scales nothing.

    Before:
    ```mlir
    %0 = tc.gemm %x, %w, %b {trans_b = true} : (tensor<4x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<4x128xf32>
    %1 = tc.relu %0 : tensor<4x128xf32>
    ```
    After (bf16):
    ```mlir
    %xl = tc.cast %x {to = bf16} : (tensor<4x64xf32>) -> tensor<4x64xbf16>
    %wl = tc.cast %w {to = bf16} : (tensor<128x64xf32>) -> tensor<128x64xbf16>
    %0 = tc.gemm %xl, %wl, %b {out_type = f32, trans_b = true} : (tensor<4x64xbf16>, tensor<128x64xbf16>, tensor<128xf32>) -> tensor<4x128xf32>
    %r = tc.cast %0 {to = bf16} : (tensor<4x128xf32>) -> tensor<4x128xbf16>
    %1 = tc.relu %r : tensor<4x128xbf16>
    ```
  }];
  let options = [
    Option<"precision", "precision", "::trainc::rt::Precision",
           /*default=*/"::trainc::rt::Precision::Bf16",
           "fp32 (nothing changes), bf16 or fp16">,
    Option<"legalizeStep", "legalize-step", "bool", /*default=*/"false",
           "after autodiff: ops of @train_step whose kernels are f32 read f32 "
           "(a gradient rule's reduce_sum of a bf16 dy) and give back the type "
           "the rule chose">,
    Option<"lossScale", "loss-scale", "::trainc::LossScale", /*default=*/"::trainc::LossScale{}",
           "fp16: dynamic, none, or a fixed positive scale">
  ];
}

def Remat : Pass<"trainc-remat", "mlir::ModuleOp"> {
  let summary = "rematerialization: recompute in the backward what is cheap to recompute and expensive to keep";
  let description = [{
    Chooses, in `@train_step`, which forward values the backward keeps and
    which it recomputes, by a minimum cut as PyTorch's min-cut partitioner
    does: keeping a value costs its bytes (times 1.1 per op between it and
    the backward, so a value next to the backward is kept rather than an
    equally large one further up); recomputing costs nothing for views,
    pointwise ops, casts, data movement, training-mode dropout (the same
    key draws the same mask), layer/batch normalization, softmax and
    pooling, and is not allowed for reductions, losses, GEMMs and
    convolutions. Block arguments, constants and values the step returns
    are free. The cut minimizes the bytes kept for the backward.

    With `memory-budget` (bytes), GEMMs and convolutions become
    recomputable one at a time, the fewest multiply-adds per result byte
    first, until the step's peak of live bytes (BufferLiveness, before
    fusion) is at most the budget; when even all of them do not reach it,
    the pass fails and names the smallest peak it reaches.

    Each recomputed op is cloned just before the first backward op that
    reads it, and again for a reader more than 12 ops further on (so one
    clone is not live across the backward of several layers), with the
    location "recompute of <node>" and the attribute `tc.recomputed = k`
    (the op's k-th clone; it keeps CSE from folding clones back); the
    backward reads the clone, and forward ops left without readers are
    erased. A pointwise chain read both by pointwise ops of the backward
    (which fusion merges it into) and by a library op gets a clone for
    each kind of reader, so only the library op's operand is stored. Ops
    that read only arguments and constants (a parameter's bf16 copy) move
    to just before their first reader.
    `@train_step` gets `tc.remat`: the number of ops recomputed, of
    contractions among them, and the bytes saved for the backward and the
    peak of live bytes before and after. In `trainc compile` it is the phase
    `remat` (`--remat=auto`, `--memory-budget`), after `autodiff`.

    Before (the GELU's output is kept for the next GEMM's weight gradient,
    its input for the GELU's gradient):
    ```mlir
    %h = tc.matmul %x, %w1 : ...
    %g = tc.gelu %h : tensor<64x128xf32>
    %y = tc.matmul %g, %w2 : ...
    ...
    %dw2 = tc.matmul %g, %dy {trans_a = true} loc("backward of /fc2/MatMul")
    %dh = ... %h ... loc("backward of /act/Gelu")
    ```
    After (only %h is kept):
    ```mlir
    %g2 = tc.gelu %h {tc.recomputed = 0 : i64} loc("recompute of /act/Gelu")
    %dw2 = tc.matmul %g2, %dy {trans_a = true} loc("backward of /fc2/MatMul")
    ```
    It must not fire when every value the backward reads is the output of
    an op it may not recompute, or when keeping a value is cheaper than
    keeping what recomputing it needs.
  }];
  let options = [
    Option<"memoryBudget", "memory-budget", "int64_t", /*default=*/"0",
           "bytes the step's peak of live bytes may reach (0: no budget; "
           "contractions are never recomputed)">
  ];
}

def Layout : Pass<"trainc-layout", "mlir::ModuleOp"> {
  let summary = "channels-last (NHWC) convolution, pooling and batch norm";
  let description = [{
    Rewrites every 2-D `tc.conv`, its two gradients, the pooling ops and
    their gradients, `tc.global_avg_pool` and the 4-D batch norms (forward
    and backward) of every function to `channels_last = true`: activations
    [N, H, W, C] and weights [M, KH, KW, C/group]. Each rewritten op reads
    its 4-D operands through `tc.transpose {0, 2, 3, 1}` and its 4-D results
    are transposed back with `{0, 3, 1, 2}`; then the transposes move toward
    each other and cancel:

    - a pointwise op, `tc.concat`, `tc.slice` or `tc.slice_backward` whose
      operands are all free channels-last, at least one of them read through
      the back transpose, computes channels-last (a concat's axis and a
      slice's per-axis attributes permuted) and is transposed after (the
      transpose sinks). Free: a back transpose, an operand of size-1 axes or
      one whose broadcast to 4-D moves only size-1 axes (a [C, 1, 1] layer
      scale becomes a [1, 1, 1, C] reshape), a splat constant, or a value
      that another reader already transposes (CSE merges the copies);
    - a forward transpose of such an op or of `tc.expand` whose operands are
      free, also through further such ops, transposes the operands instead
      (it rises); the op's other readers read it through a back transpose;
    - a transpose that moves only size-1 axes is a `tc.reshape`, a reshape of
      a reshape is one reshape, and a reduction of a transposed value
      reduces the value over the permuted axes (transposed after with
      keepdims).

    What is left are transposes at the graph boundary: the input images,
    the flatten before a classifier that reads the spatial axes, and the
    weights, which keep ONNX's OIHW as parameters, in checkpoints and in
    the export (a weight is transposed to OHWI once per step, its gradient
    back to OIHW before the optimizer). A module without a 2-D convolution
    is left alone, and so is a convolution padded unevenly (the CUDA runtime
    pads those into an NCHW copy). In `trainc compile` it is the phase `layout`
    (`--layout=nhwc`), after `autodiff`.

    ```mlir
    %y = tc.conv %x, %w {...} : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x32x32xf32>
    %r = tc.relu %y : tensor<8x16x32x32xf32>
    ```
    becomes
    ```mlir
    %xt = tc.transpose %x {perm = array<i64: 0, 2, 3, 1>} : ... -> tensor<8x32x32x3xf32>
    %wt = tc.transpose %w {perm = array<i64: 0, 2, 3, 1>} : ... -> tensor<16x3x3x3xf32>
    %y = tc.conv %xt, %wt {channels_last = true, ...} : ... -> tensor<8x32x32x16xf32>
    %r = tc.relu %y : tensor<8x32x32x16xf32>
    ```
  }];
}

def AllReduce : Pass<"trainc-allreduce", "mlir::ModuleOp"> {
  let summary = "data parallelism: @train_step's gradients averaged over the ranks, in buckets";
  let description = [{
    Groups the gradients @train_step returns (each once; with gradient
    accumulation, the accumulated ones, so only the last micro-batch of a
    group communicates) into buckets, in the order the
    backward completes them (the position of the op that produces each),
    a bucket closing before the value that would take it past
    `bucket-bytes` (a larger gradient is a bucket of its own), the first
    bucket already past `first-bucket-bytes` (1 MiB, as PyTorch DDP's first
    bucket, so that the first sum starts early in the backward). Each bucket
    becomes one `tc.all_reduce` placed right after the op that completes its
    last value, so the runtime can average it over the ranks while the rest
    of the backward runs; the step returns the averages. The loss stays
    each rank's own (the trainer averages the logged losses on the host).

    The averages are weighted by a new hyperparameter of @train_step,
    `data_parallel.scale`: the trainer sets it every step to the rank's
    share of the global batch's sample weight (each rank's gradient times
    its share, summed over the ranks), so the result is the gradient of the
    global batch's weighted mean loss
    (a short last batch spread unevenly over the ranks included). A frozen
    parameter has no gradient and is in no bucket. Runs after grad-accum and
    before the optimizer phase; @train_step gets `tc.data_parallel` = the
    number of buckets.

    ```mlir
    %dw2 = tc.gemm ...
    %dw1 = tc.gemm ...
    return %loss, %dw1, %dw2
    ```
    becomes, with both gradients in one bucket,
    ```mlir
    %dw2 = tc.gemm ...
    %dw1 = tc.gemm ...
    %a2, %a1 = tc.all_reduce %dw2, %dw1 scale %arg9 {bucket = 0 : i64} : ...
    return %loss, %a1, %a2
    ```
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"26214400",
           "the largest bucket in bytes (default 25 MiB, PyTorch DDP's bucket_cap_mb)">,
    Option<"firstBucketBytes", "first-bucket-bytes", "int64_t", /*default=*/"1048576",
           "the largest first bucket in bytes, if less than bucket-bytes (default 1 MiB, "
           "as PyTorch DDP: the first sum starts early in the backward)">
  ];
}

def Pad : Pass<"trainc-pad", "mlir::ModuleOp"> {
  let summary = "pad matrix products and convolutions to tensor-core-friendly sizes";
  let description = [{
    Tensor cores (cuBLASLt, cuDNN) want 16-bit matrices whose rows are
    multiples of 8 elements (16 bytes). Every `tc.matmul` and `tc.gemm` with
    one 2-D operand (a Linear layer, its two gradients) whose contraction K,
    output columns N or, with `trans_a`, rows M are not multiples of
    `multiple`, and every ungrouped `tc.conv`, `tc.conv_backward_data` and
    `tc.conv_backward_filter` whose input or output channels are not, reads
    its operands zero-padded (`tc.pad` at the end of those axes; a bias
    grows with them) and its result is cropped back (`tc.slice` from 0).
    Products of two batched operands (attention) are left alone. The padded
    part of each contraction is zero on one side, so the visible results
    are unchanged.

    Then the crops sink and the pads go:
    - a pointwise op whose operands are crops to the same padded sizes,
      broadcasts along the padded axes, or small operands (an eighth of the
      result or less, zero-padded: a bias) computes on the padded tensors
      and is cropped after; so are pooling and its gradients (crops of the
      channel axis only) and reductions over other axes;
    - `tc.pad` of a crop of a tensor whose padded part is known to be zero
      is that tensor: the output of a padded contraction whose padded
      weight rows (and bias) are zero, and what zero-preserving ops (relu,
      gelu, tanh, add, sub, casts, pooling, `tc.where` of two such values,
      a product with a finite value) make of it;
    - a crop of a crop is one crop.

    So a chain Linear -> ReLU -> Linear (or Conv -> ReLU -> Pool -> Conv)
    keeps its activations padded between the two contractions, forward and
    backward. Dropout, batch and layer norm, softmax and reshapes read the
    cropped tensor. Parameters, checkpoints and the export keep their ONNX
    shapes: weights are padded once per step, their gradients cropped.

    The module records what it padded in `tc.padding` (one line per ONNX
    node and dimension) and each function the bytes its new pads and crops
    write per call in `tc.padding_copy_bytes`; the program's `--info`
    prints both. In `trainc compile` it is the phase `pad` (`--pad-to=N`),
    after `layout`.

    ```mlir
    %y = tc.gemm %x, %w {trans_b = true} : (tensor<8x20xf32>, tensor<84x20xf32>) -> tensor<8x84xf32>
    ```
    becomes, with multiple 8,
    ```mlir
    %xp = tc.pad %x {pads = array<i64: 0, 0, 0, 4>} : (tensor<8x20xf32>) -> tensor<8x24xf32>
    %wp = tc.pad %w {pads = array<i64: 0, 0, 4, 4>} : (tensor<84x20xf32>) -> tensor<88x24xf32>
    %yp = tc.gemm %xp, %wp {trans_b = true} : (...) -> tensor<8x88xf32>
    %y = tc.slice %yp {starts = array<i64: 0, 0>, ends = array<i64: 8, 84>, steps = array<i64: 1, 1>}
    ```
  }];
  let options = [
    Option<"multiple", "multiple", "int64_t", /*default=*/"8",
           "the multiple that padded dimensions are rounded up to (at least 2)">
  ];
}

def GradAccum : Pass<"trainc-grad-accum", "mlir::ModuleOp"> {
  let summary = "gradient accumulation: K micro-batches per optimizer step";
  let description = [{
    With `micro-batches` K > 1, builds next to `@train_step` the function
    `@accumulate_step`: the same forward and backward, whose gradients go
    into f32 accumulator states `grad_accum.<param>` instead of an update.
    Both read two new hyperparameters, `grad_accum.weight` (the
    micro-batch's share of the group's samples) and `grad_accum.keep` (0 for
    the first micro-batch of a group, 1 after), through one
    `tc.accumulate_grad` per gradient, placed just after the op that
    completes the gradient:

        acc' = keep != 0 ? acc + weight * grad : weight * grad

    `@accumulate_step` returns acc' as the state's update (written in
    place; when the gradient is a GEMM's, the memory plan and the code
    generator fold the accumulation into that GEMM, beta = keep); `@train_step`, run on a group's last micro-batch, hands acc' to
    the optimizer as the gradient and returns it as the state's update too,
    so that the sum is written in place rather than into a second
    gradient-sized buffer (the next group's first micro-batch overwrites
    it). The first
    micro-batch writes the accumulators, so nothing zeroes them, and the
    weights make the sum the gradient of the whole group's mean loss, a
    short last group included. The trainer chooses K at run time (the
    program serves any K); K here is its default, recorded as
    `tc.grad_accum` on `@train_step`. BatchNorm normalizes each micro-batch
    by its own statistics and updates the running statistics once per
    micro-batch, as PyTorch's accumulation loop does.

    In `trainc compile` it is the phase `grad-accum` (`--grad-accum=K`),
    after `remat` and before `optimizer`, which must not have run. It must
    not fire with K = 1.
  }];
  let options = [
    Option<"microBatches", "micro-batches", "int64_t", /*default=*/"1",
           "micro-batches per optimizer step (the trainer's default; 1: the pass does nothing)">
  ];
}

def Fuse : Pass<"trainc-fuse", "mlir::ModuleOp"> {
  let summary = "group chains of pointwise ops into tc.fused kernels";
  let description = [{
    Walks every function in order and groups pointwise ops (with expand and
    training-mode dropout) of one iteration shape into `tc.fused` regions,
    each of which code generation turns into one kernel: the forward's
    bias-add and activation, the backward's activation gradients, the
    optimizer's gradient sums. An op joins the group of a producer when the
    producer's group has the op's result shape and nothing outside the group
    has read a value of it yet (so the group can move down to the op without
    reordering anything it feeds); several such producer groups merge. Splat
    constants are copied into the group (code generation inlines them as
    literals). A value used outside its group is a result of the group; the
    others are intermediates and take no memory. A group of one op stays that
    op. In `trainc compile` it is the phase `fuse`, after `optimizer` and
    before `plan`; `--fuse=none` leaves it out.

    Before:
    ```mlir
    %0 = tc.add %x, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
    %1 = tc.relu %0 : tensor<8x64xf32>
    ```
    After:
    ```mlir
    %1 = tc.fused "add_relu" (%x, %b) : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32> {
    ^bb0(%a0: tensor<8x64xf32>, %a1: tensor<64xf32>):
      %2 = tc.add %a0, %a1 : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
      %3 = tc.relu %2 : tensor<8x64xf32>
      tc.yield %3 : tensor<8x64xf32>
    }
    ```
    It must not fuse across ops of another shape, across library ops
    (matmul, convolution, normalization, reductions), or a producer group
    whose value an op outside it has already read.

    GEMM epilogues: an f32 `tc.matmul` whose value only one group (or one
    pointwise op) reads, at the group's shape, becomes that group's head (a
    `tc.fused "matmul_add_relu"`), so the bias, activation or gradient sum
    after it runs on the GEMM's output while it is in cache, or inside the
    cuBLASLt call. A `tc.gemm` with alpha 1 (and, with beta 1, a C that is a
    bias row or the whole result) heads a group the same way; its library
    call adds C as PyTorch's addmm does (`tc.fused "gemm_relu"`). A GEMM whose value is also read elsewhere (a saved activation, two
    groups) stays a library call of its own.
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"64",
           "the most ops one group holds (bounds a kernel's size)">,
    Option<"epilogues", "epilogues", "bool", /*default=*/"true",
           "let a matmul head the pointwise group that reads its output">
  ];
}

def PlanMemory : Pass<"trainc-plan", "mlir::ModuleOp"> {
  let summary = "static schedule and one memory arena with compile-time offsets";
  let description = [{
    Plans the memory of every function: the op order is the schedule; every
    tensor an op produces gets a byte offset in one arena, and buffers whose
    lifetimes do not overlap share memory (greedy by size, best fit, offsets
    aligned to 256 bytes). Views do not get buffers of their own: a
    `tc.reshape` (and an inference-mode `tc.dropout`) aliases its operand, and
    the running-statistics results of an inference-mode `tc.batch_norm` alias
    its mean and variance operands; an alias keeps its buffer alive. A fused
    optimizer update (`tc.sgd_update`, `tc.adam_update`) whose result goes
    straight back to the parameter or state it replaces, which nothing after
    the update reads, gets no buffer either: it is written in place.
    The results of a `tc.all_reduce` (a data-parallel bucket) share one
    buffer, side by side at 256-byte aligned offsets, so that the bucket is
    one collective over contiguous memory.
    Function arguments and constants live outside the arena.

    Each planned op gets `tc.offsets` (one byte offset per result, -1 for a
    result that aliases another buffer); each function gets `tc.arena_bytes`.

    ```mlir
    %0 = tc.relu %x {tc.offsets = array<i64: 0>} : tensor<2x64xf32>
    %1 = tc.relu %0 {tc.offsets = array<i64: 512>} : tensor<2x64xf32>
    %2 = tc.relu %1 {tc.offsets = array<i64: 0>} : tensor<2x64xf32>  // %0 is dead: reuse
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"256",
           "byte alignment of every buffer offset">
  ];
}

def AttachLoss : Pass<"trainc-loss", "mlir::ModuleOp"> {
  let summary = "attach a loss to the model: func.func @loss";
  let description = [{
    Builds `@loss` from `@forward`: the same computation, plus a label input
    (`{tc.label = "label"}`) and a per-sample weight input
    (`{tc.sample_weights}`, shape [N]), returning the scalar loss first, each
    sample's loss before the weights second (`{tc.output = "sample_losses",
    tc.sample_losses}`, shape [N]) and the model's outputs after them.
    `@forward` stays as it is (prediction). Where a batch norm normalizes the
    batch or `sample-weight-norm=mean` divides by the real samples, a mask of
    the batch's real rows follows the weights (`{tc.sample_mask}`, [N]: 1 for
    a sample, 0 for the padding of a short last batch).

    `@loss` has PyTorch's `model.train()` semantics: every `tc.batch_norm`
    switches to batch statistics over the real rows (the mask) and
    its updated running statistics are appended as results
    `{tc.output = "<name>", tc.update = @<name>}` that write the parameters
    back. Two batch norms sharing a running statistic are an error. Every
    `tc.dropout` with a non-zero ratio switches to training mode and reads a
    new input `{tc.dropout_key}` (tensor<2xi64>, [seed, step], named
    `dropout_key`) that the trainer sets before each step.

    Each sample's loss s_i is the mean of its M loss elements (PyTorch's
    `reduction='none'`, averaged over the sample's positions). The loss is
    sum_i w_i s_i / sum_i d_i with d = w (`sample-weight-norm=sum`, PyTorch's
    `(w * l).sum() / w.sum()`) or d = the mask (`mean`, `(w * l).mean()`
    over the real samples); for cross-entropy the divisor counts only the
    positions that count (class weights, ignore_index), so that with weights
    1 it is PyTorch's `reduction='mean'`. Weight 0 drops a sample (the
    padding of a short last batch).

    - `cross-entropy`: logits [N, C, d...] against int64 class labels [N, d...]
      (`torch.nn.CrossEntropyLoss`). With `class-axis` the classes are on
      another axis, for example the last one of a language model's
      [N, T, vocab] logits (labels [N, T]); the mean is over every position.
    - `mse`: prediction against a float target of the same shape (`MSELoss`).
    - `bce`: binary cross-entropy on logits against float targets in [0, 1]
      (`BCEWithLogitsLoss`), as max(x, 0) - x t + log(1 + exp(-|x|)).
    - `output`: the model's own scalar output is the loss (for example a
      SoftmaxCrossEntropyLoss node); no label or weight input is added.

    The pass does nothing when the module already has `@loss`.

    ```mlir
    func.func @loss(%x: tensor<8x784xf32> {tc.input = "x"},
                    %label: tensor<8xi64> {tc.label = "label"},
                    %w: tensor<8xf32> {tc.sample_weights}, ...)
        -> (tensor<f32> {tc.output = "loss"}, tensor<8x10xf32> {tc.output = "logits"})
    ```
  }];
  let options = [
    Option<"kind", "loss", "::trainc::LossKind",
           /*default=*/"::trainc::LossKind::CrossEntropy",
           "cross-entropy, mse, bce or output">,
    Option<"labelName", "label", "std::string", /*default=*/"\"label\"",
           "name of the label input">,
    Option<"outputName", "output", "std::string", /*default=*/"\"\"",
           "the model output the loss reads (default: the first)">,
    Option<"classAxis", "class-axis", "int64_t", /*default=*/"1",
           "cross-entropy: the class axis of the logits (negative counts from the end)">,
    Option<"labelSmoothing", "label-smoothing", "double", /*default=*/"0.0",
           "cross-entropy: the target mixes (1 - eps) of the label with eps spread "
           "over the classes (CrossEntropyLoss's label_smoothing)">,
    ListOption<"classWeights", "class-weights", "double",
               "cross-entropy: a weight per class (CrossEntropyLoss's weight); the mean "
               "divides by the weights of the counted labels">,
    Option<"ignoreIndex", "ignore-index", "int64_t", /*default=*/"-100",
           "cross-entropy: the label that adds nothing and is left out of the mean "
           "(kept as tc.ignore_index on @loss)">,
    Option<"sampleWeightNorm", "sample-weight-norm", "::trainc::rt::SampleWeightNorm",
           /*default=*/"::trainc::rt::SampleWeightNorm::Sum",
           "what the weighted sum of the losses is divided by: the weights' sum (sum), "
           "or the batch's real samples (mean, with a tc.sample_mask input)">
  ];
}

def PipelineStages : Pass<"trainc-pipeline-stages", "mlir::ModuleOp"> {
  let summary = "pipeline parallelism: @loss cut into the stages' @stageK_loss";
  let description = [{
    With `stages` S > 1, cuts `@loss` (after the mixed-precision phase) into
    S functions `@stage0_loss` ... `@stage<S-1>_loss`, the ops of each stage
    in their order, and erases `@loss`; `@forward` stays whole (prediction
    and export). The module gets `tc.pipeline_stages = S`.

    Every op that reads a parameter, directly or through another such op,
    belongs to one stage: the cuts lie between them, after S - 1 of them.
    An op that reads no parameter (constants, masks of the labels, position
    ids) is cloned into every stage that reads it. A stage's function takes
    the arguments its ops read (parameters, inputs, labels, sample weights,
    the dropout key) and returns the results of `@loss` its ops compute: the
    last stage the loss and the per-sample losses, each stage its batch
    norms' running-statistics updates.

    What crosses a cut is explicit: the stage before ends with one
    `tc.send ... to stage k+1 slot i` per tensor defined before the cut and
    read after it, the stage after starts with the matching
    `tc.recv from stage k slot i`. A tensor read two stages later (a skip
    connection) is received and sent on by the stages between. Autodiff adds
    the backward's sends and receives.

    The cuts: `boundaries` (ONNX node names, in graph order) cut after the
    last op of each named node; without them the pass picks the S - 1 cuts
    that minimize the largest stage's estimated time (FLOPs and bytes of
    each op, forward and backward), among cuts crossed by at most four
    tensors. A cut never separates two readers of one parameter (tied
    weights stay in one stage), and every stage reads a trainable
    parameter. An impossible request is an error naming the node or the
    parameter. Each stage's function records its estimated time
    (`tc.stage_cost`, seconds at the reference rates of OpCost.h) and the
    bytes it sends forward (`tc.stage_send_bytes`).

    In `trainc compile` it is the phase `pipeline` (`--pipeline-stages`,
    `--stage-boundaries`), after `mixed-precision`; the compiler then builds
    each stage's module from its function and runs the later phases on each.
    It must not fire with S = 1.
  }];
  let options = [
    Option<"stages", "stages", "int64_t", /*default=*/"1",
           "pipeline stages (1: the pass does nothing)">,
    ListOption<"boundaries", "boundaries", "std::string",
               "the ONNX nodes after which the stages are cut, in graph order">
  ];
}

def Autodiff : Pass<"trainc-autodiff", "mlir::ModuleOp"> {
  let summary = "reverse-mode differentiation of @loss into @train_step";
  let description = [{
    Builds `func.func @train_step` from `@loss` (see trainc-loss): the same
    forward computation and loss, then the backward pass, built in reverse op
    order from each op's GradientOpInterface rule, seeded with d loss = 1.
    Gradients of a value read by several ops are summed.

    Only values on a path from a trainable parameter to the loss get gradient
    code: frozen parameters, data inputs, labels, and integer or boolean paths
    are not differentiated, and a parameter with no path to the loss gets no
    gradient. `@train_step` returns the loss first, then one gradient per
    differentiated parameter, in argument order, marked
    `{tc.output = "grad.<name>", tc.grad = @<name>}`, then the running
    statistics updates of @loss (`tc.update` results) as they are.

    An op on a differentiated path without a gradient rule is an error that
    names the op and its ONNX node. The pass does nothing without `@loss` or
    when `@train_step` exists.

    `freeze` (a regular expression, searched in each parameter's ONNX name)
    freezes the parameters it matches: they get no gradient and no update.
    One that matches no trainable parameter is an error (a typo would
    otherwise train everything).

    With the module attribute `tc.loss_scale` (an fp16 step, see
    trainc-mixed-precision) the backward is seeded with the loss scale
    instead of 1 (GradScaler's `scale(loss).backward()`): a fixed scale is a
    constant, the dynamic one the optimizer state argument
    `{tc.state = "loss_scale", tc.state_init = 65536.0}`. The loss the step
    returns is not scaled; the gradients are.
  }];
  let options = [
    Option<"freeze", "freeze", "std::string", /*default=*/"\"\"",
           "regular expression: parameters whose name it matches are not trained">,
    Option<"kfac", "kfac", "bool", /*default=*/"false",
           "--optimizer=kfac: also return each Gemm, MatMul and Conv layer's input and "
           "output-gradient rows (tc.kfac_input, tc.kfac_output_grad) for the optimizer phase">
  ];
}

def Optimizer : Pass<"trainc-optimizer", "mlir::ModuleOp"> {
  let summary = "turn @train_step's gradients into parameter updates";
  let description = [{
    Rewrites `@train_step` (see trainc-autodiff) so that, instead of returning
    gradients, it returns the updated parameters (`{tc.update = @p}`) and
    optimizer state (`{tc.state_update = "momentum.p"}`), after the loss.
    Hyperparameters are runtime scalars, arguments marked `{tc.hyper = NAME}`,
    so one binary serves a whole sweep and the trainer applies the learning
    rate schedule; optimizer state arrives as arguments `{tc.state = NAME}`,
    zero at the first step. Each parameter's update is one fused op
    (`tc.sgd_update`, `tc.adam_update`): one pass over the parameter, its
    gradient and its state, written in place by the code generator.

    - `sgd` (PyTorch torch.optim.SGD, dampening 0): g += wd p;
      b = momentum b + g; g = nesterov ? g + momentum b : b; p -= lr g.
      With zero momentum the buffer stays zero and costs nothing but memory.
    - `adam` / `adamw` (torch.optim.Adam / AdamW): m = b1 m + (1-b1) g;
      v = b2 v + ((1-b2) g) g; p -= (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps),
      PyTorch's order, where bc1 = 1 - b1^t and bc2 = 1 - b2^t. 1 - b1 and
      1 - b2 are hyperparameters (`one_minus_beta1`, `one_minus_beta2`) the
      trainer computes in double, as PyTorch does in Python floats; the
      step count t is state (`adam.step`), and lr / bc1 and sqrt(bc2) are
      computed from it on the device, in f64 and rounded to f32 once, in
      this one place (as PyTorch's capturable Adam does).
      Adam adds wd p to g; AdamW scales p by (1 - lr wd) first (decoupled
      weight decay).
    - `lamb` (`tc.lamb_update`, You et al. 2020 with Adam's bias
      correction, as apex FusedLAMB): r = (m / bc1) / (sqrt(v) / sqrt(bc2)
      + eps) + wd p, p -= lr (||p|| / ||r||) r, with per-tensor norms; bc1
      and sqrt(bc2) from the step count as Adam's.
    - `kfac` (Martens and Grosse 2015): each layer autodiff captured
      (`tc.kfac_input`, `tc.kfac_output_grad` results: a Gemm's, MatMul's
      or NCHW Conv's input and output-gradient rows) gets running averages
      of its factors A = [X 1]^T [X 1] / N and G = (N / T) D^T D (states
      `kfac.a.W`, `kfac.g.W`, starting as the identity), their damped
      inverses every few steps (`tc.damped_inverse`, states
      `kfac.a_inverse.W`, `kfac.g_inverse.W`), and the preconditioned
      gradient G^-1 [dW db] A^-1, KL-clipped over all layers; then SGD's
      update. The captured rows are dropped from the results.
    - `lars` (`tc.lars_update`, LARC's form): local_lr = trust_coefficient
      ||p|| / (||g|| + wd ||p|| + eps), b = momentum b + lr local_lr (g +
      wd p), p -= b.

    Parameter groups (`no-decay`): the parameters of the group get the
    weight decay 0 (a constant operand) and, under LAMB and LARS, no layer
    adaptation; their `tc.param` is marked `no_decay`. `1d` is every
    parameter of rank 0 or 1 (biases, normalization weights: Hugging Face's
    and BERT's LAMB groups), `none` no parameter, anything else a regular
    expression searched in the parameter's name. The default, `auto`, is
    `1d` for adamw, lamb and lars and `none` for sgd and adam (PyTorch's
    single group).

    With `clip-grad-norm` the gradients are scaled as
    torch.nn.utils.clip_grad_norm_ does: by min(1, max_norm / (norm + 1e-6))
    where norm is the global L2 norm of all gradients and max_norm the
    `max_grad_norm` hyperparameter; the factor is the updates' `grad_scale`.

    Loss scaling (module attribute `tc.loss_scale`, fp16), as
    torch.cuda.amp.GradScaler with the unscale, the clipping and the step:
    - the gradients are unscaled by 1 / scale inside the update (its
      `grad_scale`, times the clipping factor, which is computed from the
      unscaled gradients);
    - `tc.nonfinite_probe` reads every gradient once (one multi-tensor
      kernel): 0, or +inf when an element is inf or NaN. It is added to
      `grad_scale`, and the updates, marked `skip_nonfinite`, then leave
      every parameter and state tensor unchanged, bit for bit;
    - dynamic scaling keeps the scale, the good-step count and the number of
      skipped steps as state (`loss_scale`, `loss_scale.growth_tracker`,
      `loss_scale.skipped_steps`): a skipped step halves the scale and
      resets the count; the `scale_growth_interval`-th good step in a row
      doubles the scale (if the double is finite) and resets the count. A
      fixed scale only counts the skipped steps;
    - Adam's step count t (`adam.step`) advances by good steps only, as a
      skipped step never calls optimizer.step().
    Nothing goes back to the host inside the step.

    The pass does nothing without `@train_step` or when it already returns
    updates.
  }];
  let options = [
    Option<"kind", "optimizer", "::trainc::rt::Optimizer",
           /*default=*/"::trainc::rt::Optimizer::Sgd",
           "sgd, adam, adamw, lamb or lars">,
    Option<"noDecay", "no-decay", "std::string", /*default=*/"\"auto\"",
           "the parameters without weight decay (and layer adaptation): 1d, "
           "none, a regular expression, or auto (1d for adamw, lamb and "
           "lars, else none)">,
    Option<"nesterov", "nesterov", "bool", /*default=*/"false",
           "Nesterov momentum (sgd)">,
    Option<"gradNorm", "grad-norm", "bool", /*default=*/"false",
           "keep the global gradient norm (unscaled, before clipping) as the state "
           "grad_norm for the trainer's log (clip-grad-norm keeps its own anyway); one "
           "reduction per gradient">,
    Option<"clipGradValue", "clip-grad-value", "double", /*default=*/"0.0",
           "when positive, clamp every gradient element to [-X, X] "
           "(torch.nn.utils.clip_grad_value_, after unscaling under loss scaling)">,
    Option<"clipGradNorm", "clip-grad-norm", "double", /*default=*/"0.0",
           "when positive, scale the gradients to a global L2 norm of at most "
           "max_grad_norm, whose default this is (kept as tc.clip_grad_norm)">,
    Option<"earlyUpdates", "early-updates", "bool", /*default=*/"false",
           "run each update as soon as its gradient is complete and the "
           "backward has read the parameter for the last time (frees the "
           "gradient early; trainc compile sets it with --remat=auto); "
           "without it the updates run together after the backward (one "
           "multi-tensor kernel)">
  ];
}

#endif // TRAINC_PASSES_TD
