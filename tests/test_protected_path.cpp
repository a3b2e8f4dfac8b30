// The protected_symlinks rule on every component of a path (check_protected_path), as the run
// writer, the run lock and the run reader apply it; and a run lock whose file was removed.
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/protected_path.hpp"
#include "temp_dir.hpp"
#include "train/run_dir.hpp"
#include "train/run_lock.hpp"
#include "train/run_writer.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <thread>

using namespace attograd;
namespace fs = std::filesystem;
using testing::TempDir;

namespace {

constexpr uid_t other_uid = 54321;  // an owner that is not the test's user

/// A sticky world-writable directory `shared` in `root`, like /tmp (owned by root).
fs::path make_shared(const TempDir& root) {
    const fs::path shared = root.path() / "shared";
    fs::create_directory(shared);
    REQUIRE(::chmod(shared.c_str(), 01777) == 0);
    return shared;
}

/// A symbolic link `link` to `to` owned by `owner` (lchown: the link itself).
void make_link(const fs::path& to, const fs::path& link, uid_t owner) {
    fs::create_symlink(to, link);
    REQUIRE(::lchown(link.c_str(), owner, static_cast<gid_t>(-1)) == 0);
}

/// The permission bits of `p` (links followed).
mode_t mode(const fs::path& p) {
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

bool root_user() {
    if (::geteuid() == 0) return true;
    MESSAGE("skipped: giving a link to another owner (lchown) needs root");
    return false;
}

}  // namespace

TEST_CASE("check_protected_path refuses another user's planted link in any component of the path") {
    if (!root_user()) return;
    TempDir root;
    const fs::path shared = make_shared(root), victim = root.path() / "victim";
    fs::create_directory(victim);
    make_link(victim, shared / "planted", other_uid);
    const char* const refused = "planted' is owned by uid 54321 in a sticky world-writable directory";
    SUBCASE("as a directory on the way, existing or not past it") {
        CHECK_THROWS_WITH_AS(check_protected_path(shared / "planted" / "x" / "y", "where"),
                             doctest::Contains(refused), IoError);
        CHECK_THROWS_WITH_AS(check_protected_path(shared / "planted" / ".." / "shared", "where"),
                             doctest::Contains(refused), IoError);
        CHECK_THROWS_WITH_AS(check_protected_path(shared / "new" / ".." / "planted" / "sub", "where"),
                             doctest::Contains(refused), IoError);
    }
    SUBCASE("reached through the caller's own links, relative ones and '..'") {
        make_link("shared/planted", root.path() / "mine", ::geteuid());
        CHECK_THROWS_WITH_AS(check_protected_path(root.path() / "mine" / "file", "where"),
                             doctest::Contains(refused), IoError);
        fs::create_directory(root.path() / "sub");
        make_link("../shared", root.path() / "sub" / "up", ::geteuid());
        CHECK_THROWS_WITH_AS(check_protected_path(root.path() / "sub" / "up" / "planted", "where"),
                             doctest::Contains(refused), IoError);
    }
    SUBCASE("AtomicFile refuses to write below it") {
        CHECK_THROWS_WITH_AS(write_file_atomic(shared / "planted" / "out.txt", "x"),
                             doctest::Contains(refused), IoError);
        CHECK(fs::is_empty(victim));
    }
    SUBCASE("the caller's own links, and paths without links, pass") {
        make_link(victim, shared / "own", ::geteuid());
        check_protected_path(shared / "own" / "x", "where");
        check_protected_path(root.path() / "victim" / "missing" / "deeper", "where");
        write_file_atomic(shared / "own" / "out.txt", "x");
        CHECK(fs::exists(victim / "out.txt"));
    }
    SUBCASE("a loop of links is an error, not a hang") {
        fs::create_symlink(root.path() / "b", root.path() / "a");
        fs::create_symlink(root.path() / "a", root.path() / "b");
        CHECK_THROWS_WITH_AS(check_protected_path(root.path() / "a" / "x", "where"),
                             doctest::Contains("too many levels of symbolic links"), IoError);
    }
}

TEST_CASE("a run directory reached through another user's planted link is not written, locked or read") {
    if (!root_user()) return;
    TempDir root;
    const fs::path shared = make_shared(root), victim = root.path() / "victim";
    fs::create_directory(victim);
    make_link(victim, shared / "planted", other_uid);
    const char* const refused = "owned by uid 54321";
    CHECK_THROWS_WITH_AS(train::RunWriter(shared / "planted"), doctest::Contains(refused), IoError);
    CHECK_THROWS_WITH_AS(train::RunWriter(shared / "planted" / "run"), doctest::Contains(refused), IoError);
    CHECK_THROWS_WITH_AS(train::RunLock(shared / "planted" / "run"), doctest::Contains(refused), IoError);
    CHECK(fs::is_empty(victim));
    {  // a run of the victim's, read through the link
        train::RunWriter writer(victim / "run");
        writer.write_file("notes.txt", "mine");
        writer.commit(nlohmann::json::object());
    }
    CHECK_NOTHROW(train::open_run(victim / "run"));
    CHECK_THROWS_WITH_AS(train::open_run(shared / "planted" / "run"), doctest::Contains(refused), IoError);
}

TEST_CASE("RunLock::check_held takes a removed lock again, and gives the run up to a writer that took it") {
    TempDir root;
    const fs::path run = root.path() / "run";
    train::RunLock first(run);
    const fs::path file = train::RunLock::lock_path(run);
    REQUIRE(fs::exists(file));
    SUBCASE("removed, and nobody else came: held again on a new file, which keeps others out") {
        fs::remove(file);
        first.check_held();
        CHECK(fs::exists(file));
        CHECK_THROWS_WITH_AS(train::RunLock{run}, doctest::Contains("is being written by another process"),
                             IoError);
        first.check_held();  // still the holder
    }
    SUBCASE("removed, and a second writer took the run meanwhile: the first is refused its next save") {
        fs::remove(file);
        const train::RunLock second(run);  // as `train --resume` in another process would
        CHECK_THROWS_WITH_AS(first.check_held(), doctest::Contains("is being written by another process"),
                             IoError);
        CHECK(fs::exists(file));  // the second writer's file stays
    }
}

TEST_CASE("a save refuses a run directory another user owns or a link put in its place, and takes nothing") {
    if (!root_user()) return;
    TempDir root;
    const fs::path shared = make_shared(root), victim = root.path() / "victim";
    fs::create_directory(victim);
    write_file_atomic(victim / "precious.txt", "mine");
    const auto save = [](train::RunWriter& writer) {
        writer.write_file("a.txt", "A");
        writer.commit(nlohmann::json::object());
    };
    SUBCASE("a link planted where the run goes while it is written") {
        train::RunWriter writer(shared / "run");
        make_link(victim, shared / "run", other_uid);
        CHECK_THROWS_WITH_AS(save(writer), doctest::Contains("replaced by a symbolic link"), IoError);
        CHECK(fs::is_symlink(shared / "run"));
    }
    SUBCASE("another user's directory, there before or made while the run is written") {
        fs::create_directory(shared / "theirs");
        REQUIRE(::chown((shared / "theirs").c_str(), other_uid, static_cast<gid_t>(-1)) == 0);
        CHECK_THROWS_WITH_AS(train::RunWriter(shared / "theirs"), doctest::Contains("is owned by uid 54321"),
                             IoError);
        train::RunWriter writer(shared / "run");
        fs::create_directory(shared / "run");
        fs::create_directory(shared / "run" / "inspect");
        REQUIRE(::chown((shared / "run").c_str(), other_uid, static_cast<gid_t>(-1)) == 0);
        CHECK_THROWS_WITH_AS(save(writer), doctest::Contains("is owned by uid 54321"), IoError);
        CHECK_FALSE(fs::exists(shared / "run" / "a.txt"));
    }
    SUBCASE("another user's directory named as a dead writer's staging directory is not taken in") {
        const fs::path planted = shared / ".run.staging-999999-0";
        fs::create_directory(planted);
        write_file_atomic(planted / "config.json", R"({"files": {}})");
        fs::create_symlink(victim / "precious.txt", planted / "notes.txt");
        REQUIRE(::chown(planted.c_str(), other_uid, static_cast<gid_t>(-1)) == 0);
        train::RunWriter writer(shared / "run");
        save(writer);
        CHECK_FALSE(fs::exists(fs::symlink_status(shared / "run" / "notes.txt")));
        CHECK(fs::exists(planted));  // left to its owner
    }
    CHECK(fs::directory_iterator(victim)->path().filename() == "precious.txt");
    CHECK(std::distance(fs::directory_iterator(victim), fs::directory_iterator{}) == 1);
}

TEST_CASE("a save keeps the permission bits of the run directory and of each file it replaces") {
    TempDir root;
    const fs::path run = root.path() / "run";
    const auto save = [&](const std::string& text) {
        train::RunWriter writer(run);
        writer.write_file("model.txt", text);
        writer.write_file("metrics.txt", text);
        writer.commit(nlohmann::json::object());
    };
    save("1");
    REQUIRE(::chmod(run.c_str(), 0700) == 0);
    REQUIRE(::chmod((run / "model.txt").c_str(), 0600) == 0);
    save("2");
    CHECK(mode(run) == 0700);
    CHECK(mode(run / "model.txt") == 0600);
}

TEST_CASE(
    "a lock file another user left in a sticky directory is not taken; folders made for a lock go with it") {
    TempDir root;
    SUBCASE("the folders a lock made are removed with it while empty") {
        { const train::RunLock lock(root.path() / "a" / "b" / "run"); }
        CHECK_FALSE(fs::exists(root.path() / "a"));
        fs::create_directories(root.path() / "c" / "d" / "run");
        { const train::RunLock lock(root.path() / "c" / "d" / "run"); }
        CHECK(fs::exists(root.path() / "c" / "d" / "run"));
    }
    SUBCASE("a lock file holding a PID and a newline, as `echo PID > .DIR.lock` leaves it, is a lock file") {
        write_file_atomic(root.path() / ".run.lock", "999999\n");
        CHECK_NOTHROW(train::RunLock(root.path() / "run"));
    }
    SUBCASE("another user's lock file") {
        if (!root_user()) return;
        const fs::path shared = make_shared(root), lock = shared / ".run.lock";
        write_file_atomic(lock, "1");
        REQUIRE(::chown(lock.c_str(), other_uid, static_cast<gid_t>(-1)) == 0);
        CHECK_THROWS_WITH_AS(train::RunLock(shared / "run"), doctest::Contains("is owned by uid 54321"),
                             IoError);
        CHECK(fs::exists(lock));
    }
}

TEST_CASE("a save's staging directory is private until the swap, which gives it the run's bits") {
    TempDir root;
    const fs::path run = root.path() / "run";
    const mode_t umask_bits = ::umask(022);
    ::umask(umask_bits);
    const auto staging = [&] {
        for (const auto& entry : fs::directory_iterator(root.path()))
            if (entry.path().filename().string().starts_with(".run.staging-")) return entry.path();
        return fs::path();
    };
    {
        train::RunWriter writer(run);
        writer.write_file("model.txt", "1");
        REQUIRE_FALSE(staging().empty());
        CHECK(mode(staging()) == 0700);
        writer.commit(nlohmann::json::object());
    }
    CHECK(mode(run) == (0777 & ~umask_bits));  // a new run: as mkdir makes a directory
    REQUIRE(::chmod(run.c_str(), 0750) == 0);
    {
        train::RunWriter writer(run);
        writer.write_file("model.txt", "2");
        CHECK(mode(staging()) == 0700);
        writer.commit(nlohmann::json::object());
    }
    CHECK(mode(run) == 0750);
    // A new run under other umasks (the staging directory is made 0700, so the bits a new
    // directory takes come from the umask itself).
    for (const mode_t mask : {mode_t{077}, mode_t{002}, mode_t{027}}) {
        CAPTURE(mask);
        const fs::path fresh = root.path() / fmt::format("fresh{:o}", mask);
        const mode_t before = ::umask(mask);
        {
            train::RunWriter writer(fresh);
            writer.write_file("model.txt", "1");
            writer.commit(nlohmann::json::object());
        }
        ::umask(before);
        CHECK(mode(fresh) == (0777 & ~mask));
    }
}

TEST_CASE("an atomic write's temporary file is private while written, then takes the file's bits") {
    TempDir root;
    const auto temporary = [&] {
        for (const auto& entry : fs::directory_iterator(root.path()))
            if (entry.path().filename().string().find(".tmp.") != std::string::npos) return entry.path();
        return fs::path();
    };
    const fs::path file = root.path() / "notes.txt";
    for (const mode_t mask : {mode_t{022}, mode_t{002}}) {
        CAPTURE(mask);
        fs::remove(file);
        const mode_t before = ::umask(mask);
        {
            AtomicFile atomic(file, "notes.txt");
            atomic.write("secret", 6);
            REQUIRE_FALSE(temporary().empty());
            CHECK(mode(temporary()) == 0600);
            atomic.commit();
        }
        ::umask(before);
        CHECK(mode(file) == (0666 & ~mask));  // a new file: as open makes one under the umask
    }
    REQUIRE(::chmod(file.c_str(), 0640) == 0);
    {
        AtomicFile atomic(file, "notes.txt");
        atomic.write("again", 5);
        CHECK(mode(temporary()) == 0600);
        atomic.commit();
    }
    CHECK(mode(file) == 0640);  // a replaced file keeps its bits
}

TEST_CASE("a save whose parent directory was moved and replaced by a link writes nothing through it") {
    TempDir root;
    const fs::path sub = root.path() / "sub", aside = root.path() / "sub.aside",
                   victim = root.path() / "victim";
    fs::create_directory(victim);
    std::optional<train::RunLock> lock(std::in_place, sub / "run");
    std::optional<train::RunWriter> writer(std::in_place, sub / "run");
    writer->write_file("model.txt", "1");
    fs::rename(sub, aside);
    fs::create_directory_symlink(victim, sub);
    CHECK_THROWS_WITH_AS(writer->commit(nlohmann::json::object()),
                         doctest::Contains("the directory it is in, was moved or replaced"), IoError);
    CHECK_THROWS_WITH_AS(lock->check_held(),
                         doctest::Contains("was moved or replaced since training started"), IoError);
    writer.reset();
    lock.reset();
    // Its staging directory and lock file are removed where they are, and the link's target is untouched.
    CHECK(fs::is_empty(aside));
    CHECK(fs::is_empty(victim));
    CHECK(fs::is_symlink(sub));
}

TEST_CASE("refuse_run_file knows the lock file and staging names however --to spells them") {
    TempDir root;
    fs::create_directory(root.path() / "run");
    const fs::path saved = fs::current_path();
    fs::current_path(root.path());
    const auto refused = [](const fs::path& run, const fs::path& to) {
        CHECK_THROWS_WITH_AS(train::refuse_run_file(run, to, "eval"),
                             doctest::Contains("is the lock file or a staging directory"), IoError);
    };
    refused("run", ".run.lock");
    refused("./run", ".run.lock");
    refused(root.path() / "run", ".run.lock");
    refused("run", ".run.staging-999999-0");
    refused("run", ".run.staging-999999-0/x.svg");
    fs::create_symlink(".run.lock", "dangling");  // a link to where the lock file would be made
    refused("run", "dangling");
    fs::create_symlink(root.path() / ".run.lock", "absolute");
    refused("run", "absolute");
    // Through a folder that does not exist yet: the kernel goes there once it is made.
    refused("run", "missing/../dangling");
    refused("run", "missing/../absolute");
    fs::create_symlink("run/model.safetensors", "model");
    fs::create_directory_symlink(root.path(), "via");
    for (const char* inside :
         {"model", "missing/../model", "missing/../via/run/x.txt", "via/missing/../run/x.txt"})
        CHECK_THROWS_WITH_AS(train::refuse_run_file("run", inside, "eval"),
                             doctest::Contains("is in the run directory"), IoError);
    CHECK_NOTHROW(train::refuse_run_file("run", "run.lock", "eval"));
    CHECK_NOTHROW(train::refuse_run_file("run", "missing/../via/other.txt", "eval"));
    CHECK_FALSE(fs::exists("missing"));
    // A run directory inside another run's writer entries would be removed or block that run.
    for (const char* nested : {".run.staging-9-9/mine", ".run.lock/mine", "via/.run.staging-9-9/a/b"})
        CHECK_THROWS_WITH_AS(train::run_directory_path(nested), doctest::Contains("is inside"), IoError);
    fs::create_directory(".notes.lock");  // such an entry that exists, though no run is beside it
    CHECK_THROWS_WITH_AS(train::run_directory_path(".notes.lock/mine"), doctest::Contains("is inside"),
                         IoError);
    CHECK_NOTHROW(train::run_directory_path("runs.lock/mine"));
    // A run a train is writing before its first save (only its lock file exists), and another
    // saved run: neither its place nor its own files take a --to, nor does a run go inside them.
    write_file_atomic(".fresh.lock", "12345\n");
    {
        train::RunWriter other("other");
        other.write_file("model.txt", "1");
        other.commit(nlohmann::json::object());
    }
    for (const char* taken : {"fresh", "fresh/x.json", "fresh/notes/x.json"})
        CHECK_THROWS_WITH_AS(train::refuse_run_file("run", taken, "eval"),
                             doctest::Contains("which a train is writing"), IoError);
    CHECK_THROWS_WITH_AS(train::refuse_run_file("run", ".fresh.staging-7-0", "eval"),
                         doctest::Contains("is the lock file or a staging directory"), IoError);
    for (const char* listed : {"other/model.txt", "other/config.json", "other/notes.txt"})
        CHECK_THROWS_WITH_AS(train::refuse_run_file("run", listed, "eval"),
                             doctest::Contains("is in the run directory"), IoError);
    CHECK_NOTHROW(train::refuse_run_file("run", "other/notes/x.txt", "eval"));
    for (const char* nested : {"fresh/mine", "other/mine", "other/deeper/mine"})
        CHECK_THROWS_WITH_AS(train::run_directory_path(nested), doctest::Contains("a run directory"),
                             IoError);
    CHECK_FALSE(fs::exists("fresh"));
    fs::current_path(saved);
}

TEST_CASE("followed_path is where the kernel goes: links in any component, missing folders, ..") {
    TempDir root;
    const fs::path base = fs::canonical(root.path());
    fs::create_directories(base / "a" / "b");
    fs::create_directory_symlink(base / "a" / "b", base / "to_b");
    fs::create_symlink("to_b/file", base / "to_file");  // dangling: where the file would be made
    CHECK(followed_path(base / "to_b", "t") == base / "a" / "b");
    CHECK(followed_path(base / "to_b" / ".." / "x", "t") == base / "a" / "x");
    CHECK(followed_path(base / "new" / ".." / "to_b", "t") == base / "a" / "b");
    CHECK(followed_path(base / "new" / ".." / "to_file", "t") == base / "a" / "b" / "file");
    CHECK(followed_path(base / "a" / "." / "b" / "", "t") == base / "a" / "b");
    CHECK_FALSE(fs::exists(base / "new"));
    fs::create_symlink("loop", base / "loop");
    CHECK_THROWS_WITH_AS(followed_path(base / "loop", "t"), doctest::Contains("too many levels"), IoError);
}

TEST_CASE("a directory put in the run's place while a save is written is not swapped out and merged") {
    TempDir root;
    const fs::path run = root.path() / "run", aside = root.path() / "aside";
    const auto save = [&](const std::string& text) {
        train::RunWriter writer(run);
        writer.write_file("model.txt", text);
        writer.commit(nlohmann::json::object());
    };
    {
        train::RunWriter writer(run);  // a first save: DIR appears meanwhile
        writer.write_file("model.txt", "1");
        fs::create_directory(run);
        write_file_atomic(run / "theirs.txt", "theirs");
        CHECK_THROWS_WITH_AS(writer.commit(nlohmann::json::object()),
                             doctest::Contains("a directory appeared in its place"), IoError);
    }
    CHECK(fs::exists(run / "theirs.txt"));
    CHECK_FALSE(fs::exists(run / "model.txt"));
    fs::remove_all(run);
    save("1");
    {
        train::RunWriter writer(run);
        writer.write_file("model.txt", "2");
        fs::rename(run, aside);
        fs::create_directory(run);
        write_file_atomic(run / "theirs.txt", "theirs");
        CHECK_THROWS_WITH_AS(writer.commit(nlohmann::json::object()),
                             doctest::Contains("the directory was moved or replaced"), IoError);
    }
    CHECK(fs::exists(run / "theirs.txt"));
    CHECK_FALSE(fs::exists(run / "model.txt"));
    CHECK(fs::exists(aside / "model.txt"));
    // Nothing of the failed saves is left beside the run.
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(root.path()))
        names.insert(entry.path().filename().string());
    CHECK(names == std::set<std::string>{"aside", "run"});
}

