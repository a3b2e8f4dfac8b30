// Greedy and beam search decoding over a step function, and recording the chosen output's
// attention.
#include "nn/decoding.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/ops.hpp"
#include "nn/attention_recorder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace attograd::nn {

std::vector<std::int64_t> Hypothesis::output_ids(std::int64_t eos_id) const {
    AG_CHECK(eos_id >= 0, ValueError, "Hypothesis::output_ids: eos_id must be >= 0, got {}", eos_id);
    std::vector<std::int64_t> out = tokens;
    if (finished) out.push_back(eos_id);
    return out;
}

std::vector<std::vector<std::int64_t>> best_tokens(const std::vector<std::vector<Hypothesis>>& hypotheses) {
    std::vector<std::vector<std::int64_t>> out;
    out.reserve(hypotheses.size());
    for (std::size_t b = 0; b < hypotheses.size(); ++b) {
        AG_CHECK(!hypotheses[b].empty(), ValueError, "best_tokens: source {} has no hypothesis", b);
        out.push_back(hypotheses[b].front().tokens);
    }
    return out;
}

double length_penalty(std::int64_t length, double alpha, LengthNormalization normalization) {
    AG_CHECK(length >= 1, ValueError, "length_penalty: length must be >= 1, got {}", length);
    AG_CHECK(std::isfinite(alpha), ValueError, "length_penalty: alpha must be finite, got {}", alpha);
    const double n = static_cast<double>(length);
    if (normalization == LengthNormalization::GNMT) return std::pow((5.0 + n) / 6.0, alpha);
    return std::pow(n, alpha);
}

namespace {

constexpr double plus_inf = std::numeric_limits<double>::infinity(), minus_inf = -plus_inf;

/// Checks the arguments every decoder shares; returns B.
std::int64_t check_arguments(const char* op, const Tensor& memory, const Tensor& mask,
                             const DecodeModel& model, const DecodeOptions& options) {
    const DecodeStep& step = model.step;
    AG_CHECK(memory.defined(), ShapeError, "{}: memory is undefined (expected [B, S, E])", op);
    AG_CHECK(memory.dim() == 3 && memory.size(0) >= 1, ShapeError,
             "{}: memory must be [B, S, E] with B >= 1, got shape {}", op, memory.shape());
    AG_CHECK(
        memory.size(1) >= 1, ShapeError,
        "{}: memory must hold at least one source position (S >= 1: attention needs a key), got shape {}", op,
        memory.shape());
    if (mask.defined()) {
        AG_CHECK(mask.dtype() == DType::Bool || is_floating(mask.dtype()), DTypeError,
                 "{}: memory_key_padding_mask must be bool or float, got {}", op, mask.dtype());
        AG_CHECK(mask.dim() == 2 && mask.size(0) == memory.size(0) && mask.size(1) == memory.size(1),
                 ShapeError,
                 "{}: memory_key_padding_mask must be [B, S] = [{}, {}] for memory {}, got shape {}", op,
                 memory.size(0), memory.size(1), memory.shape(), mask.shape());
    }
    AG_CHECK(static_cast<bool>(step), ValueError, "{}: step is an empty function", op);
    AG_CHECK(options.bos_id >= 0, ValueError, "{}: bos_id must be set to a token id >= 0, got {}", op,
             options.bos_id);
    AG_CHECK(options.eos_id >= 0, ValueError, "{}: eos_id must be set to a token id >= 0, got {}", op,
             options.eos_id);
    AG_CHECK(options.max_length >= 1, ValueError, "{}: max_length must be >= 1, got {}", op,
             options.max_length);
    AG_CHECK(std::isfinite(options.length_penalty), ValueError, "{}: length_penalty must be finite, got {}",
             op, options.length_penalty);
    // The penalty grows (alpha > 0) or shrinks (alpha < 0) with the length, so its extreme is at
    // max_length; one that overflows to inf or underflows to 0 would make scores NaN or infinite
    // and the ranking arbitrary.
    const double extreme = length_penalty(options.max_length, options.length_penalty, options.normalization);
    AG_CHECK(std::isfinite(extreme) && extreme > 0, ValueError,
             "{}: length_penalty {} makes the penalty at max_length {} equal {}, which is not a finite "
             "positive number: use a smaller |length_penalty|",
             op, options.length_penalty, options.max_length, extreme);
    return memory.size(0);
}

// log_prob / penalty, which must be finite: a tiny penalty (alpha < 0 at a long length) can still
// overflow it.
double normalised_score(const char* op, double log_prob, std::int64_t length, const DecodeOptions& options) {
    const double score = log_prob / length_penalty(length, options.length_penalty, options.normalization);
    AG_CHECK(
        std::isfinite(score), ValueError,
        "{}: length_penalty {} makes the score of a hypothesis of length {} with log P(y) = {} equal {}: "
        "use a smaller |length_penalty|",
        op, options.length_penalty, length, log_prob, score);
    return score;
}

/// Calls the step (the incremental state's when there is one) and returns its next-token
/// log-probabilities [N, V] row-major as doubles (-inf for a token of probability 0), checking
/// its output; remembers V.
class Stepper {
public:
    Stepper(const char* op, const DecodeModel& model, const Tensor& memory, const Tensor& mask,
            const DecodeOptions& options)
        : op_(op),
          step_(model.step),
          memory_(memory),
          mask_(mask),
          bos_id_(options.bos_id),
          eos_id_(options.eos_id) {
        // the state starts with every source's row in order, as the first prefixes do
        if (options.use_cache && model.start) {
            state_ = model.start(memory, mask);
            AG_CHECK(state_ != nullptr, ValueError, "{}: the model's incremental start returned no state",
                     op);
        }
    }

