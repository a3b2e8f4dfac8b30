// train::Trainer through its public API only: a user's own model and step function, killed and
// resumed bit for bit, early stopping, the divergence rule, the CSV columns, and bad run dirs.
#include "temp_dir.hpp"

#include "attograd.hpp"

#include <doctest/doctest.h>
#include <cmath>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using namespace attograd;

/// A user's own model: y = W2 tanh(W1 x).
class TinyRegressor : public nn::Module {
public:
    explicit TinyRegressor(Generator& generator) {
        hidden_ = register_module(
            "hidden",
            std::make_shared<nn::Linear>(nn::LinearOptions{.in_features = 4, .out_features = 8}, generator));
        out_ = register_module("out", std::make_shared<nn::Linear>(
                                          nn::LinearOptions{.in_features = 8, .out_features = 2}, generator));
    }
    Tensor forward(const Tensor& x) const { return out_->forward(tanh(hidden_->forward(x))); }
    std::string type_name() const override { return "TinyRegressor"; }

private:
    std::shared_ptr<nn::Linear> hidden_, out_;
};

/// The target the model learns: a fixed linear map of its input.
Tensor target_of(const Tensor& x) {
    static const Tensor w = tensor({0.5, -1.0, 0.25, 2.0, -0.75, 0.1, 1.5, -0.5}, {4, 2});
    return matmul(x, w);
}

/// A whole training program: model, optimizer, schedule, Trainer with callbacks. `extra` is
/// added after the standard callbacks (a test's interruption).
struct Program {
    Generator init{7};
    TinyRegressor model{init};
    optim::Adam optimizer{model.parameters(), optim::AdamOptions{.lr = 0.02}};
    optim::CosineAnnealingLR schedule{optimizer, optim::CosineAnnealingLROptions{.T_max = 40}};
    std::shared_ptr<train::CSVLogger> csv = std::make_shared<train::CSVLogger>(train::CSVLoggerOptions{
        .train_columns = {{"loss", "loss"}}, .val_columns = {{"val_loss", "val_loss"}}});
    train::Trainer trainer;

    explicit Program(const fs::path& dir, std::int64_t max_steps = 40)
        : trainer(model, optimizer,
                  {.max_steps = max_steps,
                   .val_check_interval = 10,
                   .log_every_n_steps = 5,
                   .seed = 3,
                   .default_root_dir = dir}) {
        trainer.set_scheduler(&schedule).set_config({{"hidden", 8}});
        trainer.add_callback(std::make_shared<train::ModelCheckpoint>(
            train::ModelCheckpointOptions{.every_n_train_steps = 5}));
        trainer.add_callback(std::make_shared<train::DivergenceMonitor>());
        trainer.add_callback(csv);
    }

    train::StepOutput step(std::int64_t, Generator& generator) {
        const Tensor x = randn({16, 4}, generator);
        return {.loss = mse_loss(model.forward(x), target_of(x)), .logs = {}};
    }
    train::Metrics validate() {
        NoGradGuard no_grad;
        Generator fixed(99);
        const Tensor x = randn({64, 4}, fixed);
        return {{"val_loss", mse_loss(model.forward(x), target_of(x)).item()}};
    }
    train::FitResult fit(const fs::path& ckpt_path = {}) {
        return trainer.fit([this](std::int64_t s, Generator& g) { return step(s, g); },
                           [this] { return validate(); }, ckpt_path);
    }
};

std::string bytes_of(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

/// metrics.csv without its last column (seconds, which depend on the machine).
std::string without_seconds(const std::string& csv) {
    std::istringstream in(csv);
    std::string line, out;
    while (std::getline(in, line)) out += line.substr(0, line.rfind(',')) + "\n";
    return out;
}

void check_same_run(const fs::path& a, const fs::path& b) {
    CHECK(bytes_of(a / "model.safetensors") == bytes_of(b / "model.safetensors"));
    CHECK(bytes_of(a / "optimizer.safetensors") == bytes_of(b / "optimizer.safetensors"));
    CHECK(without_seconds(bytes_of(a / "metrics.csv")) == without_seconds(bytes_of(b / "metrics.csv")));
}

/// Calls `action` once the Trainer has done `at` steps.
class AtStep : public train::Callback {
public:
    AtStep(std::int64_t at, std::function<void()> action) : at_(at), action_(std::move(action)) {}
    void on_train_batch_end(train::Trainer& trainer) override {
        if (trainer.global_step() == at_) action_();
    }

private:
    std::int64_t at_;
    std::function<void()> action_;
};

}  // namespace

