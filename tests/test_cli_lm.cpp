// `attograd train --model lm` on the language-model tasks: induction grows an induction head in
// layer 1, an lm run resumes bit for bit, `inspect` labels its heads and draws their curves, and
// `sample` draws the same text for the same seed and refuses bad input with one line.
#include "cli_helpers.hpp"

#include <regex>

using namespace cli_test;

namespace {

/// The best induction score of a layer-1 head in `inspect` output ("layer 1 head H: previous-token
/// P, induction I"); -1 when no such line.
double best_layer1_induction(const std::string& text) {
    static const std::regex line(R"(layer 1 head \d+: previous-token [0-9.]+, induction ([0-9.]+))");
    double best = -1.0;
    for (std::sregex_iterator it(text.begin(), text.end(), line), end; it != end; ++it)
        best = std::max(best, std::stod((*it)[1].str()));
    return best;
}

/// A short induction run: its defaults (the two-layer attention-only lm) for `steps` steps,
/// evaluated only at the end.
std::vector<std::string> induction_args(const std::string& steps) {
    return {"--task", "induction", "--steps", steps, "--eval-every", "1000", "--seed", "0"};
}

}  // namespace

// The phase change of the induction task with its defaults (2 attention-only layers of 4 heads,
// width 64, rotary positions, Adam at a constant lr 3e-3, batches of 32) and seed 0: the best
// layer-1 induction score over 100 held-out examples is about 0.1 untrained, passes 0.5 within
// 1000 steps (about 0.6 to 0.8 by step 800, the end of the loss plateau), and the model then
// continues a repeated segment.
TEST_CASE("induction: a layer-1 head of the default lm passes induction score 0.5 within 1000 steps") {
    TempDir tmp;
    train(tmp / "untrained", induction_args("0"));
    const Outcome before = run({"inspect", "--run", tmp / "untrained"});
    require_ok(before);
    const double untrained = best_layer1_induction(before.out);
    CHECK(untrained >= 0.0);
    CHECK(untrained < 0.25);

    train(tmp / "run", induction_args("1000"));
    const Outcome after = run({"inspect", "--run", tmp / "run"});
    require_ok(after);
    const double trained = best_layer1_induction(after.out);
    MESSAGE("best layer-1 induction score " << trained);
    CHECK(trained > 0.5);
    CHECK(after.out.find("(induction head)") != std::string::npos);
    // The induction head at work: the argmax continuation of a repeated segment is the segment.
    const Outcome repeat = run({"sample", "--run", tmp / "run", "--prompt", "q w e r t y u i q w e",
                                "--top-k", "1", "--length", "5"});
    require_ok(repeat);
    CHECK(repeat.out == "q w e r t y u i q w e r t y u i\n");
}

TEST_CASE("an lm run resumes bit for bit, and eval reports its next-token accuracy") {
    TempDir tmp;
    const std::vector<std::string> args = {"--task", "induction",        "--batch", "8",      "--eval-every",
                                           "100",    "--snapshot-every", "5",       "--seed", "1"};
    require_ok(train_run(args, "30", tmp / "whole"));
    interrupted_run(args, "30", tmp / "split", "12");
    CHECK(file_bytes(tmp / "split", "model.safetensors") == file_bytes(tmp / "whole", "model.safetensors"));
    CHECK(file_bytes(tmp / "split", "optimizer.safetensors") ==
          file_bytes(tmp / "whole", "optimizer.safetensors"));
    CHECK(file_bytes(tmp / "split", "attention_snapshots.safetensors") ==
          file_bytes(tmp / "whole", "attention_snapshots.safetensors"));
    CHECK(metrics_without_seconds(tmp / "split") == metrics_without_seconds(tmp / "whole"));
    const json config = read_config(tmp / "whole");
    CHECK(config["model"]["kind"] == "lm");
    CHECK(config["model"]["ffn_dim"] == 0);
    const json eval = eval_json(tmp / "whole");
    CHECK(eval["token_accuracy"].get<double>() >= 0.0);
    CHECK(eval["token_accuracy"].get<double>() <= 1.0);
    // BLEU is a translation's score: none for next-token guesses.
    CHECK(eval["bleu"].is_null());
    const Outcome text = run({"eval", "--run", tmp / "whole"});
    require_ok(text);
    CHECK(text.out.find("BLEU") == std::string::npos);
}

TEST_CASE(
    "--dropout acts in an lm's training: another model, a resume bit for bit, and an edited rate refused") {
    TempDir tmp;
    const std::vector<std::string> args = {"--task", "induction", "--batch", "8",      "--eval-every",
                                           "100",    "--ffn-dim", "16",      "--seed", "1"};
    auto with_dropout = args;
    with_dropout.insert(with_dropout.end(), {"--dropout", "0.5"});
    require_ok(train_run(args, "6", tmp / "plain"));
    require_ok(train_run(with_dropout, "6", tmp / "whole"));
    CHECK(file_bytes(tmp / "plain", "model.safetensors") != file_bytes(tmp / "whole", "model.safetensors"));
    interrupted_run(with_dropout, "6", tmp / "split", "3");
    CHECK(file_bytes(tmp / "split", "model.safetensors") == file_bytes(tmp / "whole", "model.safetensors"));
    // The first step's loss, computed again from the seed, is the dropout run's.
    edit_config(tmp / "whole", [](json& c) { c["model"]["dropout"] = 0.0; });
    check_refused(run({"eval", "--run", tmp / "whole"}),
                  {"config.json: progress.initial_loss is", "but the run's first step"});
}

