// A run's configuration: the model, the training, the task and the vocabulary, as saved in
// DIR/config.json, and the checks that refuse options that do not combine.
#include "config.hpp"

#include "core/detail/json_integer.hpp"
#include "core/error.hpp"
#include "core/input_file.hpp"
#include "data/text.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace attograd::cli {

namespace {

/// `json[section][key]` as T; ValueError naming the field when it is missing or mistyped.
template <class T>
T field(const nlohmann::json& json, const char* section, const char* key) {
    const std::string name = fmt::format("{}.{}", section, key);
    AG_CHECK(json.contains(section) && json[section].is_object() && json[section].contains(key), ValueError,
             "config.json: missing field '{}'", name);
    const auto& value = json[section][key];
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // A JSON integer outside T's range would wrap (2^64 - 1 read as int64 is -1).
        AG_CHECK(value.is_number_integer(), ValueError, "config.json: field '{}' has the wrong type ({})",
                 name, value.type_name());
        const std::optional<T> integer = detail::json_integer<T>(value);
        AG_CHECK(integer, ValueError, "config.json: {} must be an integer in {}, got {}", name,
                 detail::json_integer_range<T>(), value.dump());
        return *integer;
    } else {
        const bool ok = std::is_same_v<T, bool>          ? value.is_boolean()
                        : std::is_same_v<T, std::string> ? value.is_string()
                                                         : value.is_number();
        AG_CHECK(ok, ValueError, "config.json: field '{}' has the wrong type ({})", name, value.type_name());
        return value.get<T>();
    }
}

