// User data: a TSV file of `source<TAB>target` lines as a task.
#pragma once

#include "tasks.hpp"

#include <memory>
#include <string>
#include <vector>

namespace attograd::cli {

/// Parses TSV text: one `source<TAB>target` pair per line; blank lines are skipped, a trailing
/// `\r` is dropped. Tokens are whitespace-separated, or UTF-8 characters when `chars`.
/// `name` is used in messages. Throws ValueError `NAME:LINE: ...` for a line without exactly
/// one tab or with an empty side, and `NAME: no examples` when nothing is left.
std::vector<Example> parse_tsv(const std::string& text, bool chars, const std::string& name);

/// Reads and parses a TSV file (see parse_tsv). Throws IoError when it cannot be read.
std::vector<Example> read_tsv(const std::string& path, bool chars);

/// Writes examples as TSV text (the inverse of parse_tsv).
std::string to_tsv(const std::vector<Example>& examples, bool chars);

/// The user's examples as a task. The held-out split is fixed: 10 % of the distinct sources
/// (at least one), chosen by a seeded shuffle, so that no source is in both splits. Throws
/// ValueError when fewer than two distinct sources exist.
std::unique_ptr<Task> make_data_task(std::vector<Example> examples, bool chars);

/// A task that only evaluates given held-out examples (a saved run of user data); it has no
/// training examples. `symbols` are the vocabulary's tokens.
std::unique_ptr<Task> make_saved_data_task(std::vector<Example> held_out, bool chars,
                                           std::vector<std::string> symbols);

}  // namespace attograd::cli
