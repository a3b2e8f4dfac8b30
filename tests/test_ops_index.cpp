// Joining, slicing and indexing ops: values, gradcheck (broadcast masks, negative axes) and
// scatter-add backward for repeated indices.
#include "helpers.hpp"

using namespace attograd;
using testing::rand64;

namespace {
Tensor bool_mask(const std::vector<std::int64_t>& values, const Shape& shape) {
    return to_dtype(index_tensor(values, shape), DType::Bool);
}
}  // namespace

TEST_CASE("concat and stack place values and pass gradcheck, negative axes included") {
    Tensor a = rand64({2, 3, 4}, 1), b = rand64({2, 1, 4}, 2), c = rand64({2, 2, 4}, 3);
    Tensor joined = concat({a, b, c}, -2);
    CHECK(joined.shape() == Shape{2, 6, 4});
    CHECK(joined.at({1, 3, 2}) == b.at({1, 0, 2}));
    CHECK(joined.at({1, 5, 3}) == c.at({1, 1, 3}));
    auto fc = [](const std::vector<Tensor>& in) { return concat(in, 1); };
    CHECK_GRADCHECK(fc, (std::vector<Tensor>{a, b, c}));
    auto f0 = [](const std::vector<Tensor>& in) { return concat(in, 0); };
    CHECK_GRADCHECK(f0, (std::vector<Tensor>{rand64({1, 3}, 4), rand64({2, 3}, 5)}));

    Tensor p = rand64({2, 3}, 6), q = rand64({2, 3}, 7);
    for (std::int64_t axis : {0, 1, 2, -1, -3}) {
        CAPTURE(axis);
        Tensor s = stack({p, q}, axis);
        const std::int64_t a_norm = axis < 0 ? axis + 3 : axis;
        Shape expected{2, 3};
        expected.insert(expected.begin() + a_norm, 2);
        CHECK(s.shape() == expected);
        auto fs = [axis](const std::vector<Tensor>& in) { return stack(in, axis); };
        CHECK_GRADCHECK(fs, (std::vector<Tensor>{p, q}));
    }
    CHECK(stack({p, q}, 1).at({1, 1, 2}) == q.at({1, 2}));
    CHECK(stack({scalar(1.0), scalar(2.0)}, 0).at({1}) == 2.0);
    // Only the inputs that need a gradient get one.
    Tensor constant = tensor({1.0, 2.0, 3.0}, {1, 3}, {.dtype = DType::Float64});
    p.zero_grad();
    sum(concat({p, constant}, 0)).backward();
    CHECK(p.grad().at({1, 2}) == 1.0);
    CHECK_FALSE(constant.grad().defined());
    // Int64 and bool tensors join too.
    CHECK(concat({index_tensor({1, 2}, {2}), index_tensor({3}, {1})}, 0).at({2}) == 3.0);
}

TEST_CASE("narrow and slice copy a range and pass gradcheck") {
    Tensor x = rand64({3, 5, 2}, 8);
    Tensor n = narrow(x, 1, 1, 3);
    CHECK(n.shape() == Shape{3, 3, 2});
    CHECK(n.at({2, 0, 1}) == x.at({2, 1, 1}));
    CHECK(narrow(x, -2, -2, 2).at({0, 0, 0}) == x.at({0, 3, 0}));
    auto fn = [](const std::vector<Tensor>& in) { return narrow(in[0], -2, 2, 2); };
    CHECK_GRADCHECK(fn, std::vector<Tensor>{x});
    auto fl = [](const std::vector<Tensor>& in) { return narrow(in[0], 2, 1, 1); };
    CHECK_GRADCHECK(fl, std::vector<Tensor>{x});
    // Python-style clamping.
    CHECK(slice(x, 1, -2, 100).shape() == Shape{3, 2, 2});
    CHECK(slice(x, 1, 4, 2).shape() == Shape{3, 0, 2});
    CHECK(slice(x, 0, -100, 1).shape() == Shape{1, 5, 2});
    CHECK(slice(x, 1, 1, -1).at({0, 2, 1}) == x.at({0, 3, 1}));
    auto fs = [](const std::vector<Tensor>& in) { return slice(in[0], 1, 1, -1); };
    CHECK_GRADCHECK(fs, std::vector<Tensor>{x});
}

