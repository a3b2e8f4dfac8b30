// The attograd program's tasks: generators, alignments, dates, held-out splits, TSV data, vocabulary.
#include "data_task.hpp"
#include "dates.hpp"
#include "tasks.hpp"
#include "text.hpp"
#include "vocab.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

using namespace attograd;
using namespace attograd::cli;

namespace {

std::string key(const std::vector<std::string>& tokens) { return join(tokens, " "); }

}  // namespace

TEST_CASE("every bundled task: fixed held-out split, disjoint from training, lengths within its limits") {
    for (const auto& name : task_names()) {
        CAPTURE(name);
        const auto task = make_task(name);
        const auto again = make_task(name);
        REQUIRE(task->held_out().size() == GeneratedTask::held_out_size);
        std::set<std::string> held;
        for (std::size_t i = 0; i < task->held_out().size(); ++i) {
            const auto& example = task->held_out()[i];
            CHECK(example.source == again->held_out()[i].source);  // the same on every construction
            held.insert(key(example.source));
            CHECK(std::ssize(example.source) <= task->info().max_source_len);
            CHECK(std::ssize(example.target) <= task->info().max_target_len);
            const auto solved = task->solve(example.source);
            REQUIRE(solved.has_value());
            CHECK(*solved == example.target);
        }
        CHECK(held.size() == task->held_out().size());  // distinct sources
        Generator generator(42);
        for (int i = 0; i < 3000; ++i) {
            const Example example = task->train_example(generator);
            CHECK(held.count(key(example.source)) == 0);
        }
    }
}

TEST_CASE("same training seed gives the same examples, another seed other ones") {
    const auto task = make_task("reverse");
    Generator a(7), b(7), c(8);
    std::vector<std::string> from_a, from_b, from_c;
    for (int i = 0; i < 20; ++i) {
        from_a.push_back(key(task->train_example(a).source));
        from_b.push_back(key(task->train_example(b).source));
        from_c.push_back(key(task->train_example(c).source));
    }
    CHECK(from_a == from_b);
    CHECK(from_a != from_c);
}

TEST_CASE("alignments: copy diagonal, reverse anti-diagonal, sort t-th smallest, recall matching key") {
    const Example example{{"f", "a", "q", "c"}, {}};
    CHECK(*make_task("copy")->alignment(example) == std::vector<std::int64_t>{0, 1, 2, 3});
    CHECK(*make_task("reverse")->alignment(example) == std::vector<std::int64_t>{3, 2, 1, 0});
    // sorted: a (position 1), c (3), f (0), q (2)
    CHECK(*make_task("sort")->alignment(example) == std::vector<std::int64_t>{1, 3, 0, 2});
    const Example recall{{"c", "3", "a", "7", "f", "1", "?", "a"}, {"7"}};
    CHECK(*make_task("recall")->alignment(recall) == std::vector<std::int64_t>{2});
    CHECK(*make_task("recall")->solve(recall.source) == std::vector<std::string>{"7"});
    CHECK_FALSE(make_task("recall")->solve({"c", "3", "?"}).has_value());
    CHECK_FALSE(make_task("dates")->alignment(example).has_value());

    // Every generated example: the aligned source token is the target token.
    for (const char* name : {"copy", "reverse", "sort"}) {
        const auto task = make_task(name);
        for (const auto& e : task->held_out()) {
            const auto align = *task->alignment(e);
            REQUIRE(align.size() == e.target.size());
            for (std::size_t t = 0; t < align.size(); ++t)
                CHECK(e.source[static_cast<std::size_t>(align[t])] == e.target[t]);
        }
    }
    const auto recall_task = make_task("recall");
    for (const auto& e : recall_task->held_out()) {
        const auto k = static_cast<std::size_t>((*recall_task->alignment(e))[0]);
        CHECK(e.source[k] == e.source.back());
        CHECK(e.source[k + 1] == e.target[0]);
    }
}

TEST_CASE("sort sources hold distinct letters, recall keys are distinct") {
    const auto sort = make_task("sort");
    const auto recall = make_task("recall");
    for (const auto& e : sort->held_out()) {
        CHECK(std::set<std::string>(e.source.begin(), e.source.end()).size() == e.source.size());
    }
    for (const auto& e : recall->held_out()) {
        std::set<std::string> keys;
        for (std::size_t i = 0; i + 2 < e.source.size(); i += 2) keys.insert(e.source[i]);
        CHECK(keys.size() == (e.source.size() - 2) / 2);
    }
}

