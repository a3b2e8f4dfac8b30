// Faithfulness of attention as explanation: importance by gradient and leave-one-out,
// permutation, adversarial attention and erasure, each through AttentionIntervention.
#include "inspect/faithfulness.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "inspect/detail/frozen_parameters.hpp"
#include "inspect/faithfulness_stats.hpp"
#include "inspect/intervention.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>

namespace attograd::inspect {

namespace {

using Rows = std::vector<std::vector<double>>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void check_model(const ExplainedModel& m, const Tensor& inputs, const char* op) {
    AG_CHECK(m.model != nullptr && static_cast<bool>(m.probabilities), ValueError,
             "{}: the ExplainedModel needs a model and a probabilities function", op);
    AG_CHECK(inputs.defined() && inputs.dim() == 3 && inputs.size(0) >= 1, ShapeError,
             "{}: inputs must be [B, T, E] with B >= 1, got {}", op,
             inputs.defined() ? fmt::format("{}", inputs.shape()) : std::string("undefined"));
    AG_CHECK(m.query >= 0, ValueError, "{}: query must be >= 0, got {}", op, m.query);
}

Rows rows_of(const Tensor& x) {
    const Tensor d = to_dtype(x.detach(), DType::Float64);
    const std::int64_t n = d.size(0), c = d.numel() / std::max<std::int64_t>(n, 1);
    const double* p = d.data<double>();
    Rows out(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)].assign(p + i * c, p + (i + 1) * c);
    return out;
}

}  // namespace

void check_probabilities(const Tensor& y, const char* op) {
    AG_CHECK(y.defined() && y.dim() == 2, ShapeError, "{}: probabilities must be [B, C], got {}", op,
             y.defined() ? fmt::format("{}", y.shape()) : std::string("undefined"));
    const Rows rows = rows_of(y);
    for (std::size_t b = 0; b < rows.size(); ++b) {
        double total = 0;
        for (std::size_t c = 0; c < rows[b].size(); ++c) {
            const double p = rows[b][c];
            AG_CHECK(std::isfinite(p) && p >= 0, ValueError,
                     "{}: probabilities {} must be finite and >= 0 (a distribution per row), got {} at "
                     "row {}, class {}",
                     op, y.shape(), p, b, c);
            total += p;
        }
        AG_CHECK(std::abs(total - 1) <= probability_tolerance, ValueError,
                 "{}: probabilities {} must sum to 1 per row (within {}), row {} sums to {}", op, y.shape(),
                 probability_tolerance, b, total);
    }
}

