// linear (PyTorch's F.linear): values against matmul, gradcheck, edge shapes and bad input.
#include "fixtures.hpp"
#include "helpers.hpp"

using namespace attograd;
using testing::max_abs_diff;
using testing::rand64;
using Inputs = std::vector<Tensor>;

TEST_CASE("linear equals x W^T + b for inputs of rank 1 to 4, in float32 and float64") {
    for (DType dtype : {DType::Float32, DType::Float64}) {
        Generator gen(1);
        const Tensor w = randn({5, 4}, gen, {.dtype = dtype});
        const Tensor b = randn({5}, gen, {.dtype = dtype});
        for (const Shape& shape : {Shape{4}, Shape{3, 4}, Shape{2, 3, 4}, Shape{2, 1, 3, 4}}) {
            const Tensor x = randn(shape, gen, {.dtype = dtype});
            const Tensor wt = transpose(w, 0, 1);
            const Tensor expected =
                shape.size() == 1 ? reshape(matmul(reshape(x, {1, 4}), wt), {5}) + b : matmul(x, wt) + b;
            Shape out_shape = shape;
            out_shape.back() = 5;
            CHECK(linear(x, w, b).shape() == out_shape);
            CHECK(max_abs_diff(linear(x, w, b), expected) < (dtype == DType::Float32 ? 1e-5 : 1e-13));
            CHECK(max_abs_diff(linear(x, w), expected - b) < (dtype == DType::Float32 ? 1e-5 : 1e-13));
        }
    }
}

TEST_CASE("linear passes gradcheck for x, weight and bias") {
    const Tensor w = rand64({5, 4}, 2), b = rand64({5}, 3);
    for (const Shape& shape : {Shape{4}, Shape{3, 4}, Shape{2, 3, 4}}) {
        auto with_bias = [](const Inputs& in) { return linear(in[0], in[1], in[2]); };
        CHECK_GRADCHECK(with_bias, (Inputs{rand64(shape, 4), w, b}));
        auto without_bias = [](const Inputs& in) { return linear(in[0], in[1]); };
        CHECK_GRADCHECK(without_bias, (Inputs{rand64(shape, 5), w}));
    }
    // Only the weight needs a gradient (x is data).
    auto weight_only = [](const Inputs& in) { return linear(in[0], in[1], in[2]); };
    CHECK_GRADCHECK(weight_only, (Inputs{rand64({3, 4}, 6).detach(), w, b.detach()}));
}

TEST_CASE("large products (row blocks over threads, bias added after each block) equal one row at a time") {
    // [1000, 64] x [64, 192]^T is far above the threading threshold: the rows are split into
    // blocks handed out to threads; a single row stays on one thread. Each block adds the bias
    // once its product is written, so a bias of 0 gives exactly the product without bias, and
    // any bias exactly matmul(x, w^T) + b, as PyTorch's unfused form rounds (on LIBXSMM and on
    // Eigen's blocked GEMM, which a product of this size takes).
    Generator gen(21);
    const Tensor x = randn({1000, 64}, gen), w = randn({192, 64}, gen), b = randn({192}, gen);
    const Tensor y = linear(x, w, b), y_no_bias = linear(x, w), y_zero_bias = linear(x, w, zeros({192}));
    CHECK(y_zero_bias.to_vector<float>() == y_no_bias.to_vector<float>());
    CHECK(y.to_vector<float>() == (matmul(x, transpose(w, 0, 1)) + b).to_vector<float>());
    for (const std::int64_t row :
         {0, 49, 50, 99, 100, 500, 999}) {  // LIBXSMM's block edges (blocks of 50 rows; Eigen's: 125)
        CAPTURE(row);
        const Tensor piece = narrow(x, 0, row, 1);
        CHECK(max_abs_diff(narrow(y, 0, row, 1), linear(piece, w, b)) < 1e-5);
        CHECK(max_abs_diff(narrow(y_no_bias, 0, row, 1), matmul(piece, transpose(w, 0, 1))) < 1e-5);
    }
    // And in float64 against the sum written out.
    const Tensor x64 = rand64({600, 64}, 22), w64 = rand64({128, 64}, 23), b64 = rand64({128}, 24);
    const Tensor expected = matmul(x64, transpose(w64, 0, 1)) + b64;
    CHECK(max_abs_diff(linear(x64, w64, b64), expected) < 1e-12);
}

