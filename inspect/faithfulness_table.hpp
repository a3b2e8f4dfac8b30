// A data-set summary of every head's faithfulness, as one table with a verdict per head.
#pragma once

#include "inspect/faithfulness.hpp"

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attograd::inspect {

/// The examples to summarise over.
struct FaithfulnessData {
    Tensor inputs{};                        ///< [N, T, E], as ExplainedModel::probabilities takes them
    std::vector<std::int64_t> labels{};     ///< [N] correct classes, or empty (no accuracies)
    std::vector<std::int64_t> alignment{};  ///< [N] the key each head should attend to, or empty
};

/// Options of faithfulness_table.
struct FaithfulnessOptions {
    std::vector<HeadId> heads{};               ///< the heads to summarise; empty = every head of every layer
    std::int64_t permutations = 100;           ///< N of permutation_test (>= 1)
    bool adversarial = true;                   ///< run adversarial_attention (its cost dominates)
    AdversarialOptions adversarial_options{};  ///< options of adversarial_attention
    /// examples per batch (>= 1); the copies that leave-one-out, permutation and erasure run of
    /// each example go in passes of at most max(chunk, 512) sequences
    std::int64_t chunk = 64;
    /// of the permutations and the random erasure: each head draws from its own generator,
    /// seeded from this one in head order, so its values do not depend on the thread running it
    std::uint64_t seed = 0;
    /// heads summarised at once (>= 1), each on its own thread (OpenMP); 1 while the model is in
    /// training mode (its dropout draws from shared generators) and in a child made by fork(). With more than
    /// 1, `probabilities` is called from several threads at once and must allow it (a forward pass in eval
    /// mode does). The values are the same for any number of threads.
    std::int64_t threads = 1;
};

/// One head's summary over the data set (means over examples unless noted; nullopt when the data
/// does not allow it).
struct HeadFaithfulness {
    HeadId head{};                              ///< the head summarised
    std::optional<double> alignment{};          ///< mean weight on the aligned key (needs alignment)
    double entropy = 0;                         ///< mean entropy of the weights, -sum w ln w (nats)
    double max_weight = 0;                      ///< mean of the largest weight
    std::optional<double> accuracy{};           ///< the model's accuracy (needs labels)
    std::optional<double> knockout_accuracy{};  ///< with this head silenced (HeadKnockout)
    std::optional<double> tau_gradient{};       ///< mean Kendall tau-b, attention vs gradient_importance
    std::optional<double> tau_loo{};            ///< mean Kendall tau-b, attention vs leave_one_out
    double permutation_median = 0;              ///< median over examples of the per-example median TVD
    double permutation_iqr = 0;                 ///< mean per-example IQR of the TVD
    std::optional<double> adversarial_jsd{};    ///< mean epsilon-max JSD (when run)
    /// fraction of examples whose decision flips (erasure)
    /// @{
    double flip_top = 0, flip_random = 0;
    /// @}
    /// mean fraction of keys removed before the decision flips, over the examples where it flips
    /// @{
    std::optional<double> fraction_attention{}, fraction_gradient{}, fraction_product{}, fraction_random{};
    /// @}
    std::string verdict{};  ///< see faithfulness_verdict
};

/// The summary of every head, and the seconds each measure took (keys "observe", "gradient",
/// "leave-one-out", "permutation", "adversarial", "erasure", "knockout"), summed over the heads
/// (over threads too when several ran at once: then more than the wall time).
struct FaithfulnessTable {
    std::vector<HeadFaithfulness> heads;    ///< one row per head summarised
    std::map<std::string, double> seconds;  ///< seconds per measure (keys above)
    double epsilon = 0.01;                  ///< the adversarial TVD bound used
};

/// Summarises every chosen head over the data (Jain & Wallace 2019 §4; Serrano & Smith 2019 §4;
/// Wiegreffe & Pinter 2019 §3 for the knockout / uniform baselines). Throws ValueError when a
/// head does not exist (as AttentionIntervention), permutations, chunk or threads < 1, labels or alignment
/// are neither empty nor N long, a label or alignment is out of range; the measures' errors.
FaithfulnessTable faithfulness_table(const ExplainedModel& m, const FaithfulnessData& data,
                                     const FaithfulnessOptions& options = {});

/// The thresholds of faithfulness_verdict.
struct VerdictThresholds {
    /// below: the output ignores the weights' order (Jain & Wallace 2019 §4.2 call such outputs
    /// insensitive to the weights)
    double permutation_tvd = 0.01;
    double adversarial_jsd = 0.3;  ///< at or above (of at most ln 2 = 0.69): other weights do as well
    double knockout_points = 5;    ///< at or above, with tau_loo: the head decides the output
    double tau_loo = 0.5;          ///< at or above: the weights rank keys as leaving them out does
};
/// The thresholds faithfulness_verdict applies.
inline constexpr VerdictThresholds verdict_thresholds{};

/// A one-line verdict with the thresholds of verdict_thresholds, the first that applies:
/// - "not an explanation: permuted weights change the output by TVD x" when the median permuted
///   TVD < 0.01;
/// - "not an explanation: weights at JSD x from its own give the same output (TVD <= eps)" when
///   the adversarial JSD >= 0.3;
/// - "decisive: knocking it out costs x points and its weights agree with leave-one-out, tau y"
///   when knockout costs >= 5 accuracy points and tau_loo >= 0.5;
/// - otherwise "partial: ..." listing the knockout cost, tau_loo and the permuted TVD.
/// A "not an explanation" verdict whose knockout costs 5 points or more adds "; but knocking it
/// out costs x points: the output needs the head, not the placement of its weights at the row
/// measured" (other weights at that row do as well, the head silenced does not). The knockout cost
/// is knockout_cost's, worded by knockout_cost_text; every figure is printed by verdict_figure
/// against its rule's threshold.
std::string faithfulness_verdict(const HeadFaithfulness& head, double epsilon);

/// `value` with `digits` decimals, or with more where rounding to `digits` would put the printed
/// number on the other side of a threshold t than `value` (printed < t unlike value < t: 4.65
/// beside "5 or more" prints as 4.7, not 5; 0.0099 beside "below 0.01" as 0.0099; -0.2 against
/// 0 as -0.2, not -0): every figure a verdict prints reads the way its rule decided.
std::string verdict_figure(double value, int digits, std::initializer_list<double> thresholds);

/// 100 * (accuracy - knockout_accuracy), the accuracy points knocking the head out costs
/// (negative when it raises accuracy), rounded to 1e-9 so that a ratio of counts' rounding error
/// does not cross a threshold; nullopt without both accuracies.
std::optional<double> knockout_cost(const HeadFaithfulness& head);

/// "costs N points", or "raises accuracy by N points" for a negative cost, N by verdict_figure
/// against verdict_thresholds.knockout_points and 0.
std::string knockout_cost_text(double cost);

/// The verdicts' rules as sentences, one per verdict in the order faithfulness_verdict tries
/// them, with the thresholds' values (for a report or a program's output).
std::vector<std::string> verdict_rules(double epsilon);

/// The table's column names: layer, head, then the measures (align, entropy, max_w, acc,
/// acc_ko, tau_grad, tau_loo, perm_tvd, perm_iqr, adv_jsd, flip_top, flip_rand, frac_att,
/// frac_grad, frac_prod, frac_rand: HeadFaithfulness's fields in order).
std::vector<std::string> faithfulness_columns();
/// One head's row under faithfulness_columns(), "-" where a value is nullopt.
std::vector<std::string> faithfulness_cells(const HeadFaithfulness& head);

/// The table as aligned plain text, one line per head, then the verdicts, with more than one head
/// the head whose knockout costs the most accuracy ("the output needs LAYER head H most: knocking
/// it out costs N points"; none when no knockout costs anything), their rules (verdict_rules) and
/// the seconds.
std::string to_text(const FaithfulnessTable& table);
/// The table as CSV (header row; empty cells where nullopt; verdict quoted).
std::string to_csv(const FaithfulnessTable& table);

}  // namespace attograd::inspect
