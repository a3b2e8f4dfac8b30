// What eval and inspect make of hostile --input text (invalid UTF-8, control characters, every
// kind of whitespace), each bad input reported by name while the others run; --data paths that
// config.json cannot hold; the default warm-up on a short run.
#include "cli_helpers.hpp"

#include "data/task.hpp"
#include "data/text.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

namespace {

using namespace cli_test;

const std::string not_utf8 = "a \xff b c";  // 0xff never occurs in UTF-8

}  // namespace

TEST_CASE("eval names a bad --input with bytes outside UTF-8 and control characters escaped, the rest kept") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    for (const auto& [input, shown] : std::vector<std::pair<std::string, std::string>>{
             {"a \xff b", "a \\xff b"},
             {"\xe2\x82", "\\xe2\\x82"},                                           // a truncated character
             {"caf\xc3\xa9 \xe2\x82\xac \x01", "caf\xc3\xa9 \xe2\x82\xac \\x01"},  // é and € kept
             {"a\tb\nc\rd\x1b\x7f", "a\\tb\\nc\\rd\\x1b\\x7f"}}) {
        const Outcome o = run({"eval", "--run", tmp / "run", "--show", "0", "--input", input});
        INFO(o.command, "\nstderr: ", o.err);
        CHECK(o.code == 2);
        CHECK(o.err.find("--input '" + shown + "'") != std::string::npos);
        CHECK(attograd::data::is_valid_utf8(o.err));
        CHECK(count_lines(o.err) == 1);
    }
    // A long input is cut as core's excerpt cuts, still one line.
    const Outcome o = run({"eval", "--run", tmp / "run", "--show", "0", "--input", std::string(100, '\xff')});
    INFO(o.command, "\nstderr: ", o.err);
    CHECK(o.code == 2);
    CHECK(o.err.find("--input '\\xff\\xff") != std::string::npos);
    CHECK(o.err.find("(100 bytes)") != std::string::npos);
    CHECK(attograd::data::is_valid_utf8(o.err));
    CHECK(count_lines(o.err) == 1);
}

TEST_CASE("eval checks every --input before any work: with none usable it prints nothing but the errors") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    for (const bool json_output : {false, true}) {
        std::vector<std::string> args = {"eval", "--run", tmp / "run", "--input", "", "--input", not_utf8};
        if (json_output) args.push_back("--json");
        const Outcome o = run(args);
        INFO(o.command, "\nstdout: ", o.out, "\nstderr: ", o.err);
        CHECK(o.code == 2);
        CHECK(o.out.empty());  // no held-out evaluation before (or after) the errors
        CHECK(count_lines(o.err) == 2);
        CHECK(o.err.find("--input ''") != std::string::npos);
    }
    // One good input: the bad one is reported first, then the evaluation and the prediction.
    const Outcome mixed =
        run({"eval", "--run", tmp / "run", "--show", "0", "--input", "", "--input", "a b c d"});
    CHECK(mixed.code == 2);
    CHECK(mixed.out.find("input: a b c d -> ") != std::string::npos);
}

TEST_CASE("eval reports an --input that is not valid UTF-8 by name and predicts the others") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    const std::vector<std::string> args = {"eval",    "--run",   tmp / "run", "--show",  "0",      "--input",
                                           "a b c d", "--input", not_utf8,    "--input", "e f g h"};
    const Outcome text = run(args);
    INFO(text.command, "\nstdout: ", text.out, "\nstderr: ", text.err);
    CHECK(text.code == 2);
    CHECK(count_lines(text.err) == 1);
    CHECK(text.err.find("--input 'a \\xff b c'") != std::string::npos);
    CHECK(text.err.find("not valid UTF-8") != std::string::npos);
    CHECK(text.out.find("input: 'a \\xff b c'   (not run") != std::string::npos);
    CHECK(text.out.find("input: a b c d -> ") != std::string::npos);
    CHECK(text.out.find("input: e f g h -> ") != std::string::npos);  // after the bad one
    CHECK(attograd::data::is_valid_utf8(text.out));
    CHECK(attograd::data::is_valid_utf8(text.err));

    std::vector<std::string> with_json = args;
    with_json.push_back("--json");
    const Outcome j = run(with_json);
    INFO(j.err);
    CHECK(j.code == 2);
    const json result = json::parse(j.out);
    REQUIRE(result["inputs"].size() == 3);
    CHECK(result["inputs"][0].contains("prediction"));
    CHECK(result["inputs"][2].contains("prediction"));
    CHECK(result["inputs"][1]["error"].get<std::string>().find("--input 'a \\xff b c'") != std::string::npos);
    CHECK(result["inputs"][1]["source"] == "a \xef\xbf\xbd b c");  // the bad byte as U+FFFD
}

