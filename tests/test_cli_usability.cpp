// What a new user meets first: --help with plain types and defaults, --version, every bad
// --input of eval reported, warnings for short inputs and a long warm-up, one verdict wording,
// config.json settings named by their field, optimizer state no run could have written.
#include "cli_helpers.hpp"
#include "data/task.hpp"

#include "core/ops.hpp"
#include "core/serialization.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <chrono>
#include <map>
#include <optional>
#include <regex>

#include <sys/stat.h>

using namespace cli_test;

namespace {

/// What `attograd tasks` lists of a task with a default model: its --model and default --steps.
struct ListedTask {
    std::string kind;
    std::int64_t steps = 0;
};

/// The tasks `attograd tasks` lists with a default model, by name.
std::map<std::string, ListedTask> listed_tasks() {
    const Outcome o = run({"tasks"});
    require_ok(o);
    const std::regex model_line(R"(^  model:     (\w+) \(.*\), (\d+) steps$)");
    std::map<std::string, ListedTask> tasks;
    std::istringstream lines(o.out);
    std::string name;
    for (std::string line; std::getline(lines, line);) {
        std::smatch match;
        if (!line.empty() && line[0] != ' ')
            name = line;
        else if (std::regex_match(line, match, model_line))
            tasks[name] = {match[1], std::stoll(match[2])};
    }
    return tasks;
}

}  // namespace

// --- --help and --version ---------------------------------------------------------------------

TEST_CASE("--help of every subcommand shows plain type names and the default of every setting") {
    for (const char* sub : {"train", "eval", "inspect", "sample"}) {
        const Outcome o = run({sub, "--help"});
        INFO(sub, "\n", o.out);
        REQUIRE(o.code == 0);
        // CLI11's labels with a validator's description: TEXT:TEXT, INT:INT, FLOAT:NUMBER.
        CHECK_FALSE(std::regex_search(o.out, std::regex("[A-Z]+:[A-Z]+")));
        CHECK(o.out.find("FLOAT") == std::string::npos);
        CHECK(o.out.find("UINT") == std::string::npos);
        // A flag's own syntax (CLI11's "{false}" for a flag that turns a setting off) is not shown.
        CHECK(o.out.find('{') == std::string::npos);
        // Every option taking a value shows a default, except those that have none.
        std::istringstream lines(o.out);
        std::int64_t with_value = 0;
        for (std::string line; std::getline(lines, line);) {
            std::smatch m;
            if (!std::regex_search(line, m,
                                   std::regex("^  --([a-z-]+) (INT|NUMBER|TEXT|NAME|FILE|DIR|PATH)")))
                continue;
            ++with_value;
            const std::string name = m[1];
            if (name == "task" || name == "data" || name == "resume" || name == "run" || name == "input" ||
                name == "prompt")
                continue;
            CHECK_MESSAGE(line.find("[default: ") != std::string::npos, line);
            // once: the task defaults and a flag's own default were both shown for one
            CHECK_MESSAGE(line.find("[default: ") == line.rfind("[default: "), line);
        }
        CHECK(with_value >= 3);
    }
    const std::string help = run({"train", "--help"}).out;
    CHECK(help.find("--lr NUMBER") != std::string::npos);
    CHECK(help.find("--steps INT") != std::string::npos);
    CHECK(help.find("--out DIR") != std::string::npos);
    // Defaults by task: the usual value, then each task that differs with its own.
    const std::string steps = line_with(help, "--steps INT");
    const auto listed = listed_tasks();
    REQUIRE(listed.contains("copy"));
    const auto usual = listed.at("copy").steps;
    CHECK(steps.find(fmt::format("[default: {};", usual)) != std::string::npos);
    for (const auto& task : attograd::data::task_names()) {
        REQUIRE(listed.contains(task));
        const auto own = listed.at(task).steps;
        INFO(task, ": ", steps);
        CHECK((own == usual) == (steps.find(task + ":") == std::string::npos));
        if (own != usual) CHECK(steps.find(fmt::format("{}: {}", task, own)) != std::string::npos);
    }
    CHECK(line_with(help, "--window INT").find("none (global attention)") != std::string::npos);
    CHECK(line_with(run({"eval", "--help"}).out, "--show INT").find("[default: 5]") != std::string::npos);
    CHECK(line_with(run({"inspect", "--help"}).out, "--format TEXT").find("[default: term]") !=
          std::string::npos);
}

