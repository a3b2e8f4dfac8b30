// Gradient x input saliency of any differentiable function of an embedding, and how well a
// head's attention agrees with it (Spearman rank correlation).
#include "inspect/saliency.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attograd::inspect {

namespace {

std::vector<double> ranks(const std::vector<double>& x) {
    std::vector<std::size_t> order(x.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
    std::vector<double> r(x.size());
    for (std::size_t i = 0; i < order.size();) {
        std::size_t j = i;
        while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
        const double average = (static_cast<double>(i) + static_cast<double>(j)) / 2.0;
        for (std::size_t k = i; k <= j; ++k) r[order[k]] = average;
        i = j + 1;
    }
    return r;
}

}  // namespace

AttentionMap saliency(const ScoreFunction& f, const Tensor& embedding, const TokenLabels& labels) {
    AG_CHECK(embedding.defined() && embedding.dim() == 2, ShapeError,
             "saliency: the embedding must be [S, E], got {}",
             embedding.defined() ? fmt::format("{}", embedding.shape()) : std::string("an undefined tensor"));
    AG_CHECK(is_floating(embedding.dtype()), DTypeError,
             "saliency: the embedding must be float32 or float64, got {}", embedding.dtype());
    const std::int64_t s = embedding.size(0), e = embedding.size(1);
    Tensor x = clone(embedding.detach());
    x.requires_grad_(true);
    const Tensor scores = f(x);
    AG_CHECK(scores.defined() && scores.dim() == 1, ShapeError,
             "saliency: the score function must return [Tout] (one score per output), got {}",
             scores.defined() ? fmt::format("{}", scores.shape()) : std::string("an undefined tensor"));
    const std::int64_t tout = scores.size(0);
    AG_CHECK(std::ssize(labels.queries) == tout && std::ssize(labels.keys) == s, ShapeError,
             "saliency: scores [{}] over embedding {} need {} query and {} key labels, got {} and {}", tout,
             embedding.shape(), tout, s, labels.queries.size(), labels.keys.size());
    AG_CHECK(scores.requires_grad(), ValueError,
             "saliency: the scores [{}] do not depend on the embedding {}", tout, embedding.shape());
    AttentionMap map;
    map.module = "saliency (gradient x input)";
    map.head = -1;
    map.queries = labels.queries;
    map.keys = labels.keys;
    const auto value = to_dtype(x.detach(), DType::Float64).to_vector<double>();
    for (std::int64_t t = 0; t < tout; ++t) {
        std::vector<double> one_hot(static_cast<std::size_t>(tout), 0.0);
        one_hot[static_cast<std::size_t>(t)] = 1.0;
        x.zero_grad();
        scores.backward(tensor(one_hot, {tout}, {.dtype = scores.dtype()}), /*retain_graph=*/t + 1 < tout);
        const Tensor grad = x.grad();
        std::vector<double> row(static_cast<std::size_t>(s), 0.0);
        if (grad.defined()) {
            const auto g = to_dtype(grad, DType::Float64).to_vector<double>();
            for (std::int64_t i = 0; i < s; ++i) {
                double dot = 0.0;
                for (std::int64_t j = 0; j < e; ++j)
                    dot +=
                        g[static_cast<std::size_t>(i * e + j)] * value[static_cast<std::size_t>(i * e + j)];
                AG_CHECK(std::isfinite(dot), ValueError,
                         "saliency: the gradient of output {} is not finite at input {}", t, i);
                row[static_cast<std::size_t>(i)] = std::abs(dot);
            }
        }
        const double total = std::accumulate(row.begin(), row.end(), 0.0);
        for (double& v : row) v = total > 0.0 ? v / total : 0.0;
        map.weights.insert(map.weights.end(), row.begin(), row.end());
    }
    return map;
}

std::optional<double> spearman(const std::vector<double>& a, const std::vector<double>& b) {
    AG_CHECK(a.size() == b.size(), ShapeError, "spearman: series of different lengths {} and {}", a.size(),
             b.size());
    if (a.size() < 2) return std::nullopt;
    const auto ra = ranks(a), rb = ranks(b);
    const double n = static_cast<double>(a.size());
    const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
    const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
    double sab = 0.0, saa = 0.0, sbb = 0.0;
    for (std::size_t i = 0; i < ra.size(); ++i) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    if (saa == 0.0 || sbb == 0.0) return std::nullopt;
    return sab / std::sqrt(saa * sbb);
}

std::optional<double> saliency_correlation(const AttentionMap& head, const AttentionMap& saliency) {
    check_map(head);
    check_map(saliency);
    AG_CHECK(head.rows() == saliency.rows() && head.cols() == saliency.cols(), ShapeError,
             "saliency_correlation: '{}' is [{}, {}] but '{}' is [{}, {}]", head.title(), head.rows(),
             head.cols(), saliency.title(), saliency.rows(), saliency.cols());
    double total = 0.0;
    std::int64_t counted = 0;
    for (std::int64_t t = 0; t < head.rows(); ++t) {
        const auto first = static_cast<std::ptrdiff_t>(t * head.cols());
        const std::vector<double> a(head.weights.begin() + first, head.weights.begin() + first + head.cols());
        const std::vector<double> b(saliency.weights.begin() + first,
                                    saliency.weights.begin() + first + head.cols());
        if (const auto rho = spearman(a, b)) {
            total += *rho;
            ++counted;
        }
    }
    if (counted == 0) return std::nullopt;
    return total / static_cast<double>(counted);
}

}  // namespace attograd::inspect
