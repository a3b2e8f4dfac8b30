// The attograd program's renderers: terminal heatmaps, SVG, HTML report, CSV and JSON exports.
#include "file_io.hpp"
#include "render_export.hpp"
#include "render_html.hpp"
#include "render_svg.hpp"
#include "render_term.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <regex>
#include <vector>

using namespace attograd;
using namespace attograd::cli;

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
    map.alignment_share = alignment_share(map, map.right);
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

TEST_CASE("alignment share: mean weight on the right keys, missing rows count 0, -1 rows skipped") {
    const AttentionMap map = sample_map();
    REQUIRE(map.alignment_share.has_value());
    CHECK(*map.alignment_share == doctest::Approx((0.95 + 0.8) / 2));
    CHECK(*alignment_share(map, {2, 1, -1, 3}) == doctest::Approx((0.95 + 0.8 + 0.0) / 3));
    CHECK_FALSE(alignment_share(map, {-1, -1}).has_value());
}

TEST_CASE("terminal colour choice: plain when not a TTY or NO_COLOR, true colour from COLORTERM") {
    CHECK(choose_term_colour(false, false, "truecolor") == TermColour::Plain);
    CHECK(choose_term_colour(true, true, "truecolor") == TermColour::Plain);
    CHECK(choose_term_colour(true, false, "truecolor") == TermColour::TrueColour);
    CHECK(choose_term_colour(true, false, "24bit") == TermColour::TrueColour);
    CHECK(choose_term_colour(true, false, nullptr) == TermColour::Ansi256);
    CHECK(choose_term_colour(true, false, "yes") == TermColour::Ansi256);
}

TEST_CASE("terminal heatmap: plain mode has no escape codes, shades by weight, labels on both axes") {
    const std::string plain = render_heatmap(sample_map(), TermColour::Plain);
    CHECK(plain.find('\x1b') == std::string::npos);
    CHECK(plain.find("decoder.layers.0.cross_attn head 1") != std::string::npos);
    CHECK(plain.find("alignment share 0.875") != std::string::npos);
    CHECK(plain.find("\u2588") != std::string::npos);  // the 0.95 cell
    CHECK(plain.find("\u2591") != std::string::npos);  // the 0.1 cell
    std::vector<std::string> lines;
    for (std::size_t start = 0, end; (end = plain.find('\n', start)) != std::string::npos; start = end + 1) {
        lines.push_back(plain.substr(start, end - start));
    }
    REQUIRE(lines.size() == 6);  // title, column labels, 3 rows, legend
    CHECK(lines[1].find("^") != std::string::npos);
    CHECK(lines[1].find("$") != std::string::npos);
    CHECK(lines[2].rfind("c ", 0) == 0);  // row label first
    CHECK(lines[4].rfind("$ ", 0) == 0);
    // Row "c": the cell of key "c" is full, the others blank.
    CHECK(lines[2] == "c   " + std::string(" ") + " " + " " + "\u2588" + " " + " ");
}

TEST_CASE("terminal heatmap: colour modes use the matching escape codes") {
    const std::string truecolour = render_heatmap(sample_map(), TermColour::TrueColour);
    CHECK(truecolour.find("\x1b[48;2;") != std::string::npos);
    CHECK(truecolour.find("\x1b[48;5;") == std::string::npos);
    const std::string ansi = render_heatmap(sample_map(), TermColour::Ansi256);
    CHECK(ansi.find("\x1b[48;5;") != std::string::npos);
    CHECK(ansi.find("\x1b[48;2;") == std::string::npos);
}

TEST_CASE("colour scale: ends of viridis, clamped, NaN to 0") {
    CHECK(hex(weight_colour(0.0)) == "#440154");
    CHECK(hex(weight_colour(1.0)) == "#fde725");
    CHECK(hex(weight_colour(2.0)) == "#fde725");
    CHECK(hex(weight_colour(std::nan(""))) == "#440154");
}

TEST_CASE("the well-formedness check itself rejects broken markup") {
    std::string problem;
    CHECK(well_formed("<a x=\"1\"><b/>t &amp; u</a>", problem));
    CHECK_FALSE(well_formed("<a><b></a></b>", problem));
    CHECK_FALSE(well_formed("<a>x & y</a>", problem));
    CHECK_FALSE(well_formed("<a>x < y</a>", problem));
    CHECK_FALSE(well_formed("<a>", problem));
}

TEST_CASE("SVG: well formed, labels escaped, one cell per weight, right keys outlined") {
    const std::string svg = render_svg(sample_map());
    std::string problem;
    CHECK_MESSAGE(well_formed(svg, problem), problem);
    CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
    CHECK(svg.find("&lt;bos&gt;") != std::string::npos);
    CHECK(svg.find("<bos>") == std::string::npos);
    std::size_t cells = 0;
    for (std::size_t at = 0; (at = svg.find("<rect x=", at)) != std::string::npos; ++at) ++cells;
    CHECK(cells == 12 + 2);  // 3 x 4 cells and two outlined right keys
    CHECK(svg.find("stroke=\"red\"") != std::string::npos);
    CHECK(xml_escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
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

TEST_CASE("CSV and JSON exports hold every weight with its tokens") {
    InspectedExample example;
    example.source = {"b", "c"};
    example.prediction = {"c", "b"};
    example.maps = {sample_map()};
    example.maps[0].keys[1] = "a,\"b\"";
    const std::string csv = to_csv({example});
    CHECK(csv.rfind("example,module,layer,head,query_index,query_token,key_index,key_token,weight\n", 0) ==
          0);
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 12);
    CHECK(csv.find("0,decoder.layers.0.cross_attn,0,1,0,c,2,c,0.95\n") != std::string::npos);
    CHECK(csv.find(",\"a,\"\"b\"\"\",") != std::string::npos);
    const auto json = to_json(std::vector<InspectedExample>{example});
    const auto& head = json["examples"][0]["heads"][0];
    CHECK(head["weights"].size() == 3);
    CHECK(head["weights"][0][2].get<double>() == 0.95);
    CHECK(head["alignment_share"].get<double>() == doctest::Approx(0.875));
    CHECK(head["saliency_correlation"].is_null());
    CHECK(json["examples"][0]["source"] == nlohmann::json({"b", "c"}));
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
