// data/text: word and UTF-8 character tokenisation, joining, trimming, UTF-8 validation.
#include "data/text.hpp"

#include <doctest/doctest.h>

using namespace attograd::data;
using Tokens = std::vector<std::string>;

TEST_CASE("text: words split at runs of spaces and tabs, characters at UTF-8 boundaries") {
    CHECK(split_whitespace("  a\t bc  d ") == Tokens{"a", "bc", "d"});
    CHECK(split_whitespace(" \t ").empty());
    CHECK(split_chars("a\u00e9\u20ac\U0001F600") == Tokens{"a", "\u00e9", "\u20ac", "\U0001F600"});
    CHECK(split_chars("a\xc3") == Tokens{"a", "\xc3"});  // a truncated sequence: its byte alone
    CHECK(split_chars("\xe2\x82x") == Tokens{"\xe2", "\x82", "x"});
    CHECK(join({"a", "b", "c"}, "-") == "a-b-c");
    CHECK(join({}, "-").empty());
    CHECK(trim(" \t x y\r\n") == "x y");
    CHECK(printable(" ") == "\u2423");
    CHECK(printable("\t") == "\u21e5");
    CHECK(printable("a") == "a");
}

TEST_CASE("text: UTF-8 validation refuses stray, truncated, overlong, surrogate and too-large sequences") {
    CHECK(is_valid_utf8("plain \u00e9\u20ac\U0001F600"));
    CHECK(is_valid_utf8(""));
    CHECK_FALSE(is_valid_utf8("\x80"));              // stray continuation byte
    CHECK_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
    CHECK_FALSE(is_valid_utf8("\xc0\xaf"));          // overlong '/'
    CHECK_FALSE(is_valid_utf8("\xed\xa0\x80"));      // surrogate U+D800
    CHECK_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
    CHECK_FALSE(is_valid_utf8("\xff"));
}
