// Vocabularies of a set of examples: one shared, or one per side (source and target).
#pragma once

#include "data/task.hpp"
#include "data/vocabulary.hpp"

#include <vector>

namespace attograd::data {

/// Which tokens of the examples a vocabulary is built from.
enum class ExampleSide {
    Source,  ///< the sources only: the encoder's vocabulary
    Target,  ///< the targets only: the decoder's vocabulary
    Both,    ///< sources and targets: one vocabulary shared by encoder and decoder
};

/// Vocabulary::build_from_sequences over `side` of every example: tokens seen fewer than
/// options.min_freq times are left out and read as <unk>, at most options.max_tokens ids (the 4
/// special tokens included), most frequent first. For translation, two vocabularies (Source,
/// Target) keep each language's words apart and each smaller than a shared one. Throws as
/// build_from_sequences; its "sequence s" is example s's source (Source, and Both for s < N) or
/// target (Target; Both: example s - N's, N = examples.size()).
Vocabulary build_vocabulary(const std::vector<Example>& examples, ExampleSide side,
                            const VocabularyOptions& options = {});

}  // namespace attograd::data
