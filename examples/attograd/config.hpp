// A run's configuration: the model, the training, the task and the vocabulary, as saved in
// DIR/config.json, and the checks that refuse options that do not combine.
#pragma once

#include "data/task.hpp"
#include "data/vocabulary.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::cli {

// The program's tasks, examples and vocabularies are the library's (data/).
using data::Example;
using data::Metric;
using data::Task;
using data::TaskInfo;
using data::Vocabulary;

/// Version of config.json's layout; runs with another version are refused. Version 2 added
/// "files" (each file's checksum) and the progress counters a bit-exact resume needs; version 3
/// marks the models rebuilt from the library's Transformer layers (new state_dict names); version
/// 4 adds the REINFORCE baseline buffers to model.safetensors, schedule.last_epoch to every
/// optimizer.safetensors and train.checkpoint_every to config.json; version 5 adds
/// task.heldout_fnv1a64 and refuses fields it does not know; version 6 requires the progress
/// records of the probes, kernels and first loss, orders a --data run's vocabularies by byte and
/// records Adam's decoupled_weight_decay in optimizer.safetensors.
inline constexpr int run_format_version = 6;

/// Everything needed to rebuild the model (with the vocabulary of RunConfig).
struct ModelConfig {
    std::string kind = "seq2seq";  ///< "seq2seq", "encoder", "rnn" (model_rnn.cpp) or "lm" (model_lm.cpp)
    std::int64_t embed_dim = 64;
    std::int64_t heads = 1;           ///< heads of every attention layer
    std::int64_t layers = 0;          ///< self-attention layers (seq2seq: in the encoder)
    std::int64_t decoder_layers = 1;  ///< seq2seq: cross-attention layers of the decoder
    std::int64_t ffn_dim = 128;       ///< width of each layer's feed-forward block (0 = none)
    /// The encoder adds a learned embedding of each position's next token ("smeared" tokens,
    /// after the smeared keys of Olsson et al. 2022): a key then carries its value, so one
    /// attention step can find a key and read what follows it (the recall task's default).
    bool next_token = false;
    std::string score = "scaled-dot";  ///< additive, dot, scaled-dot or bilinear
    std::string attention = "soft";    ///< soft or hard (the decoder's cross-attention)
    std::string estimator = "gumbel";  ///< hard attention's training: gumbel or reinforce
    std::int64_t window = -1;          ///< local window half-width D; -1 = global attention
    std::string local = "m";           ///< m or p (with a window)
    std::int64_t max_source_len = 0;   ///< longest source the model takes (tokens)
    /// Shortest source it was trained on (tokens): eval and inspect warn about shorter inputs.
    /// Runs written before it was saved read it from their task (1 for a "data" run).
    std::int64_t min_source_len = 1;
    std::int64_t max_target_len = 0;  ///< longest output it writes (tokens, without <eos>)
    /// The attention layer (its number in Model::attention_layers()) whose weights are held
    /// uniform over the allowed keys (uniform_attention.hpp); -1 = none.
    std::int64_t uniform_attention = -1;
    // --model rnn only:
    std::string cell = "gru";          ///< rnn: the encoder's and decoder's recurrent unit, gru or lstm
    std::string decoder = "bahdanau";  ///< rnn: bahdanau (nn::BahdanauDecoder) or luong (nn::LuongDecoder)
    bool bidirectional = false;        ///< rnn: the encoder reads the source both ways
    std::int64_t rnn_layers = 1;       ///< rnn: stacked layers of the encoder (and of the Luong decoder)
    /// seq2seq: each decoder layer also attends causally over the earlier outputs (a Transformer
    /// decoder, Vaswani et al. 2017; PyTorch's tgt_is_causal mask). Off: every output position
    /// sees only its own input and the source, and the cross-attention is the whole alignment.
    bool decoder_self_attention = false;
    /// Dropout probability while training, in [0, 1): the Transformer layers' (PyTorch's
    /// TransformerEncoderLayer / TransformerDecoderLayer dropout: attention weights, each block's
    /// output, inside the feed-forward block); rnn: on the source embeddings and between stacked
    /// encoder layers (nn::GRU / nn::LSTM's dropout). Eval mode drops nothing.
    double dropout = 0.0;
};

/// Whether a model of `config` writes one output per input token in one pass (encoder, lm)
/// rather than decoding an output followed by <eos> (seq2seq, rnn).
bool writes_per_input(const ModelConfig& config);

/// How the model is trained.
struct TrainConfig {
    std::string optim = "adam";  ///< sgd, adam or adamw
    double lr = 3e-3;
    double momentum = 0.0;  ///< sgd only
    double weight_decay = 0.0;
    double clip = 1.0;  ///< max global gradient norm; 0 = no clipping
    std::int64_t batch = 32;
    std::int64_t steps = 1000;  ///< at most this many steps (training stops early at the target)
    std::uint64_t seed = 0;
    std::int64_t warmup = 50;             ///< linear warm-up steps (0 = none)
    std::string schedule = "cosine";      ///< cosine or constant after the warm-up
    std::int64_t eval_every = 100;        ///< held-out evaluation period in steps
    std::int64_t checkpoint_every = 100;  ///< save the run every N steps (0 = at evaluations only)
    /// Attention snapshot period in steps (0 = off): the first held-out examples' attention is
    /// recorded at step 0, every N steps and at the end, into DIR/attention_snapshots.safetensors.
    /// It does not change the training; 20 costs about 0.5 % of training time (bench/README.md).
    std::int64_t snapshot_every = 20;
    bool early_stop = true;  ///< stop once the held-out accuracy reaches the target
};