TEST_CASE("inspect reports every bad --input by name and inspects the others, exit code 2") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    const auto longest = read_config(tmp / "run")["model"]["max_source_len"].get<std::int64_t>();
    std::string too_long = "a";
    for (std::int64_t i = 0; i < longest; ++i) too_long += " a";
    const std::vector<std::string> inputs = {not_utf8, "a b c d", "   ", too_long, "e f g h"};
    std::vector<std::string> args = {"inspect", "--run", tmp / "run"};
    for (const auto& input : inputs) args.insert(args.end(), {"--input", input});

    const Outcome term = run(args);
    INFO(term.command, "\nstdout: ", term.out, "\nstderr: ", term.err);
    CHECK(term.code == 2);
    CHECK(count_lines(term.err) == 3);  // one line per bad input
    CHECK(line_with(term.err, "--input 'a \\xff b c'").find("not valid UTF-8") != std::string::npos);
    CHECK(line_with(term.err, "--input '   '").find("empty") != std::string::npos);
    CHECK(
        line_with(term.err, "--input '" + too_long.substr(0, 20)).find(fmt::format("at most {}", longest)) !=
        std::string::npos);
    CHECK(term.out.find("example 1: a b c d -> ") != std::string::npos);
    CHECK(term.out.find("example 2: e f g h -> ") != std::string::npos);

    // A file format: the good inputs are written, the exit code still says that some were bad.
    args.insert(args.end(), {"--format", "json", "--to", tmp / "attention.json"});
    const Outcome file = run(args);
    CHECK(file.code == 2);
    const json written = json::parse(read_text(tmp / "attention.json"));
    REQUIRE(written["examples"].size() == 2);
    CHECK(written["examples"][1]["source"] == json::array({"e", "f", "g", "h"}));

    // Every input bad: one line each, and nothing written.
    const Outcome none = run({"inspect", "--run", tmp / "run", "--format", "json", "--to", tmp / "none.json",
                              "--input", not_utf8, "--input", "   "});
    CHECK(none.code == 2);
    CHECK(count_lines(none.err) == 2);
    CHECK(none.out.empty());
    CHECK_FALSE(fs::exists(tmp / "none.json"));
}

