// `mpirun -np N attograd train`: each rank's share of a batch or of the held-out examples, and
// the sums that turn the ranks' figures into the whole batch's.
#pragma once

#include "evaluation.hpp"
#include "models.hpp"

#include <cstdint>
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
/// counts are summed). Predictions are those of this rank's share only.
Evaluation evaluate_split(const Model& model, const Vocabulary& vocab, const std::vector<Example>& examples);

/// The signal every rank acts on after a step: SIGTERM when any rank got one, else SIGINT
/// when any did, else 0, so that all ranks stop (and rank 0 saves) at the same step.
int agreed_signal(int signal);

/// The program's exit under an MPI launcher: a rank that fails (non-zero `code`) ends every
/// rank (optim::ProcessGroup::abort) rather than leave them waiting; otherwise, and for the
/// interrupted exits 130 / 143 that every rank takes together, returns `code`.
int finish_rank(int code);

}  // namespace attograd::cli
