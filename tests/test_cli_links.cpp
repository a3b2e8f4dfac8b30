// Output paths and links: a file whose name the program chose is never written through a
// symbolic link (in a --to directory as in the run), a --to link planted by another user in a
// sticky world-writable directory is not followed, and a --to that is (or links to) a pipe, a
// device or an open descriptor (/dev/stdout) is refused in one line pointing at `--to -`.
#include "cli_helpers.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

namespace {

using namespace cli_test;

/// A run trained for one step in `tmp`/run (its path as text).
std::string trained_run(const TempDir& tmp) {
    require_ok(run(train_args(tmp / "run", "1")));
    return tmp / "run";
}

}  // namespace

TEST_CASE("inspect never writes a file it names through a link in a --to directory") {
    TempDir tmp;
    const std::string dir = trained_run(tmp);
    write_text(tmp / "victim", "victim\n");
    fs::create_directory(tmp / "svgd");
    const fs::path planted = fs::path(tmp / "svgd") / "example2_layer0_head0.svg";
    fs::create_symlink(tmp / "victim", planted);
    check_refused(run({"inspect", "--run", dir, "--format", "svg", "--samples", "2", "--to", tmp / "svgd"}),
                  {"svgd/example2_layer0_head0.svg", "symbolic link"});
    CHECK(read_text(tmp / "victim") == "victim\n");
    CHECK(fs::is_symlink(planted));
    CHECK(entries(tmp / "svgd") ==
          std::set<std::string>{"example2_layer0_head0.svg"});  // nothing else written
    // A dangling link is not followed either (it would create the file it names).
    fs::remove(planted);
    fs::create_symlink(tmp / "made.svg", planted);
    check_refused(run({"inspect", "--run", dir, "--format", "svg", "--samples", "2", "--to", tmp / "svgd"}),
                  {"example2_layer0_head0.svg", "symbolic link"});
    CHECK_FALSE(fs::exists(tmp / "made.svg"));
    // Without the link the same command writes its files there.
    fs::remove(planted);
    require_ok(run({"inspect", "--run", dir, "--format", "svg", "--samples", "2", "--to", tmp / "svgd"}));
    CHECK(read_text(planted).find("<svg") != std::string::npos);
}

TEST_CASE("a --to that is or links to a pipe or a device is refused, pointing at --to -") {
    TempDir tmp;
    const std::string dir = trained_run(tmp);
    REQUIRE(::mkfifo((tmp / "fifo").c_str(), 0600) == 0);
    fs::create_symlink(tmp / "fifo", tmp / "to_fifo");
    fs::create_symlink("/dev/null", tmp / "to_null");
    for (const std::string& to : {tmp / "fifo", tmp / "to_fifo", std::string("/dev/null"), tmp / "to_null"}) {
        INFO(to);
        check_refused(run({"eval", "--run", dir, "--to", to}), {to, "not a regular file", "`--to -`"});
        check_refused(run({"inspect", "--run", dir, "--format", "html", "--to", to}),
                      {to, "not a regular file", "`--to -`"});
    }
    CHECK(fs::is_fifo(tmp / "fifo"));
    CHECK(fs::is_character_file("/dev/null"));
    CHECK(fs::is_symlink(tmp / "to_fifo"));
    // Standard output on a file (as run() captures it): /dev/stdout would be that file, replaced
    // by the rename while the descriptor keeps the old one.
    for (const char* to : {"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"}) {
        check_refused(run({"eval", "--run", dir, "--to", to}), {to, "names an open descriptor", "`--to -`"});
        check_refused(run({"inspect", "--run", dir, "--format", "csv", "--to", to}),
                      {to, "names an open descriptor"});
    }
    // What the message points at: `--to -` puts the JSON (eval) or the report (inspect) on stdout.
    const Outcome eval = run({"eval", "--run", dir, "--to", "-"});
    require_ok(eval);
    CHECK(json::parse(eval.out).contains("token_accuracy"));
    const Outcome inspect = run({"inspect", "--run", dir, "--format", "html", "--to", "-"});
    require_ok(inspect);
    CHECK(inspect.out.starts_with("<!DOCTYPE html>"));
    // A directory format takes a directory, never `-` nor a pipe.
    check_refused(run({"inspect", "--run", dir, "--format", "svg", "--to", tmp / "fifo"}),
                  {"fifo", "not a directory"});
}

