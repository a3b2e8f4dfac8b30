// A program's own task registered in the library's registry: `attograd train` and `tasks` take
// it with the defaults and target of its entry, through the settings table.
#include "cli_helpers.hpp"
#include "config.hpp"
#include "settings.hpp"

#include "data/task.hpp"

#include <map>

using namespace cli_test;
using attograd::ValueError;

namespace {

/// A program's own task: a letter from a-e -> the letter twice.
class TwiceTask : public attograd::data::Task {
public:
    TwiceTask() {
        info_.name = "twice";
        info_.description = "a letter -> the letter twice";
        info_.example = "a -> a a";
        info_.max_source_len = 1;
        info_.max_target_len = 2;
        held_out_ = {{{"a"}, {"a", "a"}}, {{"c"}, {"c", "c"}}};
    }
    std::vector<std::string> symbols() const override { return {"a", "b", "c", "d", "e"}; }
    attograd::data::Example train_example(attograd::Generator& generator) const override {
        const std::string letter(1, static_cast<char>('a' + generator.randint(0, 5)));
        return {{letter}, {letter, letter}};
    }
};

}  // namespace

TEST_CASE("a registered task trains with its entry's defaults and is listed by `tasks`") {
    attograd::data::register_task({.name = "twice",
                                   .make = [] { return std::make_unique<TwiceTask>(); },
                                   .target_accuracy = 0.5,
                                   .defaults = {{"model.heads", 2}, {"train.steps", 3}, {"train.lr", 1e-3}}});
    const auto defaults = attograd::cli::task_defaults("twice");
    CHECK(defaults.model.heads == 2);
    CHECK(defaults.train.steps == 3);
    CHECK(defaults.train.lr == 1e-3);
    CHECK(defaults.train.batch == attograd::cli::TrainConfig{}.batch);  // not in the entry: the program's
    CHECK(attograd::cli::target_accuracy("twice") == 0.5);

    TempDir tmp;
    train(tmp / "run", {"--task", "twice", "--eval-every", "3"});
    const json config = read_config(tmp / "run");
    CHECK(config["model"]["heads"] == 2);
    CHECK(config["train"]["steps"] == 3);
    CHECK(config["train"]["lr"] == 1e-3);
    const Outcome tasks = run({"tasks"});
    require_ok(tasks);
    CHECK(tasks.out.find("twice\n") != std::string::npos);
    CHECK(tasks.out.find("target:    50% held-out") != std::string::npos);
    const Outcome help = run({"train", "--help"});
    CHECK(line_with(help.out, "--steps").find("twice: 3") != std::string::npos);
}

TEST_CASE("a task entry's defaults must name settings with values of their type") {
    attograd::cli::RunConfig config;
    CHECK_THROWS_WITH_AS(attograd::cli::apply_task_defaults(config, {{"model.head", 2}}, "mine"),
                         doctest::Contains("task 'mine' defaults: 'model.head' is not a setting"),
                         ValueError);
    CHECK_THROWS_WITH_AS(attograd::cli::apply_task_defaults(config, {{"model.heads", 1.0}}, "mine"),
                         doctest::Contains("task 'mine' defaults: model.heads must be an integer, got 1.0"),
                         ValueError);
    CHECK_THROWS_WITH_AS(attograd::cli::apply_task_defaults(config, {{"train.optim", 3}}, "mine"),
                         doctest::Contains("task 'mine' defaults: train.optim must be a string, got 3"),
                         ValueError);
}

TEST_CASE("every setting of config.json is in the table, once, and reads back what it wrote") {
    const auto& table = attograd::cli::settings();
    std::set<std::string> keys;
    for (const auto& s : table) CHECK_MESSAGE(keys.insert(std::string(s.key)).second, s.key);
    const auto config = attograd::cli::default_config(*attograd::data::make_task("dates"));
    const json written = attograd::cli::to_json(config);
    std::size_t fields = 0;
    for (const char* section : {"model", "train"}) {
        for (const auto& [key, value] : written[section].items()) {
            ++fields;
            CHECK_MESSAGE(keys.count(std::string(section) + "." + key) == 1, key);
        }
    }
    CHECK(fields == table.size());
    CHECK(attograd::cli::to_json(attograd::cli::run_config_from_json(written)) == written);
}

TEST_CASE("the table says which model kinds a flag applies to, and train refuses it with the others") {
    using attograd::cli::ModelKinds;
    std::vector<std::string> rnn_only, transformer_only;
    for (const auto& s : attograd::cli::settings()) {
        if (s.applies_to == ModelKinds::rnn) rnn_only.emplace_back(s.flag);
        if (s.applies_to == ModelKinds::transformer) transformer_only.emplace_back(s.flag);
    }
    CHECK(rnn_only == std::vector<std::string>{"cell", "decoder", "bidirectional", "rnn-layers"});
    CHECK(transformer_only == std::vector<std::string>{"layers", "decoder-layers", "ffn-dim", "next-token"});
    TempDir tmp;
    const std::map<std::string, std::string> values = {{"cell", "gru"},         {"decoder", "luong"},
                                                       {"rnn-layers", "2"},     {"layers", "2"},
                                                       {"decoder-layers", "2"}, {"ffn-dim", "8"}};
    const auto flag_args = [&](const std::string& flag) {
        std::vector<std::string> args = {"train", "--task", "copy",      "--steps",
                                         "1",     "--out",  tmp / "run", "--" + flag};
        if (values.count(flag)) args.push_back(values.at(flag));
        return args;
    };
    for (const auto& flag : rnn_only) {
        for (const char* model : {"seq2seq", "encoder"}) {
            auto args = flag_args(flag);
            args.insert(args.end(), {"--model", model});
            check_refused(run(args), {"attograd: --" + flag + " applies to --model rnn only\n"});
        }
    }
    for (const auto& flag : transformer_only) {
        auto args = flag_args(flag);
        args.insert(args.end(), {"--model", "rnn"});
        check_refused(run(args), {"attograd: --" + flag +
                                  " sets the Transformer models' layers; --model rnn takes --rnn-layers, "
                                  "--cell, --decoder\n"});
    }
    CHECK_FALSE(fs::exists(tmp / "run"));
}

TEST_CASE("train --help shows --window's default -1 as the table names it") {
    const auto* window = attograd::cli::find_setting("model.window");
    REQUIRE(window != nullptr);
    CHECK(window->off_text == "none (global attention)");
    const Outcome help = run({"train", "--help"});
    require_ok(help);
    CHECK(line_with(help.out, "--window").find("[default: none (global attention)") != std::string::npos);
}
