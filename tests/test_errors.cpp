// Bad input to every op in core/: wrong shapes, empty tensors, out-of-range indices, dtype
// mix-ups and undefined tensors each throw the right attograd::Error with the op and shapes in
// the message; empty tensors that are valid input give empty (or zero) results, never a crash.
#include "helpers.hpp"

#include <limits>

using namespace attograd;

#define CHECK_ERROR(expr, text, Type) \
    CHECK_THROWS_WITH_AS(expr, doctest::Contains(std::string(text).c_str()), Type)

namespace {
Tensor f32(const Shape& shape) { return zeros(shape); }
Tensor f64(const Shape& shape) { return zeros(shape, {.dtype = DType::Float64}); }
Tensor i64(const Shape& shape) { return zeros(shape, {.dtype = DType::Int64}); }
Tensor mask(const Shape& shape) { return zeros(shape, {.dtype = DType::Bool}); }
const Tensor undefined;
}  // namespace

TEST_CASE("tensor factories and accessors reject bad shapes, values and dtypes") {
    CHECK_ERROR(tensor({1, 2, 3}, {2, 2}), "tensor: 3 values do not fill shape [2, 2]", ShapeError);
    CHECK_ERROR(index_tensor({1, 2}, {3}), "index_tensor: 2 values", ShapeError);
    CHECK_ERROR(zeros({2, -1}), "zeros: negative dimension in shape [2, -1]", ShapeError);
    CHECK_ERROR(empty({-3}), "empty: negative dimension", ShapeError);
    CHECK_ERROR(full({-1}, 1.0), "full: negative dimension", ShapeError);
    CHECK_ERROR(arange(0.0, 1.0, 0.0), "arange: step must be finite and non-zero", ValueError);
    CHECK_ERROR(arange(0.0, 1.0, -1.0), "arange: step -1 has the wrong sign", ValueError);
    CHECK_ERROR(arange(-2), "arange: end must be >= 0", ValueError);
    CHECK_ERROR(arange(0.0, std::nan(""), 1.0), "arange: start and end must be finite", ValueError);
    CHECK_ERROR(arange(0.0, 1e300, 1e-300), "arange: [0, 1e+300) in steps of 1e-300 has too many elements",
                ShapeError);
    Generator gen(0);
    CHECK_ERROR(randn({2}, gen, {.dtype = DType::Int64}), "randn: needs a float dtype", DTypeError);
    CHECK_ERROR(uniform({2}, 1.0, 0.0, gen), "uniform: low 1 exceeds high 0", ValueError);
    CHECK_ERROR(randint(3, 3, {2}, gen), "randint: empty range [3, 3)", ValueError);
    CHECK_ERROR(f32({2}).item(), "item: needs a one-element tensor, got shape [2]", ValueError);
    CHECK_ERROR(f32({2, 3}).at({0, 3}), "at: index 3 is out of range for dimension 1 of shape [2, 3]",
                IndexError);
    CHECK_ERROR(f32({2, 3}).at({0}), "at: 1 indices for a tensor of shape [2, 3]", IndexError);
    CHECK_ERROR(f32({2}).data<double>(), "data: tensor has dtype float32, accessed as float64", DTypeError);
    CHECK_ERROR(f32({2}).size(2), "size: axis 2 is out of range for a tensor of rank 1", IndexError);
    CHECK_ERROR(i64({2}).requires_grad_(), "requires_grad_: only float tensors", DTypeError);
    Tensor leaf = f32({2, 2}).requires_grad_();
    CHECK_ERROR(leaf.set_grad(f32({3})), "set_grad: gradient shape [3] differs from tensor shape [2, 2]",
                ShapeError);
    CHECK_ERROR(leaf.set_grad(f64({2, 2})), "set_grad: gradient dtype float64 differs", DTypeError);
    CHECK_ERROR(leaf.backward(), "backward: implicit gradient needs a one-element tensor, got shape [2, 2]",
                AutogradError);
    CHECK_ERROR(f32({1}).backward(), "backward: tensor [1] does not require grad", AutogradError);
    CHECK_ERROR(leaf.backward(f32({3})), "backward: gradient shape [3] does not match tensor shape [2, 2]",
                ShapeError);
    CHECK_ERROR(undefined.shape(), "use of an undefined tensor", ValueError);
}

