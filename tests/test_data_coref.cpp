// data/coref: the referent of "it" by the adjective's kind, the alignment on the referent, and
// a held-out split that no shortcut (position, noun kind alone) answers.
#include "data/coref.hpp"
#include "data/text.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

using namespace attograd;
using namespace attograd::data;

namespace {

std::vector<std::string> words(const std::string& text) { return split_whitespace(text); }

}  // namespace

TEST_CASE("coref: the adjective decides which noun \"it\" is, in active and passive sentences") {
    const auto task = make_coref_task();
    CHECK(task->info().name == "coref");
    const auto tired = words("the animal didn't cross the street because it was too tired");
    const auto wide = words("the animal didn't cross the street because it was too wide");
    CHECK(*task->solve(tired) == std::vector<std::string>{"animal"});
    CHECK(*task->alignment(Example{tired, {"animal"}}) == std::vector<std::int64_t>{1});
    CHECK(*task->solve(wide) == std::vector<std::string>{"street"});
    CHECK(*task->alignment(Example{wide, {"street"}}) == std::vector<std::int64_t>{5});
    const auto passive = words("the road could not be crossed by the dog because it was too scared");
    CHECK(*task->solve(passive) == std::vector<std::string>{"dog"});
    CHECK(*task->alignment(Example{passive, {"dog"}}) == std::vector<std::int64_t>{8});
    CHECK(*task->solve(words("the river was never crossed by the cow because it was too icy")) ==
          std::vector<std::string>{"river"});
}

TEST_CASE("coref: sentences that are not of the task's form have no answer") {
    const auto task = make_coref_task();
    for (const char* text : {
             "the animal didn't cross the street because it was too green",  // an adjective of neither kind
             "the animal didn't cross the street because he was too tired",  // no "it"
             "the dog didn't cross the cat because it was too tired",        // two animate nouns
             "the street didn't cross the road because it was too wide",     // two places
             "the animal was too tired",                                     // too short
             "the animal didn't cross it because it was too tired",          // no place
         }) {
        CAPTURE(text);
        CHECK_FALSE(task->solve(words(text)).has_value());
        CHECK_FALSE(task->alignment(Example{words(text), {}}).has_value());
    }
}

TEST_CASE("coref: no shortcut answers the held-out split, and every word is a symbol") {
    const auto task = make_coref_task();
    const auto symbols = task->symbols();
    const std::set<std::string> vocabulary(symbols.begin(), symbols.end());
    CHECK(vocabulary.size() == symbols.size());
    std::int64_t first_noun = 0, animate = 0, passive = 0;
    const std::set<std::string> animates{"animal", "dog",  "cat",   "horse", "cow",
                                         "boy",    "girl", "child", "man",   "woman"};
    for (const Example& e : task->held_out()) {
        for (const auto& w : e.source) CHECK(vocabulary.count(w) == 1);
        CHECK(vocabulary.count(e.target.front()) == 1);
        const auto position = task->alignment(e)->front();
        CHECK(e.source[static_cast<std::size_t>(position)] == e.target.front());
        first_noun += position == 1;
        animate += animates.count(e.target.front());
        passive += std::find(e.source.begin(), e.source.end(), "by") != e.source.end();
        CHECK(std::ssize(e.source) >= task->info().min_source_len);
    }
    // Half the answers are the first noun, half the animate one, half the sentences passive:
    // neither the position nor the noun's kind alone gets much more than half right.
    const auto n = std::ssize(task->held_out());
    for (const std::int64_t count : {first_noun, animate, passive}) {
        CHECK(count * 100 > n * 40);
        CHECK(count * 100 < n * 60);
    }
}