TEST_CASE("RunWriter::identity names the directory it swapped in, not what is at DIR later") {
    TempDir root;
    const fs::path run = root.path() / "run";
    const auto identity = [](const fs::path& p) {
        struct stat st {};
        REQUIRE(::stat(p.c_str(), &st) == 0);
        return std::pair<std::uint64_t, std::uint64_t>{st.st_dev, st.st_ino};
    };
    train::RunWriter first(run);
    CHECK(first.identity() == std::pair<std::uint64_t, std::uint64_t>{0, 0});
    first.write_file("model.txt", "1");
    first.commit(nlohmann::json::object());
    CHECK(first.identity() == identity(run));
    write_file_atomic(run / "notes.txt", "mine");
    train::RunWriter second(run);
    second.write_file("model.txt", "2");
    second.commit(nlohmann::json::object());
    CHECK(second.identity() == identity(run));
    CHECK(second.identity() != first.identity());
    CHECK(fs::exists(run / "notes.txt"));  // the user's entry moved into the new generation
    fs::rename(run, root.path() / "aside");
    fs::create_directory(run);
    CHECK(second.identity() != identity(run));
}

TEST_CASE("make_directories_protected never makes a directory through a link planted meanwhile") {
    // Another user creates and removes a link in the place of the missing folder while it is
    // made, many times: the folder is made here, or the link is refused, never followed.
    TempDir tmp;
    const fs::path shared = make_shared(tmp), victim = tmp.path() / "victim";
    fs::create_directory(victim);
    std::atomic<bool> stop{false};
    std::thread planter([&] {
        // Made another user's before it takes the name (as that user's own would be).
        const fs::path link = shared / "new", made = shared / "planted";
        while (!stop) {
            ::unlink(made.c_str());
            if (::symlink(victim.c_str(), made.c_str()) != 0 ||
                ::lchown(made.c_str(), other_uid, static_cast<gid_t>(-1)) != 0)
                continue;
            if (::rename(made.c_str(), link.c_str()) == 0) ::unlink(link.c_str());
        }
    });
    int made = 0, refused = 0;
    for (int i = 0; i < 300; ++i) {
        const fs::path dir = shared / "new" / fmt::format("d{}", i);
        try {
            const auto created = make_directories_protected(dir, "dir");
            CHECK(fs::is_directory(dir));
            ++made;
        } catch (const IoError&) {  // the link refused, or seen changing while it was examined
            ++refused;
        }
        std::error_code ec;
        fs::remove_all(shared / "new", ec);  // our folder, when it was made
    }
    stop = true;
    planter.join();
    CHECK(made + refused == 300);
    CHECK(fs::is_empty(victim));  // nothing was made where the link pointed
    // Without a race: every missing folder, outermost first, as followed_path gives them.
    const auto created = make_directories_protected(tmp.path() / "a" / "b" / "c", "dir");
    REQUIRE(created.size() == 3);
    CHECK(created[0] == tmp.path() / "a");
    CHECK(created[2] == tmp.path() / "a" / "b" / "c");
    CHECK(make_directories_protected(tmp.path() / "a" / "b" / "c", "dir").empty());
    write_file_atomic(tmp.path() / "a" / "file", "x");
    CHECK_THROWS_WITH_AS(make_directories_protected(tmp.path() / "a" / "file" / "d", "dir"),
                         doctest::Contains("is not a directory"), IoError);
}