// docs/reference/program.md is written by hand: a flag added to the program must be named there
// too, and a default it quotes must be --help's (docs/howto/extend-program.md says so).
TEST_CASE(
    "docs/reference/program.md names every flag of every command's --help, and quotes no stale default") {
    const std::string page = read_text(fs::path(ATTOGRAD_FIXTURE_DIR) / "../../docs/reference/program.md");
    const auto named = [&](const std::string& flag) {
        return std::regex_search(page, std::regex(flag + "([^a-z0-9-]|$)"));
    };
    std::string helps;
    for (const std::string command : {"", "tasks", "train", "eval", "inspect", "sample"}) {
        const Outcome o = run(command.empty() ? std::vector<std::string>{"--help"}
                                              : std::vector<std::string>{command, "--help"});
        REQUIRE(o.code == 0);
        helps += o.out;
        const std::regex flag("--[a-z][a-z0-9-]*");
        for (auto it = std::sregex_iterator(o.out.begin(), o.out.end(), flag); it != std::sregex_iterator();
             ++it) {
            if (it->str() == "--help") continue;
            INFO(command, " ", it->str());
            CHECK(named(it->str()));
        }
    }
    // A default quoted whole ("[default: 1000; sort: 2000]") must be one --help prints; a quote
    // that ends in "..." is an example of the form only.
    const std::regex quoted(R"(\[default: [^\]]*\])");
    for (auto it = std::sregex_iterator(page.begin(), page.end(), quoted); it != std::sregex_iterator();
         ++it) {
        if (it->str().ends_with("...]")) continue;
        INFO(it->str());
        CHECK(helps.find(it->str()) != std::string::npos);
    }
}

TEST_CASE("--version prints the CMake project's version and the GEMM backend") {
    const std::string cmake = read_text(fs::path(ATTOGRAD_FIXTURE_DIR) / "../../CMakeLists.txt");
    std::smatch m;
    REQUIRE(std::regex_search(cmake, m, std::regex(R"(project\(attograd VERSION ([0-9.]+))")));
    const Outcome o = run({"--version"});
    CHECK(o.code == 0);
    CHECK(o.out.starts_with("attograd " + m[1].str() + " "));
    CHECK((o.out.find("LIBXSMM") != std::string::npos || o.out.find("Eigen") != std::string::npos));
    CHECK(count_lines(o.out) == 1);
}

// --- eval and inspect inputs ------------------------------------------------------------------

TEST_CASE("eval reports every bad --input by name and still predicts the others, exit code 2") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    const auto longest = read_config(tmp / "run")["model"]["max_source_len"].get<std::int64_t>();
    std::string too_long;
    for (std::int64_t i = 0; i <= longest; ++i) too_long += i == 0 ? "a" : " a";
    const std::vector<std::string> inputs = {"a b c d", "   ", too_long, "e f g h"};
    std::vector<std::string> args = {"eval", "--run", tmp / "run"};
    for (const auto& input : inputs) args.insert(args.end(), {"--input", input});

    const Outcome text = run(args);
    INFO(text.command, "\nstdout: ", text.out, "\nstderr: ", text.err);
    CHECK(text.code == 2);
    CHECK(count_lines(text.err) == 2);  // one line per bad input
    CHECK(line_with(text.err, "--input '   '").find("empty") != std::string::npos);
    CHECK(
        line_with(text.err, "--input '" + too_long.substr(0, 20)).find(fmt::format("at most {}", longest)) !=
        std::string::npos);
    CHECK(text.out.find("input: a b c d -> ") != std::string::npos);
    CHECK(text.out.find("input: e f g h -> ") != std::string::npos);  // after the bad ones

    args.push_back("--json");
    const Outcome j = run(args);
    CHECK(j.code == 2);
    const json result = json::parse(j.out);
    REQUIRE(result["inputs"].size() == inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const bool bad = i == 1 || i == 2;
        INFO(i);
        CHECK(result["inputs"][i].contains("error") == bad);
        CHECK(result["inputs"][i].contains("prediction") == !bad);
        CHECK(result["inputs"][i]["source"] == (bad ? inputs[i] : inputs[i]));
    }
    // All good: exit code 0.
    require_ok(run({"eval", "--run", tmp / "run", "--input", "a b c d", "--input", "e f g h"}));
}