TEST_CASE("a --to link another user planted in a sticky world-writable directory is not followed") {
    if (::geteuid() != 0) {
        MESSAGE("skipped: giving a link to another owner (lchown) needs root");
        return;
    }
    TempDir tmp;
    const std::string dir = trained_run(tmp);
    write_text(tmp / "victim", "victim\n");
    const fs::path shared = tmp / "shared";  // like /tmp
    fs::create_directory(shared);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);
    fs::create_symlink(tmp / "victim", shared / "out.json");
    REQUIRE(::lchown((shared / "out.json").c_str(), 54321, static_cast<gid_t>(-1)) == 0);
    check_refused(run({"eval", "--run", dir, "--to", (shared / "out.json").string()}),
                  {"out.json", "owned by uid 54321", "sticky world-writable", "not following it"});
    check_refused(run({"inspect", "--run", dir, "--format", "json", "--to", (shared / "out.json").string()}),
                  {"out.json", "owned by uid 54321"});
    CHECK(read_text(tmp / "victim") == "victim\n");
    CHECK(fs::is_symlink(shared / "out.json"));
}

TEST_CASE("a directory link another user planted is not followed by --out, --resume, --run or --to") {
    if (::geteuid() != 0) {
        MESSAGE("skipped: giving a link to another owner (lchown) needs root");
        return;
    }
    TempDir tmp;
    const std::string dir = trained_run(tmp);
    fs::create_directory(tmp / "victim");
    const fs::path shared = tmp / "shared";  // like /tmp
    fs::create_directory(shared);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);
    const auto plant = [&](const fs::path& to, const std::string& name) {
        fs::create_symlink(to, shared / name);
        REQUIRE(::lchown((shared / name).c_str(), 54321, static_cast<gid_t>(-1)) == 0);
        return (shared / name).string();
    };
    const std::string victim = plant(tmp / "victim", "dir");  // another user's link to your directory
    const std::vector<std::string> refused = {"owned by uid 54321", "sticky world-writable",
                                              "not following it"};
    // The link as the run directory, and as a directory on the way to it or to a --to file.
    check_refused(run(train_args(victim, "1")), refused);
    check_refused(run(train_args(victim + "/run", "1")), refused);
    check_refused(run({"eval", "--run", dir, "--to", victim + "/sub/out.json"}), refused);
    check_refused(run({"inspect", "--run", dir, "--format", "svg", "--to", victim + "/maps"}), refused);
    check_refused(run({"inspect", "--run", dir, "--format", "json", "--to", victim + "/out.json"}), refused);
    // A directory made on the way ("new/..") does not let the link through either.
    check_refused(
        run({"eval", "--run", dir, "--to", (shared / "new" / ".." / "dir" / "sub" / "out.json").string()}),
        refused);
    // Nor is anything read through one (--data), in the last component or on the way.
    fs::create_directory(tmp / "victim-data");
    write_text(fs::path(tmp / "victim-data") / "pairs.tsv", "a b\tb a\n");
    const std::string data_link = plant(fs::path(tmp / "victim-data") / "pairs.tsv", "pairs.tsv");
    const std::string data_dir = plant(tmp / "victim-data", "data");
    for (const std::string& data : {data_link, data_dir + "/pairs.tsv"})
        check_refused(run({"train", "--data", data, "--steps", "1", "--quiet", "--out", tmp / "data-run"}),
                      refused);
    CHECK_FALSE(fs::exists(tmp / "data-run"));
    CHECK(fs::is_empty(tmp / "victim"));
    // A run reached through another user's link is not read, resumed or written into either.
    const std::string config = read_text(fs::path(dir) / "config.json");
    const std::string planted_run = plant(dir, "run");
    check_refused(run({"eval", "--run", planted_run}), refused);
    check_refused(run({"inspect", "--run", planted_run, "--format", "html"}), refused);
    check_refused(run({"train", "--resume", planted_run, "--steps", "2", "--quiet"}), refused);
    CHECK_FALSE(fs::exists(fs::path(dir) / "inspect"));
    CHECK(read_text(fs::path(dir) / "config.json") == config);
    // Your own link is followed as before.
    fs::create_symlink(tmp / "victim", tmp / "mine");
    require_ok(run({"eval", "--run", dir, "--to", (fs::path(tmp / "mine") / "sub" / "out.json").string()}));
    CHECK(fs::exists(fs::path(tmp / "victim") / "sub" / "out.json"));
}