TEST_CASE("Trainer: a run killed with SIGKILL and resumed equals the uninterrupted run, byte for byte") {
    testing::TempDir tmp;
    const fs::path whole = tmp.path() / "whole", killed = tmp.path() / "killed";
    {
        Program program(whole);
        const train::FitResult result = program.fit();
        CHECK(result.global_step == 40);
        CHECK(result.signal == 0);
        REQUIRE(result.validation.contains("val_loss"));
    }
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // trains until step 17, then dies as with `kill -9` (last save: step 15)
        try {
            Program program(killed);
            program.trainer.add_callback(std::make_shared<AtStep>(17, [] { ::kill(::getpid(), SIGKILL); }));
            program.fit();
        } catch (...) {
        }
        ::_exit(0);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    {
        Program program(killed);
        const train::FitResult result = program.fit(train::ckpt_last);
        CHECK(program.trainer.resumed());
        CHECK(result.global_step == 40);
    }
    check_same_run(whole, killed);
}

TEST_CASE("Trainer: SIGINT saves the run and stops, and resuming it finishes the uninterrupted run") {
    testing::TempDir tmp;
    const fs::path whole = tmp.path() / "whole", stopped = tmp.path() / "stopped";
    Program(whole).fit();
    {
        Program program(stopped);
        program.trainer.add_callback(std::make_shared<AtStep>(12, [] { ::raise(SIGINT); }));
        const train::FitResult result = program.fit();
        CHECK(result.signal == SIGINT);
        CHECK(result.global_step == 13);  // the signal came after step 12: step 13 finishes, then it saves
    }
    const auto saved = train::read_run_json(stopped / "config.json");
    CHECK(saved["progress"]["steps_done"] == 13);  // saved at the signal, not at the last checkpoint (10)
    CHECK(saved["hidden"] == 8);                   // the user's config
    Program(stopped).fit(train::ckpt_last);
    check_same_run(whole, stopped);
}

TEST_CASE("Trainer: SIGTERM and SIGHUP (a closed terminal) save the run and stop as SIGINT does") {
    for (const int signal : {SIGTERM, SIGHUP}) {
        testing::TempDir tmp;
        const fs::path whole = tmp.path() / "whole", stopped = tmp.path() / "stopped";
        Program(whole).fit();
        {
            Program program(stopped);
            program.trainer.add_callback(std::make_shared<AtStep>(12, [signal] { ::raise(signal); }));
            const train::FitResult result = program.fit();
            CHECK(result.signal == signal);
            CHECK(result.global_step == 13);
        }
        CHECK(train::read_run_json(stopped / "config.json")["progress"]["steps_done"] == 13);
        Program(stopped).fit(train::ckpt_last);
        check_same_run(whole, stopped);
    }
    CHECK(std::string(train::signal_name(SIGHUP)) == "SIGHUP");
}

TEST_CASE(
    "Trainer: a fresh fit into a directory that holds a run is refused, ckpt_last on an empty one starts") {
    testing::TempDir tmp;
    const fs::path dir = tmp.path() / "run";
    Program(dir, 5).fit(train::ckpt_last);  // nothing there: a new run
    CHECK(fs::exists(dir / "config.json"));
    Program again(dir, 5);
    CHECK_THROWS_WITH_AS(again.fit(), doctest::Contains("holds a run already"), IoError);
    // A finished run fitted again does nothing.
    const auto before = bytes_of(dir / "model.safetensors");
    CHECK(Program(dir, 5).fit(train::ckpt_last).global_step == 5);
    CHECK(bytes_of(dir / "model.safetensors") == before);
}

TEST_CASE("Trainer: CSVLogger writes step, the train and validation columns, lr and seconds") {
    testing::TempDir tmp;
    Program program(tmp.path() / "run", 20);
    program.fit();
    std::istringstream in(bytes_of(tmp.path() / "run" / "metrics.csv"));
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    REQUIRE(lines.size() == 5);  // header + rows at steps 5, 10, 15, 20
    CHECK(lines[0] == "step,loss,val_loss,lr,seconds");
    CHECK(lines[1].starts_with("5,"));
    CHECK(lines[1].find(",,") != std::string::npos);  // no validation at step 5
    CHECK(lines[2].starts_with("10,"));
    CHECK(lines[2].find(",,") == std::string::npos);  // validated at step 10
    CHECK(lines[4].starts_with("20,"));
    CHECK(program.csv->text() == bytes_of(tmp.path() / "run" / "metrics.csv"));
}

