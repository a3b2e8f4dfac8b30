// The attograd program's report pieces (configuration rows that apply, training charts from
// metrics.csv, the layer it opens on), its file helpers, and the report of a trained run.
#include "cli_helpers.hpp"
#include "train/file_io.hpp"
#include "report_builder.hpp"
#include "snapshot_probes.hpp"

#include "core/error.hpp"
#include "inspect/inspect.hpp"

#include <doctest/doctest.h>
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
    CHECK_THROWS_WITH_AS(train::read_file(dir / "nope.txt"), doctest::Contains("nope.txt: cannot open"), IoError);
    std::filesystem::remove_all(dir);
}

TEST_CASE("atomic writes refuse to replace what is not a regular file (a FIFO standing in for /dev/null)") {
    const auto dir = std::filesystem::temp_directory_path() / "attograd_test_atomic_fifo";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto fifo = dir / "device";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(attograd::train::write_file_atomic(fifo, "x"), doctest::Contains("not a regular file"),
                         attograd::IoError);
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
    const std::string dir = tmp / "run";
    cli_test::train(dir, {"--task", "reverse", "--steps", "60", "--layers", "1", "--heads", "2"});
    const std::string page = tmp / "report.html";
    cli_test::require_ok(
        cli_test::run({"inspect", "--run", dir, "--samples", "2", "--format", "html", "--to", page}));
    const std::string html = train::read_file(page);
    const std::string open = "<script type=\"application/json\" id=\"report-data\">";
    const auto begin = html.find(open);
    REQUIRE(begin != std::string::npos);
    const auto data = nlohmann::json::parse(
        html.substr(begin + open.size(), html.find("</script>", begin) - begin - open.size()));
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
