// Building a vocabulary from one or both sides of a set of examples.
#include "data/example_vocabulary.hpp"

namespace attograd::data {

Vocabulary build_vocabulary(const std::vector<Example>& examples, ExampleSide side,
                            const VocabularyOptions& options) {
    std::vector<std::vector<std::string>> sequences;
    sequences.reserve(examples.size() * (side == ExampleSide::Both ? 2 : 1));
    if (side != ExampleSide::Target)
        for (const Example& example : examples) sequences.push_back(example.source);
    if (side != ExampleSide::Source)
        for (const Example& example : examples) sequences.push_back(example.target);
    return Vocabulary::build_from_sequences(sequences, options);
}

}  // namespace attograd::data