TEST_CASE("elementwise ops: shapes that do not broadcast, dtype mix-ups, undefined and empty tensors") {
    using BinaryOp = Tensor (*)(const Tensor&, const Tensor&);
    const std::vector<std::pair<const char*, BinaryOp>> binary = {
        {"add", add}, {"sub", sub}, {"mul", mul}, {"div", div}, {"eq", eq}, {"lt", lt}, {"gt", gt}};
    for (const auto& [name, op] : binary) {
        CAPTURE(name);
        CHECK_ERROR(op(f32({2, 3}), f32({4})),
                    fmt::format("{}: shapes [2, 3] and [4] do not broadcast", name), ShapeError);
        CHECK_ERROR(op(f32({2}), f64({2})),
                    fmt::format("{}: dtypes differ: float32 [2] and float64 [2]", name), DTypeError);
        CHECK_ERROR(op(undefined, f32({2})), fmt::format("{}: undefined tensor argument", name), ValueError);
        CHECK(op(f32({0, 3}), f32({3})).shape() == Shape{0, 3});
    }
    // int64 arithmetic exists (tests/test_ops_elementwise.cpp); bool arithmetic does not
    CHECK_ERROR(mul(mask({2}), mask({2})), "mul: expected a float32, float64 or int64 tensor, got bool",
                DTypeError);

    using UnaryOp = Tensor (*)(const Tensor&);
    const std::vector<std::pair<const char*, UnaryOp>> unary = {
        {"neg", neg},   {"exp", exp},         {"log", log},   {"sqrt", sqrt}, {"abs", abs},
        {"tanh", tanh}, {"sigmoid", sigmoid}, {"relu", relu}, {"gelu", gelu}};
    for (const auto& [name, op] : unary) {
        CAPTURE(name);
        CHECK_ERROR(op(i64({2})), fmt::format("{}: expected a float32 or float64 tensor, got int64", name),
                    DTypeError);
        CHECK_ERROR(op(undefined), fmt::format("{}: undefined tensor argument", name), ValueError);
        CHECK(op(f32({0, 2})).shape() == Shape{0, 2});
    }
    CHECK_ERROR(pow(mask({2}), 2.0), "pow: expected a float32 or float64 tensor, got bool", DTypeError);
    CHECK_ERROR(pow(undefined, 2.0), "pow: undefined tensor argument", ValueError);
    CHECK_ERROR(clone(undefined), "clone: undefined tensor argument", ValueError);
    CHECK_ERROR(to_dtype(undefined, DType::Float64), "to_dtype: undefined tensor argument", ValueError);
    CHECK_ERROR(f32({2}) + f64({2}), "add: dtypes differ", DTypeError);
}

TEST_CASE("reductions: bad axes, empty axes, dtype mix-ups, sum_to to a shape that does not broadcast") {
    Tensor x = f32({2, 3});
    CHECK_ERROR(sum(x, {2}), "sum: axis 2 is out of range for a tensor of rank 2", IndexError);
    CHECK_ERROR(sum(x, {-3}), "sum: axis -3 is out of range", IndexError);
    CHECK_ERROR(sum(x, {1, -1}), "sum: axis -1 listed twice for shape [2, 3]", IndexError);
    CHECK_ERROR(sum(scalar(1.0), {0}), "sum: axis 0 given for a 0-d tensor", IndexError);
    CHECK_ERROR(sum(i64({2})), "sum: expected a float32 or float64 tensor, got int64", DTypeError);
    CHECK_ERROR(sum(undefined), "sum: undefined tensor argument", ValueError);
    CHECK_ERROR(mean(x, {5}), "mean: axis 5 is out of range", IndexError);
    CHECK_ERROR(mean(i64({2})), "mean: expected a float32 or float64 tensor, got int64", DTypeError);
    CHECK_ERROR(mean(mask({2}), {0}), "mean: expected a float32 or float64 tensor, got bool", DTypeError);
    CHECK_ERROR(mean(undefined), "mean: undefined tensor argument", ValueError);
    CHECK_ERROR(max(x, 2), "max: axis 2 is out of range", IndexError);
    CHECK_ERROR(max(f32({2, 0}), 1), "max: cannot reduce the empty axis 1 of shape [2, 0]", ShapeError);
    CHECK_ERROR(max(i64({2}), 0), "max: expected a float32 or float64 tensor, got int64", DTypeError);
    CHECK_ERROR(max(undefined, 0), "max: undefined tensor argument", ValueError);
    CHECK_ERROR(argmax(x, -3), "max: axis -3 is out of range", IndexError);
    CHECK_ERROR(sum_to(x, {4}), "sum_to: shapes [4] and [2, 3] do not broadcast", ShapeError);
    CHECK_ERROR(sum_to(x, {1, 2, 3}), "sum_to: shape [1, 2, 3] does not broadcast to [2, 3]", ShapeError);
    // Empty tensors are valid input where the reduced axis is not empty.
    CHECK(sum(f32({0, 3}), {0}).to_vector<double>() == std::vector<double>{0, 0, 0});
    CHECK(max(f32({3, 0}), 0).values.shape() == Shape{0});
    CHECK(max(f32({0, 3}), 1, true).values.shape() == Shape{0, 1});
}

