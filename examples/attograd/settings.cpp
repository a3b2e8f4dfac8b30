// The table of `attograd train`'s settings (settings.hpp).
#include "settings.hpp"

#include "core/detail/json_integer.hpp"
#include "core/error.hpp"
#include "nn/attention_scores.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

namespace attograd::cli {

namespace {

/// `value` as T; ValueError "WHERE: KEY must be ..., got VALUE" when it has another type.
template <class T>
T read_value(const nlohmann::json& value, std::string_view where, std::string_view key) {
    if constexpr (std::is_same_v<T, bool>) {
        AG_CHECK(value.is_boolean(), ValueError, "{}: {} must be true or false, got {}", where, key,
                 value.dump());
        return value.get<bool>();
    } else if constexpr (std::is_integral_v<T>) {
        // A JSON integer outside T's range would wrap (2^64 - 1 read as int64 is -1).
        AG_CHECK(value.is_number_integer(), ValueError, "{}: {} must be an integer, got {}", where, key,
                 value.dump());
        const std::optional<T> integer = detail::json_integer<T>(value);
        AG_CHECK(integer, ValueError, "{}: {} must be an integer in {}, got {}", where, key,
                 detail::json_integer_range<T>(), value.dump());
        return *integer;
    } else if constexpr (std::is_same_v<T, std::string>) {
        AG_CHECK(value.is_string(), ValueError, "{}: {} must be a string, got {}", where, key, value.dump());
        return value.get<std::string>();
    } else {
        AG_CHECK(value.is_number(), ValueError, "{}: {} must be a number, got {}", where, key, value.dump());
        return value.get<T>();
    }
}

/// The field `Member` of section `Section` (&RunConfig::model, &ModelConfig::heads).
template <auto Section, auto Member>
std::function<SettingField(RunConfig&)> field() {
    return [](RunConfig& c) { return SettingField(&(c.*Section.*Member)); };
}

template <auto Member>
auto model() {
    return field<&RunConfig::model, Member>();
}

template <auto Member>
auto train() {
    return field<&RunConfig::train, Member>();
}

/// The value of integer setting `Member` of section `Section`.
template <auto Section, auto Member>
std::int64_t integer(const RunConfig& c) {
    return static_cast<std::int64_t>(c.*Section.*Member);
}

/// A check of an integer field: "PHRASE, got V" unless lo <= V <= hi.
template <auto Section, auto Member>
std::function<std::string(const RunConfig&)> int_check(std::int64_t lo, std::int64_t hi, std::string phrase) {
    return [lo, hi, phrase](const RunConfig& c) {
        const std::int64_t v = integer<Section, Member>(c);
        return v >= lo && v <= hi ? std::string() : fmt::format("{}, got {}", phrase, v);
    };
}

constexpr std::int64_t kNoLimit = std::numeric_limits<std::int64_t>::max();

/// "must be in [lo, hi], got V" for a model field.
template <auto Member>
auto model_in(std::int64_t lo, std::int64_t hi) {
    return int_check<&RunConfig::model, Member>(lo, hi, fmt::format("must be in [{}, {}]", lo, hi));
}

/// "must be in [lo, hi], got V" for a training field.
template <auto Member>
auto train_in(std::int64_t lo, std::int64_t hi) {
    return int_check<&RunConfig::train, Member>(lo, hi, fmt::format("must be in [{}, {}]", lo, hi));
}

/// "must be >= lo NOTE, got V" for a training field.
template <auto Member>
auto train_at_least(std::int64_t lo, std::string_view note = "") {
    return int_check<&RunConfig::train, Member>(lo, kNoLimit, fmt::format("must be >= {}{}", lo, note));
}

/// "representable in float32 (0 or a magnitude in [1.2e-38, 3.4e+38]), got V": the settings
/// computed in float32 keep their value there (1e-50 would be 0, 1e39 inf).
std::string float32_text(double v) {
    return fmt::format("representable in float32 (0 or a magnitude in {}), got {:g}", float32_range_text(),
                       v);
}

/// A check of a float32 training setting that must be finite and >= 0: "must be finite, >= 0
/// NOTE and representable in float32 ..., got V".
template <auto Member>
std::function<std::string(const RunConfig&)> float32_at_least_zero(std::string_view note = "") {
    return [note](const RunConfig& c) {
        const double v = c.train.*Member;
        return std::isfinite(v) && v >= 0.0 && is_float32_magnitude(v)
                   ? std::string()
                   : fmt::format("must be finite, >= 0{} and {}", note, float32_text(v));
    };
}

std::string check_lr(const RunConfig& c) {
    // 0 trains nothing: lr needs a positive float32 magnitude.
    const double v = c.train.lr;
    return std::isfinite(v) && v > 0.0 && is_float32_magnitude(v)
               ? std::string()
               : fmt::format("must be a positive number representable in float32 (in {}), got {:g}",
                             float32_range_text(), v);
}

std::string check_momentum(const RunConfig& c) {
    const double v = c.train.momentum;
    if (!(v >= 0.0 && v < 1.0)) return fmt::format("must be in [0, 1), got {}", v);
    return is_float32_magnitude(v) ? std::string() : "must be " + float32_text(v);
}

std::string check_dropout(const RunConfig& c) {
    const double v = c.model.dropout;
    if (!(v >= 0.0 && v < 1.0)) return fmt::format("must be in [0, 1), got {:g}", v);
    return is_float32_magnitude(v) ? std::string() : "must be " + float32_text(v);
}

}  // namespace

nlohmann::json Setting::get(const RunConfig& config) const {
    // The field is only read: the pointer to a const config's field is not written through.
    return std::visit([](auto* value) { return nlohmann::json(*value); },
                      field(const_cast<RunConfig&>(config)));
}

std::string Setting::integer_range(const RunConfig& config) const {
    return std::visit(
        [&](auto* target) -> std::string {
            using T = std::remove_pointer_t<decltype(target)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                // The setting's own check at the bounds of T says what it allows: "must be >= 0".
                const auto phrase_at = [&](T bound) {
                    if (!check) return std::string();
                    RunConfig probe = config;
                    *std::get<T*>(field(probe)) = bound;
                    std::string phrase = check(probe);
                    return phrase.substr(0, phrase.rfind(", got "));
                };
                const std::string low = phrase_at(std::numeric_limits<T>::min());
                const std::string high = phrase_at(std::numeric_limits<T>::max());
                if (!high.empty()) return high;
                if (!low.empty()) return fmt::format("{} and at most {}", low, std::numeric_limits<T>::max());
                return "must be an integer in " + detail::json_integer_range<T>();
            } else {
                return "";
            }
        },
        field(const_cast<RunConfig&>(config)));
}

