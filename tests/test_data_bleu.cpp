// data/bleu: corpus BLEU computed by hand and by nltk (tests/fixtures/bleu.json), and the 13a
// tokeniser.
#include "data/bleu.hpp"

#include "core/error.hpp"
#include "fixtures.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

using namespace attograd;
using namespace attograd::data;

namespace {

using Tokens = std::vector<std::string>;

Tokens words(const std::string& text) {
    std::istringstream in(text);
    Tokens out;
    for (std::string word; in >> word;) out.push_back(word);
    return out;
}

}  // namespace

TEST_CASE("corpus_bleu: two references, clipped counts and the closest reference length, by hand") {
    // hypothesis "the cat sat on the mat" (6 tokens)
    // ref 1 "the cat is on the mat" (6), ref 2 "there is a cat on the mat" (7)
    // unigrams: the x2 (clip 2, ref 1 has two), cat, sat (0), on, mat -> 5 / 6
    // bigrams: the cat, cat sat, sat on, on the, the mat -> the cat, on the, the mat match -> 3 / 5
    // trigrams: the cat sat, cat sat on, sat on the, on the mat -> on the mat -> 1 / 4
    // 4-grams: the cat sat on, cat sat on the, sat on the mat -> none -> 0 / 3
    // c = 6, closest r = 6 -> BP = exp(1 - 6/6) = 1
    // BLEU-3 = (5/6 * 3/5 * 1/4)^(1/3) = (1/8)^(1/3) = 0.5; BLEU-4 = 0 (a zero precision).
    const std::vector<std::vector<Tokens>> references{
        {words("the cat is on the mat"), words("there is a cat on the mat")}};
    const std::vector<Tokens> hypotheses{words("the cat sat on the mat")};
    const BleuScore bleu3 = corpus_bleu(references, hypotheses, {.max_order = 3});
    CHECK(bleu3.score == doctest::Approx(0.5).epsilon(1e-14));
    CHECK(bleu3.matches == std::array<std::int64_t, 4>{5, 3, 1, 0});
    CHECK(bleu3.totals == std::array<std::int64_t, 4>{6, 5, 4, 0});
    CHECK(bleu3.brevity_penalty == 1.0);
    CHECK(bleu3.hypothesis_length == 6);
    CHECK(bleu3.reference_length == 6);
    const BleuScore bleu4 = corpus_bleu(references, hypotheses);
    CHECK(bleu4.score == 0.0);
    CHECK(bleu4.matches == std::array<std::int64_t, 4>{5, 3, 1, 0});
    CHECK(bleu4.totals == std::array<std::int64_t, 4>{6, 5, 4, 3});
    CHECK(bleu4.precisions[0] == doctest::Approx(5.0 / 6.0));
}

TEST_CASE("corpus_bleu: a count is clipped by its largest count in one reference, not the sum") {
    // Papineni et al.'s example: "the" x7 against refs with "the" twice and once: clip 2 -> 2/7
    // (summing over references would give 3/7). c = 7, refs 6 and 7 -> r = 7, BP = 1.
    const BleuScore bleu =
        corpus_bleu({{words("the cat is on the mat"), words("there is a cat on the mat")}},
                    std::vector<Tokens>{words("the the the the the the the")}, {.max_order = 1});
    CHECK(bleu.score == doctest::Approx(2.0 / 7.0).epsilon(1e-14));
    CHECK(bleu.reference_length == 7);
}

