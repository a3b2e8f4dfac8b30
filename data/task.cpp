// Tasks: tokenising, the generated tasks' held-out split, and the registry of bundled tasks.
#include "data/task.hpp"

#include "core/error.hpp"
#include "data/coref.hpp"
#include "data/dates.hpp"
#include "data/text.hpp"
#include "data/toy_tasks.hpp"

namespace attograd::data {

namespace {

/// A source as one string: its tokens joined by the ASCII unit separator.
std::string source_key(const std::vector<std::string>& source) { return join(source, "\x1f"); }

}  // namespace

std::vector<std::string> Task::tokenize(const std::string& text) const {
    AG_CHECK(is_valid_utf8(text), ValueError, "the input is not valid UTF-8");
    const std::string_view body = strip_bom(text);  // text pasted from a file may start with one
    return info_.char_level ? split_chars(body) : split_whitespace(body);
}

std::string Task::detokenize(const std::vector<std::string>& tokens) const {
    return join(tokens, info_.char_level ? "" : " ");
}

std::vector<Example> Task::train_examples(std::size_t count, Generator& generator) const {
    std::vector<Example> out;
    out.reserve(count);
    for (std::size_t i = 0; i < count; ++i) out.push_back(train_example(generator));
    return out;
}

std::optional<std::vector<std::int64_t>> Task::alignment(const Example&) const { return std::nullopt; }

std::optional<std::vector<std::string>> Task::solve(const std::vector<std::string>&) const {
    return std::nullopt;
}

std::vector<std::vector<std::string>> Task::references(const Example& example) const {
    return {example.target};
}

Example GeneratedTask::train_example(Generator& generator) const {
    for (;;) {
        Example example = generate(generator);
        if (held_out_sources_.count(source_key(example.source)) == 0) return example;
    }
}

void GeneratedTask::make_held_out(std::uint64_t seed) {
    Generator generator(seed);
    while (static_cast<int>(held_out_.size()) < held_out_size) {
        Example example = generate(generator);
        if (held_out_sources_.insert(source_key(example.source)).second)
            held_out_.push_back(std::move(example));
    }
}

std::vector<std::string> task_names() { return {"copy", "reverse", "sort", "recall", "dates", "coref"}; }

std::unique_ptr<Task> make_task(const std::string& name) {
    if (name == "copy") return make_copy_task();
    if (name == "reverse") return make_reverse_task();
    if (name == "sort") return make_sort_task();
    if (name == "recall") return make_recall_task();
    if (name == "dates") return make_dates_task();
    if (name == "coref") return make_coref_task();
    throw ValueError(fmt::format("unknown task '{}' (known: {})", name, join(task_names(), ", ")));
}

}  // namespace attograd::data