void Setting::set(RunConfig& config, const nlohmann::json& value, std::string_view where) const {
    std::visit(
        [&](auto* target) {
            using T = std::remove_pointer_t<decltype(target)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                // An integer beyond T is out of the setting's range, not of the wrong type (the
                // parser holds one beyond 64 bits, 2^64, as a float).
                const bool huge = value.is_number_float() && std::isfinite(value.get<double>()) &&
                                  value.get<double>() == std::floor(value.get<double>()) &&
                                  std::fabs(value.get<double>()) >= 0x1p63;
                // Digits up to 2^64 and a little past (an unsigned overflow shows as the integer
                // typed), an exponent past them.
                std::string shown = value.dump();
                if (huge && std::fabs(value.get<double>()) < 1e20)
                    shown = fmt::format("{:.0f}", value.get<double>());
                if (huge && std::fabs(value.get<double>()) >= 1e20)
                    shown = fmt::format("{:g}", value.get<double>());
                AG_CHECK(!huge && (!value.is_number_integer() || detail::json_integer<T>(value)), ValueError,
                         "{}: {} {}, got {}", where, key, integer_range(config), shown);
            }
            *target = read_value<T>(value, where, key);
        },
        field(config));
}

void Setting::copy(const RunConfig& from, RunConfig& to) const {
    std::visit(
        [&](auto* target) { *target = *std::get<decltype(target)>(field(const_cast<RunConfig&>(from))); },
        field(to));
}