namespace {

// The model's output [B, C], checked.
Tensor run_model(const ExplainedModel& m, const Tensor& inputs, const char* op) {
    Tensor y = m.probabilities(inputs);
    AG_CHECK(y.defined() && y.dim() == 2 && y.size(0) == inputs.size(0), ShapeError,
             "{}: the probabilities function must return [B, C] = [{}, C] for inputs {}, got {}", op,
             inputs.size(0), inputs.shape(),
             y.defined() ? fmt::format("{}", y.shape()) : std::string("undefined"));
    check_probabilities(y, op);
    return y;
}

// inputs [B, T, E] with each example repeated `copies` times in a row: [B * copies, T, E].
Tensor repeat_examples(const Tensor& inputs, std::int64_t copies) {
    std::vector<std::int64_t> index;
    for (std::int64_t b = 0; b < inputs.size(0); ++b)
        index.insert(index.end(), static_cast<std::size_t>(copies), b);
    return index_select(inputs, 0, index_tensor(index, {static_cast<std::int64_t>(index.size())}));
}

// Replaces row `query` of the head's weights [B', Tq, Tk] by `rows` [B', Tk]; the other rows stay,
// and so does a recurrent decoder's step (one row, `first` = the step) other than `query`.
Replacement row_replacement(std::int64_t query, const Tensor& rows) {
    return Replacement::row_function([query, rows](const Tensor& own, const Tensor&, std::int64_t first) {
        const std::int64_t tq = own.size(1);
        if (query < first || query >= first + tq) return own;  // observe() refuses a query no call holds
        AG_CHECK(rows.size(0) == own.size(0) && rows.size(1) == own.size(2), ShapeError,
                 "faithfulness: replacement rows {} for a head's weights {}", rows.shape(), own.shape());
        if (tq == 1 && first == query) return reshape(rows, own.shape());  // a decoder's step
        // the own rows above and below row `at`, copied around the replacement row
        const std::int64_t at = query - first;
        std::vector<Tensor> parts;
        if (at > 0) parts.push_back(narrow(own, 1, 0, at));
        parts.push_back(reshape(rows, {rows.size(0), 1, rows.size(1)}));
        if (at + 1 < tq) parts.push_back(narrow(own, 1, at + 1, tq - at - 1));
        return concat(parts, 1);
    });
}

Tensor output_with(const ExplainedModel& m, const Tensor& inputs, const HeadId& head, const Tensor& rows,
                   const char* op) {
    AttentionIntervention intervention(*m.model,
                                       {{head.layer, {{head.head, row_replacement(m.query, rows)}}}});
    return run_model(m, inputs, op);
}

// Sequences per forward pass of the measures that run many copies of each example (leave-one-out,
// permutation, erasure): the B * copies sequences run in passes of whole copies of every
// example, so that a pass's tensors stay small enough for the tensor cache to hold and reuse
// (one layer's weights [B', h, Tq, Tk] for 100 copies of 64 examples would be ~60 MB, whose
// fresh pages the kernel clears on first use). Each sequence's output depends on it alone, so
// the passes give the values one pass would.
constexpr std::int64_t kPassSequences = 512;

// The output distributions of `inputs` [B, T, E] with example b's copy i attending with row
// rows[b * copies + i] (as output_with_rows on repeat_examples(inputs, copies)), run in passes
// of at most kPassSequences sequences (at least one copy of every example).
Rows outputs_of_copies(const ExplainedModel& m, const Tensor& inputs, const HeadId& head, const Rows& rows,
                       std::int64_t copies) {
    const std::int64_t b_count = inputs.size(0);
    const std::int64_t per_pass = std::max<std::int64_t>(1, kPassSequences / b_count);
    const auto at = [copies](std::int64_t b, std::int64_t i) {
        return static_cast<std::size_t>(b * copies + i);
    };
    Rows out(rows.size());
    for (std::int64_t first = 0; first < copies; first += per_pass) {
        const std::int64_t n = std::min(per_pass, copies - first);
        Rows slice;
        for (std::int64_t b = 0; b < b_count; ++b)
            for (std::int64_t i = 0; i < n; ++i) slice.push_back(rows[at(b, first + i)]);
        Rows y = output_with_rows(m, repeat_examples(inputs, n), head, slice);
        for (std::int64_t b = 0; b < b_count; ++b)
            for (std::int64_t i = 0; i < n; ++i)
                out[at(b, first + i)] = std::move(y[static_cast<std::size_t>(b * n + i)]);
    }
    return out;
}

Tensor rows_tensor(const Rows& rows, DType dtype) {
    std::vector<double> flat;
    for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    return tensor(flat,
                  {static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(rows.front().size())},
                  {.dtype = dtype});
}

// The row with the keys in `removed` set to 0 and the rest renormalised; when no weight remains,
// uniform over the remaining allowed keys.
std::vector<double> remove_keys(const std::vector<double>& w, const std::vector<bool>& allowed,
                                const std::vector<std::size_t>& removed) {
    std::vector<double> out = w;
    std::vector<bool> gone(w.size(), false);
    for (const std::size_t k : removed) gone[k] = true;
    double total = 0, remaining = 0;
    for (std::size_t j = 0; j < w.size(); ++j) {
        if (gone[j] || !allowed[j]) out[j] = 0;
        total += out[j];
        remaining += (!gone[j] && allowed[j]) ? 1 : 0;
    }
    for (std::size_t j = 0; j < w.size(); ++j)
        out[j] = total > 0 ? out[j] / total : ((!gone[j] && allowed[j]) ? 1 / remaining : 0.0);
    return out;
}

std::vector<std::size_t> allowed_keys_of(const std::vector<bool>& allowed) {
    std::vector<std::size_t> keys;
    for (std::size_t j = 0; j < allowed.size(); ++j)
        if (allowed[j]) keys.push_back(j);
    return keys;
}

std::size_t argmax_of(const std::vector<double>& p) {
    return static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin());
}

