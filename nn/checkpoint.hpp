// Saving and loading a module's state_dict as a safetensors checkpoint.
#pragma once

#include "nn/module.hpp"

#include <filesystem>
#include <map>
#include <string>

namespace attograd::nn {

/// Writes `module.state_dict()` to `path` as safetensors (see attograd::save_safetensors:
/// atomic, readable by Python's `safetensors`; the keys are PyTorch's state_dict keys).
/// Throws IoError on a failed write.
void save(const Module& module, const std::filesystem::path& path,
          const std::map<std::string, std::string>& metadata = {});

/// Loads a safetensors checkpoint into `module` (load_state_dict from the file). Throws
/// IoError naming the file for an unreadable or corrupt file (see attograd::load_safetensors)
/// and for a checkpoint that does not fit the module (missing or unexpected names, shapes or
/// dtypes that differ: the message names the tensors); nothing is changed when it throws.
void load(Module& module, const std::filesystem::path& path, bool strict = true);

}  // namespace attograd::nn
