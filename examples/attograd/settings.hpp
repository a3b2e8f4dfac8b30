// The table of `attograd train`'s settings: each setting of config.json's "model" and "train"
// sections declared once (key, flag, type, choices, check, help); the command line,
// config.json's write and read, the tasks' defaults, validation, --help's defaults by task and
// --resume all read it.
#pragma once

#include "config.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace attograd::cli {

/// Where a setting's value lives in a RunConfig: the field, of its type.
using SettingField = std::variant<std::int64_t*, std::uint64_t*, double*, bool*, std::string*>;

/// The --model kinds a setting applies to: train refuses its flag with the others.
enum class ModelKinds {
    all,          ///< every model
    rnn,          ///< --model rnn only
    transformer,  ///< the Transformer models only (seq2seq, encoder and lm)
    seq2seq,      ///< --model seq2seq only (the one Transformer decoder)
};

/// One setting of a run: a field of ModelConfig or TrainConfig.
struct Setting {
    std::string_view key{};   ///< its config.json name, "section.field": "model.embed_dim"
    std::string_view flag{};  ///< train's flag without "--" ("embed-dim"); "" = none (set by the task)
    std::string_view help{};  ///< the flag's --help text (--help appends the defaults by task)
    /// A text setting's allowed values (the library's own lists where it has them); {} = any.
    std::vector<std::string> choices{};
    /// The field in `config`.
    std::function<SettingField(RunConfig& config)> field{};
    /// "" when the value in `config` is allowed, else the rest of the message after the
    /// setting's name: "must be in [1, 4096], got -5". Empty function = no check of its own.
    std::function<std::string(const RunConfig& config)> check{};
    /// A boolean whose flag turns it off (--no-early-stop sets train.early_stop false).
    bool negated_flag = false;
    /// --resume may change it (the others would change the saved run).
    bool resumable = false;
    /// The models whose flag it is (check_model_flags refuses it with the others).
    ModelKinds applies_to = ModelKinds::all;
    /// The causal language model (--model lm) has no such choice (its attention is causal scaled
    /// dot-product self-attention): train refuses the flag with --model lm.
    bool not_lm = false;
    /// A config.json without it reads the default: a setting whose default leaves the model as
    /// runs without the setting built it (decoder self-attention off, no dropout, no uniform layer).
    bool default_when_absent = false;
    /// How --help shows the default -1 of an integer that -1 turns off ("none (global
    /// attention)"); "" = as the number.
    std::string_view off_text{};

    /// The value in `config`, as config.json stores it.
    nlohmann::json get(const RunConfig& config) const;
    /// Sets the value in `config` from `value`. Throws ValueError "WHERE: KEY must be an
    /// integer, got 1.0" (or true or false, a string, a number) when `value` has another type,
    /// and naming the range when an integer does not fit the field.
    void set(RunConfig& config, const nlohmann::json& value, std::string_view where) const;
    /// For an integer setting, what it allows in words ("must be >= 0 and at most
    /// 9223372036854775807", from its check at the bounds of its type); "" for the others.
    std::string integer_range(const RunConfig& config) const;
    /// Copies the value of `from` into `to`.
    void copy(const RunConfig& from, RunConfig& to) const;
};

/// Every setting, in the order train's --help lists them. Adding a setting: a field in
/// ModelConfig or TrainConfig (config.hpp), one entry here (settings.cpp), and its use.
const std::vector<Setting>& settings();

/// The setting whose config.json name is `key` ("model.heads"), or nullptr.
const Setting* find_setting(std::string_view key);
/// The setting whose flag is `flag` ("heads", without "--"), or nullptr.
const Setting* find_setting_by_flag(std::string_view flag);

/// Applies a task's defaults (data::TaskEntry::defaults, {"model.heads": 4, ...}) to `config`.
/// Throws ValueError naming the task and the key when a key is not a setting or a value has
/// the wrong type.
void apply_task_defaults(RunConfig& config, const nlohmann::json& defaults, std::string_view task);

}  // namespace attograd::cli
