// data/evaluation: the exact-match count of decoded outputs against the examples' targets.
#include "core/error.hpp"
#include "data/evaluation.hpp"

#include <doctest/doctest.h>

using namespace attograd;
using namespace attograd::data;

TEST_CASE("exact_matches counts outputs equal to their target, as Vocabulary::decode reads them") {
    const Vocabulary vocab({"a", "b", "c"});  // a = 4, b = 5, c = 6
    const std::vector<Example> examples{
        {{"c", "a"}, {"a", "c"}}, {{"b"}, {"b"}}, {{"a", "b"}, {"a", "b"}}, {{"c"}, {"c"}}};
    using Ids = std::vector<std::vector<std::int64_t>>;
    CHECK(exact_matches(Ids{{4, 6}, {5}, {4, 5}, {6}}, examples, vocab) == 4);
    // Wrong token, too short, too long: no match.
    CHECK(exact_matches(Ids{{4, 5}, {}, {4, 5, 6}, {6}}, examples, vocab) == 1);
    // decode's reading: stops at <eos>, skips <pad> and <bos>.
    const std::int64_t eos = Vocabulary::eos_id, pad = Vocabulary::pad_id, bos = Vocabulary::bos_id;
    CHECK(exact_matches(Ids{{4, 6, eos, 5}, {bos, 5, pad}, {4, eos}, {6}}, examples, vocab) == 3);
    CHECK(exact_matches(Ids{}, {}, vocab) == 0);
    CHECK_THROWS_WITH_AS(exact_matches(Ids{{4}}, examples, vocab),
                         doctest::Contains("exact_matches: 1 outputs for 4 examples"), ValueError);
    CHECK_THROWS_WITH_AS(exact_matches(Ids{{9}, {5}, {4}, {6}}, examples, vocab),
                         doctest::Contains("id 9 outside"), IndexError);
}
