// Head knockout as a scoped guard: silence named heads of named layers without changing model code.
#pragma once

#include "inspect/intervention.hpp"
#include "nn/module.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attograd::inspect {

/// RAII: while alive, every forward on this thread of the named attention layers under `root`
/// runs with the named heads silenced: their weights are 0 and they add 0 to the output
/// (head masking as in Michel et al. 2019, "Are Sixteen Heads Really Better than One?"; the
/// same as a head whose keys are all masked). Model code does not change:
///
///     inspect::HeadKnockout knockout(model, {{"layers.0.self_attn", {1, 3}}});
///     auto accuracy_without = evaluate(model);   // heads 1 and 3 of layer 0 silenced
///
/// An AttentionIntervention whose replacements are all Replacement::silence(); it works on every
/// path, local attention included. Guards nest (with each other and with AttentionIntervention);
/// an inner guard silences its heads and the outer one's. An AttentionRecorder alive at the same
/// time records the silenced heads as zero weights.
/// Throws ValueError when `heads` is empty or names a head twice, when `root` has no attention layer, or when
/// a name is not an attention layer under `root` (the message lists the layers and their head counts);
/// IndexError when a head is outside [0, num_heads).
class HeadKnockout {
public:
    /// While alive, the heads named in `heads` (layer name under `root` -> head indices) are
    /// silenced; throws as described above.
    HeadKnockout(const nn::Module& root, const std::map<std::string, std::vector<std::int64_t>>& heads);

private:
    AttentionIntervention intervention_;
};

}  // namespace attograd::inspect
