// The report of a trained run (inspect --format html): the layer it opens on, each probe step's
// prediction and shares, the decoding it names, its labels; and the atomic writes it is saved with.
#include "cli_helpers.hpp"
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

namespace {

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

}  // namespace

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

    const auto snapshots =
        inspect::load_snapshots(std::filesystem::path(dir) / "attention_snapshots.safetensors");
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

TEST_CASE("inspect --format html names the decoding and marks each example's prediction right or wrong") {
    cli_test::TempDir tmp;
    const std::string dir = reverse_run(tmp, "45");
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
    cli_test::TempDir tmp;
    const std::string seq2seq = reverse_run(tmp, "2"), encoder = tmp / "encoder";
    cli_test::train(encoder, {"--task", "copy", "--model", "encoder", "--layers", "2", "--steps", "2"});
    const auto report = [&](const std::string& dir, std::vector<std::string> decoding) {
        const std::string page = tmp / "report.html";
        std::vector<std::string> args = {"inspect",  "--run", dir,    "--samples", "1",
                                         "--format", "html",  "--to", page};
        args.insert(args.end(), decoding.begin(), decoding.end());
        cli_test::require_ok(cli_test::run(args));
        return report_data(train::read_file(page));
    };
    CHECK(report(seq2seq, {})["decoding"] == "greedy decoding");
    CHECK(report(seq2seq, {"--beam", "4"})["decoding"] == "beam search (beam 4)");
    CHECK(report(seq2seq, {"--beam", "4", "--length-penalty", "0.6"})["decoding"] ==
          "beam search (beam 4, length penalty 0.6)");
    CHECK(report(seq2seq, {})["example_maps"].get<std::string>().find("fed its own prediction") !=
          std::string::npos);
    const auto per_position = report(encoder, {});
    CHECK(per_position["decoding"] == "the most likely token at each position");
    CHECK(per_position["open"] == "encoder.layers.1.self_attn");  // no cross-attention: the last layer
    CHECK(per_position["example_maps"].get<std::string>().find("no output is fed back") != std::string::npos);
}

TEST_CASE(
    "inspect of a run whose metrics.csv holds a value that is not a number refuses it, naming the line") {
    cli_test::TempDir tmp;
    const std::string dir = reverse_run(tmp, "2");
    const std::filesystem::path metrics = std::filesystem::path(dir) / "metrics.csv";
    std::string text = train::read_file(metrics);
    const auto row = text.find('\n') + 1;  // line 2, the first row: "2,<loss>,..."
    const auto loss = text.find(',', row) + 1;
    text.replace(loss, text.find(',', loss) - loss, "nan");
    cli_test::write_text(metrics, text);
    cli_test::record_checksum(metrics);
    const std::string page = tmp / "report.html";
    cli_test::check_refused(cli_test::run({"inspect", "--run", dir, "--format", "html", "--to", page}),
                            {"metrics.csv", "line 2: field", "is not a decimal number"});
    CHECK_FALSE(std::filesystem::exists(page));
}

namespace {

// The value the report's configuration table shows for `key`, or "(absent)".
std::string config_row(const std::string& html, const std::string& key) {
    const std::string open = "<tr><td>" + key + "</td><td><code>";
    const auto begin = html.find(open);
    if (begin == std::string::npos) return "(absent)";
    const auto value = begin + open.size();
    return html.substr(value, html.find("</code>", value) - value);
}

}  // namespace

TEST_CASE("the report's configuration lists only the settings that apply to the run") {
    cli_test::TempDir tmp;
    const std::string soft = reverse_run(tmp, "2"), hard = tmp / "hard";
    cli_test::train(hard, {"--task", "reverse", "--steps", "2", "--attention", "hard", "--window", "3",
                           "--local", "p", "--optim", "sgd"});
    const auto page = [&](const std::string& dir) {
        const std::string file = tmp / "report.html";
        cli_test::require_ok(
            cli_test::run({"inspect", "--run", dir, "--samples", "1", "--format", "html", "--to", file}));
        return train::read_file(file);
    };
    const std::string global = page(soft);
    CHECK(config_row(global, "model.estimator") == "(absent)");  // soft attention has no estimator
    CHECK(config_row(global, "model.local") == "(absent)");      // global attention has no local mode
    CHECK(config_row(global, "model.window") == "(absent)");
    CHECK(config_row(global, "train.momentum") == "(absent)");  // Adam has no momentum
    CHECK(config_row(global, "task.data") == "(absent)");
    CHECK(config_row(global, "model.score") != "(absent)");
    CHECK(config_row(global, "progress.steps_done") == "2");
    CHECK(config_row(global, "model.attention_span") == "global");
    const std::string local = page(hard);
    CHECK(config_row(local, "model.estimator") != "(absent)");
    CHECK(config_row(local, "model.local") != "(absent)");
    CHECK(config_row(local, "train.momentum") != "(absent)");
    CHECK(config_row(local, "model.attention_span") == "local-p (window D = 3)");
}
