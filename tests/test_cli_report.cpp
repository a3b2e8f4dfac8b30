// The attograd program's report pieces (configuration rows that apply, training charts from
// metrics.csv, the layer it opens on), its file helpers, and the report of a trained run: what
// it outlines and the shares, the decoding it names, its labels.
#include "cli_helpers.hpp"
#include "evaluation.hpp"
#include "report_builder.hpp"
#include "snapshot_probes.hpp"
#include "train/file_io.hpp"

#include "core/error.hpp"
#include "inspect/inspect.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

using namespace attograd;
using namespace attograd::cli;

namespace {

std::string value_of(const std::vector<std::pair<std::string, std::string>>& rows, const std::string& key) {
    for (const auto& [k, v] : rows)
        if (k == key) return v;
    return "(absent)";
}

// The page's data: the JSON in the script element with id report-data.
nlohmann::json report_data(const std::string& html) {
    const std::string open = "<script type=\"application/json\" id=\"report-data\">";
    const auto begin = html.find(open);
    REQUIRE(begin != std::string::npos);
    return nlohmann::json::parse(
        html.substr(begin + open.size(), html.find("</script>", begin) - begin - open.size()));
}

// A reverse run of one layer and two heads trained `steps` steps in `tmp`: its directory.
std::string reverse_run(const cli_test::TempDir& tmp, const std::string& steps) {
    const std::string dir = tmp / "run";
    cli_test::train(dir, {"--task", "reverse", "--steps", steps, "--layers", "1", "--heads", "2"});
    return dir;
}

bool has_key(const std::vector<std::pair<std::string, std::string>>& rows, const std::string& key) {
    return std::any_of(rows.begin(), rows.end(), [&](const auto& row) { return row.first == key; });
}

}  // namespace

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

TEST_CASE("atomic writes replace the file whole and leave no temporary behind, failures throw IoError") {
    const auto dir = std::filesystem::temp_directory_path() / "attograd_test_atomic";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write_file_atomic(dir / "a.txt", "first");
    write_file_atomic(dir / "a.txt", "second");
    CHECK(train::read_file(dir / "a.txt") == "second");
    int files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
    CHECK(files == 1);
    CHECK_THROWS_WITH_AS(write_file_atomic(dir / "missing" / "b.txt", "x"), doctest::Contains("missing"),
                         IoError);
    CHECK_THROWS_WITH_AS(train::read_file(dir / "nope.txt"), doctest::Contains("nope.txt: cannot open"),
                         IoError);
    std::filesystem::remove_all(dir);
}

TEST_CASE("atomic writes refuse to replace what is not a regular file (a FIFO standing in for /dev/null)") {
    const auto dir = std::filesystem::temp_directory_path() / "attograd_test_atomic_fifo";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto fifo = dir / "device";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(attograd::train::write_file_atomic(fifo, "x"),
                         doctest::Contains("not a regular file"), attograd::IoError);
    CHECK(std::filesystem::is_fifo(fifo));
    std::filesystem::remove_all(dir);
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
    "inspect --format html: every probe step shows that step's prediction and shares, opening on "
    "the cross-attention") {
    cli_test::TempDir tmp;
    const std::string dir = reverse_run(tmp, "60");
    const std::string page = tmp / "report.html";
    cli_test::require_ok(
        cli_test::run({"inspect", "--run", dir, "--samples", "2", "--format", "html", "--to", page}));
    const auto data = report_data(train::read_file(page));
    CHECK(data["open"] == "decoder.layers.0.multihead_attn");

    const auto snapshots = inspect::load_snapshots(std::filesystem::path(dir) / snapshot_file);
    REQUIRE(snapshots.size() >= 2);
    const auto shown = [](const std::vector<std::string>& tokens) {
        nlohmann::json out = nlohmann::json::array();
        for (const auto& t : tokens) out.push_back(inspect::display_label(t));
        return out;
    };
    std::size_t changed = 0;
    for (const auto& source : data["sources"]) {
        if (source["kind"] != "probe") continue;
        const auto p = source["probe"].get<std::size_t>();
        const auto& frames = source["frames"];
        REQUIRE(frames.size() == snapshots.size());
        for (std::size_t k = 0; k < frames.size(); ++k) {
            const inspect::InspectedExample& probe = snapshots[k].probes[p];
            INFO("probe ", p, " step ", snapshots[k].step);
            CHECK(frames[k]["step"] == snapshots[k].step);
            CHECK(frames[k]["prediction"] == shown(probe.prediction));
            for (const auto& map : frames[k]["maps"]) {
                if (map["kind"] != "head" || !map.contains("alignment_share")) continue;
                const auto it =
                    std::find_if(probe.maps.begin(), probe.maps.end(),
                                 [&](const inspect::AttentionMap& m) { return m.title() == map["title"]; });
                REQUIRE(it != probe.maps.end());
                CHECK(map["alignment_share"].get<double>() == *it->alignment_share);
            }
        }
        changed += frames.front()["prediction"] != frames.back()["prediction"];
    }
    CHECK(changed > 0);  // the model learned: some probe's prediction at the last step is not its first
}

