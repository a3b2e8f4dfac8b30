// Unit tests of the attograd program's own functions whose results nothing the program prints or
// writes shows on its own: its models' logits and dropout, its settings table and task defaults,
// its memory estimate, pieces of its report. They link the program's code (attograd_cli); the
// program's behaviour is tested by running it (tests/test_cli_*.cpp). A task registered in this
// process is seen only by the program running in it (run_in_process).
#include "cli_helpers.hpp"
#include "config.hpp"
#include "evaluation.hpp"
#include "faithfulness_run.hpp"
#include "memory_check.hpp"
#include "models.hpp"
#include "program_in_process.hpp"
#include "quoting.hpp"
#include "report_builder.hpp"
#include "run_dir.hpp"
#include "settings.hpp"
#include "uniform_attention.hpp"

#include "core/autograd.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "data/task.hpp"
#include "inspect/inspect.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

using namespace cli_test;
using namespace attograd;
using namespace attograd::cli;

namespace {

std::string value_of(const std::vector<std::pair<std::string, std::string>>& rows, const std::string& key) {
    for (const auto& [k, v] : rows)
        if (k == key) return v;
    return "(absent)";
}
bool has_key(const std::vector<std::pair<std::string, std::string>>& rows, const std::string& key) {
    return std::any_of(rows.begin(), rows.end(), [&](const auto& row) { return row.first == key; });
}

}  // namespace

// --- the models (models.hpp) ------------------------------------------------------------------

namespace {

/// The copy task's default configuration with `edit` applied.
template <class Edit>
RunConfig copy_config(Edit edit) {
    RunConfig config = attograd::cli::default_config(*attograd::data::make_task("copy"));
    config.model.embed_dim = 16;
    config.model.ffn_dim = 16;
    edit(config.model);
    return config;
}

/// Two sources of the copy task's symbols, and their ids.
std::vector<std::vector<std::int64_t>> sources_of(const RunConfig& config) {
    return {config.vocab.encode({"a", "b", "c", "d"}), config.vocab.encode({"c", "a"})};
}

/// Teacher-forced logits [B, T, V] of `model` on `sources` and `targets`.
std::vector<float> logits(const Model& model, const std::vector<std::vector<std::int64_t>>& sources,
                          const std::vector<std::vector<std::int64_t>>& targets) {
    const Batch batch = model.make_batch(sources, &targets);
    return to_dtype(model.forward(batch).logits, attograd::DType::Float32).to_vector<float>();
}

/// Whether the logits of output position t (of V per position, T positions per row) are equal
/// in `a` and `b` for every row.
bool same_position(const std::vector<float>& a, const std::vector<float>& b, std::int64_t t,
                   std::int64_t rows, std::int64_t width, std::int64_t v) {
    for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t i = 0; i < v; ++i) {
            const auto k = static_cast<std::size_t>((r * width + t) * v + i);
            if (a[k] != b[k]) return false;
        }
    return true;
}

}  // namespace

TEST_CASE("--decoder-self-attention: output t sees the decoder inputs up to t only, and decoding agrees") {
    for (const bool self_attention : {false, true}) {
        INFO("decoder self-attention: ", self_attention);
        const RunConfig config = copy_config([&](auto& m) {
            m.decoder_self_attention = self_attention;
            m.heads = 2;
        });
        Generator generator(7);
        const auto model = attograd::cli::make_model(config.model, config.vocab, generator);
        model->eval();
        const auto sources = sources_of(config);
        const std::vector<std::vector<std::int64_t>> targets = {config.vocab.encode({"a", "b", "c", "d"}),
                                                                config.vocab.encode({"c", "a"})};
        // Change the decoder input at position 2 (y_2 of the first row): outputs 0 and 1 cannot
        // see it; output 2 reads it; outputs 3 and 4 see it only through self-attention.
        auto changed = targets;
        changed[0][1] = config.vocab.id("d");
        const auto a = logits(*model, sources, targets), b = logits(*model, sources, changed);
        const std::int64_t width = config.model.max_target_len + 1, v = config.vocab.size();
        CHECK(same_position(a, b, 0, 2, width, v));
        CHECK(same_position(a, b, 1, 2, width, v));
        CHECK_FALSE(same_position(a, b, 2, 2, width, v));
        CHECK(same_position(a, b, 3, 2, width, v) == !self_attention);
        CHECK(same_position(a, b, 4, 2, width, v) == !self_attention);

        // Greedy decoding runs the decoder on each prefix: its outputs are the argmax of the
        // teacher-forced logits on those outputs.
        const auto predicted = model->predict(sources);
        for (std::size_t r = 0; r < predicted.size(); ++r) {
            std::vector<std::vector<std::int64_t>> row_source{sources[r]}, row_target{predicted[r]};
            const auto l = logits(*model, row_source, row_target);
            for (std::size_t t = 0; t < predicted[r].size(); ++t) {
                const float* row = l.data() + static_cast<std::ptrdiff_t>(t) * v;
                CHECK(std::max_element(row, row + v) - row == predicted[r][t]);
            }
        }
        // The self-attention is listed for inspect, over the outputs, after each layer's start.
        std::vector<std::string> names;
        for (const auto& layer : model->attention_layers())
            if (layer.name.starts_with("decoder."))
                names.push_back(layer.name + (layer.over_outputs ? "*" : ""));
        CHECK(names == (self_attention ? std::vector<std::string>{"decoder.layers.0.self_attn*",
                                                                  "decoder.layers.0.multihead_attn"}
                                       : std::vector<std::string>{"decoder.layers.0.multihead_attn"}));
    }
}

