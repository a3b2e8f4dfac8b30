// A bundled task, a vocabulary and padded batches with their masks (PyTorch's DataLoader +
// pad_sequence semantics).
#include <attograd/attograd.hpp>
using namespace attograd;

int main() {
    Generator gen(0);
    const auto task = data::make_task("reverse");      // or data::make_data_task(dataset)
    const data::Example e = task->train_example(gen);  // never a held-out source
    const std::vector<data::Example> train = task->train_examples(1024, gen);
    std::vector<std::vector<std::string>> sequences;
    for (const data::Example& x : train) sequences.push_back(x.source), sequences.push_back(x.target);
    const data::Vocabulary vocab =
        data::Vocabulary::build_from_sequences(sequences);  // ids 0-3: <pad> <bos> <eos> <unk>
    const data::Batcher batcher(train, vocab, {.batch_size = 32, .shuffle = true, .bucket_batches = 8});
    for (const data::Batch& b : batcher.batches(3, gen)) {  // 3 steps, epoch after epoch
        // b.source.ids int64 [B, S], b.source.key_padding_mask bool [B, S] (true at padding)
        const data::TeacherForcing tf = data::teacher_forcing(b.target);
        // tf.decoder_input.ids [B, T+1] = <bos> y <pad>...; tf.labels [B, T+1] = y <eos> <pad>...
        fmt::print("source {} target {} decoder input {}\n", b.source.ids.shape(), b.target.ids.shape(),
                   tf.decoder_input.ids.shape());
    }
    const data::Batch all = data::collate(task->held_out(), vocab);  // a whole split as one batch
    fmt::print("{} held-out examples, first source: {}\n", all.source.ids.size(0), data::join(e.source, " "));
}
