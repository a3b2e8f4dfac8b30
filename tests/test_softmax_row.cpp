// The packet softmax rows of the fused attention kernels (core/detail/softmax_row.hpp) against the
// definition: every length around the SIMD width, masks, -inf keys, all-masked rows, NaN.
#include "core/detail/softmax_row.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

using attograd::detail::softmax_rows;
using attograd::detail::softmax_rows_backward;

namespace {

// softmax(scale * s + m) by the definition in long double; -inf keys get 0, an all -inf row 0.
template <class T>
std::vector<T> reference(const std::vector<T>& s, T scale, const std::vector<T>& m) {
    const long double ninf = -std::numeric_limits<long double>::infinity();
    std::vector<long double> x(s.size());
    long double top = ninf;
    for (std::size_t k = 0; k < s.size(); ++k) {
        x[k] = static_cast<long double>(s[k]) * scale + (m.empty() ? 0.0L : static_cast<long double>(m[k]));
        top = std::max(top, x[k]);
    }
    std::vector<T> out(s.size(), T(0));
    if (top == ninf) return out;
    long double sum = 0;
    for (const long double v : x) sum += v == ninf ? 0.0L : std::exp(v - top);
    for (std::size_t k = 0; k < s.size(); ++k)
        out[k] = x[k] == ninf ? T(0) : static_cast<T>(std::exp(x[k] - top) / sum);
    return out;
}

template <class T>
void check_lengths(double tol) {
    std::mt19937 rng(7);
    std::normal_distribution<double> normal(0.0, 3.0);
    const T ninf = -std::numeric_limits<T>::infinity();
    for (std::int64_t n = 1; n <= 70; ++n)
        for (int mask_kind = 0; mask_kind < 3; ++mask_kind) {  // none, per key with -inf, one value
            std::vector<T> s(static_cast<std::size_t>(n)), m;
            for (auto& v : s) v = static_cast<T>(normal(rng));
            if (mask_kind == 1) {
                m.resize(s.size());
                for (std::size_t k = 0; k < m.size(); ++k)
                    m[k] = k % 3 == 1 ? ninf : static_cast<T>(normal(rng));
            }
            if (mask_kind == 2) m.assign(s.size(), static_cast<T>(1.5));
            const T scale = static_cast<T>(n % 2 == 0 ? 0.25 : -1.5);
            const auto want = reference(s, scale, m);
            std::vector<T> got = s;
            softmax_rows<T>(got.data(), 1, n, scale, m.empty() ? nullptr : m.data(), 0,
                            mask_kind == 1 ? 1 : 0);
            double worst = 0;
            bool zeros_exact = true;
            for (std::size_t k = 0; k < got.size(); ++k) {
                worst = std::max(worst, std::abs(static_cast<double>(got[k]) - static_cast<double>(want[k])));
                if (want[k] == T(0)) zeros_exact = zeros_exact && got[k] == T(0);
            }
            INFO("n ", n, " mask kind ", mask_kind);
            CHECK(worst < tol);
            CHECK(zeros_exact);
        }
}

template <class T>
void check_backward(double tol) {
    std::mt19937 rng(8);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (std::int64_t n = 1; n <= 40; ++n) {
        std::vector<T> p(static_cast<std::size_t>(n)), dp(p.size());
        for (auto& v : p) v = static_cast<T>(u(rng));
        for (auto& v : dp) v = static_cast<T>(u(rng));
        const T scale = static_cast<T>(0.5);
        long double dot = 0;
        for (std::size_t k = 0; k < p.size(); ++k) dot += static_cast<long double>(dp[k]) * p[k];
        std::vector<T> got = dp;
        softmax_rows_backward<T>(p.data(), got.data(), 1, n, scale);
        double worst = 0;
        for (std::size_t k = 0; k < p.size(); ++k) {
            const long double want = static_cast<long double>(scale) * p[k] * (dp[k] - dot);
            worst = std::max(worst, static_cast<double>(std::abs(static_cast<long double>(got[k]) - want)));
        }
        INFO("n ", n);
        CHECK(worst < tol);
    }
}

}  // namespace

TEST_CASE("softmax_rows matches the definition at every length around the SIMD width") {
    check_lengths<float>(2e-6);
    check_lengths<double>(1e-14);
}

TEST_CASE("softmax_rows gives an all-masked row zeros and a row with a NaN NaN") {
    const double ninf = -std::numeric_limits<double>::infinity();
    for (const std::int64_t n : {3, 8, 19}) {
        std::vector<double> row(static_cast<std::size_t>(n), 1.0), mask(row.size(), ninf);
        softmax_rows<double>(row.data(), 1, n, 1.0, mask.data(), 0, 1);
        CHECK(row == std::vector<double>(row.size(), 0.0));
        std::vector<double> all_inf(row.size(), ninf);
        softmax_rows<double>(all_inf.data(), 1, n, 2.0, nullptr, 0, 0);
        CHECK(all_inf == std::vector<double>(row.size(), 0.0));
        std::vector<double> with_nan(row.size(), 0.5);
        with_nan[static_cast<std::size_t>(n / 2)] = std::numeric_limits<double>::quiet_NaN();
        softmax_rows<double>(with_nan.data(), 1, n, 1.0, nullptr, 0, 0);
        bool all_nan = true;
        for (const double v : with_nan) all_nan = all_nan && std::isnan(v);
        CHECK(all_nan);
    }
}

