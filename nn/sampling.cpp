// Temperature, top-k and top-p sampling of one token per row of logits.
#include "nn/sampling.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace attograd::nn {
namespace {

void check_options(const SamplingOptions& options) {
    AG_CHECK(std::isfinite(options.temperature) && options.temperature > 0.0, ValueError,
             "sample_logits: temperature must be a finite number > 0, got {} (top_k = 1 samples greedily)",
             options.temperature);
    AG_CHECK(!options.top_k || *options.top_k >= 1, ValueError, "sample_logits: top_k must be >= 1, got {}",
             options.top_k.value_or(0));
    AG_CHECK(options.top_p >= 0.0 && options.top_p <= 1.0, ValueError,
             "sample_logits: top_p must be in [0, 1], got {}", options.top_p);
}

// The row's sampling probabilities in place of its logits (0 for every token not kept).
void row_probabilities(std::vector<double>& row, const SamplingOptions& options) {
    // (logit - max) / T: the same softmax as logit / T, and no overflow for a small T.
    const double max = *std::max_element(row.begin(), row.end());
    for (double& logit : row) logit = (logit - max) / options.temperature;
    const auto size = static_cast<std::int64_t>(row.size());
    if (options.top_k && *options.top_k < size) {
        std::vector<double> sorted = row;
        const auto kth = sorted.begin() + (*options.top_k - 1);
        std::nth_element(sorted.begin(), kth, sorted.end(), std::greater<>());
        const double threshold = *kth;
        for (double& logit : row)
            if (logit < threshold)
                logit = -std::numeric_limits<double>::infinity();  // ties with the k-th stay
    }
    // softmax; the largest scaled logit is 0 and always kept, -inf becomes exactly 0.
    double sum = 0.0;
    for (double& value : row) sum += (value = std::exp(value));
    for (double& value : row) value /= sum;
    if (options.top_p < 1.0) {
        std::vector<std::size_t> order(row.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::stable_sort(order.begin(), order.end(),
                         [&](std::size_t a, std::size_t b) { return row[a] > row[b]; });
        double before = 0.0, kept = 0.0;  // mass of the tokens ranked above, and of those kept
        for (std::size_t rank = 0; rank < order.size(); ++rank) {
            double& p = row[order[rank]];
            const bool keep = rank == 0 || before < options.top_p;
            before += p;
            if (keep)
                kept += p;
            else
                p = 0.0;
        }
        for (double& p : row) p /= kept;
    }
}

// The first token whose cumulative probability exceeds u (u in [0, 1)); the last token with
// non-zero probability when rounding leaves the total just below u.
std::int64_t draw(const std::vector<double>& probabilities, double u) {
    double cumulative = 0.0;
    std::int64_t last = 0;
    for (std::size_t i = 0; i < probabilities.size(); ++i) {
        if (probabilities[i] <= 0.0) continue;
        last = static_cast<std::int64_t>(i);
        cumulative += probabilities[i];
        if (u < cumulative) return last;
    }
    return last;
}

}  // namespace

Tensor sample_logits(const Tensor& logits, const SamplingOptions& options, Generator& generator) {
    check_options(options);
    AG_CHECK(logits.defined(), ValueError, "sample_logits: logits are an undefined tensor");
    AG_CHECK(is_floating(logits.dtype()), DTypeError,
             "sample_logits: logits have dtype {}; expected float32 or float64", logits.dtype());
    AG_CHECK(logits.dim() == 2 && logits.size(1) >= 1, ShapeError,
             "sample_logits: logits have shape {}; expected [N, V] with V >= 1", logits.shape());
    const std::int64_t rows = logits.size(0), vocab = logits.size(1);
    const std::vector<double> values = logits.to_vector<double>();
    std::vector<std::int64_t> tokens(static_cast<std::size_t>(rows));
    std::vector<double> row(static_cast<std::size_t>(vocab));
    for (std::int64_t r = 0; r < rows; ++r) {
        const auto begin = values.begin() + r * vocab;
        std::copy(begin, begin + vocab, row.begin());
        AG_CHECK(
            std::none_of(row.begin(), row.end(), [](double x) { return std::isnan(x) || x == INFINITY; }),
            ValueError, "sample_logits: row {} of logits {} holds NaN or +inf", r, logits.shape());
        AG_CHECK(std::any_of(row.begin(), row.end(), [](double x) { return std::isfinite(x); }), ValueError,
                 "sample_logits: row {} of logits {} has no finite logit: no token can be drawn", r,
                 logits.shape());
        row_probabilities(row, options);
        tokens[static_cast<std::size_t>(r)] = draw(row, generator.uniform());
    }
    return index_tensor(tokens, {rows});
}

std::vector<std::int64_t> generate(const NextTokenLogits& model, const std::vector<std::int64_t>& prompt,
                                   const GenerateOptions& options, Generator& generator) {
    check_options(options.sampling);
    AG_CHECK(!prompt.empty(), ValueError, "generate: the prompt is empty; it needs at least one token");
    AG_CHECK(std::all_of(prompt.begin(), prompt.end(), [](std::int64_t id) { return id >= 0; }), ValueError,
             "generate: the prompt holds a negative id");
    AG_CHECK(options.max_new_tokens >= 0, ValueError, "generate: max_new_tokens must be >= 0, got {}",
             options.max_new_tokens);
    AG_CHECK(!options.max_context || *options.max_context >= 1, ValueError,
             "generate: max_context must be >= 1, got {}", options.max_context.value_or(0));
    const NoGradGuard no_grad;
    std::vector<std::int64_t> ids = prompt;
    for (std::int64_t step = 0; step < options.max_new_tokens; ++step) {
        const auto length = static_cast<std::int64_t>(ids.size());
        const std::int64_t context = options.max_context ? std::min(length, *options.max_context) : length;
        const Tensor input =
            index_tensor(std::vector<std::int64_t>(ids.end() - context, ids.end()), {1, context});
        Tensor logits = model(input);
        AG_CHECK(
            logits.defined() && ((logits.dim() == 2 && logits.size(0) == 1) ||
                                 (logits.dim() == 3 && logits.size(0) == 1 && logits.size(1) == context)),
            ShapeError,
            "generate: the model returned logits of shape {} for ids [1, {}]; expected [1, V] or [1, {}, V]",
            logits.defined() ? fmt::format("{}", logits.shape()) : std::string("(undefined)"), context,
            context);
        if (logits.dim() == 3) logits = select(logits, 1, context - 1);
        const std::int64_t next =
            sample_logits(logits, options.sampling, generator).to_vector<std::int64_t>()[0];
        ids.push_back(next);
        if (options.eos_id && next == *options.eos_id) break;
    }
    return ids;
}

}  // namespace attograd::nn
