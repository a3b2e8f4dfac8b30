// data/tsv: TSV datasets at word and character level, their errors with line numbers, the
// reserved-token rule, and user examples as a task with a fixed held-out split.
#include "core/error.hpp"
#include "data/text.hpp"
#include "data/tsv.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

using namespace attograd;
using namespace attograd::data;

namespace {

std::string key(const std::vector<std::string>& tokens) { return join(tokens, " "); }

using Tokens = std::vector<std::string>;

}  // namespace

TEST_CASE("tsv: pairs, whitespace or character tokens, blank lines and CRLF") {
    // Lines that end in \r alone are one line to the parser: said so, not "more than one tab".
    CHECK_THROWS_WITH_AS(TsvDataset::parse("a\tb\rc\td\r", false, "f.tsv"),
                         doctest::Contains("f.tsv:1: holds a carriage return inside the line"), ValueError);
    const auto words = TsvDataset::parse("the cat\tle chat\r\n\nhi\tsalut\n", false, "f.tsv");
    REQUIRE(words.size() == 2);
    CHECK_FALSE(words.chars());
    CHECK(words[0].source == Tokens{"the", "cat"});
    CHECK(words[0].target == Tokens{"le", "chat"});
    CHECK(words[1].target == Tokens{"salut"});
    CHECK(words.symbols() == Tokens{"cat", "chat", "hi", "le", "salut", "the"});
    CHECK_THROWS_WITH_AS(words[2], doctest::Contains("TsvDataset: index 2 outside [0, 2)"), IndexError);
    const auto chars = TsvDataset::parse("h\u00e9 x\tab", true, "f.tsv");  // no final newline
    CHECK(chars.chars());
    CHECK(chars[0].source == Tokens{"h", "\u00e9", " ", "x"});
    CHECK(chars[0].target == Tokens{"a", "b"});
    // U+FEFF past the start of the file is an invisible character in a token: refused, as the
    // other format characters are (a first token that begins with it, found by fuzz_tsv, too).
    CHECK_THROWS_WITH_AS(TsvDataset::parse(" \uFEFF\U0001F600 \t2", false, "f.tsv"),
                         doctest::Contains("f.tsv:1: the source token '\\ufeff"), ValueError);
    CHECK_THROWS_WITH_AS(TsvDataset::parse("x\tb\n\uFEFFa\tb", true, "f.tsv"),
                         doctest::Contains("f.tsv:2: the source token '\\ufeff"), ValueError);
    for (const auto* dataset : {&words, &chars}) {  // to_tsv writes what parse reads back
        const auto again =
            TsvDataset::parse(to_tsv(dataset->examples(), dataset->chars()), dataset->chars(), "again");
        CHECK(again.examples() == dataset->examples());
    }
}

TEST_CASE("tsv: malformed lines name the file and line, an empty file is an error") {
    CHECK_THROWS_WITH_AS(TsvDataset::parse("a\tb\nno tab here\n", false, "f.tsv"),
                         doctest::Contains("f.tsv:2: expected 'source<TAB>target', found no tab"),
                         ValueError);
    CHECK_THROWS_WITH_AS(TsvDataset::parse("a\tb\n\na\tb\tc\n", false, "f.tsv"),
                         doctest::Contains("f.tsv:3: expected 'source<TAB>target', found more than one tab"),
                         ValueError);
    CHECK_THROWS_WITH_AS(TsvDataset::parse("\tb\n", false, "f.tsv"),
                         doctest::Contains("f.tsv:1: the source is empty"), ValueError);
    CHECK_THROWS_WITH_AS(TsvDataset::parse("a\t  \n", false, "f.tsv"),
                         doctest::Contains("f.tsv:1: the target is empty"), ValueError);
    CHECK_THROWS_WITH_AS(TsvDataset::parse("a\tb\n\xff\tb\n", false, "f.tsv"),
                         doctest::Contains("f.tsv:2: not valid UTF-8"), ValueError);
    CHECK_THROWS_WITH_AS(TsvDataset::parse("", false, "f.tsv"), doctest::Contains("f.tsv: no examples"),
                         ValueError);
    CHECK_THROWS_WITH_AS(TsvDataset::parse("\n \r\n", true, "f.tsv"), doctest::Contains("f.tsv: no examples"),
                         ValueError);
}

