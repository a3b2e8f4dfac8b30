// inspect's renderers: terminal heatmaps (colour modes, downsampling), SVG (parsed as XML), CSV
// and JSON exports (read back to the same weights).
#include "inspect/export.hpp"
#include "inspect/recorded_maps.hpp"
#include "inspect/render_svg.hpp"
#include "inspect/render_term.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>
#include <tinyxml2.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <sstream>
#include <vector>

using namespace attograd;
using namespace attograd::inspect;

namespace {

/// A 3x4 map with labels that need escaping and right keys on two rows.
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

/// A T x T map whose row t puts all its weight on key (T - 1 - t).
AttentionMap anti_diagonal(std::int64_t t) {
    AttentionMap map;
    map.module = "layers.0.self_attn";
    for (std::int64_t i = 0; i < t; ++i) {
        map.queries.push_back(std::to_string(i));
        map.keys.push_back(std::to_string(i));
    }
    map.weights.assign(static_cast<std::size_t>(t * t), 0.0);
    for (std::int64_t i = 0; i < t; ++i) map.weights[static_cast<std::size_t>(i * t + t - 1 - i)] = 1.0;
    return map;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// `text` with its line breaks as spaces: render_heatmap wraps its notes at the width.
std::string one_line(std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
}

std::int64_t code_points(const std::string& s) {
    return std::count_if(s.begin(), s.end(),
                         [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

}  // namespace

TEST_CASE("alignment share: mean weight on the right keys, missing rows count 0, -1 rows skipped") {
    const AttentionMap map = sample_map();
    REQUIRE(map.alignment_share.has_value());
    CHECK(*map.alignment_share == doctest::Approx((0.95 + 0.8) / 2));
    CHECK(*alignment_share(map, {2, 1, -1, 3}) == doctest::Approx((0.95 + 0.8 + 0.0) / 3));
    CHECK_FALSE(alignment_share(map, {-1, -1}).has_value());
    CHECK_THROWS_WITH_AS(alignment_share(map, {4}), doctest::Contains("right key 4 of row 0"), IndexError);
    CHECK_THROWS_WITH_AS(alignment_share(map, {-5, 0}), doctest::Contains("right key -5 of row 0"),
                         IndexError);
    // A map's own right keys are checked by every renderer alike.
    AttentionMap bad = map;
    bad.right = {0, 9};
    CHECK_THROWS_WITH_AS(render_svg(bad), doctest::Contains("has right key 9 at row 1"), IndexError);
    CHECK_THROWS_WITH_AS(render_heatmap(bad), doctest::Contains("has right key 9 at row 1"), IndexError);
    bad.right = {-2};
    CHECK_THROWS_WITH_AS(to_json({InspectedExample{.maps = {bad}}}), doctest::Contains("has right key -2"),
                         IndexError);
}

TEST_CASE("maps are checked: weights must fill rows x cols and be finite") {
    AttentionMap map = sample_map();
    map.weights.pop_back();
    CHECK_THROWS_WITH_AS(check_map(map), doctest::Contains("has 11 weights for 3 query and 4 key labels"),
                         ShapeError);
    map = sample_map();
    map.weights[5] = std::numeric_limits<double>::quiet_NaN();
    CHECK_THROWS_WITH_AS(render_heatmap(map), doctest::Contains("non-finite weight nan at row 1, column 1"),
                         ValueError);
    CHECK_THROWS_WITH_AS(render_svg(map), doctest::Contains("decoder.layers.0.cross_attn head 1"),
                         ValueError);
    InspectedExample with_nan;
    with_nan.maps = {map};
    CHECK_THROWS_WITH_AS(to_csv({with_nan}), doctest::Contains("non-finite"), ValueError);
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
    const std::string plain = render_heatmap(sample_map());
    CHECK(plain.find('\x1b') == std::string::npos);
    CHECK(plain.find("decoder.layers.0.cross_attn head 1") != std::string::npos);
    CHECK(plain.find("alignment share 0.875") != std::string::npos);
    const auto lines = lines_of(plain);
    REQUIRE(lines.size() == 7);  // title, column labels, 3 rows, scale, labels
    CHECK(lines[1].find("^") != std::string::npos);
    CHECK(lines[1].find("$") != std::string::npos);
    CHECK(lines[2] == "c      \u2588  ");       // row "c": the 0.95 cell of key "c" full, the others blank
    CHECK(lines[3] == "b  \u2591 \u2588    ");  // 0.1 -> light shade, 0.8 -> full
    CHECK(lines[4].rfind("$ ", 0) == 0);
    CHECK(lines[6] == "^ = <bos> (start), $ = <eos> (end)");  // only the special labels shown
    AttentionMap unknown = sample_map();
    unknown.keys[1] = "<unk>";
    CHECK(lines_of(render_heatmap(unknown))[6] ==
          "^ = <bos> (start), $ = <eos> (end), \ufffd = <unk> (a token outside the vocabulary)");
    unknown.queries = {"a", "b", "c"};
    unknown.keys = {"a", "b", "c", "d"};
    CHECK(lines_of(render_heatmap(unknown)).size() == 6);  // no special label, no line for them
}

TEST_CASE("terminal heatmap: wide characters take two columns, so rows stay under their keys") {
    AttentionMap map = sample_map();
    map.queries = {"\u6f22\u5b57", "b", "e\u0301"};  // two wide characters; e + a combining accent
    const auto lines = lines_of(render_heatmap(map));
    REQUIRE(lines.size() == 7);
    // every row is as wide as the others: labels padded by columns, not by code points
    CHECK(display_width(lines[2]) == display_width(lines[3]));
    CHECK(display_width(lines[4]) == display_width(lines[3]));
    CHECK(lines[3].rfind("   b ", 0) == 0);  // "b" padded to the 4 columns of the wide label
    CHECK(display_width("\u6f22\u5b57") == 4);
    CHECK(display_width("e\u0301") == 1);
    CHECK(display_width("\xff") == 1);  // a malformed byte counts as one replacement character
}

TEST_CASE("terminal heatmap: colour modes use the matching escape codes") {
    const std::string truecolour = render_heatmap(sample_map(), {.colour = TermColour::TrueColour});
    CHECK(truecolour.find("\x1b[48;2;") != std::string::npos);
    CHECK(truecolour.find("\x1b[48;5;") == std::string::npos);
    const std::string ansi = render_heatmap(sample_map(), {.colour = TermColour::Ansi256});
    CHECK(ansi.find("\x1b[48;5;") != std::string::npos);
    CHECK(ansi.find("\x1b[48;2;") == std::string::npos);
}

TEST_CASE("terminal heatmap: a map wider than the terminal has its keys pooled to fit, never wrapped") {
    const AttentionMap map = anti_diagonal(200);
    for (const std::int64_t width : {40, 80, 132}) {
        CAPTURE(width);
        const std::string text = render_heatmap(map, {.width = width});
        const auto lines = lines_of(text);
        CHECK(text.find("downsampled") != std::string::npos);
        for (const auto& line : lines) CHECK(code_points(line) <= width);
        // The anti-diagonal survives pooling: the first row's full cell is its last column.
        const auto first_row = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
            const auto start = l.find_first_not_of(' ');
            return start != std::string::npos && l.compare(start, 4, "0-3 ") == 0;
        });
        REQUIRE(first_row != lines.end());
        CHECK(first_row->back() != ' ');  // row 0 attends to the last key: its last cell is shaded
        // 200 queries are more than the default 64 rows: groups of 4, stated in the note.
        CHECK(one_line(text).find("averages 4 adjacent queries (more than 64 rows)") != std::string::npos);
        const std::regex row_label(R"(^ *\d+-\d+ .*)");  // a pooled query row: "first-last"
        CHECK(std::count_if(lines.begin(), lines.end(),
                            [&](const std::string& l) { return std::regex_match(l, row_label); }) == 50);
    }
    // Pooled cells keep the attention mass: keys summed. Row r attends to key r + 1, so each
    // row has one full cell (its 2 keys hold the whole mass) and nothing else.
    AttentionMap shifted = anti_diagonal(40);
    std::fill(shifted.weights.begin(), shifted.weights.end(), 0.0);
    for (std::int64_t r = 0; r < 40; ++r)
        shifted.weights[static_cast<std::size_t>(r * 40 + (r + 1) % 40)] = 1.0;
    const std::string text = render_heatmap(shifted, {.width = 50});
    CHECK(one_line(text).find("a cell sums 2 adjacent keys to fit 50 columns") != std::string::npos);
    CHECK(text.find("averages") == std::string::npos);  // 40 rows: every query kept
    std::int64_t rows = 0;
    for (const auto& line : lines_of(text)) {
        if (line.find("scale") != std::string::npos || line.find("\u2588") == std::string::npos) continue;
        ++rows;
        CHECK(line.find("\u2588") == line.rfind("\u2588"));  // exactly one full cell
        CHECK(line.find("\u2593") == std::string::npos);
    }
    CHECK(rows == 40);
    // A map that fits is drawn as is.
    CHECK(render_heatmap(anti_diagonal(8), {.width = 80}).find("downsampled") == std::string::npos);
    CHECK_THROWS_WITH_AS(render_heatmap(sample_map(), {.width = 10}),
                         doctest::Contains("width must be >= 20"), ValueError);
    CHECK_THROWS_WITH_AS(render_heatmap(sample_map(), {.max_rows = 0}),
                         doctest::Contains("max_rows must be >= 1"), ValueError);
}

TEST_CASE("terminal heatmap: a few queries over many keys keep every query row") {
    // The issue's case: 3 queries x 200 keys at width 40 once became a single averaged row.
    AttentionMap wide;
    wide.module = "cross_attn";
    wide.queries = {"x", "y", "z"};
    for (int k = 0; k < 200; ++k) wide.keys.push_back(std::to_string(k));
    wide.weights.assign(3 * 200, 0.0);
    for (std::size_t r = 0; r < 3; ++r) wide.weights[r * 200 + r * 90] = 1.0;  // keys 0, 90, 180
    const std::string text = render_heatmap(wide, {.width = 40});
    const auto lines = lines_of(text);
    for (const auto& line : lines) CHECK(code_points(line) <= 40);
    CHECK(one_line(text).find("3 queries x 200 keys shown as 3 x") != std::string::npos);
    CHECK(text.find("averages") == std::string::npos);
    std::vector<std::size_t> full;  // the column of each query row's full cell
    for (const char* q : {"x", "y", "z"}) {
        const auto row = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) {
            const auto start = l.find_first_not_of(' ');
            return start != std::string::npos && l.compare(start, 2, std::string(q) + " ") == 0;
        });
        REQUIRE_MESSAGE(row != lines.end(), q);
        full.push_back(row->find("\u2588"));
        CHECK(full.back() != std::string::npos);
    }
    CHECK(full[0] < full[1]);  // key 0, then 90, then 180: the pooled cells keep their order
    CHECK(full[1] < full[2]);
    // A lower row limit merges queries, and says so.
    const std::string merged = render_heatmap(wide, {.width = 40, .max_rows = 2});
    CHECK(one_line(merged).find("a row averages 2 adjacent queries (more than 2 rows)") != std::string::npos);
    CHECK(one_line(merged).find("3 queries x 200 keys shown as 2 x") != std::string::npos);
}