    /// prefixes int64 [N, t]; rows int64 [N]: the source of each prefix. The incremental state
    /// gets the last column only: its rows are the previous call's prefixes reordered by keep().
    std::vector<double> operator()(const Tensor& prefixes, const Tensor& rows) {
        const std::int64_t n = prefixes.size(0);
        const std::int64_t t = state_ ? 1 : prefixes.size(1);  // positions the step returns at most
        Tensor logits = state_ ? state_->step(select(prefixes, 1, prefixes.size(1) - 1))
                               : step_(prefixes, index_select(memory_, 0, rows),
                                       mask_.defined() ? index_select(mask_, 0, rows) : Tensor{});
        AG_CHECK(logits.defined(), ShapeError, "{}: step returned an undefined tensor for prefixes [{}, {}]",
                 op_, n, t);
        AG_CHECK(is_floating(logits.dtype()), DTypeError, "{}: step must return float logits, got {} {}", op_,
                 logits.dtype(), logits.shape());
        const bool fits = (logits.dim() == 2 && logits.size(0) == n) ||
                          (logits.dim() == 3 && logits.size(0) == n && logits.size(1) == t);
        AG_CHECK(fits && logits.size(-1) >= 1, ShapeError,
                 "{}: step returned shape {} for prefixes [{}, {}]; expected [{}, V] or [{}, {}, V]", op_,
                 logits.shape(), n, t, n, n, t);
        if (logits.dim() == 3) logits = select(logits, 1, t - 1);
        const std::int64_t v = logits.size(1);
        if (vocab_ < 0) {
            AG_CHECK(eos_id_ < v, ValueError,
                     "{}: eos_id {} is outside the step's vocabulary of V = {} tokens", op_, eos_id_, v);
            AG_CHECK(bos_id_ < v, ValueError,
                     "{}: bos_id {} is outside the step's vocabulary of V = {} tokens", op_, bos_id_, v);
            vocab_ = v;
        }
        AG_CHECK(v == vocab_, ShapeError, "{}: step returned V = {} tokens after V = {} at an earlier step",
                 op_, v, vocab_);
        const std::vector<double> raw = logits.to_vector<double>();
        for (std::int64_t r = 0; r < n; ++r) {
            const auto row = raw.begin() + r * v;
            for (auto x = row; x != row + v; ++x)
                AG_CHECK(!std::isnan(*x) && *x != plus_inf, ValueError,
                         "{}: step returned logit {} (NaN or +inf) in row {} of its logits {}", op_, *x, r,
                         logits.shape());
            // A row of -inf gives every next token probability 0: no hypothesis can continue it.
            AG_CHECK(std::any_of(row, row + v, [](double x) { return x != minus_inf; }), ValueError,
                     "{}: no finite logit in row {} of the step's logits {} (every next token would have "
                     "probability 0)",
                     op_, r, logits.shape());
        }
        return log_softmax(logits, 1).to_vector<double>();
    }