TEST_CASE("Trainer: EarlyStopping stops at the first validation that reaches the target, and stays stopped") {
    testing::TempDir tmp;
    const fs::path dir = tmp.path() / "run";
    const auto run = [&] {
        Program program(dir, 100);
        program.trainer.add_callback(std::make_shared<train::EarlyStopping>(
            train::EarlyStoppingOptions{.monitor = "progress", .stopping_threshold = 0.3, .mode = "max"}));
        return program.trainer.fit(
            [&](std::int64_t s, Generator& g) { return program.step(s, g); },
            [&] {
                return train::Metrics{{"progress", static_cast<double>(program.trainer.global_step()) / 100}};
            },
            train::ckpt_last);
    };
    const train::FitResult first = run();
    CHECK(first.stopped_early);
    CHECK(first.global_step == 30);
    CHECK(train::read_run_json(dir / "config.json")["progress"]["reached_target"] == true);
    CHECK(run().global_step == 30);  // resumed: the target was reached already

    Generator init(1);
    TinyRegressor model(init);
    optim::SGD sgd(model.parameters(), {.lr = 0.1});
    train::Trainer trainer(model, sgd, {.max_steps = 3});
    trainer.add_callback(
        std::make_shared<train::EarlyStopping>(train::EarlyStoppingOptions{.monitor = "acc"}));
    CHECK_THROWS_WITH_AS(
        trainer.fit(
            [&](std::int64_t, Generator& g) {
                const Tensor x = randn({4, 4}, g);
                return train::StepOutput{.loss = mse_loss(model.forward(x), target_of(x)), .logs = {}};
            },
            [] {
                return train::Metrics{{"loss", 1.0}};
            }),
        doctest::Contains("monitor 'acc' is not among the validation metrics (loss)"), ValueError);
}

TEST_CASE("Trainer: a resume takes a callback's keys from state_keys(), without its costly state_dict()") {
    // state_dict() counts the calls made between loading the run and the fit's start.
    struct Costly : train::Callback {
        bool loading = false;
        mutable int calls_while_loading = 0;
        nlohmann::json state_dict() const override {
            calls_while_loading += loading;
            return {{"probe", 2.5}};
        }
        std::vector<std::string> state_keys() const override { return {"probe"}; }
        void load_state_dict(const nlohmann::json& progress) override {
            loading = true;
            CHECK(progress.at("probe") == 2.5);
        }
        void on_fit_start(train::Trainer&) override { loading = false; }
    };
    testing::TempDir tmp;
    {
        Program first(tmp.path() / "run", 10);
        first.trainer.add_callback(std::make_shared<Costly>());
        first.fit();
    }
    Program resumed(tmp.path() / "run", 20);
    const auto costly = std::make_shared<Costly>();
    resumed.trainer.add_callback(costly);
    resumed.fit(tmp.path() / "run");
    CHECK(costly->calls_while_loading == 0);
    // Its key is its own, not a validation metric.
    CHECK_FALSE(resumed.trainer.callback_metrics().contains("probe"));
    CHECK(resumed.trainer.callback_metrics().contains("val_loss"));
}