TEST_CASE("index_select picks rows along any axis, backward adds for repeated indices") {
    Tensor x = rand64({3, 4}, 9);
    Tensor index = index_tensor({2, 0, 2, 2}, {4});
    Tensor rows = index_select(x, 0, index);
    CHECK(rows.shape() == Shape{4, 4});
    CHECK(rows.at({0, 1}) == x.at({2, 1}));
    Tensor cols = index_select(x, -1, index_tensor({3, 3}, {2}));
    CHECK(cols.at({1, 1}) == x.at({1, 3}));
    sum(rows).backward();
    CHECK(x.grad().at({2, 0}) == 3.0);  // row 2 picked three times
    CHECK(x.grad().at({0, 3}) == 1.0);
    CHECK(x.grad().at({1, 3}) == 0.0);
    for (std::int64_t axis : {0, 1, -1}) {
        auto fn = [axis, &index](const std::vector<Tensor>& in) {
            return index_select(in[0], axis, axis == 0 ? index : index_tensor({1, 0, 1}, {3}));
        };
        CHECK_GRADCHECK(fn, std::vector<Tensor>{rand64({3, 4, 2}, 10)});
    }
}

TEST_CASE("gather follows PyTorch's indexing, backward scatter-adds repeated indices") {
    Tensor x = tensor({1, 2, 3, 4, 5, 6}, {2, 3}, {.dtype = DType::Float64, .requires_grad = true});
    Tensor idx = index_tensor({2, 2, 0, 1}, {2, 2});
    Tensor g1 = gather(x, 1, idx);  // out[i][j] = x[i][idx[i][j]]
    CHECK(g1.to_vector<double>() == std::vector<double>{3, 3, 4, 5});
    Tensor g0 = gather(x, 0, index_tensor({1, 0, 1}, {1, 3}));  // out[i][j] = x[idx[i][j]][j]
    CHECK(g0.to_vector<double>() == std::vector<double>{4, 2, 6});
    sum(g1).backward();
    CHECK(x.grad().to_vector<double>() == std::vector<double>{0, 0, 2, 1, 1, 0});
    Tensor y = rand64({3, 4, 2}, 11);
    Tensor i3 = index_tensor({0, 3, 3, 1, 2, 2, 0, 0, 1, 1, 3, 0}, {3, 2, 2});
    for (std::int64_t axis : {1, -2}) {
        auto fn = [axis, &i3](const std::vector<Tensor>& in) { return gather(in[0], axis, i3); };
        CHECK_GRADCHECK(fn, std::vector<Tensor>{y});
    }
    auto flast = [](const std::vector<Tensor>& in) {
        return gather(in[0], -1, index_tensor({1, 1, 0, 1, 0, 0}, {3, 1, 2}));
    };
    CHECK_GRADCHECK(flast, std::vector<Tensor>{y});
}

TEST_CASE("embedding looks up rows, backward adds into repeated ids") {
    Tensor weight = rand64({5, 3}, 12);
    Tensor ids = index_tensor({4, 1, 4, 4, 0, 1}, {2, 3});
    Tensor out = embedding(weight, ids);
    CHECK(out.shape() == Shape{2, 3, 3});
    CHECK(out.at({1, 0, 2}) == weight.at({4, 2}));
    sum(out).backward();
    CHECK(weight.grad().at({4, 0}) == 3.0);
    CHECK(weight.grad().at({1, 1}) == 2.0);
    CHECK(weight.grad().at({2, 2}) == 0.0);
    auto fn = [&ids](const std::vector<Tensor>& in) { return embedding(in[0], ids); };
    CHECK_GRADCHECK(fn, std::vector<Tensor>{weight});
    CHECK(embedding(weight, index_tensor({}, {0})).shape() == Shape{0, 3});
}

TEST_CASE("masked_fill with broadcast masks: values and gradcheck") {
    Tensor x = rand64({2, 3, 4}, 13);
    Tensor mask = bool_mask({1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 0, 1}, {3, 4});
    Tensor y = masked_fill(x, mask, -1e9);
    CHECK(y.at({1, 0, 0}) == -1e9);
    CHECK(y.at({1, 0, 1}) == x.at({1, 0, 1}));
    for (const Tensor& m : {mask, bool_mask({0, 1, 1, 0}, {4}), bool_mask({1, 0, 1}, {1, 3, 1})}) {
        auto fn = [m](const std::vector<Tensor>& in) { return masked_fill(in[0], m, 0.5); };
        CHECK_GRADCHECK(fn, std::vector<Tensor>{x});
    }
    sum(masked_fill(x, mask, 3.0)).backward();
    CHECK(x.grad().at({0, 0, 0}) == 0.0);
    CHECK(x.grad().at({0, 0, 1}) == 1.0);
    CHECK(masked_fill(index_tensor({1, 2}, {2}), bool_mask({0, 1}, {2}), 7).at({1}) == 7.0);
}

