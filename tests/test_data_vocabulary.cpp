// data/vocabulary: special tokens first, unknown tokens, the reserved-token rule, saving.
#include "core/error.hpp"
#include "data/vocabulary.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

using namespace attograd;
using namespace attograd::data;

TEST_CASE("vocabulary: special tokens first, then the given tokens in order") {
    const Vocabulary vocab({"b", "a"});
    CHECK(vocab.size() == 6);
    CHECK(vocab.token(Vocabulary::pad_id) == "<pad>");
    CHECK(vocab.token(Vocabulary::bos_id) == "<bos>");
    CHECK(vocab.token(Vocabulary::eos_id) == "<eos>");
    CHECK(vocab.token(Vocabulary::unk_id) == "<unk>");
    CHECK(vocab.id("b") == 4);
    CHECK(vocab.id("a") == 5);
    CHECK(vocab.contains("a"));
    CHECK_FALSE(vocab.contains("zz"));
    CHECK(Vocabulary().size() == Vocabulary::reserved_count);
    CHECK_THROWS_WITH_AS(vocab.token(6), doctest::Contains("vocabulary: id 6 outside [0, 6)"), IndexError);
    CHECK_THROWS_WITH_AS(vocab.token(-1), doctest::Contains("vocabulary: id -1"), IndexError);
}

TEST_CASE("vocabulary: unknown tokens become <unk> and are reported, decode stops at <eos>") {
    const Vocabulary vocab({"b", "a"});
    std::vector<std::string> unknown;
    CHECK(vocab.encode({"a", "zz", "b"}, &unknown) == std::vector<std::int64_t>{5, Vocabulary::unk_id, 4});
    CHECK(unknown == std::vector<std::string>{"zz"});
    CHECK(vocab.decode({Vocabulary::bos_id, 5, Vocabulary::pad_id, 4, Vocabulary::eos_id, 5}) ==
          std::vector<std::string>{"a", "b"});
    CHECK_THROWS_AS(vocab.decode({9}), IndexError);
}

TEST_CASE("vocabulary: the literal text of a reserved token is refused, never read as the token") {
    for (const char* reserved : {"<pad>", "<bos>", "<eos>", "<unk>"}) {
        CAPTURE(reserved);
        CHECK(Vocabulary::is_reserved(reserved));
        CHECK_THROWS_WITH_AS(Vocabulary({"a", reserved}), doctest::Contains("reserved token"), ValueError);
        const Vocabulary vocab({"a"});
        CHECK_THROWS_WITH_AS(
            vocab.encode({"a", reserved}),
            doctest::Contains(fmt::format("Vocabulary::encode: token 1 is '{}'", reserved).c_str()),
            ValueError);
    }
    CHECK_FALSE(Vocabulary::is_reserved("<pad"));
    CHECK_FALSE(Vocabulary::is_reserved("<PAD>"));
    CHECK_FALSE(Vocabulary::is_reserved("<"));
    CHECK(Vocabulary({"<", "pad", ">"}).size() == 7);  // character-level pieces are ordinary tokens
}

TEST_CASE("vocabulary: from_tokens reads tokens() back and refuses malformed lists") {
    const Vocabulary vocab({"x", "y", "z"});
    const Vocabulary back = Vocabulary::from_tokens(vocab.tokens());
    CHECK(back.tokens() == vocab.tokens());
    CHECK(back.id("z") == vocab.id("z"));
    CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "x"}), doctest::Contains("special token <bos>"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<bos>", "<eos>"}),
                         doctest::Contains("missing the special tokens"), ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<bos>", "<eos>", "<unk>", "a", "a"}),
                         doctest::Contains("'a' appears twice"), ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<bos>", "<eos>", "<unk>", "<eos>"}),
                         doctest::Contains("'<eos>' appears twice"), ValueError);
}

TEST_CASE("vocabulary: lookup_indices reads tokens the program made, special tokens included") {
    const Vocabulary vocab({"a"});
    CHECK(vocab.lookup_indices({"a", "<eos>", "<pad>", "zz"}) ==
          std::vector<std::int64_t>{4, Vocabulary::eos_id, Vocabulary::pad_id, Vocabulary::unk_id});
    // decode then lookup_indices round-trips a prediction that holds <unk>.
    const std::vector<std::int64_t> ids{4, Vocabulary::unk_id, 4};
    CHECK(vocab.lookup_indices(vocab.decode(ids)) == ids);
}

TEST_CASE("vocabulary: lookup_tokens gives every id's token, special tokens included") {
    const Vocabulary vocab({"a", "b"});
    const std::vector<std::int64_t> ids{5, 4, Vocabulary::eos_id, Vocabulary::pad_id, 4};
    CHECK(vocab.lookup_tokens(ids) == std::vector<std::string>{"b", "a", "<eos>", "<pad>", "a"});
    CHECK(vocab.lookup_indices(vocab.lookup_tokens(ids)) == ids);  // nothing skipped, nothing stops it
    CHECK(vocab.lookup_tokens({}).empty());
    CHECK_THROWS_WITH_AS(vocab.lookup_tokens({4, 6}), doctest::Contains("vocabulary: id 6 outside [0, 6)"),
                         IndexError);
}