TEST_CASE("--dropout drops in training mode only, in the Transformer and the recurrent models") {
    for (const char* kind : {"seq2seq", "encoder", "rnn"}) {
        INFO(kind);
        const RunConfig config = copy_config([&](auto& m) {
            m.kind = kind;
            m.layers = 1;
            m.rnn_layers = 2;
            m.decoder_self_attention = m.kind == "seq2seq";
            m.score = m.kind == "rnn" ? "additive" : m.score;
            m.dropout = 0.5;
        });
        Generator generator(3);
        const auto model = attograd::cli::make_model(config.model, config.vocab, generator);
        const auto sources = sources_of(config);
        const auto targets = sources;
        model->eval();
        const auto first = logits(*model, sources, targets);
        CHECK(logits(*model, sources, targets) == first);  // eval: nothing drawn, the same logits
        model->train();
        const auto trained = logits(*model, sources, targets);
        CHECK(trained != first);
        CHECK(logits(*model, sources, targets) != trained);  // a new mask per forward
        model->eval();
        CHECK(logits(*model, sources, targets) == first);
    }
}

namespace {

/// log P(y | x) of each output under the model, teacher-forced: the sum over y_1 .. y_m <eos>
/// of log_softmax(logits) at the written token (independent of how the outputs were decoded).
std::vector<double> log_probs(const Model& model, const std::vector<std::vector<std::int64_t>>& sources,
                              const std::vector<std::vector<std::int64_t>>& outputs) {
    NoGradGuard no_grad;
    const Batch batch = model.make_batch(sources, &outputs);
    const Tensor lp = log_softmax(to_dtype(model.forward(batch).logits, DType::Float64), -1);  // [B, T, V]
    const std::int64_t t = lp.size(1), v = lp.size(2);
    const auto values = lp.to_vector<double>();
    const auto target = batch.target.to_vector<std::int64_t>();
    std::vector<double> out;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        double sum = 0.0;
        for (std::size_t j = 0; j <= outputs[i].size(); ++j) {  // the tokens and <eos>
            const auto at = static_cast<std::int64_t>(i) * t + static_cast<std::int64_t>(j);
            sum += values[static_cast<std::size_t>(at * v + target[static_cast<std::size_t>(at)])];
        }
        out.push_back(sum);
    }
    return out;
}

}  // namespace