TEST_CASE("corpus_bleu: brevity penalty from the closest reference length, the shorter one on a tie") {
    // hypothesis "a b c d" (4): every n-gram is in "a b c d e", so p_1..p_4 = 4/4, 3/3, 2/2, 1/1.
    // refs of 5 and 6 tokens: r = 5 < ... c = 4 <= r -> BP = exp(1 - 5/4) = exp(-0.25).
    const std::vector<Tokens> hypothesis{words("a b c d")};
    const BleuScore short_hypothesis = corpus_bleu({{words("a b c d e"), words("a b c d e f")}}, hypothesis);
    CHECK(short_hypothesis.score == doctest::Approx(std::exp(-0.25)).epsilon(1e-14));
    CHECK(short_hypothesis.brevity_penalty == doctest::Approx(std::exp(-0.25)).epsilon(1e-14));
    // refs of 3 and 5 tokens are both 1 away from 4: the shorter (3) is taken, c = 4 > 3 -> BP = 1,
    // BLEU = 1 (taking 5 would give exp(-0.25)).
    const BleuScore tie = corpus_bleu({{words("a b c d e"), words("a b c")}}, hypothesis);
    CHECK(tie.reference_length == 3);
    CHECK(tie.score == doctest::Approx(1.0).epsilon(1e-14));
    // An empty hypothesis: c = 0 -> BP = 0, and no n-gram at all.
    const BleuScore empty = corpus_bleu({{words("a b")}}, std::vector<Tokens>{Tokens{}});
    CHECK(empty.score == 0.0);
    CHECK(empty.brevity_penalty == 0.0);
    CHECK(empty.totals[0] == 0);
}

TEST_CASE("corpus_bleu: counts are summed over the corpus before dividing, not averaged per sentence") {
    // "a b" / "a b": unigrams 2/2, bigrams 1/1. "c d e f" / "c x e f": unigrams c e f = 3/4,
    // bigrams cd de ef against cx xe ef -> 1/3. Corpus: p_1 = 5/6, p_2 = 2/4, c = r = 6, BP = 1,
    // BLEU-2 = sqrt(5/6 * 1/2) = sqrt(5/12) (the mean of the sentence scores would be 0.75).
    const BleuScore bleu = corpus_bleu({{words("a b")}, {words("c x e f")}},
                                       std::vector<Tokens>{words("a b"), words("c d e f")}, {.max_order = 2});
    CHECK(bleu.score == doctest::Approx(std::sqrt(5.0 / 12.0)).epsilon(1e-14));
    CHECK(bleu.matches[0] == 5);
    CHECK(bleu.totals[1] == 4);
}

TEST_CASE("corpus_bleu over ids equals nltk's corpus_bleu on random corpora (tests/fixtures/bleu.json)") {
    const auto fixture = testing::load_fixture("bleu");
    REQUIRE(fixture.at("cases").size() >= 10);
    int nonzero = 0;
    for (const auto& c : fixture.at("cases")) {
        const auto references = c.at("references").get<std::vector<std::vector<std::vector<std::int64_t>>>>();
        const auto hypotheses = c.at("hypotheses").get<std::vector<std::vector<std::int64_t>>>();
        const double expected = c.at("score").get<double>();
        const BleuScore bleu =
            corpus_bleu(references, hypotheses, {.max_order = c.at("max_order").get<std::int64_t>()});
        CAPTURE(expected);
        // nltk replaces a zero precision by the smallest double instead of returning 0: ~1e-77.
        CHECK(std::abs(bleu.score - expected) <= 1e-12 * std::max(1.0, expected));
        nonzero += bleu.score > 0.0;
    }
    CHECK(nonzero >= 5);
}

TEST_CASE("corpus_bleu: bad arguments name the problem") {
    const std::vector<Tokens> one{words("a")};
    CHECK_THROWS_WITH_AS(corpus_bleu(std::vector<std::vector<Tokens>>{}, std::vector<Tokens>{}),
                         doctest::Contains("corpus_bleu: no hypotheses"), ValueError);
    CHECK_THROWS_WITH_AS(corpus_bleu({{words("a")}, {words("b")}}, one),
                         doctest::Contains("corpus_bleu: 2 reference lists for 1 hypotheses"), ValueError);
    CHECK_THROWS_WITH_AS(corpus_bleu(std::vector<std::vector<Tokens>>{{}}, one),
                         doctest::Contains("corpus_bleu: hypothesis 0 has no reference"), ValueError);
    CHECK_THROWS_WITH_AS(corpus_bleu({{words("a")}}, one, {.max_order = 5}),
                         doctest::Contains("max_order must be in [1, 4], got 5"), ValueError);
    CHECK_THROWS_WITH_AS(corpus_bleu_13a({{"a"}}, {"a", "b"}),
                         doctest::Contains("1 reference lists for 2 hypotheses"), ValueError);
}

