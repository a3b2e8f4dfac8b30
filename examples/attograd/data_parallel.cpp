// Shares of batches and held-out examples per rank, and the sums across the ranks.
#include "data_parallel.hpp"

#include "optim/distributed.hpp"

#include <fmt/format.h>

#include <cmath>
#include <csignal>

namespace attograd::cli {

Share share_of(std::int64_t count, int rank, int ranks) {
    const std::int64_t base = count / ranks, extra = count % ranks;
    return {.start = rank * base + std::min<std::int64_t>(rank, extra),
            .length = base + (rank < extra ? 1 : 0)};
}

StepFigures whole_batch(const StepFigures& mine) {
    const optim::ProcessGroup& group = optim::world();
    if (group.size() == 1) return mine;
    const auto sums = group.sum({mine.loss * mine.tokens, mine.accuracy * mine.tokens, mine.tokens});
    const double tokens = std::max(sums[2], 1.0);
    return {.loss = sums[0] / tokens, .accuracy = sums[1] / tokens, .tokens = sums[2]};
}

Evaluation evaluate_split(const Model& model, const Vocabulary& vocab, const std::vector<Example>& examples) {
    const optim::ProcessGroup& group = optim::world();
    if (group.size() == 1) return evaluate(model, vocab, examples);
    const Share share = share_of(std::ssize(examples), group.rank(), group.size());
    const std::vector<Example> mine(examples.begin() + share.start,
                                    examples.begin() + share.start + share.length);
    Evaluation result = evaluate(model, vocab, mine);
    double tokens = 0.0;
    for (const Example& e : mine) tokens += static_cast<double>(e.target.size());
    // The accuracies are ratios of counts: back to counts (exact after rounding), summed.
    const auto sums = group.sum({std::round(result.token_accuracy * tokens), tokens,
                                 std::round(result.sequence_accuracy * static_cast<double>(mine.size())),
                                 static_cast<double>(mine.size())});
    result.token_accuracy = sums[1] > 0 ? sums[0] / sums[1] : 0.0;
    result.sequence_accuracy = sums[3] > 0 ? sums[2] / sums[3] : 0.0;
    return result;
}

int agreed_signal(int signal) {
    const optim::ProcessGroup& group = optim::world();
    if (group.size() == 1) return signal;
    const auto any = group.sum({signal == SIGTERM ? 1.0 : 0.0, signal == SIGINT ? 1.0 : 0.0});
    return any[0] > 0 ? SIGTERM : any[1] > 0 ? SIGINT : 0;
}

int finish_rank(int code) {
    if (code == 0 || code == 128 + SIGINT || code == 128 + SIGTERM) return code;
    try {
        const optim::ProcessGroup& group = optim::world();
        if (group.size() > 1)
            group.abort(code, fmt::format("failed with exit code {}; ending every rank", code));
    } catch (const Error& e) {
        fmt::print(stderr, "attograd: {}\n", e.what());
        return code != 0 ? code : 2;
    }
    return code;
}

}  // namespace attograd::cli