TEST_CASE(
    "every bundled task's training sources are at least min_source_len tokens, and some are that short") {
    const auto listed = listed_tasks();
    for (const auto& name : attograd::data::task_names()) {
        const auto task = attograd::data::make_task(name);
        const auto min_len = task->info().min_source_len;
        attograd::Generator generator(7);
        std::int64_t shortest = std::numeric_limits<std::int64_t>::max();
        for (int i = 0; i < 5000; ++i)
            shortest = std::min<std::int64_t>(shortest, std::ssize(task->train_example(generator).source));
        INFO(name);
        CHECK(shortest >= min_len);
        // A causal language model trains on every prefix of its windows: charlm declares 1.
        REQUIRE(listed.contains(name));
        if (listed.at(name).kind != "lm") CHECK(shortest == min_len);
    }
}

TEST_CASE("eval and inspect warn about an input shorter than any training source") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    const auto min_len = read_config(tmp / "run")["model"]["min_source_len"].get<std::int64_t>();
    CHECK(min_len == attograd::data::make_task("reverse")->info().min_source_len);
    std::string shorter = "a", enough = "a";
    for (std::int64_t i = 1; i < min_len - 1; ++i) shorter += " b";
    for (std::int64_t i = 1; i < min_len; ++i) enough += " b";
    for (const char* sub : {"eval", "inspect"}) {
        const Outcome warned = run({sub, "--run", tmp / "run", "--input", shorter});
        INFO(warned.command, "\nstderr: ", warned.err);
        CHECK(warned.code == 0);
        CHECK(warned.err.find("warning") != std::string::npos);
        CHECK(warned.err.find("'" + shorter + "'") != std::string::npos);
        CHECK(warned.err.find(fmt::format("{} or more", min_len)) != std::string::npos);
        const Outcome quiet = run({sub, "--run", tmp / "run", "--input", enough});
        CHECK(quiet.code == 0);
        CHECK(quiet.err.empty());
    }

    // A TSV run: the shortest training source of the file, saved in config.json.
    write_text(tmp / "pairs.tsv", [] {
        std::string text;
        for (int i = 0; i < 40; ++i) text += fmt::format("x{} y z\tz y x{}\n", i, i);
        return text;
    }());
    train(tmp / "data", {"--data", tmp / "pairs.tsv", "--steps", "1"});
    CHECK(read_config(tmp / "data")["model"]["min_source_len"] == 3);
    const Outcome o = run({"eval", "--run", tmp / "data", "--input", "x1 y"});
    CHECK(o.code == 0);
    CHECK(o.err.find("3 or more") != std::string::npos);
}

