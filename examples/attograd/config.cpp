// A run's configuration: the model, the training, the task and the vocabulary, as saved in
// DIR/config.json, and the checks that refuse options that do not combine.
#include "config.hpp"
#include "settings.hpp"

#include "core/detail/json_integer.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "data/text.hpp"
#include "data/translate_task.hpp"
#include "data/tsv.hpp"
#include "train/run_writer.hpp"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace attograd::cli {

namespace {

/// The entry of task `name`: a registered task's, or user data's for "data".
const data::TaskEntry& entry_of(const std::string& name) {
    static const data::TaskEntry user_data = data::data_task_entry();
    static const data::TaskEntry translate = data::translate_task_entry();
    if (name == "translate") return translate;
    return name == "data" ? user_data : data::task_entry(name);
}

/// `json[section][key]` read with `read`; ValueError naming the field when it is missing.
const nlohmann::json& field(const nlohmann::json& json, const char* section, std::string_view key) {
    AG_CHECK(json.contains(section) && json[section].is_object() && json[section].contains(key), ValueError,
             "config.json: missing field '{}.{}'", section, key);
    return json[section][std::string(key)];
}

/// config.json's string `section.key`.
std::string text_field(const nlohmann::json& json, const char* section, const char* key) {
    const nlohmann::json& value = field(json, section, key);
    AG_CHECK(value.is_string(), ValueError, "config.json: {}.{} must be a string, got {}", section, key,
             value.dump());
    return value.get<std::string>();
}

/// Refuses a field config.json does not hold as train writes it: a misspelt or stray setting
/// would otherwise be ignored while the run looks configured by it.
void check_known_fields(const nlohmann::json& json) {
    static const std::set<std::string> top = {
        "format", "format_version", "task",     "model", "train",
        "vocab",  "target_vocab",   "progress", "files", train::config_checksum_field};
    static const std::set<std::string> task = {"name",       "data",         "chars",
                                               "lang",       "min_freq",     "max_vocab",
                                               "data_bytes", "data_fnv1a64", "heldout_fnv1a64"};
    static const std::map<std::string, std::set<std::string>> sections = [] {
        std::map<std::string, std::set<std::string>> keys{{"task", task}};
        for (const Setting& s : settings()) {
            const std::size_t dot = s.key.find('.');
            keys[std::string(s.key.substr(0, dot))].insert(std::string(s.key.substr(dot + 1)));
        }
        return keys;
    }();
    for (const auto& [key, value] : json.items()) {
        AG_CHECK(top.contains(key), ValueError,
                 "config.json: unknown field '{}' (train writes {}); remove it",
                 data::escape_control(excerpt(key, 80)), fmt::join(top, ", "));
        const auto section = sections.find(key);
        if (section == sections.end() || !value.is_object()) continue;
        for (const auto& [name, unused] : value.items()) {
            AG_CHECK(section->second.contains(name), ValueError,
                     "config.json: unknown field '{}.{}' (a misspelt setting would be ignored; the "
                     "settings of '{}' are {})",
                     key, data::escape_control(excerpt(name, 80)), key, fmt::join(section->second, ", "));
        }
    }
}

/// Refuses `value` unless it is one of `choices`: "NAME must be one of a, b, got 'c'".
void check_choice(const std::string& value, const std::vector<std::string>& choices,
                  const SettingNames& names, std::string_view field) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    AG_CHECK(std::find(choices.begin(), choices.end(), value) != choices.end(), ValueError,
             "{}{} must be one of {}, got '{}'", names.prefix(field), names(field), list, value);
}

/// A vocabulary saved in config.json's field `name` ("vocab", "target_vocab"): a JSON array of
/// its tokens, index = id.
Vocabulary vocabulary_from_json(const nlohmann::json& json, std::string_view name) {
    AG_CHECK(json.is_array(), ValueError, "config.json: {}: expected a JSON array of tokens", name);
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < json.size(); ++i) {
        AG_CHECK(json[i].is_string(), ValueError, "config.json: {}: entry {} is not a string", name, i);
        tokens.push_back(json[i].get<std::string>());
    }
    try {
        return Vocabulary::from_tokens(tokens);
    } catch (const ValueError& e) {  // a duplicate, empty or control-character token: say which file
        throw ValueError(fmt::format("config.json: {}: {}", name, e.what()));
    }
}

