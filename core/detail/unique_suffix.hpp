// The number that ends a name a writer creates exclusively (`.NAME.tmp.PID.N`,
// `.NAME.staging-PID-N`).
#pragma once

#include <atomic>
#include <cstdint>
#include <random>

namespace attograd::detail {

/// N for the `attempt`-th try (from 0) at creating a name: the next of `counter` at first, then,
/// once a name was found taken, a random 63-bit number: names planted ahead by someone who can
/// write the directory (a shared /tmp) follow the counter and the PID, which anyone can predict,
/// so they cannot make every try fail.
inline std::uint64_t unique_suffix(std::atomic<unsigned>& counter, int attempt) {
    if (attempt == 0) return counter.fetch_add(1);
    std::random_device entropy;
    return ((std::uint64_t{entropy()} << 32) | entropy()) >> 1;
}

}  // namespace attograd::detail
