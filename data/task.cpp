// Tasks: tokenising, the generated tasks' held-out split, and the registry of bundled tasks.
#include "data/task.hpp"

#include "core/detail/named_registry.hpp"
#include "core/error.hpp"
#include "data/char_lm.hpp"
#include "data/coref.hpp"
#include "data/dates.hpp"
#include "data/induction.hpp"
#include "data/keyword.hpp"
#include "data/text.hpp"
#include "data/toy_tasks.hpp"

#include <algorithm>
#include <cctype>
#include <mutex>

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

namespace {

using Registry = attograd::detail::NamedRegistry<TaskEntry>;

/// The registry: the bundled tasks, then those registered in order.
Registry& registry() {
    static Registry instance{
        std::deque<TaskEntry>{copy_task_entry(), reverse_task_entry(), sort_task_entry(), recall_task_entry(),
                              dates_task_entry(), coref_task_entry(), keyword_task_entry(),
                              keyword_end_task_entry(), induction_task_entry(), charlm_task_entry()}};
    return instance;
}

}  // namespace

void register_task(TaskEntry entry) {
    const bool spaced = std::any_of(entry.name.begin(), entry.name.end(), [](unsigned char c) {
        return std::isspace(c) != 0 || std::iscntrl(c) != 0;
    });
    AG_CHECK(!entry.name.empty() && !spaced, ValueError,
             "register_task: the name must be non-empty without spaces or control characters, got '{}'",
             escape_control(entry.name));
    AG_CHECK(entry.name != "data", ValueError,
             "register_task: 'data' is reserved for user data (a TSV file); choose another name");
    AG_CHECK(static_cast<bool>(entry.make), ValueError, "register_task: task '{}' has no make function",
             entry.name);
    AG_CHECK(entry.target_accuracy > 0.0 && entry.target_accuracy <= 1.0, ValueError,
             "register_task: task '{}': target_accuracy must be in (0, 1], got {}", entry.name,
             entry.target_accuracy);
    AG_CHECK(entry.defaults.is_object(), ValueError,
             "register_task: task '{}': defaults must be a JSON object of settings, got {}", entry.name,
             entry.defaults.type_name());
    registry().add(std::move(entry), "register_task", "task");
}

const TaskEntry& task_entry(const std::string& name) {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    for (const auto& entry : r.entries)
        if (entry.name == name) return entry;
    throw ValueError(
        fmt::format("unknown task '{}' (known: {})", escape_control(name), join(r.names_locked(), ", ")));
}

std::vector<std::string> task_names() {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    return r.names_locked();
}

std::unique_ptr<Task> make_task(const std::string& name) {
    std::unique_ptr<Task> task = task_entry(name).make();
    // A task saved in a run is found again by the name in its info.
    AG_CHECK(task != nullptr && task->info().name == name, ValueError, "make_task: task '{}' made {}", name,
             task == nullptr ? std::string("no task") : fmt::format("a task named '{}'", task->info().name));
    return task;
}

}  // namespace attograd::data
