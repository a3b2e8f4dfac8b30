// Teacher forcing: <bos> y as the decoder's input and y <eos> as its labels, padded.
#include "data/teacher_forcing.hpp"

#include "core/error.hpp"

#include <algorithm>

namespace attograd::data {

TeacherForcing teacher_forcing(const std::vector<std::vector<std::int64_t>>& targets, std::int64_t bos_id,
                               std::int64_t eos_id, std::int64_t pad_id) {
    AG_CHECK(!targets.empty(), ValueError, "teacher_forcing: no target sequences");
    AG_CHECK(bos_id >= 0 && eos_id >= 0 && pad_id >= 0, ValueError,
             "teacher_forcing: bos_id, eos_id and pad_id must be ids >= 0, got {}, {} and {}", bos_id, eos_id,
             pad_id);
    AG_CHECK(pad_id != bos_id && pad_id != eos_id, ValueError,
             "teacher_forcing: pad_id {} must differ from bos_id {} and eos_id {} (padding is ignored by the "
             "loss)",
             pad_id, bos_id, eos_id);
    std::vector<std::vector<std::int64_t>> inputs, labels;
    for (std::size_t b = 0; b < targets.size(); ++b) {
        const auto& y = targets[b];
        const auto bad = std::find_if(
            y.begin(), y.end(), [&](std::int64_t id) { return id < 0 || id == bos_id || id == eos_id; });
        AG_CHECK(bad == y.end() || *bad >= 0, ValueError,
                 "teacher_forcing: target {} has id {} at position {}; ids must be >= 0", b, *bad,
                 bad - y.begin());
        AG_CHECK(bad == y.end(), ValueError,
                 "teacher_forcing: target {} holds {} at position {}; pass targets without <bos> and <eos>",
                 b, *bad == bos_id ? "bos_id" : "eos_id", bad - y.begin());
        inputs.push_back({bos_id});
        inputs.back().insert(inputs.back().end(), y.begin(), y.end());
        labels.push_back(y);
        labels.back().push_back(eos_id);
    }
    TeacherForcing out{pad_sequences(inputs, {.padding_value = pad_id}), {}};
    out.labels = pad_sequences(labels, {.padding_value = pad_id}).ids;
    return out;
}

TeacherForcing teacher_forcing(const PaddedSequences& targets, std::int64_t bos_id, std::int64_t eos_id,
                               std::int64_t pad_id) {
    AG_CHECK(targets.ids.defined() && targets.lengths.defined(), ValueError,
             "teacher_forcing: the targets are undefined (a Batcher built without targets)");
    AG_CHECK(targets.ids.dim() == 2 && targets.lengths.dim() == 1 &&
                 targets.lengths.size(0) == targets.ids.size(0),
             ValueError, "teacher_forcing: expected ids [B, T] and lengths [B], got {} and {}",
             targets.ids.shape(), targets.lengths.shape());
    const auto ids = targets.ids.to_vector<std::int64_t>();
    const auto lengths = targets.lengths.to_vector<std::int64_t>();
    const std::int64_t t = targets.ids.size(1);
    std::vector<std::vector<std::int64_t>> rows;
    for (std::size_t b = 0; b < lengths.size(); ++b) {
        const std::int64_t n = lengths[b];
        AG_CHECK(n >= 0 && n <= t, ValueError, "teacher_forcing: length {} of row {} outside [0, {}]", n, b,
                 t);
        const auto start = ids.begin() + static_cast<std::ptrdiff_t>(b) * t;
        rows.emplace_back(start, start + n);
    }
    return teacher_forcing(rows, bos_id, eos_id, pad_id);
}

}  // namespace attograd::data
