// Single-head attention: options, validation, normalisers and the global path.
#include "nn/attention.hpp"

#include "core/error.hpp"
#include "core/ops_elementwise.hpp"
#include "core/ops_matmul.hpp"
#include "core/ops_random.hpp"
#include "core/ops_shape.hpp"
#include "core/ops_softmax.hpp"
#include "core/ops_sparsemax.hpp"
#include "nn/attention_intervention.hpp"
#include "nn/attention_recorder.hpp"
#include "nn/detail/check_scoring.hpp"
#include "nn/linear.hpp"
#include "nn/parameter_size.hpp"
#include "nn/unbatched.hpp"

#include <cmath>

namespace attograd::nn {
namespace {

constexpr const char* kOp = "Attention";

std::int64_t or_default(std::int64_t value, std::int64_t fallback) { return value == 0 ? fallback : value; }

void check_options(const AttentionOptions& o) {
    AG_CHECK(
        o.query_dim >= 1 && o.key_dim >= 0 && o.value_dim >= 0 && o.embed_dim >= 0 && o.hidden >= 0,
        ValueError,
        "{}: widths must be positive (0 = default), got query_dim={} key_dim={} value_dim={} embed_dim={} "
        "hidden={}",
        kOp, o.query_dim, o.key_dim, o.value_dim, o.embed_dim, o.hidden);
    AG_CHECK(is_floating(o.dtype), DTypeError, "{}: dtype must be float32 or float64, got {}", kOp, o.dtype);
    detail::check_scoring_options(o.scoring, kOp, false);
    AG_CHECK(o.dropout >= 0 && o.dropout <= 1, ValueError, "{}: dropout must be in [0, 1], got {}", kOp,
             o.dropout);
    AG_CHECK(o.temperature > 0, ValueError, "{}: temperature must be > 0, got {}", kOp, o.temperature);
}

}  // namespace

Normalizer parse_normalizer(std::string_view name) {
    if (name == "soft" || name == "softmax") return Normalizer::Soft;
    if (name == "sparse" || name == "sparsemax") return Normalizer::Sparse;
    if (name == "hard") return Normalizer::Hard;
    throw ValueError(fmt::format("attention: unknown normaliser '{}' (choose soft, sparse or hard)", name));
}

std::string_view to_string(Normalizer normalizer) {
    switch (normalizer) {
        case Normalizer::Soft:
            return "soft";
        case Normalizer::Sparse:
            return "sparse";
        case Normalizer::Hard:
            return "hard";
    }
    throw InternalError("to_string: unknown Normalizer");
}

Attention::Attention(AttentionOptions options, Generator& generator)
    : options_(options), generator_(&generator), baseline_((check_options(options), options.baseline_decay)) {
    AttentionOptions& o = options_;
    o.key_dim = or_default(o.key_dim, o.query_dim);
    o.value_dim = or_default(o.value_dim, o.key_dim);
    o.embed_dim = or_default(o.embed_dim, o.query_dim);
    auto projection = [&](const char* name, std::int64_t in) {
        check_parameter_size(type_name(),
                             fmt::format("{} {} and embed_dim {}",
                                         name[0] == 'q'   ? "query_dim"
                                         : name[0] == 'k' ? "key_dim"
                                                          : "value_dim",
                                         in, o.embed_dim),
                             std::string(name) + ".weight", {o.embed_dim, in}, o.dtype);
        return register_module(
            name, std::make_shared<Linear>(
                      LinearOptions{
                          .in_features = in, .out_features = o.embed_dim, .bias = o.bias, .dtype = o.dtype},
                      generator));
    };
    if (o.project_query) q_proj_ = projection("q_proj", o.query_dim);
    if (o.project_key) k_proj_ = projection("k_proj", o.key_dim);
    if (o.project_value) v_proj_ = projection("v_proj", o.value_dim);
    const std::int64_t dq = o.project_query ? o.embed_dim : o.query_dim;
    const std::int64_t dk = o.project_key ? o.embed_dim : o.key_dim;
    const std::int64_t h = or_default(o.hidden, dq);
    score_ = register_module(
        "score", make_score(o.scoring.score, {.query_dim = dq, .key_dim = dk, .hidden = h}, generator));
    if (o.scoring.local == LocalMode::Predictive) {
        // Uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)], as the other parameters.
        const double bw = 1.0 / std::sqrt(static_cast<double>(dq)),
                     bv = 1.0 / std::sqrt(static_cast<double>(h));
        W_p_ = register_parameter("W_p", uniform({h, dq}, -bw, bw, generator, {.dtype = o.dtype}));
        v_p_ = register_parameter("v_p", uniform({h}, -bv, bv, generator, {.dtype = o.dtype}));
    }
    if (o.normalizer == Normalizer::Hard && o.estimator == HardEstimator::Reinforce) {
        // The REINFORCE baseline is training state: in the state_dict, so checkpoints resume it.
        register_buffer("reward_baseline", baseline_.value_buffer());
        register_buffer("reward_baseline_updates", baseline_.updates_buffer());
    }
    score_->to(o.dtype);
    has_parameters_ = !parameters().empty();
}

Attention::~Attention() = default;

void Attention::check_loaded_state(const StateDict& state, const std::string& prefix) const {
    const std::string key = prefix + "reward_baseline_updates";
    const auto it = state.find(key);
    // Only a REINFORCE layer has the buffer; load_state_dict checked its shape and dtype.
    const bool reinforce =
        options_.normalizer == Normalizer::Hard && options_.estimator == HardEstimator::Reinforce;
    if (!reinforce || it == state.end()) return;
    const std::int64_t updates = it->second.data<std::int64_t>()[0];
    AG_CHECK(updates >= 0, ValueError,
             "load_state_dict: '{}' is {}, but it counts the REINFORCE baseline's updates (>= 0)", key,
             updates);
}

std::string Attention::extra_repr() const {
    const AttentionOptions& o = options_;
    std::string out =
        fmt::format("query_dim={}, key_dim={}, value_dim={}, score={}, normalizer={}", o.query_dim, o.key_dim,
                    o.value_dim, to_string(o.scoring.score), to_string(o.normalizer));
    if (o.normalizer == Normalizer::Hard) out += fmt::format(", estimator={}", to_string(o.estimator));
    if (o.scoring.local != LocalMode::None)
        out += fmt::format(", local={}, window={}", to_string(o.scoring.local), o.scoring.window);
    if (o.dropout > 0) out += fmt::format(", dropout={}", o.dropout);
    return out;
}

AttentionOutput Attention::forward(const Tensor& query, const Tensor& inputs,
                                   const AttentionArgs& args) const {
    return forward(query, inputs, inputs, args);
}

AttentionOutput Attention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const AttentionArgs& args) const {
    if (query.defined() && key.defined() && value.defined() && query.dim() == 2 && key.dim() == 2 &&
        value.dim() == 2) {  // unbatched [T, D], as PyTorch: run as a batch of one (nn/unbatched.hpp)
        const Unbatched in(query, key, value, args.key_padding_mask);
        AttentionArgs batched = args;
        batched.key_padding_mask = in.key_padding_mask;
        AttentionOutput out = forward(in.query, in.key, in.value, batched);
        for (Tensor* t :
             {&out.output, &out.weights, &out.band_weights, &out.window_start, &out.centre, &out.log_prob})
            *t = drop_batch(*t);
        return out;
    }
    const AttentionOptions& o = options_;
    const AttentionMasks masks = args.masks();
    const bool need_weights = args.need_weights;
    AG_CHECK(query.defined() && key.defined() && value.defined(), ValueError,
             "{}: undefined query, key or value", kOp);
    AG_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3 && query.size(2) == o.query_dim &&
                 key.size(2) == o.key_dim && value.size(2) == o.value_dim,
             ShapeError, "{}: expected query [B, Tq, {}], key [B, Tk, {}], value [B, Tk, {}], got {}, {}, {}",
             kOp, o.query_dim, o.key_dim, o.value_dim, query.shape(), key.shape(), value.shape());
    AG_CHECK(query.size(0) == key.size(0) && key.size(0) == value.size(0) && key.size(1) == value.size(1),
             ShapeError, "{}: batch sizes or key counts differ: query {}, key {}, value {}", kOp,
             query.shape(), key.shape(), value.shape());
    AG_CHECK(key.size(1) >= 1, ShapeError, "{}: no keys to attend to: key {}", kOp, key.shape());
    if (has_parameters_) {
        check_input_dtype(query, o.dtype, kOp, "query");
        check_input_dtype(key, o.dtype, kOp, "key");
        check_input_dtype(value, o.dtype, kOp, "value");
    }
    AG_CHECK(query.dtype() == key.dtype() && key.dtype() == value.dtype(), DTypeError,
             "{}: dtypes differ: query {}, key {}, value {}", kOp, query.dtype(), key.dtype(), value.dtype());
    check_attention_masks(masks, query.size(0), 1, query.size(1), key.size(1), query.dtype(), kOp);
    const Tensor q = q_proj_ ? q_proj_->forward(query) : query;
    const Tensor k = k_proj_ ? k_proj_->forward(key) : key;
    const Tensor v = v_proj_ ? v_proj_->forward(value) : value;
    AttentionOutput out = o.scoring.local == LocalMode::None ? forward_global(q, k, v, masks, need_weights)
                                                             : forward_local(q, k, v, masks, need_weights);
    // Replacement weights are applied inside forward_global / forward_local, which have the values
    // and the mask.
    if (const auto* heads = head_interventions(this); heads != nullptr && !replaces_weights(heads))
        silence_heads(*heads, out.output, out.weights);
    if (out.weights.defined()) record_attention(this, out.weights);
    if (!need_weights)
        out.weights = Tensor();
    else if (!args.average_attn_weights)
        out.weights = unsqueeze(out.weights, 1);  // [B, 1, Tq, Tk]: the one head's, as MultiHeadAttention's
    return out;
}