    std::int64_t vocab() const { return vocab_; }

    /// The next prefixes continue rows `rows` int64 [N'] of the last call's: the incremental
    /// state keeps those rows, in that order.
    void keep(const Tensor& rows) {
        if (state_) state_->reorder(rows);
    }

private:
    const char* op_;
    const DecodeStep& step_;
    std::unique_ptr<IncrementalState> state_;
    Tensor memory_, mask_;
    std::int64_t bos_id_, eos_id_;
    std::int64_t vocab_ = -1;
};

/// RAII: no recorder receives attention while alive (the search's N-row steps are not the
/// output's attention); the previous one is active again afterwards.
class RecordingPause {
public:
    RecordingPause() : saved_(detail::active_recorder()) { detail::active_recorder() = nullptr; }
    ~RecordingPause() { detail::active_recorder() = saved_; }
    RecordingPause(const RecordingPause&) = delete;
    RecordingPause& operator=(const RecordingPause&) = delete;

private:
    AttentionRecorder* saved_;
};

/// Row indices (e.g. the source of each prefix) as int64 [N].
Tensor rows_of(const std::vector<std::int64_t>& sources) {
    return index_tensor(sources, {static_cast<std::int64_t>(sources.size())});
}

/// Runs the step teacher-forced on each source's chosen output so that the active recorder gets
/// exactly its attention (one call per source, memory row b, prefix [bos, y_1 .. y_{len-1}]).
void record_outputs(const Tensor& memory, const Tensor& mask, const DecodeStep& step,
                    const DecodeOptions& options, const std::vector<const Hypothesis*>& outputs) {
    if (!options.record_attention || !attention_recording()) return;
    for (std::size_t b = 0; b < outputs.size(); ++b) {
        const Hypothesis* h = outputs[b];
        if (h == nullptr || h->length() < 1) continue;
        std::vector<std::int64_t> prefix{options.bos_id};
        prefix.insert(prefix.end(), h->tokens.begin(), h->tokens.begin() + (h->length() - 1));
        const Tensor row = index_tensor({static_cast<std::int64_t>(b)}, {1});
        step(index_tensor(prefix, {1, h->length()}), index_select(memory, 0, row),
             mask.defined() ? index_select(mask, 0, row) : Tensor{});
    }
}

/// A live prefix of beam search.
struct Beam {
    std::vector<std::int64_t> tokens;  ///< generated so far (no bos)
    double log_prob = 0.0;
};

/// The finished hypotheses of one source: the best `capacity`, best first (ties: the earlier).
class HypothesisPool {
public:
    explicit HypothesisPool(std::size_t capacity) : capacity_(capacity) {}

    void offer(Hypothesis h) {
        if (full() && !(h.score > hypotheses_.back().score)) return;
        const auto at = std::upper_bound(hypotheses_.begin(), hypotheses_.end(), h.score,
                                         [](double s, const Hypothesis& x) { return s > x.score; });
        hypotheses_.insert(at, std::move(h));
        if (hypotheses_.size() > capacity_) hypotheses_.pop_back();
    }
    bool full() const { return hypotheses_.size() >= capacity_; }
    double worst() const { return hypotheses_.back().score; }
    std::vector<Hypothesis>& hypotheses() { return hypotheses_; }

private:
    std::size_t capacity_;
    std::vector<Hypothesis> hypotheses_;
};

}  // namespace

std::vector<Hypothesis> greedy_decode(const Tensor& memory, const Tensor& memory_key_padding_mask,
                                      const DecodeStep& step, const DecodeOptions& options) {
    return greedy_decode(memory, memory_key_padding_mask, DecodeModel{.step = step}, options);
}