TEST_CASE("tokenize_13a: mteval-v13a's rules, each case worked out from the rules in bleu.hpp") {
    // Symbols are split off, "," and "." after a letter are split off.
    CHECK(tokenize_13a("Hello, world!") == Tokens{"Hello", ",", "world", "!"});
    // "$" is a symbol; "3.14" keeps its "." (digit before and after); "4," is split because ","
    // is followed by a space; the apostrophe is not a symbol.
    CHECK(tokenize_13a("It costs $3.14, isn't it?") ==
          Tokens{"It", "costs", "$", "3.14", ",", "isn't", "it", "?"});
    // Digit group separators stay; "-" after a digit is split off, "-" between letters is not.
    CHECK(tokenize_13a("1,000-2,000") == Tokens{"1,000", "-", "2,000"});
    CHECK(tokenize_13a("a-b x-5 3-4") == Tokens{"a-b", "x-5", "3", "-", "4"});
    // ".5": the space before "." is not a digit, so "." is split off; "5." at the end: the line's
    // padding space after "." is not a digit.
    CHECK(tokenize_13a(".5 5. ,5") == Tokens{".", "5", "5", ".", ",", "5"});
    // Entities are unescaped one after the other: "&amp;lt;" -> "&lt;" -> "<".
    CHECK(tokenize_13a("&quot;Hi&quot; &amp;lt; &lt;b&gt;") == Tokens{"\"", "Hi", "\"", "<", "<", "b", ">"});
    // "<skipped>" is removed, "-\n" joins, "\n" is a space.
    CHECK(tokenize_13a("<skipped>multi-\nline a\nb") == Tokens{"multiline", "a", "b"});
    CHECK(tokenize_13a("U.S.A.") == Tokens{"U", ".", "S", ".", "A", "."});
    CHECK(tokenize_13a("5..,x") == Tokens{"5", ".", ".", ",", "x"});
    // Every symbol of the class, and Python's Unicode whitespace (U+00A0, U+3000) splits.
    CHECK(tokenize_13a("(x+y)*2=z; [a_b]{c|d}~`^\\@#%") ==
          Tokens{"(", "x", "+", "y", ")", "*", "2", "=", "z", ";",  "[", "a", "_", "b",
                 "]", "{", "c", "|", "d", "}", "~", "`", "^", "\\", "@", "#", "%"});
    CHECK(tokenize_13a("a\u00a0b\u3000c caf\u00e9.") == Tokens{"a", "b", "c", "caf\u00e9", "."});
    CHECK(tokenize_13a("   ").empty());
    // Case is kept; BLEU of detokenised lines: "Hello, world!" against itself is 1, against
    // "hello, world!" the unigram "Hello" misses.
    CHECK(corpus_bleu_13a({{"Hello, world!"}}, {"Hello, world!"}).score == doctest::Approx(1.0));
    const BleuScore cased = corpus_bleu_13a({{"hello, world!"}}, {"Hello, world!"}, {.max_order = 1});
    CHECK(cased.score == doctest::Approx(3.0 / 4.0));
}

TEST_CASE("corpus_bleu: undefined when no hypothesis has max_order tokens") {
    // One-token hypotheses, all right: p_1 = 1 but p_4 = 0/0.
    const BleuScore short_ones = corpus_bleu({{words("a")}, {words("b")}}, {words("a"), words("b")});
    CHECK_FALSE(short_ones.defined);
    CHECK(short_ones.totals[3] == 0);
    CHECK(short_ones.score == 0.0);
    // Defined at the order asked for: BLEU-1 of the same corpus is 1.
    const BleuScore unigram =
        corpus_bleu({{words("a")}, {words("b")}}, {words("a"), words("b")}, {.max_order = 1});
    CHECK(unigram.defined);
    CHECK(unigram.score == doctest::Approx(1.0));
    // One hypothesis of 4 tokens is enough, even with no 4-gram match (then BLEU is a defined 0).
    const BleuScore one_long =
        corpus_bleu({{words("a")}, {words("a b c d")}}, {words("a"), words("a b c e")});
    CHECK(one_long.defined);
    CHECK(one_long.totals[3] == 1);
    CHECK(one_long.score == 0.0);
}