TEST_CASE("a --to whose directory is a link to nothing or a file says which component is in the way") {
    TempDir tmp;
    const std::string dir = trained_run(tmp);
    fs::create_symlink(tmp / "nowhere", tmp / "dangling");
    write_text(tmp / "plain", "x");
    check_refused(
        run({"eval", "--run", dir, "--to", (fs::path(tmp / "dangling") / "x" / "out.json").string()}),
        {"cannot create the directory", "dangling", "a symbolic link to nothing or to a file"});
    check_refused(run({"inspect", "--run", dir, "--format", "svg", "--to",
                       (fs::path(tmp / "plain") / "maps").string()}),
                  {"cannot create the directory", "plain", "not a directory"});
    CHECK_FALSE(fs::exists(tmp / "nowhere"));
    CHECK(read_text(tmp / "plain") == "x");
}

TEST_CASE("a --to link to nothing in a missing folder names the link and the folder") {
    TempDir tmp;
    train(tmp / "run", {"--task", "reverse", "--steps", "2"});
    const fs::path link = fs::path(tmp / "dl");
    fs::create_symlink("nd/sub/f.json", link);
    check_refused(run({"eval", "--run", tmp / "run", "--to", link}),
                  {"--to", "is a link to nd/sub/f.json, whose folder", "does not exist"});
    CHECK_FALSE(fs::exists(tmp / "nd"));
    fs::create_directories(fs::path(tmp / "nd") / "sub");
    require_ok(run({"eval", "--run", tmp / "run", "--to", link}));
    CHECK(fs::is_regular_file(fs::path(tmp / "nd") / "sub" / "f.json"));
}

TEST_CASE("--out MISSING/../LINK is the link's directory, as --out LINK is") {
    TempDir tmp;
    const fs::path victim = fs::path(tmp / "target"), link = fs::path(tmp / "link");
    fs::create_directory(victim);
    fs::create_directory_symlink(victim, link);
    const std::string out = (fs::path(tmp / "new") / ".." / "link").string();
    const Outcome trained = run({"train", "--task", "reverse", "--steps", "2", "--out", out});
    require_ok(trained);
    // The command it suggests names a path the kernel follows (new/.. does not exist).
    CHECK(trained.out.find("next: attograd inspect --run " + fs::canonical(victim).string()) !=
          std::string::npos);
    CHECK(fs::is_regular_file(victim / "model.safetensors"));
    CHECK(fs::is_symlink(link));
    CHECK_FALSE(fs::exists(tmp / "new"));
    require_ok(run({"train", "--resume", link.string(), "--steps", "3", "--quiet"}));
    CHECK(read_config(victim.string())["progress"]["steps_done"] == 3);
    // A trailing slash names the same directory, and is not doubled in the line naming it.
    const std::string slashed = (fs::path(tmp / "new") / ".." / "fresh").string() + "/";
    const Outcome fresh = run({"train", "--task", "reverse", "--steps", "1", "--out", slashed});
    require_ok(fresh);
    CHECK_MESSAGE(fresh.out.find("wrote " + slashed + " (") != std::string::npos, fresh.out);
    CHECK(fs::is_regular_file(fs::path(tmp / "fresh") / "config.json"));
}