TEST_CASE(
    "a word-level --input splits words at every ASCII whitespace and refuses other control characters") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    const auto eval_input = [&](const std::string& input) {
        return run({"eval", "--run", tmp / "run", "--show", "0", "--json", "--input", input});
    };
    const Outcome plain_outcome = eval_input("a b c d e");
    require_ok(plain_outcome);
    const json plain = json::parse(plain_outcome.out)["inputs"][0];
    for (const std::string input : {"a\nb c d e", "a\tb\r\nc d e\n", "a\vb\fc d e", " a b\n\nc\td e "}) {
        const Outcome o = eval_input(input);
        INFO(o.command, "\nstderr: ", o.err);
        REQUIRE(o.code == 0);
        const json result = json::parse(o.out)["inputs"][0];
        CHECK(o.err.empty());  // no unknown tokens such as "a\nb"
        CHECK(result["source"] == plain["source"]);
        CHECK(result["prediction"] == plain["prediction"]);
    }
    // Other control characters (an escape sequence that would recolour the terminal, NUL's
    // neighbours, DEL) are refused, naming the input and the character.
    for (const auto& [input, shown] :
         std::vector<std::pair<std::string, std::string>>{{"a\x1b[31mb c d", "\\x1b"},
                                                          {"a\x01 b c d", "\\x01"},
                                                          {"a b c d\x7f", "\\x7f"},
                                                          {"a \xc2\x9b"
                                                           "31mb c d",
                                                           "\\u009b"},  // U+009B, the one-character CSI (C1)
                                                          {"a b\xc2\x85 c d", "\\u0085"}}) {  // U+0085, NEL
        const Outcome o = run({"eval", "--run", tmp / "run", "--show", "0", "--input", input});
        INFO(o.command, "\nstderr: ", o.err);
        CHECK(o.code == 2);
        CHECK(o.err.find("--input '" + attograd::data::escape_control(input) + "'") != std::string::npos);
        CHECK(o.err.find("control character " + shown) != std::string::npos);
        CHECK(o.err.find('\x1b') == std::string::npos);
        CHECK(o.err.find("\xc2\x9b") == std::string::npos);
        CHECK(o.err.find("\xc2\x85") == std::string::npos);
        CHECK(count_lines(o.err) == 1);
    }
}

TEST_CASE("a character-level --input refuses a tab or newline, which no training source holds") {
    TempDir tmp;
    train(tmp / "run", {"--task", "dates", "--steps", "1"});
    REQUIRE(attograd::data::make_task("dates")->info().char_level);
    for (const auto& [input, shown] :
         std::vector<std::pair<std::string, std::string>>{{"2020\t01 02", "\\t"}, {"3 May\n2001", "\\n"}}) {
        const Outcome o =
            run({"inspect", "--run", tmp / "run", "--input", input, "--input", "March 3, 2001"});
        INFO(o.command, "\nstderr: ", o.err);
        CHECK(o.code == 2);
        CHECK(count_lines(o.err) == 1);
        CHECK(o.err.find("control character " + shown) != std::string::npos);
        CHECK(o.out.find("example 1: March 3, 2001 -> ") != std::string::npos);
    }
}

TEST_CASE("train refuses a --data path that is not valid UTF-8 (config.json records it as text)") {
    TempDir tmp;
    std::string pairs;
    for (int i = 0; i < 40; ++i) pairs += fmt::format("x{} y z\tz y x{}\n", i, i);
    const fs::path file = tmp / "pairs\xff.tsv";
    write_text(file, pairs);
    check_refused(run({"train", "--data", file.string(), "--steps", "1", "--out", tmp / "run", "--quiet"}),
                  {"--data", "pairs\\xff.tsv", "not valid UTF-8"});
    CHECK_FALSE(fs::exists(tmp / "run"));
}

TEST_CASE("the default --warmup is cut to a shorter --steps silently, as --help says") {
    TempDir tmp;
    const Outcome o = run({"train", "--task", "reverse", "--steps", "5", "--out", tmp / "run", "--quiet"});
    INFO(o.err);
    CHECK(o.code == 0);
    CHECK(o.err.empty());
    const json defaults = read_config(tmp / "run")["train"];  // the task's defaults: not given
    REQUIRE(defaults["warmup"].get<std::int64_t>() >= 5);
    // The warm-up is cut so that the last step reaches the peak lr (metrics.csv's lr column).
    std::istringstream rows(read_text(tmp / "run/metrics.csv"));
    std::string row, last;
    while (std::getline(rows, row)) last = row;
    std::vector<std::string> cells;
    for (std::istringstream cell(last); std::getline(cell, row, ',');) cells.push_back(row);
    REQUIRE(cells.size() == 7);
    CHECK(std::stod(cells[5]) == doctest::Approx(defaults["lr"].get<double>()));

    const Outcome help = run({"train", "--help"});
    const std::string line = line_with(help.out, "--warmup");
    INFO(help.out);
    CHECK(line.find("the default silently") != std::string::npos);
}