TEST_CASE("inspect --format html of an lm run has the loss curve and the head-score curves") {
    TempDir tmp;
    train(tmp / "run", {"--task", "induction", "--steps", "20", "--batch", "8", "--snapshot-every", "5"});
    const fs::path page = tmp / "report.html";
    require_ok(run({"inspect", "--run", tmp / "run", "--format", "html", "--to", page}));
    const std::string html = read_text(page);
    for (const char* title : {"training loss", "previous-token score per head", "induction score per head"}) {
        INFO(title);
        CHECK(html.find(title) != std::string::npos);
    }
    CHECK(html.find("layer 1 head 3: previous-token") != std::string::npos);
    // faithfulness measures the seq2seq, encoder and rnn models' decisions
    check_refused(run({"inspect", "--run", tmp / "run", "--faithfulness"}),
                  {"--faithfulness applies to seq2seq, encoder and rnn runs; this run is --model lm"});
}

TEST_CASE("tasks lists induction and charlm with their lm defaults, and lm refuses the other models' flags") {
    const Outcome tasks = run({"tasks"});
    require_ok(tasks);
    for (const char* name : {"induction\n", "charlm\n"}) CHECK(tasks.out.find(name) != std::string::npos);
    CHECK(tasks.out.find("model:     lm (embed 64, 2 causal self-attention layer(s), 4 head(s), feed-forward "
                         "none)") != std::string::npos);
    TempDir tmp;
    for (const char* flag : {"--score", "--window", "--attention"}) {
        const std::string value = std::string(flag) == "--score"    ? "dot"
                                  : std::string(flag) == "--window" ? "2"
                                                                    : "hard";
        check_refused(run({"train", "--task", "induction", flag, value, "--out", tmp / "run"}),
                      {std::string(flag) + " does not apply to --model lm"});
    }
    check_refused(run({"train", "--task", "dates", "--model", "lm", "--out", tmp / "run"}),
                  {"--model lm writes one output per input token", "'dates'"});
    // reverse's outputs have its inputs' length, but each needs a token after it, which a causal model never
    // sees.
    check_refused(run({"train", "--task", "reverse", "--model", "lm", "--out", tmp / "run"}),
                  {"--model lm predicts each token from the ones before it", "task 'reverse' is not one"});
    CHECK_FALSE(fs::exists(tmp / "run"));
}

TEST_CASE("sample: the same seed draws the same text, and top-k 1 is the argmax whatever the seed") {
    TempDir tmp;
    train(tmp / "run", {"--task", "induction", "--steps", "10", "--batch", "8", "--snapshot-every", "0"});
    const auto sample = [&](std::vector<std::string> extra) {
        std::vector<std::string> args = {"sample", "--run",    tmp / "run", "--prompt",
                                         "a b c",  "--length", "40"};
        args.insert(args.end(), extra.begin(), extra.end());
        const Outcome o = run(args);
        require_ok(o);
        return o.out;
    };
    const std::string first = sample({"--seed", "5"});
    CHECK(first.rfind("a b c ", 0) == 0);                              // the prompt, then what follows
    CHECK(std::count(first.begin(), first.end(), ' ') == 3 + 40 - 1);  // 43 tokens
    CHECK(first.find('<') == std::string::npos);                       // no reserved token is drawn
    CHECK(sample({"--seed", "5"}) == first);
    CHECK(sample({"--seed", "6"}) != first);
    CHECK(sample({"--seed", "5", "--temperature", "0.5"}) != first);
    CHECK(sample({"--top-k", "1", "--seed", "1"}) == sample({"--top-k", "1", "--seed", "2"}));
}

TEST_CASE("sample refuses bad input with one line and exit 2") {
    TempDir tmp;
    train(tmp / "lm", {"--task", "induction", "--steps", "1", "--snapshot-every", "0"});
    train(tmp / "copy", {"--task", "copy", "--steps", "1", "--snapshot-every", "0"});
    const auto refused = [&](std::vector<std::string> extra, const std::vector<std::string>& names,
                             const std::string& dir = "lm") {
        std::vector<std::string> args = {"sample", "--run", tmp / dir};
        args.insert(args.end(), extra.begin(), extra.end());
        check_refused(run(args), names);
    };
    refused({"--prompt", ""}, {"--prompt"});
    refused({"--prompt", "   "}, {"--prompt '   ': is empty"});
    refused({"--prompt", "a B c"}, {"'B' is not in the model's vocabulary"});
    refused({"--prompt", "a <pad>"}, {"'<pad>' is not in the model's vocabulary"});
    refused({"--prompt", "a\x01"}, {"control character"});
    refused({"--prompt", "a", "--temperature", "0"}, {"--temperature must be a finite number > 0, got 0"});
    refused({"--prompt", "a", "--temperature", "-1"}, {"--temperature must be a finite number > 0, got -1"});
    refused({"--prompt", "a", "--top-k", "0"}, {"--top-k must be >= 1, got 0"});
    refused({"--prompt", "a", "--length", "0"}, {"--length must be in [1, 10000] tokens, got 0"});
    refused({"--prompt", "a", "--length", "10001"}, {"--length must be in [1, 10000] tokens, got 10001"});
    refused({"--prompt", "a"},
            {"sample draws from language models (--model lm); this run is --model seq2seq"}, "copy");
}
