// `attograd inspect --faithfulness`: every head's faithfulness table (inspect/faithfulness_table.hpp)
// over held-out examples of a run, each example run as a batch of one (no padding between
// examples of different lengths) and every output position of it taken as one decision.
#pragma once

#include "models.hpp"

#include "data/task.hpp"
#include "inspect/faithfulness_evidence.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace attograd::cli {

/// The measures' settings the program uses (a bounded run time: these are what `--faithfulness`
/// costs per decision and head).
struct FaithfulnessSettings {
    std::int64_t permutations = 20;       ///< permutations of a head's weights per decision
    std::int64_t adversarial_steps = 50;  ///< Adam steps of the adversarial search per decision
    std::uint64_t seed = 0;               ///< of the permutations, erasure and adversarial noise
    bool evidence = false;                ///< also gather the evidence of evidence_head (the HTML report)
};

/// The table over the held-out examples and what it took.
struct FaithfulnessRun {
    inspect::FaithfulnessTable table{};                       ///< one row per head of every layer
    std::optional<inspect::FaithfulnessEvidence> evidence{};  ///< evidence_head's, when asked
    std::int64_t examples = 0;                                ///< held-out examples measured
    std::int64_t decisions = 0;                               ///< output positions measured (each a decision)
    double seconds = 0;                                       ///< wall time of the whole measurement
};

/// Every head's faithfulness over the first `samples` held-out examples of `task`, teacher-forced
/// on their targets. Each example is one input (a batch of one: its embeddings [1, S, E], the
/// inputs the measures perturb), and each of its output positions t (a seq2seq model's target
/// tokens, and <eos> unless every held-out target has the same length; the encoder model's one
/// output per input token) one decision: the output distribution at t, its label the target
/// token at t. The intervened query row of a head is the
/// row whose output is that decision: row t for layers whose rows are the outputs (the decoder's
/// cross-attention, every layer of the encoder model); for a seq2seq encoder's self-attention,
/// whose rows are source positions, the source position the answer layer (its heads' mean
/// weight at row t) attends to most, the row the decision reads. Per head, the decisions' rows
/// are summarised as faithfulness_table summarises examples: means, the median of the permuted
/// TVDs, accuracy = teacher-forced token accuracy. The verdict is faithfulness_verdict's. The
/// seq2seq decoder's causal self-attention has no row: its keys are earlier outputs, not the
/// source tokens the measures perturb. Throws ValueError when the model has no attention layer or samples
/// < 1.
FaithfulnessRun faithfulness_over_held_out(const Model& model, const ModelConfig& config, const Task& task,
                                           const Vocabularies& vocab, std::int64_t samples,
                                           const FaithfulnessSettings& settings = {});

}  // namespace attograd::cli
