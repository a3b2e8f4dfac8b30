// data/example_vocabulary: vocabularies of the sources, the targets or both, with min_freq and
// max_tokens.
#include "data/example_vocabulary.hpp"

#include "core/error.hpp"

#include <doctest/doctest.h>

using namespace attograd;
using namespace attograd::data;

namespace {

using Tokens = std::vector<std::string>;

// "the" x3, "cat" x2, "sat" x1 in the sources; "le" x3, "chat" x2, "the" x1 in the targets.
const std::vector<Example> examples{
    {{"the", "cat"}, {"le", "chat"}},
    {{"the", "cat", "sat"}, {"le", "chat", "the"}},
    {{"the"}, {"le"}},
};

// The tokens after the 4 special ones.
Tokens words(const Vocabulary& vocab) { return Tokens(vocab.tokens().begin() + 4, vocab.tokens().end()); }

}  // namespace

TEST_CASE("build_vocabulary: one side or both, most frequent first, ties in byte order") {
    CHECK(words(build_vocabulary(examples, ExampleSide::Source)) == Tokens{"the", "cat", "sat"});
    CHECK(words(build_vocabulary(examples, ExampleSide::Target)) == Tokens{"le", "chat", "the"});
    // Both: the 4, le 3, cat 2, chat 2 (byte order), sat 1.
    CHECK(words(build_vocabulary(examples, ExampleSide::Both)) == Tokens{"the", "le", "cat", "chat", "sat"});
}

TEST_CASE("build_vocabulary: min_freq and max_tokens leave rare words to <unk>") {
    const Vocabulary frequent = build_vocabulary(examples, ExampleSide::Source, {.min_freq = 2});
    CHECK(words(frequent) == Tokens{"the", "cat"});
    CHECK(frequent.encode({"the", "sat"}) == std::vector<std::int64_t>{4, Vocabulary::unk_id});
    // max_tokens counts the special tokens: 5 ids leave room for one word.
    CHECK(words(build_vocabulary(examples, ExampleSide::Target, {.max_tokens = 5})) == Tokens{"le"});
    CHECK_THROWS_WITH_AS(build_vocabulary(examples, ExampleSide::Source, {.min_freq = 0}),
                         doctest::Contains("min_freq must be >= 1, got 0"), ValueError);
    // Both: sequence 4 is example 1's target (3 examples), which holds a reserved token.
    const std::vector<Example> reserved{{{"a"}, {"b"}}, {{"c"}, {"d", "<unk>"}}};
    CHECK_THROWS_WITH_AS(build_vocabulary(reserved, ExampleSide::Both),
                         doctest::Contains("sequence 3 position 1 is '<unk>'"), ValueError);
}
