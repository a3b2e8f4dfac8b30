// data/teacher_forcing: decoder input <bos> y and labels y <eos>, padded, from id lists or a Batch.
#include "core/error.hpp"
#include "data/batcher.hpp"
#include "data/teacher_forcing.hpp"

#include <doctest/doctest.h>

using namespace attograd;
using namespace attograd::data;

namespace {

using Ids = std::vector<std::vector<std::int64_t>>;
using Row = std::vector<std::int64_t>;

}  // namespace

TEST_CASE("teacher_forcing: input is bos then y, labels are y then eos, pad where nothing is") {
    const std::int64_t bos = 1, eos = 2, pad = 0;
    const TeacherForcing tf = teacher_forcing(Ids{{7, 8, 9}, {5}}, bos, eos, pad);
    CHECK(tf.decoder_input.ids.shape() == Shape{2, 4});  // [B, T+1] with T = 3
    CHECK(tf.labels.shape() == Shape{2, 4});
    CHECK(tf.decoder_input.ids.to_vector<std::int64_t>() == Row{bos, 7, 8, 9, bos, 5, pad, pad});
    CHECK(tf.labels.to_vector<std::int64_t>() == Row{7, 8, 9, eos, 5, eos, pad, pad});
    CHECK(tf.decoder_input.lengths.to_vector<std::int64_t>() == Row{4, 2});
    const auto mask = tf.decoder_input.key_padding_mask.to_vector<bool>();
    CHECK(std::vector<bool>(mask.begin(), mask.end()) ==
          std::vector<bool>{false, false, false, false, false, false, true, true});
    // Each label is the next input: labels[b][t] == input[b][t + 1] within the real length.
    const auto in = tf.decoder_input.ids.to_vector<std::int64_t>();
    const auto lab = tf.labels.to_vector<std::int64_t>();
    for (int t = 0; t < 3; ++t)
        CHECK(lab[static_cast<std::size_t>(t)] == in[static_cast<std::size_t>(t + 1)]);
    // An empty target still predicts eos.
    CHECK(teacher_forcing(Ids{{}}).labels.to_vector<std::int64_t>() == Row{Vocabulary::eos_id});
}

TEST_CASE("teacher_forcing: from a Batch's padded targets gives the same as from the id lists") {
    const Ids sources{{3}, {4}, {5}}, targets{{6, 7}, {8}, {9, 10, 11}};
    const Batcher batcher(sources, targets, {.batch_size = 3, .pad_id = 0});
    const Batch batch = batcher.collate({0, 1, 2});
    const TeacherForcing a = teacher_forcing(batch.target), b = teacher_forcing(targets);
    CHECK(a.decoder_input.ids.to_vector<std::int64_t>() == b.decoder_input.ids.to_vector<std::int64_t>());
    CHECK(a.labels.to_vector<std::int64_t>() == b.labels.to_vector<std::int64_t>());
    // The batch's target holds neither bos nor eos (what teacher_forcing adds).
    for (const std::int64_t id : batch.target.ids.to_vector<std::int64_t>()) {
        CHECK(id != Vocabulary::bos_id);
        CHECK(id != Vocabulary::eos_id);
    }
}

TEST_CASE("teacher_forcing: bad ids and special ids are refused") {
    CHECK_THROWS_WITH_AS(teacher_forcing(Ids{}), doctest::Contains("teacher_forcing: no target"), ValueError);
    CHECK_THROWS_WITH_AS(teacher_forcing(Ids{{5}, {6, -1}}),
                         doctest::Contains("target 1 has id -1 at position 1"), ValueError);
    CHECK_THROWS_WITH_AS(teacher_forcing(Ids{{5, Vocabulary::eos_id}}),
                         doctest::Contains("target 0 holds eos_id at position 1"), ValueError);
    CHECK_THROWS_WITH_AS(teacher_forcing(Ids{{5}}, 1, 2, -5), doctest::Contains("must be ids >= 0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(teacher_forcing(Ids{{5}}, 1, 2, 2), doctest::Contains("pad_id 2 must differ"),
                         ValueError);
    const Batcher sources_only(Ids{{1}}, Ids{}, {});
    CHECK_THROWS_WITH_AS(teacher_forcing(sources_only.collate({0}).target), doctest::Contains("undefined"),
                         ValueError);
}
