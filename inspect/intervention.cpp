// Attention intervention as a scoped guard: named heads attend with weights given from outside.
#include "inspect/intervention.hpp"

#include "core/error.hpp"
#include "core/ops.hpp"
#include "nn/attention.hpp"
#include "nn/bahdanau_decoder.hpp"
#include "nn/luong_decoder.hpp"
#include "nn/multihead_attention.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

namespace attograd::inspect {

namespace {

std::string listing(const std::vector<AttentionLayer>& layers) {
    std::string out;
    for (const auto& layer : layers)
        out += fmt::format("{}'{}' ({} head{})", out.empty() ? "" : ", ", layer.name, layer.num_heads,
                           layer.num_heads == 1 ? "" : "s");
    return out;
}

// The attention of a recurrent decoder: its "attention" submodule (the score the recorder names).
const nn::Module* decoder_attention(const nn::Module* module) {
    if (dynamic_cast<const nn::BahdanauDecoder*>(module) == nullptr &&
        dynamic_cast<const nn::LuongDecoder*>(module) == nullptr)
        return nullptr;
    for (const auto& [name, child] : module->named_children())
        if (name == "attention") return child.get();
    return nullptr;
}

// Every attention layer under root with its name, module and head count.
struct FoundLayer {
    AttentionLayer layer;
    const nn::Module* module;
};
std::vector<FoundLayer> find_layers(const nn::Module& root) {
    std::vector<FoundLayer> out;
    for (const auto& [name, module] : root.named_modules()) {
        if (const std::int64_t h = attention_head_count(module); h > 0) out.push_back({{name, h}, module});
        if (const nn::Module* attention = decoder_attention(module))
            out.push_back({{name.empty() ? "attention" : name + ".attention", 1}, attention});
    }
    return out;
}

// Calls f(w) with the values of `x` (float32 or float64, row-major) read in place.
template <class F>
void with_values(const Tensor& x, F&& f) {
    if (x.dtype() == DType::Float32)
        f(x.data<float>());
    else if (x.dtype() == DType::Float64)
        f(x.data<double>());
    else {  // another dtype: its float64 copy
        const Tensor d = to_dtype(x.detach(), DType::Float64);
        f(d.data<double>());
    }
}

// Rows [first, first + Tq) of a fixed matrix [Tq', Tk] or [B, Tq', Tk] broadcast to the head's
// weights own [B, Tq, Tk] (same graph); Tq' is the layer's rows.total (at least first + Tq when
// the total is not known).
Tensor broadcast_fixed(const Tensor& fixed, const Tensor& own, const nn::QueryRows& rows,
                       std::string_view what) {
    const Shape& s = own.shape();
    const std::int64_t fixed_rows = fixed.size(-2);
    const bool rows_fit = rows.total >= 0 ? fixed_rows == rows.total : fixed_rows >= rows.first + s[1];
    const bool fits = rows_fit && fixed.size(-1) == s[2] && (fixed.dim() == 2 || fixed.size(0) == s[0]);
    if (rows.total >= 0)
        AG_CHECK(fits, ShapeError,
                 "{}: fixed weights must be [Tq, Tk] = [{}, {}] or [B, Tq, Tk] = [{}, {}, {}], got {}", what,
                 rows.total, s[2], s[0], rows.total, s[2], fixed.shape());
    AG_CHECK(fits, ShapeError,
             "{}: fixed weights must be [Tq, Tk] or [B, Tq, Tk] with B = {}, Tk = {} and a row for query {}, "
             "got {}",
             what, s[0], s[2], rows.first + s[1] - 1, fixed.shape());
    AG_CHECK(fixed.dtype() == own.dtype(), DTypeError, "{}: fixed weights are {}, the layer computes in {}",
             what, fixed.dtype(), own.dtype());
    const Tensor used =
        rows.first == 0 && fixed_rows == s[1] ? fixed : narrow(fixed, fixed.dim() - 2, rows.first, s[1]);
    return used.dim() == 2 ? used + zeros_like(own) : used;
}

// Each row's allowed weights permuted among the allowed keys: own [B, Tq, Tk] times one
// permutation matrix per row, so the gradient reaches the own weights.
Tensor permute_rows(const Tensor& own, const Tensor& allowed, Generator& generator) {
    const std::int64_t b = own.size(0), tq = own.size(1), tk = own.size(2);
    const bool* ok = allowed.data<bool>();
    std::vector<double> p(static_cast<std::size_t>(b * tq * tk * tk), 0.0);
    std::vector<std::int64_t> keys, shuffled;
    for (std::int64_t r = 0; r < b * tq; ++r) {
        keys.clear();
        for (std::int64_t j = 0; j < tk; ++j)
            if (ok[r * tk + j]) keys.push_back(j);
        shuffled = keys;
        for (std::size_t i = shuffled.size(); i > 1; --i)  // Fisher-Yates
            std::swap(shuffled[i - 1],
                      shuffled[static_cast<std::size_t>(generator.randint(0, static_cast<std::int64_t>(i)))]);
        // weight of key keys[i] moves to key shuffled[i]: P[keys[i], shuffled[i]] = 1
        for (std::size_t i = 0; i < keys.size(); ++i)
            p[static_cast<std::size_t>((r * tk + keys[i]) * tk + shuffled[i])] = 1.0;
    }
    const Tensor perm = tensor(p, {b, tq, tk, tk}, {.dtype = own.dtype()});
    return reshape(matmul(reshape(own, {b, tq, 1, tk}), perm), {b, tq, tk});
}

Tensor uniform_rows(const Tensor& own, const Tensor& allowed) {
    const Tensor a = to_dtype(allowed, own.dtype());
    const Tensor count = sum(a, {-1}, true);
    return a / where(gt(count, 0.0), count, 1.0);
}

}  // namespace

std::int64_t attention_head_count(const nn::Module* module) {
    if (dynamic_cast<const nn::Attention*>(module) != nullptr) return 1;
    if (const auto* mha = dynamic_cast<const nn::MultiHeadAttention*>(module))
        return mha->options().num_heads;
    return 0;
}

std::vector<AttentionLayer> attention_layers(const nn::Module& root) {
    std::vector<AttentionLayer> out;
    for (const auto& found : find_layers(root)) out.push_back(found.layer);
    return out;
}

const nn::Module& find_attention_layer(const nn::Module& root, const std::string& name, std::string_view op) {
    const auto found = find_layers(root);
    AG_CHECK(!found.empty(), ValueError, "{}: the model ({}) has no attention layer", op, root.type_name());
    for (const auto& f : found)
        if (f.layer.name == name) return *f.module;
    const auto layers = attention_layers(root);
    throw ValueError(fmt::format("{}: '{}' is not an attention layer of the model; its layers: {}", op, name,
                                 listing(layers)));
}

void check_replacement(const Tensor& replacement, const Tensor& own, const Tensor& allowed, double tolerance,
                       std::string_view what) {
    AG_CHECK(replacement.defined(), ValueError, "{}: the replacement weights are undefined", what);
    AG_CHECK(replacement.shape() == own.shape(), ShapeError,
             "{}: replacement weights must be [B, Tq, Tk] = {}, got {}", what, own.shape(),
             replacement.shape());
    AG_CHECK(replacement.dtype() == own.dtype(), DTypeError,
             "{}: replacement weights are {}, the layer computes in {}", what, replacement.dtype(),
             own.dtype());
    const bool* ok = allowed.data<bool>();
    const std::int64_t tq = own.size(1), tk = own.size(2), rows = own.size(0) * tq;
    with_values(replacement, [&](const auto* w) {
        for (std::int64_t r = 0; r < rows; ++r) {
            double total = 0.0;
            bool any_allowed = false;
            for (std::int64_t j = 0; j < tk; ++j) {
                const auto x = static_cast<double>(w[r * tk + j]);
                AG_CHECK(std::isfinite(x) && x >= 0, ValueError,
                         "{}: replacement weight [{}, {}, {}] is {}; weights must be finite and >= 0", what,
                         r / tq, r % tq, j, x);
                AG_CHECK(x == 0 || ok[r * tk + j], ValueError,
                         "{}: replacement weight [{}, {}, {}] is {} on a masked key; masked keys must get 0",
                         what, r / tq, r % tq, j, x);
                any_allowed = any_allowed || ok[r * tk + j];
                total += x;
            }
            AG_CHECK(!any_allowed || std::abs(total - 1.0) <= tolerance, ValueError,
                     "{}: replacement row [{}, {}] sums to {:.10g}, not 1 (tolerance {})", what, r / tq,
                     r % tq, total, tolerance);
        }
    });
}

Replacement Replacement::fixed(Tensor weights) {
    AG_CHECK(weights.defined() && (weights.dim() == 2 || weights.dim() == 3), ShapeError,
             "Replacement::fixed: weights must be [Tq, Tk] or [B, Tq, Tk], got {}",
             weights.defined() ? fmt::format("{}", weights.shape()) : std::string("undefined"));
    AG_CHECK(is_floating(weights.dtype()), DTypeError,
             "Replacement::fixed: weights must be float32 or float64, got {}", weights.dtype());
    Replacement r;
    r.fn_ = [weights](const Tensor& own, const Tensor&) {
        return broadcast_fixed(weights, own, {.first = 0, .total = own.size(1)}, "Replacement::fixed");
    };
    r.fixed_ = std::move(weights);
    return r;
}

Replacement Replacement::uniform() {
    Replacement r;
    r.fn_ = uniform_rows;
    return r;
}

Replacement Replacement::permuted(Generator& generator) {
    Replacement r;
    r.fn_ = [g = &generator](const Tensor& own, const Tensor& allowed) {
        return permute_rows(own, allowed, *g);
    };
    return r;
}

Replacement Replacement::function(WeightFunction f) {
    AG_CHECK(static_cast<bool>(f), ValueError, "Replacement::function: the function is empty");
    Replacement r;
    r.fn_ = std::move(f);
    return r;
}

Replacement Replacement::row_function(RowWeightFunction f) {
    AG_CHECK(static_cast<bool>(f), ValueError, "Replacement::row_function: the function is empty");
    Replacement r;
    r.row_fn_ = std::move(f);
    return r;
}

Replacement Replacement::silence() {
    Replacement r;
    r.silence_ = true;
    return r;
}

AttentionIntervention::AttentionIntervention(
    const nn::Module& root, const std::map<std::string, std::map<std::int64_t, Replacement>>& heads,
    InterventionOptions options)
    : AttentionIntervention(root, heads, options, "AttentionIntervention") {}

AttentionIntervention::AttentionIntervention(
    const nn::Module& root, const std::map<std::string, std::map<std::int64_t, Replacement>>& heads,
    InterventionOptions options, std::string_view op) {
    AG_CHECK(!heads.empty(), ValueError, "{}: names no layer and head to {}", op,
             op == "HeadKnockout" ? "silence" : "intervene on");
    AG_CHECK(options.tolerance > 0 && options.tolerance < 0.5, ValueError,
             "{}: tolerance must be in (0, 0.5), got {}", op, options.tolerance);
    if (nn::detail::active_attention_interventions() != nullptr)
        installed_.layers = nn::detail::active_attention_interventions()->layers;
    for (const auto& [name, chosen] : heads) {
        const nn::Module& layer = find_attention_layer(root, name, op);
        const std::int64_t h = std::max<std::int64_t>(attention_head_count(&layer), 1);  // a decoder's: 1
        AG_CHECK(!chosen.empty(), ValueError, "{}: layer '{}' names no head", op, name);
        auto& per_head = installed_.layers[&layer];
        per_head.resize(static_cast<std::size_t>(h));
        for (const auto& [head, replacement] : chosen) {
            AG_CHECK(head >= 0 && head < h, IndexError, "{}: layer '{}' has {} head{}, no head {}", op, name,
                     h, h == 1 ? "" : "s", head);
            nn::HeadIntervention& slot = per_head[static_cast<std::size_t>(head)];
            const nn::HeadIntervention outer = slot;
            slot = {};
            if (options.beneath && (outer.silence || (outer.replace && replacement.silences()))) {
                slot = outer;  // nothing of this guard's reaches the output
                continue;
            }
            if (replacement.silences()) {
                slot.silence = true;
                continue;
            }
            const std::string what = fmt::format("{}: layer '{}' head {}", op, name, head);
            slot.replace = [fn = replacement.fn(), row_fn = replacement.row_fn_, fixed = replacement.fixed_,
                            what, tolerance = options.tolerance](const Tensor& own, const Tensor& allowed,
                                                                 const nn::QueryRows& rows) {
                Tensor used;
                try {
                    used = fixed.defined() ? broadcast_fixed(fixed, own, rows, "Replacement::fixed")
                           : row_fn        ? row_fn(own, allowed, rows.first)
                                           : fn(own, allowed);
                } catch (const ShapeError& e) {  // name the layer and head
                    throw ShapeError(fmt::format("{}: {}", what, e.what()));
                } catch (const DTypeError& e) {
                    throw DTypeError(fmt::format("{}: {}", what, e.what()));
                }
                check_replacement(used, own, allowed, tolerance, what);
                return used;
            };
            if (options.beneath && outer.replace)
                slot.replace = [mine = slot.replace, over = outer.replace](
                                   const Tensor& own, const Tensor& allowed, const nn::QueryRows& rows) {
                    return over(mine(own, allowed, rows), allowed, rows);
                };
        }
    }
    installed_.previous = nn::detail::active_attention_interventions();
    nn::detail::active_attention_interventions() = &installed_;
}

AttentionIntervention::~AttentionIntervention() {
    nn::detail::active_attention_interventions() = installed_.previous;
}

}  // namespace attograd::inspect
