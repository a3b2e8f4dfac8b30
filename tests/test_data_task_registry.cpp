// The task registry (data/task.hpp): the bundled entries, and a program's own task registered
// beside them.
#include "core/error.hpp"
#include "data/task.hpp"
#include "data/tsv.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace attograd;
using namespace attograd::data;

namespace {

/// A user's task: one letter -> the letter twice.
class TwiceTask : public Task {
public:
    TwiceTask() {
        info_.name = "twice";
        info_.description = "a letter -> the letter twice";
        info_.example = "a -> a a";
        info_.max_source_len = 1;
        info_.max_target_len = 2;
        held_out_ = {{{"a"}, {"a", "a"}}};
    }
    std::vector<std::string> symbols() const override { return {"a", "b"}; }
    Example train_example(Generator&) const override { return {{"b"}, {"b", "b"}}; }
};

TaskEntry twice_entry() {
    return {.name = "twice",
            .make = [] { return std::make_unique<TwiceTask>(); },
            .target_accuracy = 0.5,
            .defaults = {{"train.steps", 7}}};
}

}  // namespace

TEST_CASE("the bundled tasks' entries carry their targets and defaults") {
    CHECK(task_names() == std::vector<std::string>{"copy", "reverse", "sort", "recall", "dates", "coref",
                                                   "keyword", "keyword-end", "induction", "charlm"});
    for (const auto& name : task_names()) {
        const TaskEntry& entry = task_entry(name);
        CHECK(entry.name == name);
        CHECK(entry.make()->info().name == name);
        CHECK(entry.defaults.is_object());
    }
    CHECK(task_entry("reverse").target_accuracy == 0.99);
    CHECK(task_entry("sort").target_accuracy == 0.95);
    CHECK(task_entry("dates").defaults.at("model.heads") == 4);
    CHECK(task_entry("recall").defaults.at("model.next_token") == true);
    for (const char* lm : {"induction", "charlm"}) CHECK(task_entry(lm).defaults.at("model.kind") == "lm");
    CHECK(task_entry("induction").defaults.at("model.ffn_dim") == 0);  // attention-only
    CHECK(data_task_entry().name == "data");
    CHECK(data_task_entry().defaults.at("train.steps") == 2000);
    CHECK_THROWS_WITH_AS(task_entry("nope"), doctest::Contains("unknown task 'nope' (known: copy, reverse"),
                         ValueError);
}

namespace {

/// The repository's file `name` (the tests' fixtures are in tests/fixtures).
std::string repository_file(const std::string& name) {
    const auto path = std::filesystem::path(ATTOGRAD_FIXTURE_DIR) / ".." / ".." / name;
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), path.string());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/// The part of `text` from the first `start` to the next `end` after it.
std::string between(const std::string& text, const std::string& start, const std::string& end) {
    const auto from = text.find(start);
    REQUIRE_MESSAGE(from != std::string::npos, start);
    const auto to = text.find(end, from + start.size());
    REQUIRE_MESSAGE(to != std::string::npos, end);
    return text.substr(from, to - from);
}

/// Whether `name` occurs in `text` as a whole task name (not inside keyword-end, say).
bool names(const std::string& text, const std::string& name) {
    const auto part_of_name = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; };
    for (auto at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
        const std::size_t after = at + name.size();
        if ((at == 0 || !part_of_name(text[at - 1])) && (after == text.size() || !part_of_name(text[after])))
            return true;
    }
    return false;
}

}  // namespace

// The lists of bundled tasks that the docs write by hand (docs/howto/extend-program.md says to
// extend them): a task added by the recipe must appear in each.
TEST_CASE("every bundled task is named in README.md's data/ row and docs/reference/data.md's list") {
    const std::string readme = between(repository_file("README.md"), "| `data/` |", "\n");
    const std::string reference = between(repository_file("docs/reference/data.md"), "(bundled: ", ";");
    for (const auto& name : task_names()) {
        if (name == "twice") continue;  // this file's own, registered by the case below
        CAPTURE(name);
        CHECK(names(readme, name));
        CHECK(names(reference, name));
    }
}

TEST_CASE("a program registers its own task: make_task makes it and task_names lists it last") {
    register_task(twice_entry());
    CHECK(task_names().back() == "twice");
    const auto task = make_task("twice");
    CHECK(task->info().name == "twice");
    CHECK(task->held_out().size() == 1);
    CHECK(task_entry("twice").target_accuracy == 0.5);
    CHECK(task_entry("twice").defaults.at("train.steps") == 7);

    CHECK_THROWS_WITH_AS(register_task(twice_entry()),
                         doctest::Contains("task 'twice' is registered already"), ValueError);
    TaskEntry bad = twice_entry();
    bad.name = "data";
    CHECK_THROWS_WITH_AS(register_task(bad), doctest::Contains("'data' is reserved"), ValueError);
    bad.name = "two words";
    CHECK_THROWS_WITH_AS(register_task(bad), doctest::Contains("without spaces"), ValueError);
    bad.name = "other";
    bad.target_accuracy = 0.0;
    CHECK_THROWS_WITH_AS(register_task(bad), doctest::Contains("target_accuracy must be in (0, 1], got 0"),
                         ValueError);
    bad.target_accuracy = 1.0;
    bad.make = {};
    CHECK_THROWS_WITH_AS(register_task(bad), doctest::Contains("task 'other' has no make function"),
                         ValueError);
    bad.make = twice_entry().make;
    bad.defaults = 5;
    CHECK_THROWS_WITH_AS(register_task(bad), doctest::Contains("defaults must be a JSON object"), ValueError);
    TaskEntry misnamed = twice_entry();
    misnamed.name = "thrice";  // its make gives a task named "twice"
    register_task(misnamed);
    CHECK_THROWS_WITH_AS(make_task("thrice"),
                         doctest::Contains("make_task: task 'thrice' made a task named 'twice'"), ValueError);
    const std::vector<std::string> names = task_names();
    CHECK(std::count(names.begin(), names.end(), "other") == 0);
}