TEST_CASE("eval and inspect word a verdict the same way") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    const Outcome e = run({"eval", "--run", tmp / "run", "--input", "a b c d e"});
    const Outcome i = run({"inspect", "--run", tmp / "run", "--input", "a b c d e"});
    require_ok(e);
    require_ok(i);
    const std::string from_eval =
        line_with(e.out, "input: a b c d e -> ").substr(std::string("input: ").size());
    const std::string from_inspect =
        line_with(i.out, "example 1: a b c d e -> ").substr(std::string("example 1: ").size());
    INFO(e.out, "\n", i.out);
    CHECK(from_eval == from_inspect);
    const bool right = from_eval.ends_with("   (right)");
    CHECK((right || from_eval.ends_with("   (wrong, expected e d c b a)")));
    // The held-out lines of eval use the same wording.
    const std::regex verdict(R"(^  \S.* -> .*   \((right|wrong, expected .*)\)$)");
    std::istringstream lines(run({"eval", "--run", tmp / "run", "--show", "3"}).out);
    int held_out = 0;
    for (std::string line; std::getline(lines, line);) held_out += std::regex_match(line, verdict);
    CHECK(held_out == 3);
}

// --- train messages ---------------------------------------------------------------------------

TEST_CASE("a --warmup not shorter than --steps warns and still reaches the peak lr at the last step") {
    TempDir tmp;
    const Outcome o = run(
        {"train", "--task", "reverse", "--steps", "5", "--warmup", "10", "--out", tmp / "run", "--quiet"});
    INFO(o.err);
    CHECK(o.code == 0);
    CHECK(count_lines(o.err) == 1);
    CHECK(o.err.find("warning: --warmup 10") != std::string::npos);
    CHECK(o.err.find("--steps 5") != std::string::npos);
    CHECK(o.err.find("cut to 4") != std::string::npos);
    // The lr of the last step (metrics.csv's lr column) is the peak --lr.
    const std::string metrics = read_text(tmp / "run/metrics.csv");
    std::istringstream rows(metrics);
    std::string row, last;
    while (std::getline(rows, row)) last = row;
    std::vector<std::string> cells;
    for (std::istringstream cell(last); std::getline(cell, row, ',');) cells.push_back(row);
    REQUIRE(cells.size() == 7);
    CHECK(std::stod(cells[5]) == doctest::Approx(read_config(tmp / "run")["train"]["lr"].get<double>()));

    const Outcome fits =
        run({"train", "--task", "reverse", "--steps", "5", "--warmup", "4", "--out", tmp / "b", "--quiet"});
    CHECK(fits.code == 0);
    CHECK(fits.err.empty());
}

TEST_CASE("--resume of a finished run without --steps says to pass --steps, or --no-early-stop") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "2"});
    check_refused(run({"train", "--resume", tmp / "run"}), {"2 steps already", "--steps N", "N > 2"});
    check_refused(run({"train", "--resume", tmp / "run", "--steps", "2"}), {"--steps N"});
    require_ok(run({"train", "--resume", tmp / "run", "--steps", "3", "--quiet"}));

    train(tmp / "done", {"--task", "copy", "--steps", "400"});
    REQUIRE(read_config(tmp / "done")["progress"]["reached_target"] == true);
    check_refused(run({"train", "--resume", tmp / "done", "--steps", "900"}),
                  {"reached its target", "--no-early-stop"});
}

// --- config.json names the field --------------------------------------------------------------

