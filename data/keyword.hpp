// The `keyword` tasks: a topic label decided by one cue word among filler words (text
// classification in the spirit of Jain & Wallace 2019, with a known right alignment).
#pragma once

#include "data/task.hpp"

#include <memory>

namespace attograd::data {

/// keyword: 24 words, 23 of them filler words ("the", "of", "then", ...) and one cue word of one
/// of four topics (sport: goal, team, match; music: song, drum, piano; food: bread, soup, apple;
/// weather: rain, snow, storm) at a uniformly drawn position; the target is the one token naming
/// the cue's topic: "the of goal then ... so" -> "sport". A classification task whose label a
/// single word of a longer sequence decides (Jain & Wallace 2019, "Attention is not
/// Explanation", §3's text classification), written as seq2seq with a one-token target so that
/// every model of the program applies (the recurrent model is then their attention over a
/// recurrent encoder, one decoder step). Word level, sequence accuracy (one token); alignment:
/// the target attends the cue's position. A source the task can solve has exactly one cue word
/// and otherwise filler words.
std::unique_ptr<Task> make_keyword_task();
/// keyword-end: keyword with the cue always the last word, so that the label is in the state a
/// recurrent encoder ends in (the decoder's initial state) and attention need not be used for
/// it: the case where weights may look meaningful without deciding the output.
std::unique_ptr<Task> make_keyword_end_task();
/// keyword's registry entry: target 95 % held-out accuracy; one encoder self-attention layer.
TaskEntry keyword_task_entry();
/// keyword-end's registry entry: as keyword's.
TaskEntry keyword_end_task_entry();

}  // namespace attograd::data
