// The bundled tasks (data/task, data/toy_tasks, data/dates): seeded generators, fixed
// held-out splits, alignments, solvers, the calendar and the date formats.
#include "core/error.hpp"
#include "data/dates.hpp"
#include "data/task.hpp"
#include "data/text.hpp"
#include "data/vocabulary.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace attograd;
using namespace attograd::data;

namespace {

std::string key(const std::vector<std::string>& tokens) { return join(tokens, " "); }

/// Whether `target` is `source` shifted by one token (next-token prediction: the language-model
/// tasks, which have no solver since the next token is not a function of the source).
bool is_next_token(const std::vector<std::string>& source, const std::vector<std::string>& target) {
    return source.size() == target.size() && !source.empty() &&
           std::equal(source.begin() + 1, source.end(), target.begin());
}

}  // namespace

TEST_CASE("every bundled task: fixed held-out split, disjoint from training, lengths within its limits") {
    for (const auto& name : task_names()) {
        CAPTURE(name);
        const auto task = make_task(name);
        const auto again = make_task(name);
        // charlm's held-out windows are those its held-out texts give (fewer than 500)
        if (dynamic_cast<const GeneratedTask*>(task.get()) != nullptr)
            REQUIRE(task->held_out().size() == GeneratedTask::held_out_size);
        REQUIRE(!task->held_out().empty());
        std::set<std::string> held;
        for (std::size_t i = 0; i < task->held_out().size(); ++i) {
            const auto& example = task->held_out()[i];
            CHECK(example.source == again->held_out()[i].source);  // the same on every construction
            held.insert(key(example.source));
            CHECK(std::ssize(example.source) <= task->info().max_source_len);
            CHECK(std::ssize(example.target) <= task->info().max_target_len);
            const auto solved = task->solve(example.source);
            if (solved) {
                CHECK(*solved == example.target);
            } else {
                CHECK(is_next_token(example.source, example.target));
            }
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
    CHECK(weekday({1999, 3, 25}) == 3);  // Thursday (the example)
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

TEST_CASE("each task's listed example is one its solver agrees with") {
    for (const auto& name : task_names()) {
        CAPTURE(name);
        const auto task = make_task(name);
        const std::string& example = task->info().example;
        const auto arrow = example.find(" -> ");
        REQUIRE(arrow != std::string::npos);
        const auto source = task->tokenize(example.substr(0, arrow));
        const auto target = task->tokenize(example.substr(arrow + 4));
        const auto solved = task->solve(source);
        if (solved) {
            CHECK(*solved == target);
        } else {
            CHECK(is_next_token(source, target));
        }
        CHECK(task->detokenize(target) == example.substr(arrow + 4));
    }
}

TEST_CASE("each task's symbols make a vocabulary that encodes every held-out example without <unk>") {
    for (const auto& name : task_names()) {
        CAPTURE(name);
        const auto task = make_task(name);
        const Vocabulary vocab(task->symbols());  // throws if a symbol were reserved
        CHECK(vocab.size() == Vocabulary::reserved_count + std::ssize(task->symbols()));
        for (const auto& e : task->held_out()) {
            std::vector<std::string> unknown;
            (void)vocab.encode(e.source, &unknown);
            (void)vocab.encode(e.target, &unknown);
            CHECK(unknown.empty());
        }
    }
}

TEST_CASE("training draws follow the generator: the same state repeats, later draws differ") {
    const auto task = make_task("dates");
    Generator generator(11);
    const Example first = task->train_example(generator);
    Generator again(11);
    CHECK(task->train_example(again) == first);
    bool differs = false;
    for (int i = 0; i < 10; ++i) differs = differs || !(task->train_example(generator) == first);
    CHECK(differs);
}

TEST_CASE("train_examples(n) draws train_example n times from the generator") {
    const auto task = make_task("sort");
    Generator generator(4), by_hand(4);
    const std::vector<Example> examples = task->train_examples(5, generator);
    REQUIRE(examples.size() == 5);
    for (const Example& e : examples) CHECK(e == task->train_example(by_hand));
    CHECK(generator.next() == by_hand.next());
    CHECK(task->train_examples(0, generator).empty());
}

TEST_CASE("tokenize drops a leading UTF-8 byte order mark at character and word level") {
    const std::string bom = "\xEF\xBB\xBF";
    for (const std::string name : {"sort", "dates"}) {
        const auto task = make_task(name);
        CHECK(task->tokenize(bom + "cab") == task->tokenize("cab"));
    }
    CHECK(strip_bom(bom + bom + "x") == bom + "x");  // only one, and only at the start
    CHECK(strip_bom("x" + bom) == "x" + bom);
    CHECK(strip_bom("\xEF\xBB").size() == 2);  // a partial mark is not one
}