TEST_CASE("make_directories_protected refuses a path too long to use before it makes any folder") {
    TempDir tmp;
    fs::path deep = tmp.path();
    for (int i = 0; i < 25; ++i) deep /= std::string(200, 'd');  // 5000 bytes, past PATH_MAX
    CHECK_THROWS_WITH_AS(make_directories_protected(deep, "--to"), doctest::Contains("its path is 5"),
                         IoError);
    CHECK(fs::is_empty(tmp.path()));
    // Just short enough: made, every folder of it listed.
    fs::path fits = tmp.path();
    while (fits.native().size() + 201 < PATH_MAX) fits /= std::string(200, 'e');
    CHECK(make_directories_protected(fits, "--to").back() == fits);
}

TEST_CASE("a run directory whose path leaves no room for a save's names is refused before training") {
    TempDir tmp;
    fs::path dir = tmp.path();
    while (dir.native().size() + train::save_name_room + 201 < PATH_MAX) dir /= std::string(200, 'r');
    CHECK_NOTHROW(train::check_room_for_saves(dir / "run"));
    dir /= std::string(PATH_MAX - train::save_name_room - dir.native().size(),
                       'x');  // a save's names pass PATH_MAX
    CHECK_THROWS_WITH_AS(train::check_room_for_saves(dir), doctest::Contains("choose a shorter path"),
                         IoError);
}

