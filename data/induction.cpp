// The induction task: a random prefix, a random segment, the segment again.
#include "data/induction.hpp"

#include "core/error.hpp"

#include <string>

namespace attograd::data {
namespace {

class InductionTask final : public GeneratedTask {
public:
    explicit InductionTask(const InductionOptions& o) : options_(o) {
        AG_CHECK(o.vocab_size >= 2 && o.vocab_size <= 26, ValueError,
                 "induction: vocab_size must be in [2, 26], got {}", o.vocab_size);
        AG_CHECK(o.min_segment >= 2 && o.min_segment <= o.max_segment, ValueError,
                 "induction: min_segment {} must be >= 2 and <= max_segment {}", o.min_segment,
                 o.max_segment);
        AG_CHECK(2 * o.max_segment <= o.length, ValueError,
                 "induction: length {} must hold the segment twice (2 * max_segment = {})", o.length,
                 2 * o.max_segment);
        info_.name = "induction";
        info_.description =
            "predict the next token of random tokens whose last segment repeats (induction heads)";
        info_.example = "q h c a e f c a e -> h c a e f c a e f";
        info_.metric = Metric::Token;
        info_.alignment =
            "an induction head: a token of the repeat attends to the token after its first occurrence";
        info_.max_source_len = o.length - 1;
        info_.min_source_len = o.length - 1;
        info_.max_target_len = o.length - 1;
        info_.same_length = true;
        make_held_out(1006);
    }

    std::vector<std::string> symbols() const override {
        std::vector<std::string> out;
        for (std::int64_t i = 0; i < options_.vocab_size; ++i)
            out.emplace_back(1, static_cast<char>('a' + i));
        return out;
    }

protected:
    Example generate(Generator& generator) const override {
        const InductionOptions& o = options_;
        const std::int64_t segment = generator.randint(o.min_segment, o.max_segment + 1);
        const std::int64_t prefix = o.length - 2 * segment;
        std::vector<std::string> x;
        x.reserve(static_cast<std::size_t>(o.length));
        for (std::int64_t i = 0; i < prefix + segment; ++i)
            x.emplace_back(1, static_cast<char>('a' + generator.randint(0, o.vocab_size)));
        for (std::int64_t i = 0; i < segment; ++i) x.push_back(x[static_cast<std::size_t>(prefix + i)]);
        Example example;
        example.source.assign(x.begin(), x.end() - 1);
        example.target.assign(x.begin() + 1, x.end());
        return example;
    }

private:
    InductionOptions options_;
};

}  // namespace

std::unique_ptr<Task> make_induction_task(const InductionOptions& options) {
    return std::make_unique<InductionTask>(options);
}

TaskEntry induction_task_entry() {
    return {.name = "induction",
            .make = [] { return make_induction_task(); },
            .target_accuracy = 0.35,
            .defaults = {{"model.kind", "lm"},
                         {"model.layers", 2},
                         {"model.heads", 4},
                         {"model.ffn_dim", 0},
                         {"train.lr", 3e-3},
                         {"train.schedule", "constant"},
                         {"train.steps", 2000},
                         {"train.snapshot_every", 50}}};
}

}  // namespace attograd::data
