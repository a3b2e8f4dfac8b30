// Losses: cross_entropy (reductions, ignore_index, label smoothing, [N, C, d...], huge logits),
// nll_loss and mse_loss; gradcheck for every option.
#include "helpers.hpp"

#include <cmath>
#include <limits>
#include <vector>

using namespace attograd;
using testing::rand64;

TEST_CASE("cross_entropy passes gradcheck for every reduction, smoothing and ignore_index") {
    struct Layout {
        Shape logits;
        Tensor targets;
    };
    const std::vector<Layout> layouts = {
        {{4, 5}, index_tensor({3, -100, 0, 4}, {4})},
        {{2, 3, 2, 2}, index_tensor({0, 2, -100, 1, 1, 1, 0, 2}, {2, 2, 2})},
        {{5}, index_tensor({2}, {})},
    };
    for (const auto& [shape, targets] : layouts) {
        Tensor logits = rand64(shape, 21);
        for (Reduction reduction : {Reduction::Mean, Reduction::Sum, Reduction::None})
            for (double smoothing : {0.0, 0.3}) {
                CAPTURE(shape);
                CAPTURE(static_cast<int>(reduction));
                CAPTURE(smoothing);
                const CrossEntropyOptions options{.reduction = reduction, .label_smoothing = smoothing};
                auto fn = [&](const std::vector<Tensor>& in) {
                    return cross_entropy(in[0], targets, options);
                };
                CHECK_GRADCHECK(fn, std::vector<Tensor>{logits});
            }
    }
}

TEST_CASE("cross_entropy without smoothing equals nll_loss of log_softmax") {
    Tensor logits = rand64({2, 4, 3}, 22);
    Tensor targets = index_tensor({1, 3, 0, -100, 2, 2}, {2, 3});
    for (Reduction reduction : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
        const CrossEntropyOptions options{.reduction = reduction};
        Tensor a = cross_entropy(logits, targets, options);
        Tensor b = nll_loss(log_softmax(logits, 1), targets, options);
        REQUIRE(a.shape() == b.shape());
        const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
        for (std::size_t i = 0; i < va.size(); ++i) CHECK(va[i] == doctest::Approx(vb[i]).epsilon(1e-14));
    }
    Tensor none = cross_entropy(logits, targets, {.reduction = Reduction::None});
    CHECK(none.shape() == Shape{2, 3});
    CHECK(none.at({1, 0}) == 0.0);  // ignored
    CHECK(cross_entropy(logits, targets).item() == doctest::Approx(sum(none).item() / 5).epsilon(1e-14));
}

TEST_CASE("label smoothing follows PyTorch's formula, ignored targets contributing nothing") {
    // loss_i = (1 - eps) (-log p[i, y_i]) + eps / C * sum_c (-log p[i, c]); mean over kept targets.
    Tensor logits = rand64({3, 4}, 23);
    Tensor targets = index_tensor({2, 1, 1}, {3});
    const double eps = 0.25;
    // ignore_index 1 is a real class here: only row 0 counts.
    Tensor loss = cross_entropy(logits, targets, {.ignore_index = 1, .label_smoothing = eps});
    Tensor lp = log_softmax(logits, 1);
    double smooth = 0.0;
    for (std::int64_t c = 0; c < 4; ++c) smooth -= lp.at({0, c});
    const double expected = (1 - eps) * -lp.at({0, 2}) + eps / 4 * smooth;
    CHECK(loss.item() == doctest::Approx(expected).epsilon(1e-14));
    // Full smoothing ignores the target entirely.
    Tensor full = cross_entropy(logits, index_tensor({0, 0, 0}, {3}), {.label_smoothing = 1.0});
    Tensor other = cross_entropy(logits, index_tensor({3, 1, 2}, {3}), {.label_smoothing = 1.0});
    CHECK(full.item() == doctest::Approx(other.item()).epsilon(1e-14));
}

