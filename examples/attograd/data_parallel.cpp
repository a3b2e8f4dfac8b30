// Shares of batches and held-out examples per rank, and the sums across the ranks.
#include "data_parallel.hpp"
#include "console.hpp"

#include "data/text.hpp"
#include "optim/distributed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>

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

Evaluation evaluate_split(const Model& model, const Vocabularies& vocab, const std::vector<Example>& examples,
                          const std::function<void()>& between_batches) {
    const optim::ProcessGroup& group = optim::world();
    if (group.size() == 1) return evaluate(model, vocab, examples, {}, between_batches);
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
    const auto any = group.sum(
        {signal == SIGTERM ? 1.0 : 0.0, signal == SIGHUP ? 1.0 : 0.0, signal == SIGINT ? 1.0 : 0.0});
    return any[0] > 0 ? SIGTERM : any[1] > 0 ? SIGHUP : any[2] > 0 ? SIGINT : 0;
}

namespace {

// Where this process is: before train's world (tasks, eval, inspect, a bad command line), in
// train's set-up, told in setup_agreed that another rank's set-up failed, or training.
// Agreed: every rank threw the same error at the same point (throw_on_every_rank).
// RankZeroOnly: rank 0 running tasks, eval or inspect alone (the other ranks have exited).
enum class Phase { NoWorld, SetUp, PeerFailed, Training, Agreed, RankZeroOnly };
Phase g_phase = Phase::NoWorld;
std::string g_held;  // the message report_error held back, if any

bool holding() {
    return optim::launcher_world_size() > 1 && (g_phase == Phase::NoWorld || g_phase == Phase::SetUp);
}

// Every message is one line that cannot drive the terminal, whatever text it quotes (a library
// error naming a user's path, e.g.): control characters are escaped (data::escape_control).
void print_error(const std::string& message) {
    output(stderr, "attograd: {}\n", data::escape_control(message));
}

// One value per rank, 1 for a rank whose set-up failed: the collective of setup_agreed.
std::vector<double> failed_ranks(bool failed) {
    const optim::ProcessGroup& group = optim::world();
    std::vector<double> flags(static_cast<std::size_t>(group.size()), 0.0);
    flags[static_cast<std::size_t>(group.rank())] = failed ? 1.0 : 0.0;
    return group.sum(std::move(flags));
}

// Ranks that end together wait for each other after the one message is out: a rank that exits
// first with a non-zero code makes mpirun kill the rest, which could cut that message off.
void exit_together() {
    std::fflush(stdout);
    std::fflush(stderr);
    try {
        optim::world().barrier();
    } catch (const Error& e) {
        print_error(e.what());
    }
}

}  // namespace

bool skip_on_this_rank() {
    if (optim::launcher_world_size() <= 1) return false;
    if (optim::launcher_rank() != 0) return true;
    g_phase = Phase::RankZeroOnly;
    return false;
}

void report_error(const std::string& message) {
    if (g_phase == Phase::Agreed) {
        if (optim::world().is_main()) print_error(message);
        return;
    }
    if (!holding()) return print_error(message);
    if (g_held.empty()) g_held = message;
}

void throw_on_every_rank(const ValueError& error) {
    if (g_phase == Phase::Training) g_phase = Phase::Agreed;
    throw error;
}

const optim::ProcessGroup& train_world() {
    g_phase = Phase::SetUp;
    return optim::world();
}

bool setup_agreed() {
    const auto failed = failed_ranks(false);
    const bool all_ok = std::all_of(failed.begin(), failed.end(), [](double f) { return f == 0.0; });
    g_phase = all_ok ? Phase::Training : Phase::PeerFailed;
    if (!all_ok) exit_together();  // with the rank that failed, once it has said why
    return all_ok;
}

int finish_rank(int code) {
    if (code == 0 || code == 128 + SIGINT || code == 128 + SIGTERM || code == 128 + SIGHUP) return code;
    // The rank that failed has said why (setup_agreed waited for it), or rank 0 alone runs this
    // command, or a single process.
    if (g_phase == Phase::PeerFailed || g_phase == Phase::RankZeroOnly) return code;
    if (optim::launcher_world_size() <= 1 && g_phase != Phase::Training) return code;
    if (g_phase == Phase::Agreed) {  // every rank failed alike and rank 0 said it
        exit_together();
        return code;
    }
    if (g_phase == Phase::NoWorld) {  // the same command line on every rank: rank 0 speaks
        if (!g_held.empty() && optim::launcher_rank() == 0) print_error(g_held);
        exit_together();
        return code;
    }
    if (g_phase == Phase::SetUp) {
        try {
            const auto failed = failed_ranks(true);
            const auto first = std::find_if(failed.begin(), failed.end(), [](double f) { return f != 0.0; });
            if (first - failed.begin() == optim::world().rank() && !g_held.empty()) print_error(g_held);
        } catch (const Error& e) {
            print_error(e.what());
            return code;
        }
        exit_together();
        return code;
    }
    try {
        const optim::ProcessGroup& group = optim::world();
        if (group.size() > 1)
            group.abort(code, fmt::format("failed with exit code {}; ending every rank", code));
    } catch (const Error& e) {
        print_error(e.what());
        return code != 0 ? code : 2;
    }
    return code;
}

}  // namespace attograd::cli