TEST_CASE("a run name that leaves no room for its staging directory's name is refused before training") {
    TempDir tmp;
    CHECK_NOTHROW(train::check_room_for_saves(tmp.path() / std::string(217, 'n')));
    CHECK_THROWS_WITH_AS(train::check_room_for_saves(tmp.path() / std::string(218, 'n')),
                         doctest::Contains("choose a shorter name"), IoError);
}

TEST_CASE("the name and path checked for a save's room are those the run is saved under and opened by") {
    TempDir tmp;
    // A short link to a directory whose name leaves no room: the message names that name.
    fs::create_directory(tmp.path() / std::string(240, 's'));
    fs::create_directory_symlink(std::string(240, 's'), tmp.path() / "L1");
    CHECK_THROWS_WITH_AS(train::check_room_for_saves(tmp.path() / "L1"),
                         doctest::Contains("L1: the name it leads to ('sss"), IoError);
    // A path that resolves short but is too long as given, which is how its files are opened.
    std::string spelled = tmp.path().string() + "/";
    while (spelled.size() < PATH_MAX) spelled += "./";
    CHECK_THROWS_WITH_AS(train::check_room_for_saves(spelled + "run"), doctest::Contains("bytes as given"),
                         IoError);
}

TEST_CASE("a run whose name is too long for its lock file's name is refused naming the most it may be") {
    TempDir tmp;
    const fs::path run = tmp.path() / std::string(NAME_MAX - 3, 'z');
    fs::create_directory(run);
    CHECK_THROWS_WITH_AS(train::RunLock{run}, doctest::Contains("rename the run to at most 249 bytes"),
                         IoError);
    CHECK_NOTHROW(train::RunLock{tmp.path() / std::string(NAME_MAX - 6, 'z')});
}

TEST_CASE("a run whose own path passes PATH_MAX is refused by its lock with that path's length") {
    TempDir tmp;
    // A folder that fits, and a run name in it that does not.
    fs::path folder = tmp.path();
    while (folder.native().size() + 201 < PATH_MAX - 100) folder /= std::string(200, 'd');
    make_directories_protected(folder, "test");
    const fs::path run = folder / std::string(PATH_MAX - folder.native().size() + 10, 'r');
    const std::string message = fmt::format("its path is {} bytes", run.native().size());
    CHECK_THROWS_WITH_AS(train::RunLock{run}, doctest::Contains(message.c_str()), IoError);
}
