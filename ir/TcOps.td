//===- TcOps.td - ops of the tc dialect --------------------*- tablegen -*-===//
//
// Every op declares its shape function through InferTypeOpAdaptor; the C++
// bodies live in TcOps.cpp (or, for op families, in the class definitions
// below) and use the shared shape logic of ir/ShapeLogic.h.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_TCOPS_TD
#define TRAINC_IR_TCOPS_TD

include "TcBase.td"
include "TcInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Tc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tc_Dialect, mnemonic, !listconcat(traits, [InferTypeOpAdaptor])>;

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def Tc_ParamOp : Op<Tc_Dialect, "param", [Symbol, HasParent<"mlir::ModuleOp">]> {
  let summary = "a model parameter: name, type, initial value";
  let description = [{
    Declares one parameter of the model (an ONNX initializer). The functions of
    the module take it as an argument marked `{tc.param = @name}`. `trainable`
    parameters receive gradients; `no_decay` ones (trainc-optimizer's
    --no-decay group) get no weight decay and no layer adaptation;
    `initial_value` is what the trainer starts from and what `--export`
    replaces with the trained values.

    ```mlir
    tc.param @fc1.weight trainable : tensor<64x784xf32> = dense<...> : tensor<64x784xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Tc_Tensor>:$type,
                       UnitAttr:$trainable,
                       UnitAttr:$no_decay,
                       OptionalAttr<ElementsAttr>:$initial_value);
  let assemblyFormat = [{
    $sym_name (`trainable` $trainable^)? (`no_decay` $no_decay^)? `:` $type
    (`=` $initial_value^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Tc_ConstantOp : Tc_Op<"constant", [Pure, ConstantLike]> {
  let summary = "a constant tensor";
  let description = [{
    ```mlir
    %c = tc.constant dense<[1, 2]> : tensor<2xi64>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$value attr-dict";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Pointwise unary ops
//===----------------------------------------------------------------------===//

class Tc_UnaryOp<string mnemonic, Type type, string what, list<Trait> traits = []>
    : Tc_Op<mnemonic, !listconcat(traits, [Pure, Tc_Pointwise])> {
  let summary = "elementwise " # what;
  let description = [{
    Applies the function to every element; the result has the operand's type.

    ```mlir
    %y = tc.}] # mnemonic # [{ %x : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins type:$input);
  let results = (outs type:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location>, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      inferred.push_back(adaptor.getInput().getType());
      return ::mlir::success();
    }
  }];
}

def Tc_NegOp : Tc_UnaryOp<"neg", Tc_NumericTensor, "negation", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_AbsOp : Tc_UnaryOp<"abs", Tc_NumericTensor, "absolute value", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_ReluOp : Tc_UnaryOp<"relu", Tc_FloatTensor, "max(x, 0)", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_SigmoidOp : Tc_UnaryOp<"sigmoid", Tc_FloatTensor, "logistic sigmoid 1 / (1 + exp(-x))", [DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_TanhOp : Tc_UnaryOp<"tanh", Tc_FloatTensor, "hyperbolic tangent", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_ErfOp : Tc_UnaryOp<"erf", Tc_FloatTensor, "Gauss error function", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
// Trigonometry (rotary and sinusoidal position embeddings computed at run
// time). PyTorch's autocast runs tan, asin, acos, sinh and cosh in f32.
def Tc_SinOp : Tc_UnaryOp<"sin", Tc_FloatTensor, "sine", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_CosOp : Tc_UnaryOp<"cos", Tc_FloatTensor, "cosine", [DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_TanOp : Tc_UnaryOp<"tan", Tc_FloatTensor, "tangent", [Tc_AutocastF32, Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_AtanOp : Tc_UnaryOp<"atan", Tc_FloatTensor, "arctangent", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_AsinOp : Tc_UnaryOp<"asin", Tc_FloatTensor, "arcsine", [Tc_AutocastF32, Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_AcosOp : Tc_UnaryOp<"acos", Tc_FloatTensor, "arccosine", [Tc_AutocastF32, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_SinhOp : Tc_UnaryOp<"sinh", Tc_FloatTensor, "hyperbolic sine", [Tc_AutocastF32, Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_CoshOp : Tc_UnaryOp<"cosh", Tc_FloatTensor, "hyperbolic cosine", [Tc_AutocastF32, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_ExpOp : Tc_UnaryOp<"exp", Tc_FloatTensor, "natural exponential", [Tc_AutocastF32, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_LogOp : Tc_UnaryOp<"log", Tc_FloatTensor, "natural logarithm", [Tc_AutocastF32, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_SqrtOp : Tc_UnaryOp<"sqrt", Tc_FloatTensor, "square root", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_ReciprocalOp : Tc_UnaryOp<"reciprocal", Tc_FloatTensor, "1 / x", [Tc_AutocastF32, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_NotOp : Tc_UnaryOp<"not", Tc_BoolTensor, "logical negation">;
// Piecewise-constant ops: their gradient is zero, as PyTorch's backward of
// sign/ceil/floor/round.
def Tc_SignOp : Tc_UnaryOp<"sign", Tc_NumericTensor, "-1, 0 or 1 by the sign of x (NaN stays NaN)", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_CeilOp : Tc_UnaryOp<"ceil", Tc_FloatTensor, "smallest integer >= x", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_FloorOp : Tc_UnaryOp<"floor", Tc_FloatTensor, "largest integer <= x", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_RoundOp : Tc_UnaryOp<"round", Tc_FloatTensor, "nearest integer, halves to even (ONNX Round)", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;

def Tc_GeluOp : Tc_UnaryOp<"gelu", Tc_FloatTensor,
    "GELU: x * Phi(x), exact (erf) or with the tanh approximation", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let arguments = (ins Tc_FloatTensor:$input,
      DefaultValuedStrAttr<StrAttr, "none">:$approximate);
  let hasVerifier = 1;
}

def Tc_LeakyReluOp : Tc_UnaryOp<"leaky_relu", Tc_FloatTensor,
    "x if x >= 0 else alpha * x", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let arguments = (ins Tc_FloatTensor:$input,
      DefaultValuedAttr<F32Attr, "0.01">:$alpha);
}

def Tc_ClipOp : Tc_UnaryOp<"clip", Tc_FloatTensor,
    "clamp to [min, max] (either bound may be absent)", [DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let arguments = (ins Tc_FloatTensor:$input,
      OptionalAttr<F32Attr>:$min, OptionalAttr<F32Attr>:$max);
}

def Tc_DropoutOp : Tc_Op<"dropout", [Tc_AutocastWidest, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>,
                                       DeclareOpInterfaceMethods<Tc_TiedOpInterface, ["getViewSource"]>]> {
  let summary = "dropout: zero each element with probability `ratio`, scale the rest by 1/(1-ratio)";
  let description = [{
    Outside training (`training = false`, what the importer creates) dropout
    is the identity and the result aliases the operand.

    In a training step (`training = true`, set by the loss phase) element `i`
    is kept, and scaled by 1/(1-ratio), unless word `i % 4` of
    Philox4x32-10(counter = [i / 4, stream, step low, step high],
    key = [seed low, seed high]), taken as (word >> 8) * 2^-24, is below
    `ratio`. `key` holds [seed, step]; `stream` tells the dropouts of one
    step apart (the importer uses the ONNX node's position in the graph).
    The mask is a function of (key, stream, i), so the gradient is the same
    dropout applied to the result gradient: no mask is stored, and the CPU
    and CUDA targets draw the same masks. Pure: equal operands and
    attributes give equal results.

    ```mlir
    %y = tc.dropout %x {ratio = 1.000000e-01 : f32} : tensor<4x8xf32>
    %t = tc.dropout %x, %key {ratio = 1.000000e-01 : f32, stream = 3 : i64, training = true}
        : tensor<4x8xf32>, tensor<2xi64>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input,
      Optional<StaticShapeTensorOf<[I64]>>:$key,
      DefaultValuedAttr<F32Attr, "0.5">:$ratio,
      DefaultValuedAttr<BoolAttr, "false">:$training,
      DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$input (`,` $key^)? attr-dict `:` type($input) (`,` type($key)^)?";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointwise binary ops with ONNX (numpy) broadcasting
//===----------------------------------------------------------------------===//

class Tc_BroadcastOp<string mnemonic, Type operandType, bit boolResult, string what,
                     list<Trait> traits = []>
    : Tc_Op<mnemonic, !listconcat(traits, [Pure, Tc_Pointwise])> {
  let summary = "elementwise " # what # " with broadcasting";
  let description = [{
    Operands broadcast against each other as in ONNX and numpy: shapes are
    aligned at the right, and a dimension of 1 stretches to the other's size.

    ```mlir
    %z = tc.}] # mnemonic # [{ %x, %y : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3x}] #
      !if(boolResult, "i1", "f32") # [{>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs !if(boolResult, Tc_BoolTensor, operandType):$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::trainc::tc::inferBroadcastResult(location,
          {adaptor.getLhs().getType(), adaptor.getRhs().getType()},
          /*boolResult=*/}] # !if(boolResult, "true", "false") # [{, inferred);
    }
  }];
}

def Tc_AddOp : Tc_BroadcastOp<"add", Tc_NumericTensor, 0, "addition", [Tc_KeepsZero, Commutative, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_SubOp : Tc_BroadcastOp<"sub", Tc_NumericTensor, 0, "subtraction", [Tc_KeepsZero, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_MulOp : Tc_BroadcastOp<"mul", Tc_NumericTensor, 0, "multiplication", [Commutative, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_DivOp : Tc_BroadcastOp<"div", Tc_NumericTensor, 0, "division", [DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_PowOp : Tc_BroadcastOp<"pow", Tc_FloatTensor, 0, "power x^y", [Tc_AutocastF32, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_MaxOp : Tc_BroadcastOp<"max", Tc_NumericTensor, 0, "maximum", [Commutative, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_MinOp : Tc_BroadcastOp<"min", Tc_NumericTensor, 0, "minimum", [Commutative, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_EqualOp : Tc_BroadcastOp<"equal", Tc_Tensor, 1, "comparison x == y", [Commutative]>;
def Tc_LessOp : Tc_BroadcastOp<"less", Tc_NumericTensor, 1, "comparison x < y">;
def Tc_LessEqualOp : Tc_BroadcastOp<"less_equal", Tc_NumericTensor, 1, "comparison x <= y">;
def Tc_GreaterOp : Tc_BroadcastOp<"greater", Tc_NumericTensor, 1, "comparison x > y">;
def Tc_GreaterEqualOp : Tc_BroadcastOp<"greater_equal", Tc_NumericTensor, 1, "comparison x >= y">;
def Tc_AndOp : Tc_BroadcastOp<"and", Tc_BoolTensor, 0, "logical and", [Commutative]>;
def Tc_OrOp : Tc_BroadcastOp<"or", Tc_BoolTensor, 0, "logical or", [Commutative]>;

def Tc_WhereOp : Tc_Op<"where", [Pure, Tc_Pointwise, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "elementwise select: cond ? x : y, with broadcasting";
  let description = [{
    ```mlir
    %r = tc.where %mask, %x, %y : (tensor<1x1x4x4xi1>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
    ```
  }];
  let arguments = (ins Tc_BoolTensor:$condition, Tc_Tensor:$true_value, Tc_Tensor:$false_value);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$condition `,` $true_value `,` $false_value attr-dict `:` functional-type(operands, results)";
}

def Tc_CastOp : Tc_Op<"cast", [Tc_KeepsZero, Pure, Tc_Pointwise, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "elementwise conversion to another element type";
  let description = [{
    Float to integer truncates toward zero; anything to `i1` is `x != 0`.
    Casts fold away where they change nothing: to the input's own type, and a
    cast back through an exact widening (bf16 -> f32 -> bf16). A cast to f32
    of a contraction's only use becomes the contraction's `out_type = f32`.

    ```mlir
    %y = tc.cast %x {to = f16} : (tensor<4xf32>) -> tensor<4xf16>
    ```
  }];
  let arguments = (ins Tc_Tensor:$input, TypeAttrOf<Tc_AnyElement>:$to);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

//===----------------------------------------------------------------------===//
// Contractions and convolution
//===----------------------------------------------------------------------===//

def Tc_MatMulOp : Tc_Op<"matmul", [Tc_LowPrecisionKernel, Tc_Contraction, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "matrix product with numpy (ONNX MatMul) semantics";
  let description = [{
    Batch dimensions broadcast; a 1-D operand is promoted to a matrix and the
    promoted dimension is removed from the result. `trans_a` (`trans_b`) swaps
    the last two axes of the left (right) operand before the product; batch
    axes stay where they are, and a 1-D operand cannot be transposed.
    A `tc.transpose` of the last two axes that feeds an operand folds into the
    flag (canonicalization).

    The result has the operands' element type, or `out_type` (f32 only) for
    f16/bf16 operands: low-precision inputs always accumulate in f32, and
    `out_type = f32` keeps the sum unrounded (mixed precision).

    ```mlir
    %y = tc.matmul %a, %b : (tensor<2x16x32xf32>, tensor<32x64xf32>) -> tensor<2x16x64xf32>
    %z = tc.matmul %a, %w {trans_b = true} : (tensor<2x16x32xf32>, tensor<64x32xf32>) -> tensor<2x16x64xf32>
    ```
  }];
  let arguments = (ins Tc_NumericTensor:$lhs, Tc_NumericTensor:$rhs,
      DefaultValuedAttr<BoolAttr, "false">:$trans_a,
      DefaultValuedAttr<BoolAttr, "false">:$trans_b,
      OptionalAttr<TypeAttrOf<F32>>:$out_type);
  let results = (outs Tc_NumericTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

def Tc_GemmOp : Tc_Op<"gemm", [Tc_LowPrecisionKernel, Tc_Contraction, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "alpha * op(A) * op(B) + beta * C for 2-D A and B";
  let description = [{
    `op(X)` is `X` or its transpose (`trans_a`, `trans_b`). `C` is optional and
    broadcasts to the [M, N] result (ONNX Gemm). With f16/bf16 A and B,
    `out_type = f32` makes the result (and C) f32, as for tc.matmul.

    ```mlir
    %y = tc.gemm %x, %w, %b {trans_b = true} : (tensor<8x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<8x128xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$a, Tc_FloatTensor:$b, Optional<Tc_FloatTensor>:$c,
      DefaultValuedAttr<F32Attr, "1.0">:$alpha,
      DefaultValuedAttr<F32Attr, "1.0">:$beta,
      DefaultValuedAttr<BoolAttr, "false">:$trans_a,
      DefaultValuedAttr<BoolAttr, "false">:$trans_b,
      OptionalAttr<TypeAttrOf<F32>>:$out_type);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$a `,` $b (`,` $c^)? attr-dict `:` functional-type(operands, results)";
  let hasCanonicalizer = 1;
}

def Tc_ConvOp : Tc_Op<"conv", [Tc_LowPrecisionKernel, Tc_Contraction, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "N-D convolution (cross-correlation), NCHW or NHWC, with groups";
  let description = [{
    `input` is [N, C, spatial...], `weight` is [M, C/group, kernel...], the
    optional `bias` is [M]. `pads` holds the begin pads of every spatial axis,
    then the end pads (ONNX order). Input, weight, bias and result have one
    element type (f16/bf16 convolutions accumulate in f32).

    With `channels_last` (set by the layout phase) the channel axis is the
    last one: input and result are [N, spatial..., C] (NHWC) and the weight
    is [M, kernel..., C/group] (OHWI). The same holds for the gradient,
    pooling and batch-norm ops below, whose shape attributes (`input_shape`,
    `weight_shape`) are then channels-last too.

    ```mlir
    %y = tc.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>,
                             dilations = array<i64: 1, 1>, group = 1 : i64}
        : (tensor<2x3x64x64xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<2x64x32x32xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input, Tc_FloatTensor:$weight,
      Optional<Tc_FloatTensor>:$bias,
      DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$pads,
      DenseI64ArrayAttr:$dilations,
      DefaultValuedAttr<I64Attr, "1">:$group,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Gradients of convolution and pooling (built by autodiff)
//===----------------------------------------------------------------------===//

def Tc_ConvBackwardDataOp : Tc_Op<"conv_backward_data", [Tc_LowPrecisionKernel, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "gradient of tc.conv with respect to its input";
  let description = [{
    From the result gradient `dy` [N, M, out...] and the weights, the gradient
    of the input of shape `input_shape`; the window attributes are the
    forward conv's. It is also ONNX ConvTranspose (x as `dy`, its weights
    [C_in, C_out / group, kernel...] as the conv's, the output shape as
    `input_shape`), so it has gradients of its own: a tc.conv of the result
    gradient for `dy`, a tc.conv_backward_filter for the weights.

    ```mlir
    %dx = tc.conv_backward_data %dy, %w {input_shape = array<i64: 2, 3, 8, 8>, strides = array<i64: 1, 1>,
                                         pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<2x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x3x8x8xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$result_grad, Tc_FloatTensor:$weight,
      DenseI64ArrayAttr:$input_shape, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
      DefaultValuedAttr<I64Attr, "1">:$group,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_ConvBackwardFilterOp : Tc_Op<"conv_backward_filter", [Tc_LowPrecisionKernel, Pure]> {
  let summary = "gradient of tc.conv with respect to its weights";
  let description = [{
    ```mlir
    %dw = tc.conv_backward_filter %x, %dy {weight_shape = array<i64: 4, 3, 3, 3>, strides = array<i64: 1, 1>,
                                           pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<4x3x3x3xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input, Tc_FloatTensor:$result_grad,
      DenseI64ArrayAttr:$weight_shape, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
      DefaultValuedAttr<I64Attr, "1">:$group,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_MaxPoolBackwardOp : Tc_Op<"max_pool_backward", [Tc_LowPrecisionKernel, Pure]> {
  let summary = "gradient of tc.max_pool: each window's to its first maximum";
  let description = [{
    ```mlir
    %dx = tc.max_pool_backward %x, %dy {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
                                        pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
        : (tensor<2x4x8x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input, Tc_FloatTensor:$result_grad,
      DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
      DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_AvgPoolBackwardOp : Tc_Op<"avg_pool_backward", [Tc_LowPrecisionKernel, Pure]> {
  let summary = "gradient of tc.avg_pool";
  let description = [{
    ```mlir
    %dx = tc.avg_pool_backward %dy {input_shape = array<i64: 2, 4, 8, 8>, kernel_shape = array<i64: 2, 2>,
                                    strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
        : (tensor<2x4x4x4xf32>) -> tensor<2x4x8x8xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$result_grad, DenseI64ArrayAttr:$input_shape,
      DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$pads,
      DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
      DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Tc_BatchNormOp : Tc_Op<"batch_norm", [Tc_AutocastNorm, Tc_Normalization, Tc_LowPrecisionKernel, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>,
    DeclareOpInterfaceMethods<Tc_TiedOpInterface, ["getViewSource", "getReplacedOperand"]>]> {
  let summary = "batch normalization over all axes but the channel axis (1, or the last with channels_last)";
  let description = [{
    In inference mode (`training` false) normalizes with `mean` and `var` and
    returns them unchanged as the running statistics. In training mode it
    normalizes with the batch statistics and returns the running statistics
    updated with `momentum` as ONNX does:
    `running = momentum * running + (1 - momentum) * batch` (the unbiased batch
    variance goes into the running variance, as PyTorch does).

    The optional `sample_mask` ([N], the per-sample loss weights of a training
    step) leaves the samples whose weight is 0 (the padding of a short last
    batch) out of the batch statistics, so a short batch is normalized as
    PyTorch normalizes it.

    ```mlir
    %y, %rm, %rv = tc.batch_norm %x, %scale, %bias, %mean, %var {epsilon = 1.0e-05 : f32, momentum = 0.9 : f32}
        : (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input, Tc_FloatTensor:$scale,
      Tc_FloatTensor:$bias, Tc_FloatTensor:$mean, Tc_FloatTensor:$var,
      Optional<Tc_FloatTensor>:$sample_mask,
      DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
      DefaultValuedAttr<F32Attr, "0.9">:$momentum,
      DefaultValuedAttr<BoolAttr, "false">:$training,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$result, Tc_FloatTensor:$running_mean,
                      Tc_FloatTensor:$running_var);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_BatchNormBackwardOp : Tc_Op<"batch_norm_backward", [Tc_LowPrecisionKernel, Pure]> {
  let summary = "gradient of a training-mode tc.batch_norm";
  let description = [{
    Recomputes the batch statistics of `input` (over the samples that
    `sample_mask` keeps) and returns the gradients with respect to the input,
    the scale and the bias. Masked-out samples get a zero input gradient.

    ```mlir
    %dx, %dscale, %dbias = tc.batch_norm_backward %x, %scale, %dy {epsilon = 1.0e-05 : f32}
        : (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<2x64x8x8xf32>)
        -> (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input, Tc_FloatTensor:$scale,
      Tc_FloatTensor:$result_grad, Optional<Tc_FloatTensor>:$sample_mask,
      DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$input_grad, Tc_FloatTensor:$scale_grad,
                      Tc_FloatTensor:$bias_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_LayerNormOp : Tc_Op<"layer_norm", [Tc_Normalization, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "layer normalization over the axes from `axis` to the last";
  let description = [{
    `scale` and the optional `bias` have the shape of the normalized axes.

    ```mlir
    %y = tc.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input, Tc_FloatTensor:$scale,
      Optional<Tc_FloatTensor>:$bias,
      I64Attr:$axis,
      DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_LayerNormBackwardOp : Tc_Op<"layer_norm_backward", [Pure]> {
  let summary = "gradient of tc.layer_norm";
  let description = [{
    Recomputes each row's mean and 1/std from `input` and returns the
    gradients with respect to the input, the scale and the bias (the bias
    gradient is the column sum of `result_grad`; unused without a bias):

        xhat = (x - mean) * rstd,  g = dy * scale
        dx = rstd * (g - mean(g) - xhat * mean(g * xhat))   (means over the row)
        dscale = sum over rows of dy * xhat,  dbias = sum over rows of dy

    ```mlir
    %dx, %dg, %db = tc.layer_norm_backward %x, %g, %dy {axis = 2 : i64, epsilon = 1.0e-05 : f32}
        : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<2x16x32xf32>)
        -> (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>)
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input, Tc_FloatTensor:$scale,
      Tc_FloatTensor:$result_grad, I64Attr:$axis,
      DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs Tc_FloatTensor:$input_grad, Tc_FloatTensor:$scale_grad,
                      Tc_FloatTensor:$bias_grad);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

def Tc_MaxPoolOp : Tc_Op<"max_pool", [Tc_AutocastFollow, Tc_Normalization, Tc_LowPrecisionKernel, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "N-D max pooling, NCHW (NHWC with channels_last)";
  let description = [{
    ```mlir
    %y = tc.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                         pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
        : (tensor<2x64x32x32xf32>) -> tensor<2x64x16x16xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input,
      DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$pads, DenseI64ArrayAttr:$dilations,
      DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Tc_AvgPoolOp : Tc_Op<"avg_pool", [Tc_AutocastFollow, Tc_Normalization, Tc_LowPrecisionKernel, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "N-D average pooling, NCHW (NHWC with channels_last)";
  let description = [{
    With `count_include_pad` false (the ONNX default) the padding is left out
    of each window's divisor.

    ```mlir
    %y = tc.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
                         pads = array<i64: 0, 0, 0, 0>}
        : (tensor<2x16x10x10xf32>) -> tensor<2x16x5x5xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input,
      DenseI64ArrayAttr:$kernel_shape, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$pads,
      DefaultValuedAttr<BoolAttr, "false">:$count_include_pad,
      DefaultValuedAttr<BoolAttr, "false">:$ceil_mode,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Tc_GlobalAvgPoolOp : Tc_Op<"global_avg_pool", [Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "mean over all spatial axes, keeping them as size 1 (NCHW, or NHWC with channels_last)";
  let description = [{
    ```mlir
    %y = tc.global_avg_pool %x : (tensor<2x512x2x2xf32>) -> tensor<2x512x1x1xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input,
      DefaultValuedAttr<BoolAttr, "false">:$channels_last);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Softmax and reductions
//===----------------------------------------------------------------------===//

class Tc_SoftmaxLikeOp<string mnemonic, string what>
    : Tc_Op<mnemonic, [Tc_Normalization, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = what # " along one axis";
  let description = [{
    ```mlir
    %y = tc.}] # mnemonic # [{ %x {axis = 1 : i64} : tensor<8x10xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      auto type = ::llvm::dyn_cast<::mlir::RankedTensorType>(adaptor.getInput().getType());
      if (!type)
        return ::mlir::emitOptionalError(location, "expects a ranked operand");
      // Also called by the parser before the attributes are verified, so the
      // attribute is read unchecked from the dictionary.
      auto axisAttr = ::llvm::dyn_cast_or_null<::mlir::IntegerAttr>(
          adaptor.getAttributes().get("axis"));
      if (!axisAttr || !axisAttr.getType().isSignlessInteger(64))
        return ::mlir::emitOptionalError(location, "expects an integer 'axis'");
      int64_t axis = axisAttr.getInt();
      if (axis < 0 || axis >= type.getRank())
        return ::mlir::emitOptionalError(location, "axis ", axis,
                                         " is out of range for rank ", type.getRank());
      inferred.push_back(type);
      return ::mlir::success();
    }
  }];
}

def Tc_SoftmaxOp : Tc_SoftmaxLikeOp<"softmax", "softmax exp(x) / sum(exp(x))">;
def Tc_LogSoftmaxOp : Tc_SoftmaxLikeOp<"log_softmax", "log of softmax, computed stably">;

class Tc_ReduceOp<string mnemonic, string what, list<Trait> traits = []>
    : Tc_Op<mnemonic, !listconcat(traits, [Pure])> {
  let summary = what # " over a set of axes";
  let description = [{
    `axes` are non-negative and strictly increasing; an empty list reduces all
    axes. With `keepdims` the reduced axes stay as size 1. `out_type = f32`
    (f16/bf16 input only) reads the input in its own type and gives the f32
    result of the f32 kernel on the widened input (mixed precision: a bias
    gradient's sum of a bf16 dy, with no f32 copy of dy).

    ```mlir
    %s = tc.}] # mnemonic # [{ %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Tc_NumericTensor:$input, DenseI64ArrayAttr:$axes,
      DefaultValuedAttr<BoolAttr, "true">:$keepdims,
      OptionalAttr<TypeAttrOf<F32>>:$out_type);
  let results = (outs Tc_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::inferReturnTypes(::mlir::MLIRContext *,
        std::optional<::mlir::Location> location, Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {
      return ::trainc::tc::inferReduceResult(location, adaptor.getInput().getType(),
          adaptor.getAxes(), adaptor.getKeepdims(), adaptor.getOutTypeAttr(), inferred);
    }
  }];
}

def Tc_ReduceSumOp : Tc_ReduceOp<"reduce_sum", "sum", [DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_ReduceMeanOp : Tc_ReduceOp<"reduce_mean", "arithmetic mean", [DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;
def Tc_ReduceMaxOp : Tc_ReduceOp<"reduce_max", "maximum", [DeclareOpInterfaceMethods<Tc_GradientOpInterface>]>;

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

def Tc_ReshapeOp : Tc_Op<"reshape", [Tc_AutocastFollow, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>,
                                       DeclareOpInterfaceMethods<Tc_TiedOpInterface, ["getViewSource"]>]> {
  let summary = "same elements, new static shape";
  let description = [{
    `shape` is fully resolved (no 0 or -1 placeholders) and has the operand's
    element count.

    ```mlir
    %y = tc.reshape %x {shape = array<i64: 2, 400>} : (tensor<2x16x5x5xf32>) -> tensor<2x400xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Tc_TransposeOp : Tc_Op<"transpose", [Tc_AutocastFollow, Tc_DataMovement, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "permute the axes: result dim i is input dim perm[i]";
  let description = [{
    Folds: the identity permutation is its input, a transpose of a transpose
    is one transpose (or its input), a transpose of a splat constant is the
    splat constant of the new shape.

    ```mlir
    %y = tc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x2x16xf32>) -> tensor<2x2x16x16xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Tc_ConcatOp : Tc_Op<"concat", [Tc_AutocastWidest, Tc_DataMovement, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "join tensors along one axis";
  let description = [{
    ```mlir
    %y = tc.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Tc_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Tc_SliceOp : Tc_Op<"slice", [Tc_AutocastFollow, Tc_DataMovement, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>,
                                   DeclareOpInterfaceMethods<Tc_TiedOpInterface, ["getViewSource", "getViewOffset"]>]> {
  let summary = "strided slice with one (start, end, step) per axis";
  let description = [{
    Every axis has an entry; `starts` and `ends` are already clamped to the
    axis (ONNX Slice after normalization). A negative step walks backwards.
    A slice whose elements are one contiguous run of the input's (unit steps,
    whole trailing axes, one index on the leading ones: a time step of
    [T, B, H]) is a view of the input, copying nothing.

    ```mlir
    %y = tc.slice %x {starts = array<i64: 0, 2>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>}
        : (tensor<2x4xf32>) -> tensor<2x2xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$input, DenseI64ArrayAttr:$starts,
      DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Tc_SliceBackwardOp : Tc_Op<"slice_backward", [Pure]> {
  let summary = "gradient of tc.slice: the result gradient placed into zeros";
  let description = [{
    ```mlir
    %dx = tc.slice_backward %dy {input_shape = array<i64: 2, 4>, starts = array<i64: 0, 2>,
                                 ends = array<i64: 2, 4>, steps = array<i64: 1, 1>}
        : (tensor<2x2xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$result_grad, DenseI64ArrayAttr:$input_shape,
      DenseI64ArrayAttr:$starts, DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$result_grad attr-dict `:` functional-type(operands, results)";
}

def Tc_GatherOp : Tc_Op<"gather", [Tc_DataMovement, Tc_LowPrecisionKernel, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "take slices of `data` along `axis` at `indices` (embedding lookup)";
  let description = [{
    The result shape is data.shape[:axis] + indices.shape + data.shape[axis+1:].
    Negative indices count from the end, as in ONNX. `padding_index` (an
    nn.Embedding's `padding_idx`, from the model's `trainc.padding_index`
    metadata) does not change the result; the gradient gives that row of
    `data` nothing (see tc.gather_backward).

    ```mlir
    %e = tc.gather %table, %idx {axis = 0 : i64} : (tensor<64x32xf32>, tensor<2x16xi64>) -> tensor<2x16x32xf32>
    %p = tc.gather %table, %idx {axis = 0 : i64, padding_index = 1 : i64} : (tensor<64x32xf32>, tensor<2x16xi64>) -> tensor<2x16x32xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$data, Tc_IndexTensor:$indices, I64Attr:$axis,
      OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$padding_index);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
}

def Tc_GatherBackwardOp : Tc_Op<"gather_backward", [Pure]> {
  let summary = "gradient of tc.gather: scatter-add the result gradient into zeros";
  let description = [{
    The result has `data_shape`; every slice of `result_grad` is added at the
    row of `data` that `indices` picked (repeated indices accumulate), as the
    gradient of an embedding table. With `padding_index`, slices whose index
    picks that row (after negative indices are counted from the end) are
    skipped, so the row's gradient is zero, as PyTorch's embedding backward
    with `padding_idx`; a padding index outside the axis matches no row.

    ```mlir
    %dt = tc.gather_backward %dy, %idx {axis = 0 : i64, data_shape = array<i64: 64, 32>}
        : (tensor<2x16x32xf32>, tensor<2x16xi64>) -> tensor<64x32xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$result_grad, Tc_IndexTensor:$indices, I64Attr:$axis,
      DenseI64ArrayAttr:$data_shape,
      OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$padding_index);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_ExpandOp : Tc_Op<"expand", [Tc_AutocastFollow, Tc_DataMovement, Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "broadcast to a shape (ONNX Expand)";
  let description = [{
    The result shape is the broadcast of the operand's shape and `shape`.

    ```mlir
    %y = tc.expand %x {shape = array<i64: 2, 1, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$input, DenseI64ArrayAttr:$shape);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

include "TcIndexingOps.td"
include "TcFusedOps.td"

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Tc_SoftmaxCrossEntropyOp : Tc_Op<"softmax_cross_entropy", [Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "cross entropy of softmax(logits) against class indices";
  let description = [{
    `logits` is [N, C, d...] and `labels` is [N, d...] class indices. Labels
    equal to `ignore_index` contribute nothing and are left out of the mean.
    `reduction` is `mean` (scalar), `sum` (scalar) or `none` ([N, d...]).

    ```mlir
    %l = tc.softmax_cross_entropy %logits, %labels {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$logits, Tc_IndexTensor:$labels,
      DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
      OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$logits `,` $labels attr-dict `:` functional-type(operands, results)";
}

def Tc_NllLossOp : Tc_Op<"nll_loss", [Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "negative log likelihood of log-probabilities against class indices";
  let description = [{
    Same shapes and attributes as `tc.softmax_cross_entropy`, with
    log-probabilities instead of logits (ONNX NegativeLogLikelihoodLoss).

    ```mlir
    %l = tc.nll_loss %logp, %labels {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$log_probs, Tc_IndexTensor:$labels,
      DefaultValuedStrAttr<StrAttr, "mean">:$reduction,
      OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$log_probs `,` $labels attr-dict `:` functional-type(operands, results)";
}

def Tc_MseLossOp : Tc_Op<"mse_loss", [Pure]> {
  let summary = "mean squared error between two tensors of one shape";
  let description = [{
    ```mlir
    %l = tc.mse_loss %pred, %target {reduction = "mean"} : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$prediction, Tc_FloatTensor:$target,
      DefaultValuedStrAttr<StrAttr, "mean">:$reduction);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$prediction `,` $target attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

def Tc_GlobalNormOp : Tc_Op<"global_norm", [Pure, Tc_AutocastF32]> {
  let summary = "the L2 norm of every element of every operand together";
  let description = [{
    sqrt(sum of x^2 over all elements of all operands): the total norm
    torch.nn.utils.clip_grad_norm_ computes over a step's gradients. One
    library call reads each operand once; the squares are summed in double,
    in fixed chunks whose partial sums add up in a fixed order, so the value
    does not depend on the thread count or the device.

    ```mlir
    %n = tc.global_norm %g0, %g1 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Tc_FloatTensor>:$inputs);
  let results = (outs Tc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
}

def Tc_DampedInverseOp : Tc_Op<"damped_inverse", [Pure]> {
  let summary = "K-FAC's inverse of a Kronecker factor, every few steps";
  let description = [{
    Where `invert` is not 0: the inverse of `matrix + sqrt(damping) I` for a
    symmetric positive semi-definite n x n `matrix` (a running average of
    covariances), by Cholesky in double (LAPACK's dpotrf and dpotri), the
    result symmetric and rounded to f32 once. Where `invert` is 0: `previous`
    (the inverse kept in the optimizer state). `damping` and `invert` are the
    step's hyperparameters (kfac.damping, kfac.invert), which the library call
    reads on the host.

    ```mlir
    %inv = tc.damped_inverse %a, %damping, %invert, %a_inv
        : (tensor<65x65xf32>, tensor<f32>, tensor<f32>, tensor<65x65xf32>) -> tensor<65x65xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$matrix, Tc_FloatTensor:$damping,
      Tc_FloatTensor:$invert, Tc_FloatTensor:$previous);
  let results = (outs Tc_FloatTensor:$result);
  let hasVerifier = 1;
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_SgdUpdateOp : Tc_Op<"sgd_update", [Pure, Tc_TiedOpInterface, Tc_ParamUpdate]> {
  let summary = "one fused SGD step of a parameter (torch.optim.SGD)";
  let description = [{
    Elementwise, with the hyperparameters as f32 scalar tensors (runtime
    values) and g = grad * grad_scale (grad_scale: gradient clipping, 1 when
    absent):

        d = g + weight_decay * param
        new_momentum_buffer = momentum * momentum_buffer + d
        new_param = param - lr * (nesterov ? d + momentum * new_momentum_buffer
                                           : new_momentum_buffer)

    With `skip_nonfinite` (set by the loss scaler of an fp16 step), a
    non-finite grad_scale skips the update: every result equals its operand
    bit for bit (GradScaler's skipped optimizer step).

    One pass over the parameter. The code generator writes results that go
    straight back to their parameter or state in place.

    ```mlir
    %p1, %b1 = tc.sgd_update %p, %g, %b, %lr, %mom, %wd
        : (tensor<64x32xf32>, tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<f32>, tensor<f32>)
        -> (tensor<64x32xf32>, tensor<64x32xf32>)
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$param, Tc_FloatTensor:$grad,
      Tc_FloatTensor:$momentum_buffer, Tc_FloatTensor:$lr, Tc_FloatTensor:$momentum,
      Tc_FloatTensor:$weight_decay, Optional<Tc_FloatTensor>:$grad_scale,
      UnitAttr:$nesterov, UnitAttr:$skip_nonfinite);
  let results = (outs Tc_FloatTensor:$new_param, Tc_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The operand that result `i` is the next value of (param, buffer).
    ::mlir::Value getReplacedOperand(unsigned i) { return getOperand(i == 0 ? 0 : 2); }
  }];
}

def Tc_AdamUpdateOp : Tc_Op<"adam_update", [Pure, Tc_TiedOpInterface, Tc_ParamUpdate]> {
  let summary = "one fused Adam / AdamW step of a parameter (torch.optim.Adam, AdamW)";
  let description = [{
    Elementwise, with the hyperparameters as f32 scalar tensors (runtime
    values computed in double and then rounded, as PyTorch's Python floats
    are: one_minus_beta1/2 are 1 - beta1 and 1 - beta2, from the trainer;
    step_size is lr / (1 - beta1^t) and bias_correction2_sqrt is
    sqrt(1 - beta2^t) of step t, from the step count on the device) and g =
    grad * grad_scale (1 when absent), in PyTorch's order of operations:

        decoupled (AdamW): p = param * (1 - lr * weight_decay)
        else (Adam):       g = g + weight_decay * param
        new_exp_avg = beta1 * exp_avg + one_minus_beta1 * g
        new_exp_avg_sq = beta2 * exp_avg_sq + (one_minus_beta2 * g) * g
        new_param = p - (step_size * new_exp_avg)
                        / (sqrt(new_exp_avg_sq) / bias_correction2_sqrt + eps)

    (1 - beta2 from float32 beta2 would be 1.3e-5 off for beta2 = 0.999.)
    Adam reads lr only through step_size. With `skip_nonfinite`, a
    non-finite grad_scale skips the update: every result equals its operand
    bit for bit (GradScaler's skipped optimizer step).

    ```mlir
    %p1, %m1, %v1 = tc.adam_update %p, %g, %m, %v, %lr, %b1, %b2, %omb1, %omb2, %eps, %wd,
                                   %step, %bc2sqrt {decoupled}
        : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<f32>,
           tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>,
           tensor<f32>)
        -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$param, Tc_FloatTensor:$grad, Tc_FloatTensor:$exp_avg,
      Tc_FloatTensor:$exp_avg_sq, Tc_FloatTensor:$lr, Tc_FloatTensor:$beta1,
      Tc_FloatTensor:$beta2, Tc_FloatTensor:$one_minus_beta1, Tc_FloatTensor:$one_minus_beta2,
      Tc_FloatTensor:$eps, Tc_FloatTensor:$weight_decay, Tc_FloatTensor:$step_size,
      Tc_FloatTensor:$bias_correction2_sqrt,
      Optional<Tc_FloatTensor>:$grad_scale, UnitAttr:$decoupled, UnitAttr:$skip_nonfinite);
  let results = (outs Tc_FloatTensor:$new_param, Tc_FloatTensor:$new_exp_avg,
                      Tc_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The operand that result `i` is the next value of (param, exp_avg,
    /// exp_avg_sq).
    ::mlir::Value getReplacedOperand(unsigned i) { return getOperand(i == 0 ? 0 : i + 1); }
  }];
}

def Tc_LambUpdateOp : Tc_Op<"lamb_update", [Pure, Tc_TiedOpInterface, Tc_ParamUpdate]> {
  let summary = "one LAMB step of a parameter (You et al. 2020, Algorithm 2, apex FusedLAMB)";
  let description = [{
    With g = grad * grad_scale (1 when absent) and the hyperparameters as
    f32 scalar tensors (bias_correction1 = 1 - beta1^t and
    bias_correction2_sqrt = sqrt(1 - beta2^t), computed in double from the
    step count, as Adam's):

        new_exp_avg = beta1 * exp_avg + one_minus_beta1 * g
        new_exp_avg_sq = beta2 * exp_avg_sq + (one_minus_beta2 * g) * g
        r = (new_exp_avg / bias_correction1)
            / (sqrt(new_exp_avg_sq) / bias_correction2_sqrt + eps)
            + weight_decay * param
        trust = ||param|| / ||r||, 1 where either norm is 0
        new_param = param - lr * trust * r

    The norms are the whole tensor's (per parameter, summed in double).
    Without `layer_adaptation` the trust ratio is 1 (the parameters that
    --no-decay excludes: biases and norm weights). With `skip_nonfinite`
    a non-finite grad_scale keeps every result equal to its operand.

    Codegen: two passes over the parameter, a multi-tensor kernel each: the
    first writes the moments and sums the squares of param and r, the
    second recomputes r from the new moments and writes the parameter.

    ```mlir
    %p1, %m1, %v1 = tc.lamb_update %p, %g, %m, %v, %lr, %b1, %b2, %omb1, %omb2, %eps, %wd,
                                   %bc1, %bc2sqrt {layer_adaptation}
        : (tensor<64xf32>, ..., tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$param, Tc_FloatTensor:$grad, Tc_FloatTensor:$exp_avg,
      Tc_FloatTensor:$exp_avg_sq, Tc_FloatTensor:$lr, Tc_FloatTensor:$beta1,
      Tc_FloatTensor:$beta2, Tc_FloatTensor:$one_minus_beta1, Tc_FloatTensor:$one_minus_beta2,
      Tc_FloatTensor:$eps, Tc_FloatTensor:$weight_decay, Tc_FloatTensor:$bias_correction1,
      Tc_FloatTensor:$bias_correction2_sqrt,
      Optional<Tc_FloatTensor>:$grad_scale, UnitAttr:$layer_adaptation, UnitAttr:$skip_nonfinite);
  let results = (outs Tc_FloatTensor:$new_param, Tc_FloatTensor:$new_exp_avg,
                      Tc_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The operand that result `i` is the next value of (param, exp_avg,
    /// exp_avg_sq).
    ::mlir::Value getReplacedOperand(unsigned i) { return getOperand(i == 0 ? 0 : i + 1); }
  }];
}

def Tc_LarsUpdateOp : Tc_Op<"lars_update", [Pure, Tc_TiedOpInterface, Tc_ParamUpdate]> {
  let summary = "one LARS step of a parameter (You et al. 2017, in LARC's form)";
  let description = [{
    With g = grad * grad_scale (1 when absent):

        local_lr = trust_coefficient * ||param||
                   / (||g|| + weight_decay * ||param|| + eps),
                   1 where either norm is 0
        new_momentum_buffer = momentum * momentum_buffer
                              + (lr * local_lr) * (g + weight_decay * param)
        new_param = param - new_momentum_buffer

    The norms are the whole tensor's (per parameter, summed in double).
    Without `layer_adaptation` local_lr is 1 (the parameters that
    --no-decay excludes). With `skip_nonfinite` a non-finite grad_scale
    keeps every result equal to its operand.

    Codegen: two multi-tensor kernels, the first sums the squares of param
    and g, the second writes the buffer and the parameter.

    ```mlir
    %p1, %b1 = tc.lars_update %p, %g, %b, %lr, %mom, %wd, %trust, %eps {layer_adaptation}
        : (tensor<64x32xf32>, ..., tensor<f32>) -> (tensor<64x32xf32>, tensor<64x32xf32>)
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$param, Tc_FloatTensor:$grad,
      Tc_FloatTensor:$momentum_buffer, Tc_FloatTensor:$lr, Tc_FloatTensor:$momentum,
      Tc_FloatTensor:$weight_decay, Tc_FloatTensor:$trust_coefficient, Tc_FloatTensor:$eps,
      Optional<Tc_FloatTensor>:$grad_scale, UnitAttr:$layer_adaptation,
      UnitAttr:$skip_nonfinite);
  let results = (outs Tc_FloatTensor:$new_param, Tc_FloatTensor:$new_momentum_buffer);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let extraClassDeclaration = [{
    /// The operand that result `i` is the next value of (param, buffer).
    ::mlir::Value getReplacedOperand(unsigned i) { return getOperand(i == 0 ? 0 : 2); }
  }];
}

def Tc_NonfiniteProbeOp : Tc_Op<"nonfinite_probe", [Pure]> {
  let summary = "0 when every element of every operand is finite, else +inf";
  let description = [{
    The loss scaler's check of an fp16 step's gradients (PyTorch's
    `_amp_foreach_non_finite_check_and_unscale_`): one pass over every
    operand, one multi-tensor kernel. The result is an f32 scalar, 0 when no
    element is inf or NaN, +inf otherwise, so that adding it to the unscale
    factor makes that factor non-finite exactly when the step must be
    skipped.

    ```mlir
    %found = tc.nonfinite_probe %g1, %g2 : (tensor<64x32xf32>, tensor<64xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Variadic<Tc_FloatTensor>:$values);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$values attr-dict `:` functional-type($values, results)";
}

def Tc_AccumulateGradOp : Tc_Op<"accumulate_grad", [Pure, DeclareOpInterfaceMethods<Tc_TiedOpInterface, ["getReplacedOperand"]>]> {
  let summary = "one micro-batch's gradient into its accumulator (gradient accumulation)";
  let description = [{
    Elementwise, with `weight` and `keep` f32 scalar tensors (runtime values):

        result = keep != 0 ? accumulator + weight * grad : weight * grad

    The first micro-batch of a group (keep = 0) writes the weighted gradient
    and ignores what the accumulator held (no zeroing pass, and an inf left
    by a skipped fp16 step does not carry over); the later ones add to it.
    `weight` is the micro-batch's share of the group's samples, so the sum is
    the gradient of the group's mean loss.

    The code generator writes a result that goes straight back to its
    accumulator state in place. When `grad` is a GEMM's result that only this
    op reads, the memory plan gives the GEMM no buffer and the GEMM itself
    accumulates: alpha = weight, beta = keep ? 1 : 0 (see
    tc::accumulatingGemmUser).

    ```mlir
    %a1 = tc.accumulate_grad %acc, %g, %weight, %keep
        : (tensor<64x32xf32>, tensor<64x32xf32>, tensor<f32>, tensor<f32>) -> tensor<64x32xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$accumulator, Tc_FloatTensor:$grad,
      Tc_FloatTensor:$weight, Tc_FloatTensor:$keep);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_AllReduceOp : Tc_Op<"all_reduce",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "data parallelism: one bucket of gradients combined over the processes";
  let description = [{
    Result i is the sum over the processes of the run (ranks) of `scale`
    times operand i:

        results[i] = sum over ranks r of scale_r * values_r[i]

    `scale` is an f32 scalar tensor that the trainer sets every step to the
    rank's share of the global batch's sample weight, so that the result is
    the gradient of the global batch's weighted mean loss however the
    samples fall across the ranks (with equal shares: the mean over the
    ranks); a single process has scale 1. `bucket` numbers the op's bucket
    in issue order.

    All processes issue the same buckets in the same order: the op reads
    and writes state outside the tensors (the communicator), so it is never
    duplicated, removed or reordered with another one. Built by the
    allreduce phase (`trainc compile --data-parallel`).

    ```mlir
    %a, %b = tc.all_reduce %ga, %gb scale %s {bucket = 0 : i64}
        : (tensor<64x32xf32>, tensor<64xf32>), tensor<f32> -> (tensor<64x32xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins Variadic<Tc_FloatTensor>:$values, Tc_FloatTensor:$scale, I64Attr:$bucket);
  let results = (outs Variadic<Tc_FloatTensor>:$results);
  let assemblyFormat = [{
    $values `scale` $scale attr-dict `:` `(` type($values) `)` `,` type($scale) `->` `(` type($results) `)`
  }];
}


def Tc_SendOp : Op<Tc_Dialect, "send", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "pipeline parallelism: a tensor sent to the neighbouring stage";
  let description = [{
    Sends `value` to pipeline stage `peer`, where the `tc.recv` of the same
    `slot` and direction receives it: a forward activation (to the next
    stage) or, with `gradient`, the gradient of an activation this stage
    received (to the previous one). `tensor` names what crosses the
    boundary (the ONNX tensor, or "gradient of" it), for comments and
    tables only.

    Each stage's step issues its sends and receives in the same order on
    every micro-batch; the op reads and writes state outside the tensors
    (the link to the other stage), so it is never duplicated, removed or
    reordered with another send or receive. Built by the pipeline phase
    (`trainc compile --pipeline-stages`) and by autodiff.

    ```mlir
    tc.send %h to stage 1 slot 0 {tensor = "/1/Relu_output_0"} : tensor<8x128xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$value, I64Attr:$peer, I64Attr:$slot, UnitAttr:$gradient,
                       StrAttr:$tensor);
  let assemblyFormat = "$value `to` `stage` $peer `slot` $slot attr-dict `:` type($value)";
  let hasVerifier = 1;
}

def Tc_RecvOp : Op<Tc_Dialect, "recv", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "pipeline parallelism: a tensor received from the neighbouring stage";
  let description = [{
    The tensor that stage `peer` sends with the `tc.send` of the same `slot`
    and direction: a forward activation (from the previous stage) or, with
    `gradient`, the gradient of an activation this stage sent (from the next
    one). See `tc.send`.

    ```mlir
    %h = tc.recv from stage 0 slot 0 {tensor = "/1/Relu_output_0"} : tensor<8x128xf32>
    %g = tc.recv from stage 1 slot 0 {gradient, tensor = "/1/Relu_output_0"} : tensor<8x128xf32>
    ```
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$slot, UnitAttr:$gradient, StrAttr:$tensor);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "`from` `stage` $peer `slot` $slot attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // TRAINC_IR_TCOPS_TD
