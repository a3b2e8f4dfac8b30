// Attention score functions: additive, dot, scaled dot and bilinear, as reusable modules.
#pragma once

#include "core/generator.hpp"
#include "nn/module.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::nn {

/// The score s(x, q) of a key x (width Dk) for a query q (width Dq):
/// - Additive (Bahdanau, Cho & Bengio 2015): v^T tanh(W x + U q); parameters W [H, Dk], U [H, Dq], v [H].
/// - Dot (Luong, Pham & Manning 2015, "dot"): x^T q; no parameters; needs Dk == Dq.
/// - ScaledDot (Vaswani et al. 2017, eq. 1): x^T q / sqrt(D); no parameters; needs Dk == Dq.
/// - Bilinear (Luong et al. 2015, "general"): x^T W q; parameter W [Dk, Dq].
/// A program adds its own scores with nn::register_score (nn/score_registry.hpp), which returns
/// the Score value of each, after Bilinear.
enum class Score { Additive, Dot, ScaledDot, Bilinear };

/// Parses a registered score's name: "additive", "dot", "scaled-dot", "bilinear" or one added by
/// register_score. Throws ValueError listing the choices.
Score parse_score(std::string_view name);
/// The name parse_score accepts for `score`. Throws ValueError for a value no entry has.
std::string_view to_string(Score score);
/// The names parse_score accepts in registration order: additive, dot, scaled-dot, bilinear, then
/// those added by register_score.
std::vector<std::string> score_names();

/// Options of every score module.
struct AttentionScoreOptions {
    std::int64_t query_dim = 0;  ///< Dq, width of a query (> 0)
    std::int64_t key_dim = 0;    ///< Dk, width of a key; 0 = query_dim
    std::int64_t hidden = 0;     ///< H, the additive score's hidden width; 0 = query_dim
    /// Additive score only: learn biases inside and outside the tanh,
    /// v^T tanh(W x + b_W + U q + b_U) + b_v, so that PyTorch's seq2seq tutorial's
    /// `BahdanauAttention` (Va(tanh(Wa(query) + Ua(keys))) with three nn.Linear) is expressible
    /// exactly: Wa -> U, U_bias; Ua -> W, W_bias; Va -> v (Va.weight[0]), v_bias. b_v shifts every
    /// score of a query equally, so it never changes the weights.
    bool bias = false;
};

/// Base of the score modules: maps queries [B, Tq, Dq] and keys [B, Tk, Dk] to scores
/// [B, Tq, Tk] (all pairs) or to a band of scores [B, Tq, W] (local attention).
class AttentionScore : public Module {
public:
    /// Scores of every query against every key: query [B, Tq, Dq], key [B, Tk, Dk] -> [B, Tq, Tk].
    /// Throws ShapeError naming both shapes (wrong ranks, widths or batch sizes), DTypeError.
    virtual Tensor forward(const Tensor& query, const Tensor& key) const = 0;
    /// Scores of query t against the `width` keys window_start[b, t] + j only (see
    /// core/ops_local_attention.hpp): [B, Tq, Dq], [B, Tk, Dk], int64 [B, Tq] -> [B, Tq, width],
    /// 0 in slots outside [0, Tk). Time and memory linear in Tq * width. Throws as forward,
    /// ValueError when width < 1.
    virtual Tensor forward_local(const Tensor& query, const Tensor& key, const Tensor& window_start,
                                 std::int64_t width) const = 0;

    /// Which score this module computes.
    Score kind() const { return kind_; }
    std::int64_t query_dim() const { return query_dim_; }  ///< Dq, the query width
    std::int64_t key_dim() const { return key_dim_; }      ///< Dk, the key width
    std::string extra_repr() const override;

protected:
    /// A score of `kind` over queries of width `query_dim` and keys of width `key_dim`.
    AttentionScore(Score kind, std::int64_t query_dim, std::int64_t key_dim);
    /// Checks query [B, Tq, Dq] and key [B, Tk, Dk] against the module's widths.
    void check_inputs(const Tensor& query, const Tensor& key) const;

private:
    Score kind_;
    std::int64_t query_dim_, key_dim_;
};

// Parameters are drawn from the constructor's generator, uniform in [-1/sqrt(fan_in),
// 1/sqrt(fan_in)] (the bound of PyTorch's nn.Linear default initialisation).