TEST_CASE("shape ops: reshape, transpose and permute reject bad sizes and axes") {
    Tensor x = f32({2, 3, 4});
    CHECK_ERROR(reshape(x, {5, 5}), "reshape: cannot reshape [2, 3, 4] (24 elements) into [5, 5]",
                ShapeError);
    CHECK_ERROR(reshape(x, {-1, -1}), "reshape: more than one -1 in [-1, -1]", ShapeError);
    CHECK_ERROR(reshape(x, {-2, 12}), "reshape: negative size in [-2, 12]", ShapeError);
    CHECK_ERROR(reshape(x, {-1, 5}), "reshape: cannot reshape [2, 3, 4] into [-1, 5]", ShapeError);
    CHECK_ERROR(reshape(undefined, {1}), "reshape: undefined tensor argument", ValueError);
    CHECK_ERROR(transpose(x, 0, 3), "transpose: axis 3 is out of range for a tensor of rank 3", IndexError);
    CHECK_ERROR(transpose(undefined, 0, 1), "transpose: undefined tensor argument", ValueError);
    CHECK_ERROR(permute(x, {0, 1}), "permute: 2 dims given for a tensor of shape [2, 3, 4]", IndexError);
    CHECK_ERROR(permute(x, {0, 1, -3}), "permute: dims [0, 1, -3] repeat an axis", IndexError);
    CHECK_ERROR(permute(x, {0, 1, 3}), "permute: axis 3 is out of range", IndexError);
    CHECK_ERROR(permute(undefined, {0}), "permute: undefined tensor argument", ValueError);
    CHECK(transpose(f32({0, 2}), 0, 1).shape() == Shape{2, 0});
    CHECK(reshape(f32({0, 3}), {-1, 3}).shape() == Shape{0, 3});
}

TEST_CASE("matmul: ranks, inner and batch dimensions, dtypes, empty operands") {
    CHECK_ERROR(matmul(f32({2, 3}), f32({4, 5})), "matmul: inner dimensions differ: [2, 3] x [4, 5]",
                ShapeError);
    CHECK_ERROR(matmul(f32({3}), f32({3, 5})), "matmul: needs tensors of rank >= 2, got [3] x [3, 5]",
                ShapeError);
    CHECK_ERROR(matmul(f32({2, 2, 3}), f32({3, 3, 4})),
                "matmul: batch dimensions do not broadcast: [2, 2, 3] x [3, 3, 4]", ShapeError);
    CHECK_ERROR(matmul(f32({2, 3}), f64({3, 2})), "matmul: dtypes differ: float32 [2, 3] x float64 [3, 2]",
                DTypeError);
    CHECK_ERROR(matmul(i64({2, 3}), i64({3, 2})), "matmul: expected a float32 or float64 tensor, got int64",
                DTypeError);
    CHECK_ERROR(matmul(undefined, f32({2, 2})), "matmul: undefined tensor argument", ValueError);
    CHECK(matmul(f32({0, 3}), f32({3, 2})).shape() == Shape{0, 2});
    // An empty inner dimension gives zeros, batched or not.
    CHECK(matmul(full({2, 0}, 1.0), full({0, 3}, 1.0)).to_vector<double>() == std::vector<double>(6, 0.0));
    CHECK(matmul(full({2, 2, 0}, 1.0), full({0, 3}, 1.0)).to_vector<double>() ==
          std::vector<double>(12, 0.0));
}

