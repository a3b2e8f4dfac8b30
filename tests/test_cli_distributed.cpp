// `mpirun -np N attograd train`: the same run as one process, one run directory written by rank
// 0, interrupt and --resume on another number of ranks, and a failing rank that ends the job.
#include "cli_helpers.hpp"

#include "optim/distributed.hpp"

#include <array>
#include <cstdio>

using namespace cli_test;

#ifdef ATTOGRAD_MPIEXEC
namespace {

// Runs `command` through the shell with a time limit (coreutils `timeout`: a hang fails the
// test instead of blocking ctest), capturing stdout and stderr together.
Outcome shell(const std::string& command) {
    Outcome outcome;
    outcome.command = "timeout 120 " + command + " 2>&1";
    std::FILE* pipe = ::popen(outcome.command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::array<char, 4096> buffer{};
    for (std::size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;)
        outcome.out.append(buffer.data(), n);
    const int status = ::pclose(pipe);
    outcome.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return outcome;
}

// `attograd ARGS` on `ranks` processes. LeakSanitizer is off: Open MPI's allocations outlive
// MPI_Finalize (tests/CMakeLists.txt).
Outcome mpirun(int ranks, const std::string& args, const std::string& env = "") {
    return shell(fmt::format(
        "env ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 OMP_NUM_THREADS=1 {} {} -np {} {} "
        "{} {}",
        env, ATTOGRAD_MPIEXEC, ranks, ATTOGRAD_MPI_FLAGS, ATTOGRAD_PROGRAM, args));
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

// metrics.csv's rows as numbers (an empty field, a step without evaluation, as -1).
std::vector<std::vector<double>> metrics(const std::string& dir) {
    std::vector<std::vector<double>> rows;
    std::istringstream lines(read_text(fs::path(dir) / "metrics.csv"));
    std::string line;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) {
        std::vector<double> row;
        std::istringstream fields(line);
        for (std::string field; std::getline(fields, field, ',');)
            row.push_back(field.empty() ? -1.0 : std::stod(field));
        rows.push_back(row);
    }
    return rows;
}

}  // namespace

TEST_CASE("mpirun train on 2 ranks then resumed on 3 equals one process and writes one run directory") {
    TempDir tmp;
    const std::string common =
        "train --task reverse --steps 60 --eval-every 30 --no-early-stop --snapshot-every 0";
    const std::string one = (tmp.path() / "one").string(), split = (tmp.path() / "split").string();
    require_ok(run({"train", "--task", "reverse", "--steps", "60", "--eval-every", "30", "--no-early-stop",
                    "--snapshot-every", "0", "--quiet", "--out", one}));
    // Interrupted at step 30 on every rank (SIGINT): rank 0 saves the run and says so, once.
    const Outcome first = mpirun(2, common + " --out " + split, "ATTOGRAD_TEST_SIGNAL_AT_STEP=30");
    INFO(first.command, "\n", first.out);
    CHECK(first.code == 130);
    CHECK(count(first.out, "saved the run") == 1);
    CHECK(count(first.out, "training reverse") == 1);  // only rank 0 prints
    const Outcome resumed = mpirun(3, "train --resume " + split);
    INFO(resumed.command, "\n", resumed.out);
    REQUIRE(resumed.code == 0);
    CHECK(count(resumed.out, "wrote ") == 1);
    CHECK(entries(tmp.path()) == std::set<std::string>{"one", "split"});  // no staging left, no second run
    const auto a = metrics(one), b = metrics(split);
    REQUIRE(a.size() == 6);
    REQUIRE(b.size() == a.size());
    for (std::size_t r = 0; r < a.size(); ++r) {
        CAPTURE(r);
        CHECK(b[r][0] == a[r][0]);                                                        // step
        CHECK(b[r][1] == doctest::Approx(a[r][1]).epsilon(1e-3));                         // loss
        for (std::size_t c = 2; c <= 4; ++c) CHECK(std::abs(b[r][c] - a[r][c]) <= 0.01);  // accuracies
        CHECK(b[r][5] == doctest::Approx(a[r][5]).epsilon(1e-9));                         // lr
    }
}

TEST_CASE("mpirun train: a rank whose set-up fails ends every rank with its message once, not a hang") {
    TempDir tmp;
    fs::create_directories(tmp.path() / "taken");
    write_text(tmp.path() / "taken" / "notes.txt", "not a run\n");
    // Rank 0 alone checks --out and fails; the other ranks learn it where the set-up ends.
    const Outcome o = mpirun(2, "train --task reverse --steps 20 --out " + (tmp.path() / "taken").string());
    INFO(o.command, "\n", o.out);
    CHECK(o.code == 2);
    CHECK(count(o.out, "holds files that are not an attograd run") == 1);
    CHECK(count(o.out, "attograd: ") == 1);  // that line alone: no rank repeats it or adds its own
    CHECK(count(o.out, "MPI_ABORT") == 0);   // every rank exits on its own
}

TEST_CASE("mpirun: an error every rank meets (the same command line, a diverged loss) is printed once") {
    TempDir tmp;
    const std::string out = " --out " + (tmp.path() / "run").string();
    for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
             {"train --task nope" + out, "unknown task 'nope'"},
             {"train --task reverse --lr -1" + out,
              "--lr must be a positive number representable in float32 (in [1.2e-38, 3.4e+38]), got -1"},
             {"train --task reverse --stepz 3" + out, "--stepz"},
             {"trian --task reverse", "unknown subcommand 'trian'"},
             // Found while training, from the figures every rank shares: every rank stops alike.
             {"train --task reverse --lr 1e6 --steps 200" + out, "training diverged at step"}}) {
        const Outcome o = mpirun(3, args);
        INFO(o.command, "\n", o.out);
        CHECK(o.code == 2);
        CHECK(count(o.out, message) == 1);
        CHECK(count(o.out, "attograd: ") == 1);
        CHECK(count(o.out, "MPI_ABORT") == 0);
    }
}