TEST_CASE("a bad value in config.json is named by its field, a bad flag by the flag") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "2"});
    const std::string saved = read_text(tmp / "run/config.json");
    const auto check = [&](const std::function<void(json&)>& edit, const std::vector<std::string>& names,
                           const std::string& flag) {
        write_text(tmp / "run/config.json", saved);
        edit_config(tmp / "run", edit);
        std::vector<std::string> with_file = names;
        with_file.insert(with_file.begin(), "config.json: ");
        for (const auto& command :
             std::vector<std::vector<std::string>>{{"eval", "--run", tmp / "run"},
                                                   {"inspect", "--run", tmp / "run"},
                                                   {"train", "--resume", tmp / "run", "--steps", "4"}}) {
            const Outcome o = run(command);
            check_refused(o, with_file);
            CHECK_MESSAGE(o.err.find(flag) == std::string::npos, o.err);  // no flag the user never passed
        }
    };
    check([](json& c) { c["model"]["embed_dim"] = -5; }, {"model.embed_dim must be in [1, 4096], got -5"},
          "--embed-dim");
    check([](json& c) { c["model"]["heads"] = 3; }, {"model.heads 3 does not divide model.embed_dim 64"},
          "--heads");
    check([](json& c) { c["model"]["kind"] = "lstm"; }, {"model.kind must be one of", "'lstm'"}, "--model");
    check([](json& c) { c["train"]["lr"] = -1.0; },
          {"train.lr must be a positive number representable in float32"}, "--lr");
    check([](json& c) { c["train"]["warmup"] = -2; }, {"train.warmup must be >= 0"}, "--warmup");
    check([](json& c) { c["train"]["momentum"] = 0.5; }, {"train.momentum applies to train.optim sgd only"},
          "--momentum");
    check([](json& c) { c["model"]["min_source_len"] = 0; }, {"model.min_source_len"}, "--min");
    write_text(tmp / "run/config.json", saved);

    // --resume's own flags are named as flags, the rest as fields.
    const Outcome flag = run({"train", "--resume", tmp / "run", "--eval-every", "0"});
    check_refused(flag, {"--eval-every must be >= 1"});
    CHECK(flag.err.find("config.json") == std::string::npos);
    // A new run names its flags.
    const Outcome fresh = run({"train", "--task", "reverse", "--embed-dim", "0", "--out", tmp / "new"});
    check_refused(fresh, {"--embed-dim must be in [1, 4096], got 0"});
    CHECK(fresh.err.find("config.json") == std::string::npos);
}

// --- optimizer state --------------------------------------------------------------------------

TEST_CASE("SGD momentum buffers and Adam moments no run could have written are refused on --resume") {
    TempDir tmp;
    const auto plant = [&](const fs::path& dir, const std::string& suffix,
                           const std::function<void(attograd::Tensor&)>& edit) {
        const fs::path path = dir / "optimizer.safetensors";
        auto state = attograd::load_safetensors(path);
        bool found = false;
        for (auto& [name, tensor] : state) {
            if (!name.ends_with(suffix)) continue;
            tensor = attograd::clone(tensor);
            edit(tensor);
            found = true;
            break;
        }
        REQUIRE_MESSAGE(found, suffix);
        attograd::save_safetensors(path, state);
        record_checksum(path);
    };
    train(tmp / "sgd",
          {"--task", "reverse", "--steps", "2", "--optim", "sgd", "--momentum", "0.9", "--lr", "0.1"});
    const std::string good = read_text(tmp / "sgd/optimizer.safetensors");
    const std::string good_config = read_text(tmp / "sgd/config.json");
    const auto restore = [&] {
        write_text(tmp / "sgd/optimizer.safetensors", good);
        write_text(tmp / "sgd/config.json", good_config);
    };
    plant(tmp / "sgd", ".momentum_buffer", [](attograd::Tensor& t) { t.data<float>()[0] = INFINITY; });
    check_refused(run({"train", "--resume", tmp / "sgd", "--steps", "4"}),
                  {"optimizer.safetensors", "momentum_buffer"});
    restore();
    plant(tmp / "sgd", ".momentum_buffer", [](attograd::Tensor& t) { t = attograd::zeros({t.numel() + 1}); });
    check_refused(run({"train", "--resume", tmp / "sgd", "--steps", "4"}),
                  {"optimizer.safetensors", "momentum_buffer", "shape"});
    restore();
    require_ok(run({"train", "--resume", tmp / "sgd", "--steps", "3", "--quiet"}));

    train(tmp / "adam", {"--task", "reverse", "--steps", "2"});
    const std::string adam = read_text(tmp / "adam/optimizer.safetensors");
    const std::string adam_config = read_text(tmp / "adam/config.json");
    // exp_avg far beyond what its exp_avg_sq allows (the run would blow up, blaming --lr).
    plant(tmp / "adam", ".exp_avg", [](attograd::Tensor& t) { t.data<float>()[0] = 1e6F; });
    check_refused(run({"train", "--resume", tmp / "adam", "--steps", "4"}),
                  {"optimizer.safetensors", "exp_avg'", "allows at most"});
    write_text(tmp / "adam/optimizer.safetensors", adam);
    write_text(tmp / "adam/config.json", adam_config);
    // More updates than the run has steps.
    plant(tmp / "adam", ".step", [](attograd::Tensor& t) { t.data<std::int64_t>()[0] = 50; });
    check_refused(run({"train", "--resume", tmp / "adam", "--steps", "4"}),
                  {"optimizer.safetensors", "50 updates", "2 steps"});
    write_text(tmp / "adam/optimizer.safetensors", adam);
    write_text(tmp / "adam/config.json", adam_config);
    require_ok(run({"train", "--resume", tmp / "adam", "--steps", "3", "--quiet"}));
}