TEST_CASE("where chooses elementwise with all three operands broadcasting") {
    Tensor cond = bool_mask({1, 0, 1}, {3});
    Tensor a = rand64({2, 3}, 14), b = rand64({2, 1}, 15);
    Tensor y = where(cond, a, b);
    CHECK(y.shape() == Shape{2, 3});
    CHECK(y.at({1, 0}) == a.at({1, 0}));
    CHECK(y.at({1, 1}) == b.at({1, 0}));
    auto fn = [&cond](const std::vector<Tensor>& in) { return where(cond, in[0], in[1]); };
    CHECK_GRADCHECK(fn, (std::vector<Tensor>{a, b}));
    auto fn2 = [](const std::vector<Tensor>& in) {
        return where(bool_mask({1, 0, 0, 1}, {2, 1, 2}), in[0], in[1]);
    };
    CHECK_GRADCHECK(fn2, (std::vector<Tensor>{rand64({3, 1}, 16), rand64({}, 17)}));
    a.zero_grad();
    b.zero_grad();
    sum(where(cond, a, b)).backward();
    CHECK(b.grad().at({0, 0}) == 1.0);  // one of three columns takes b
    CHECK(a.grad().at({0, 1}) == 0.0);
}

TEST_CASE("triu and tril keep a triangle of the last two dimensions") {
    const Tensor x = rand64({2, 3, 4}, 21);
    const Tensor up = triu(x, 1), low = tril(x, -1);
    CHECK(up.shape() == x.shape());
    CHECK(up.at({1, 0, 1}) == x.at({1, 0, 1}));
    CHECK(up.at({1, 1, 1}) == 0.0);
    CHECK(low.at({0, 2, 1}) == x.at({0, 2, 1}));
    CHECK(low.at({0, 1, 1}) == 0.0);
    // triu(d) + tril(d - 1) rebuilds x for any offset
    for (std::int64_t d : {-4, -1, 0, 2, 6})
        CHECK((triu(x, d) + tril(x, d - 1)).to_vector<double>() == x.to_vector<double>());
    CHECK(triu(index_tensor({1, 2, 3, 4}, {2, 2})).to_vector<std::int64_t>() ==
          std::vector<std::int64_t>{1, 2, 0, 4});
    for (std::int64_t d : {0, 1, -2}) {
        CHECK_GRADCHECK([d](const std::vector<Tensor>& in) { return triu(in[0], d); },
                        std::vector<Tensor>{x});
        CHECK_GRADCHECK([d](const std::vector<Tensor>& in) { return tril(in[0], d); },
                        std::vector<Tensor>{x});
    }
    CHECK(triu(zeros({0, 3})).shape() == Shape{0, 3});
    CHECK_THROWS_WITH_AS(triu(zeros({3})), doctest::Contains("triu: expected at least 2 dimensions"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(tril(scalar(1.0)), doctest::Contains("tril"), ShapeError);
}

TEST_CASE("index, slice with a step and select read like Python's indexing") {
    using namespace attograd::indexing;
    const Tensor x = rand64({3, 4, 5}, 31);
    const Tensor row = x.index({1});
    CHECK(row.shape() == Shape{4, 5});
    CHECK(row.at({2, 3}) == x.at({1, 2, 3}));
    const Tensor mixed = x.index({-1, Slice(1, None), Slice(None, None, 2)});  // x[-1, 1:, ::2]
    CHECK(mixed.shape() == Shape{3, 3});
    CHECK(mixed.at({0, 1}) == x.at({2, 1, 2}));
    CHECK(mixed.at({2, 2}) == x.at({2, 3, 4}));
    const Tensor last = index(x, {Ellipsis, -1});  // x[..., -1]
    CHECK(last.shape() == Shape{3, 4});
    CHECK(last.at({1, 2}) == x.at({1, 2, 4}));
    CHECK(x.index({All, Ellipsis, 0}).shape() == Shape{3, 4});
    CHECK(x.index({Slice(5, 9)}).shape() == Shape{0, 4, 5});  // clamped, empty
    CHECK(x.index({}).shape() == x.shape());
    CHECK(select(x, 2, -5).at({0, 0}) == x.at({0, 0, 0}));
    const Tensor strided = slice(x, 1, 0, 4, 3);
    CHECK(strided.shape() == Shape{3, 2, 5});
    CHECK(strided.at({0, 1, 0}) == x.at({0, 3, 0}));
    CHECK_GRADCHECK(
        [](const std::vector<Tensor>& in) {
            return in[0].index({1, Slice(None, None, 2), Slice(-3, None)});
        },
        std::vector<Tensor>{x});
    CHECK_GRADCHECK(
        [](const std::vector<Tensor>& in) {
            return select(in[0], 0, 2) * slice(in[0], 0, 0, 3, 2).index({1});
        },
        std::vector<Tensor>{x});
    CHECK_THROWS_WITH_AS(x.index({3}), doctest::Contains("index: index 3 is out of range for dimension 0"),
                         IndexError);
    CHECK_THROWS_WITH_AS(x.index({0, 0, 0, 0}), doctest::Contains("index: 4 indices for a tensor of rank 3"),
                         IndexError);
    CHECK_THROWS_WITH_AS(x.index({Ellipsis, Ellipsis}), doctest::Contains("at most one Ellipsis"),
                         IndexError);
    CHECK_THROWS_WITH_AS(x.index({Slice(0, 2, 0)}), doctest::Contains("step must be positive"), ValueError);
    CHECK_THROWS_WITH_AS(slice(x, 0, 0, 2, -1), doctest::Contains("slice: step must be positive"),
                         ValueError);
    CHECK_THROWS_WITH_AS(select(x, 1, 4), doctest::Contains("select: index 4 is out of range"), IndexError);
    CHECK_THROWS_WITH_AS(select(scalar(1.0), 0, 0), doctest::Contains("select"), ShapeError);
}

TEST_CASE("index with int64 tensors gathers as PyTorch's advanced indexing, backward scatter-adds") {
    using namespace attograd::indexing;
    const Tensor x = rand64({4, 5, 3}, 41);
    const Tensor idx = index_tensor({3, 0, -1, 3}, {4});
    // x[arange(B), idx]: row b is x[b, idx[b]] (a negative index counts from the end).
    const Tensor picked = x.index({arange(4), idx});
    REQUIRE(picked.shape() == Shape{4, 3});
    CHECK(picked.at({0, 2}) == x.at({0, 3, 2}));
    CHECK(picked.at({2, 1}) == x.at({2, 4, 1}));
    // Adjacent index tensors keep their place; a 2-D index brings its shape there.
    CHECK(x.index({All, index_tensor({0, 2, 2, 2}, {2, 2})}).shape() == Shape{4, 2, 2, 3});
    // Separated by a slice, the index shape comes first.
    const Tensor separated = x.index({index_tensor({2, 0}, {2}), All, index_tensor({1, 2}, {2})});
    REQUIRE(separated.shape() == Shape{2, 5});
    CHECK(separated.at({0, 4}) == x.at({2, 4, 1}));
    CHECK(separated.at({1, 3}) == x.at({0, 3, 2}));
    // An integer selects first, as in PyTorch (NumPy would give [2, 5] here).
    CHECK(x.index({1, All, index_tensor({2, 0}, {2})}).shape() == Shape{5, 2});
    // Index tensors broadcast together: [3, 1] with [2] -> [3, 2].
    const Tensor grid = x.index({All, index_tensor({1, 0, 2}, {3, 1}), index_tensor({0, 2}, {2})});
    REQUIRE(grid.shape() == Shape{4, 3, 2});
    CHECK(grid.at({3, 2, 1}) == x.at({3, 2, 2}));
    // Repeated picks add their gradients: x[b, 3] for b = 0 and 3 once each, a float64 gradcheck.
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
            return in[0].index({arange(4), idx});
        },
        std::vector<Tensor>{x});
    const Tensor repeated = index_tensor({1, 1, 1}, {3});
    CHECK_GRADCHECK(
        [&](const std::vector<Tensor>& in) {
            return in[0].index({Ellipsis, repeated});
        },
        std::vector<Tensor>{x});
    Tensor leaf = rand64({3, 2}, 5);
    sum(leaf.index({repeated})).backward();
    CHECK(leaf.grad().at({1, 0}) == 3.0);
    CHECK(leaf.grad().at({0, 0}) == 0.0);

    CHECK_THROWS_WITH_AS(x.index({arange(4), index_tensor({5, 0, 0, 0}, {4})}),
                         doctest::Contains("index: index 5 is out of range for dimension 1 of size 5"),
                         IndexError);
    CHECK_THROWS_WITH_AS(x.index({index_tensor({-5}, {1})}),
                         doctest::Contains("index: index -5 is out of range for dimension 0 of size 4"),
                         IndexError);
    CHECK_THROWS_WITH_AS(x.index({arange(4), arange(3)}),
                         doctest::Contains("index: shapes [4] and [3] do not broadcast"), ShapeError);
    CHECK_THROWS_WITH_AS(x.index({tensor({0.0}, {1})}),
                         doctest::Contains("index: an index tensor must be int64"), DTypeError);
    CHECK_THROWS_WITH_AS(x.index({arange(4), arange(4), arange(4), arange(4)}),
                         doctest::Contains("index: 4 indices for a tensor of rank 3"), IndexError);
}