const std::vector<Setting>& settings() {
    using M = ModelConfig;
    using T = TrainConfig;
    static const std::vector<Setting> table = {
        {.key = "model.kind",
         .flag = "model",
         .help = "seq2seq (encoder + attending decoder), encoder (self-attention, one output per input), rnn "
                 "(recurrent encoder + Bahdanau or Luong decoder) or lm (decoder-only causal Transformer: "
                 "output t "
                 "is predicted from input tokens 0..t; next-token prediction on induction and charlm, whose "
                 "accuracy is next-token accuracy)",
         .choices = {"seq2seq", "encoder", "rnn", "lm"},
         .field = model<&M::kind>()},
        {.key = "model.cell",
         .flag = "cell",
         .help = "rnn: recurrent unit of the encoder and the decoder, gru or lstm (luong only)",
         .choices = {"gru", "lstm"},
         .field = model<&M::cell>(),
         .applies_to = ModelKinds::rnn},
        {.key = "model.decoder",
         .flag = "decoder",
         .help =
             "rnn: bahdanau (GRU, additive score) or luong (stacked cells, any score, local windows, input "
             "feeding)",
         .choices = {"bahdanau", "luong"},
         .field = model<&M::decoder>(),
         .applies_to = ModelKinds::rnn},
        {.key = "model.bidirectional",
         .flag = "bidirectional",
         .help = "rnn: the encoder reads the source both ways (E / 2 per direction)",
         .field = model<&M::bidirectional>(),
         .applies_to = ModelKinds::rnn},
        {.key = "model.rnn_layers",
         .flag = "rnn-layers",
         .help = "rnn: stacked layers of the encoder (and of the luong decoder)",
         .field = model<&M::rnn_layers>(),
         .check = model_in<&M::rnn_layers>(1, 8),
         .applies_to = ModelKinds::rnn},
        {.key = "model.score",
         .flag = "score",
         .help = "attention score: additive, dot, scaled-dot, bilinear (--model rnn: additive with bahdanau, "
                 "bilinear with luong)",
         .choices = nn::score_names(),
         .field = model<&M::score>(),
         .not_lm = true},
        {.key = "model.attention",
         .flag = "attention",
         .help = "decoder attention: soft or hard",
         .choices = {"soft", "hard"},
         .field = model<&M::attention>(),
         .not_lm = true},
        {.key = "model.estimator",
         .flag = "estimator",
         .help = "hard attention's training: gumbel (straight-through) or reinforce",
         .choices = {"gumbel", "reinforce"},
         .field = model<&M::estimator>(),
         .not_lm = true},
        {.key = "model.window",
         .flag = "window",
         .help = "local attention: window half-width D (2D + 1 keys)",
         .field = model<&M::window>(),
         .check =
             int_check<&RunConfig::model, &M::window>(-1, kNoLimit, "must be >= 0 (or -1: global attention)"),
         .not_lm = true,
         .off_text = "none (global attention)"},
        {.key = "model.local",
         .flag = "local",
         .help = "local attention centre: m (monotonic) or p (predictive); needs --window",
         .choices = {"m", "p"},
         .field = model<&M::local>(),
         .not_lm = true},
        {.key = "model.heads",
         .flag = "heads",
         .help = "attention heads per layer",
         .field = model<&M::heads>(),
         .check = int_check<&RunConfig::model, &M::heads>(1, kNoLimit, "must be >= 1")},
        // Upper bounds keep a typo from asking for gigabytes: these are toy-task models.
        {.key = "model.layers",
         .flag = "layers",
         .help = "self-attention layers (seq2seq: in the encoder; encoder and lm: at least 1)",
         .field = model<&M::layers>(),
         .check = model_in<&M::layers>(0, 16),
         .applies_to = ModelKinds::transformer},
        {.key = "model.decoder_layers",
         .flag = "decoder-layers",
         .help = "seq2seq: attention layers of the decoder",
         .field = model<&M::decoder_layers>(),
         .check = model_in<&M::decoder_layers>(1, 16),
         .applies_to = ModelKinds::seq2seq},
        {.key = "model.embed_dim",
         .flag = "embed-dim",
         .help = "model width E",
         .field = model<&M::embed_dim>(),
         .check = model_in<&M::embed_dim>(1, 4096)},
        {.key = "model.ffn_dim",
         .flag = "ffn-dim",
         .help = "feed-forward width of each layer (0 = none)",
         .field = model<&M::ffn_dim>(),
         .check = model_in<&M::ffn_dim>(0, 16384),
         .applies_to = ModelKinds::transformer},
        {.key = "model.decoder_self_attention",
         .flag = "decoder-self-attention",
         .help = "seq2seq: each decoder layer also attends causally over the earlier outputs (a Transformer "
                 "decoder; off: the cross-attention alone is the alignment)",
         .field = model<&M::decoder_self_attention>(),
         .applies_to = ModelKinds::seq2seq,
         .default_when_absent = true},
        {.key = "model.dropout",
         .flag = "dropout",
         .help =
             "dropout probability while training, in [0, 1): the Transformer layers' (as PyTorch's); rnn: "
             "on the source embeddings and between encoder layers",
         .field = model<&M::dropout>(),
         .check = check_dropout,
         .default_when_absent = true},
        {.key = "model.next_token",
         .flag = "next-token",
         .help = "encoder adds an embedding of each position's next token (--next-token=false: off)",
         .field = model<&M::next_token>(),
         .applies_to = ModelKinds::transformer,
         .not_lm = true},
        {.key = "model.uniform_attention",
         .flag = "uniform-attention",
         .help =
             "hold the weights of attention layer N (numbered as inspect lists the layers) uniform over the "
             "allowed keys, in training and evaluation: Wiegreffe & Pinter's uniform baseline",
         .field = model<&M::uniform_attention>(),
         .check = int_check<&RunConfig::model, &M::uniform_attention>(
             -1, kNoLimit, "must be an attention layer's number >= 0 (or -1: none)"),
         .default_when_absent = true,
         .off_text = "none"},
        // The lengths come from the task or the TSV file, never from a flag; validate() checks them.
        {.key = "model.max_source_len", .field = model<&M::max_source_len>()},
        {.key = "model.max_target_len", .field = model<&M::max_target_len>()},
        {.key = "model.min_source_len", .field = model<&M::min_source_len>()},
        {.key = "train.optim",
         .flag = "optim",
         .help = "optimizer: sgd, adam, adamw",
         .choices = {"sgd", "adam", "adamw"},
         .field = train<&T::optim>()},
        {.key = "train.lr",
         .flag = "lr",
         .help = "peak learning rate",
         .field = train<&T::lr>(),
         .check = check_lr},
        {.key = "train.momentum",
         .flag = "momentum",
         .help = "SGD momentum",
         .field = train<&T::momentum>(),
         .check = check_momentum},
        {.key = "train.weight_decay",
         .flag = "weight-decay",
         .help = "weight decay (L2 for sgd/adam, decoupled for adamw)",
         .field = train<&T::weight_decay>(),
         .check = float32_at_least_zero<&T::weight_decay>()},
        {.key = "train.clip",
         .flag = "clip",
         .help = "clip the global gradient norm to this (0 = off)",
         .field = train<&T::clip>(),
         .check = float32_at_least_zero<&T::clip>(" (0 = off)")},
        {.key = "train.batch",
         .flag = "batch",
         .help = "examples per step",
         .field = train<&T::batch>(),
         .check = train_in<&T::batch>(1, 4096)},
        {.key = "train.steps",
         .flag = "steps",
         .help = "training steps at most (with --resume: the new total)",
         .field = train<&T::steps>(),
         .check = train_at_least<&T::steps>(0),
         .resumable = true},
        {.key = "train.seed",
         .flag = "seed",
         .help = "random seed (the same seed gives the same run, bit for bit, on any number of threads)",
         .field = train<&T::seed>()},
        // The default warm-up is cut to a shorter run without a warning: nobody asked for its
        // length, and a short run is mostly a try-out (--steps 5), which a warning about a setting
        // it never chose would accompany every time. A --warmup given is a request that is not
        // met: it warns.
        {.key = "train.warmup",
         .flag = "warmup",
         .help =
             "linear learning-rate warm-up steps (cut to --steps - 1 when longer: a given --warmup with a "
             "warning, the default silently)",
         .field = train<&T::warmup>(),
         .check = train_at_least<&T::warmup>(0)},
        {.key = "train.schedule",
         .flag = "schedule",
         .help = "after the warm-up: cosine or constant",
         .choices = {"cosine", "constant"},
         .field = train<&T::schedule>()},
        {.key = "train.eval_every",
         .flag = "eval-every",
         .help = "held-out evaluation every N steps",
         .field = train<&T::eval_every>(),
         .check = train_at_least<&T::eval_every>(1),
         .resumable = true},
        {.key = "train.checkpoint_every",
         .flag = "checkpoint-every",
         .help =
             "also save the run every N steps (it is saved at every evaluation too; 0 = at evaluations only)",
         .field = train<&T::checkpoint_every>(),
         .check = train_at_least<&T::checkpoint_every>(0, " (0 = at evaluations only)"),
         .resumable = true},
        {.key = "train.snapshot_every",
         .flag = "snapshot-every",
         .help = "record the attention of the first held-out examples every N steps (0 = off)",
         .field = train<&T::snapshot_every>(),
         .check = train_at_least<&T::snapshot_every>(0, " (0 = off)"),
         .resumable = true},
        {.key = "train.early_stop",
         .flag = "no-early-stop",
         .help = "train all --steps even after reaching the target",
         .field = train<&T::early_stop>(),
         .negated_flag = true,
         .resumable = true},
    };
    return table;
}

const Setting* find_setting(std::string_view key) {
    const auto& table = settings();
    const auto it = std::find_if(table.begin(), table.end(), [&](const Setting& s) { return s.key == key; });
    return it == table.end() ? nullptr : &*it;
}

const Setting* find_setting_by_flag(std::string_view flag) {
    const auto& table = settings();
    const auto it = std::find_if(table.begin(), table.end(),
                                 [&](const Setting& s) { return !flag.empty() && s.flag == flag; });
    return it == table.end() ? nullptr : &*it;
}

void apply_task_defaults(RunConfig& config, const nlohmann::json& defaults, std::string_view task) {
    const std::string where = fmt::format("task '{}' defaults", task);
    for (const auto& [key, value] : defaults.items()) {
        const Setting* s = find_setting(key);
        AG_CHECK(s != nullptr, ValueError, "{}: '{}' is not a setting of attograd train", where, key);
        s->set(config, value, where);
    }
}

}  // namespace attograd::cli