// --- paths ------------------------------------------------------------------------------------

TEST_CASE("paths in suggested commands are shell-quoted when they need it") {
    TempDir tmp;
    // A plain relative path as it is; one with a quote in single quotes, the quote spelled '\\''.
    const fs::path saved = fs::current_path();
    fs::current_path(tmp.path());
    const Outcome plain = run({"train", "--task", "reverse", "--steps", "1", "--out", "runs/copy-1.2"});
    fs::current_path(saved);
    require_ok(plain);
    CHECK(line_with(plain.out, "wrote ").ends_with("--run runs/copy-1.2"));
    const Outcome quote = run({"train", "--task", "reverse", "--steps", "1", "--out", tmp / "it's"});
    require_ok(quote);
    CHECK(line_with(quote.out, "wrote ").ends_with("--run '" + tmp.path().string() + "/it'\\''s'"));
    const std::string dir = tmp / "my run";
    const Outcome o = run({"train", "--task", "reverse", "--steps", "1", "--out", dir});
    require_ok(o);
    CHECK_MESSAGE(o.out.find("inspect --run '" + dir + "'") != std::string::npos, o.out);
    const Outcome again = run({"train", "--task", "reverse", "--steps", "1", "--out", dir});
    check_refused(again, {"--resume '" + dir + "'"});
}

TEST_CASE("a run directory that is the current directory, a FIFO or a file is refused saying what it is") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "1"});
    const fs::path saved = fs::current_path();
    fs::create_directory_symlink(tmp / "run", tmp / "link");
    // Through a folder that does not exist: where the kernel goes once it is made.
    const std::string via_missing = (fs::path(tmp / "missing") / ".." / "link").string();
    fs::current_path(tmp / "run");
    const Outcome resume = run({"train", "--resume", ".", "--steps", "2"});
    const Outcome parent = run({"train", "--task", "reverse", "--steps", "1", "--out", "..", "--force"});
    const Outcome linked =
        run({"train", "--task", "reverse", "--steps", "1", "--out", via_missing, "--force"});
    fs::current_path(saved);
    check_refused(resume, {"--resume .", "current directory"});
    check_refused(parent, {"--out ..", "current directory"});
    check_refused(linked, {"current directory"});
    CHECK_FALSE(fs::exists(tmp / "missing"));
    CHECK(fs::exists(tmp / "run/config.json"));
    REQUIRE(::mkfifo((tmp / "fifo").c_str(), 0600) == 0);
    write_text(tmp / "file", "x");
    check_refused(run({"eval", "--run", tmp / "fifo"}), {"fifo", "is a FIFO, not a run directory"});
    check_refused(run({"inspect", "--run", tmp / "file"}),
                  {"file", "is a regular file, not a run directory"});
}