TEST_CASE("softmax_rows gives keys behind a finite mask of -1e4 exactly 0, as PyTorch does") {
    // the exp of scores ~1e4 below the row's max underflows to 0 in float32 and float64
    const auto check = [](auto zero) {
        using T = decltype(zero);
        for (const std::int64_t n : {5, 32, 256, 259}) {  // one-packet, register and long rows
            std::vector<T> rows(static_cast<std::size_t>(2 * n)), mask(static_cast<std::size_t>(n), T(0));
            for (std::size_t k = 0; k < rows.size(); ++k) rows[k] = static_cast<T>(k % 7) * T(0.25);
            for (std::int64_t k = 1; k < n; k += 2) mask[static_cast<std::size_t>(k)] = T(-1e4);
            softmax_rows<T>(rows.data(), 2, n, T(1), mask.data(), 0, 1);
            for (std::int64_t r = 0; r < 2; ++r)
                for (std::int64_t k = 1; k < n; k += 2) {
                    INFO("n ", n, " row ", r, " key ", k);
                    CHECK(rows[static_cast<std::size_t>(r * n + k)] == T(0));
                }
        }
    };
    check(float{});
    check(double{});
}

TEST_CASE("softmax_rows_backward matches scale p (dp - dp . p)") {
    check_backward<float>(1e-6);
    check_backward<double>(1e-15);
}

TEST_CASE("softmax_rows_backward gives rows in a group the bits of rows done one by one") {
    const std::int64_t rows = 7;
    for (const std::int64_t n : {5, 16, 32, 33, 70}) {
        std::vector<float> p(static_cast<std::size_t>(rows * n)), dp(p.size());
        for (std::size_t i = 0; i < p.size(); ++i) {
            p[i] = static_cast<float>(std::sin(static_cast<double>(i)));
            dp[i] = static_cast<float>(std::cos(static_cast<double>(3 * i)));
        }
        std::vector<float> block = dp, one_by_one = dp;
        softmax_rows_backward<float>(p.data(), block.data(), rows, n, 0.3f);
        for (std::int64_t r = 0; r < rows; ++r)
            softmax_rows_backward<float>(p.data() + r * n, one_by_one.data() + r * n, 1, n, 0.3f);
        INFO("n ", n);
        CHECK(block == one_by_one);
    }
}

TEST_CASE("softmax_rows takes each row's mask mask_row_stride apart, in groups of rows or one by one") {
    // 7 rows: short rows go through in groups of 4 and then singly; each must equal its own call.
    const std::int64_t rows = 7;
    for (const std::int64_t n : {5, 20, 32, 70}) {
        const std::int64_t mask_row_stride = n + 3;
        std::vector<double> block(static_cast<std::size_t>(rows * n)),
            mask(static_cast<std::size_t>(rows * mask_row_stride));
        for (std::size_t i = 0; i < block.size(); ++i) block[i] = std::sin(static_cast<double>(i));
        for (std::size_t i = 0; i < mask.size(); ++i) mask[i] = std::cos(static_cast<double>(i));
        std::vector<double> one_by_one = block;
        softmax_rows<double>(block.data(), rows, n, 0.7, mask.data(), mask_row_stride, 1);
        for (std::int64_t r = 0; r < rows; ++r)
            softmax_rows<double>(one_by_one.data() + r * n, 1, n, 0.7, mask.data() + r * mask_row_stride, 0,
                                 1);
        INFO("n ", n);
        CHECK(block == one_by_one);
        // and row 5 is the softmax of its scores with its own mask row
        std::vector<double> scores(static_cast<std::size_t>(n)), mask5(static_cast<std::size_t>(n));
        for (std::int64_t k = 0; k < n; ++k) {
            scores[static_cast<std::size_t>(k)] = std::sin(static_cast<double>(5 * n + k));
            mask5[static_cast<std::size_t>(k)] = std::cos(static_cast<double>(5 * mask_row_stride + k));
        }
        const auto want = reference(scores, 0.7, mask5);
        double worst = 0;
        for (std::int64_t k = 0; k < n; ++k)
            worst = std::max(worst, std::abs(block[static_cast<std::size_t>(5 * n + k)] -
                                             want[static_cast<std::size_t>(k)]));
        CHECK(worst < 1e-14);
    }
}
