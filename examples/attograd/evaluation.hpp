// Held-out evaluation, alignment shares per head, attention maps and saliency of one input.
#pragma once

#include "config.hpp"
#include "models.hpp"

#include "inspect/attention_map.hpp"
#include "inspect/recorded_maps.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::cli {

/// Accuracies of predictions against targets.
struct Evaluation {
    double token_accuracy = 0.0;     ///< target tokens predicted at their position / all target tokens
    double sequence_accuracy = 0.0;  ///< predictions equal to their whole target
    std::vector<std::vector<std::string>> predictions;
};

/// Ids of `tokens`; unknown tokens become <unk> and, when `warn`, a warning naming them is
/// printed to stderr once per call.
std::vector<std::int64_t> encode_tokens(const Vocabulary& vocab, const std::vector<std::string>& tokens,
                                        bool warn);

/// `text` as messages show it: at most 60 bytes (core's excerpt), with control characters and
/// bytes that are not well-formed UTF-8 escaped (data::escape_control: C0 and DEL as `\xhh`,
/// `\t` `\n` `\r` by name, C1 as `\u00hh`), so that a message is valid UTF-8, one line, and
/// cannot drive the terminal.
std::string shown_text(std::string_view text);

/// The tokens of one --input text for a model of `config`. A word-level task splits words at
/// every ASCII whitespace character (space, tab, newline, CR, vertical tab, form feed). Throws
/// ValueError naming the input (as shown_text) when it is not valid UTF-8, holds any other
/// control character (C0, DEL or C1, U+0080-U+009F) (a character-level task: any control character,
/// whitespace included, since no training source holds one), is empty, or is longer than the model takes; a
/// warning on stderr when it is shorter than every training source (ModelConfig::min_source_len), and for
/// tokens not in the vocabulary.
std::vector<std::string> read_input(const Task& task, const RunConfig& config, const std::string& text);

/// Runs `body` for one --input: a ValueError or ResourceError it throws (a bad input) is printed
/// to stderr as "attograd: MESSAGE" and its message returned; "" when `body` succeeded. eval and
/// inspect report every bad input this way and go on with the others.
std::string input_error(const std::function<void()>& body);

/// One prediction as eval and inspect print it: "SOURCE -> PREDICTION   (right)",
/// "SOURCE -> PREDICTION   (wrong, expected TARGET)", or no verdict when `target` is empty (the
/// right answer is unknown).
std::string prediction_line(const Task& task, const std::vector<std::string>& source,
                            const std::vector<std::string>& prediction,
                            const std::vector<std::string>& target);

/// Examples per batch of evaluate() (and of the alignment shares) for `model` on `examples`:
/// 250, fewer for a large model on long examples, so that a batch takes at most about 2^32
/// parameter-token products (about a second) and a Ctrl-C, checked between batches, is
/// answered within it. At least 1.
std::size_t eval_batch_size(const Model& model, const std::vector<Example>& examples);

/// Predictions of `model` for `examples` (sources encoded with vocab.source, outputs decoded with
/// vocab.target; in batches; greedy, or beam search per `decoding`) and their accuracies (an
/// inspect::HeadKnockout alive around the call silences its heads). `between_batches`, when given, is called
/// before each batch and may throw to abandon the evaluation (train::InterruptGuard::check: a Ctrl-C during a
/// long evaluation).
Evaluation evaluate(const Model& model, const Vocabularies& vocab, const std::vector<Example>& examples,
                    const DecodeSettings& decoding = {}, const std::function<void()>& between_batches = {});

/// Share of attention mass on the right source position of one head, over many examples.
struct HeadAlignment {
    std::int64_t layer = 0;  ///< index in Model::attention_layers()
    std::string name;
    std::int64_t head = 0;
    double share = 0.0;
};

/// Whether the rows of attention layer `layer` are the model's outputs, so that a task's
/// alignment applies to it (the decoder's attention; every layer of the encoder model).
bool layer_has_alignment(const Model& model, const ModelConfig& config, std::int64_t layer);

/// Whether attention layer `name` is the seq2seq decoder's causal self-attention
/// (AttentionLayerInfo::over_outputs).
bool decoder_self_attention(const Model& model, const std::string& name);

/// The token labels of layer `name`'s maps of one example: queries and keys the source as the
/// model sees it (`columns`) for the encoder's self-attention; queries the outputs
/// (`output_rows`) and keys `columns` for the layers with an alignment (layer_has_alignment);
/// queries the outputs and keys the decoder's inputs (<bos> and the outputs but the last) for the
/// decoder's self-attention.
inspect::TokenLabels layer_labels(const Model& model, const ModelConfig& config, const std::string& name,
                                  const std::vector<std::string>& columns,
                                  const std::vector<std::string>& output_rows);

/// Per head of every layer with outputs as rows, the mean over `examples` and their target
/// tokens of the weight on the right source position, at the step that wrote the prediction's
/// token there; a target token the prediction has no token for (the prediction is shorter: its
/// <eos> row and the steps after) counts 0. inspect_example's alignment share of one example.
/// Empty when the task defines no alignment.
std::vector<HeadAlignment> alignment_by_head(const Model& model, const ModelConfig& config, const Task& task,
                                             const Vocabularies& vocab, const std::vector<Example>& examples,
                                             const std::vector<std::vector<std::string>>& predictions);

/// What inspect_example adds to the attention maps.
struct InspectOptions {
    bool saliency = false;      ///< gradient x input per output, and each head's Spearman agreement
    bool rollout = false;       ///< attention rollout over the self-attention stack (+ cross-attention)
    bool flow = false;          ///< attention flow over the same graph
    DecodeSettings decoding{};  ///< how the prediction is written (its attention is what is shown)
};

/// How a model configured as `config` writes a prediction with `decoding`, for a reader: "greedy
/// decoding", "beam search (beam 4)", "beam search (beam 4, length penalty 0.6)", or "the most
/// likely token at each position" (a model that writes one output per input).
std::string decoding_description(const DecodeSettings& decoding, const ModelConfig& config);

/// What inspect_example's maps of a model configured as `config` were recorded with, for a
/// reader: the model fed its own prediction (a decoder), or reading the input alone.
std::string example_maps_description(const ModelConfig& config);

/// Every layer's and head's attention for one source, labelled (inspect::attention_maps), recorded
/// by a forward teacher-forced on the model's prediction (greedy or beam-searched, per
/// options.decoding): the output-row layers' rows are its tokens and <eos>. `target` is the right
/// output when known (empty otherwise). Those layers' maps outline, on the rows of the
/// prediction's tokens (never its <eos>), the right source position of the target token at that
/// step, and their alignment share is the outlined weights summed over the target's tokens (a
/// target token beyond the prediction counts 0), as alignment_by_head; without a target, the
/// alignment of the prediction's own tokens (their mean).
inspect::InspectedExample inspect_example(const Model& model, const ModelConfig& config, const Task& task,
                                          const Vocabularies& vocab, const std::vector<std::string>& source,
                                          const std::vector<std::string>& target,
                                          const InspectOptions& options);

}  // namespace attograd::cli