TEST_CASE("cross_entropy is exact and finite for logits of magnitude 1e8 and very negative logits") {
    for (DType dtype : {DType::Float64, DType::Float32}) {
        CAPTURE(dtype);
        Tensor logits = tensor({1e8, 0.0, -1e8, -1e8, -1e8, -1e8, -1e8, 1e8, 0.0}, {3, 3},
                               {.dtype = dtype, .requires_grad = true});
        Tensor targets = index_tensor({1, 0, 1}, {3});
        Tensor none = cross_entropy(logits, targets, {.reduction = Reduction::None});
        CHECK(none.at({0}) == 1e8);
        CHECK(none.at({1}) == doctest::Approx(std::log(3.0)));
        CHECK(none.at({2}) == 0.0);
        Tensor loss = cross_entropy(logits, targets, {.label_smoothing = 0.1});
        CHECK(std::isfinite(loss.item()));
        loss.backward();
        CHECK(all_finite(logits.grad()));
        // Row 0: p = onehot(0), target 1: (p - 0.9 onehot(1) - 0.1 / 3) / 3.
        CHECK(logits.grad().at({0, 0}) == doctest::Approx((1.0 - 0.1 / 3) / 3));
        CHECK(logits.grad().at({0, 1}) == doctest::Approx((-0.9 - 0.1 / 3) / 3));
    }
}

TEST_CASE("cross_entropy over contiguous classes matches the strided path, packet edges and odd rows too") {
    // [N, C] takes the fused row pass (core/detail/cross_entropy_rows.hpp); the same rows as column 0 of
    // [N, C, 2] take the strided path (column 1's targets all ignored, so they add nothing).
    // Class counts around the packet widths, row counts around the row groups; a row with -inf
    // entries, an all -inf row (infinite loss) and a NaN row.
    for (DType dtype : {DType::Float64, DType::Float32})
        for (std::int64_t classes : {1, 3, 8, 16, 17, 50})
            for (std::int64_t rows : {1, 5, 33})
                for (double smoothing : {0.0, 0.2}) {
                    CAPTURE(dtype);
                    CAPTURE(classes);
                    CAPTURE(rows);
                    CAPTURE(smoothing);
                    const double inf = std::numeric_limits<double>::infinity();
                    std::vector<double> x = rand64({rows, classes}, 25).to_vector<double>();
                    std::vector<double> t(static_cast<std::size_t>(rows));
                    for (std::int64_t r = 0; r < rows; ++r)
                        t[static_cast<std::size_t>(r)] = static_cast<double>((r * 7) % classes);
                    if (rows > 3) {
                        t[1] = -100;                                      // ignored
                        x[static_cast<std::size_t>(2 * classes)] = -inf;  // one -inf entry
                        t[2] = classes > 1 ? 1 : 0;
                        for (std::int64_t c = 0; c < classes; ++c)
                            x[static_cast<std::size_t>(3 * classes + c)] = -inf;
                    }
                    if (rows > 4) x[static_cast<std::size_t>(4 * classes)] = std::nan("");
                    std::vector<double> wide(x.size() * 2, 0.5), wide_t(t.size() * 2, -100);
                    for (std::size_t i = 0; i < x.size(); ++i) wide[2 * i] = x[i];
                    for (std::size_t i = 0; i < t.size(); ++i) wide_t[2 * i] = t[i];
                    Tensor contiguous = tensor(x, {rows, classes}, {.dtype = dtype, .requires_grad = true});
                    Tensor strided =
                        tensor(wide, {rows, classes, 2}, {.dtype = dtype, .requires_grad = true});
                    const Tensor targets = tensor(t, {rows}, {.dtype = DType::Int64});
                    const Tensor wide_targets = tensor(wide_t, {rows, 2}, {.dtype = DType::Int64});
                    const double tol = dtype == DType::Float64 ? 1e-13 : 2e-6;
                    const auto same = [&](double a, double b) {
                        if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
                        if (std::isinf(a) || std::isinf(b)) return a == b;
                        return std::abs(a - b) <= tol * std::max(1.0, std::abs(b));
                    };
                    const Tensor per_row = cross_entropy(
                        contiguous, targets, {.reduction = Reduction::None, .label_smoothing = smoothing});
                    const Tensor per_column = cross_entropy(
                        strided, wide_targets, {.reduction = Reduction::None, .label_smoothing = smoothing});
                    for (std::int64_t r = 0; r < rows; ++r)
                        CHECK(same(per_row.at({r}), per_column.at({r, 0})));
                    cross_entropy(contiguous, targets, {.label_smoothing = smoothing}).backward();
                    cross_entropy(strided, wide_targets, {.label_smoothing = smoothing}).backward();
                    for (std::int64_t r = 0; r < rows; ++r)
                        for (std::int64_t c = 0; c < classes; ++c)
                            CHECK(same(contiguous.grad().at({r, c}), strided.grad().at({r, c, 0})));
                }
}

