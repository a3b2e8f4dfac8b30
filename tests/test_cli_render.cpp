// The attograd program's HTML report, metrics CSV reading and file helpers.
#include "file_io.hpp"
#include "render_html.hpp"

#include "inspect/recorded_maps.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <vector>

using namespace attograd;
using namespace attograd::cli;
using attograd::inspect::AttentionMap;
using attograd::inspect::InspectedExample;

namespace {

/// A 3x4 anti-diagonal-ish map with labels that need escaping.
AttentionMap sample_map() {
    AttentionMap map;
    map.module = "decoder.layers.0.cross_attn";
    map.head = 1;
    map.queries = {"c", "b", "<eos>"};
    map.keys = {"<bos>", "b", "c", "<eos>"};
    map.weights = {0.0, 0.05, 0.95, 0.0,   //
                   0.1, 0.8,  0.05, 0.05,  //
                   0.0, 0.0,  0.1,  0.9};
    map.right = {2, 1, -1};
    map.alignment_share = inspect::alignment_share(map, map.right);
    return map;
}

/// Checks that tags open and close in a properly nested way (a small well-formedness check:
/// no stray '<' or '&' in text, every element closed in order).
bool well_formed(const std::string& xml, std::string& problem) {
    std::vector<std::string> open;
    const std::regex tag(
        R"(<(/?)([A-Za-z][A-Za-z0-9]*)([^<>]*?)(/?)>|<!DOCTYPE html>|&(?!(amp|lt|gt|quot|apos);)|<(?![A-Za-z/!]))");
    for (auto it = std::sregex_iterator(xml.begin(), xml.end(), tag); it != std::sregex_iterator(); ++it) {
        const auto& m = *it;
        const std::string whole = m.str(0);
        if (whole == "<!DOCTYPE html>") continue;
        if (whole[0] == '&' || m[2].str().empty()) {
            problem = "unescaped '" + whole + "' at " + std::to_string(m.position(0));
            return false;
        }
        const std::string name = m[2].str();
        if (m[4].matched && !m[4].str().empty()) continue;  // self-closing
        if (name == "meta") continue;                       // HTML void element
        if (m[1].str().empty()) {
            open.push_back(name);
        } else {
            if (open.empty() || open.back() != name) {
                problem = "</" + name + "> closes " +
                          (open.empty() ? std::string("nothing") : "<" + open.back() + ">");
                return false;
            }
            open.pop_back();
        }
    }
    if (!open.empty()) {
        problem = "<" + open.back() + "> is never closed";
        return false;
    }
    return true;
}

}  // namespace

TEST_CASE("the well-formedness check itself rejects broken markup") {
    std::string problem;
    CHECK(well_formed("<a x=\"1\"><b/>t &amp; u</a>", problem));
    CHECK_FALSE(well_formed("<a><b></a></b>", problem));
    CHECK_FALSE(well_formed("<a>x & y</a>", problem));
    CHECK_FALSE(well_formed("<a>x < y</a>", problem));
    CHECK_FALSE(well_formed("<a>", problem));
}

TEST_CASE("HTML report: self-contained, well formed, with the curve, the config and every head") {
    Report report;
    report.title = "attograd run: <reverse>";
    report.config = {{"task", {{"name", "reverse"}}}, {"model", {{"score", "additive"}}}};
    report.metrics_csv = "step,loss,heldout_sequence_accuracy\n1,2.5,\n100,0.5,0.7\n200,0.1,1\n";
    report.notes = {"knockout: none"};
    InspectedExample example;
    example.source = {"b", "c"};
    example.target = {"c", "b"};
    example.prediction = {"c", "b"};
    example.maps = {sample_map(), sample_map()};
    example.maps[1].head = 2;
    report.examples = {example};
    const std::string html = render_html(report);
    std::string problem;
    CHECK_MESSAGE(well_formed(html, problem), problem);
    CHECK(html.find("http") == html.find("http://www.w3.org/2000/svg"));  // no link but the SVG namespace
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("attograd run: &lt;reverse&gt;") != std::string::npos);
    CHECK(html.find("<polyline") != std::string::npos);
    CHECK(html.find("model.score") != std::string::npos);
    CHECK(html.find("decoder.layers.0.cross_attn head 2") != std::string::npos);
    CHECK(html.find("knockout: none") != std::string::npos);
}

TEST_CASE("metrics CSV parsing: columns by header, blanks become NaN") {
    const auto columns = parse_metrics_csv("step,loss,acc\n1,2.5,\n2,1.5,0.5\nbroken\n");
    REQUIRE(columns.size() == 3);
    CHECK(columns[0].first == "step");
    CHECK(columns[0].second == std::vector<double>{1, 2});
    CHECK(std::isnan(columns[2].second[0]));
    CHECK(columns[2].second[1] == 0.5);
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