// The allowed keys ordered by `score`, highest first (ties by position).
std::vector<std::size_t> ranked(const std::vector<double>& score, const std::vector<bool>& allowed) {
    std::vector<std::size_t> keys = allowed_keys_of(allowed);
    std::stable_sort(keys.begin(), keys.end(),
                     [&](std::size_t a, std::size_t b) { return score[a] > score[b]; });
    return keys;
}

// JSD of two weight rows [B, Tk] as a differentiable [B] (0 log 0 = 0).
Tensor jsd_rows(const Tensor& p, const Tensor& q) {
    const Tensor m = (p + q) * 0.5;
    const double tiny = p.dtype() == DType::Float32 ? 1e-30 : 1e-300;  // normal in the dtype: 0 log 0 = 0
    auto kl = [&](const Tensor& a) { return a * (log(a + tiny) - log(m + tiny)); };
    return sum(kl(p) + kl(q), {-1}) * 0.5;
}

HeadObservation observe(const ExplainedModel& m, const Tensor& inputs, const HeadId& head, const char* op) {
    check_model(m, inputs, op);
    // The call holding query row m.query (a recurrent decoder attends one row per step), its first
    // row, and the most rows a call covered (for the message when none holds it).
    struct Seen {
        Tensor own, allowed;
        std::int64_t first = 0, rows = 0;
    };
    auto seen = std::make_shared<Seen>();
    Tensor y;
    {
        NoGradGuard no_grad;
        AttentionIntervention watch(
            *m.model,
            {{head.layer,
              {{head.head,
                Replacement::row_function(
                    [seen, query = m.query](const Tensor& own, const Tensor& allowed, std::int64_t first) {
                        seen->rows = std::max(seen->rows, first + own.size(1));
                        if (query >= first && query < first + own.size(1))
                            *seen = {own, allowed, first, seen->rows};
                        return own;
                    })}}}},
            {}, op);
        y = run_model(m, inputs, op);
    }
    AG_CHECK(seen->rows > 0, ValueError, "{}: layer '{}' did not run in the model's forward pass", op,
             head.layer);
    AG_CHECK(seen->own.defined(), ValueError, "{}: query {} is outside layer '{}''s {} queries", op, m.query,
             head.layer, seen->rows);
    HeadObservation out;
    out.weights = rows_of(select(seen->own, 1, m.query - seen->first));
    const Tensor allowed = select(seen->allowed, 1, m.query - seen->first);
    const bool* a = allowed.data<bool>();
    const std::int64_t tk = allowed.size(1);
    for (std::int64_t b = 0; b < allowed.size(0); ++b) out.allowed.emplace_back(a + b * tk, a + (b + 1) * tk);
    out.output = rows_of(y);
    return out;
}

}  // namespace

HeadObservation observe_head(const ExplainedModel& m, const Tensor& inputs, const HeadId& head) {
    return observe(m, inputs, head, "observe_head");
}

std::vector<std::vector<double>> output_with_rows(const ExplainedModel& m, const Tensor& inputs,
                                                  const HeadId& head,
                                                  const std::vector<std::vector<double>>& rows) {
    check_model(m, inputs, "output_with_rows");
    AG_CHECK(static_cast<std::int64_t>(rows.size()) == inputs.size(0) && !rows.empty(), ShapeError,
             "output_with_rows: {} rows for inputs {}", rows.size(), inputs.shape());
    NoGradGuard no_grad;
    return rows_of(output_with(m, inputs, head, rows_tensor(rows, inputs.dtype()), "output_with_rows"));
}