TEST_CASE("eval --beam 4 writes outputs at least as likely as greedy's, and other ones") {
    TempDir tmp;
    // A sort run trained part of the way: greedy and beam search then disagree on some outputs.
    cli_test::train(tmp / "run", {"--task", "sort", "--steps", "150", "--seed", "3"});
    const LoadedRun loaded = load_run(tmp / "run");
    const Vocabulary& vocab = loaded.config.vocab;
    std::vector<std::vector<std::int64_t>> sources;
    for (const auto& e : loaded.task->held_out()) sources.push_back(vocab.encode(e.source));
    const auto greedy = loaded.model->predict(sources);
    const auto beam = loaded.model->predict(sources, {.beam = 4});
    const auto p_greedy = log_probs(*loaded.model, sources, greedy);
    const auto p_beam = log_probs(*loaded.model, sources, beam);
    std::int64_t differ = 0, beam_better = 0, greedy_better = 0;
    double sum_greedy = 0.0, sum_beam = 0.0;
    for (std::size_t i = 0; i < sources.size(); ++i) {
        differ += beam[i] != greedy[i];
        beam_better += p_beam[i] > p_greedy[i] + 1e-6;
        greedy_better += p_greedy[i] > p_beam[i] + 1e-6;
        sum_greedy += p_greedy[i];
        sum_beam += p_beam[i];
    }
    MESSAGE("held-out ", sources.size(), ": beam differs on ", differ, ", more likely on ", beam_better,
            ", less likely on ", greedy_better, "; mean log P greedy ", sum_greedy / std::ssize(sources),
            " beam ", sum_beam / std::ssize(sources));
    CHECK(differ >= 10);  // the search changed something
    CHECK(sum_beam > sum_greedy);
    // Beam search can lose greedy's path (it is not guaranteed to beat greedy on every output),
    // but on nearly every output where they differ the beam's is the more likely.
    CHECK(greedy_better * 10 <= beam_better);

    // The program prints the same outputs.
    const Outcome o = run({"eval", "--run", tmp / "run", "--json", "--show", "1000", "--beam", "4"});
    require_ok(o);
    const json result = json::parse(o.out);
    REQUIRE(result["examples"].size() == sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i)
        CHECK(result["examples"][i]["prediction"] == loaded.task->detokenize(vocab.decode(beam[i])));
}

namespace {

// A model of the program's interface without attention.
class NoAttention final : public cli::Model {
public:
    std::string type_name() const override { return "NoAttention"; }
    cli::Batch make_batch(const std::vector<std::vector<std::int64_t>>&,
                          const std::vector<std::vector<std::int64_t>>*) const override {
        return {};
    }
    cli::ForwardResult forward(const cli::Batch&, const Tensor&) const override { return {}; }
    std::vector<std::vector<std::int64_t>> predict(const std::vector<std::vector<std::int64_t>>&,
                                                   const cli::DecodeSettings&) const override {
        return {};
    }
    Tensor token_embedding(const cli::Batch&) const override { return {}; }
    std::vector<std::string> model_source(const std::vector<std::string>& s) const override { return s; }
    std::int64_t source_column(std::int64_t i) const override { return i; }
};

}  // namespace

TEST_CASE("with_uniform_attention refuses a model without attention") {
    CHECK_THROWS_WITH_AS(
        cli::with_uniform_attention(std::make_shared<NoAttention>(), 0, "--uniform-attention"),
        doctest::Contains("--uniform-attention 0: the model has no attention layer"), attograd::ValueError);
}

// --- the settings table and task defaults (settings.hpp, config.hpp) --------------------------

namespace {

/// A program's own task: a letter from a-e -> the letter twice.
class TwiceTask : public attograd::data::Task {
public:
    TwiceTask() {
        info_.name = "twice";
        info_.description = "a letter -> the letter twice";
        info_.example = "a -> a a";
        info_.max_source_len = 1;
        info_.max_target_len = 2;
        held_out_ = {{{"a"}, {"a", "a"}}, {{"c"}, {"c", "c"}}};
    }
    std::vector<std::string> symbols() const override { return {"a", "b", "c", "d", "e"}; }
    attograd::data::Example train_example(attograd::Generator& generator) const override {
        const std::string letter(1, static_cast<char>('a' + generator.randint(0, 5)));
        return {{letter}, {letter, letter}};
    }
};

}  // namespace

TEST_CASE("a registered task trains with its entry's defaults and is listed by `tasks`") {
    attograd::data::register_task({.name = "twice",
                                   .make = [] { return std::make_unique<TwiceTask>(); },
                                   .target_accuracy = 0.5,
                                   .defaults = {{"model.heads", 2}, {"train.steps", 3}, {"train.lr", 1e-3}}});
    const auto defaults = attograd::cli::task_defaults("twice");
    CHECK(defaults.model.heads == 2);
    CHECK(defaults.train.steps == 3);
    CHECK(defaults.train.lr == 1e-3);
    CHECK(defaults.train.batch == attograd::cli::TrainConfig{}.batch);  // not in the entry: the program's
    CHECK(attograd::cli::target_accuracy("twice") == 0.5);

    TempDir tmp;
    require_ok(
        run_in_process({"train", "--task", "twice", "--eval-every", "3", "--out", tmp / "run", "--quiet"}));
    const json config = read_config(tmp / "run");
    CHECK(config["model"]["heads"] == 2);
    CHECK(config["train"]["steps"] == 3);
    CHECK(config["train"]["lr"] == 1e-3);
    const Outcome tasks = run_in_process({"tasks"});
    require_ok(tasks);
    CHECK(tasks.out.find("twice\n") != std::string::npos);
    CHECK(tasks.out.find("target:    50% held-out") != std::string::npos);
    const Outcome help = run_in_process({"train", "--help"});
    CHECK(line_with(help.out, "--steps").find("twice: 3") != std::string::npos);
}