TEST_CASE("unknown task names are refused with the list of known ones") {
    CHECK_THROWS_WITH_AS(make_task("revrese"),
                         doctest::Contains("unknown task 'revrese' (known: copy, reverse"), ValueError);
}

TEST_CASE("calendar: leap years, month lengths and weekdays of known dates") {
    CHECK(is_leap_year(2000));
    CHECK_FALSE(is_leap_year(1900));
    CHECK(is_leap_year(1996));
    CHECK(days_in_month(2000, 2) == 29);
    CHECK(days_in_month(1999, 2) == 28);
    CHECK(days_in_month(1999, 4) == 30);
    CHECK(weekday({1999, 3, 25}) == 3);  // Thursday (the issue's example)
    CHECK(weekday({1970, 1, 1}) == 3);   // Thursday
    CHECK(weekday({2000, 1, 1}) == 5);   // Saturday
    CHECK(weekday({1969, 7, 20}) == 6);  // Sunday (Moon landing)
    CHECK(weekday({2024, 2, 29}) == 3);  // Thursday
    CHECK(to_iso({1999, 3, 25}) == "1999-03-25");
}

TEST_CASE("dates: the issue's formats are written as stated and parse back") {
    const Date date{1999, 3, 25};
    std::set<std::string> written;
    for (int f = 0; f < date_format_count(); ++f) written.insert(format_date(date, f));
    for (const char* expected :
         {"thursday, march 25 1999", "25/03/99", "Mar 25 1999", "1999.03.25", "25 March 1999",
          "March 25th, 1999", "the 25th of march 1999", "25-MAR-1999", "Thu, 25 Mar 1999"}) {
        CAPTURE(expected);
        CHECK(written.count(expected) == 1);
        const auto parsed = parse_date(expected);
        REQUIRE(parsed.has_value());
        CHECK(*parsed == date);
    }
    CHECK(written.size() == static_cast<std::size_t>(date_format_count()));  // all formats differ
}

TEST_CASE("dates: every format of many random dates parses back to the same date") {
    Generator generator(3);
    for (int i = 0; i < 400; ++i) {
        Date date{static_cast<int>(generator.randint(1950, 2050)), static_cast<int>(generator.randint(1, 13)),
                  1};
        date.day = static_cast<int>(generator.randint(1, days_in_month(date.year, date.month) + 1));
        for (int f = 0; f < date_format_count(); ++f) {
            const std::string text = format_date(date, f);
            CAPTURE(text);
            const auto parsed = parse_date(text);
            REQUIRE(parsed.has_value());
            CHECK(*parsed == date);
        }
    }
}

TEST_CASE("dates: wrong weekdays, impossible dates and junk do not parse") {
    CHECK_FALSE(parse_date("friday, march 25 1999").has_value());
    CHECK_FALSE(parse_date("30/02/99").has_value());
    CHECK_FALSE(parse_date("29 feb 1999").has_value());
    CHECK(parse_date("29 feb 2000").has_value());
    CHECK_FALSE(parse_date("march 1999").has_value());
    CHECK_FALSE(parse_date("25 march 1999 !").has_value());
    CHECK_FALSE(parse_date("March 25rd, 1999").has_value());
    CHECK(*parse_date("05/06/49") == Date{2049, 6, 5});  // two-digit years: 1950-2049
    CHECK(*parse_date("05/06/50") == Date{1950, 6, 5});
}

TEST_CASE("dates task: character level with ISO targets, weekday names in sources are right") {
    const auto task = make_task("dates");
    CHECK(task->info().char_level);
    CHECK(task->tokenize("25 mar") == std::vector<std::string>{"2", "5", " ", "m", "a", "r"});
    int with_weekday = 0;
    for (const auto& e : task->held_out()) {
        CHECK(e.target.size() == 10);
        const std::string source = join(e.source, "");
        const auto date = parse_date(source);  // also checks any weekday named
        REQUIRE(date.has_value());
        CHECK(join(e.target, "") == to_iso(*date));
        with_weekday += source.find("day") != std::string::npos ? 1 : 0;
    }
    CHECK(with_weekday > 20);
}

TEST_CASE("tsv: pairs, whitespace or character tokens, blank lines and CRLF") {
    const auto examples = parse_tsv("the cat\tle chat\r\n\nhi\tsalut\n", false, "f.tsv");
    REQUIRE(examples.size() == 2);
    CHECK(examples[0].source == std::vector<std::string>{"the", "cat"});
    CHECK(examples[0].target == std::vector<std::string>{"le", "chat"});
    CHECK(examples[1].target == std::vector<std::string>{"salut"});
    const auto chars = parse_tsv("h\u00e9\tab\n", true, "f.tsv");
    CHECK(chars[0].source == std::vector<std::string>{"h", "\u00e9"});
    CHECK(parse_tsv(to_tsv(examples, false), false, "again").size() == 2);
}