std::vector<std::vector<double>> gradient_importance(const ExplainedModel& m, const Tensor& inputs,
                                                     const HeadId& head) {
    check_model(m, inputs, "gradient_importance");
    const HeadObservation seen = observe(m, inputs, head, "gradient_importance");
    AG_CHECK(static_cast<std::int64_t>(seen.weights.front().size()) == inputs.size(1), ShapeError,
             "gradient_importance: layer '{}' attends over {} keys but the inputs {} have {} positions",
             head.layer, seen.weights.front().size(), inputs.shape(), inputs.size(1));
    // every attention layer's weights detached: the gradient flows through the values only
    std::map<std::string, std::map<std::int64_t, Replacement>> fixed;
    for (const auto& layer : attention_layers(*m.model))
        for (std::int64_t h = 0; h < layer.num_heads; ++h)
            fixed[layer.name].emplace(
                h, Replacement::function([](const Tensor& own, const Tensor&) { return own.detach(); }));
    const detail::FrozenParameters frozen(*m.model);
    Tensor x = clone(inputs.detach());
    x.requires_grad_();
    Tensor y;
    {
        AttentionIntervention detach_all(*m.model, fixed, {}, "gradient_importance");
        y = run_model(m, x, "gradient_importance");
    }
    std::vector<double> pick(static_cast<std::size_t>(y.numel()), 0.0);
    const Rows probs = rows_of(y);
    for (std::size_t b = 0; b < probs.size(); ++b) pick[b * probs[b].size() + argmax_of(probs[b])] = 1.0;
    Tensor chosen = sum(y * tensor(pick, y.shape(), {.dtype = y.dtype()}));
    AG_CHECK(chosen.requires_grad(), ValueError,
             "gradient_importance: the output does not depend on the inputs");
    chosen.backward();
    AG_CHECK(x.grad().defined(), ValueError, "gradient_importance: the output does not depend on the inputs");
    return rows_of(abs(sum(x.grad() * x.detach(), {-1})));
}

std::vector<std::vector<double>> leave_one_out(const ExplainedModel& m, const Tensor& inputs,
                                               const HeadId& head) {
    const HeadObservation seen = observe(m, inputs, head, "leave_one_out");
    const std::size_t tk = seen.weights.front().size();
    Rows rows;
    std::vector<std::vector<double>> out(seen.weights.size(), std::vector<double>(tk, kNaN));
    for (std::size_t b = 0; b < seen.weights.size(); ++b)
        for (std::size_t s = 0; s < tk; ++s) {
            const bool removable = seen.allowed[b][s] && allowed_keys_of(seen.allowed[b]).size() > 1;
            rows.push_back(removable ? remove_keys(seen.weights[b], seen.allowed[b], {s}) : seen.weights[b]);
        }
    const Rows y = outputs_of_copies(m, inputs, head, rows, static_cast<std::int64_t>(tk));
    for (std::size_t b = 0; b < seen.weights.size(); ++b)
        for (std::size_t s = 0; s < tk; ++s)
            if (seen.allowed[b][s] && allowed_keys_of(seen.allowed[b]).size() > 1)
                out[b][s] = total_variation(seen.output[b], y[b * tk + s]);
    return out;
}

std::vector<std::optional<double>> attention_agreement(const HeadObservation& observed,
                                                       const std::vector<std::vector<double>>& importance) {
    AG_CHECK(importance.size() == observed.weights.size(), ShapeError,
             "attention_agreement: {} importance rows for {} examples", importance.size(),
             observed.weights.size());
    std::vector<std::optional<double>> out;
    for (std::size_t b = 0; b < importance.size(); ++b) {
        AG_CHECK(importance[b].size() == observed.weights[b].size(), ShapeError,
                 "attention_agreement: example {} has {} importances for {} keys", b, importance[b].size(),
                 observed.weights[b].size());
        std::vector<double> a, g;
        for (std::size_t j = 0; j < importance[b].size(); ++j)
            if (observed.allowed[b][j] && !std::isnan(importance[b][j])) {
                a.push_back(observed.weights[b][j]);
                g.push_back(importance[b][j]);
            }
        out.push_back(kendall_tau_b(a, g));
    }
    return out;
}

