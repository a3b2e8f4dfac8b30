// data/translate_task: the translate task over catalogs built in the test (splits, references,
// tokens, the shortest-pairs subset, refused input) and, when installed, the machine's French ones:
// their size, their references, and a small model learning 300 of them.
#include "data/translate_task.hpp"

#include "core/error.hpp"
#include "core/ops.hpp"
#include "data/batcher.hpp"
#include "data/bleu.hpp"
#include "data/example_vocabulary.hpp"
#include "data/teacher_forcing.hpp"
#include "mo_builder.hpp"
#include "nn/seq2seq_transformer.hpp"
#include "optim/adam.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <set>

using namespace attograd;
using namespace attograd::data;

namespace {

/// A locale directory with LANG "xx": a.mo holds "Save" -> "Enregistrer", "Invalid argument."
/// and `count` pairs "open the file number NNN" -> "ouvrir le fichier numéro NNN"; b.mo and
/// c.mo (big-endian) "Save" -> "Sauvegarder".
struct Catalogs {
    testing::TempDir dir;
    std::filesystem::path messages = dir.path() / "xx" / "LC_MESSAGES";

    explicit Catalogs(int count) {
        std::filesystem::create_directories(messages);
        std::vector<std::pair<std::string, std::string>> a{{"Save", "Enregistrer"},
                                                           {"Invalid argument.", "Argument invalide."}};
        for (int i = 0; i < count; ++i)
            a.emplace_back(fmt::format("open the file number {:03}", i),
                           fmt::format("ouvrir le fichier numéro {:03}", i));
        testing::write_bytes(messages / "a.mo", testing::make_mo(a));
        testing::write_bytes(messages / "b.mo", testing::make_mo({{"Save", "Sauvegarder"}}));
        testing::write_bytes(messages / "c.mo", testing::make_mo({{"Save", "Sauvegarder"}}, true));
    }
    TranslateTaskOptions options(std::int64_t min_train_pairs = 100) const {
        return {.pairs = {.language = "xx", .locale_dir = dir.path()}, .min_train_pairs = min_train_pairs};
    }
};

std::string key(const std::vector<std::string>& tokens) { return fmt::format("{}", fmt::join(tokens, " ")); }

}  // namespace

TEST_CASE("translate: held-out sources never train, targets are the most frequent translation") {
    const Catalogs catalogs(300);
    const auto task = make_translate_task(catalogs.options());
    CHECK(task->info().name == "translate");
    CHECK(task->info().metric == Metric::Sequence);
    CHECK_FALSE(task->info().char_level);
    CHECK(task->catalogs().size() == 3);
    CHECK(task->train_set().size() + task->held_out().size() == 302);
    CHECK(task->held_out().size() > 10);  // about 10 %
    CHECK(task->held_out().size() < 60);
    std::set<std::string> held;
    for (const Example& e : task->held_out()) {
        held.insert(key(e.source));
        CHECK(is_held_out(key(e.source), 10));
        CHECK(std::ssize(e.source) <= task->info().max_source_len);
    }
    for (const Example& e : task->train_set()) CHECK(held.count(key(e.source)) == 0);
    Generator generator(3);
    std::set<std::string> drawn;
    for (int i = 0; i < 2000; ++i) {
        const Example e = task->train_example(generator);
        CHECK(held.count(key(e.source)) == 0);
        drawn.insert(key(e.source));
    }
    CHECK(drawn.size() * 10 > task->train_set().size() * 9);  // uniform over the training pairs

    // "Save": Sauvegarder twice (b.mo, c.mo), Enregistrer once; BLEU's tokens at word level.
    const Example save{{"Save"}, {"Sauvegarder"}};
    const auto all = task->train_set();
    const bool save_trains = std::find(all.begin(), all.end(), save) != all.end();
    const bool save_held = held.count("Save") == 1;
    CHECK(save_trains != save_held);
    CHECK(task->references(save) == std::vector<std::vector<std::string>>{{"Sauvegarder"}, {"Enregistrer"}});
    CHECK(task->references(Example{{"unknown"}, {"inconnu"}}) ==
          std::vector<std::vector<std::string>>{{"inconnu"}});
    CHECK(task->tokenize("\xEF\xBB\xBFInvalid argument.") ==
          std::vector<std::string>{"Invalid", "argument", "."});
    CHECK_THROWS_WITH_AS(task->tokenize("bad \xff"), doctest::Contains("not valid UTF-8"), ValueError);
    const auto symbols = task->symbols();
    CHECK(std::is_sorted(symbols.begin(), symbols.end()));
    CHECK(std::find(symbols.begin(), symbols.end(), "numéro") != symbols.end());
}