TEST_CASE("colour scale: ends of viridis, clamped, NaN to 0") {
    CHECK(hex(weight_colour(0.0)) == "#440154");
    CHECK(hex(weight_colour(1.0)) == "#fde725");
    CHECK(hex(weight_colour(2.0)) == "#fde725");
    CHECK(hex(weight_colour(std::nan(""))) == "#440154");
}

TEST_CASE("SVG parses as XML with one titled cell per weight, both axes labelled, outlines explained") {
    const AttentionMap map = sample_map();
    const std::string svg = render_svg(map, {.alignment_legend = "right alignment: anti-diagonal"});
    tinyxml2::XMLDocument doc;
    REQUIRE(doc.Parse(svg.c_str()) == tinyxml2::XML_SUCCESS);
    const auto* root = doc.RootElement();
    REQUIRE(root != nullptr);
    CHECK(std::string(root->Name()) == "svg");
    const double width = root->DoubleAttribute("width");
    std::map<std::string, double> cells;  // "query -> key" -> weight, from each cell's tooltip
    std::vector<std::string> texts;
    int outlines = 0;
    for (const auto* e = root->FirstChildElement(); e != nullptr; e = e->NextSiblingElement()) {
        const std::string name = e->Name();
        if (name == "text") texts.emplace_back(e->GetText() != nullptr ? e->GetText() : "");
        if (name == "rect" && e->Attribute("class", "right")) ++outlines;
        if (name == "rect" && e->FirstChildElement("title") != nullptr) {
            const std::string tip = e->FirstChildElement("title")->GetText();
            const auto colon = tip.rfind(": ");
            cells[tip.substr(0, colon)] = std::stod(tip.substr(colon + 2));
        }
        if (name == "g") {
            for (const auto* t = e->FirstChildElement("text"); t != nullptr;
                 t = t->NextSiblingElement("text"))
                texts.emplace_back(t->GetText() != nullptr ? t->GetText() : "");
        }
    }
    REQUIRE(cells.size() == 12);
    for (std::int64_t r = 0; r < map.rows(); ++r)
        for (std::int64_t c = 0; c < map.cols(); ++c) {
            const std::string key = display_label(map.queries[static_cast<std::size_t>(r)]) + " \u2192 " +
                                    display_label(map.keys[static_cast<std::size_t>(c)]);
            REQUIRE(cells.count(key) == 1);
            CHECK(cells[key] == doctest::Approx(map.at(r, c)).epsilon(1e-4));
        }
    CHECK(outlines == 2);
    const auto has = [&](const std::string& s) {
        return std::find(texts.begin(), texts.end(), s) != texts.end();
    };
    CHECK(has("decoder.layers.0.cross_attn head 1 \u2014 alignment share 0.875"));  // the full title
    CHECK(has("^"));
    CHECK(has("$"));
    CHECK(has("red outline: right alignment: anti-diagonal"));
    CHECK(has("0"));
    CHECK(has("1"));
    // The drawing is at least as wide as its title (~7.8 px a character at 13 px).
    CHECK(width >= 7.5 * 55);
    // No outlines, no legend.
    AttentionMap plain = map;
    plain.right.clear();
    CHECK(render_svg(plain).find("red outline") == std::string::npos);
    CHECK(xml_escape("a<b & \"c\" 'd'>") == "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;");
}