std::vector<PermutationResult> permutation_test(const ExplainedModel& m, const Tensor& inputs,
                                                const HeadId& head, std::int64_t n, Generator& generator) {
    AG_CHECK(n >= 1, ValueError, "permutation_test: n (the number of permutations) must be >= 1, got {}", n);
    const HeadObservation seen = observe(m, inputs, head, "permutation_test");
    Rows rows;
    for (std::size_t b = 0; b < seen.weights.size(); ++b) {
        const std::vector<std::size_t> keys = allowed_keys_of(seen.allowed[b]);
        for (std::int64_t i = 0; i < n; ++i) {
            std::vector<std::size_t> to = keys;
            for (std::size_t k = to.size(); k > 1; --k)  // Fisher-Yates
                std::swap(to[k - 1],
                          to[static_cast<std::size_t>(generator.randint(0, static_cast<std::int64_t>(k)))]);
            std::vector<double> row(seen.weights[b].size(), 0.0);
            for (std::size_t k = 0; k < keys.size(); ++k) row[to[k]] = seen.weights[b][keys[k]];
            rows.push_back(std::move(row));
        }
    }
    const Rows y = outputs_of_copies(m, inputs, head, rows, n);
    std::vector<PermutationResult> out(seen.weights.size());
    for (std::size_t b = 0; b < out.size(); ++b) {
        for (std::int64_t i = 0; i < n; ++i)
            out[b].tvd.push_back(total_variation(
                seen.output[b], y[b * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)]));
        out[b].median = quantile(out[b].tvd, 0.5);
        out[b].iqr = quantile(out[b].tvd, 0.75) - quantile(out[b].tvd, 0.25);
        out[b].max_weight = *std::max_element(seen.weights[b].begin(), seen.weights[b].end());
    }
    return out;
}

void check_options(const AdversarialOptions& o, const char* op) {
    AG_CHECK(o.epsilon > 0 && o.epsilon < 1, ValueError, "{}: epsilon must be in (0, 1), got {}", op,
             o.epsilon);
    AG_CHECK(o.steps >= 1, ValueError, "{}: steps must be >= 1, got {}", op, o.steps);
    // an infinite step or penalty passes "> 0" but turns the search's logits into NaN
    AG_CHECK(std::isfinite(o.learning_rate) && o.learning_rate > 0, ValueError,
             "{}: learning_rate must be finite and > 0, got {}", op, o.learning_rate);
    AG_CHECK(std::isfinite(o.penalty) && o.penalty > 0, ValueError,
             "{}: penalty must be finite and > 0, got {}", op, o.penalty);
}

std::vector<AdversarialResult> adversarial_attention(const ExplainedModel& m, const Tensor& inputs,
                                                     const HeadId& head, const AdversarialOptions& o) {
    check_options(o, "adversarial_attention");
    const HeadObservation seen = observe(m, inputs, head, "adversarial_attention");
    const std::size_t b_count = seen.weights.size(), tk = seen.weights.front().size();
    const DType dtype = inputs.dtype();
    const Tensor own = rows_tensor(seen.weights, dtype), y0 = rows_tensor(seen.output, dtype);
    Rows blocked(b_count, std::vector<double>(tk, 0.0));
    for (std::size_t b = 0; b < b_count; ++b)
        for (std::size_t j = 0; j < tk; ++j)
            if (!seen.allowed[b][j]) blocked[b][j] = -std::numeric_limits<double>::infinity();
    const Tensor mask = rows_tensor(blocked, dtype);
    Generator noise(o.seed);
    Tensor z = log(own + 1e-12) + randn(own.shape(), noise, {.dtype = dtype});
    Tensor moment = zeros_like(z), square = zeros_like(z);
    std::vector<AdversarialResult> best(b_count);
    for (std::size_t b = 0; b < b_count; ++b) best[b].weights = seen.weights[b];
    const double beta1 = 0.9, beta2 = 0.999;
    const detail::FrozenParameters frozen(*m.model);
    for (std::int64_t step = 1; step <= o.steps; ++step) {
        z = z.detach();
        z.requires_grad_();
        const Tensor alpha = softmax(z + mask, -1);
        const Tensor y = output_with(m, inputs, head, alpha, "adversarial_attention");
        const Tensor tvd = sum(abs(y - y0), {-1}) * 0.5, jsd = jsd_rows(alpha, own);
        const Tensor objective = jsd - relu(tvd - o.epsilon) * o.penalty;
        sum(objective * -1.0).backward();
        const std::vector<double> t = tvd.detach().to_vector<double>(), j = jsd.detach().to_vector<double>();
        const Rows a = rows_of(alpha);
        for (std::size_t b = 0; b < b_count; ++b)
            if (t[b] <= o.epsilon && j[b] > best[b].jsd) best[b] = {a[b], j[b], t[b]};
        NoGradGuard no_grad;  // Adam (Kingma & Ba 2015, Algorithm 1), ascending the objective
        const Tensor g = z.grad();
        moment = moment * beta1 + g * (1 - beta1);
        square = square * beta2 + g * g * (1 - beta2);
        const double c1 = 1 - std::pow(beta1, static_cast<double>(step)),
                     c2 = 1 - std::pow(beta2, static_cast<double>(step));
        z = z.detach() - (moment / c1) / (sqrt(square / c2) + 1e-8) * o.learning_rate;
    }
    return best;
}

