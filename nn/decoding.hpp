// Decoding for encoder-decoder models: greedy search and beam search with a length penalty,
// generic over the model through a step function; the chosen output's attention goes to the
// active AttentionRecorder.
#pragma once

#include "core/tensor.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace attograd::nn {

/// The decoder side of an encoder-decoder model, as decoding calls it:
///   prefixes int64 [N, t] (column 0 is bos_id; t >= 1), memory [N, S, E] (the encoder output
///   row of each prefix's source), memory_key_padding_mask bool or float [N, S] (`true` at padded
///   source positions; undefined when the caller gave none)
///   -> logits [N, V] of the token after each prefix, or [N, t, V] (the last position is used).
/// Log-probabilities are accepted as well (log_softmax leaves them unchanged). The function must
/// be stateless (no cache between calls) and run the decoder causally over the whole prefix:
/// decoding re-runs it teacher-forced on the chosen output to record its attention. A typical
/// body: `head(decoder(embed(prefixes), memory, {.memory_key_padding_mask = mask,
/// .tgt_is_causal = true}))`.
using DecodeStep = std::function<Tensor(const Tensor& prefixes, const Tensor& memory,
                                        const Tensor& memory_key_padding_mask)>;

/// The state of one incremental decode (Hugging Face's `past_key_values`, or a recurrent
/// decoder's state): one row per live prefix, holding everything the decoder computed for the
/// prefix so far, so that each step runs the decoder over one new position only.
class IncrementalState {
public:
    virtual ~IncrementalState() = default;
    /// tokens int64 [N]: the last token of each of the N live prefixes (bos at the first call;
    /// N = the state's rows) -> logits [N, V] (or log-probabilities) of the token after each
    /// prefix; appends the position to the state. Throws ShapeError when N is not the state's
    /// row count, and whatever the model throws.
    virtual Tensor step(const Tensor& tokens) = 0;
    /// Keeps rows `rows` int64 [N'] of the state, in that order: row i afterwards is row rows[i]
    /// before (index_select over the batch rows, Hugging Face's `_reorder_cache`). Throws
    /// ShapeError / IndexError for indices that are not [N'] in [0, N).
    virtual void reorder(const Tensor& rows) = 0;
};

/// Begins an incremental decode: memory [N, S, E] and memory_key_padding_mask [N, S] (undefined
/// when none) -> a state of N rows holding no position yet.
using IncrementalStart = std::function<std::unique_ptr<IncrementalState>(
    const Tensor& memory, const Tensor& memory_key_padding_mask)>;

/// A model as greedy_decode and beam_search call it: the stateless step (required; it also
/// re-runs teacher-forced on the chosen output to record its attention) and, optionally, an
/// incremental start, used during the search when DecodeOptions::use_cache is set. Both must
/// compute the same model: the incremental state's step t returns the stateless step's logits at
/// the last position of the same prefix.
struct DecodeModel {
    DecodeStep step;              ///< the stateless step (see DecodeStep)
    IncrementalStart start = {};  ///< empty: the model has no incremental path
};

/// How a hypothesis' log-probability is normalised by its length |y| (the tokens generated,
/// eos included) into its score.
enum class LengthNormalization {
    /// score = log P(y) / |y|^alpha (Hugging Face's `length_penalty`; alpha = 1 is the mean
    /// log-probability per token).
    Power,
    /// score = log P(y) / ((5 + |y|) / 6)^alpha (Wu et al. 2016, GNMT, eq. 14, without the
    /// coverage penalty).
    GNMT,
};