std::vector<Hypothesis> greedy_decode(const Tensor& memory, const Tensor& memory_key_padding_mask,
                                      const DecodeModel& model, const DecodeOptions& options) {
    constexpr const char* op = "greedy_decode";
    const std::int64_t batch = check_arguments(op, memory, memory_key_padding_mask, model, options);
    const DecodeStep& step = model.step;
    NoGradGuard no_grad;
    std::vector<Hypothesis> out(static_cast<std::size_t>(batch));
    {
        RecordingPause pause;
        Stepper stepper(op, model, memory, memory_key_padding_mask, options);
        std::vector<std::int64_t> live(static_cast<std::size_t>(batch));  // sources still decoding
        std::iota(live.begin(), live.end(), std::int64_t{0});
        Tensor prefixes = full({batch, 1}, static_cast<double>(options.bos_id), {.dtype = DType::Int64});
        for (std::int64_t t = 1; t <= options.max_length && !live.empty(); ++t) {
            const std::vector<double> lp = stepper(prefixes, rows_of(live));
            const auto v = static_cast<std::size_t>(stepper.vocab());
            std::vector<std::int64_t> next_live, kept_rows, next_tokens;
            for (std::size_t r = 0; r < live.size(); ++r) {
                const auto row = lp.begin() + static_cast<std::ptrdiff_t>(r * v);
                const auto best =
                    std::max_element(row, row + static_cast<std::ptrdiff_t>(v));  // first maximum
                Hypothesis& h = out[static_cast<std::size_t>(live[r])];
                const auto token = static_cast<std::int64_t>(best - row);
                h.log_prob += *best;
                if (token == options.eos_id) {
                    h.finished = true;
                    continue;
                }
                h.tokens.push_back(token);
                next_live.push_back(live[r]);
                kept_rows.push_back(static_cast<std::int64_t>(r));
                next_tokens.push_back(token);
            }
            if (next_live.empty()) break;
            const auto n = static_cast<std::int64_t>(next_live.size());
            const Tensor kept = rows_of(kept_rows);
            stepper.keep(kept);
            prefixes = concat({index_select(prefixes, 0, kept), index_tensor(next_tokens, {n, 1})}, 1);
            live = std::move(next_live);
        }
    }
    std::vector<const Hypothesis*> outputs;
    for (Hypothesis& h : out) {
        h.score = h.length() >= 1 ? normalised_score(op, h.log_prob, h.length(), options) : h.log_prob;
        outputs.push_back(&h);
    }
    record_outputs(memory, memory_key_padding_mask, step, options, outputs);
    return out;
}

std::vector<std::vector<Hypothesis>> beam_search(const Tensor& memory, const Tensor& memory_key_padding_mask,
                                                 const DecodeStep& step, const DecodeOptions& options) {
    return beam_search(memory, memory_key_padding_mask, DecodeModel{.step = step}, options);
}