TEST_CASE("a task entry's defaults must name settings with values of their type") {
    attograd::cli::RunConfig config;
    CHECK_THROWS_WITH_AS(attograd::cli::apply_task_defaults(config, {{"model.head", 2}}, "mine"),
                         doctest::Contains("task 'mine' defaults: 'model.head' is not a setting"),
                         ValueError);
    CHECK_THROWS_WITH_AS(attograd::cli::apply_task_defaults(config, {{"model.heads", 1.0}}, "mine"),
                         doctest::Contains("task 'mine' defaults: model.heads must be an integer, got 1.0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(attograd::cli::apply_task_defaults(config, {{"train.optim", 3}}, "mine"),
                         doctest::Contains("task 'mine' defaults: train.optim must be a string, got 3"),
                         ValueError);
}

TEST_CASE("every setting of config.json is in the table, once, and reads back what it wrote") {
    const auto& table = attograd::cli::settings();
    std::set<std::string> keys;
    for (const auto& s : table) CHECK_MESSAGE(keys.insert(std::string(s.key)).second, s.key);
    const auto config = attograd::cli::default_config(*attograd::data::make_task("dates"));
    const json written = attograd::cli::to_json(config);
    std::size_t fields = 0;
    for (const char* section : {"model", "train"}) {
        for (const auto& [key, value] : written[section].items()) {
            ++fields;
            CHECK_MESSAGE(keys.count(std::string(section) + "." + key) == 1, key);
        }
    }
    CHECK(fields == table.size());
    CHECK(attograd::cli::to_json(attograd::cli::run_config_from_json(written)) == written);
}

TEST_CASE("the settings table marks the recurrent model's flags and the Transformer models' flags") {
    std::vector<std::string> rnn_only, transformer_only;
    for (const auto& s : settings()) {
        if (s.applies_to == ModelKinds::rnn) rnn_only.emplace_back(s.flag);
        if (s.applies_to == ModelKinds::transformer) transformer_only.emplace_back(s.flag);
    }
    CHECK(rnn_only == std::vector<std::string>{"cell", "decoder", "bidirectional", "rnn-layers"});
    CHECK(transformer_only == std::vector<std::string>{"layers", "decoder-layers", "ffn-dim", "next-token"});
    const auto* window = find_setting("model.window");
    REQUIRE(window != nullptr);
    CHECK(window->off_text == "none (global attention)");
}

// --- the memory estimate (memory_check.hpp) --------------------------------------------------

namespace {

/// The configuration `train --task reverse --embed-dim 4096 --ffn-dim 4096 --layers 16
/// --decoder-layers 16` asks for.
attograd::cli::RunConfig huge_reverse() {
    auto config = attograd::cli::default_config(*attograd::data::make_task("reverse"));
    config.model.embed_dim = 4096;
    config.model.ffn_dim = 4096;
    config.model.layers = 16;
    config.model.decoder_layers = 16;
    return config;
}

}  // namespace

TEST_CASE("check_memory refuses a configuration above the memory available in one line naming the flags") {
    using attograd::cli::training_bytes;
    const auto config = huge_reverse();
    // 4.3e9 parameters x 16 bytes (weight, gradient, Adam's two moments) alone are 64 GiB.
    CHECK(training_bytes(config) > 64ull << 30);
    const std::uint64_t eight_gib = 8ull << 30;
    CHECK_THROWS_WITH_AS(attograd::cli::check_memory(config, attograd::cli::SettingNames::flags(), eight_gib),
                         doctest::Contains("GiB of memory is available"), attograd::cli::UsageError);
    try {
        attograd::cli::check_memory(config, attograd::cli::SettingNames::flags(), eight_gib);
    } catch (const attograd::cli::UsageError& e) {
        const std::string message = e.what();
        for (const char* part : {"--embed-dim 4096", "--ffn-dim 4096", "--layers 16", "--decoder-layers 16",
                                 "--batch 32", "8.0 GiB"})
            CHECK_MESSAGE(message.find(part) != std::string::npos, message, " names ", part);
    }
    CHECK_NOTHROW(attograd::cli::check_memory(config, attograd::cli::SettingNames::flags(), std::nullopt));
}

TEST_CASE("the memory estimate is at least the parameters' real footprint, and every task's defaults pass") {
    using namespace attograd::cli;
    const auto available = available_bytes();
    for (const auto& name : attograd::data::task_names()) {
        INFO(name);
        const auto task = attograd::data::make_task(name);
        const RunConfig config = default_config(*task);
        attograd::Generator generator(0);
        const auto model = make_model(config.model, config.vocab, generator);
        std::int64_t parameters = 0;
        for (const auto& p : model->parameters()) parameters += p.numel();
        // Adam: float32 weight, gradient and two moments per parameter, activations on top.
        CHECK(training_bytes(config) >= static_cast<std::uint64_t>(parameters) * 16);
        CHECK(training_bytes(config) < (1ull << 30));  // toy tasks: well under 1 GiB
        CHECK_NOTHROW(check_memory(config, SettingNames::flags(), available));
    }
}

// --- quoting (quoting.hpp) --------------------------------------------------------------------

TEST_CASE("shell_quote writes an empty word as ''") { CHECK(attograd::cli::shell_quote("") == "''"); }

// --- the report and inspect (report_builder.hpp, evaluation.hpp, faithfulness_run.hpp) --------

TEST_CASE("config rows: only the fields that apply to the run") {
    RunConfig config;
    config.task.name = "reverse";
    config.model.attention = "soft";
    config.model.window = -1;
    config.train.optim = "adam";
    auto rows = config_rows(config, nlohmann::json{{"steps_done", 100}});
    CHECK_FALSE(has_key(rows, "model.estimator"));  // soft attention has no estimator
    CHECK_FALSE(has_key(rows, "model.local"));      // global attention has no local mode
    CHECK_FALSE(has_key(rows, "model.window"));
    CHECK_FALSE(has_key(rows, "train.momentum"));  // Adam has no momentum
    CHECK_FALSE(has_key(rows, "task.data"));
    CHECK(has_key(rows, "model.score"));
    CHECK(has_key(rows, "progress.steps_done"));
    CHECK(value_of(rows, "model.attention_span") == "global");
    config.model.attention = "hard";
    config.model.window = 3;
    config.model.local = std::string(1, 'p');  // not = "p": GCC 12 -Wrestrict false positive (PR 105329)
    config.train.optim = "sgd";
    rows = config_rows(config, nlohmann::json::object());
    CHECK(has_key(rows, "model.estimator"));
    CHECK(has_key(rows, "model.local"));
    CHECK(has_key(rows, "train.momentum"));
    CHECK(value_of(rows, "model.attention_span") == "local-p (window D = 3)");
}

TEST_CASE("training charts: loss, and every accuracy on one shared [0, 1] axis, evaluated steps only") {
    const auto charts = training_charts(
        "step,loss,train_token_accuracy,heldout_token_accuracy,heldout_sequence_accuracy\n"
        "10,2.5,0.1,,\n100,0.5,0.9,0.95,0.7\n");
    REQUIRE(charts.size() == 2);
    CHECK(charts[0].series[0].y == std::vector<double>{2.5, 0.5});
    const auto& accuracy = charts[1];
    CHECK(accuracy.y_min == 0.0);
    CHECK(accuracy.y_max == 1.0);
    REQUIRE(accuracy.series.size() == 3);
    CHECK(accuracy.series[1].x == std::vector<double>{100});  // held-out: evaluated at step 100 only
    CHECK(accuracy.series[2].y == std::vector<double>{0.7});
}

TEST_CASE("training charts: a corrupt metrics.csv is an IoError naming the line and field") {
    CHECK_THROWS_WITH_AS(training_charts(""), doctest::Contains("metrics.csv is empty"), IoError);
    CHECK_THROWS_WITH_AS(training_charts("step,loss\n1,2\n2,nan\n"),
                         doctest::Contains("line 3: field 'loss' is not a finite number: 'nan'"), IoError);
    CHECK_THROWS_WITH_AS(training_charts("step,loss\n1,2,3\n"),
                         doctest::Contains("line 2: 3 fields, the header has 2"), IoError);
    CHECK_THROWS_WITH_AS(training_charts("loss\n1\n"), doctest::Contains("no 'step' column"), IoError);
    CHECK_THROWS_WITH_AS(training_charts("step,loss\n"), doctest::Contains("no rows"), IoError);
}

TEST_CASE("the report opens on the last cross-attention layer, else on the last layer") {
    CHECK(answer_layer({}).empty());
    CHECK(answer_layer({{"encoder.layers.0.self_attn", 2, false},
                        {"encoder.layers.1.self_attn", 2, false}}) == "encoder.layers.1.self_attn");
    CHECK(answer_layer({{"encoder.layers.0.self_attn", 2, false},
                        {"decoder.layers.0.multihead_attn", 2, true},
                        {"decoder.layers.1.multihead_attn", 2, true},
                        {"decoder.layers.1.self_attn", 2, false}}) == "decoder.layers.1.multihead_attn");
}

TEST_CASE(
    "inspect of an under-trained run: outlines only the prediction's tokens, and each share is eval's over "
    "the target's tokens") {
    TempDir tmp;
    const std::string dir = tmp / "run";
    cli_test::train(dir, {"--task", "reverse", "--steps", "45", "--layers", "1", "--heads", "2"});
    const LoadedRun run = load_run(dir);
    const Task& task = *run.task;
    std::size_t shorter = 0;
    for (std::size_t i = 0; i < 12; ++i) {
        const Example& example = task.held_out()[i];
        const auto inspected = inspect_example(*run.model, run.config.model, task, vocabularies(run.config),
                                               example.source, example.target, {});
        const auto eval = alignment_by_head(*run.model, run.config.model, task, vocabularies(run.config),
                                            {example}, {inspected.prediction});
        const auto pred = std::ssize(inspected.prediction), target = std::ssize(example.target);
        shorter += pred < target;
        const auto right = *task.alignment(example);
        std::size_t checked = 0;
        for (const auto& map : inspected.maps) {
            if (!map.alignment_share) continue;
            INFO("example ", i, " map ", map.title(), " prediction ", pred, " target ", target);
            // Rows: the prediction's tokens and <eos>; outlined: the rows with a target token.
            REQUIRE(map.rows() == pred + 1);
            CHECK(std::ssize(map.right) == std::min(pred, target));
            double outlined = 0.0;
            for (std::int64_t t = 0; t < std::ssize(map.right); ++t) {
                CHECK(map.right[static_cast<std::size_t>(t)] ==
                      run.model->source_column(right[static_cast<std::size_t>(t)]));
                outlined += map.at(t, map.right[static_cast<std::size_t>(t)]);
            }
            CHECK(*map.alignment_share ==
                  doctest::Approx(outlined / static_cast<double>(target)).epsilon(1e-12));
            const auto same = std::find_if(eval.begin(), eval.end(), [&](const HeadAlignment& h) {
                return h.name == map.module && h.head == map.head;
            });
            REQUIRE(same != eval.end());
            CHECK(same->share == doctest::Approx(*map.alignment_share).epsilon(1e-6));
            ++checked;
        }
        CHECK(checked == 2);  // the cross-attention's two heads
        // Without a target, the prediction's own tokens are all there is: the mean over the outlines.
        const auto untargeted = inspect_example(*run.model, run.config.model, task, vocabularies(run.config),
                                                example.source, {}, {});
        for (const auto& map : untargeted.maps) {
            if (!map.alignment_share) continue;
            CHECK(std::ssize(map.right) ==
                  std::min(pred, std::ssize(example.source)));  // reverse: n positions
            CHECK(*map.alignment_share ==
                  doctest::Approx(*inspect::alignment_share(map, map.right)).epsilon(1e-12));
        }
    }
    CHECK(shorter > 0);  // under-trained: some prediction stops before its target's end
}

TEST_CASE("a verdict of no explanation says so when knocking the head out costs accuracy") {
    attograd::inspect::HeadFaithfulness head;
    head.verdict = "not an explanation: permuted weights change the output by TVD 0.002";
    head.accuracy = 0.9;
    head.knockout_accuracy = 0.5;
    CHECK(attograd::cli::reach_caveat(head) ==
          "; but knocking it out costs 40 points: it acts through rows other than the one perturbed");
    head.knockout_accuracy = 0.88;  // 2 points: below the threshold of 5
    CHECK(attograd::cli::reach_caveat(head).empty());
    head.knockout_accuracy = 0.5;
    head.verdict = "partial: knockout costs 40 points, tau with leave-one-out 0.10, permuted TVD 0.020";
    CHECK(attograd::cli::reach_caveat(head).empty());
    head.verdict = "not an explanation: permuted weights change the output by TVD 0.002";
    head.accuracy.reset();  // no labels: no knockout cost to speak of
    CHECK(attograd::cli::reach_caveat(head).empty());
}
