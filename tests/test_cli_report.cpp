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
    cli_test::train(encoder, {"--task", "copy", "--model", "encoder", "--layers", "1", "--steps", "2"});
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
    CHECK(per_position["example_maps"].get<std::string>().find("no output is fed back") != std::string::npos);
}