/// Options of greedy_decode and beam_search.
struct DecodeOptions {
    std::int64_t bos_id = -1;      ///< token that starts every prefix (>= 0; required)
    std::int64_t eos_id = -1;      ///< token that ends a hypothesis (in [0, V); required)
    std::int64_t max_length = 64;  ///< most decoding steps, i.e. generated tokens with eos (>= 1)
    std::int64_t beam_size = 4;    ///< beams kept per source (>= 1; greedy_decode ignores it)
    /// alpha of the length normalisation (finite, with a finite non-zero penalty at max_length). 0 ranks by
    /// log P(y), which favours short outputs; alpha > 0 favours longer ones; alpha < 0 shorter ones still.
    double length_penalty = 0.0;
    /// Power (Hugging Face's |y|^alpha) or GNMT's ((5 + |y|) / 6)^alpha.
    LengthNormalization normalization = LengthNormalization::Power;
    /// Hypotheses returned per source by beam_search, best first (in [1, beam_size]).
    std::int64_t num_return_sequences = 1;
    /// false (default): a source stops once beam_size hypotheses are finished and no live beam
    /// can beat the worst of them any more, bounding its best reachable score by the length
    /// penalty at max_length (alpha > 0) or at the next step (alpha <= 0); this equals running
    /// every beam to the end. true: it stops as soon as beam_size hypotheses are finished
    /// (Hugging Face's `early_stopping=True`), faster, and may miss a longer, better one when
    /// alpha > 0.
    bool early_stopping = false;
    /// When an AttentionRecorder is active, re-run the step teacher-forced on each source's best
    /// output so that the recorder holds exactly that output's attention (see beam_search).
    bool record_attention = true;
    /// Decode with the model's incremental state (a key/value cache or a carried recurrent
    /// state: each step runs over one new position) when it has one (DecodeModel::start);
    /// false re-runs the stateless step over the whole prefix at every step (Hugging Face's
    /// `use_cache`). The output is the same either way.
    bool use_cache = true;
};

/// One decoded output.
struct Hypothesis {
    std::vector<std::int64_t> tokens{};  ///< the generated ids, without bos and eos
    double log_prob = 0.0;               ///< log P(y): the sum of each step's log-probability (eos included)
    double score = 0.0;     ///< log_prob normalised by the length penalty (what ranks hypotheses)
    bool finished = false;  ///< ended with eos (false: stopped at max_length)
    /// Steps taken: tokens.size() + 1 with eos, tokens.size() without; the rows of its recorded
    /// attention.
    std::int64_t length() const { return static_cast<std::int64_t>(tokens.size()) + (finished ? 1 : 0); }
    /// What the decoder wrote, step by step: tokens, then eos_id when finished; length() ids,
    /// one per row of the recorded attention (label its rows with these). Throws ValueError when
    /// eos_id < 0.
    std::vector<std::int64_t> output_ids(std::int64_t eos_id) const;
};

/// The tokens of each source's best hypothesis (the first of each list beam_search returns), in
/// source order: what an evaluation compares with the targets. Throws ValueError naming the source
/// when its list is empty.
std::vector<std::vector<std::int64_t>> best_tokens(const std::vector<std::vector<Hypothesis>>& hypotheses);

/// The length penalty that divides log P(y) for a hypothesis of `length` steps (see
/// LengthNormalization): length^alpha or ((5 + length) / 6)^alpha. Throws ValueError when
/// length < 1 or alpha is not finite; an extreme alpha may give inf or 0 (the decoders refuse it).
double length_penalty(std::int64_t length, double alpha,
                      LengthNormalization normalization = LengthNormalization::Power);