TEST_CASE("CSV holds every weight with its tokens and reads back to the same numbers") {
    InspectedExample example;
    example.source = {"b", "c"};
    example.prediction = {"c", "b"};
    example.maps = {sample_map()};
    example.maps[0].keys[1] = "a,\"b\"";
    example.maps[0].weights[0] = 1.0 / 3.0;  // needs all 17 digits to read back exactly
    example.saliency = anti_diagonal(2);
    example.saliency->module = "saliency (gradient x input)";
    example.saliency->head = -1;
    const std::string csv = to_csv({example});
    const auto lines = lines_of(csv);
    REQUIRE(lines.size() == 1 + 12 + 4);
    CHECK(lines[0] == "example,module,layer,head,query_index,query_token,key_index,key_token,weight");
    CHECK(lines[3] == "0,decoder.layers.0.cross_attn,0,1,0,c,2,c,0.94999999999999996");
    CHECK(lines[2].find(",\"a,\"\"b\"\"\",") != std::string::npos);
    CHECK(lines[13].rfind("0,saliency (gradient x input),0,-1,0,0,0,0,", 0) == 0);
    // Every weight reads back exactly from its last field.
    for (std::int64_t r = 0; r < 3; ++r)
        for (std::int64_t c = 0; c < 4; ++c) {
            const std::string& line = lines[static_cast<std::size_t>(1 + r * 4 + c)];
            CHECK(std::stod(line.substr(line.rfind(',') + 1)) == example.maps[0].at(r, c));
        }
}