TEST_CASE("Trainer: the divergence rule stops a loss that is not finite or stays far above its first value") {
    Generator init(1);
    TinyRegressor model(init);
    optim::SGD sgd(model.parameters(), {.lr = 0.01});
    const auto scaled_step = [&](std::function<double(std::int64_t)> scale) {
        return [&model, scale](std::int64_t s, Generator& g) {
            const Tensor x = randn({8, 4}, g);
            return train::StepOutput{.loss = mse_loss(model.forward(x), target_of(x)) * scale(s), .logs = {}};
        };
    };
    {
        train::Trainer trainer(model, sgd, {.max_steps = 100});
        trainer.add_callback(std::make_shared<train::DivergenceMonitor>());
        CHECK_THROWS_WITH_AS(trainer.fit(scaled_step([](std::int64_t s) { return s == 0 ? 1.0 : 100.0; })),
                             doctest::Contains("training diverged at step 21: the loss"), train::Diverged);
    }
    {
        train::Trainer trainer(model, sgd, {.max_steps = 100});
        trainer.add_callback(std::make_shared<train::DivergenceMonitor>(
            train::DivergenceMonitorOptions{.hint = "try a lower --lr"}));
        CHECK_THROWS_WITH_AS(
            trainer.fit(scaled_step([](std::int64_t s) { return s == 5 ? std::nan("") : 1.0; })),
            doctest::Contains("training diverged at step 6 (loss nan); try a lower --lr"), train::Diverged);
    }
    {  // a step whose loss stays near its first value is not divergence
        train::Trainer trainer(model, sgd, {.max_steps = 30});
        trainer.add_callback(std::make_shared<train::DivergenceMonitor>());
        CHECK(trainer.fit(scaled_step([](std::int64_t) { return 1.0; })).global_step == 30);
    }
    {  // a saved count the rule stops at is no run's
        train::DivergenceMonitor monitor({.patience = 5});
        monitor.load_state_dict({{"initial_loss", 1.0}, {"high_loss_steps", 4}});
        CHECK(monitor.state_dict()["high_loss_steps"] == 4);
        CHECK_THROWS_WITH_AS(
            monitor.load_state_dict({{"initial_loss", 1.0}, {"high_loss_steps", 5}}),
            doctest::Contains("progress.high_loss_steps is 5, but training stops as diverged "
                              "when it reaches 5"),
            ValueError);
    }
}

TEST_CASE("Trainer: bad run directories and options give a clear attograd::Error") {
    testing::TempDir tmp;
    {
        const train::RunLock other((tmp.path() / "run").string());  // as another training process holds it
        Program program(tmp.path() / "run");
        CHECK_THROWS_WITH_AS(program.fit(), doctest::Contains("is being written by another process"),
                             IoError);
    }
    {
        std::ofstream(tmp.path() / "file") << "not a run";
        Program program(tmp.path() / "file");
        CHECK_THROWS_WITH_AS(program.fit(), doctest::Contains("exists and is not a directory"), IoError);
    }
    {
        Program program(tmp.path() / "nothing-here");
        CHECK_THROWS_WITH_AS(program.fit(tmp.path() / "nothing-here"),
                             doctest::Contains("no such run directory"), IoError);
    }
    Generator init(1);
    TinyRegressor model(init);
    optim::SGD sgd(model.parameters(), {.lr = 0.1});
    CHECK_THROWS_WITH_AS(train::Trainer(model, sgd, {.max_steps = -1}),
                         doctest::Contains("max_steps must be >= 0"), ValueError);
    CHECK_THROWS_WITH_AS(train::Trainer(model, sgd, {.gradient_clip_val = -1}),
                         doctest::Contains("gradient_clip_val must be finite and >= 0"), ValueError);
    train::Trainer trainer(model, sgd, {.max_steps = 2});
    CHECK_THROWS_WITH_AS(trainer.set_config({{"progress", 1}}), doctest::Contains("key 'progress'"),
                         ValueError);
    CHECK_THROWS_WITH_AS(trainer.fit([](std::int64_t, Generator&) {
        return train::StepOutput{.loss = ones({2}), .logs = {}};
    }),
                         doctest::Contains("must return a scalar loss, got shape [2]"), ValueError);
}

TEST_CASE("Trainer: callbacks and schedules that would lose a run's files or never act are refused") {
    // A log named as a checkpoint would replace it at every save.
    for (const std::string name : {"model.safetensors", "optimizer.safetensors"}) {
        CAPTURE(name);
        CHECK_THROWS_WITH_AS(train::CSVLogger(train::CSVLoggerOptions{.filename = name}),
                             doctest::Contains("is the Trainer's own checkpoint"), ValueError);
    }
    // Two callbacks writing one file: the save refuses it, and the run directory keeps nothing of it.
    testing::TempDir tmp;
    {
        Program program(tmp.path() / "run");
        program.trainer.add_callback(std::make_shared<train::CSVLogger>());  // metrics.csv again
        CHECK_THROWS_WITH_AS(program.fit(), doctest::Contains("'metrics.csv' is written twice in one save"),
                             ValueError);
        CHECK_FALSE(fs::exists(tmp.path() / "run" / "config.json"));
    }
    CHECK_THROWS_WITH_AS(train::EarlyStopping(train::EarlyStoppingOptions{
                             .monitor = "val_loss", .stopping_threshold = std::nan(""), .mode = "min"}),
                         doctest::Contains("stopping_threshold is NaN"), ValueError);
    Generator init(1);
    TinyRegressor model(init);
    optim::SGD sgd(model.parameters(), {.lr = 0.1}), other(model.parameters(), {.lr = 0.1});
    optim::CosineAnnealingLR schedule(other, {.T_max = 10});
    train::Trainer trainer(model, sgd, {.max_steps = 2});
    CHECK_THROWS_WITH_AS(trainer.set_scheduler(&schedule),
                         doctest::Contains("the schedule drives another optimizer than this Trainer's"),
                         ValueError);
}