template <std::size_t N>
void check_choice(const std::string& value, const std::array<const char*, N>& choices,
                  const SettingNames& names, std::string_view field) {
    const bool ok = std::any_of(choices.begin(), choices.end(), [&](const char* c) { return value == c; });
    std::string list;
    for (const char* c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
    AG_CHECK(ok, ValueError, "{}{} must be one of {}, got '{}'", names.prefix(field), names(field), list,
             value);
}

/// The vocabulary saved in config.json: a JSON array of its tokens, index = id.
Vocabulary vocabulary_from_json(const nlohmann::json& json) {
    AG_CHECK(json.is_array(), ValueError, "config.json: vocab: expected a JSON array of tokens");
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < json.size(); ++i) {
        AG_CHECK(json[i].is_string(), ValueError, "config.json: vocab: entry {} is not a string", i);
        tokens.push_back(json[i].get<std::string>());
    }
    try {
        return Vocabulary::from_tokens(tokens);
    } catch (const ValueError& e) {  // a duplicate, empty or control-character token: say which file
        throw ValueError(fmt::format("config.json: {}", e.what()));
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
    check(m.rnn_layers >= 1 && m.rnn_layers <= 8, "model.rnn_layers",
          fmt::format("must be in [1, 8], got {}", m.rnn_layers));
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
    if (task_name == "recall") {
        config.model.next_token = true;
        config.model.decoder_layers = 2;
        // Smaller steps over larger batches: at lr 3e-3, batch 32 most seeds stalled near 40 %
        // before finding the key-matching step.
        config.train.lr = 2e-3;
        config.train.batch = 64;
        config.train.steps = 6000;
    } else if (task_name == "dates") {
        config.model.layers = 2;
        config.model.decoder_layers = 2;
        config.model.heads = 4;
        config.train.steps = 4000;
    } else if (task_name == "coref") {
        // The referent depends on the last word: the encoder needs self-attention to carry the
        // adjective's kind to the nouns before the decoder's one query can pick one.
        config.model.layers = 2;
        config.model.heads = 2;
    } else if (task_name == "translate") {
        // Real messages: two layers a side, wider than the toy tasks, and an evaluation of the
        // ~3000 held-out messages every 500 steps rather than every 100.
        config.model.layers = 2;
        config.model.decoder_layers = 2;
        config.model.heads = 4;
        config.model.embed_dim = 128;
        config.model.ffn_dim = 256;
        config.train.batch = 64;
        config.train.steps = 4000;
        config.train.eval_every = 500;
    } else if (task_name == "sort") {
        config.train.steps = 2000;
    } else if (task_name == "data") {
        config.model.layers = 1;
        config.model.decoder_layers = 1;
        config.train.steps = 2000;
    }
    return config;
}

RunConfig default_config(const Task& task) {
    const TaskInfo& info = task.info();
    RunConfig config = task_defaults(info.name);
    config.model.kind = "seq2seq";  // every task's default (the encoder needs --model encoder)
    config.model.max_source_len = info.max_source_len;
    config.model.max_target_len = info.max_target_len;
    config.model.min_source_len = info.min_source_len;
    config.vocab = Vocabulary(task.symbols());
    return config;
}

double target_accuracy(const std::string& name) {
    if (name == "copy" || name == "reverse") return 0.99;
    if (name == "sort" || name == "recall" || name == "dates" || name == "coref") return 0.95;
    return 1.0;
}

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
    if (field == "model.kind") return "model";
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

void validate(const RunConfig& config, const TaskInfo& task, const SettingNames& names) {
    const ModelConfig& m = config.model;
    const TrainConfig& t = config.train;
    // `check(ok, field, rest)`: "[config.json: ]NAME REST" unless ok, NAME naming `field`.
    const auto check = [&](bool ok, std::string_view field, const std::string& rest) {
        AG_CHECK(ok, ValueError, "{}{} {}", names.prefix(field), names(field), rest);
    };
    const auto n = [&](std::string_view field) { return names(field); };
    check_choice(m.kind, std::array{"seq2seq", "encoder", "rnn"}, names, "model.kind");
    check_choice(m.cell, std::array{"gru", "lstm"}, names, "model.cell");
    check_choice(m.decoder, std::array{"bahdanau", "luong"}, names, "model.decoder");
    check_choice(m.score, std::array{"additive", "dot", "scaled-dot", "bilinear"}, names, "model.score");
    check_choice(m.attention, std::array{"soft", "hard"}, names, "model.attention");
    check_choice(m.local, std::array{"m", "p"}, names, "model.local");
    check_choice(m.estimator, std::array{"gumbel", "reinforce"}, names, "model.estimator");
    check_choice(t.optim, std::array{"sgd", "adam", "adamw"}, names, "train.optim");
    check_choice(t.schedule, std::array{"cosine", "constant"}, names, "train.schedule");
    // Upper bounds keep a typo from asking for gigabytes: these are toy-task models.
    check(m.embed_dim >= 1 && m.embed_dim <= 4096, "model.embed_dim",
          fmt::format("must be in [1, 4096], got {}", m.embed_dim));
    check(m.heads >= 1, "model.heads", fmt::format("must be >= 1, got {}", m.heads));
    check(m.embed_dim % m.heads == 0, "model.heads",
          fmt::format("{} does not divide {} {}", m.heads, n("model.embed_dim"), m.embed_dim));
    check(m.layers >= 0 && m.layers <= 16, "model.layers",
          fmt::format("must be in [0, 16], got {}", m.layers));
    check(m.decoder_layers >= 1 && m.decoder_layers <= 16, "model.decoder_layers",
          fmt::format("must be in [1, 16], got {}", m.decoder_layers));
    check(m.ffn_dim >= 0 && m.ffn_dim <= 16384, "model.ffn_dim",
          fmt::format("must be in [0, 16384], got {}", m.ffn_dim));
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
    check(m.window >= -1, "model.window",
          fmt::format("must be >= 0 (or -1: global attention), got {}", m.window));
    check(m.window != 0 || m.local != "p", "model.window",
          fmt::format("must be >= 1 with {} p (its Gaussian has sigma = D / 2), got 0", n("model.local")));
    // The optimizers and the gradient clip compute in float32: a value beyond FLT_MAX would
    // become inf inside them (an error naming the optimizer, not the flag), a nonzero one below
    // FLT_MIN 0 (lr 1e-50 would train nothing).
    const auto float32 = [&](double v) {
        return fmt::format("representable in float32 (0 or a magnitude in {}), got {:g}",
                           float32_range_text(), v);
    };
    check(std::isfinite(t.lr) && t.lr > 0.0 && is_float32_magnitude(t.lr), "train.lr",
          "must be finite, > 0 and " + float32(t.lr));
    check(t.momentum >= 0.0 && t.momentum < 1.0, "train.momentum",
          fmt::format("must be in [0, 1), got {}", t.momentum));
    check(is_float32_magnitude(t.momentum), "train.momentum", "must be " + float32(t.momentum));
    check(std::isfinite(t.weight_decay) && t.weight_decay >= 0.0 && is_float32_magnitude(t.weight_decay),
          "train.weight_decay", "must be finite, >= 0 and " + float32(t.weight_decay));
    check(std::isfinite(t.clip) && t.clip >= 0.0 && is_float32_magnitude(t.clip), "train.clip",
          "must be finite, >= 0 (0 = off) and " + float32(t.clip));
    check(t.batch >= 1 && t.batch <= 4096, "train.batch",
          fmt::format("must be in [1, 4096], got {}", t.batch));
    check(t.steps >= 0, "train.steps", fmt::format("must be >= 0, got {}", t.steps));
    check(t.warmup >= 0, "train.warmup", fmt::format("must be >= 0, got {}", t.warmup));
    check(t.eval_every >= 1, "train.eval_every", fmt::format("must be >= 1, got {}", t.eval_every));
    check(t.checkpoint_every >= 0, "train.checkpoint_every",
          fmt::format("must be >= 0 (0 = at evaluations only), got {}", t.checkpoint_every));
    check(t.snapshot_every >= 0, "train.snapshot_every",
          fmt::format("must be >= 0 (0 = off), got {}", t.snapshot_every));
    check(t.momentum == 0.0 || t.optim == "sgd", "train.momentum",
          fmt::format("applies to {} sgd only (got {} {})", n("train.optim"), n("train.optim"), t.optim));

    if (m.kind == "encoder") {
        check(m.layers >= 1, "model.kind",
              fmt::format("encoder needs {} >= 1 (its attention is self-attention layers), got {}",
                          n("model.layers"), m.layers));
        check(task.same_length, "model.kind",
              fmt::format("encoder writes one output per input token, but task '{}' has outputs of another "
                          "length; use {} seq2seq",
                          task.name, n("model.kind")));
        check(m.attention == "soft", "model.attention",
              fmt::format("hard applies to the seq2seq decoder's attention; {} encoder is soft",
                          n("model.kind")));
        check(m.window < 0 || m.local == "m", "model.local",
              fmt::format("p predicts a centre per decoder query; {} encoder supports {} m only",
                          n("model.kind"), n("model.local")));
    }
    if (m.kind == "rnn") validate_rnn(m, names);
    if (m.kind == "seq2seq") {
        check(m.heads == 1 || m.attention == "soft", "model.attention",
              fmt::format(
                  "hard picks one key per query with single-head attention, but this model has {} heads: "
                  "add {} 1 or use {} soft",
                  m.heads, n("model.heads"), n("model.attention")));
    }
}

nlohmann::json to_json(const RunConfig& config) {
    const ModelConfig& m = config.model;
    const TrainConfig& t = config.train;
    return {{"format", "attograd-run"},
            {"format_version", run_format_version},
            {"task",
             {{"name", config.task.name},
              {"data", config.task.data},
              {"chars", config.task.chars},
              {"lang", config.task.lang},
              {"min_freq", config.task.min_freq},
              {"max_vocab", config.task.max_vocab},
              {"data_bytes", config.task.data_bytes},
              {"data_fnv1a64", config.task.data_fnv1a64}}},
            {"model",
             {{"kind", m.kind},
              {"embed_dim", m.embed_dim},
              {"heads", m.heads},
              {"layers", m.layers},
              {"decoder_layers", m.decoder_layers},
              {"ffn_dim", m.ffn_dim},
              {"next_token", m.next_token},
              {"score", m.score},
              {"attention", m.attention},
              {"estimator", m.estimator},
              {"window", m.window},
              {"local", m.local},
              {"max_source_len", m.max_source_len},
              {"max_target_len", m.max_target_len},
              {"min_source_len", m.min_source_len},
              {"cell", m.cell},
              {"decoder", m.decoder},
              {"bidirectional", m.bidirectional},
              {"rnn_layers", m.rnn_layers}}},
            {"train",
             {{"optim", t.optim},
              {"lr", t.lr},
              {"momentum", t.momentum},
              {"weight_decay", t.weight_decay},
              {"clip", t.clip},
              {"batch", t.batch},
              {"steps", t.steps},
              {"seed", t.seed},
              {"warmup", t.warmup},
              {"schedule", t.schedule},
              {"eval_every", t.eval_every},
              {"checkpoint_every", t.checkpoint_every},
              {"snapshot_every", t.snapshot_every},
              {"early_stop", t.early_stop}}},
            {"vocab", config.vocab.tokens()}};
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
    c.task.name = field<std::string>(json, "task", "name");
    c.task.data = field<std::string>(json, "task", "data");
    c.task.chars = field<bool>(json, "task", "chars");
    if (json["task"].contains("lang")) {  // absent in runs of tasks before translate was bundled
        c.task.lang = field<std::string>(json, "task", "lang");
        c.task.min_freq = field<std::int64_t>(json, "task", "min_freq");
        c.task.max_vocab = field<std::int64_t>(json, "task", "max_vocab");
    }
    if (json["task"].contains("data_fnv1a64")) {  // absent in runs written before it was recorded
        c.task.data_bytes = field<std::uint64_t>(json, "task", "data_bytes");
        c.task.data_fnv1a64 = field<std::string>(json, "task", "data_fnv1a64");
        // As train writes it: "" (a bundled task) or 16 lowercase hex digits.
        const std::string& sum = c.task.data_fnv1a64;
        AG_CHECK(sum.empty() ||
                     (sum.size() == 16 &&
                      std::all_of(sum.begin(), sum.end(),
                                  [](char h) { return (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f'); })),
                 ValueError, "config.json: task.data_fnv1a64 must be \"\" or 16 hex digits, got '{}'",
                 data::escape_control(excerpt(sum, 40)));
    }
    c.model.kind = field<std::string>(json, "model", "kind");
    c.model.embed_dim = field<std::int64_t>(json, "model", "embed_dim");
    c.model.heads = field<std::int64_t>(json, "model", "heads");
    c.model.layers = field<std::int64_t>(json, "model", "layers");
    c.model.decoder_layers = field<std::int64_t>(json, "model", "decoder_layers");
    c.model.ffn_dim = field<std::int64_t>(json, "model", "ffn_dim");
    c.model.next_token = field<bool>(json, "model", "next_token");
    c.model.score = field<std::string>(json, "model", "score");
    c.model.attention = field<std::string>(json, "model", "attention");
    c.model.estimator = field<std::string>(json, "model", "estimator");
    c.model.window = field<std::int64_t>(json, "model", "window");
    c.model.local = field<std::string>(json, "model", "local");
    c.model.max_source_len = field<std::int64_t>(json, "model", "max_source_len");
    c.model.max_target_len = field<std::int64_t>(json, "model", "max_target_len");
    c.train.optim = field<std::string>(json, "train", "optim");
    c.train.lr = field<double>(json, "train", "lr");
    c.train.momentum = field<double>(json, "train", "momentum");
    c.train.weight_decay = field<double>(json, "train", "weight_decay");
    c.train.clip = field<double>(json, "train", "clip");
    c.train.batch = field<std::int64_t>(json, "train", "batch");
    c.train.steps = field<std::int64_t>(json, "train", "steps");
    c.train.seed = field<std::uint64_t>(json, "train", "seed");
    c.train.warmup = field<std::int64_t>(json, "train", "warmup");
    c.train.schedule = field<std::string>(json, "train", "schedule");
    c.train.eval_every = field<std::int64_t>(json, "train", "eval_every");
    c.train.checkpoint_every = field<std::int64_t>(json, "train", "checkpoint_every");
    c.train.early_stop = field<bool>(json, "train", "early_stop");
    // Runs written before snapshots existed have no snapshot_every: they keep the default.
    if (json["train"].contains("snapshot_every"))
        c.train.snapshot_every = field<std::int64_t>(json, "train", "snapshot_every");
    // Runs written before min_source_len was saved keep the default; load_run takes the task's.
    if (json["model"].contains("min_source_len"))
        c.model.min_source_len = field<std::int64_t>(json, "model", "min_source_len");
    // Runs written before the recurrent model existed have none of its fields: they keep the defaults.
    if (json["model"].contains("cell")) {
        c.model.cell = field<std::string>(json, "model", "cell");
        c.model.decoder = field<std::string>(json, "model", "decoder");
        c.model.bidirectional = field<bool>(json, "model", "bidirectional");
        c.model.rnn_layers = field<std::int64_t>(json, "model", "rnn_layers");
    }
    AG_CHECK(json.contains("vocab"), ValueError, "config.json: missing field 'vocab'");
    c.vocab = vocabulary_from_json(json["vocab"]);
    AG_CHECK(c.model.max_source_len >= 1 && c.model.max_target_len >= 1, ValueError,
             "config.json: model.max_source_len and model.max_target_len must be >= 1");
    return c;
}

}  // namespace attograd::cli