TEST_CASE("JSON round-trips every map exactly, and bad documents are an IoError naming the field") {
    InspectedExample example;
    example.source = {"b", "c"};
    example.target = {"c", "b"};
    example.prediction = {"c", "b"};
    example.maps = {sample_map(), sample_map()};
    example.maps[1].head = 2;
    example.maps[1].weights[3] = 0.1 + 0.2;
    example.maps[1].saliency_correlation = -0.25;
    example.rollout = anti_diagonal(3);
    example.rollout->head = -1;
    const std::string text = to_json({example, example});
    const auto parsed = nlohmann::json::parse(text);
    CHECK(parsed["examples"][0]["heads"][0]["weights"][0][2].get<double>() == 0.95);
    CHECK(parsed["examples"][0]["saliency"].is_null());
    const auto back = examples_from_json(text);
    REQUIRE(back.size() == 2);
    for (const auto& b : back) {
        CHECK(b.source == example.source);
        CHECK(b.target == example.target);
        REQUIRE(b.maps.size() == 2);
        for (std::size_t m = 0; m < 2; ++m) {
            CHECK(b.maps[m].weights == example.maps[m].weights);  // bit for bit
            CHECK(b.maps[m].queries == example.maps[m].queries);
            CHECK(b.maps[m].keys == example.maps[m].keys);
            CHECK(b.maps[m].right == example.maps[m].right);
            CHECK(b.maps[m].head == example.maps[m].head);
            CHECK(b.maps[m].alignment_share == example.maps[m].alignment_share);
            CHECK(b.maps[m].saliency_correlation == example.maps[m].saliency_correlation);
        }
        REQUIRE(b.rollout.has_value());
        CHECK(b.rollout->weights == example.rollout->weights);
        CHECK_FALSE(b.saliency.has_value());
    }
    CHECK_THROWS_WITH_AS(examples_from_json("{"), doctest::Contains("not JSON"), IoError);
    CHECK_THROWS_WITH_AS(examples_from_json("{}"), doctest::Contains("no field \"examples\""), IoError);
    CHECK_THROWS_WITH_AS(examples_from_json(R"({"examples": [{"source": 5}]})"),
                         doctest::Contains("examples[0].source has the wrong type"), IoError);
    auto broken = parsed;
    broken["examples"][1]["heads"][0]["weights"][2].erase(0);
    CHECK_THROWS_WITH_AS(examples_from_json(broken.dump()),
                         doctest::Contains("examples[1].heads[0] has a weight row of 3 for 4 keys"), IoError);
    CHECK_THROWS_WITH_AS(examples_from_json(std::string(100000, '[') + std::string(100000, ']')),
                         doctest::Contains("nested deeper than 64"), IoError);
}