Attention::Normalised Attention::normalise(const Tensor& scores) const {
    switch (options_.normalizer) {
        case Normalizer::Soft:
            return {softmax(scores, -1), Tensor()};
        case Normalizer::Sparse:
            return {sparsemax(scores, -1), Tensor()};
        case Normalizer::Hard: {
            HardAttention h =
                hard_attention(scores, is_training(), options_.estimator, options_.temperature, *generator_);
            return {h.weights, h.log_prob};
        }
    }
    throw InternalError("Attention: unknown normaliser");
}

Tensor Attention::attention_dropout(const Tensor& weights) const {
    if (options_.dropout == 0 || !is_training()) return weights;
    return dropout(weights, options_.dropout, true, *generator_);
}

AttentionOutput Attention::forward_global(const Tensor& q, const Tensor& k, const Tensor& v,
                                          const AttentionMasks& masks, bool need_weights) const {
    const std::int64_t batch = q.size(0), tq = q.size(1), tk = k.size(1);
    Tensor scores = score_->forward(q, k);  // [B, Tq, Tk]
    Tensor mask;                            // [B or 1, 1, Tq, Tk] additive mask (-inf where not allowed)
    if (!masks.empty()) {
        mask = combine_attention_masks(masks, batch, 1, tq, tk, scores.dtype(), kOp);
        scores = scores + reshape(mask, {mask.size(0), tq, tk});
    }
    Normalised n = normalise(scores);
    AttentionOutput out;
    if (const auto* heads = head_interventions(this); replaces_weights(heads)) {
        // The weights used (the head's own, replaced or 0) times the values, as one head.
        Tensor weights = reshape(n.weights, {batch, 1, tq, tk});
        replace_head_weights(*heads, reshape(v, {batch, 1, tk, v.size(2)}),
                             allowed_keys(mask, batch, 1, tq, tk), out.output, weights);
        out.weights = reshape(weights, {batch, tq, tk});
        out.log_prob = n.log_prob;
        return out;
    }
    out.output = matmul(attention_dropout(n.weights), v);  // [B, Tq, Tk] x [B, Tk, Dv] -> [B, Tq, Dv]
    out.weights = n.weights;
    out.log_prob = n.log_prob;
    (void)need_weights;  // the weights exist anyway on the global path
    return out;
}

Tensor Attention::reinforce_loss(const Tensor& log_prob, const Tensor& reward) {
    AG_CHECK(options_.normalizer == Normalizer::Hard && options_.estimator == HardEstimator::Reinforce,
             ValueError,
             "{}: reinforce_loss needs normalizer Hard with estimator Reinforce (this layer: {}, {})", kOp,
             to_string(options_.normalizer), to_string(options_.estimator));
    AG_CHECK(log_prob.defined(), ValueError,
             "{}: reinforce_loss got no log_prob (forward returns one only while training)", kOp);
    Tensor loss = reinforce_surrogate(log_prob, reward, baseline_.baseline_for(reward));
    baseline_.update(reward);
    return loss;
}

Tensor ReinforceTrace::loss(const Tensor& reward) const {
    Tensor total;
    for (const Entry& e : entries) {
        AG_CHECK(e.attention != nullptr, ValueError, "ReinforceTrace::loss: an entry has no attention layer");
        const Tensor l = e.attention->reinforce_loss(e.log_prob, reward);
        total = total.defined() ? total + l : l;
    }
    return total;
}

}  // namespace attograd::nn