std::vector<ErasureResult> erasure(const ExplainedModel& m, const Tensor& inputs, const HeadId& head,
                                   Generator& generator) {
    const HeadObservation seen = observe(m, inputs, head, "erasure");
    const Rows gradient = gradient_importance(m, inputs, head);
    const std::size_t b_count = seen.weights.size(), tk = seen.weights.front().size();
    // per example, four rankings; per ranking, tk - 1 removals (top 1, top 2, ...), padded with the own row
    Rows rows;
    std::vector<std::vector<std::vector<std::size_t>>> orders(b_count);
    for (std::size_t b = 0; b < b_count; ++b) {
        const auto& w = seen.weights[b];
        std::vector<double> product(tk), random(tk);
        for (std::size_t j = 0; j < tk; ++j) {
            product[j] = w[j] * gradient[b][j];
            random[j] = generator.uniform();
        }
        orders[b] = {ranked(w, seen.allowed[b]), ranked(gradient[b], seen.allowed[b]),
                     ranked(product, seen.allowed[b]), ranked(random, seen.allowed[b])};
        for (const auto& order : orders[b])
            for (std::size_t k = 1; k < tk; ++k)
                rows.push_back(
                    k < order.size()
                        ? remove_keys(w, seen.allowed[b],
                                      std::vector<std::size_t>(
                                          order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k)))
                        : w);
    }
    const std::int64_t copies = 4 * static_cast<std::int64_t>(tk - 1);
    std::vector<ErasureResult> out(b_count);
    if (copies == 0) return out;
    const Rows y = outputs_of_copies(m, inputs, head, rows, copies);
    for (std::size_t b = 0; b < b_count; ++b) {
        const auto& y_own = seen.output[b];
        const std::size_t decision = argmax_of(y_own);
        auto output = [&](std::size_t ranking, std::size_t k) -> const std::vector<double>& {
            return y[b * static_cast<std::size_t>(copies) + ranking * (tk - 1) + (k - 1)];
        };
        std::optional<double> fractions[4];
        for (std::size_t r = 0; r < 4; ++r) {
            const std::size_t n = orders[b][r].size();
            for (std::size_t k = 1; k < n && !fractions[r]; ++k)
                if (argmax_of(output(r, k)) != decision)
                    fractions[r] = static_cast<double>(k) / static_cast<double>(n);
        }
        ErasureResult& e = out[b];
        if (orders[b][0].size() > 1) {
            e.jsd_top = jensen_shannon(y_own, output(0, 1));
            e.jsd_random = jensen_shannon(y_own, output(3, 1));
            e.flip_top = argmax_of(output(0, 1)) != decision;
            e.flip_random = argmax_of(output(3, 1)) != decision;
        }
        e.fraction_attention = fractions[0];
        e.fraction_gradient = fractions[1];
        e.fraction_product = fractions[2];
        e.fraction_random = fractions[3];
    }
    return out;
}

}  // namespace attograd::inspect
