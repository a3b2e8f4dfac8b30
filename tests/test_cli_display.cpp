// What the program shows: invisible characters a token may hold are escaped in every display
// (messages, eval and inspect text, terminal heat maps, SVG and HTML labels) and kept exact in
// JSON and CSV; a malformed recorded checksum is named as such; corpus BLEU-4 without any
// 4-token prediction is "n/a".
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

using namespace cli_test;

/// The invisible characters a token may hold, each with the escape every display shows.
const std::vector<std::pair<std::string, std::string>>& invisible() {
    static const std::vector<std::pair<std::string, std::string>> characters = {
        {"\u200c", "\\u200c"},          // ZERO WIDTH NON-JOINER (Persian, Indic)
        {"\u200d", "\\u200d"},          // ZERO WIDTH JOINER (emoji sequences)
        {"\ufe0f", "\\ufe0f"},          // VARIATION SELECTOR-16 (emoji presentation)
        {"\U000e0100", "\\U000e0100"},  // VARIATION SELECTOR-17 (Ideographic Variation Sequences)
    };
    return characters;
}

/// Whether `text` holds none of the invisible characters raw.
bool none_raw(const std::string& text) {
    for (const auto& [character, escaped] : invisible())
        if (text.find(character) != std::string::npos) return false;
    return true;
}

/// A --data file that reverses three words out of "alpha" and "alpha" + each invisible
/// character: every pair of tokens that look alike when shown raw.
std::string lookalike_tsv() {
    std::vector<std::string> words = {"alpha"};
    for (const auto& [character, escaped] : invisible()) words.push_back("alpha" + character);
    std::string text;
    for (const auto& a : words)
        for (const auto& b : words)
            for (const auto& c : words) text += a + " " + b + " " + c + "\t" + c + " " + b + " " + a + "\n";
    return text;
}

/// The words of `text`.
std::vector<std::string> split_words(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string word; in >> word;) words.push_back(word);
    return words;
}

}  // namespace

TEST_CASE("eval shows the joiners and variation selectors of an input escaped, and keeps them in JSON") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    for (const auto& [character, escaped] : invisible()) {
        CAPTURE(escaped);
        const std::string input = "a" + character + " b c d";
        const Outcome o = run({"eval", "--run", tmp / "run", "--show", "0", "--input", input});
        require_ok(o);
        CHECK(o.err.find("'a" + escaped + "' not in the vocabulary") != std::string::npos);
        const std::string line = line_with(o.out, "input:");
        CHECK(line.find("input: a" + escaped + " b c d -> ") != std::string::npos);
        // "a" + the character is outside the vocabulary: the prediction cannot be right.
        CHECK(line.find("(wrong, expected d c b a" + escaped + ")") != std::string::npos);
        CHECK(none_raw(o.out));
        CHECK(none_raw(o.err));
        // Machine-readable output keeps the text exact.
        const Outcome j = run({"eval", "--run", tmp / "run", "--show", "0", "--json", "--input", input});
        require_ok(j);
        const json parsed = json::parse(j.out);
        CHECK(parsed["inputs"][0]["source"] == input);
        CHECK(parsed["inputs"][0]["target"] == "d c b a" + character);
    }
}