TEST_CASE("large products' gradients (op(B) in panels, A^T copied in strips) equal the sums written out") {
    // dX [600, 300] = dY W, dW [260, 300] = dY^T X and db: row blocks over threads, 260 and 300
    // columns leave partial 128-column panels, 260 and 600 rows of depth partial depth blocks
    const Tensor x = rand64({600, 300}, 25).requires_grad_(true),
                 w = rand64({260, 300}, 26).requires_grad_(true), b = rand64({260}, 28).requires_grad_(true);
    const Tensor r = rand64({600, 260}, 27);
    sum(linear(x, w, b) * r).backward();
    const auto xs = x.to_vector<double>(), ws = w.to_vector<double>(), rs = r.to_vector<double>();
    // the largest difference between got [rows, cols] and sum_p f(row, p, col) in long double
    const auto worst = [](const std::vector<double>& got, std::size_t rows, std::size_t cols,
                          std::size_t depth, const auto& term) {
        double diff = 0;
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t c = 0; c < cols; ++c) {
                long double acc = 0;
                for (std::size_t p = 0; p < depth; ++p) acc += term(i, p, c);
                diff = std::max(diff, std::abs(got[i * cols + c] - static_cast<double>(acc)));
            }
        return diff;
    };
    const double worst_dx =
        worst(x.grad().to_vector<double>(), 600, 300, 260, [&](std::size_t i, std::size_t o, std::size_t c) {
            return static_cast<long double>(rs[i * 260 + o]) * ws[o * 300 + c];
        });
    const double worst_dw =
        worst(w.grad().to_vector<double>(), 260, 300, 600, [&](std::size_t o, std::size_t i, std::size_t c) {
            return static_cast<long double>(rs[i * 260 + o]) * xs[i * 300 + c];
        });
    // db = the column sums of dY = r: 600 rows, nine blocks of 64 and a partial one
    const double worst_db = worst(
        b.grad().to_vector<double>(), 1, 260, 600,
        [&](std::size_t, std::size_t i, std::size_t o) { return static_cast<long double>(rs[i * 260 + o]); });
    CHECK(worst_dx < 1e-12);
    CHECK(worst_dw < 1e-12);
    CHECK(worst_db < 1e-12);
}

TEST_CASE("linear records one tape entry and handles empty batches and zero in_features") {
    Tensor w = rand64({2, 3}, 7), b = rand64({2}, 8);
    const std::size_t before = autograd::tape_size();
    const Tensor y = linear(rand64({4, 3}, 9), w, b);
    CHECK(autograd::tape_size() == before + 1);
    sum(y).backward();
    CHECK(autograd::tape_size() == 0);

    w.zero_grad();
    b.zero_grad();
    const Tensor empty_batch = linear(zeros({0, 3}, {.dtype = DType::Float64}), w, b);
    CHECK(empty_batch.shape() == Shape{0, 2});
    sum(empty_batch).backward();
    CHECK(max_abs_diff(w.grad(), zeros({2, 3}, {.dtype = DType::Float64})) == 0);
    CHECK(max_abs_diff(b.grad(), zeros({2}, {.dtype = DType::Float64})) == 0);

    // in_features 0: y is the bias on every row.
    const Tensor y0 =
        linear(zeros({3, 0}, {.dtype = DType::Float64}), zeros({2, 0}, {.dtype = DType::Float64}), b);
    CHECK(y0.shape() == Shape{3, 2});
    CHECK(y0.at({2, 1}) == b.at({1}));
}

TEST_CASE("linear rejects bad shapes and dtypes, naming the op and the shapes") {
    const Tensor x = zeros({2, 3}), w = zeros({4, 3}), b = zeros({4});
    CHECK_THROWS_WITH_AS(linear(zeros({2, 5}), w, b),
                         doctest::Contains("linear: x [2, 5] does not match weight [4, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(linear(x, zeros({3}), b),
                         doctest::Contains("linear: weight must be [out_features, in_features], got [3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(linear(scalar(1.0), w, b),
                         doctest::Contains("linear: x must have at least one dimension"), ShapeError);
    CHECK_THROWS_WITH_AS(linear(x, w, zeros({3})),
                         doctest::Contains("linear: bias must be [4] to match weight [4, 3], got [3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(linear(x, w, zeros({1, 4})), doctest::Contains("linear: bias"), ShapeError);
    CHECK_THROWS_WITH_AS(linear(zeros({2, 3}, {.dtype = DType::Float64}), w, b),
                         doctest::Contains("linear: dtypes differ"), DTypeError);
    CHECK_THROWS_WITH_AS(linear(x, w, zeros({4}, {.dtype = DType::Float64})),
                         doctest::Contains("linear: dtypes differ"), DTypeError);
    CHECK_THROWS_WITH_AS(
        linear(zeros({2, 3}, {.dtype = DType::Int64}), zeros({4, 3}, {.dtype = DType::Int64})),
        doctest::Contains("linear: expected a float32 or float64 tensor, got int64"), DTypeError);
    CHECK_THROWS_WITH_AS(linear(Tensor{}, w), doctest::Contains("linear: undefined"), ValueError);
}
