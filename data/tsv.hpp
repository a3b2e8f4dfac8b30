// TSV datasets: `source<TAB>target` lines read as word- or character-level examples, and
// such examples as a task with a fixed held-out split.
#pragma once

#include "data/task.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::data {

/// A user's examples from TSV text: one `source<TAB>target` pair per line. Blank lines are
/// skipped, a trailing `\r` is dropped and a UTF-8 byte order mark at the start of the text
/// is ignored (strip_bom). Tokens are whitespace-separated words, or UTF-8
/// characters when `chars` (a space is then a token too).
///
/// Reserved tokens: a word-level line holding the literal text of a special token (`<pad>`,
/// `<bos>`, `<eos>`, `<unk>`) as a word is refused with its line number; it would otherwise be
/// read as that token (an `<eos>` in a target ends it, a `<pad>` is ignored by the loss) and
/// train to nonsense. Rename such words in the file. At character level no token can collide:
/// every token is one character and every special token is five, so `<pad>` in a character
/// file is the five ordinary characters `<`, `p`, `a`, `d`, `>` and is accepted as such.
class TsvDataset {
public:
    /// Parses TSV `text`; `name` (usually the path) starts every message. Throws ValueError
    /// `NAME:LINE: ...` for a line that is not valid UTF-8, holds a `\r` before its end (a file
    /// whose lines end in `\r` alone), has no tab or more than one, has an
    /// empty side, holds a reserved token (word level) or a token that breaks Vocabulary's token
    /// rule (a control character such as NUL), and `NAME: no examples` when no line is left.
    static TsvDataset parse(std::string_view text, bool chars, const std::string& name);
    /// Reads and parses the file at `path` (see parse). Throws IoError naming the path when it
    /// cannot be read, is not a regular file (a directory, FIFO or device) or holds more than
    /// 256 MiB, and ValueError as parse does.
    static TsvDataset read(const std::filesystem::path& path, bool chars);

    /// The examples in file order.
    const std::vector<Example>& examples() const { return examples_; }
    /// Number of examples.
    std::int64_t size() const { return static_cast<std::int64_t>(examples_.size()); }
    /// Example `i`; throws IndexError outside [0, size()).
    const Example& operator[](std::int64_t i) const;
    /// Whether tokens are characters (else words).
    bool chars() const { return chars_; }
    /// Every distinct token of sources and targets, sorted (bytewise): what a Vocabulary of
    /// this data is built from.
    std::vector<std::string> symbols() const;

private:
    TsvDataset(std::vector<Example> examples, bool chars) : examples_(std::move(examples)), chars_(chars) {}
    std::vector<Example> examples_;
    bool chars_ = false;
};

/// `examples` as TSV text, one line each, tokens joined by a space (words) or nothing
/// (characters): TsvDataset::parse reads it back to the same examples (whose tokens, as parse
/// requires, hold no control or invisible format character such as U+FEFF).
std::string to_tsv(const std::vector<Example>& examples, bool chars);

/// A dataset as a task named "data" (sequence accuracy, no alignment). The held-out split is
/// fixed: 10 % of the distinct sources (at least one), chosen by a shuffle with a fixed seed
/// (1006), so that it does not depend on any training seed and no source is in both splits.
/// Training examples are drawn uniformly, with replacement, from the rest. Throws ValueError
/// when fewer than two distinct sources exist.
std::unique_ptr<Task> make_data_task(const TsvDataset& dataset);
/// The defaults a training program uses for a "data" task, which is not in the registry (it
/// needs a file; `make` is empty): target 100 % held-out sequence accuracy, one encoder layer
/// and one decoder layer, 2000 steps.
TaskEntry data_task_entry();

/// A "data" task that only evaluates given held-out examples (a saved run); drawing a training
/// example throws ValueError. `symbols` are the vocabulary's tokens without the special ones.
std::unique_ptr<Task> make_saved_data_task(std::vector<Example> held_out, bool chars,
                                           std::vector<std::string> symbols);

}  // namespace attograd::data