TEST_CASE("tokens that differ only by an invisible character look different in inspect's displays") {
    TempDir tmp;
    write_text(tmp / "data.tsv", lookalike_tsv());
    train(tmp / "run", {"--data", tmp / "data.tsv", "--steps", "1"});
    const json config = read_config(tmp / "run");
    for (const auto& [character, escaped] : invisible()) {  // every look-alike is its own token
        CAPTURE(escaped);
        const json& vocab = config["vocab"];
        CHECK(std::find(vocab.begin(), vocab.end(), "alpha" + character) != vocab.end());
    }
    const std::vector<std::string> inputs = {"--input", "alpha alpha\u200c alpha\u200d", "--input",
                                             "alpha\ufe0f alpha\U000e0100 alpha"};
    const auto inspect = [&](std::vector<std::string> args) {
        args.insert(args.begin(), {"inspect", "--run", tmp / "run"});
        args.insert(args.end(), inputs.begin(), inputs.end());
        const Outcome o = run(args);
        require_ok(o);
        CHECK(none_raw(o.out));
        CHECK(none_raw(o.err));
        return o;
    };

    // The summary lines and the terminal heat maps.
    const Outcome term = inspect({"--format", "term"});
    CHECK(term.out.find("example 1: alpha alpha\\u200c alpha\\u200d -> ") != std::string::npos);
    CHECK(term.out.find("example 2: alpha\\ufe0f alpha\\U000e0100 alpha -> ") != std::string::npos);
    for (const auto& [character, escaped] : invisible()) {
        CAPTURE(escaped);
        CHECK(term.out.find("alpha" + escaped + " ") != std::string::npos);  // a heat map's label
    }

    // The SVG labels (text elements).
    inspect({"--format", "svg", "--to", tmp / "svg"});
    std::string svg;
    for (const auto& entry : fs::directory_iterator(tmp / "svg")) svg += read_text(entry.path());
    CHECK(none_raw(svg));
    CHECK(svg.find(">alpha<") != std::string::npos);
    for (const auto& [character, escaped] : invisible()) {
        CAPTURE(escaped);
        CHECK(svg.find(">alpha" + escaped + "<") != std::string::npos);
    }

    // The HTML report: its labels are JSON strings, where the escape's backslash is doubled.
    inspect({"--format", "html", "--to", tmp / "report.html"});
    const std::string html = read_text(tmp / "report.html");
    CHECK(none_raw(html));
    for (const auto& [character, escaped] : invisible()) {
        CAPTURE(escaped);
        CHECK(html.find("\"alpha\\" + escaped + "\"") != std::string::npos);
    }

    // JSON and CSV keep every token exact.
    inspect({"--format", "json", "--to", tmp / "attention.json"});
    const std::string exported = json::parse(read_text(tmp / "attention.json")).dump();  // UTF-8 as is
    inspect({"--format", "csv", "--to", tmp / "attention.csv"});
    const std::string csv = read_text(tmp / "attention.csv");
    for (const auto& [character, escaped] : invisible()) {
        CAPTURE(escaped);
        CHECK(exported.find("\"alpha" + character + "\"") != std::string::npos);
        CHECK(exported.find(escaped) == std::string::npos);
        CHECK(csv.find("alpha" + character) != std::string::npos);
        CHECK(csv.find(escaped) == std::string::npos);
    }
}

TEST_CASE("a recorded checksum that is not 16 hex digits is named as such, not as a mismatch") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    edit_config(tmp / "run", [](json& config) { config["files"]["metrics.csv"]["fnv1a64"] = "zz"; });
    const Outcome file = run({"eval", "--run", tmp / "run"});
    check_refused(file, {"config.json", "files.metrics.csv.fnv1a64", "16 lowercase hex digits", "'zz'"});
    CHECK(file.err.find("differs") == std::string::npos);
    // config.json's own checksum: "unchecked" or 16 hex digits.
    json config = read_config(tmp / "run");
    config["config_fnv1a64"] = "ZZ";
    write_text(tmp / "run/config.json", config.dump(2));
    const Outcome own = run({"eval", "--run", tmp / "run"});
    check_refused(own, {"config.json", "config_fnv1a64", "16 lowercase hex digits", "\"unchecked\"", "ZZ"});
    CHECK(own.err.find("differs") == std::string::npos);
}

TEST_CASE("corpus BLEU-4 is n/a, not 0, when no prediction has 4 tokens") {
    TempDir tmp;
    // One-word targets: the model writes at most one word, so there is no 4-gram to count.
    std::string tsv;
    const std::vector<std::string> words = {"red", "green", "blue", "cyan", "grey", "pink"};
    for (const auto& a : words)
        for (const auto& b : words) tsv += a + " " + b + "\t" + b + "\n";
    write_text(tmp / "one.tsv", tsv);
    train(tmp / "run", {"--data", tmp / "one.tsv", "--steps", "1"});
    const Outcome text = run({"eval", "--run", tmp / "run"});
    require_ok(text);
    CHECK(line_with(text.out, "corpus BLEU") ==
          "corpus BLEU n/a (4-gram BLEU is undefined: no prediction has 4 tokens)");
    CHECK(text.out.find("BLEU 0.00") == std::string::npos);
    const Outcome j = run({"eval", "--run", tmp / "run", "--json", "--show", "100"});
    require_ok(j);
    const json parsed = json::parse(j.out);
    REQUIRE(parsed.contains("bleu"));
    CHECK(parsed["bleu"].is_null());
    REQUIRE(!parsed["examples"].empty());
    for (const auto& e : parsed["examples"])  // the reason printed holds
        CHECK(split_words(e["prediction"].get<std::string>()).size() < 4);
}
