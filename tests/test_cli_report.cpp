// The attograd program's report pieces (configuration rows that apply, training charts from
// metrics.csv) and its file helpers.
#include "file_io.hpp"
#include "report_builder.hpp"

#include "core/error.hpp"

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
    CHECK(read_file(dir / "a.txt") == "second");
    int files = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
    CHECK(files == 1);
    CHECK_THROWS_WITH_AS(write_file_atomic(dir / "missing" / "b.txt", "x"), doctest::Contains("missing"),
                         IoError);
    CHECK_THROWS_WITH_AS(read_file(dir / "nope.txt"), doctest::Contains("nope.txt: cannot open"), IoError);
    std::filesystem::remove_all(dir);
}

TEST_CASE("atomic writes refuse to replace what is not a regular file (a FIFO standing in for /dev/null)") {
    const auto dir = std::filesystem::temp_directory_path() / "attograd_test_atomic_fifo";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const auto fifo = dir / "device";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(attograd::cli::write_file_atomic(fifo, "x"), doctest::Contains("not a regular file"),
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
