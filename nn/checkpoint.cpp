// Saving and loading a module's state_dict as a safetensors checkpoint.
#include "nn/checkpoint.hpp"

#include "core/serialization.hpp"

namespace attograd::nn {

void save(const Module& module, const std::filesystem::path& path,
          const std::map<std::string, std::string>& metadata) {
    save_safetensors(path, module.state_dict(), metadata);
}

void load(Module& module, const std::filesystem::path& path, bool strict) {
    const StateDict state = load_safetensors(path);
    try {
        module.load_state_dict(state, strict);
    } catch (const Error& e) {
        throw IoError(fmt::format("nn::load: '{}' does not fit the {}: {}", path.string(), module.type_name(),
                                  e.what()));
    }
}

}  // namespace attograd::nn
