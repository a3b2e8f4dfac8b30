// MultiHeadAttention's incremental paths: a key/value cache for causal self-attention (appended
// per position) and for cross-attention (the memory projected once), as Hugging Face's
// `past_key_values`.
#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops.hpp"
#include "core/ops_linear.hpp"
#include "core/ops_positional.hpp"
#include "nn/attention_intervention.hpp"
#include "nn/attention_recorder.hpp"
#include "nn/linear.hpp"
#include "nn/multihead_attention.hpp"

namespace attograd::nn {
namespace {

// Rows `rows` of x (undefined stays undefined).
Tensor keep_rows(const Tensor& x, const Tensor& rows) { return x.defined() ? index_select(x, 0, rows) : x; }

// ALiBi's bias of query p over keys 0..tk-1: [1, h, 1, tk], entry -m_h |p - s|, computed as
// alibi_bias computes row p of its [1, h, Tq, Tk] table (the same double product, then the cast).
Tensor alibi_row(std::int64_t heads, std::int64_t p, std::int64_t tk, DType dtype) {
    const std::vector<double> slopes = alibi_slopes(heads);
    Tensor out = empty({1, heads, 1, tk}, {.dtype = dtype});
    dispatch_floating(dtype, "alibi_row", [&]<class T>(T) {
        T* o = out.data<T>();
        for (std::int64_t h = 0; h < heads; ++h)
            for (std::int64_t s = 0; s < tk; ++s)
                *o++ = static_cast<T>(-slopes[static_cast<std::size_t>(h)] *
                                      static_cast<double>(std::abs(p - s)));
    });
    return out;
}

}  // namespace

void KeyValueCache::reorder(const Tensor& rows) {
    if (!key.defined()) return;
    AG_CHECK(rows.defined() && rows.dtype() == DType::Int64 && rows.dim() == 1, ShapeError,
             "KeyValueCache::reorder: rows must be int64 [N'], got {}",
             rows.defined() ? fmt::format("{} {}", rows.dtype(), rows.shape()) : "an undefined tensor");
    const std::int64_t n = batch_size();
    const std::int64_t* r = rows.data<std::int64_t>();
    for (std::int64_t i = 0; i < rows.numel(); ++i)
        AG_CHECK(r[i] >= 0 && r[i] < n, IndexError,
                 "KeyValueCache::reorder: row index {} at {} is outside the cache's {} rows", r[i], i, n);
    key = keep_rows(key, rows);
    value = keep_rows(value, rows);
    key_padding_mask = keep_rows(key_padding_mask, rows);
}

bool MultiHeadAttention::supports_cache() const {
    const auto& o = options_;
    return (o.scoring.score == Score::ScaledDot || o.scoring.score == Score::Dot) &&
           o.scoring.local == LocalMode::None && !o.add_bias_kv && !o.add_zero_attn;
}

void MultiHeadAttention::check_cache(const char* fn, const Tensor& query, const KeyValueCache& cache,
                                     bool cross) const {
    const auto& o = options_;
    AG_CHECK(supports_cache(), ValueError,
             "{}::{}: incremental decoding needs global attention with the dot or scaled-dot score and no "
             "add_bias_kv / add_zero_attn, got score={}, local={}, add_bias_kv={}, add_zero_attn={}",
             type_name(), fn, to_string(o.scoring.score), to_string(o.scoring.local), o.add_bias_kv,
             o.add_zero_attn);
    AG_CHECK(query.defined() && query.dim() == 3 && query.size(1) == 1 && query.size(2) == o.embed_dim,
             ShapeError, "{}::{}: the query must be one new position [N, 1, E] with E = {}, got {}",
             type_name(), fn, o.embed_dim,
             query.defined() ? fmt::format("{}", query.shape()) : "an undefined tensor");
    check_input_dtype(query, o.dtype, fmt::format("{}::{}", type_name(), fn), "query");
    if (cache.owner == nullptr) return;
    AG_CHECK(
        cache.key.dtype() == o.dtype, DTypeError,
        "{}::{}: the cache holds {} keys but the module now computes in {} (converted after the cache was "
        "started): start a new cache",
        type_name(), fn, cache.key.dtype(), o.dtype);
    AG_CHECK(cache.cross == cross, ValueError, "{}::{}: the cache holds {} keys, not {} keys", type_name(),
             fn, cache.cross ? "cross-attention" : "self-attention",
             cross ? "cross-attention" : "self-attention");
    AG_CHECK(cache.owner == this, ValueError,
             "{}::{}: the cache was filled by another attention module (each layer needs its own cache)",
             type_name(), fn);
    AG_CHECK(cache.batch_size() == query.size(0), ShapeError,
             "{}::{}: the cache holds {} rows but the query {} has {} (reorder the cache with the prefixes)",
             type_name(), fn, cache.batch_size(), query.shape(), query.size(0));
}

MultiHeadAttentionOutput MultiHeadAttention::attend_cached(const Tensor& q, const KeyValueCache& cache,
                                                           const Tensor& mask,
                                                           const CachedAttentionArgs& args) const {
    const auto& o = options_;
    const bool recording = attention_recording();
    const auto* interventions = head_interventions(this);
    const bool replacing = replaces_weights(interventions);
    const SdpaOptions sdpa{.attn_mask = mask,
                           .scale = o.scoring.score == Score::Dot ? std::optional<double>(1.0) : std::nullopt,
                           .dropout_p = o.dropout,
                           .training = is_training(),
                           .generator = generator_,
                           .need_weights = args.need_weights || recording || replacing};
    auto r = scaled_dot_product_attention_heads(q, cache.key, cache.value, o.num_heads, sdpa);
    Tensor heads = r.output, weights = r.weights;
    if (replacing) {  // as forward's unfused path, over the cached values
        const std::int64_t n = q.size(0), tkv = cache.value.size(1), h = o.num_heads;
        const Tensor values = permute(reshape(cache.value, {n, tkv, h, head_dim()}), {0, 2, 1, 3});
        replace_head_weights(*interventions, values, allowed_keys(mask, n, h, 1, tkv), heads, weights);
    } else if (interventions != nullptr) {
        silence_heads(*interventions, heads, weights);
    }
    if (recording) record_attention(this, weights);
    MultiHeadAttentionOutput out{.output = out_proj_->forward(heads), .weights = {}};
    if (args.need_weights) out.weights = args.average_attn_weights ? mean(weights, {1}) : weights;
    return out;
}

MultiHeadAttentionOutput MultiHeadAttention::forward_cached(const Tensor& x, KeyValueCache& cache,
                                                            const Tensor& key_padding_mask,
                                                            const CachedAttentionArgs& args) const {
    constexpr const char* fn = "forward_cached";
    check_cache(fn, x, cache, false);
    const auto& o = options_;
    const std::int64_t n = x.size(0), e = o.embed_dim, p = cache.length();
    const std::string op = fmt::format("{}::{}", type_name(), fn);
    check_key_padding_mask(key_padding_mask, {.mask = "key_padding_mask", .tk = "1"}, n, 1, o.dtype, op);
    AG_CHECK(!key_padding_mask.defined() || !cache.key_padding_mask.defined() ||
                 key_padding_mask.dtype() == cache.key_padding_mask.dtype(),
             DTypeError, "{}: key_padding_mask is {} but the cached one is {}", op, key_padding_mask.dtype(),
             cache.key_padding_mask.dtype());
    // q, k, v of the new position, from one GEMM when packed as the uncached path computes them
    Tensor q, k, v;
    if (packed_projection()) {
        const Tensor qkv = rotate_at(linear(x, in_proj_weight_, in_proj_bias_), p);  // [N, 1, 3E]
        q = narrow(qkv, 2, 0, e);
        k = narrow(qkv, 2, e, e);
        v = narrow(qkv, 2, 2 * e, e);
    } else {
        const Projected pr = project(x, x, x);
        q = rotate_at(pr.q, p);
        k = rotate_at(pr.k, p);
        v = pr.v;
    }
    // the new key's padding entry, with "not padded" for earlier keys that had none
    Tensor new_mask = key_padding_mask;
    if (!new_mask.defined() && cache.key_padding_mask.defined())
        new_mask = zeros({n, 1}, {.dtype = cache.key_padding_mask.dtype()});
    Tensor old_mask = cache.key_padding_mask;
    if (new_mask.defined() && !old_mask.defined() && p > 0)
        old_mask = zeros({n, p}, {.dtype = new_mask.dtype()});
    cache.key = p == 0 ? k : concat({cache.key, k}, 1);
    cache.value = p == 0 ? v : concat({cache.value, v}, 1);
    if (new_mask.defined())
        cache.key_padding_mask = old_mask.defined() ? concat({old_mask, new_mask}, 1) : new_mask;
    cache.owner = this;
    cache.cross = false;
    cache.steps = p + 1;
    // the last row of the causal mask allows every cached key: only padding and ALiBi remain
    Tensor mask = combine_attention_masks({.key_padding_mask = cache.key_padding_mask}, n, o.num_heads, 1,
                                          p + 1, o.dtype, op);
    if (o.scoring.positional == Positional::ALiBi) {
        const Tensor bias = alibi_row(o.num_heads, p, p + 1, o.dtype);
        mask = mask.defined() ? mask + bias : bias;
    }
    return attend_cached(q, cache, mask, args);
}

MultiHeadAttentionOutput MultiHeadAttention::forward_cross_cached(const Tensor& query, const Tensor& memory,
                                                                  KeyValueCache& cache,
                                                                  const Tensor& memory_key_padding_mask,
                                                                  const CachedAttentionArgs& args) const {
    constexpr const char* fn = "forward_cross_cached";
    check_cache(fn, query, cache, true);
    const auto& o = options_;
    const std::string op = fmt::format("{}::{}", type_name(), fn);
    const std::int64_t e = o.embed_dim, p = cache.steps;
    if (cache.owner == nullptr) {  // the first step: project the memory's keys and values once
        check_inputs(query, memory, memory);
        check_key_padding_mask(memory_key_padding_mask, {.mask = "memory_key_padding_mask", .tk = "S"},
                               query.size(0), memory.size(1), o.dtype, op);
        const Projected pr = project(query, memory, memory);
        cache = {.key = rotate(pr.k),
                 .value = pr.v,
                 .key_padding_mask = memory_key_padding_mask,
                 .owner = this,
                 .cross = true,
                 .memory = memory};
    } else {
        AG_CHECK(
            memory.defined() && memory.impl() == cache.memory.impl(), ValueError,
            "{}: memory {} is not the tensor the cache was started with ({}): pass that same tensor at every "
            "step, also after a reorder (the cache holds its keys by row); another memory needs a new cache",
            op, memory.defined() ? fmt::format("{}", memory.shape()) : "(undefined)", cache.memory.shape());
    }
    // the query as project() computes it: the first row block of in_proj_weight, or q_proj_weight
    const Tensor bias_q = in_proj_bias_.defined() ? narrow(in_proj_bias_, 0, 0, e) : Tensor();
    const Tensor w_q = packed_projection() ? narrow(in_proj_weight_, 0, 0, e) : q_proj_weight_;
    const Tensor q = rotate_at(linear(query, w_q, bias_q), p);
    cache.steps = p + 1;
    const std::int64_t tk = cache.length();
    Tensor mask = combine_attention_masks({.key_padding_mask = cache.key_padding_mask}, query.size(0),
                                          o.num_heads, 1, tk, o.dtype, op);
    if (o.scoring.positional == Positional::ALiBi) {
        const Tensor bias = alibi_row(o.num_heads, p, tk, o.dtype);
        mask = mask.defined() ? mask + bias : bias;
    }
    return attend_cached(q, cache, mask, args);
}

Tensor MultiHeadAttention::rotate_at(const Tensor& x, std::int64_t position) const {
    if (options_.scoring.positional != Positional::Rotary || position == 0) return rotate(x);
    // row `position` of the rotation of [N, position + 1, W]: the angles rotary_embedding computes
    const Tensor before = zeros({x.size(0), position, x.size(2)}, {.dtype = x.dtype()});
    return narrow(rotate(concat({before, x}, 1)), 1, position, 1);
}

}  // namespace attograd::nn