/// The task a run trains on.
struct TaskConfig {
    std::string name;    ///< a bundled task, or "data"
    std::string data;    ///< the TSV path for "data" ("" otherwise)
    bool chars = false;  ///< character tokens for "data"
    std::string lang;    ///< translate: the catalogs' language ("" otherwise)
    /// translate: words seen fewer times in the training pairs are <unk>; at most max_vocab
    /// entries (0 = no limit). The vocabulary they built is config.json's vocab.
    std::int64_t min_freq = 1, max_vocab = 0;
    /// The TSV file's size and fnv1a64 when the run started, so that --resume refuses other
    /// data (0 and "" for bundled tasks and runs written before they were recorded).
    std::uint64_t data_bytes = 0;
    std::string data_fnv1a64;
    /// heldout_checksum of the task's held-out examples when the run started: eval, inspect and
    /// --resume refuse a task (another task.name, other catalogs, another heldout.tsv) whose
    /// held-out examples are not the ones the run trained and evaluated on.
    std::string heldout_fnv1a64;
};

/// A whole run's configuration (config.json).
struct RunConfig {
    TaskConfig task;
    ModelConfig model;
    TrainConfig train;
    Vocabulary vocab;  ///< the sources' vocabulary, and the targets' too unless target_vocab is set
    /// The targets' own vocabulary (config.json's "target_vocab"); none: `vocab` serves both sides.
    std::optional<Vocabulary> target_vocab;
};

/// The vocabularies a run reads its sources and writes its outputs with (the same one when
/// shared): sources are encoded with `source`, targets encoded and outputs decoded with `target`.
struct Vocabularies {
    const Vocabulary& source;
    const Vocabulary& target;
};

/// The vocabularies of `config` (its vocab for both sides unless it has a target_vocab); they
/// refer to `config`, which must outlive them.
inline Vocabularies vocabularies(const RunConfig& config) {
    return {config.vocab, config.target_vocab ? *config.target_vocab : config.vocab};
}

/// The model and training defaults of task `task_name` (a registered task, or "data"): the
/// defaults of ModelConfig and TrainConfig with the task entry's `defaults` applied (see
/// data::TaskEntry, settings.hpp); the lengths and vocabulary are left at their defaults.
/// `train --help` lists them. Throws ValueError for an unknown task.
RunConfig task_defaults(const std::string& task_name);

/// The defaults of `task`'s model and training (what `attograd train --task NAME` uses).
RunConfig default_config(const Task& task);

/// The held-out accuracy (of the task's metric) at which `train` stops early on task `name`:
/// its registry entry's target_accuracy (1.0 for user data). Throws ValueError for an unknown task.
double target_accuracy(const std::string& name);

/// Whether `value` is 0 or finite with a magnitude in [FLT_MIN, FLT_MAX] (1.2e-38 to 3.4e+38):
/// the settings computed in float32 (lr, momentum, weight decay, clip) keep their value there,
/// where 1e-50 would be 0 (training nothing) and 1e39 inf.
bool is_float32_magnitude(double value);
/// "[1.2e-38, 3.4e+38]", the magnitudes is_float32_magnitude() accepts besides 0.
std::string float32_range_text();

/// How validate() names a setting in its messages: by the command-line flag it was given with
/// (`--embed-dim`), or by its field in config.json (`config.json: model.embed_dim ...`) when
/// the value was read from a run's file.
class SettingNames {
public:
    /// Every setting named by its flag: a new run, whose values are flags or the task's defaults.
    static SettingNames flags() { return SettingNames(false, {}); }
    /// Every setting named by its config.json field, except the flags in `given` (long names
    /// without "--", e.g. "steps"), which --resume took from the command line.
    static SettingNames config_file(std::vector<std::string> given = {}) {
        return SettingNames(true, std::move(given));
    }
    /// Whether the value of `field` ("model.embed_dim") was read from config.json.
    bool from_file(std::string_view field) const;
    /// "--embed-dim" or "model.embed_dim" for `field` "model.embed_dim" (model.kind is --model).
    std::string operator()(std::string_view field) const;
    /// The start of a message about `field`: "config.json: " when it came from the file.
    std::string prefix(std::string_view field) const { return from_file(field) ? "config.json: " : ""; }

private:
    SettingNames(bool file, std::vector<std::string> given) : file_(file), given_(std::move(given)) {}
    bool file_;
    std::vector<std::string> given_;
};

/// The flag of config field `field`: "model.embed_dim" -> "embed-dim", "model.kind" -> "model".
std::string flag_of_field(std::string_view field);

/// Refuses (ValueError, naming them as `names` says) a setting outside its own choices or range
/// (settings.cpp), e.g. `config.json: train.batch must be in [1, 4096], got 0`.
void validate_settings(const RunConfig& config, const SettingNames& names);

/// Refuses a setting outside its own range (validate_settings), then options that do not combine, with a
/// message naming them as `names` says (ValueError), e.g. an encoder model on a task whose outputs differ in
/// length from its inputs, `--local p` without a window, hard attention with several heads, `--momentum` with
/// Adam; from config.json, `config.json: model.embed_dim must be in [1, 4096], got -5`.
void validate(const RunConfig& config, const TaskInfo& task,
              const SettingNames& names = SettingNames::flags());

/// config.json's contents (with `format_version`).
nlohmann::json to_json(const RunConfig& config);
/// Reads config.json's contents. Throws ValueError naming the field when one is missing or
/// has the wrong type ("config.json: model.heads must be an integer, got 1.0"), and when the
/// format version is not run_format_version.
RunConfig run_config_from_json(const nlohmann::json& json);

}  // namespace attograd::cli