namespace {

/// What bash makes of `word` (a shell_quote result): the bytes `printf %s WORD` writes.
std::string through_bash(const std::string& word) {
    TempDir tmp;
    const fs::path script = tmp / "word.sh";
    write_text(script, "printf %s " + word);
    std::FILE* pipe = ::popen(("bash " + script.string()).c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::string text;
    for (int c; (c = std::fgetc(pipe)) != EOF;) text += static_cast<char>(c);
    ::pclose(pipe);
    return text;
}

/// Whether `text` holds a control character (C0, DEL, C1) or bytes that are not UTF-8.
bool raw_control(const std::string& text, std::string_view allowed = "\n") {
    return !attograd::data::is_valid_utf8(text) || !attograd::data::first_control(text, allowed).empty();
}

}  // namespace

TEST_CASE("paths with control characters are escaped in every message and quoted for copy-paste") {
    TempDir tmp;
    for (const std::string& name :
         {std::string("esc\x1b[31mred"), std::string("nl\nname"), std::string("c1\xc2\x9bname"),
          std::string("bad\xffutf8"), std::string("it's \\ here\t")}) {
        const std::string out = tmp / name;
        INFO(attograd::data::escape_control(out));
        const Outcome first = run({"train", "--task", "reverse", "--steps", "1", "--out", out, "--quiet"});
        require_ok(first);
        const std::string wrote = line_with(first.out, "wrote ");
        CHECK(count_lines(first.out) == 2);  // the summary and "wrote ...", each one line
        CHECK_FALSE(raw_control(first.out));
        CHECK(wrote.find(attograd::data::escape_control(out)) != std::string::npos);
        // The suggested command names the same path once the shell has read it.
        const auto run_flag = wrote.rfind(" --run ");
        REQUIRE(run_flag != std::string::npos);
        const std::string quoted = wrote.substr(run_flag + 7);
        CHECK(through_bash(quoted) == out);
        // "holds a run already; ... --resume DIR": one escaped line.
        const Outcome again = run({"train", "--task", "reverse", "--steps", "1", "--out", out});
        check_refused(again, {"holds a run already", "--resume " + quoted});
        CHECK_FALSE(raw_control(again.err));
        // eval --run of a directory that is not there.
        const Outcome missing = run({"eval", "--run", out + "-nosuch\x1b[31m"});
        check_refused(missing, {"no such run directory"});
        CHECK_FALSE(raw_control(missing.err));
        // inspect --to under the odd name, and its "wrote" line.
        const Outcome inspect =
            run({"inspect", "--run", out, "--format", "json", "--to", out + "/inspect/maps\x1b.json"});
        require_ok(inspect);
        CHECK_FALSE(raw_control(inspect.out));
        CHECK(line_with(inspect.out, "wrote ") ==
              "wrote " + attograd::data::escape_control(out + "/inspect/maps\x1b.json"));
    }
    // A value CLI11 refuses is quoted escaped too.
    const Outcome steps = run({"train", "--task", "reverse", "--steps", "1\x1b[2J"});
    check_refused(steps, {"--steps"});
    CHECK_FALSE(raw_control(steps.err));
    // A plain path is suggested as it is; one with a control character in ANSI-C quotes, every
    // control character and quote escaped.
    for (const auto& [name, quoted] : std::vector<std::pair<std::string, std::string>>{
             {"plain-run_1", tmp / "plain-run_1"},
             {"a\x1b", "$'" + tmp.path().string() + "/a\\x1b'"},
             {"it's\n", "$'" + tmp.path().string() + "/it\\'s\\x0a'"}}) {
        const Outcome o = run({"train", "--task", "reverse", "--steps", "1", "--out", tmp / name, "--quiet"});
        require_ok(o);
        CHECK(line_with(o.out, "wrote ").ends_with("--run " + quoted));
    }
}
