// The bundled sequence tasks: copy, reverse, sort (letters) and associative recall.
#pragma once

#include "data/task.hpp"

#include <memory>

namespace attograd::data {

/// copy: 4-10 letters from a-t -> the same letters. Word level, sequence accuracy; alignment
/// target t -> source t.
std::unique_ptr<Task> make_copy_task();
/// reverse: 4-10 letters from a-t -> the letters reversed. Word level, sequence accuracy;
/// alignment target t -> source n-1-t.
std::unique_ptr<Task> make_reverse_task();
/// sort: 4-10 distinct letters from a-t -> sorted alphabetically. Word level, token accuracy;
/// alignment target t -> the source position of the t-th smallest letter.
std::unique_ptr<Task> make_sort_task();
/// recall (associative recall): `k1 v1 ... kn vn ? kq` with 2-6 distinct keys from a-t and
/// digit values -> the value stored with kq. Word level, token accuracy; alignment: the source
/// position of the key that matches the query.
std::unique_ptr<Task> make_recall_task();

/// The registry entries of copy and reverse: target 99 % held-out sequence accuracy, the
/// program's default model and training.
TaskEntry copy_task_entry();
TaskEntry reverse_task_entry();  ///< see copy_task_entry
/// sort's registry entry: target 95 % token accuracy, 2000 steps.
TaskEntry sort_task_entry();
/// recall's registry entry: target 95 % token accuracy; next-token (smeared) keys, two decoder
/// layers, lr 2e-3 over batches of 64 for 6000 steps.
TaskEntry recall_task_entry();

}  // namespace attograd::data
