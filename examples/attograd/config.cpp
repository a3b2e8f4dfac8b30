// A run's configuration: the model, the training, the task and the vocabulary, as saved in
// DIR/config.json, and the checks that refuse options that do not combine.
#include "config.hpp"

#include "core/error.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace attograd::cli {

namespace {

/// `json[section][key]` as T; ValueError naming the field when it is missing or mistyped.
template <class T>
T field(const nlohmann::json& json, const char* section, const char* key) {
    const std::string name = fmt::format("{}.{}", section, key);
    AG_CHECK(json.contains(section) && json[section].is_object() && json[section].contains(key), ValueError,
             "config.json: missing field '{}'", name);
    const auto& value = json[section][key];
    const bool ok = [&] {
        if constexpr (std::is_same_v<T, bool>)
            return value.is_boolean();
        else if constexpr (std::is_same_v<T, std::string>)
            return value.is_string();
        else if constexpr (std::is_integral_v<T>)
            return value.is_number_integer();
        else
            return value.is_number();
    }();
    AG_CHECK(ok, ValueError, "config.json: field '{}' has the wrong type ({})", name, value.type_name());
    return value.get<T>();
}

template <std::size_t N>
void check_choice(const std::string& value, const std::array<const char*, N>& choices, const char* option) {
    const bool ok = std::any_of(choices.begin(), choices.end(), [&](const char* c) { return value == c; });
    std::string list;
    for (const char* c : choices) list += (list.empty() ? "" : ", ") + std::string(c);
    AG_CHECK(ok, ValueError, "{} must be one of {}, got '{}'", option, list, value);
}

/// The vocabulary saved in config.json: a JSON array of its tokens, index = id.
Vocabulary vocabulary_from_json(const nlohmann::json& json) {
    AG_CHECK(json.is_array(), ValueError, "vocabulary: expected a JSON array of tokens");
    std::vector<std::string> tokens;
    for (std::size_t i = 0; i < json.size(); ++i) {
        AG_CHECK(json[i].is_string(), ValueError, "vocabulary: entry {} is not a string", i);
        tokens.push_back(json[i].get<std::string>());
    }
    return Vocabulary::from_tokens(tokens);
}

}  // namespace

RunConfig default_config(const Task& task) {
    const TaskInfo& info = task.info();
    RunConfig config;
    config.task.name = info.name;
    config.model.kind = "seq2seq";  // every task's default (the encoder needs --model encoder)
    config.model.max_source_len = info.max_source_len;
    config.model.max_target_len = info.max_target_len;
    config.vocab = Vocabulary(task.symbols());
    if (info.name == "recall") {
        config.model.next_token = true;
        config.model.decoder_layers = 2;
        // Smaller steps over larger batches: at lr 3e-3, batch 32 most seeds stalled near 40 %
        // before finding the key-matching step.
        config.train.lr = 2e-3;
        config.train.batch = 64;
        config.train.steps = 6000;
    } else if (info.name == "dates") {
        config.model.layers = 2;
        config.model.decoder_layers = 2;
        config.model.heads = 4;
        config.train.steps = 4000;
    } else if (info.name == "sort") {
        config.train.steps = 2000;
    } else if (info.name == "data") {
        config.model.layers = 1;
        config.model.decoder_layers = 1;
        config.train.steps = 2000;
    }
    return config;
}

double target_accuracy(const std::string& name) {
    if (name == "copy" || name == "reverse") return 0.99;
    if (name == "sort" || name == "recall" || name == "dates") return 0.95;
    return 1.0;
}

