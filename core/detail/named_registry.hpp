// A registry of named entries (tasks, score functions): a fixed list of built-in entries, then
// those a program registers, each name once, guarded by one mutex.
#pragma once

#include "core/error.hpp"

#include <fmt/format.h>

#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attograd::detail {

/// Entries with a `name` member, in registration order. A deque keeps references to entries
/// valid while others are added. Callers lock `mutex` around every use of `entries`.
template <class Entry>
struct NamedRegistry {
    /// A registry holding `builtin` first.
    explicit NamedRegistry(std::deque<Entry> builtin) : entries(std::move(builtin)) {}

    std::mutex mutex;
    std::deque<Entry> entries;

    /// The entries' names in order. Call with `mutex` held.
    std::vector<std::string> names_locked() const {
        std::vector<std::string> names;
        for (const Entry& entry : entries) names.push_back(entry.name);
        return names;
    }
    /// Appends `entry` unless its name is taken: ValueError "<fn>: <what> '<name>' is registered
    /// already". Returns its index. Locks `mutex`.
    std::size_t add(Entry entry, std::string_view fn, std::string_view what) {
        const std::lock_guard lock(mutex);
        for (const Entry& known : entries)
            AG_CHECK(known.name != entry.name, ValueError, "{}: {} '{}' is registered already", fn, what,
                     entry.name);
        entries.push_back(std::move(entry));
        return entries.size() - 1;
    }
};

}  // namespace attograd::detail
