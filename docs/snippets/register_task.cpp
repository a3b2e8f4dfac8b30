// A task of one's own in the task registry: "twice" writes each letter of its source twice.
#include <attograd/attograd.hpp>
using namespace attograd;

class TwiceTask final : public data::GeneratedTask {
public:
    TwiceTask() {
        info_.name = "twice";
        info_.description = "write each letter twice";
        info_.example = "a b -> a a b b";
        info_.alignment = "target t attends source t / 2";
        info_.max_source_len = 6;
        info_.max_target_len = 12;
        make_held_out(7);  // the held-out split's fixed seed
    }
    std::vector<std::string> symbols() const override { return {"a", "b", "c", "d"}; }
    std::optional<std::vector<std::string>> solve(const std::vector<std::string>& source) const override {
        std::vector<std::string> out;
        for (const auto& letter : source) out.insert(out.end(), {letter, letter});
        return out;
    }

private:
    data::Example generate(Generator& generator) const override {
        data::Example example;
        const std::int64_t n = generator.randint(1, 7);
        for (std::int64_t i = 0; i < n; ++i) example.source.push_back(symbols()[generator.randint(0, 4)]);
        example.target = *solve(example.source);
        return example;
    }
};

int main() {
    data::register_task({.name = "twice",
                         .make = [] { return std::make_unique<TwiceTask>(); },
                         .target_accuracy = 0.95,  // held-out accuracy at which training stops
                         .defaults = {{"model.heads", 2}, {"train.steps", 3000}}});
    const auto task = data::make_task("twice");
    fmt::print("{}: {} held-out examples, e.g. {}\n", task->info().name, task->held_out().size(),
               task->info().example);
    return task->held_out().size() == data::GeneratedTask::held_out_size ? 0 : 1;
}