/// The combinations --model rnn refuses (ValueError naming the settings as `names` does): the
/// Bahdanau decoder is a GRU with the additive score and global attention; local attention and
/// the dot scores are the Luong decoder's; the encoder splits E between two directions.
void validate_rnn(const ModelConfig& m, const SettingNames& names) {
    const auto check = [&](bool ok, std::string_view field, const std::string& rest) {
        AG_CHECK(ok, ValueError, "{}{} {}", names.prefix(field), names(field), rest);
    };
    const auto n = [&](std::string_view field) { return names(field); };
    check(!m.bidirectional || m.embed_dim % 2 == 0, "model.bidirectional",
          fmt::format("gives each direction half of {} {}: it must be even", n("model.embed_dim"),
                      m.embed_dim));
    check(m.attention == "soft", "model.attention",
          fmt::format("hard applies to {} seq2seq; the recurrent decoders attend softly", n("model.kind")));
    check(m.heads == 1, "model.heads",
          fmt::format("must be 1 with {} rnn (its decoders have one attention), got {}", n("model.kind"),
                      m.heads));
    if (m.decoder == "bahdanau") {
        check(m.cell == "gru", "model.cell",
              fmt::format("lstm: {} bahdanau is a GRU decoder (Bahdanau et al. 2015); use {} luong",
                          n("model.decoder"), n("model.decoder")));
        check(m.score == "additive", "model.score",
              fmt::format("{}: {} bahdanau scores additively (v^T tanh(W h_j + U s)); use {} luong", m.score,
                          n("model.decoder"), n("model.decoder")));
        check(m.window < 0, "model.window",
              fmt::format("(local attention) applies to {} luong; {} bahdanau attends globally",
                          n("model.decoder"), n("model.decoder")));
    }
}

}  // namespace

RunConfig task_defaults(const std::string& task_name) {
    RunConfig config;
    config.task.name = task_name;
    apply_task_defaults(config, entry_of(task_name).defaults, task_name);
    return config;
}

RunConfig default_config(const Task& task) {
    const TaskInfo& info = task.info();
    RunConfig config = task_defaults(info.name);
    config.model.max_source_len = info.max_source_len;
    config.model.max_target_len = info.max_target_len;
    config.model.min_source_len = info.min_source_len;
    config.vocab = Vocabulary(task.symbols());
    return config;
}

bool writes_per_input(const ModelConfig& config) { return config.kind == "encoder" || config.kind == "lm"; }

double target_accuracy(const std::string& name) { return entry_of(name).target_accuracy; }

bool is_float32_magnitude(double value) {
    const double magnitude = std::abs(value);
    return magnitude == 0.0 ||
           (magnitude >= std::numeric_limits<float>::min() && magnitude <= std::numeric_limits<float>::max());
}

std::string float32_range_text() {
    return fmt::format("[{:.2g}, {:.2g}]", std::numeric_limits<float>::min(),
                       std::numeric_limits<float>::max());
}

