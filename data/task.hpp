// Tasks: source/target examples, a task's metadata, seeded generators with fixed held-out
// splits, and the registry of the bundled toy tasks.
#pragma once

#include "core/generator.hpp"

#include <cstddef>
#include <cstdint>
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

/// Names of the bundled tasks, in the order listings show them: copy, reverse, sort, recall,
/// dates, coref. (translate is built from the machine's catalogs with options: see
/// make_translate_task.)
std::vector<std::string> task_names();
/// The bundled task `name` (see task_names). Throws ValueError listing the known names
/// otherwise.
std::unique_ptr<Task> make_task(const std::string& name);

}  // namespace attograd::data