TEST_CASE("tsv: a word-level file holding a reserved token is refused with its line, side and token") {
    for (const char* reserved : {"<pad>", "<bos>", "<eos>", "<unk>"}) {
        CAPTURE(reserved);
        CHECK_THROWS_WITH_AS(
            TsvDataset::parse(fmt::format("a b\tb a\n\nc {}\tx\n", reserved), false, "f.tsv"),
            doctest::Contains(
                fmt::format("f.tsv:3: the source holds '{}', a reserved token", reserved).c_str()),
            ValueError);
        CHECK_THROWS_WITH_AS(
            TsvDataset::parse(fmt::format("a\t{} b\n", reserved), false, "f.tsv"),
            doctest::Contains(fmt::format("f.tsv:1: the target holds '{}'", reserved).c_str()), ValueError);
    }
    // Only whole words: these are ordinary tokens.
    CHECK(TsvDataset::parse("<eos>x <Pad>\t<unk\n", false, "f.tsv").size() == 1);
    // At character level every token is one character, so "<eos>" is five ordinary ones.
    const auto chars = TsvDataset::parse("<eos>\t<pad>\n", true, "f.tsv");
    CHECK(chars[0].source == Tokens{"<", "e", "o", "s", ">"});
    CHECK(chars[0].target == Tokens{"<", "p", "a", "d", ">"});
}

TEST_CASE("tsv: read names the path of a missing file or a directory") {
    CHECK_THROWS_WITH_AS(TsvDataset::read("/nonexistent/x.tsv", false),
                         doctest::Contains("/nonexistent/x.tsv"), IoError);
    CHECK_THROWS_WITH_AS(TsvDataset::read("/tmp", false), doctest::Contains("is a directory"), IoError);
    const auto path = std::filesystem::temp_directory_path() / fmt::format("attograd_tsv_{}.tsv", ::getpid());
    std::ofstream(path) << "x y\ty x\n";
    const auto dataset = TsvDataset::read(path, false);
    std::filesystem::remove(path);
    REQUIRE(dataset.size() == 1);
    CHECK(dataset[0].target == Tokens{"y", "x"});
}

TEST_CASE("data task: held-out sources never in training, the split fixed, vocabulary from the file") {
    std::string text;
    for (int i = 0; i < 50; ++i) text += fmt::format("w{} x\ty{}\n", i % 25, i % 25);
    const auto dataset = TsvDataset::parse(text, false, "f.tsv");
    const auto task = make_data_task(dataset);
    CHECK(task->info().name == "data");
    std::set<std::string> held;
    for (const auto& e : task->held_out()) held.insert(key(e.source));
    CHECK(held.size() == 2);                                         // 10 % of 25 distinct sources
    CHECK(task->held_out().size() == 4);                             // each held-out source appears twice
    CHECK(make_data_task(dataset)->held_out() == task->held_out());  // fixed, whatever else happens
    Generator generator(1);
    std::set<std::string> drawn;
    for (int i = 0; i < 500; ++i) {
        const auto source = key(task->train_example(generator).source);
        CHECK(held.count(source) == 0);
        drawn.insert(source);
    }
    CHECK(drawn.size() == 23);  // every training source is drawn
    const auto symbols = task->symbols();
    CHECK(std::count(symbols.begin(), symbols.end(), "x") == 1);
    CHECK(std::count(symbols.begin(), symbols.end(), "y3") == 1);
    CHECK_FALSE(task->alignment(dataset[0]).has_value());
    CHECK_THROWS_WITH_AS(make_data_task(TsvDataset::parse("a\tb\na\tc\n", false, "f.tsv")),
                         doctest::Contains("at least 2"), ValueError);
}