TEST_CASE("all-ignored targets give a zero loss with zero gradient (PyTorch gives NaN)") {
    Tensor logits = rand64({3, 4}, 24);
    Tensor targets = index_tensor({-100, -100, -100}, {3});
    for (double smoothing : {0.0, 0.2}) {
        logits.zero_grad();
        Tensor loss = cross_entropy(logits, targets, {.label_smoothing = smoothing});
        CHECK(loss.item() == 0.0);
        loss.backward();
        for (double g : logits.grad().to_vector<double>()) CHECK(g == 0.0);
    }
    CHECK(nll_loss(logits, targets).item() == 0.0);
    CHECK(cross_entropy(logits, targets, {.reduction = Reduction::Sum}).item() == 0.0);
    // An empty batch is the same case.
    CHECK(cross_entropy(zeros({0, 4}), index_tensor({}, {0})).item() == 0.0);
}

TEST_CASE("nll_loss picks -log_probs at the target and passes gradcheck") {
    Tensor lp = rand64({3, 4, 2}, 25);
    Tensor targets = index_tensor({3, 0, -100, 1, 2, 2}, {3, 2});
    Tensor none = nll_loss(lp, targets, {.reduction = Reduction::None});
    CHECK(none.at({0, 0}) == -lp.at({0, 3, 0}));
    CHECK(none.at({1, 0}) == 0.0);
    CHECK(nll_loss(lp, targets).item() == doctest::Approx(sum(none).item() / 5).epsilon(1e-14));
    for (Reduction reduction : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
        auto fn = [&](const std::vector<Tensor>& in) {
            return nll_loss(in[0], targets, {.reduction = reduction});
        };
        CHECK_GRADCHECK(fn, std::vector<Tensor>{lp});
    }
}

TEST_CASE("mse_loss: values and gradcheck for both inputs and every reduction") {
    Tensor a = rand64({2, 3}, 26), b = rand64({2, 3}, 27);
    double expected = 0.0;
    for (std::int64_t i = 0; i < 2; ++i)
        for (std::int64_t j = 0; j < 3; ++j) expected += std::pow(a.at({i, j}) - b.at({i, j}), 2);
    CHECK(mse_loss(a, b).item() == doctest::Approx(expected / 6).epsilon(1e-14));
    CHECK(mse_loss(a, b, Reduction::Sum).item() == doctest::Approx(expected).epsilon(1e-14));
    CHECK(mse_loss(a, b, Reduction::None).shape() == Shape{2, 3});
    for (Reduction reduction : {Reduction::Mean, Reduction::Sum, Reduction::None}) {
        auto fn = [reduction](const std::vector<Tensor>& in) { return mse_loss(in[0], in[1], reduction); };
        CHECK_GRADCHECK(fn, (std::vector<Tensor>{a, b}));
    }
}
