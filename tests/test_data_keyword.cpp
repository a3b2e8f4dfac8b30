// data/keyword: the topic of the one cue word decides the label, the alignment is the cue's
// position, keyword spreads the cue over every position and keyword-end puts it last.
#include "data/keyword.hpp"
#include "data/text.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>

using namespace attograd;
using namespace attograd::data;

namespace {

std::vector<std::string> words(const std::string& text) { return split_whitespace(text); }

}  // namespace

TEST_CASE("keyword: the one cue word's topic is the label and its position the alignment") {
    const auto task = make_keyword_task();
    CHECK(task->info().name == "keyword");
    CHECK(task->info().max_target_len == 1);
    const auto sport = words("the of goal then so");
    CHECK(*task->solve(sport) == std::vector<std::string>{"sport"});
    CHECK(*task->alignment(Example{sport, {"sport"}}) == std::vector<std::int64_t>{2});
    CHECK(*task->solve(words("rain")) == std::vector<std::string>{"weather"});
    CHECK(*task->solve(words("a a piano")) == std::vector<std::string>{"music"});
    CHECK(*task->solve(words("soup a a")) == std::vector<std::string>{"food"});
    for (const char* text : {"the of then so",      // no cue word
                             "the goal then song",  // two cue words
                             "the goal goal",       // the same cue twice
                             "the goal sport",      // a label is not a source word
                             "the goal banana"}) {  // a word of neither kind
        CHECK_MESSAGE(!task->solve(words(text)), text);
        CHECK_MESSAGE(!task->alignment(Example{words(text), {}}), text);
    }
}

TEST_CASE("keyword: held-out examples are solved, 24 words with one cue at every position, all topics") {
    const auto task = make_keyword_task();
    REQUIRE(task->held_out().size() == 500);
    std::set<std::int64_t> positions;
    std::map<std::string, int> labels;
    for (const auto& e : task->held_out()) {
        CHECK(e.source.size() == 24);
        REQUIRE(task->solve(e.source));
        CHECK(*task->solve(e.source) == e.target);
        positions.insert(task->alignment(e)->front());
        ++labels[e.target.front()];
    }
    CHECK(positions.size() == 24);
    REQUIRE(labels.size() == 4);
    for (const auto& [label, count] : labels) CHECK_MESSAGE(count > 80, label);  // about 125 each
    std::set<std::string> symbols;
    for (const auto& s : task->symbols()) CHECK(symbols.insert(s).second);  // no duplicates
    for (const auto& e : task->held_out())
        for (const auto& w : e.source) CHECK(symbols.count(w) == 1);
}

TEST_CASE("keyword-end: the cue word is always the last, training never draws a held-out source") {
    const auto task = make_keyword_end_task();
    CHECK(task->info().name == "keyword-end");
    std::set<std::vector<std::string>> held;
    for (const auto& e : task->held_out()) {
        CHECK(*task->alignment(e) == std::vector<std::int64_t>{23});
        held.insert(e.source);
    }
    Generator gen(5);
    for (const auto& e : task->train_examples(300, gen)) {
        CHECK(*task->alignment(e) == std::vector<std::int64_t>{23});
        CHECK(held.count(e.source) == 0);
    }
    // a different split from keyword's
    CHECK(make_keyword_task()->held_out().front().source != task->held_out().front().source);
}