TEST_CASE("softmax and log_softmax: bad axes and dtypes") {
    for (auto op : {softmax, log_softmax}) {
        const std::string name = op == softmax ? "softmax" : "log_softmax";
        CAPTURE(name);
        CHECK_ERROR(op(f32({2, 3}), 2), name + ": axis 2 is out of range for a tensor of rank 2", IndexError);
        CHECK_ERROR(op(f32({2, 3}), -3), name + ": axis -3 is out of range", IndexError);
        CHECK_ERROR(op(i64({2, 3}), 1), name + ": expected a float32 or float64 tensor, got int64",
                    DTypeError);
        CHECK_ERROR(op(undefined, 0), name + ": undefined tensor argument", ValueError);
        CHECK(op(f32({0, 4}), -1).shape() == Shape{0, 4});
    }
}

TEST_CASE("concat and stack: empty lists, mismatched shapes and dtypes") {
    CHECK_ERROR(concat({}, 0), "concat: needs at least one tensor", ValueError);
    CHECK_ERROR(
        concat({f32({2, 3}), f32({2, 4})}, 0),
        "concat: tensor 1 has shape [2, 4] but tensor 0 has [2, 3]; sizes must match except along axis 0",
        ShapeError);
    CHECK_ERROR(concat({f32({2, 3}), f32({2, 3, 1})}, 0), "concat: tensor 1 has shape [2, 3, 1]", ShapeError);
    CHECK_ERROR(concat({f32({2}), f64({2})}, 0),
                "concat: tensor 1 is float64 [2] but tensor 0 is float32 [2]", DTypeError);
    CHECK_ERROR(concat({f32({2})}, 1), "concat: axis 1 is out of range for a tensor of rank 1", IndexError);
    CHECK_ERROR(concat({scalar(1.0), scalar(2.0)}, 0), "concat: 0-d tensors cannot be concatenated",
                ShapeError);
    CHECK_ERROR(concat({f32({2}), undefined}, 0), "concat: undefined tensor argument", ValueError);
    CHECK(concat({f32({0, 3}), f32({2, 3})}, 0).shape() == Shape{2, 3});
    CHECK_ERROR(stack({}, 0), "stack: needs at least one tensor", ValueError);
    CHECK_ERROR(stack({f32({2, 3}), f32({3, 2})}, 0),
                "stack: tensor 1 has shape [3, 2] but tensor 0 has [2, 3]; all shapes must be equal",
                ShapeError);
    CHECK_ERROR(stack({f32({2}), i64({2})}, 0), "stack: tensor 1 is int64 [2] but tensor 0 is float32 [2]",
                DTypeError);
    CHECK_ERROR(stack({f32({2}), f32({2})}, 2), "stack: axis 2 is out of range for a tensor of rank 2",
                IndexError);
    CHECK(stack({f32({0}), f32({0})}, 1).shape() == Shape{0, 2});
}

TEST_CASE("narrow and slice: ranges outside the dimension") {
    Tensor x = f32({3, 5});
    CHECK_ERROR(narrow(x, 1, 4, 2),
                "narrow: start 4 + length 2 is out of range for axis 1 of size 5 (shape [3, 5])", IndexError);
    CHECK_ERROR(narrow(x, 1, 6, 0), "narrow: start 6 is out of range for axis 1 of size 5", IndexError);
    CHECK_ERROR(narrow(x, 1, -6, 1), "narrow: start -6 is out of range", IndexError);
    CHECK_ERROR(narrow(x, 0, 0, -1), "narrow: start 0 + length -1 is out of range", IndexError);
    CHECK_ERROR(narrow(x, 2, 0, 1), "narrow: axis 2 is out of range for a tensor of rank 2", IndexError);
    CHECK_ERROR(narrow(scalar(1.0), 0, 0, 1), "narrow: needs a tensor of rank >= 1", ShapeError);
    CHECK_ERROR(narrow(undefined, 0, 0, 1), "narrow: undefined tensor argument", ValueError);
    CHECK(narrow(x, 1, 5, 0).shape() == Shape{3, 0});
    CHECK(narrow(f32({0, 2}), 0, 0, 0).shape() == Shape{0, 2});
    CHECK_ERROR(slice(x, -3, 0, 1), "slice: axis -3 is out of range", IndexError);
    CHECK_ERROR(slice(scalar(1.0), 0, 0, 1), "slice: needs a tensor of rank >= 1", ShapeError);
    CHECK_ERROR(slice(undefined, 0, 0, 1), "slice: undefined tensor argument", ValueError);
}

