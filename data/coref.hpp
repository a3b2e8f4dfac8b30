// The `coref` task: which noun "it" refers to, decided by the adjective (Winograd-style
// templated sentences).
#pragma once

#include "data/task.hpp"

#include <memory>

namespace attograd::data {

/// coref: "the animal didn't cross the street because it was too tired" -> "animal", and the
/// same sentence ending in "too wide" -> "street" (the picture of "it" attending to "the animal"
/// in Vaswani et al. 2017's attention figures, after Levesque et al. 2012's Winograd schemas).
/// A sentence names one animate noun (animal, dog, cat, horse, ...) and one place (street, road,
/// river, bridge, ...), in either order (active: "the dog didn't cross the road ...", passive:
/// "the road wasn't crossed by the dog ..."), joined by one of several verb phrases, and ends in
/// "because it was too ADJ": an adjective of the animate kind (tired, scared, weak, ...) makes
/// "it" the animate noun, one of the place kind (wide, busy, icy, ...) the place. The target is
/// the one referent noun, so neither the position nor the last word answers alone: the model
/// must read the adjective's kind and find the noun of that kind. Word level, sequence
/// accuracy (one token); alignment: the target attends the source position of the referent.
std::unique_ptr<Task> make_coref_task();
/// coref's registry entry: target 95 % held-out accuracy; two encoder layers of two heads (the
/// referent depends on the last word, so the encoder's self-attention must carry the
/// adjective's kind to the nouns before the decoder's one query can pick one).
TaskEntry coref_task_entry();

}  // namespace attograd::data