TEST_CASE("vocabulary: duplicate, empty, control-character and spaced tokens are refused by position") {
    CHECK_THROWS_WITH_AS(Vocabulary({"a", "b", "a"}),
                         doctest::Contains("Vocabulary: token 2 'a' appears twice (first as token 0)"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"a", ""}), doctest::Contains("Vocabulary: token 1 '' is empty"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({std::string("a\0b", 3)}),
                         doctest::Contains("token 0 'a\\x00b' holds the control character \\x00"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"x", "a\nb"}), doctest::Contains("token 1"), ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"\x7f"}), doctest::Contains("control character \\x7f"), ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"ok", "\xc2\x9b"}),  // U+009B (C1): a terminal's CSI
                         doctest::Contains("token 1 '\\u009b' holds the control character \\u009b"),
                         ValueError);
    CHECK(Vocabulary({"\xc2\xa0", "\xc2\xa9"}).size() == 6);  // U+00A0, U+00A9: not control characters
    // Other Unicode spaces inside a word, which would show as two tokens.
    CHECK_THROWS_WITH_AS(Vocabulary({"a\u00a0b"}),
                         doctest::Contains("token 0 'a\\u00a0b' holds the space \\u00a0 (a word-level token "
                                           "never does: write U+0020)"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"x\u3000"}), doctest::Contains("holds the space \\u3000"), ValueError);
    CHECK(Vocabulary({"a\u2800b", "\u3000"}).size() == 6);  // the braille blank is no space; one space alone
    CHECK_THROWS_WITH_AS(Vocabulary({"new york"}), doctest::Contains("token 0 'new york' holds a space"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"a\tb"}), doctest::Contains("control character \\t"), ValueError);
    // One space or tab alone is a character-level token; multi-byte characters are fine.
    CHECK(Vocabulary({" ", "\t", "\u00e9", "\U0001F600"}).size() == 8);
    CHECK(Vocabulary::token_problem("word").empty());
    // from_tokens keeps the same rule for a saved list, naming the entry by id.
    CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<bos>", "<eos>", "<unk>", "a", ""}),
                         doctest::Contains("vocabulary: entry 5 '' is empty"), ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<bos>", "<eos>", "<unk>", "a", "a"}),
                         doctest::Contains("entry 5 'a' appears twice"), ValueError);
}

TEST_CASE("vocabulary: a token that is not well-formed UTF-8 or holds U+2028 / U+2029 is refused") {
    CHECK_THROWS_WITH_AS(Vocabulary({"\x9b"}),  // a lone C1 byte, not UTF-8
                         doctest::Contains("Vocabulary: token 0 '\\x9b' is not well-formed UTF-8"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"ok", "\xff"}),
                         doctest::Contains("token 1 '\\xff' is not well-formed UTF-8"), ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"a\xc3"}), doctest::Contains("'a\\xc3' is not well-formed UTF-8"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary::from_tokens({"<pad>", "<bos>", "<eos>", "<unk>", "\xed\xa0\x80"}),
                         doctest::Contains("vocabulary: entry 4 '\\xed\\xa0\\x80' is not well-formed UTF-8"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"\xe2\x80\xa8"}),
                         doctest::Contains("token 0 '\\u2028' holds the control character \\u2028"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"a\xe2\x80\xa9"
                                     "b"}),
                         doctest::Contains("token 0 'a\\u2029b' holds the control character \\u2029"),
                         ValueError);
    CHECK(Vocabulary::token_problem("\xe2\x80\xa6").empty());  // U+2026 HORIZONTAL ELLIPSIS
}

TEST_CASE("vocabulary: a token holding a bidirectional override or isolate is refused") {
    CHECK_THROWS_WITH_AS(Vocabulary({"ok", "abc\xe2\x80\xae"}),
                         doctest::Contains("token 1 'abc\\u202e' holds the control character \\u202e"),
                         ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary({"\xe2\x81\xa6x"}),
                         doctest::Contains("token 0 '\\u2066x' holds the control character \\u2066"),
                         ValueError);
}

TEST_CASE("vocabulary: build_from_sequences keeps tokens by min_freq and max_tokens, as torchtext") {
    const std::vector<std::vector<std::string>> text = {
        {"b", "a", "c", "a"}, {"d", "b", "a", "e"}, {"c", "e"}};
    // counts: a 3, b 2, c 2, e 2, d 1: by count, ties in byte order (torchtext's (-count, token)).
    const Vocabulary all = Vocabulary::build_from_sequences(text);
    CHECK(all.tokens() ==
          std::vector<std::string>{"<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c", "e", "d"});
    const Vocabulary frequent = Vocabulary::build_from_sequences(text, {.min_freq = 2});
    CHECK(frequent.tokens() ==
          std::vector<std::string>{"<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c", "e"});
    std::vector<std::string> unknown;
    CHECK(frequent.encode({"d", "a"}, &unknown) == std::vector<std::int64_t>{Vocabulary::unk_id, 4});
    CHECK(unknown == std::vector<std::string>{"d"});
    // max_tokens counts the special tokens: 6 ids keep the two most frequent tokens.
    const Vocabulary capped = Vocabulary::build_from_sequences(text, {.min_freq = 1, .max_tokens = 6});
    CHECK(capped.tokens() == std::vector<std::string>{"<pad>", "<bos>", "<eos>", "<unk>", "a", "b"});
    CHECK(Vocabulary::build_from_sequences(text, {.max_tokens = 4}).size() == 4);
    CHECK(Vocabulary::build_from_sequences(text, {.min_freq = 4}).size() == 4);
    CHECK_THROWS_WITH_AS(Vocabulary::build_from_sequences(text, {.min_freq = 0}),
                         doctest::Contains("Vocabulary: min_freq must be >= 1, got 0"), ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary::build_from_sequences(text, {.max_tokens = 3}),
                         doctest::Contains("Vocabulary: max_tokens must be >= 4"), ValueError);
    CHECK_THROWS_WITH_AS(Vocabulary::build_from_sequences({{"a"}, {"b", "<eos>"}}),
                         doctest::Contains("Vocabulary: sequence 1 position 1 is '<eos>', a reserved token"),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        Vocabulary::build_from_sequences({{"a\x1b"}}),
        doctest::Contains("Vocabulary: sequence 0 position 0 'a\\x1b' holds the control character"),
        ValueError);
}
