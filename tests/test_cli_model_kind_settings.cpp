// The settings of config.json: --resume reads each back as train wrote it; those of some model
// kinds only are refused with the others, in one line; --help shows a setting's "off" value by name.
#include "cli_helpers.hpp"

#include <map>

using namespace cli_test;

TEST_CASE(
    "train refuses a recurrent model's flag with a Transformer model, the other way round, and the "
    "Transformer decoder's without --model seq2seq") {
    const std::vector<std::string> rnn_only = {"cell", "decoder", "bidirectional", "rnn-layers"},
                                   transformer_only = {"layers", "ffn-dim", "next-token"},
                                   seq2seq_only = {"decoder-layers", "decoder-self-attention"};
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
    for (const auto& flag : seq2seq_only) {
        for (const char* model : {"encoder", "rnn", "lm"}) {
            auto args = flag_args(flag);
            args.insert(args.end(), {"--model", model});
            check_refused(run(args), {"attograd: --" + flag + " applies to --model seq2seq only (--model " +
                                      model + " has no Transformer decoder)\n"});
        }
    }
    CHECK_FALSE(fs::exists(tmp / "run"));
}

TEST_CASE("train --help shows --window's default -1 by what it means") {
    const Outcome help = run({"train", "--help"});
    require_ok(help);
    CHECK(line_with(help.out, "--window").find("[default: none (global attention)") != std::string::npos);
}

TEST_CASE("--resume reads every setting of config.json back as train wrote it") {
    for (const char* model : {"seq2seq", "rnn"}) {
        INFO(model);
        TempDir tmp;
        const std::string dir = tmp / "run";
        train(dir, {"--task", "reverse", "--model", model, "--steps", "1", "--eval-every", "1"});
        const json written = read_config(dir);
        require_ok(run({"train", "--resume", dir, "--steps", "2", "--quiet"}));
        const json resumed = read_config(dir);
        CHECK(resumed["train"]["steps"] == 2);
        for (const char* section : {"model", "train"}) {
            REQUIRE(written[section].size() > 3);
            CHECK(resumed[section].size() == written[section].size());
            for (const auto& [key, value] : written[section].items())
                if (std::string(section) != "train" || key != "steps")
                    CHECK_MESSAGE(resumed[section][key] == value, section, ".", key);
        }
    }
}