/// Greedy decoding: each source appends its most probable next token (the lowest id on ties)
/// until eos or max_length steps. memory [B, S, E] (B >= 1), memory_key_padding_mask bool or
/// float [B, S] or undefined (S >= 1). Returns one hypothesis per source, in order; its score uses
/// options.length_penalty (it does not change the output). Runs under NoGradGuard; put the model
/// in eval mode first (dropout would make the output random). The attention is recorded as in
/// beam_search. Throws ValueError (bos_id < 0 up front; bos_id or eos_id outside the vocabulary V
/// of the first step's output, max_length < 1, a non-finite length_penalty or one whose penalty at
/// max_length is inf or 0, or that makes a hypothesis' score infinite, a NaN or +inf logit,
/// a row of logits that are all -inf, "no finite logit in row r": every next token of that prefix
/// would have probability 0), ShapeError (memory not [B, S, E], the
/// mask not [B, S], step output not [N, V] / [N, t, V] for its N prefixes, V changing between
/// steps, S = 0), DTypeError (mask neither bool nor float, logits not float); each message starts with
/// "greedy_decode" and names the argument.
std::vector<Hypothesis> greedy_decode(const Tensor& memory, const Tensor& memory_key_padding_mask,
                                      const DecodeStep& step, const DecodeOptions& options);
/// greedy_decode with a DecodeModel: its incremental state during the search when it has one and
/// options.use_cache is set (rows reordered as prefixes finish), its stateless step otherwise and
/// for recording the attention. Throws as greedy_decode, and as the state's step and reorder.
std::vector<Hypothesis> greedy_decode(const Tensor& memory, const Tensor& memory_key_padding_mask,
                                      const DecodeModel& model, const DecodeOptions& options);

/// Beam search (Graves 2012 §2; Sutskever et al. 2014 §3.2; the length penalty of Wu et al. 2016
/// §7): per source, beam_size prefixes are kept; each step scores every one-token extension of
/// every live prefix by its summed log-probability, an extension ending in eos becomes a
/// finished hypothesis (ranked by its normalised score; the best beam_size are kept), and the
/// beam_size best extensions that do not end in eos live on (eos extensions ranked below them
/// are dropped). Ties go to the earlier beam and the lower token id. When max_length steps are
/// reached, the live prefixes join the hypotheses unfinished. Every source's beams run as one
/// batch of N rows: the memory rows and the prefixes are gathered with index_select each step.
///
/// memory [B, S, E] (B >= 1), memory_key_padding_mask bool or float [B, S] or undefined. Returns
/// per source (in order) its best hypotheses, best first: num_return_sequences of them (at least
/// one), fewer only when fewer distinct outputs of non-zero probability exist within max_length
/// (extensions whose logits are -inf are never kept; a row whose logits are all -inf throws). With beam_size
/// = 1 and length_penalty = 0 (or early_stopping) it returns greedy_decode's output; with beam_size >=
/// V^max_length it returns the best of all outputs (an exhaustive search).
///
/// Runs under NoGradGuard; put the model in eval mode first (dropout would make the search
/// random). No attention is recorded during the search. Afterwards, when an AttentionRecorder
/// is active and options.record_attention is set, the step runs once per source b, in order, on
/// the prefix [bos, y_1, ..., y_{n-1}] of length best.length() (teacher-forced on the best
/// hypothesis y, whose last token y_n is eos when finished) with memory row b, so the recorder
/// gets, per source, one record of each attention layer of the decoder: cross-attention [1, h,
/// length, S] (or [1, length, S]) whose row i is the step that produced y_{i+1} (eos for the
/// last row of a finished hypothesis), ready for inspect::attention_maps. Throws as
/// greedy_decode (messages start with "beam_search"), and ValueError when beam_size < 1 or
/// num_return_sequences is outside [1, beam_size].
std::vector<std::vector<Hypothesis>> beam_search(const Tensor& memory, const Tensor& memory_key_padding_mask,
                                                 const DecodeStep& step, const DecodeOptions& options);
/// beam_search with a DecodeModel: its incremental state during the search when it has one and
/// options.use_cache is set (the state's rows reordered with the beams each step, as Hugging
/// Face's `_reorder_cache`), its stateless step otherwise and for recording the attention. Throws
/// as beam_search, and as the state's step and reorder.
std::vector<std::vector<Hypothesis>> beam_search(const Tensor& memory, const Tensor& memory_key_padding_mask,
                                                 const DecodeModel& model, const DecodeOptions& options);

}  // namespace attograd::nn