TEST_CASE("mpirun train refuses a batch smaller than the number of ranks") {
    TempDir tmp;
    const Outcome o =
        mpirun(3, "train --task reverse --batch 2 --steps 5 --out " + (tmp.path() / "run").string());
    INFO(o.command, "\n", o.out);
    CHECK(o.code == 2);
    CHECK(count(o.out, "--batch 2 is smaller than the number of ranks (3)") == 1);
}

TEST_CASE("a run trained with dropout on 3 ranks loads in one process: its first loss is the 3 ranks'") {
    // Each rank's dropout drew its own masks at the first step: the loss recorded is theirs.
    TempDir tmp;
    const std::string dir = (tmp.path() / "run").string();
    const Outcome trained = mpirun(3, "train --task reverse --dropout 0.3 --steps 3 --quiet --out " + dir);
    INFO(trained.command, "\n", trained.out);
    REQUIRE(trained.code == 0);
    require_ok(run({"eval", "--run", dir}));
    require_ok(run({"train", "--resume", dir, "--steps", "5", "--quiet"}));  // one process: the record stays
    CHECK(read_config(dir)["progress"]["first_step_ranks"] == 3);
    edit_config(dir, [](json& c) {
        c["progress"]["initial_loss"] = c["progress"]["initial_loss"].get<double>() * 1.001;
    });
    check_refused(run({"eval", "--run", dir}), {"progress.initial_loss is", "as 3 ranks took it"});
}

TEST_CASE("mpirun: tasks, eval and inspect run on rank 0 alone, the other ranks exit 0 silently") {
    TempDir tmp;
    const std::string dir = (tmp.path() / "rev").string();
    train(dir, {"--task", "reverse", "--steps", "2"});
    // Only train is data-parallel: eval's lines used to appear once per rank.
    const Outcome eval = mpirun(2, "eval --run " + dir + " --input 'a b c d' --show 1");
    INFO(eval.command, "\n", eval.out);
    CHECK(eval.code == 0);
    CHECK(count(eval.out, "input: a b c d -> ") == 1);
    CHECK(count(eval.out, "held-out examples): token accuracy") == 1);
    const Outcome tasks = mpirun(3, "tasks");
    INFO(tasks.out);
    CHECK(tasks.code == 0);
    CHECK(count(tasks.out, "reverse") == count(run({"tasks"}).out, "reverse"));
    // inspect --to: one writer, one "wrote" line.
    const std::string to = (tmp.path() / "maps.json").string();
    const Outcome inspect = mpirun(2, "inspect --run " + dir + " --format json --to " + to);
    INFO(inspect.out);
    CHECK(inspect.code == 0);
    CHECK(count(inspect.out, "wrote ") == 1);
    CHECK(fs::exists(to));
}

#else

TEST_CASE("without MPI the program trains in one process") { CHECK_FALSE(attograd::optim::mpi_available()); }

#endif