TEST_CASE("tsv: malformed lines name the file and line, an empty file is an error") {
    CHECK_THROWS_WITH_AS(parse_tsv("a\tb\nno tab here\n", false, "f.tsv"),
                         doctest::Contains("f.tsv:2: expected"), ValueError);
    CHECK_THROWS_WITH_AS(parse_tsv("a\tb\n\na\tb\tc\n", false, "f.tsv"),
                         doctest::Contains("f.tsv:3: expected 'source<TAB>target', found more than one tab"),
                         ValueError);
    CHECK_THROWS_WITH_AS(parse_tsv("\tb\n", false, "f.tsv"),
                         doctest::Contains("f.tsv:1: the source is empty"), ValueError);
    CHECK_THROWS_WITH_AS(parse_tsv("a\t  \n", false, "f.tsv"),
                         doctest::Contains("f.tsv:1: the target is empty"), ValueError);
    CHECK_THROWS_WITH_AS(parse_tsv("", false, "f.tsv"), doctest::Contains("f.tsv: no examples"), ValueError);
    CHECK_THROWS_WITH_AS(parse_tsv("\n \n", false, "f.tsv"), doctest::Contains("f.tsv: no examples"),
                         ValueError);
    CHECK_THROWS_WITH_AS(read_tsv("/nonexistent/x.tsv", false), doctest::Contains("/nonexistent/x.tsv"),
                         IoError);
}

TEST_CASE("data task: held-out sources never in training, vocabulary from the file") {
    std::vector<Example> examples;
    for (int i = 0; i < 50; ++i) {
        examples.push_back({{fmt::format("w{}", i % 25), "x"}, {fmt::format("y{}", i % 25)}});
    }
    const auto task = make_data_task(examples, false);
    std::set<std::string> held;
    for (const auto& e : task->held_out()) held.insert(key(e.source));
    CHECK(held.size() == 2);              // 10 % of 25 distinct sources
    CHECK(task->held_out().size() == 4);  // each held-out source appears twice
    Generator generator(1);
    for (int i = 0; i < 500; ++i) CHECK(held.count(key(task->train_example(generator).source)) == 0);
    const auto symbols = task->symbols();
    CHECK(std::count(symbols.begin(), symbols.end(), "x") == 1);
    CHECK(std::count(symbols.begin(), symbols.end(), "y3") == 1);
    CHECK_FALSE(task->alignment(examples[0]).has_value());
    CHECK_THROWS_WITH_AS(make_data_task({{{"a"}, {"b"}}, {{"a"}, {"c"}}}, false),
                         doctest::Contains("at least 2"), ValueError);
}

TEST_CASE("vocabulary: special tokens first, unknown tokens map to <unk> and are reported, JSON round trip") {
    const Vocabulary vocab({"b", "a", "b", "<eos>"});
    CHECK(vocab.size() == 6);
    CHECK(vocab.token(0) == "<pad>");
    CHECK(vocab.id("b") == 4);
    CHECK(vocab.id("a") == 5);
    std::vector<std::string> unknown;
    CHECK(vocab.encode({"a", "zz", "b"}, &unknown) == std::vector<std::int64_t>{5, Vocabulary::unk_id, 4});
    CHECK(unknown == std::vector<std::string>{"zz"});
    CHECK(vocab.decode({Vocabulary::bos_id, 5, 4, Vocabulary::eos_id, 5}) ==
          std::vector<std::string>{"a", "b"});
    const Vocabulary back = Vocabulary::from_json(nlohmann::json::parse(vocab.to_json().dump()));
    CHECK(back.tokens() == vocab.tokens());
    CHECK_THROWS_WITH_AS(vocab.token(6), doctest::Contains("vocabulary: id 6"), IndexError);
    CHECK_THROWS_WITH_AS(Vocabulary::from_json(nlohmann::json::parse(R"(["<pad>","x"])")),
                         doctest::Contains("special token <bos>"), ValueError);
    CHECK_THROWS_WITH_AS(
        Vocabulary::from_json(nlohmann::json::parse(R"(["<pad>","<bos>","<eos>","<unk>","a","a"])")),
        doctest::Contains("'a' appears twice"), ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary::from_json(nlohmann::json::parse("{}")), doctest::Contains("JSON array"),
                         ValueError);
}