std::vector<std::vector<Hypothesis>> beam_search(const Tensor& memory, const Tensor& memory_key_padding_mask,
                                                 const DecodeModel& model, const DecodeOptions& options) {
    constexpr const char* op = "beam_search";
    const std::int64_t batch = check_arguments(op, memory, memory_key_padding_mask, model, options);
    const DecodeStep& step = model.step;
    AG_CHECK(options.beam_size >= 1, ValueError, "{}: beam_size must be >= 1, got {}", op, options.beam_size);
    AG_CHECK(options.num_return_sequences >= 1 && options.num_return_sequences <= options.beam_size,
             ValueError, "{}: num_return_sequences must be in [1, beam_size = {}], got {}", op,
             options.beam_size, options.num_return_sequences);
    NoGradGuard no_grad;
    const auto beam_size = static_cast<std::size_t>(options.beam_size);
    const double alpha = options.length_penalty;
    auto score_of = [&](double log_prob, std::int64_t length) {
        return normalised_score(op, log_prob, length, options);
    };

    std::vector<HypothesisPool> pools(static_cast<std::size_t>(batch), HypothesisPool(beam_size));
    {
        RecordingPause pause;
        Stepper stepper(op, model, memory, memory_key_padding_mask, options);
        // beams[b]: source b's live prefixes, best first; their rows in `prefixes` are
        // consecutive, sources in order.
        std::vector<std::vector<Beam>> beams(static_cast<std::size_t>(batch), std::vector<Beam>(1));
        std::vector<std::int64_t> sources(static_cast<std::size_t>(batch));  // source of each row
        std::iota(sources.begin(), sources.end(), std::int64_t{0});
        Tensor prefixes = full({batch, 1}, static_cast<double>(options.bos_id), {.dtype = DType::Int64});
        for (std::int64_t t = 1; t <= options.max_length && !sources.empty(); ++t) {
            const std::vector<double> lp = stepper(prefixes, rows_of(sources));
            const std::int64_t v = stepper.vocab();
            std::vector<std::int64_t> next_sources, parent_rows, next_tokens;
            std::int64_t first_row = 0;  // row of beams[b][0]
            for (std::size_t b = 0; b < beams.size(); ++b) {
                std::vector<Beam>& live = beams[b];
                if (live.empty()) continue;
                // Candidates: (beam, token) as beam * V + token, by summed log-probability, best
                // first; ties to the earlier beam and lower token. At most one eos per beam, so
                // the best 2K hold K that continue whenever K exist.
                std::vector<std::int64_t> candidates;
                for (std::int64_t i = 0; i < static_cast<std::int64_t>(live.size()) * v; ++i)
                    if (lp[static_cast<std::size_t>((first_row + i / v) * v + i % v)] != minus_inf)
                        candidates.push_back(i);
                auto total = [&](std::int64_t i) {
                    return live[static_cast<std::size_t>(i / v)].log_prob +
                           lp[static_cast<std::size_t>((first_row + i / v) * v + i % v)];
                };
                const std::size_t keep = std::min(candidates.size(), 2 * beam_size);
                std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(keep),
                                  candidates.end(), [&](std::int64_t x, std::int64_t y) {
                                      const double sx = total(x), sy = total(y);
                                      return sx > sy || (sx == sy && x < y);
                                  });
                std::vector<Beam> next;
                for (std::size_t c = 0; c < keep && next.size() < beam_size; ++c) {
                    const std::int64_t beam = candidates[c] / v, token = candidates[c] % v;
                    const Beam& parent = live[static_cast<std::size_t>(beam)];
                    const double log_prob = total(candidates[c]);
                    if (token == options.eos_id) {
                        pools[b].offer({.tokens = parent.tokens,
                                        .log_prob = log_prob,
                                        .score = score_of(log_prob, t),
                                        .finished = true});
                        continue;
                    }
                    Beam extended{parent.tokens, log_prob};
                    extended.tokens.push_back(token);
                    next.push_back(std::move(extended));
                    parent_rows.push_back(first_row + beam);
                    next_tokens.push_back(token);
                }
                first_row += static_cast<std::int64_t>(live.size());
                // Is this source done? At max_length the live prefixes finish unfinished.
                bool done = next.empty() || t == options.max_length;
                if (!done && pools[b].full()) {
                    // The best score a live prefix can still reach: its log-probability only
                    // falls, so over lengths t+1 .. max_length the bound is at the penalty's
                    // largest (alpha > 0) or smallest (alpha <= 0) length.
                    const double bound =
                        next.front().log_prob /
                        length_penalty(alpha > 0 ? options.max_length : t + 1, alpha, options.normalization);
                    done = options.early_stopping || bound <= pools[b].worst();
                }
                if (t == options.max_length)
                    for (Beam& beam : next)
                        pools[b].offer({.tokens = std::move(beam.tokens),
                                        .log_prob = beam.log_prob,
                                        .score = score_of(beam.log_prob, t),
                                        .finished = false});
                if (done) {
                    const auto dropped = static_cast<std::ptrdiff_t>(next.size());
                    parent_rows.resize(parent_rows.size() - static_cast<std::size_t>(dropped));
                    next_tokens.resize(next_tokens.size() - static_cast<std::size_t>(dropped));
                    next.clear();
                }
                next_sources.insert(next_sources.end(), next.size(), static_cast<std::int64_t>(b));
                live = std::move(next);
            }
            if (next_sources.empty()) break;
            const auto n = static_cast<std::int64_t>(next_sources.size());
            const Tensor parents = rows_of(parent_rows);
            stepper.keep(parents);
            prefixes = concat({index_select(prefixes, 0, parents), index_tensor(next_tokens, {n, 1})}, 1);
            sources = std::move(next_sources);
        }
    }
    std::vector<std::vector<Hypothesis>> out;
    std::vector<const Hypothesis*> best;
    for (HypothesisPool& pool : pools) {
        std::vector<Hypothesis>& h = pool.hypotheses();
        if (h.size() > static_cast<std::size_t>(options.num_return_sequences))
            h.resize(static_cast<std::size_t>(options.num_return_sequences));
        out.push_back(std::move(h));
    }
    for (const std::vector<Hypothesis>& h : out) best.push_back(h.empty() ? nullptr : &h.front());
    record_outputs(memory, memory_key_padding_mask, step, options, best);
    return out;
}

}  // namespace attograd::nn
