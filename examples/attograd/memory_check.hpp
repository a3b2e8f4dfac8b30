// `attograd train`'s estimate of the memory a run needs, checked before the model is built.
#pragma once

#include "config.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace attograd::cli {

/// The bytes one training run of `config` needs at least (float32 everywhere), as
/// parameters x (weight + gradient + optimizer state: Adam's two moments, SGD's momentum
/// buffer when momentum > 0) + the activations of one batch kept for backward. The formula
/// is in memory_check.cpp; it counts the large tensors only, so the true peak is higher.
/// `training` false: the weights and one batch's activations (eval, inspect).
std::uint64_t training_bytes(const RunConfig& config, bool training = true);

/// The bytes this process may still allocate: MemAvailable of /proc/meminfo, lowered to the
/// cgroup's memory.max - memory.current when a limit is set (/sys/fs/cgroup). nullopt when
/// neither can be read (the check is then skipped).
std::optional<std::uint64_t> available_bytes();

/// Refuses (UsageError, one line) a run whose training_bytes exceed `available`, naming the
/// size flags as `names` says and the GiB needed and available.
void check_memory(const RunConfig& config, const SettingNames& names, std::optional<std::uint64_t> available,
                  bool training = true);

}  // namespace attograd::cli