std::string flag_of_field(std::string_view field) {
    if (const Setting* setting = find_setting(field); setting != nullptr && !setting->flag.empty())
        return std::string(setting->flag);
    std::string flag(field.substr(field.find('.') + 1));
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

bool SettingNames::from_file(std::string_view field) const {
    return file_ && std::find(given_.begin(), given_.end(), flag_of_field(field)) == given_.end();
}

std::string SettingNames::operator()(std::string_view field) const {
    return from_file(field) ? std::string(field) : "--" + flag_of_field(field);
}

void validate_settings(const RunConfig& config, const SettingNames& names) {
    for (const Setting& s : settings()) {
        if (!s.choices.empty()) check_choice(s.get(config).get<std::string>(), s.choices, names, s.key);
        if (s.check) {
            const std::string problem = s.check(config);
            AG_CHECK(problem.empty(), ValueError, "{}{} {}", names.prefix(s.key), names(s.key), problem);
        }
    }
}

void validate(const RunConfig& config, const TaskInfo& task, const SettingNames& names) {
    const ModelConfig& m = config.model;
    const TrainConfig& t = config.train;
    // `check(ok, field, rest)`: "[config.json: ]NAME REST" unless ok, NAME naming `field`.
    const auto check = [&](bool ok, std::string_view field, const std::string& rest) {
        AG_CHECK(ok, ValueError, "{}{} {}", names.prefix(field), names(field), rest);
    };
    const auto n = [&](std::string_view field) { return names(field); };
    // Each setting's own choices and range (settings.cpp), then the settings that must agree.
    validate_settings(config, names);
    check(m.embed_dim % m.heads == 0, "model.heads",
          fmt::format("{} does not divide {} {}", m.heads, n("model.embed_dim"), m.embed_dim));
    // The lengths come from the task or the TSV file, never from a flag.
    AG_CHECK(m.max_source_len >= 1 && m.max_source_len <= 4096 && m.max_target_len >= 1 &&
                 m.max_target_len <= 4096,
             ValueError, "{} must be in [1, 4096] tokens, got {} and {}",
             names.from_file("model.max_source_len")
                 ? "config.json: model.max_source_len and model.max_target_len"
                 : "the longest source and target",
             m.max_source_len, m.max_target_len);
    AG_CHECK(m.min_source_len >= 1 && m.min_source_len <= m.max_source_len, ValueError,
             "{}model.min_source_len must be in [1, model.max_source_len = {}], got {}",
             names.prefix("model.min_source_len"), m.max_source_len, m.min_source_len);
    check(m.window != 0 || m.local != "p", "model.window",
          fmt::format("must be >= 1 with {} p (its Gaussian has sigma = D / 2), got 0", n("model.local")));
    check(t.momentum == 0.0 || t.optim == "sgd", "train.momentum",
          fmt::format("applies to {} sgd only (got {} {})", n("train.optim"), n("train.optim"), t.optim));

    if (writes_per_input(m)) {
        check(m.layers >= 1, "model.kind",
              fmt::format("{} needs {} >= 1 (its attention is self-attention layers), got {}", m.kind,
                          n("model.layers"), m.layers));
        check(task.same_length, "model.kind",
              fmt::format("{} writes one output per input token, but task '{}' has outputs of another "
                          "length; use {} seq2seq",
                          m.kind, task.name, n("model.kind")));
    }
    if (m.kind == "lm") {  // causal: each output sees only the tokens up to its own
        const nlohmann::json& defaults = entry_of(task.name).defaults;
        check(defaults.value("model.kind", "") == "lm", "model.kind",
              fmt::format("lm predicts each token from the ones before it, for the language-model tasks "
                          "(whose default it is: `attograd tasks`); task '{}' is not one: use {} seq2seq or "
                          "encoder",
                          task.name, n("model.kind")));
    }
    if (m.kind == "encoder") {
        check(m.attention == "soft", "model.attention",
              fmt::format("hard applies to the seq2seq decoder's attention; {} encoder is soft",
                          n("model.kind")));
        check(m.window < 0 || m.local == "m", "model.local",
              fmt::format("p predicts a centre per decoder query; {} encoder supports {} m only",
                          n("model.kind"), n("model.local")));
    }
    if (m.kind == "rnn") validate_rnn(m, names);
    check(!m.decoder_self_attention || m.kind == "seq2seq", "model.decoder_self_attention",
          fmt::format("applies to {} seq2seq only ({} {} has no Transformer decoder)", n("model.kind"),
                      n("model.kind"), m.kind));
    if (m.kind == "seq2seq") {
        check(m.heads == 1 || m.attention == "soft", "model.attention",
              fmt::format(
                  "hard picks one key per query with single-head attention, but this model has {} heads: "
                  "add {} 1 or use {} soft",
                  m.heads, n("model.heads"), n("model.attention")));
        check(!m.decoder_self_attention || m.attention == "soft", "model.attention",
              fmt::format("hard applies to the decoder's cross-attention, and a decoder layer's attention "
                          "options are shared: with {} its self-attention would be hard too; use {} soft",
                          n("model.decoder_self_attention"), n("model.attention")));
    }
}

nlohmann::json to_json(const RunConfig& config) {
    nlohmann::json json = {{"format", "attograd-run"},
                           {"format_version", run_format_version},
                           {"task",
                            {{"name", config.task.name},
                             {"data", config.task.data},
                             {"chars", config.task.chars},
                             {"lang", config.task.lang},
                             {"min_freq", config.task.min_freq},
                             {"max_vocab", config.task.max_vocab},
                             {"data_bytes", config.task.data_bytes},
                             {"data_fnv1a64", config.task.data_fnv1a64},
                             {"heldout_fnv1a64", config.task.heldout_fnv1a64}}},
                           {"model", nlohmann::json::object()},
                           {"train", nlohmann::json::object()}};
    for (const Setting& s : settings()) {
        const std::size_t dot = s.key.find('.');
        json[std::string(s.key.substr(0, dot))][std::string(s.key.substr(dot + 1))] = s.get(config);
    }
    json["vocab"] = config.vocab.tokens();
    if (config.target_vocab) json["target_vocab"] = config.target_vocab->tokens();
    return json;
}

RunConfig run_config_from_json(const nlohmann::json& json) {
    AG_CHECK(json.is_object() && json.contains("format") && json["format"].is_string() &&
                 json["format"].get<std::string>() == "attograd-run",
             ValueError,
             "config.json: field 'format' is not \"attograd-run\": not an attograd run configuration");
    const std::optional<std::int64_t> format_version =
        json.contains("format_version") ? detail::json_integer<std::int64_t>(json["format_version"])
                                        : std::nullopt;
    AG_CHECK(format_version, ValueError,
             "config.json: field 'format_version' is missing or not an integer in {}",
             detail::json_integer_range<std::int64_t>());
    const std::int64_t version = *format_version;
    AG_CHECK(version == run_format_version, ValueError,
             "config.json: run format version {} is not supported by this attograd (it reads version {}); "
             "train the run again",
             version, run_format_version);
    RunConfig c;
    c.task.name = text_field(json, "task", "name");
    c.task.data = text_field(json, "task", "data");
    {
        const nlohmann::json& chars = field(json, "task", "chars");
        AG_CHECK(chars.is_boolean(), ValueError, "config.json: task.chars must be true or false, got {}",
                 chars.dump());
        c.task.chars = chars.get<bool>();
    }
    const nlohmann::json& bytes = field(json, "task", "data_bytes");
    const std::optional<std::uint64_t> data_bytes = detail::json_integer<std::uint64_t>(bytes);
    AG_CHECK(data_bytes, ValueError, "config.json: task.data_bytes must be an integer in {}, got {}",
             detail::json_integer_range<std::uint64_t>(), bytes.dump());
    c.task.data_bytes = *data_bytes;
    c.task.data_fnv1a64 = text_field(json, "task", "data_fnv1a64");
    if (json["task"].contains("lang")) {  // translate's catalogs and vocabulary limits
        c.task.lang = text_field(json, "task", "lang");
        for (const auto& [key, value] :
             {std::pair{"min_freq", &c.task.min_freq}, {"max_vocab", &c.task.max_vocab}}) {
            const std::optional<std::int64_t> n =
                detail::json_integer<std::int64_t>(field(json, "task", key));
            AG_CHECK(n && *n >= 0, ValueError, "config.json: task.{} must be an integer >= 0, got {}", key,
                     field(json, "task", key).dump());
            *value = *n;
        }
    }
    // As train writes it: "" (a bundled task) or 16 lowercase hex digits.
    const std::string& sum = c.task.data_fnv1a64;
    AG_CHECK(sum.empty() || is_checksum_text(sum), ValueError,
             "config.json: task.data_fnv1a64 must be \"\" or 16 hex digits, got '{}'",
             data::escape_control(excerpt(sum, 40)));
    c.task.heldout_fnv1a64 = text_field(json, "task", "heldout_fnv1a64");
    AG_CHECK(is_checksum_text(c.task.heldout_fnv1a64), ValueError,
             "config.json: task.heldout_fnv1a64 must be 16 hex digits, got '{}'",
             data::escape_control(excerpt(c.task.heldout_fnv1a64, 40)));
    check_known_fields(json);
    for (const Setting& s : settings()) {
        const std::size_t dot = s.key.find('.');
        const std::string section(s.key.substr(0, dot)), key(s.key.substr(dot + 1));
        if (s.default_when_absent && json.contains(section) && json[section].is_object() &&
            !json[section].contains(key))
            continue;
        s.set(c, field(json, section.c_str(), key), "config.json");
    }
    AG_CHECK(json.contains("vocab"), ValueError, "config.json: missing field 'vocab'");
    c.vocab = vocabulary_from_json(json["vocab"], "vocab");
    if (json.contains("target_vocab"))
        c.target_vocab = vocabulary_from_json(json["target_vocab"], "target_vocab");
    AG_CHECK(c.model.max_source_len >= 1 && c.model.max_target_len >= 1, ValueError,
             "config.json: model.max_source_len and model.max_target_len must be >= 1");
    return c;
}

}  // namespace attograd::cli
