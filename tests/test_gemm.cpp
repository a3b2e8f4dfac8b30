// The GEMM layer (core/detail/gemm.hpp): every transpose, strided operands, accumulation, block edges.
#include "core/detail/gemm.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using attograd::detail::gemm;

namespace {

// C = op(A) op(B) by the definition, in long double.
template <class T>
std::vector<T> reference(std::int64_t m, std::int64_t n, std::int64_t k, const std::vector<T>& a,
                         std::int64_t lda, bool ta, const std::vector<T>& b, std::int64_t ldb, bool tb) {
    std::vector<T> c(static_cast<std::size_t>(m * n));
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            long double acc = 0;
            for (std::int64_t p = 0; p < k; ++p) {
                const T x =
                    ta ? a[static_cast<std::size_t>(p * lda + i)] : a[static_cast<std::size_t>(i * lda + p)];
                const T y =
                    tb ? b[static_cast<std::size_t>(j * ldb + p)] : b[static_cast<std::size_t>(p * ldb + j)];
                acc += static_cast<long double>(x) * y;
            }
            c[static_cast<std::size_t>(i * n + j)] = static_cast<T>(acc);
        }
    return c;
}

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<T> v(n);
    for (auto& x : v) x = static_cast<T>(u(rng));
    return v;
}

// Checks C [m, n] (rows ldc apart) against expected [m, n] (+ before when accumulating) to
// tol * k, and that the padding columns n ... ldc were left as they were.
template <class T>
void check_result(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t ldc, const std::vector<T>& c,
                  const std::vector<T>& before, const std::vector<T>& expected, bool accumulate, double tol) {
    double worst = 0;
    bool padding_kept = true;
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            const auto at = static_cast<std::size_t>(i * ldc + j);
            const double want =
                expected[static_cast<std::size_t>(i * n + j)] + (accumulate ? before[at] : T(0));
            worst = std::max(worst, std::abs(static_cast<double>(c[at]) - want));
        }
        for (std::int64_t j = n; j < ldc; ++j)
            padding_kept = padding_kept && c[static_cast<std::size_t>(i * ldc + j)] ==
                                               before[static_cast<std::size_t>(i * ldc + j)];
    }
    CHECK(worst < tol * static_cast<double>(std::max<std::int64_t>(k, 1)));
    CHECK(padding_kept);
}

template <class T>
void check_shape(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, bool accumulate,
                 double tol) {
    // rows two elements longer than needed: the leading dimensions must be honoured
    const std::int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 2, ldc = n + 3;
    const auto a = random_values<T>(static_cast<std::size_t>((ta ? k : m) * lda), 1);
    const auto b = random_values<T>(static_cast<std::size_t>((tb ? n : k) * ldb), 2);
    auto c = random_values<T>(static_cast<std::size_t>(m * ldc), 3);
    const auto before = c;
    gemm<T>(m, n, k, a.data(), lda, ta, b.data(), ldb, tb, c.data(), ldc, accumulate);
    INFO("m ", m, " n ", n, " k ", k, " trans_a ", ta, " trans_b ", tb, " accumulate ", accumulate);
    check_result(m, n, k, ldc, c, before, reference(m, n, k, a, lda, ta, b, ldb, tb), accumulate, tol);
}

}  // namespace

TEST_CASE("gemm matches the definition for every transpose, with strides and accumulation") {
    const std::int64_t shapes[][3] = {
        {1, 1, 1},     {3, 5, 7},     {32, 32, 16}, {17, 9, 64},
        {300, 270, 5}, {64, 513, 33}, {40, 24, 600}};  // k beyond one LIBXSMM depth block
    for (const auto& s : shapes)
        for (int flags = 0; flags < 8; ++flags) {
            const bool ta = flags & 1, tb = flags & 2, acc = flags & 4;
            check_shape<double>(s[0], s[1], s[2], ta, tb, acc, 1e-15);
            check_shape<float>(s[0], s[1], s[2], ta, tb, acc, 1e-6);
        }
}

TEST_CASE("gemm with k = 0 writes zeros or leaves C unchanged when accumulating") {
    std::vector<double> c(6, 5.0);
    gemm<double>(2, 3, 0, nullptr, 1, false, nullptr, 3, false, c.data(), 3, true);
    CHECK(c == std::vector<double>(6, 5.0));
    gemm<double>(2, 3, 0, nullptr, 1, false, nullptr, 3, false, c.data(), 3, false);
    CHECK(c == std::vector<double>(6, 0.0));
}