/// v^T tanh(W x + U q) (Bahdanau et al. 2015). W x is computed once per key and U q once per
/// query; one fused op (core/ops_additive_score.hpp) forms the pairs without storing
/// [B, Tq, Tk, H] temporaries. Parameters `W` [H, Dk], `U` [H, Dq], `v` [H]; with
/// options.bias also `W_bias` [H], `U_bias` [H] and `v_bias` [1] (see AttentionScoreOptions::bias).
class AdditiveScore final : public AttentionScore {
public:
    /// Draws W, U and v (and the biases) from `generator` as PyTorch's Linear does.
    /// Throws ValueError naming a width < 1.
    explicit AdditiveScore(const AttentionScoreOptions& options, Generator& generator = default_generator());
    Tensor forward(const Tensor& query, const Tensor& key) const override;
    Tensor forward_local(const Tensor& query, const Tensor& key, const Tensor& window_start,
                         std::int64_t width) const override;
    std::string type_name() const override { return "AdditiveScore"; }
    /// W x + b_W: keys [B, Tk, Dk] -> [B, Tk, H]. For one set of keys met by many queries in
    /// turn (a recurrent decoder's steps), compute it once and score with forward_projected
    /// (Bahdanau et al. 2015, A.1.2: "U_a h_j ... can be pre-computed"). Throws ShapeError.
    Tensor project_keys(const Tensor& key) const;
    /// forward(query, key) from project_keys(key): query [B, Tq, Dq], projected keys [B, Tk, H] ->
    /// [B, Tq, Tk]. Throws ShapeError naming both shapes.
    Tensor forward_projected(const Tensor& query, const Tensor& projected_keys) const;
    /// H, the hidden width.
    std::int64_t hidden() const { return W_.size(0); }
    /// The parameters, registered as "W" [H, Dk], "U" [H, Dq] and "v" [H].
    const Tensor& W() const { return W_; }
    const Tensor& U() const { return U_; }  ///< U [H, Dq]
    const Tensor& v() const { return v_; }  ///< v [H]
    /// The biases, undefined unless options.bias: "W_bias" [H], "U_bias" [H], "v_bias" [1].
    const Tensor& W_bias() const { return W_bias_; }
    const Tensor& U_bias() const { return U_bias_; }  ///< U_bias [H]
    const Tensor& v_bias() const { return v_bias_; }  ///< v_bias [1]

private:
    Tensor W_, U_, v_, W_bias_, U_bias_, v_bias_;
    // U q + b_U [B, Tq, H]
    Tensor project_query(const Tensor& query) const;
};

/// x^T q, or x^T q / sqrt(D) when scaled (Vaswani et al. 2017). No parameters. Throws
/// ShapeError at construction and in forward when Dq != Dk.
class DotScore final : public AttentionScore {
public:
    /// x^T q, divided by sqrt(D) when `scaled`. Throws ValueError unless Dk == Dq.
    explicit DotScore(const AttentionScoreOptions& options, bool scaled = false);
    Tensor forward(const Tensor& query, const Tensor& key) const override;
    Tensor forward_local(const Tensor& query, const Tensor& key, const Tensor& window_start,
                         std::int64_t width) const override;
    std::string type_name() const override {
        return kind() == Score::ScaledDot ? "ScaledDotScore" : "DotScore";
    }
    /// 1 / sqrt(D) when scaled, else 1.
    double scale() const;
};

/// x^T W q (Luong et al. 2015, "general"), computed as x . (W q): the queries are transformed
/// once, then scored like dot products. Parameter `W` [Dk, Dq].
class BilinearScore final : public AttentionScore {
public:
    /// Draws W [Dk, Dq] from `generator`. Throws ValueError naming a width < 1.
    explicit BilinearScore(const AttentionScoreOptions& options, Generator& generator = default_generator());
    Tensor forward(const Tensor& query, const Tensor& key) const override;
    Tensor forward_local(const Tensor& query, const Tensor& key, const Tensor& window_start,
                         std::int64_t width) const override;
    std::string type_name() const override { return "BilinearScore"; }
    /// The parameter, registered as "W" [Dk, Dq].
    const Tensor& W() const { return W_; }

private:
    Tensor W_;
};

/// A score module of the given kind (a built-in or registered one), its parameters drawn from
/// `generator`. Throws ValueError (query_dim < 1, key_dim or hidden < 0, a Score no entry has) and
/// ShapeError (dot or scaled dot with Dq != Dk); a registered factory's own errors pass through, and
/// it returning null or a module of another kind is a ValueError naming the score.
std::shared_ptr<AttentionScore> make_score(Score score, const AttentionScoreOptions& options,
                                           Generator& generator = default_generator());

}  // namespace attograd::nn
