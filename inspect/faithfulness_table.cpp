// A data-set summary of every head's faithfulness, as one table with a verdict per head.
#include "inspect/faithfulness_table.hpp"

#include "core/autograd.hpp"
#include "core/detail/parallel.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "inspect/detail/frozen_parameters.hpp"
#include "inspect/faithfulness_stats.hpp"
#include "inspect/intervention.hpp"
#include "inspect/knockout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <utility>

namespace attograd::inspect {

namespace {

constexpr const char* kOp = "faithfulness_table";

// Sum and count of defined values, for means over examples.
struct Mean {
    double total = 0;
    std::int64_t count = 0;
    void add(std::optional<double> v) {
        if (v && !std::isnan(*v)) {
            total += *v;
            ++count;
        }
    }
    std::optional<double> value() const {
        return count > 0 ? std::optional<double>(total / static_cast<double>(count)) : std::nullopt;
    }
};

// Runs f, adding its seconds to `slot`.
template <class F>
auto timed(double& slot, F&& f) {
    const auto start = std::chrono::steady_clock::now();
    auto result = f();
    slot += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

std::string cell(const std::optional<double>& v, int precision = 3) {
    return v ? fmt::format("{:.{}f}", *v, precision) : std::string("-");
}

void check_data(const FaithfulnessData& data, const FaithfulnessOptions& o) {
    AG_CHECK(data.inputs.defined() && data.inputs.dim() == 3 && data.inputs.size(0) >= 1, ShapeError,
             "{}: inputs must be [N, T, E] with N >= 1, got {}", kOp,
             data.inputs.defined() ? fmt::format("{}", data.inputs.shape()) : std::string("undefined"));
    const auto n = static_cast<std::size_t>(data.inputs.size(0));
    AG_CHECK(data.labels.empty() || data.labels.size() == n, ValueError,
             "{}: labels must be empty or one per example ({}), got {}", kOp, n, data.labels.size());
    AG_CHECK(data.alignment.empty() || data.alignment.size() == n, ValueError,
             "{}: alignment must be empty or one per example ({}), got {}", kOp, n, data.alignment.size());
    AG_CHECK(o.permutations >= 1, ValueError, "{}: permutations must be >= 1, got {}", kOp, o.permutations);
    AG_CHECK(o.chunk >= 1, ValueError, "{}: chunk must be >= 1, got {}", kOp, o.chunk);
    AG_CHECK(o.threads >= 1, ValueError, "{}: threads must be >= 1, got {}", kOp, o.threads);
    if (o.adversarial) check_options(o.adversarial_options, kOp);  // before any head is measured
}

constexpr const char* kMeasures[] = {"observe",     "gradient", "leave-one-out", "permutation",
                                     "adversarial", "erasure",  "knockout"};

// What every head's summary reads: the model, the data and the options.
struct Context {
    const ExplainedModel& m;
    const FaithfulnessData& data;
    const FaithfulnessOptions& o;

    // The examples the model classifies right, and the number of classes.
    std::pair<std::int64_t, std::int64_t> correct_over_data() const {
        NoGradGuard no_grad;
        const std::int64_t n = data.inputs.size(0);
        std::int64_t right = 0, classes = 0;
        for (std::int64_t s = 0; s < n; s += o.chunk) {
            const Tensor x = narrow(data.inputs, 0, s, std::min(o.chunk, n - s));
            const Tensor y = m.probabilities(x);
            check_probabilities(y, kOp);
            classes = y.size(-1);
            const auto p = to_dtype(y, DType::Float64).to_vector<double>();
            for (std::int64_t b = 0; b < x.size(0); ++b) {
                const std::int64_t label = data.labels[static_cast<std::size_t>(s + b)];
                const auto first = p.begin() + b * classes;
                right += std::max_element(first, first + classes) - first == label;
            }
        }
        return {right, classes};
    }

    // One head's row (without its verdict), the seconds of each measure added into `sec`.
    HeadFaithfulness summarise(const HeadId& head, std::optional<double> accuracy, Generator& generator,
                               std::map<std::string, double>& sec) const {
        const std::int64_t n = data.inputs.size(0);
        HeadFaithfulness row;
        row.head = head;
        Mean alignment, entropy, max_weight, tau_g, tau_l, iqr, adversarial, flip_top, flip_random, f_att,
            f_grad, f_prod, f_rand;
        std::vector<double> medians;
        for (std::int64_t s = 0; s < n; s += o.chunk) {
            const Tensor x = narrow(data.inputs, 0, s, std::min(o.chunk, n - s));
            const HeadObservation seen = timed(sec["observe"], [&] { return observe_head(m, x, head); });
            const auto grad = timed(sec["gradient"], [&] { return gradient_importance(m, x, head); });
            const auto loo = timed(sec["leave-one-out"], [&] { return leave_one_out(m, x, head); });
            const auto perm = timed(sec["permutation"],
                                    [&] { return permutation_test(m, x, head, o.permutations, generator); });
            const auto erased = timed(sec["erasure"], [&] { return erasure(m, x, head, generator); });
            std::vector<AdversarialResult> adv;
            if (o.adversarial)
                adv = timed(sec["adversarial"],
                            [&] { return adversarial_attention(m, x, head, o.adversarial_options); });
            const auto tg = attention_agreement(seen, grad), tl = attention_agreement(seen, loo);
            for (std::size_t b = 0; b < seen.weights.size(); ++b) {
                const auto& w = seen.weights[b];
                if (!data.alignment.empty()) {
                    const std::int64_t key = data.alignment[static_cast<std::size_t>(s) + b];
                    AG_CHECK(key >= 0 && key < static_cast<std::int64_t>(w.size()), ValueError,
                             "{}: alignment {} of example {} is outside the {} keys", kOp, key,
                             s + static_cast<std::int64_t>(b), w.size());
                    alignment.add(w[static_cast<std::size_t>(key)]);
                }
                double h = 0;
                for (const double v : w) h -= v > 0 ? v * std::log(v) : 0.0;
                entropy.add(h);
                max_weight.add(perm[b].max_weight);
                tau_g.add(tg[b]);
                tau_l.add(tl[b]);
                medians.push_back(perm[b].median);
                iqr.add(perm[b].iqr);
                if (!adv.empty()) adversarial.add(adv[b].jsd);
                flip_top.add(erased[b].flip_top ? 1.0 : 0.0);
                flip_random.add(erased[b].flip_random ? 1.0 : 0.0);
                f_att.add(erased[b].fraction_attention);
                f_grad.add(erased[b].fraction_gradient);
                f_prod.add(erased[b].fraction_product);
                f_rand.add(erased[b].fraction_random);
            }
        }
        row.alignment = alignment.value();
        row.entropy = *entropy.value();
        row.max_weight = *max_weight.value();
        row.tau_gradient = tau_g.value();
        row.tau_loo = tau_l.value();
        row.permutation_median = quantile(medians, 0.5);
        row.permutation_iqr = *iqr.value();
        row.adversarial_jsd = adversarial.value();
        row.flip_top = *flip_top.value();
        row.flip_random = *flip_random.value();
        row.fraction_attention = f_att.value();
        row.fraction_gradient = f_grad.value();
        row.fraction_product = f_prod.value();
        row.fraction_random = f_rand.value();
        if (accuracy) {
            row.accuracy = accuracy;
            row.knockout_accuracy = timed(sec["knockout"], [&] {
                HeadKnockout knockout(*m.model, {{head.layer, {head.head}}});
                return static_cast<double>(correct_over_data().first) / static_cast<double>(n);
            });
        }
        return row;
    }
};

}  // namespace

std::string verdict_figure(double value, int digits, std::initializer_list<double> thresholds) {
    // the rules test "below t" or "t or more": printed and exact value must agree on it
    for (int d = std::max(digits, 0); d <= 15; ++d) {
        const std::string text = fmt::format("{:.{}f}", value, d);
        const double printed = std::strtod(text.c_str(), nullptr);
        if (std::all_of(thresholds.begin(), thresholds.end(),
                        [&](double t) { return (printed < t) == (value < t); }))
            return text;
    }
    return fmt::format("{}", value);  // the shortest text that reads back as `value`
}

std::optional<double> knockout_cost(const HeadFaithfulness& h) {
    if (!h.accuracy || !h.knockout_accuracy) return std::nullopt;
    // accuracies are ratios of counts: their difference's rounding error (4.999999999999996 for
    // 5 points) must not cross a threshold the exact difference meets
    return std::round(1e9 * 100 * (*h.accuracy - *h.knockout_accuracy)) / 1e9;
}

std::string knockout_cost_text(double cost) {
    const std::string figure = verdict_figure(cost, 0, {verdict_thresholds.knockout_points, 0.0});
    return cost < 0 ? fmt::format("raises accuracy by {} points", figure.substr(1))
                    : fmt::format("costs {} points", figure);
}

std::string faithfulness_verdict(const HeadFaithfulness& h, double epsilon) {
    const std::optional<double> cost = knockout_cost(h);
    const VerdictThresholds& limit = verdict_thresholds;
    const auto tvd = verdict_figure(h.permutation_median, 3, {limit.permutation_tvd});
    // Permuted and adversarial weights change the head's weights at the measured row only, the
    // knockout silences the head: together they show the output needs the head, not how its
    // weights at that row are placed. They do not show where else it acts.
    const std::string needed =
        cost && *cost >= limit.knockout_points
            ? fmt::format(
                  "; but knocking it out {}: the output needs the head, not the placement of its "
                  "weights at the row measured",
                  knockout_cost_text(*cost))
            : std::string();
    if (h.permutation_median < limit.permutation_tvd)
        return fmt::format("not an explanation: permuted weights change the output by TVD {}{}", tvd, needed);
    if (h.adversarial_jsd && *h.adversarial_jsd >= limit.adversarial_jsd)
        return fmt::format(
            "not an explanation: weights at JSD {} from its own give the same output (TVD <= {}){}",
            verdict_figure(*h.adversarial_jsd, 2, {limit.adversarial_jsd}), epsilon, needed);
    const std::string tau = h.tau_loo ? verdict_figure(*h.tau_loo, 2, {limit.tau_loo}) : std::string("-");
    if (cost && *cost >= limit.knockout_points && h.tau_loo && *h.tau_loo >= limit.tau_loo)
        return fmt::format("decisive: knocking it out {} and its weights agree with leave-one-out, tau {}",
                           knockout_cost_text(*cost), tau);
    return fmt::format("partial: knockout {}, tau with leave-one-out {}, permuted TVD {}",
                       cost ? knockout_cost_text(*cost) : std::string("costs - points"), tau, tvd);
}

std::vector<std::string> verdict_rules(double epsilon) {
    const VerdictThresholds& limit = verdict_thresholds;
    return {
        fmt::format("not an explanation: permuting the head's weights changes the output by a median TVD "
                    "below {}",
                    limit.permutation_tvd),
        fmt::format("not an explanation: weights at a JSD of {} or more from the head's own (of at most "
                    "ln 2 = 0.69) change the output by a TVD of at most {}",
                    limit.adversarial_jsd, epsilon),
        fmt::format("decisive: knocking the head out costs {} accuracy points or more and its weights agree "
                    "with leave-one-out importance, Kendall tau {} or more",
                    limit.knockout_points, limit.tau_loo),
        std::string("partial: any other head (its knockout cost, tau and permuted TVD are given)")};
}

FaithfulnessTable faithfulness_table(const ExplainedModel& m, const FaithfulnessData& data,
                                     const FaithfulnessOptions& o) {
    check_data(data, o);
    AG_CHECK(m.model != nullptr, ValueError, "{}: the ExplainedModel has no model", kOp);
    std::vector<HeadId> heads = o.heads;
    if (heads.empty())
        for (const auto& layer : attention_layers(*m.model))
            for (std::int64_t h = 0; h < layer.num_heads; ++h) heads.push_back({layer.name, h});
    AG_CHECK(!heads.empty(), ValueError, "{}: the model ({}) has no attention layer", kOp,
             m.model->type_name());
    FaithfulnessTable table;
    table.epsilon = o.adversarial_options.epsilon;
    for (const char* part : kMeasures) table.seconds[part] = 0;
    const Context context{m, data, o};
    std::optional<double> accuracy;
    if (!data.labels.empty()) {
        const auto [right, classes] = context.correct_over_data();
        accuracy = static_cast<double>(right) / static_cast<double>(data.inputs.size(0));
        for (const std::int64_t label : data.labels)
            AG_CHECK(label >= 0 && label < classes, ValueError, "{}: label {} is outside the {} classes", kOp,
                     label, classes);
    }
    // one generator per head, seeded in head order: a head's values do not depend on the thread
    // that summarises it
    Generator seeding(o.seed);
    std::vector<std::uint64_t> seeds;
    for (std::size_t i = 0; i < heads.size(); ++i)
        seeds.push_back(
            static_cast<std::uint64_t>(seeding.randint(0, std::numeric_limits<std::int64_t>::max())));
    std::vector<HeadFaithfulness> rows(heads.size());
    std::vector<std::map<std::string, double>> seconds(heads.size());
    std::vector<std::exception_ptr> errors(heads.size());
    // the first head (in order) that failed: later heads are skipped, earlier ones still run, so
    // the error thrown is the one a single thread meets first
    std::atomic<std::int64_t> failed{std::numeric_limits<std::int64_t>::max()};
    // frozen here, before any worker starts: the measures' own guards then change nothing
    const detail::FrozenParameters frozen(*m.model);
    const bool grad_mode = grad_enabled();
    const nn::AttentionInterventions* outer = nn::detail::active_attention_interventions();
    const int threads =
        m.model->is_training() || attograd::detail::forked_child() ? 1 : static_cast<int>(o.threads);
    attograd::detail::parallel_for(
        static_cast<std::int64_t>(heads.size()), threads,
        [&](std::int64_t i) {
            if (i > failed.load()) return;
            const auto k = static_cast<std::size_t>(i);
            // a worker thread measures under the caller's grad mode and interventions
            const nn::AttentionInterventions*& slot = nn::detail::active_attention_interventions();
            const nn::AttentionInterventions* own = slot;
            slot = outer;
            try {
                std::optional<NoGradGuard> no_grad;
                if (!grad_mode) no_grad.emplace();
                Generator generator(seeds[k]);
                rows[k] = context.summarise(heads[k], accuracy, generator, seconds[k]);
            } catch (...) {
                errors[k] = std::current_exception();
                std::int64_t first = failed.load();
                while (i < first && !failed.compare_exchange_weak(first, i)) {
                }
            }
            slot = own;
        },
        attograd::detail::Schedule::Dynamic);
    for (const auto& error : errors)
        if (error) std::rethrow_exception(error);
    for (std::size_t k = 0; k < heads.size(); ++k) {
        for (const auto& [part, s] : seconds[k]) table.seconds[part] += s;
        rows[k].verdict = faithfulness_verdict(rows[k], table.epsilon);
        table.heads.push_back(std::move(rows[k]));
    }
    return table;
}

std::vector<std::string> faithfulness_columns() {
    return {"layer",    "head",      "align",    "entropy",   "max_w",     "acc",
            "acc_ko",   "tau_grad",  "tau_loo",  "perm_tvd",  "perm_iqr",  "adv_jsd",
            "flip_top", "flip_rand", "frac_att", "frac_grad", "frac_prod", "frac_rand"};
}

std::vector<std::string> faithfulness_cells(const HeadFaithfulness& h) {
    return {h.head.layer.empty() ? std::string("(root)") : h.head.layer,
            std::to_string(h.head.head),
            cell(h.alignment),
            cell(h.entropy),
            cell(h.max_weight),
            cell(h.accuracy),
            cell(h.knockout_accuracy),
            cell(h.tau_gradient),
            cell(h.tau_loo),
            cell(h.permutation_median, 4),
            cell(h.permutation_iqr, 4),
            cell(h.adversarial_jsd),
            cell(h.flip_top),
            cell(h.flip_random),
            cell(h.fraction_attention),
            cell(h.fraction_gradient),
            cell(h.fraction_product),
            cell(h.fraction_random)};
}

std::string to_text(const FaithfulnessTable& table) {
    std::vector<std::vector<std::string>> rows{faithfulness_columns()};
    for (const auto& h : table.heads) rows.push_back(faithfulness_cells(h));
    std::vector<std::size_t> width(rows.front().size(), 0);
    for (const auto& r : rows)
        for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
    std::string out;
    for (const auto& r : rows) {
        for (std::size_t c = 0; c < r.size(); ++c)
            out += fmt::format("{}{:>{}}", c == 0 ? "" : "  ", r[c], width[c]);
        out += '\n';
    }
    out += '\n';
    for (const auto& h : table.heads)
        out += fmt::format("{} head {}: {}\n", h.head.layer.empty() ? "(root)" : h.head.layer, h.head.head,
                           h.verdict);
    // The head the output needs most, whatever its weights show: the one a reader looks for first
    // (a head with the most weight on the right key need not be it).
    const HeadFaithfulness* needed = nullptr;
    for (const auto& h : table.heads) {
        const auto cost = knockout_cost(h);
        if (cost && *cost > 0 && (needed == nullptr || *cost > *knockout_cost(*needed))) needed = &h;
    }
    if (needed != nullptr && table.heads.size() > 1)
        out += fmt::format("the output needs {} head {} most: knocking it out {}\n",
                           needed->head.layer.empty() ? "(root)" : needed->head.layer, needed->head.head,
                           knockout_cost_text(*knockout_cost(*needed)));
    out += "\nverdicts (the first rule that applies):\n";
    for (const auto& rule : verdict_rules(table.epsilon)) out += "  " + rule + "\n";
    out += "\nseconds:";
    for (const auto& [part, s] : table.seconds) out += fmt::format(" {} {:.3f};", part, s);
    out += '\n';
    return out;
}

std::string to_csv(const FaithfulnessTable& table) {
    auto quoted = [](const std::string& s) {
        std::string q = "\"";
        for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
        return q + "\"";
    };
    std::string out;
    for (const auto& c : faithfulness_columns()) out += c + ",";
    out += "verdict\n";
    for (const auto& h : table.heads) {
        auto r = faithfulness_cells(h);
        r[0] = quoted(h.head.layer);
        for (auto& c : r) {
            if (c == "-") c.clear();
            out += c + ",";
        }
        out += quoted(h.verdict) + "\n";
    }
    return out;
}

}  // namespace attograd::inspect