TEST_CASE("a directory that cannot be written is one line naming it, before any training") {
    // /proc refuses new files even to root (a read-only parent only refuses other users).
    for (const auto& command : std::vector<std::vector<std::string>>{
             {"train", "--task", "reverse", "--steps", "1000000", "--out", "/proc/attograd-run"},
             {"train", "--resume", "/proc/attograd-run", "--steps", "1000000"}}) {
        const Outcome o = run(command);
        check_refused(o, {"/proc/attograd-run"});
        CHECK(o.err.find("filesystem error") == std::string::npos);
    }
}

TEST_CASE(
    "train refuses a model that cannot fit in memory in one line naming the flags, before building it") {
    // The largest sizes the flags take: 7.5e9 parameters (112 GiB with gradients and Adam's two
    // moments) and a batch of 4096 whose activations at 4096 heads need terabytes, more than any
    // machine the suite runs on has.
    TempDir tmp;
    const auto start = std::chrono::steady_clock::now();
    const Outcome o = run({"train", "--task", "reverse", "--out", tmp / "r2", "--embed-dim", "4096",
                           "--ffn-dim", "16384", "--layers", "16", "--decoder-layers", "16", "--heads",
                           "4096", "--batch", "4096", "--steps", "1"});
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check_refused(
        o, {"training would need about", "--embed-dim 4096", "--ffn-dim 16384", "--heads 4096", "--layers 16",
            "--decoder-layers 16", "--batch 4096", "GiB of memory is available", "choose smaller values"});
    const std::regex needed("would need about ([0-9.]+) GiB");
    std::smatch match;
    REQUIRE(std::regex_search(o.err, match, needed));
    CHECK(std::stod(match[1]) > 112.0);
    CHECK(seconds < 10.0);  // refused before the model is built (which took minutes, then OOM)
    CHECK_FALSE(fs::exists(fs::path(tmp / "r2") / "config.json"));
}

TEST_CASE("every real-valued flag of train is checked where it is used, naming the flag and the value") {
    TempDir tmp;
    const std::string out = tmp / "run";
    const auto refused = [&](std::vector<std::string> flag, const std::vector<std::string>& names) {
        std::vector<std::string> args = {"train", "--task", "reverse", "--steps",
                                         "1",     "--out",  out,       "--quiet"};
        if (flag[0] == "--momentum") args.insert(args.end(), {"--optim", "sgd"});
        args.insert(args.end(), flag.begin(), flag.end());
        check_refused(run(args), names);
        CHECK_FALSE(fs::exists(fs::path(out) / "config.json"));
    };
    // Beyond float32 the optimizer saw inf ("Adam: lr must be a finite number >= 0, got inf").
    refused({"--lr", "1e308"}, {"--lr must be a positive number representable in float32", "got 1e+308"});
    refused({"--lr", "4e38"}, {"--lr", "got 4e+38"});
    refused({"--weight-decay", "1e300"}, {"--weight-decay", "float32", "got 1e+300"});
    refused({"--clip", "1e39"}, {"--clip", "float32", "got 1e+39"});
    refused({"--momentum", "1"}, {"--momentum must be in [0, 1)", "got 1"});
    // 0 trains nothing; the message names only what is allowed (no "0 or ...").
    refused({"--lr", "0"},
            {"--lr must be a positive number representable in float32 (in [1.2e-38, 3.4e+38]), got 0"});
    // Integer flags checked by the program say what they got too.
    TempDir runs;
    train(runs / "run", {"--task", "reverse", "--steps", "1"});
    check_refused(run({"inspect", "--run", runs / "run", "--samples", "-1"}),
                  {"--samples must be >= 1, got -1"});
    check_refused(run({"eval", "--run", runs / "run", "--show", "-3"}), {"--show must be >= 0, got -3"});
    // The largest float32 itself is accepted.
    const Outcome ok =
        run({"train", "--task", "reverse", "--steps", "0", "--out", out, "--quiet", "--clip", "3e38"});
    INFO(ok.err);
    CHECK(ok.code == 0);
}
