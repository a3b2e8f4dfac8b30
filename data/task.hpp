// Tasks: source/target examples, a task's metadata, seeded generators with fixed held-out
// splits, and the registry of the bundled toy tasks.
#pragma once

#include "core/generator.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace attograd::data {

/// One source/target pair, as tokens (strings; a Vocabulary turns them into ids).
struct Example {
    std::vector<std::string> source;  ///< the input tokens
    std::vector<std::string> target;  ///< the expected output tokens
    /// Same source and target.
    bool operator==(const Example&) const = default;
};

/// Which accuracy a task is judged by: per target token, or per whole target sequence (exact
/// match).
enum class Metric { Token, Sequence };

/// What a task is: its name, a description and an example for listings, how it is judged and
/// tokenised, and its length limits.
struct TaskInfo {
    std::string name;                  ///< the name make_task() takes, e.g. "reverse"
    std::string description;           ///< one line for listings
    std::string example;               ///< one "source -> target" line
    Metric metric = Metric::Sequence;  ///< how held-out accuracy is judged: per token or per whole sequence
    std::string alignment;             ///< the right alignment in words ("" when none is defined)
    bool char_level = false;           ///< characters are tokens (otherwise whitespace-separated)
    std::int64_t max_source_len = 0;   ///< longest source in tokens
    std::int64_t min_source_len = 1;   ///< shortest source of a training example in tokens
    std::int64_t max_target_len = 0;   ///< longest target in tokens
    bool same_length = false;          ///< target length == source length for every example
};

/// A task: a source of training examples, a fixed held-out split, a tokenizer and, where the
/// task defines them, the right answer and the right alignment for any source.
class Task {
public:
    virtual ~Task() = default;

    /// The task's metadata.
    const TaskInfo& info() const { return info_; }
    /// The tokens the vocabulary needs, in a fixed order (never a reserved token).
    virtual std::vector<std::string> symbols() const = 0;
    /// One training example drawn with `generator` (same generator state, same example); never
    /// one whose source is held out.
    virtual Example train_example(Generator& generator) const = 0;
    /// `count` training examples: train_example(generator) `count` times, in order (a training
    /// set drawn once, for a Batcher).
    std::vector<Example> train_examples(std::size_t count, Generator& generator) const;
    /// The held-out examples (the same on every run, whatever the training seed).
    const std::vector<Example>& held_out() const { return held_out_; }

    /// Splits text into the task's tokens (UTF-8 characters, or whitespace-separated words; a
    /// task may tokenise otherwise, as translate does with BLEU's tokeniser); a leading UTF-8
    /// byte order mark is dropped (strip_bom). Throws ValueError when `text` is not valid UTF-8.
    virtual std::vector<std::string> tokenize(const std::string& text) const;
    /// Joins tokens back into text.
    std::string detokenize(const std::vector<std::string>& tokens) const;

    /// The right source position for each target token, or nullopt when the task defines no
    /// alignment: copy t -> t, reverse t -> n-1-t, sort t -> position of the t-th smallest,
    /// recall -> the key that matches the query.
    virtual std::optional<std::vector<std::int64_t>> alignment(const Example& example) const;
    /// The correct target for `source`, or nullopt when the task cannot compute one (user
    /// data) or the source is not a valid input of the task.
    virtual std::optional<std::vector<std::string>> solve(const std::vector<std::string>& source) const;
    /// Every accepted target of `example`'s source, the references BLEU scores an output against
    /// (Papineni et al. 2002 score against several): {example.target} unless the task knows
    /// more (translate: each distinct translation the catalogs give for the source).
    virtual std::vector<std::vector<std::string>> references(const Example& example) const;

protected:
    TaskInfo info_;                  ///< what info() returns; set by the subclass's constructor
    std::vector<Example> held_out_;  ///< what held_out() returns; set by the subclass's constructor
};

/// A task whose examples come from a seeded generator. The held-out split is generated once
/// from a seed fixed per task; training examples with a held-out source are drawn again, so
/// the two never share a source.
class GeneratedTask : public Task {
public:
    Example train_example(Generator& generator) const override;

    /// Number of held-out examples of every generated task.
    static constexpr int held_out_size = 500;

protected:
    /// One example of the task (held out or not).
    virtual Example generate(Generator& generator) const = 0;
    /// Fills held_out_ from the fixed seed; call at the end of the derived constructor.
    void make_held_out(std::uint64_t seed);

private:
    std::unordered_set<std::string> held_out_sources_;
};

/// A task's entry in the task registry: how to make the task, and what a training program
/// uses for it by default.
struct TaskEntry {
    std::string name{};                             ///< the name make_task() takes, e.g. "reverse"
    std::function<std::unique_ptr<Task>()> make{};  ///< a new instance of the task
    /// The held-out accuracy (of the task's metric, in (0, 1]) at which training stops early.
    double target_accuracy = 1.0;
    /// The training settings this task sets differently from the program's defaults, keyed by
    /// their config.json name, e.g. {"model.heads": 4, "train.steps": 4000}. The attograd
    /// program refuses a key it does not know (ValueError naming the task and the key).
    nlohmann::json defaults = nlohmann::json::object();
};

/// Adds `entry` to the registry: make_task(entry.name) makes it, task_names() lists it last. A
/// program registers its own tasks this way before it parses its command line. Thread-safe.
/// Throws ValueError when the name is empty, contains whitespace or is taken ("data" is
/// reserved for user data), when `make` is empty, when the target is not in (0, 1], or when
/// `defaults` is not a JSON object.
void register_task(TaskEntry entry);
/// The registered entry of task `name`. Throws ValueError listing the known names otherwise.
const TaskEntry& task_entry(const std::string& name);
/// Names of the registered tasks in registration order: the bundled copy, reverse, sort,
/// recall and dates first.
std::vector<std::string> task_names();
/// A new instance of the registered task `name`. Throws ValueError listing the known names
/// otherwise, and when the entry's `make` returns null or a task whose info().name is not `name`.
std::unique_ptr<Task> make_task(const std::string& name);

}  // namespace attograd::data