TEST_CASE("translate: max_train_pairs keeps the shortest pairs, and too few pairs is refused") {
    const Catalogs catalogs(300);
    TranslateTaskOptions options = catalogs.options(2);
    options.max_train_pairs = 2;
    options.max_held_out_pairs = 1;
    const auto small = make_translate_task(options);
    REQUIRE(small->train_set().size() == 2);
    CHECK(small->held_out().size() == 1);
    // "Save" (1 token, a training source) is the shortest; the rest have 3 or 5 tokens.
    const auto& kept = small->train_set();
    CHECK(std::find(kept.begin(), kept.end(), Example{{"Save"}, {"Sauvegarder"}}) != kept.end());

    CHECK_THROWS_WITH_AS(make_translate_task(catalogs.options(1000)), doctest::Contains("translate: only"),
                         ValueError);
    CHECK_THROWS_WITH_AS(make_translate_task(catalogs.options(1000)),
                         doctest::Contains("pairs for language xx after filtering"), ValueError);
    options.max_train_pairs = -1;
    CHECK_THROWS_WITH_AS(make_translate_task(options), doctest::Contains("max_train_pairs"), ValueError);
    CHECK_THROWS_WITH_AS(make_translate_task(catalogs.options(0)),
                         doctest::Contains("min_train_pairs must be >= 1"), ValueError);
}

TEST_CASE("translate: no catalogs for the language, or a file that is not a .mo catalog, is refused") {
    const Catalogs catalogs(300);
    TranslateTaskOptions options = catalogs.options();
    options.pairs.language = "yy";
    CHECK_THROWS_WITH_AS(make_translate_task(options),
                         doctest::Contains("no gettext catalogs for language yy"), IoError);
    testing::write_bytes(catalogs.messages / "d.mo", "plain text that is long enough to have a header");
    const std::string not_mo = (catalogs.messages / "d.mo").string() + ": not a .mo file";
    CHECK_THROWS_WITH_AS(make_translate_task(catalogs.options()), doctest::Contains(not_mo.c_str()), IoError);
}

TEST_CASE("translate over this machine's French catalogs: tens of thousands of pairs, several references") {
    std::error_code error;
    if (!std::filesystem::is_directory("/usr/share/locale/fr/LC_MESSAGES", error)) {
        MESSAGE("skipped: no French catalogs installed");
        return;
    }
    const auto task = make_translate_task({});
    MESSAGE(task->train_set().size() << " training and " << task->held_out().size() << " held-out pairs from "
                                     << task->catalogs().size() << " catalogs");
    CHECK(task->train_set().size() >= 1000);
    CHECK(task->held_out().size() >= 100);
    std::size_t several = 0;
    for (const Example& e : task->held_out()) {
        const auto refs = task->references(e);
        REQUIRE_FALSE(refs.empty());
        CHECK(refs.front() == e.target);
        several += refs.size() > 1;
    }
    MESSAGE(several << " held-out sources have more than one reference");
    CHECK(several > 0);
    // Scoring the references against themselves is perfect BLEU; the first against all of them too.
    std::vector<std::vector<std::vector<std::string>>> refs;
    std::vector<std::vector<std::string>> hyps;
    for (const Example& e : task->held_out()) {
        refs.push_back(task->references(e));
        hyps.push_back(e.target);
    }
    CHECK(corpus_bleu(refs, hyps).score == doctest::Approx(1.0));
}

