// The charlm task: next-character prediction on a text installed on the machine, by default the
// fortune cookies of Debian's fortunes-min package.
#pragma once

#include "data/task.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace attograd::data {

/// The files of Debian's `fortunes-min` package (fortune-mod's fortunes, literature and riddles:
/// about 96 KB of English in 821 short texts separated by lines holding "%"), which
/// `make deps` installs.
std::vector<std::string> fortunes_paths();

/// Options of the charlm task.
struct CharLMOptions {
    /// Text files in fortune's format: texts separated by lines holding only "%" (a file without
    /// such lines is one text).
    std::vector<std::string> paths = fortunes_paths();
    std::int64_t context = 64;  ///< characters the model reads per example (>= 1)
};

/// charlm: next-character prediction. Every text of the files has its runs of spaces, line
/// breaks and other control characters (control_length) collapsed to one space, so each is one
/// line; the texts are joined by " % ". Every 10th text (the 10th, 20th, ...) is held out.
/// An example is a window of context + 1 characters: source c_0 .. c_{n-1}, target c_1 .. c_n
/// (character level, token accuracy). Training windows start anywhere in the training texts;
/// the held-out examples are the first 500 non-overlapping windows of the held-out texts. The
/// symbols are every character of the files. Throws IoError naming the file and the package that
/// installs the default files when a file cannot be read; ValueError when context < 1, a file is
/// not UTF-8, or the training or held-out text is shorter than context + 1 characters.
std::unique_ptr<Task> make_charlm_task(const CharLMOptions& options = {});

/// charlm's registry entry (default options): a two-layer causal Transformer (`lm`, 4 heads,
/// width 64, feed-forward 256) trained with Adam at lr 3e-3 on batches of 32 windows, at most
/// 2000 steps; target 50 % held-out next-character accuracy, where the held-out accuracy levels
/// off (the training texts are about 86 KB, which the model then starts to memorise).
TaskEntry charlm_task_entry();

}  // namespace attograd::data