TEST_CASE(
    "terminal heatmap: labels are whole up to 16 characters, cut with an ellipsis beyond, grid aligned") {
    AttentionMap map;
    map.module = "cross_attn";
    map.queries = {"invalid", "argument", "a_label_of_twenty_one"};
    map.keys = {"invalid", "argument", "x"};
    map.weights = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    const std::string text = render_heatmap(map, {.width = 80});
    const auto lines = lines_of(text);
    REQUIRE(lines.size() == 6);  // title, column labels, 3 rows, scale
    CHECK(lines[1].find("invalid") != std::string::npos);
    CHECK(lines[1].find("argument") != std::string::npos);
    CHECK(lines[2].find("invalid ") != std::string::npos);
    CHECK(lines[3].find("argument ") != std::string::npos);
    CHECK(lines[4].find("a_label_of_twen\u2026 ") == 0);  // 15 code points and the ellipsis
    CHECK(text.find("a_label_of_twent") == std::string::npos);
    CHECK(term_label_width == 16);
    // Every row and the header have the same width: the cells line up under their labels.
    CHECK(code_points(lines[1]) == code_points(lines[2]));
    CHECK(code_points(lines[2]) == code_points(lines[4]));
    // The full cell of row "argument" sits under its column label.
    CHECK(code_points(lines[3].substr(0, lines[3].find("\u2588"))) ==
          code_points(lines[1].substr(0, lines[1].find("argument"))));

    // Too narrow for labelled columns: 1-column cells under a ruler, the labels listed by index.
    AttentionMap wide = map;
    wide.keys = {"invalid", "argument", "value", "keyword", "position", "default", "missing"};
    wide.weights.assign(3 * 7, 0.0);
    for (std::size_t r = 0; r < 3; ++r) wide.weights[r * 7 + r + 4] = 1.0;
    const std::string narrow = render_heatmap(wide, {.width = 40});
    for (const auto& line : lines_of(narrow)) CHECK(code_points(line) <= 40);
    CHECK(narrow.find("downsampled") == std::string::npos);
    CHECK(one_line(narrow).find(
              "keys: 0:invalid 1:argument 2:value 3:keyword 4:position 5:default 6:missing") !=
          std::string::npos);
}