TEST_CASE("gemm on LIBXSMM gives the rows of 40- and 256-column products the same bits in a row block") {
    // Only for some widths: with n = 40 or 256 a row block matches the whole product, with
    // n = 200 it may not (core/detail/gemm.hpp), which is why callers cut blocks by shape alone. Eigen's
    // GEMM sizes its cache blocks from all three sizes, so it promises this for no width.
    if (std::string(attograd::detail::gemm_backend()) != "libxsmm") return;
    const std::int64_t m = 300;
    for (const std::int64_t n : {40, 256})
        for (const std::int64_t k : {96, 700})  // 700: several depth blocks, the last one partial
            for (int flags = 0; flags < 4; ++flags) {
                const bool ta = flags & 1, tb = flags & 2;
                const auto a = random_values<float>(static_cast<std::size_t>(m * k), 4);
                const auto b = random_values<float>(static_cast<std::size_t>(k * n), 5);
                const std::int64_t lda = ta ? m : k, ldb = tb ? k : n;
                std::vector<float> whole(static_cast<std::size_t>(m * n)), split(whole.size());
                gemm<float>(m, n, k, a.data(), lda, ta, b.data(), ldb, tb, whole.data(), n, false);
                for (std::int64_t first : {std::int64_t{0}, std::int64_t{37}, std::int64_t{150}}) {
                    const std::int64_t last = first == 0 ? 37 : first == 37 ? 150 : m;
                    gemm<float>(last - first, n, k, ta ? a.data() + first : a.data() + first * lda, lda, ta,
                                b.data(), ldb, tb, split.data() + first * n, n, false);
                }
                INFO("n ", n, " k ", k, " trans_a ", ta, " trans_b ", tb);
                CHECK(whole == split);
            }
}

TEST_CASE("gemm_b_panels matches the definition with op(B) packed panel by panel, edges included") {
    // n = 129, 270: a partial last 128-column panel; k = 257, 600: a partial last depth block
    const std::int64_t shapes[][3] = {{3, 5, 7}, {300, 270, 600}, {5, 129, 257}, {64, 513, 33}};
    for (const auto& s : shapes)
        for (int flags = 0; flags < 8; ++flags) {
            const std::int64_t m = s[0], n = s[1], k = s[2];
            const bool ta = flags & 1, tb = flags & 2, acc = flags & 4;
            const auto check = [&]<class T>(T, double tol) {
                const std::int64_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
                const auto a = random_values<T>(static_cast<std::size_t>((ta ? k : m) * lda), 9);
                const auto b = random_values<T>(static_cast<std::size_t>((tb ? n : k) * ldb), 10);
                const auto before = random_values<T>(static_cast<std::size_t>(m * ldc), 11);
                std::vector<T> panels(static_cast<std::size_t>(k * n));
                // the panels are independent: packed last to first
                for (auto i = attograd::detail::b_panel_count(k, n) - 1; i >= 0; --i)
                    attograd::detail::pack_b_panel(k, n, b.data(), ldb, tb, panels.data(), i);
                auto c = before;
                attograd::detail::gemm_b_panels(m, n, k, a.data(), lda, ta, panels.data(), c.data(), ldc,
                                                acc);
                INFO("m ", m, " n ", n, " k ", k, " trans_a ", ta, " trans_b ", tb, " accumulate ", acc);
                check_result(m, n, k, ldc, c, before, reference(m, n, k, a, lda, ta, b, ldb, tb), acc, tol);
            };
            check(double{}, 1e-15);
            check(float{}, 1e-6);
        }
}

TEST_CASE("GemmKernel gives gemm()'s bits for every transpose and accumulation, in one block and more") {
    // {32, 32, 16} and {256, 32, 256}: one LIBXSMM block, called directly; {300, 20, 8}, {8, 20, 700}:
    // several blocks, run by gemm() itself. The same kernel on the same operands: equal bits.
    const std::int64_t shapes[][3] = {{32, 32, 16}, {256, 32, 256}, {3, 5, 7}, {300, 20, 8}, {8, 20, 700}};
    for (const auto& s : shapes)
        for (int flags = 0; flags < 8; ++flags) {
            const std::int64_t m = s[0], n = s[1], k = s[2];
            const bool ta = flags & 1, tb = flags & 2, acc = flags & 4;
            const std::int64_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
            const auto check = [&]<class T>(T) {
                const auto a = random_values<T>(static_cast<std::size_t>((ta ? k : m) * lda), 6);
                const auto b = random_values<T>(static_cast<std::size_t>((tb ? n : k) * ldb), 7);
                // one output buffer for both: Eigen's small products may round a coefficient
                // differently at another alignment of C, so "the same arguments" means the same C
                const auto before = random_values<T>(static_cast<std::size_t>(m * ldc), 8);
                auto c = before;
                gemm<T>(m, n, k, a.data(), lda, ta, b.data(), ldb, tb, c.data(), ldc, acc);
                const auto by_gemm = c;
                c = before;
                const attograd::detail::GemmKernel<T> kernel(m, n, k, lda, ta, ldb, tb, ldc, acc);
                kernel(a.data(), b.data(), c.data());
                const auto& by_kernel = c;
                INFO("m ", m, " n ", n, " k ", k, " trans_a ", ta, " trans_b ", tb, " accumulate ", acc);
                CHECK(by_kernel == by_gemm);
            };
            check(float{});
            check(double{});
        }
}

