// `mpirun -np N attograd train`: each rank's share of a batch or of the held-out examples, and
// the sums that turn the ranks' figures into the whole batch's.
#pragma once

#include "evaluation.hpp"
#include "models.hpp"
#include "optim/distributed.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attograd::cli {

/// Rank `rank` of `ranks`' contiguous share [start, start + length) of `count` items: the first
/// count % ranks ranks take one more, so a share may be empty when count < ranks.
struct Share {
    std::int64_t start = 0, length = 0;
};
Share share_of(std::int64_t count, int rank, int ranks);

/// One training step's figures on this rank: the mean loss and token accuracy over its
/// `tokens` target tokens.
struct StepFigures {
    double loss = 0.0, accuracy = 0.0, tokens = 0.0;
};
/// The figures of the whole batch: every rank's weighted by its tokens (optim::world().sum, so
/// every rank gets the same and takes the same decisions). One process: `mine` as it is.
StepFigures whole_batch(const StepFigures& mine);

/// Held-out accuracy with the examples split across the ranks (each evaluates its share; the
/// counts are summed). Predictions are those of this rank's share only. `between_batches` is
/// evaluate's, in a single process only: several ranks each run their share whole, as each must
/// take part in the sums (an interrupt is then acted on after the evaluation).
Evaluation evaluate_split(const Model& model, const Vocabularies& vocab, const std::vector<Example>& examples,
                          const std::function<void()>& between_batches = {});

/// The signal every rank acts on after a step: SIGTERM when any rank got one, else SIGINT
/// when any did, else 0, so that all ranks stop (and rank 0 saves) at the same step.
int agreed_signal(int signal);

/// Prints "attograd: MESSAGE" on stderr: every error of the program goes through here. Under an
/// MPI launcher, an error before the ranks agreed on train's set-up (setup_agreed) is held for
/// finish_rank instead, which prints it once: every rank parses the same command line and reads
/// the same files, so they would all print the same line.
void report_error(const std::string& message);

/// For tasks, eval and inspect, which are not data-parallel: under an MPI launcher of several
/// processes, false on rank 0, which runs the command alone, and true on the others, which
/// should exit 0 at once; false without a launcher.
bool skip_on_this_rank();

/// The world for `train`: optim::world(), with the set-up phase begun (see setup_agreed).
const optim::ProcessGroup& train_world();

/// Ends train's set-up (options, files, the run directory, the model) with one collective that
/// a rank whose set-up failed takes in finish_rank instead. True when every rank's set-up
/// succeeded; false when another's failed (it says why): this rank then exits 2 silently.
bool setup_agreed();

/// Throws `error`, which every rank throws at the same step (a decision taken from figures
/// every rank shares, e.g. divergence): rank 0 alone prints it, and every rank exits with the
/// error's code without ending the others.
[[noreturn]] void throw_on_every_rank(const ValueError& error);

/// The program's exit under an MPI launcher. A failure before train's set-up was agreed exits
/// every rank with its code after one message from the lowest rank that failed (no MPI_Abort:
/// the ranks that succeeded learn it in setup_agreed). A rank that fails later (non-zero
/// `code`) ends every rank (optim::ProcessGroup::abort) rather than leave them waiting.
/// Otherwise, and for the interrupted exits 130 / 143 that every rank takes together, returns
/// `code`.
int finish_rank(int code);

}  // namespace attograd::cli