TEST_CASE("saved data task: only the held-out examples, no training draws") {
    const auto task = make_saved_data_task({{{"a"}, {"b"}}}, false, {"a", "b"});
    CHECK(task->held_out().size() == 1);
    CHECK(task->symbols() == Tokens{"a", "b"});
    Generator generator(0);
    CHECK_THROWS_WITH_AS(task->train_example(generator), doctest::Contains("only its held-out"), ValueError);
}

TEST_CASE("tsv: a UTF-8 byte order mark at the start of the file is not part of the first token") {
    const std::string bom = "\xEF\xBB\xBF";
    for (const bool chars : {false, true}) {
        const auto with = TsvDataset::parse(bom + "ab\tba\ncd\tdc\n", chars, "bom.tsv");
        const auto without = TsvDataset::parse("ab\tba\ncd\tdc\n", chars, "bom.tsv");
        REQUIRE(with.size() == 2);
        CHECK(with[0].source == without[0].source);
        CHECK(with.symbols() == without.symbols());
    }
    // Only a leading one is a BOM: inside a line U+FEFF is an invisible character, refused.
    CHECK_THROWS_WITH_AS(
        TsvDataset::parse("a" + bom + "\tb\n", false, "bom.tsv"),
        doctest::Contains("bom.tsv:1: the source token 'a\\ufeff' holds the control character"), ValueError);
    // A file holding only a BOM has no examples.
    CHECK_THROWS_WITH_AS(TsvDataset::parse(bom + "\n", false, "bom.tsv"), doctest::Contains("no examples"),
                         ValueError);
}

TEST_CASE("tsv: a token holding a control character is refused with its line number") {
    CHECK_THROWS_WITH_AS(TsvDataset::parse("a b\tb a\nc" + std::string(1, '\0') + "d\te\n", false, "f.tsv"),
                         doctest::Contains("f.tsv:2: the source token 'c\\x00d' holds the control character"),
                         ValueError);
    CHECK_THROWS_WITH_AS(TsvDataset::parse("ab\tb\x01\n", true, "c.tsv"),
                         doctest::Contains("c.tsv:1: the target token '\\x01'"), ValueError);
    CHECK_THROWS_WITH_AS(
        TsvDataset::parse("a\xc2\x9b"
                          "b\tb\n",
                          false, "w.tsv"),
        doctest::Contains("w.tsv:1: the source token 'a\\u009bb' holds the control character "
                          "\\u009b"),
        ValueError);
    // A space is an ordinary token at character level.
    CHECK(TsvDataset::parse("a b\tb a\n", true, "c.tsv")[0].source == Tokens{"a", " ", "b"});
}

TEST_CASE("tsv: a token holding U+2028 or U+2029 is refused with its line number") {
    CHECK_THROWS_WITH_AS(
        TsvDataset::parse("a b\tb a\nc\xe2\x80\xa8"
                          "d\te\n",
                          false, "f.tsv"),
        doctest::Contains("f.tsv:2: the source token 'c\\u2028d' holds the control character "
                          "\\u2028"),
        ValueError);
    CHECK_THROWS_WITH_AS(TsvDataset::parse("ab\tb\xe2\x80\xa9\n", true, "c.tsv"),
                         doctest::Contains("c.tsv:1: the target token '\\u2029' holds the control character"),
                         ValueError);
}

TEST_CASE("tsv: a word holding a no-break or other Unicode space is refused with its line number") {
    CHECK_THROWS_WITH_AS(TsvDataset::parse("a b\tb a\na\u00a0b c\tc a\n", false, "nb.tsv"),
                         doctest::Contains("nb.tsv:2: the source token 'a\\u00a0b' holds the space \\u00a0"),
                         ValueError);
    // At character level each is a token of its own.
    CHECK(TsvDataset::parse("a\u00a0b\tb a\ncd\tdc\n", true, "c.tsv").examples().front().source.size() == 3);
}