TEST_CASE("index_select, gather and embedding: out-of-range indices, index dtypes and shapes") {
    Tensor x = f32({3, 4});
    CHECK_ERROR(
        index_select(x, 0, index_tensor({0, 3}, {2})),
        "index_select: index 3 at position 1 is out of range for axis 0 of size 3 (input shape [3, 4])",
        IndexError);
    CHECK_ERROR(index_select(x, 1, index_tensor({-1}, {1})),
                "index_select: index -1 at position 0 is out of range", IndexError);
    CHECK_ERROR(index_select(x, 0, f32({2})), "index_select: index must be int64, got float32 [2]",
                DTypeError);
    CHECK_ERROR(index_select(x, 0, i64({2, 2})), "index_select: index must be 1-D, got shape [2, 2]",
                ShapeError);
    CHECK_ERROR(index_select(x, 2, i64({1})), "index_select: axis 2 is out of range", IndexError);
    CHECK_ERROR(index_select(scalar(1.0), 0, i64({1})), "index_select: needs a tensor of rank >= 1",
                ShapeError);
    CHECK_ERROR(index_select(undefined, 0, i64({1})), "index_select: undefined tensor argument 'x'",
                ValueError);
    CHECK_ERROR(index_select(f32({0, 2}), 0, i64({1})), "out of range for axis 0 of size 0", IndexError);
    CHECK(index_select(x, 0, i64({0})).shape() == Shape{0, 4});

    CHECK_ERROR(gather(x, 1, index_tensor({0, 4}, {1, 2})),
                "gather: index 4 at position 1 is out of range for axis 1 of size 4 (input shape [3, 4])",
                IndexError);
    CHECK_ERROR(gather(x, 1, f32({1, 2})), "gather: index must be int64, got float32 [1, 2]", DTypeError);
    CHECK_ERROR(gather(x, 1, i64({2})), "gather: index [2] must have the same rank (>= 1) as input [3, 4]",
                ShapeError);
    CHECK_ERROR(gather(x, 1, i64({4, 1})), "gather: index [4, 1] is larger than input [3, 4] in dimension 0",
                ShapeError);
    CHECK_ERROR(gather(x, -3, i64({1, 1})), "gather: axis -3 is out of range", IndexError);
    CHECK_ERROR(gather(x, 0, undefined), "gather: undefined tensor argument 'index'", ValueError);
    CHECK(gather(x, 1, i64({3, 0})).shape() == Shape{3, 0});

    Tensor w = f32({5, 2});
    CHECK_ERROR(embedding(w, index_tensor({1, 5, 0}, {3})),
                "embedding: index 5 at position 1 is out of range for 5 embeddings (weight [5, 2])",
                IndexError);
    CHECK_ERROR(embedding(w, index_tensor({-2}, {1})), "embedding: index -2 at position 0 is out of range",
                IndexError);
    CHECK_ERROR(embedding(w, f32({3})), "embedding: indices must be int64, got float32 [3]", DTypeError);
    CHECK_ERROR(embedding(f32({5}), i64({3})),
                "embedding: weight must be 2-D [num_embeddings, embedding_dim], got shape [5]", ShapeError);
    CHECK_ERROR(embedding(i64({5, 2}), i64({3})), "embedding: weight must be float32 or float64, got int64",
                DTypeError);
    CHECK_ERROR(embedding(f32({0, 2}), i64({1})), "out of range for 0 embeddings", IndexError);
    CHECK_ERROR(embedding(undefined, i64({1})), "embedding: undefined tensor argument 'weight'", ValueError);
    CHECK(embedding(w, i64({0, 3})).shape() == Shape{0, 3, 2});
}