TEST_CASE("Trainer: a save refuses NaN parameters, saying the run diverged, and keeps the last generation") {
    testing::TempDir tmp;
    const fs::path dir = tmp.path() / "run";
    Generator init(1);
    TinyRegressor model(init);
    optim::SGD sgd(model.parameters(), {.lr = 0.01});
    // No DivergenceMonitor: only the save stands between NaN weights and the run directory.
    train::Trainer trainer(model, sgd, {.max_steps = 20, .default_root_dir = dir});
    trainer.add_callback(
        std::make_shared<train::ModelCheckpoint>(train::ModelCheckpointOptions{.every_n_train_steps = 5}));
    const auto step = [&](std::int64_t s, Generator& g) {
        const Tensor x = randn({8, 4}, g);
        const double scale = s >= 7 ? std::nan("") : 1.0;  // the loss of step 8 on is NaN
        return train::StepOutput{.loss = mse_loss(model.forward(x), target_of(x)) * scale, .logs = {}};
    };
    CHECK_THROWS_WITH_AS(trainer.fit(step),
                         doctest::Contains("training diverged by step 10: parameter 'hidden.bias' holds NaN"),
                         train::Diverged);
    const auto config = train::read_run_json(dir / "config.json");
    CHECK(config["progress"]["steps_done"] == 5);  // the step-5 generation, whole and resumable
    CHECK_NOTHROW(train::load_checkpoint(dir / "model.safetensors"));

    // Without a run directory nothing is saved, so nothing is refused.
    Generator init2(1);
    TinyRegressor unsaved(init2);
    optim::SGD sgd2(unsaved.parameters(), {.lr = 0.01});
    train::Trainer no_dir(unsaved, sgd2, {.max_steps = 2});
    CHECK(no_dir
              .fit([&](std::int64_t, Generator& g) {
                  const Tensor x = randn({8, 4}, g);
                  return train::StepOutput{.loss = mse_loss(unsaved.forward(x), target_of(x)), .logs = {}};
              })
              .global_step == 2);
}

TEST_CASE("Trainer: the seed is part of the run: resuming with another seed is refused, naming both") {
    testing::TempDir tmp;
    const fs::path dir = tmp.path() / "run";
    {
        Program program(dir, 10);  // seed 3
        CHECK(program.fit().global_step == 10);
    }
    CHECK(train::read_run_json(dir / "config.json")["progress"]["seed"] == 3);
    {
        Generator init{7};
        TinyRegressor model{init};
        optim::Adam adam{model.parameters(), optim::AdamOptions{.lr = 0.02}};
        train::Trainer other(model, adam, {.max_steps = 20, .seed = 4, .default_root_dir = dir});
        CHECK_THROWS_WITH_AS(
            other.fit(
                [&](std::int64_t, Generator& g) {
                    const Tensor x = randn({16, 4}, g);
                    return train::StepOutput{.loss = mse_loss(model.forward(x), target_of(x)), .logs = {}};
                },
                {}, train::ckpt_last),
            doctest::Contains("was trained with seed 3, but this Trainer's seed is 4"), ValueError);
    }
    CHECK(train::read_run_json(dir / "config.json")["progress"]["steps_done"] == 10);  // untouched
    Program longer(dir, 20);  // the same seed may train longer
    CHECK(longer.fit(train::ckpt_last).global_step == 20);
}

TEST_CASE("Trainer: an optimizer over parameters that are not the model's is refused") {
    Generator init(1);
    TinyRegressor model(init), other(init);
    optim::SGD sgd(other.parameters(), {.lr = 0.1});
    CHECK_THROWS_WITH_AS(
        train::Trainer(model, sgd, {.max_steps = 2}),
        doctest::Contains("the optimizer's parameter 0 (of 4, shape [8, 4]) is not a parameter "
                          "of the model (TinyRegressor)"),
        ValueError);
    std::vector<Tensor> mixed = model.parameters();
    mixed.push_back(other.parameters().back());
    optim::SGD partly(mixed, {.lr = 0.1});
    CHECK_THROWS_WITH_AS(train::Trainer(model, partly, {.max_steps = 2}),
                         doctest::Contains("parameter 4 (of 5"), ValueError);
    const std::vector<Tensor> all = model.parameters();
    optim::SGD some(std::vector<Tensor>(all.begin(), all.begin() + 2), {.lr = 0.1});  // fine-tuning a part
    CHECK_NOTHROW(train::Trainer(model, some, {.max_steps = 2}));
}