TEST_CASE("transpose writes the transpose of a strided matrix densely, edge tiles included") {
    // 70 x 300: LIBXSMM's 32 x 32 tiles with partial ones on both edges (core/detail/gemm.cpp)
    const auto check = [&]<class T>(T, std::int64_t rows, std::int64_t cols) {
        const std::int64_t ld = cols + 3;
        const auto src = random_values<T>(static_cast<std::size_t>(rows * ld), 6);
        std::vector<T> dst(static_cast<std::size_t>(rows * cols), T(-7));
        attograd::detail::transpose<T>(rows, cols, src.data(), ld, dst.data());
        bool same = true;
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j)
                same = same && dst[static_cast<std::size_t>(j * rows + i)] ==
                                   src[static_cast<std::size_t>(i * ld + j)];
        INFO("rows ", rows, " cols ", cols);
        CHECK(same);
    };
    for (const auto& [rows, cols] :
         {std::pair<std::int64_t, std::int64_t>{1, 1}, {3, 5}, {32, 16}, {64, 96}, {70, 300}}) {
        check(double{}, rows, cols);
        check(float{}, rows, cols);
    }
}

TEST_CASE("transpose of row bands side by side (ld_dst) equals the whole transpose") {
    // bands of 64, 64 and 42 rows of a [170, 300] matrix, as linear's weight transpose cuts them
    const std::int64_t rows = 170, cols = 300, ld = cols + 5;
    const auto src = random_values<float>(static_cast<std::size_t>(rows * ld), 7);
    std::vector<float> whole(static_cast<std::size_t>(rows * cols)), bands(whole.size(), -7.0f);
    attograd::detail::transpose<float>(rows, cols, src.data(), ld, whole.data());
    for (std::int64_t first = 0; first < rows; first += 64)
        attograd::detail::transpose<float>(std::min<std::int64_t>(64, rows - first), cols,
                                           src.data() + first * ld, ld, bands.data() + first, rows);
    CHECK(bands == whole);
}

namespace {

// Whether every row of op(A) B, computed with m rows in one call, has the bits of that row
// computed alone (m = 1), for m = 1 .. 40.
template <class T>
bool rows_independent(std::int64_t n, std::int64_t k, bool trans_a) {
    std::mt19937 rng(7);
    std::normal_distribution<double> normal;
    constexpr std::int64_t kMaxRows = 40;
    std::vector<T> a(static_cast<std::size_t>(kMaxRows * k)), b(static_cast<std::size_t>(k * n));
    for (T& x : a) x = static_cast<T>(normal(rng));
    for (T& x : b) x = static_cast<T>(normal(rng));
    // A is [m, k] (lda = k), or [k, kMaxRows] read transposed (lda = kMaxRows)
    const std::int64_t lda = trans_a ? kMaxRows : k;
    std::vector<T> alone(static_cast<std::size_t>(kMaxRows * n));
    for (std::int64_t r = 0; r < kMaxRows; ++r)
        gemm<T>(1, n, k, trans_a ? a.data() + r : a.data() + r * lda, lda, trans_a, b.data(), n, false,
                alone.data() + r * n, n, false);
    for (std::int64_t m = 1; m <= kMaxRows; ++m) {
        std::vector<T> c(static_cast<std::size_t>(m * n));
        gemm<T>(m, n, k, a.data(), lda, trans_a, b.data(), n, false, c.data(), n, false);
        if (!std::equal(c.begin(), c.end(), alone.begin())) return false;
    }
    return true;
}

}  // namespace