TEST_CASE("masked_fill and where: mask dtypes, shapes that do not broadcast, fill values") {
    Tensor x = f32({2, 3});
    CHECK_ERROR(masked_fill(x, f32({2, 3}), 0.0), "masked_fill: mask must be bool, got float32 [2, 3]",
                DTypeError);
    CHECK_ERROR(masked_fill(x, mask({4}), 0.0), "masked_fill: shapes [2, 3] and [4] do not broadcast",
                ShapeError);
    CHECK_ERROR(masked_fill(x, mask({2, 2, 3}), 0.0),
                "masked_fill: mask [2, 2, 3] does not broadcast to the input's shape [2, 3]", ShapeError);
    CHECK_ERROR(masked_fill(i64({2}), mask({2}), 0.5),
                "masked_fill: value 0.5 cannot be stored in an int64 tensor", ValueError);
    CHECK_ERROR(masked_fill(i64({2}), mask({2}), -std::numeric_limits<double>::infinity()),
                "cannot be stored in an int64 tensor", ValueError);
    CHECK_ERROR(masked_fill(mask({2}), mask({2}), 2.0),
                "masked_fill: value 2 cannot be stored in a bool tensor", ValueError);
    CHECK_ERROR(masked_fill(undefined, mask({2}), 0.0), "masked_fill: undefined tensor argument 'x'",
                ValueError);
    CHECK(masked_fill(f32({0, 3}), mask({3}), 1.0).shape() == Shape{0, 3});

    CHECK_ERROR(where(f32({3}), f32({3}), f32({3})), "where: condition must be bool, got float32 [3]",
                DTypeError);
    CHECK_ERROR(where(mask({3}), f32({3}), f64({3})),
                "where: dtypes of a and b differ: float32 [3] and float64 [3]", DTypeError);
    CHECK_ERROR(where(mask({3}), f32({4}), f32({3})), "where: shapes [3] and [4] do not broadcast",
                ShapeError);
    CHECK_ERROR(where(mask({3}), f32({3}), f32({2, 2})), "where: shapes [3] and [2, 2] do not broadcast",
                ShapeError);
    CHECK_ERROR(where(mask({3}), undefined, f32({3})), "where: undefined tensor argument 'a'", ValueError);
    CHECK(where(mask({0}), f32({1}), f32({1})).shape() == Shape{0});
}

TEST_CASE("dropout: probabilities outside [0, 1] and non-float tensors") {
    Generator gen(0);
    CHECK_ERROR(dropout(f32({2}), -0.1, true, gen), "dropout: probability p must be in [0, 1], got -0.1",
                ValueError);
    CHECK_ERROR(dropout(f32({2}), 1.5, true, gen), "dropout: probability p must be in [0, 1], got 1.5",
                ValueError);
    CHECK_ERROR(dropout(f32({2}), std::nan(""), false, gen),
                "dropout: probability p must be in [0, 1], got nan", ValueError);
    CHECK_ERROR(dropout(i64({2}), 0.5, true, gen),
                "dropout: expected a float32 or float64 tensor, got int64 [2]", DTypeError);
    CHECK_ERROR(dropout(undefined, 0.5, true, gen), "dropout: undefined tensor argument", ValueError);
    CHECK(dropout(f32({0, 3}), 0.5, true, gen).shape() == Shape{0, 3});
}

TEST_CASE("cross_entropy and nll_loss: target shapes, dtypes, out-of-range targets, options") {
    Tensor logits = f32({4, 3});
    Tensor targets = index_tensor({0, 1, 2, 0}, {4});
    for (const std::string name : {"cross_entropy", "nll_loss"}) {
        CAPTURE(name);
        auto loss = [&name](const Tensor& x, const Tensor& t, CrossEntropyOptions o = {}) {
            return name == "cross_entropy" ? cross_entropy(x, t, o) : nll_loss(x, t, o);
        };
        CHECK_ERROR(loss(logits, index_tensor({0, 3, 1, 1}, {4})),
                    name + ": target 3 at position 1 is outside [0, 3) and is not ignore_index (-100)",
                    IndexError);
        CHECK_ERROR(loss(logits, index_tensor({0, -1, 1, 1}, {4})), name + ": target -1 at position 1",
                    IndexError);
        CHECK_ERROR(loss(logits, index_tensor({0, 1, 2}, {3})),
                    name + ": targets [3] do not fit input [4, 3] (expected targets [4])", ShapeError);
        CHECK_ERROR(loss(f32({2, 3, 5}), i64({2, 3})), name + ": targets [2, 3] do not fit input [2, 3, 5]",
                    ShapeError);
        CHECK_ERROR(loss(logits, f32({4})), name + ": targets must be int64 class indices, got float32 [4]",
                    DTypeError);
        CHECK_ERROR(loss(i64({4, 3}), targets), name + ": input must be float32 or float64, got int64 [4, 3]",
                    DTypeError);
        CHECK_ERROR(loss(scalar(1.0), i64({})),
                    name + ": input must be [N, C], [N, C, d...] or [C], got a 0-d", ShapeError);
        CHECK_ERROR(loss(f32({4, 0}), targets), name + ": input [4, 0] has no classes", ShapeError);
        CHECK_ERROR(loss(logits, targets, {.label_smoothing = 1.5}),
                    name + ": label_smoothing must be in [0, 1]", ValueError);
        CHECK_ERROR(loss(undefined, targets), name + ": undefined tensor argument", ValueError);
        // An ignored target may lie outside [0, C).
        CHECK(std::isfinite(loss(logits, index_tensor({0, 7, 1, 1}, {4}), {.ignore_index = 7}).item()));
    }
    CHECK_ERROR(nll_loss(logits, targets, {.label_smoothing = 0.1}),
                "nll_loss: label_smoothing must be 0 (got 0.1)", ValueError);
}