TEST_CASE("Trainer: a run directory that is the current directory or holds it is refused before training") {
    testing::TempDir tmp;
    fs::create_directories(tmp.path() / "work" / "deeper");
    const fs::path saved = fs::current_path();
    fs::current_path(tmp.path() / "work" / "deeper");
    fs::create_directory_symlink(tmp.path() / "work", tmp.path() / "link");
    // "missing/../link" is where link leads once the kernel can follow it.
    for (const fs::path& dir : {fs::path("."), fs::path(".."), (tmp.path() / "work").lexically_normal(),
                                tmp.path() / "missing" / ".." / "link"}) {
        CAPTURE(dir);
        std::int64_t steps = 0;
        Program program(dir);
        CHECK_THROWS_WITH_AS(program.trainer.fit(
                                 [&](std::int64_t s, Generator& g) {
                                     ++steps;
                                     return program.step(s, g);
                                 },
                                 {}),
                             doctest::Contains("is the current directory or holds it"), IoError);
        CHECK(steps == 0);
        CHECK(fs::exists(fs::current_path()));
    }
    Program below(tmp.path() / "work" / "deeper" / "run");  // a directory inside it is fine
    CHECK(below.fit().global_step == 40);
    fs::current_path(saved);
}

TEST_CASE(
    "Trainer: EarlyStopping refuses a monitored metric that is NaN (check_finite), unless told not to") {
    for (const bool check_finite : {true, false}) {
        CAPTURE(check_finite);
        Generator init(1);
        TinyRegressor model(init);
        optim::SGD sgd(model.parameters(), {.lr = 0.1});
        train::Trainer trainer(model, sgd, {.max_steps = 4, .val_check_interval = 2});
        auto early = std::make_shared<train::EarlyStopping>(train::EarlyStoppingOptions{
            .monitor = "val_loss", .stopping_threshold = 0.1, .mode = "min", .check_finite = check_finite});
        trainer.add_callback(early);
        const auto fit = [&] {
            return trainer.fit(
                [&](std::int64_t, Generator& g) {
                    const Tensor x = randn({4, 4}, g);
                    return train::StepOutput{.loss = mse_loss(model.forward(x), target_of(x)), .logs = {}};
                },
                [] {
                    return train::Metrics{{"val_loss", std::nan("")}};
                });
        };
        if (check_finite) {
            CHECK_THROWS_WITH_AS(fit(),
                                 doctest::Contains("monitor 'val_loss' is nan at step 2, not a finite value"),
                                 ValueError);
        } else {
            CHECK(fit().global_step == 4);
            CHECK_FALSE(early->reached());
        }
    }
}

TEST_CASE("Trainer: a link or another process's save put in the run's place between saves is not written") {
    testing::TempDir tmp;
    const fs::path run = tmp.path() / "run", elsewhere = tmp.path() / "elsewhere";
    fs::create_directory(elsewhere);
    std::ofstream(elsewhere / "mine.txt") << "mine";
    SUBCASE("a link") {
        Program program(run);
        program.trainer.add_callback(std::make_shared<AtStep>(7, [&] {
            fs::rename(run, tmp.path() / "run.real");
            fs::create_directory_symlink(elsewhere, run);
        }));
        CHECK_THROWS_WITH_AS(program.fit(),
                             doctest::Contains("was replaced by a symbolic link since training started"),
                             IoError);
        CHECK(std::distance(fs::directory_iterator(elsewhere), fs::directory_iterator{}) == 1);
    }
    SUBCASE("another process's save (as after its lock file was removed)") {
        Program program(run);
        program.trainer.add_callback(std::make_shared<AtStep>(7, [&] {
            train::RunWriter other(run);  // what another train's save does
            other.write_file("notes.txt", "theirs");
            other.commit(nlohmann::json::object());
        }));
        CHECK_THROWS_WITH_AS(
            program.fit(),
            doctest::Contains("the directory is no longer the one this training last read or wrote"),
            IoError);
        CHECK(bytes_of(run / "notes.txt") == "theirs");
    }
}