TEST_CASE(
    "inspect of an under-trained run: outlines only the prediction's tokens, and each share is eval's over "
    "the target's tokens") {
    cli_test::TempDir tmp;
    const std::string dir = reverse_run(tmp, "45");
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

TEST_CASE("inspect --format html names the decoding and marks each example's prediction right or wrong") {
    cli_test::TempDir tmp;
    const std::string dir = reverse_run(tmp, "45");
    const LoadedRun run = load_run(dir);
    for (const std::string beam : {"1", "4"}) {
        const std::string page = tmp / ("report" + beam + ".html");
        cli_test::require_ok(cli_test::run(
            {"inspect", "--run", dir, "--samples", "3", "--beam", beam, "--format", "html", "--to", page}));
        const auto data = report_data(train::read_file(page));
        const std::string decoding = beam == "1" ? "greedy decoding" : "beam search (beam 4)";
        CHECK(data["decoding"] == decoding);
        CHECK(data["example_maps"] == "the model fed its own prediction (free-running, as it wrote it)");
        std::size_t examples = 0;
        for (const auto& source : data["sources"]) {
            if (source["kind"] != "example") continue;
            const auto& frame = source["frames"][0];
            const auto joined = [](const nlohmann::json& tokens) {
                std::string out;
                for (const auto& t : tokens) {
                    if (!out.empty()) out += ' ';
                    out += t.get<std::string>();
                }
                return out;
            };
            std::string want = fmt::format("example {}: {} \u2192 {}: {}", ++examples,
                                           joined(frame["source"]), decoding, joined(frame["prediction"]));
            want += frame["prediction"] == frame["target"]
                        ? std::string(" \u2713")
                        : fmt::format(" \u2717 (expected {})", joined(frame["target"]));
            CHECK(source["label"] == want);
        }
        CHECK(examples == 3);
    }
}

TEST_CASE("inspect --format html of a --data run: no share chart, one line saying no alignment is known") {
    cli_test::TempDir tmp;
    std::string pairs;
    for (int i = 0; i < 40; ++i)
        pairs += fmt::format("t{} t{} t{}\tt{} t{}\n", i % 5, i / 5 % 5, i % 3, i % 5, i / 5 % 5);
    cli_test::write_text(tmp / "pairs.tsv", pairs);
    const std::string dir = tmp / "run";
    cli_test::train(dir, {"--data", tmp / "pairs.tsv", "--steps", "6", "--snapshot-every", "3"});
    const std::string page = tmp / "report.html";
    cli_test::require_ok(
        cli_test::run({"inspect", "--run", dir, "--samples", "2", "--format", "html", "--to", page}));
    const std::string html = train::read_file(page);
    const auto data = report_data(html);
    std::size_t probes = 0;
    for (const auto& source : data["sources"]) probes += source["kind"] == "probe";
    REQUIRE(probes > 0);  // the replay is there, without a chart of nothing
    CHECK(html.find("class=\"align-chart\"") == std::string::npos);
    CHECK(html.find("alignment share against step") == std::string::npos);
    const auto said = html.find("id=\"no-alignment\"");
    CHECK(said != std::string::npos);
    CHECK(html.find("id=\"no-alignment\"", said + 1) == std::string::npos);
}

TEST_CASE("the report names how each kind of model writes its prediction and what its maps were fed") {
    ModelConfig decoder;
    decoder.kind = "seq2seq";
    ModelConfig encoder;
    encoder.kind = "encoder";
    CHECK(decoding_description({}, decoder) == "greedy decoding");
    CHECK(decoding_description({.beam = 4, .length_penalty = 0.0}, decoder) == "beam search (beam 4)");
    CHECK(decoding_description({.beam = 4, .length_penalty = 0.6}, decoder) ==
          "beam search (beam 4, length penalty 0.6)");
    CHECK(decoding_description({}, encoder) == "the most likely token at each position");
    CHECK(example_maps_description(decoder).find("fed its own prediction") != std::string::npos);
    CHECK(example_maps_description(encoder).find("no output is fed back") != std::string::npos);
}