namespace {

/// Exact matches and corpus unigram BLEU (BLEU-1) of a model's greedy translations of `examples` against
/// every reference the task gives.
std::pair<double, double> score(const nn::Seq2SeqTransformer& model, const TranslateTask& task,
                                const Vocabulary& vocab, const std::vector<Example>& examples) {
    std::vector<std::vector<std::int64_t>> sources;
    for (const Example& e : examples) sources.push_back(vocab.encode(e.source));
    const PaddedSequences src = pad_sequences(sources);
    const auto hypotheses = model.greedy_decode(
        src.ids, {.bos_id = Vocabulary::bos_id, .eos_id = Vocabulary::eos_id, .max_length = 12});
    std::vector<std::vector<std::string>> outputs;
    std::vector<std::vector<std::vector<std::string>>> references;
    std::int64_t exact = 0;
    for (std::size_t i = 0; i < examples.size(); ++i) {
        outputs.push_back(vocab.decode(hypotheses[i].tokens));
        references.push_back(task.references(examples[i]));
        exact += outputs.back() == examples[i].target;
    }
    return {static_cast<double>(exact) / std::ssize(examples),
            corpus_bleu(references, outputs, {.max_order = 1}).score};
}

}  // namespace

TEST_CASE("translate learns: 300 short French pairs, a small Transformer, 300 steps") {
    std::error_code error;
    if (!std::filesystem::is_directory("/usr/share/locale/fr/LC_MESSAGES", error)) {
        MESSAGE("skipped: no French catalogs installed");
        return;
    }
    TranslateTaskOptions options;
    options.max_train_pairs = 300;
    options.max_held_out_pairs = 50;
    const auto task = make_translate_task(options);
    REQUIRE(task->train_set().size() >= 250);
    const Vocabulary vocab = build_vocabulary(task->train_set(), ExampleSide::Both);
    Generator gen(0);
    nn::Seq2SeqTransformer model({.vocab_size = vocab.size(),
                                  .pad_id = Vocabulary::pad_id,
                                  .transformer = {.d_model = 64,
                                                  .nhead = 4,
                                                  .num_encoder_layers = 1,
                                                  .num_decoder_layers = 1,
                                                  .dim_feedforward = 128,
                                                  .dropout = 0.0}},
                                 gen);
    model.eval();
    const auto [exact_before, unigram_before] = score(model, *task, vocab, task->train_set());
    model.train();
    optim::Adam adam(model.parameters(), {.lr = 3e-3});
    const Batcher batcher(task->train_set(), vocab, {.batch_size = 32, .shuffle = true});
    for (const Batch& batch : batcher.batches(300, gen)) {
        const TeacherForcing tf = teacher_forcing(batch.target);
        const Tensor logits = model.forward(batch.source.ids, tf.decoder_input.ids);
        const Tensor loss = cross_entropy(reshape(logits, {-1, vocab.size()}), reshape(tf.labels, {-1}),
                                          {.ignore_index = Vocabulary::pad_id});
        adam.zero_grad();
        loss.backward();
        adam.step();
    }
    model.eval();
    const auto [exact_after, unigram_after] = score(model, *task, vocab, task->train_set());
    MESSAGE("training pairs: exact match " << exact_before << " -> " << exact_after << ", BLEU-1 "
                                           << unigram_before << " -> " << unigram_after);
    CHECK(exact_before < 0.05);
    CHECK(exact_after > 0.6);
    // The shortest messages are one or two words, without 4-grams: BLEU-1 measures their words.
    CHECK(unigram_before < 0.1);
    CHECK(unigram_after > 0.6);
}