TEST_CASE(
    "a row of C has the same bits however many rows share the product (incremental decoding's one-row "
    "steps)") {
    // LIBXSMM's promise (core/detail/gemm.cpp: xsmm_block); Eigen's GEMM, in a build without
    // LIBXSMM or a process that found it unusable, makes none.
    if (std::string(attograd::detail::gemm_backend()) != "libxsmm") {
        MESSAGE("skipped: products run on Eigen");
        return;
    }
    // column counts below, at and above one and four vectors (of 32 or 64 bytes), and one with
    // a remainder of a few columns after four-vector blocks
    for (const std::int64_t n : {1, 2, 5, 8, 9, 16, 17, 24, 33, 40, 65, 138, 200})
        for (const std::int64_t k : {3, 64, 300})
            for (const bool trans_a : {false, true}) {
                INFO("n " << n << " k " << k << " trans_a " << trans_a);
                CHECK(rows_independent<float>(n, k, trans_a));
                CHECK(rows_independent<double>(n, k, trans_a));
            }
}

namespace {

// Runs its scope as a process where LIBXSMM is unusable (detail::force_eigen_gemm), restoring
// the real choice on the way out, a failed REQUIRE included.
struct EigenForced {
    EigenForced() { attograd::detail::force_eigen_gemm(true); }
    ~EigenForced() { attograd::detail::force_eigen_gemm(false); }
    EigenForced(const EigenForced&) = delete;
    EigenForced& operator=(const EigenForced&) = delete;
};

// The largest difference between two results of one shape.
template <class T>
double largest_difference(const std::vector<T>& x, const std::vector<T>& y) {
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(x[i]) - static_cast<double>(y[i])));
    return worst;
}

// gemm(), GemmKernel and gemm_b_panels() (on the panels a LIBXSMM build packs) of one shape.
template <class T>
std::vector<std::vector<T>> products(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb,
                                     bool acc) {
    const std::int64_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 3;
    const auto a = random_values<T>(static_cast<std::size_t>((ta ? k : m) * lda), 12);
    const auto b = random_values<T>(static_cast<std::size_t>((tb ? n : k) * ldb), 13);
    const auto before = random_values<T>(static_cast<std::size_t>(m * ldc), 14);
    std::vector<std::vector<T>> out(3, before);
    gemm<T>(m, n, k, a.data(), lda, ta, b.data(), ldb, tb, out[0].data(), ldc, acc);
    const attograd::detail::GemmKernel<T> kernel(m, n, k, lda, ta, ldb, tb, ldc, acc);
    kernel(a.data(), b.data(), out[1].data());
    std::vector<T> panels(static_cast<std::size_t>(k * n));
    for (std::int64_t i = 0; i < attograd::detail::b_panel_count(k, n); ++i)
        attograd::detail::pack_b_panel(k, n, b.data(), ldb, tb, panels.data(), i);
    attograd::detail::gemm_b_panels(m, n, k, a.data(), lda, ta, panels.data(), out[2].data(), ldc, acc);
    return out;
}

}  // namespace

TEST_CASE("with LIBXSMM unusable, products and transposes run on Eigen with the same results") {
    // {32, 32, 16}: GemmKernel's direct LIBXSMM kernel; {300, 270, 600}: several blocks and panels
    const std::int64_t shapes[][3] = {{32, 32, 16}, {3, 5, 7}, {300, 270, 600}, {64, 513, 33}};
    for (const auto& s : shapes)
        for (int flags = 0; flags < 8; ++flags) {
            const std::int64_t m = s[0], n = s[1], k = s[2];
            const bool ta = flags & 1, tb = flags & 2, acc = flags & 4;
            const auto check = [&]<class T>(T, double tol) {
                const auto usual = products<T>(m, n, k, ta, tb, acc);
                std::vector<std::vector<T>> on_eigen;
                {
                    const EigenForced forced;
                    CHECK(std::string(attograd::detail::gemm_backend()) == "eigen");
                    on_eigen = products<T>(m, n, k, ta, tb, acc);
                }
                INFO("m ", m, " n ", n, " k ", k, " trans_a ", ta, " trans_b ", tb, " accumulate ", acc);
                for (std::size_t i = 0; i < usual.size(); ++i) {
                    INFO("product ", i, " (gemm, GemmKernel, gemm_b_panels)");
                    CHECK(largest_difference(usual[i], on_eigen[i]) < tol * static_cast<double>(k));
                }
            };
            check(float{}, 1e-6);
            check(double{}, 1e-15);
        }
    // a transpose is a copy: the same bits either way
    const std::int64_t rows = 70, cols = 300, ld = cols + 3;
    const auto src = random_values<float>(static_cast<std::size_t>(rows * ld), 15);
    std::vector<float> usual(static_cast<std::size_t>(rows * cols)), on_eigen(usual.size());
    attograd::detail::transpose<float>(rows, cols, src.data(), ld, usual.data());
    {
        const EigenForced forced;
        attograd::detail::transpose<float>(rows, cols, src.data(), ld, on_eigen.data());
    }
    CHECK(on_eigen == usual);
}
