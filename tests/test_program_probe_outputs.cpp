// The attograd program's record of what a run's model outputs for its probes: another CPU's
// rounding (or Eigen in place of LIBXSMM) may swap tied argmax tokens and move a loss in its last
// digits, which must not make a saved run refused; anything more must.
#include "snapshot_probes.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using attograd::cli::predicts_up_to_ties;
using attograd::cli::ProbeOutput;
using attograd::cli::same_probe_loss;
using attograd::data::Vocabulary;

namespace {

// Ids 0-3 are <pad>, <bos>, <eos>, <unk>; then a = 4, b = 5, c = 6.
const Vocabulary vocab({"a", "b", "c"});

// One output row's logits, `top` at `best` and the rest lower by `gaps` (id order), the
// special tokens far below.
std::vector<float> row(std::int64_t best, float top,
                       const std::vector<std::pair<std::int64_t, float>>& gaps) {
    std::vector<float> logits(7, top - 50.0f);
    logits[static_cast<std::size_t>(best)] = top;
    for (const auto& [id, gap] : gaps) logits[static_cast<std::size_t>(id)] = top - gap;
    return logits;
}

}  // namespace

TEST_CASE("a prediction is the probe's up to tokens whose logits tie the largest") {
    ProbeOutput out;
    out.prediction = {"a", "b"};
    out.logits = {row(4, 10.0f, {{5, 1e-5f}}), row(5, 3.0f, {{6, 0.5f}}), row(Vocabulary::eos_id, 2.0f, {})};
    CHECK(predicts_up_to_ties(out, {"a", "b"}, vocab));
    // 'b' ties 'a' in the first row (1e-5 below 10, within 1e-4 x 10).
    CHECK(predicts_up_to_ties(out, {"b", "b"}, vocab));
    // 'c' is 0.5 below 'b' in the second: another model.
    CHECK_FALSE(predicts_up_to_ties(out, {"a", "c"}, vocab));
    CHECK_FALSE(predicts_up_to_ties(out, {"a"}, vocab));
    CHECK_FALSE(predicts_up_to_ties(out, {"a", "b", "c"}, vocab));
    CHECK_FALSE(predicts_up_to_ties(out, {"a", "zz"}, vocab));
    // Near zero the tolerance is absolute (1e-4): a gap of 1e-3 is not a tie.
    out.logits[1] = row(5, 0.0f, {{6, 1e-3f}});
    CHECK_FALSE(predicts_up_to_ties(out, {"a", "c"}, vocab));
    out.logits[1] = row(5, 0.0f, {{6, 5e-5f}});
    CHECK(predicts_up_to_ties(out, {"a", "c"}, vocab));
}

TEST_CASE("a tie with <eos> may end a prediction early or let it run on") {
    ProbeOutput out;
    out.prediction = {"a", "b"};
    out.logits = {row(4, 5.0f, {}), row(5, 5.0f, {{Vocabulary::eos_id, 1e-5f}}),
                  row(Vocabulary::eos_id, 5.0f, {})};
    CHECK(predicts_up_to_ties(out, {"a"}, vocab));  // <eos> ties 'b' in the second row
    out.logits[1] = row(5, 5.0f, {{Vocabulary::eos_id, 0.1f}});
    CHECK_FALSE(predicts_up_to_ties(out, {"a"}, vocab));
    // The last row's <eos> ties 'c': the prediction may go on to it.
    out.logits[2] = row(Vocabulary::eos_id, 5.0f, {{6, 1e-5f}});
    CHECK(predicts_up_to_ties(out, {"a", "b", "c"}, vocab));
}

TEST_CASE("probe losses agree within the rounding of another CPU, and only so") {
    CHECK(same_probe_loss(0.25, 0.25));
    CHECK(same_probe_loss(0.25, 0.25 + 1e-5));
    CHECK(same_probe_loss(3.2, 3.2 + 3e-4));  // 1e-4 x 3.2
    CHECK_FALSE(same_probe_loss(3.2, 3.2 + 4e-4));
    // Relative to the loss: a well-trained model's small loss is rounded relative to itself.
    CHECK(same_probe_loss(1e-3, 1e-3 + 5e-8));
    CHECK_FALSE(same_probe_loss(1e-3, 1e-3 + 2e-7));
    CHECK_FALSE(same_probe_loss(0.0289512, 0.0379691));  // hard attention edited into a soft run
    CHECK_FALSE(same_probe_loss(0.0, 1e-3));
    CHECK(same_probe_loss(0.0, 0.0));
}