TEST_CASE("mse_loss: shapes, dtypes and the mean of nothing") {
    CHECK_ERROR(mse_loss(f32({2, 3}), f32({3})),
                "mse_loss: input [2, 3] and target [3] must have the same shape", ShapeError);
    CHECK_ERROR(mse_loss(f32({2}), f64({2})),
                "mse_loss: dtypes differ: input float32 [2], target float64 [2]", DTypeError);
    CHECK_ERROR(mse_loss(i64({2}), i64({2})), "mse_loss: expected a float32 or float64 tensor, got int64",
                DTypeError);
    CHECK_ERROR(mse_loss(f32({0, 2}), f32({0, 2})),
                "mse_loss: the mean of an empty input [0, 2] is undefined", ValueError);
    CHECK_ERROR(mse_loss(undefined, f32({2})), "mse_loss: undefined tensor argument", ValueError);
    CHECK(mse_loss(f32({0, 2}), f32({0, 2}), Reduction::Sum).item() == 0.0);
    CHECK(mse_loss(f32({0, 2}), f32({0, 2}), Reduction::None).shape() == Shape{0, 2});
}

TEST_CASE("gradcheck: non-float64 inputs and nothing to check") {
    auto fn = [](const std::vector<Tensor>& in) { return in[0] * 2.0; };
    CHECK_ERROR(gradcheck(fn, {f32({2}).requires_grad_()}), "gradcheck: input 0 is float32 [2]", DTypeError);
    CHECK_ERROR(gradcheck(fn, {f64({2})}), "gradcheck: no input requires grad", ValueError);
}

TEST_CASE("shapes whose element count overflows are refused, not wrapped to a small buffer") {
    constexpr std::int64_t big = std::int64_t{1} << 40;
    CHECK_ERROR(zeros({big, big}), "zeros: shape [1099511627776, 1099511627776] has too many elements",
                ShapeError);
    CHECK_ERROR(empty({std::int64_t{1} << 32, std::int64_t{1} << 32}), "has too many elements", ShapeError);
    CHECK_ERROR(full({big, big, 0, big}, 1.0), "has too many elements",
                ShapeError);  // 0 after the wrap is no excuse
    CHECK_ERROR(reshape(f32({0}), {big, big, 0}), "reshape: shape", ShapeError);
    CHECK(zeros({big, 0}).numel() == 0);  // an empty tensor with a large dimension is fine
    constexpr std::int64_t huge = std::numeric_limits<std::int64_t>::max();
    CHECK_ERROR(zeros({0, huge, huge}), "zeros: shape", ShapeError);  // its strides would overflow
    CHECK_ERROR(reshape(f32({0}), {0, huge, huge}), "reshape: shape", ShapeError);
}

TEST_CASE("to_dtype refuses float values that do not fit int64 (the cast would be undefined)") {
    CHECK_ERROR(to_dtype(tensor({1.0, std::nan("")}, {2}), DType::Int64),
                "to_dtype: nan at flat index 1 of [2]", ValueError);
    CHECK_ERROR(to_dtype(tensor({1e30}, {1}), DType::Int64), "does not fit int64", ValueError);
    CHECK_ERROR(to_dtype(f64({1}) - std::numeric_limits<double>::infinity(), DType::Int64),
                "does not fit int64", ValueError);
    CHECK(to_dtype(tensor({-2.5, 3.9}, {2}), DType::Int64).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{-2, 3});
}

TEST_CASE("a tensor too large for memory is a ResourceError naming its shape") {
    // 2^55 bytes: more than any machine's memory, yet no overflow.
    CHECK_ERROR(empty({std::int64_t{1} << 52}, {.dtype = DType::Float64}),
                "out of memory: a float64 tensor of shape [4503599627370496]", ResourceError);
}