void validate(const RunConfig& config, const TaskInfo& task) {
    const ModelConfig& m = config.model;
    const TrainConfig& t = config.train;
    check_choice(m.kind, std::array{"seq2seq", "encoder"}, "--model");
    check_choice(m.score, std::array{"additive", "dot", "scaled-dot", "bilinear"}, "--score");
    check_choice(m.attention, std::array{"soft", "hard"}, "--attention");
    check_choice(m.local, std::array{"m", "p"}, "--local");
    check_choice(m.estimator, std::array{"gumbel", "reinforce"}, "--estimator");
    check_choice(t.optim, std::array{"sgd", "adam", "adamw"}, "--optim");
    check_choice(t.schedule, std::array{"cosine", "constant"}, "--schedule");
    // Upper bounds keep a typo from asking for gigabytes: these are toy-task models.
    AG_CHECK(m.embed_dim >= 1 && m.embed_dim <= 4096, ValueError, "--embed-dim must be in [1, 4096], got {}",
             m.embed_dim);
    AG_CHECK(m.heads >= 1, ValueError, "--heads must be >= 1, got {}", m.heads);
    AG_CHECK(m.embed_dim % m.heads == 0, ValueError, "--heads {} does not divide --embed-dim {}", m.heads,
             m.embed_dim);
    AG_CHECK(m.layers >= 0 && m.layers <= 16, ValueError, "--layers must be in [0, 16], got {}", m.layers);
    AG_CHECK(m.decoder_layers >= 1 && m.decoder_layers <= 16, ValueError,
             "--decoder-layers must be in [1, 16], got {}", m.decoder_layers);
    AG_CHECK(m.ffn_dim >= 0 && m.ffn_dim <= 16384, ValueError, "--ffn-dim must be in [0, 16384], got {}",
             m.ffn_dim);
    AG_CHECK(m.max_source_len >= 1 && m.max_source_len <= 4096 && m.max_target_len >= 1 && m.max_target_len <= 4096,
             ValueError, "the longest source and target must be in [1, 4096] tokens, got {} and {}", m.max_source_len,
             m.max_target_len);
    AG_CHECK(m.window >= -1, ValueError, "--window must be >= 0 (or -1: global attention), got {}", m.window);
    AG_CHECK(std::isfinite(t.lr) && t.lr > 0.0, ValueError, "--lr must be finite and > 0, got {}", t.lr);
    AG_CHECK(t.momentum >= 0.0 && t.momentum < 1.0, ValueError, "--momentum must be in [0, 1), got {}",
             t.momentum);
    AG_CHECK(std::isfinite(t.weight_decay) && t.weight_decay >= 0.0, ValueError,
             "--weight-decay must be finite and >= 0, got {}", t.weight_decay);
    AG_CHECK(std::isfinite(t.clip) && t.clip >= 0.0, ValueError, "--clip must be finite and >= 0 (0 = off), got {}",
             t.clip);
    AG_CHECK(t.batch >= 1 && t.batch <= 4096, ValueError, "--batch must be in [1, 4096], got {}", t.batch);
    AG_CHECK(t.steps >= 0, ValueError, "--steps must be >= 0, got {}", t.steps);
    AG_CHECK(t.warmup >= 0, ValueError, "--warmup must be >= 0, got {}", t.warmup);
    AG_CHECK(t.eval_every >= 1, ValueError, "--eval-every must be >= 1, got {}", t.eval_every);
    AG_CHECK(t.snapshot_every >= 0, ValueError, "--snapshot-every must be >= 0 (0 = off), got {}",
             t.snapshot_every);
    AG_CHECK(t.momentum == 0.0 || t.optim == "sgd", ValueError,
             "--momentum applies to --optim sgd only (got --optim {})", t.optim);

    if (m.kind == "encoder") {
        AG_CHECK(m.layers >= 1, ValueError,
                 "--model encoder needs --layers >= 1 (its attention is self-attention layers), got {}", m.layers);
        AG_CHECK(
            task.same_length, ValueError,
            "--model encoder writes one output per input token, but task '{}' has outputs of another length; "
            "use --model seq2seq",
            task.name);
        AG_CHECK(m.attention == "soft", ValueError,
                 "--attention hard applies to the seq2seq decoder's attention; --model encoder is soft");
        AG_CHECK(m.window < 0 || m.local == "m", ValueError,
                 "--local p predicts a centre per decoder query; --model encoder supports --local m only");
    }
    if (m.kind == "seq2seq") {
        AG_CHECK(m.heads == 1 || m.attention == "soft", ValueError,
                 "--attention hard picks one key per query with single-head attention, but this model has {} "
                 "heads: "
                 "add --heads 1 or use --attention soft",
                 m.heads);
    }
}

nlohmann::json to_json(const RunConfig& config) {
    const ModelConfig& m = config.model;
    const TrainConfig& t = config.train;
    return {{"format", "attograd-run"},
            {"format_version", run_format_version},
            {"task", {{"name", config.task.name}, {"data", config.task.data}, {"chars", config.task.chars}}},
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
              {"max_target_len", m.max_target_len}}},
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
              {"snapshot_every", t.snapshot_every},
              {"early_stop", t.early_stop}}},
            {"vocab", config.vocab.tokens()}};
}

RunConfig run_config_from_json(const nlohmann::json& json) {
    AG_CHECK(json.is_object() && json.contains("format") && json["format"].is_string() &&
                 json["format"].get<std::string>() == "attograd-run",
             ValueError,
             "config.json: field 'format' is not \"attograd-run\": not an attograd run configuration");
    AG_CHECK(json.contains("format_version") && json["format_version"].is_number_integer(), ValueError,
             "config.json: field 'format_version' is missing or not an integer");
    const std::int64_t version = json["format_version"].get<std::int64_t>();
    AG_CHECK(version == run_format_version, ValueError,
             "config.json: run format version {} is not supported by this attograd (it reads version {}); "
             "train the run again",
             version, run_format_version);
    RunConfig c;
    c.task.name = field<std::string>(json, "task", "name");
    c.task.data = field<std::string>(json, "task", "data");
    c.task.chars = field<bool>(json, "task", "chars");
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
    c.train.early_stop = field<bool>(json, "train", "early_stop");
    // Runs written before snapshots existed have no snapshot_every: they keep the default.
    if (json["train"].contains("snapshot_every"))
        c.train.snapshot_every = field<std::int64_t>(json, "train", "snapshot_every");
    AG_CHECK(json.contains("vocab"), ValueError, "config.json: missing field 'vocab'");
    c.vocab = vocabulary_from_json(json["vocab"]);
    AG_CHECK(c.model.max_source_len >= 1 && c.model.max_target_len >= 1, ValueError,
             "config.json: model.max_source_len and model.max_target_len must be >= 1");
    return c;
}

}  // namespace attograd::cli
