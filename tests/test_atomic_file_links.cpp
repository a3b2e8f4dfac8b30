// AtomicFile and symbolic links the kernel's protected_symlinks rule would not follow: a link
// planted by another user in a sticky world-writable directory (/tmp) is refused; savers that
// take Symlinks::refuse pass it on.
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/serialization.hpp"
#include "core/tensor.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

using namespace attograd;
namespace fs = std::filesystem;
using testing::TempDir;

namespace {

constexpr uid_t other_uid = 54321;  // an owner that is not the test's user

std::string read_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A directory `name` in `parent` with mode `mode` (applied past the umask) owned by `owner`.
fs::path make_dir(const TempDir& parent, const std::string& name, mode_t mode, uid_t owner) {
    const fs::path dir = parent / name;
    fs::create_directory(dir);
    REQUIRE(::chmod(dir.c_str(), mode) == 0);
    REQUIRE(::chown(dir.c_str(), owner, static_cast<gid_t>(-1)) == 0);
    return dir;
}

/// A symbolic link `link` to `to`, owned by `owner` (lchown: the link itself).
void make_link(const fs::path& to, const fs::path& link, uid_t owner) {
    fs::create_symlink(to, link);
    REQUIRE(::lchown(link.c_str(), owner, static_cast<gid_t>(-1)) == 0);
}

}  // namespace

TEST_CASE("AtomicFile does not follow another user's link in a sticky world-writable directory") {
    if (::geteuid() != 0) {
        MESSAGE("skipped: giving a link to another owner (lchown) needs root");
        return;
    }
    TempDir root;
    const fs::path victim = root / "victim.txt";
    write_file_atomic(victim, "old");
    const fs::path shared = make_dir(root, "shared", 01777, 0);  // like /tmp, owned by root

    SUBCASE("a link owned by another user is refused; the link and the file it names stay") {
        make_link(victim, shared / "out.txt", other_uid);
        CHECK_THROWS_WITH_AS(write_file_atomic(shared / "out.txt", "new"),
                             doctest::Contains("out.txt' is owned by uid 54321 in a sticky world-writable "
                                               "directory owned by uid 0; not following it"),
                             IoError);
        CHECK(fs::is_symlink(shared / "out.txt"));
        CHECK(read_bytes(victim) == "old");
    }
    SUBCASE("so is such a link further down a chain") {
        make_link(victim, shared / "planted.txt", other_uid);
        make_link(shared / "planted.txt", root / "mine.txt", 0);  // the caller's, outside
        CHECK_THROWS_WITH_AS(write_file_atomic(root / "mine.txt", "new"),
                             doctest::Contains("planted.txt' is owned by uid 54321"), IoError);
        CHECK(read_bytes(victim) == "old");
    }
    SUBCASE("the caller's own link is followed, in a directory another user owns") {
        const fs::path theirs = make_dir(root, "theirs", 01777, other_uid + 1);
        make_link(victim, theirs / "out.txt", ::geteuid());
        write_file_atomic(theirs / "out.txt", "new");
        CHECK(fs::is_symlink(theirs / "out.txt"));
        CHECK(read_bytes(victim) == "new");
    }
    SUBCASE("so is a link owned by the directory's owner") {
        const fs::path owned = make_dir(root, "owned", 01777, other_uid);
        make_link(victim, owned / "out.txt", other_uid);
        write_file_atomic(owned / "out.txt", "new");
        CHECK(read_bytes(victim) == "new");
    }
    SUBCASE("and another user's link in a directory that is not sticky, or not world-writable") {
        for (const mode_t mode : {mode_t{0777}, mode_t{01755}}) {
            const fs::path dir = make_dir(root, "dir" + std::to_string(mode), mode, 0);
            make_link(victim, dir / "out.txt", other_uid);
            write_file_atomic(dir / "out.txt", std::to_string(mode));
            CHECK(read_bytes(victim) == std::to_string(mode));
        }
    }
}

TEST_CASE("save_safetensors with Symlinks::refuse does not write through a link") {
    TempDir dir;
    write_file_atomic(dir / "victim", "old");
    fs::create_symlink(dir / "victim", dir / "model.safetensors");
    CHECK_THROWS_WITH_AS(
        save_safetensors(dir / "model.safetensors", {{"w", zeros({2})}}, {}, AtomicFile::Symlinks::refuse),
        doctest::Contains("model.safetensors': is a symbolic link; not writing through it"), IoError);
    CHECK(read_bytes(dir / "victim") == "old");
    save_safetensors(dir / "model.safetensors", {{"w", zeros({2})}});  // the default follows it
    CHECK(load_safetensors(dir / "victim").at("w").numel() == 2);
}

TEST_CASE("a temporary a killed writer left is removed by the next write of that file, a live one's kept") {
    TempDir tmp;
    const fs::path dir = tmp.path();
    const pid_t dead = ::fork();  // a PID that no longer runs: a child that exited and was reaped
    if (dead == 0) ::_exit(0);
    REQUIRE(dead > 0);
    int status = 0;
    REQUIRE(::waitpid(dead, &status, 0) == dead);
    const fs::path stale = dir / (".out.json.tmp." + std::to_string(dead) + ".0");
    const fs::path live = dir / (".out.json.tmp." + std::to_string(::getppid()) + ".0");
    const fs::path other = dir / (".notes.txt.tmp." + std::to_string(dead) + ".0");  // another file's
    for (const auto& path : {stale, live, other}) std::ofstream(path) << "part";
    const fs::path linked = dir / (".out.json.tmp." + std::to_string(dead) + ".1");
    fs::create_symlink(other, linked);  // a link of that name is not a temporary of ours
    // Another user's file of that name (in a shared directory) is theirs, whatever it is called.
    const fs::path theirs = dir / (".out.json.tmp." + std::to_string(dead) + ".2");
    std::ofstream(theirs) << "theirs";
    const bool root = ::geteuid() == 0;
    if (root) REQUIRE(::chown(theirs.c_str(), 54321, static_cast<gid_t>(-1)) == 0);
    attograd::write_file_atomic(dir / "out.json", "{}");
    CHECK(!fs::exists(stale));
    CHECK(fs::exists(theirs) == root);  // without root it was ours, and stale
    CHECK(fs::exists(live));
    CHECK(fs::exists(other));
    CHECK(fs::is_symlink(linked));
    CHECK(fs::file_size(dir / "out.json") == 2);
}

TEST_CASE("temporary names planted ahead, by counter and PID, do not stop a write") {
    // In a shared directory anyone can create `.NAME.tmp.PID.N` for the writer's PID and the next
    // counters; the writer passes over them to a name no one can predict.
    TempDir tmp;
    const fs::path shared = make_dir(tmp, "shared", 01777, ::geteuid());
    for (int n = 0; n < 2000; ++n) {
        const fs::path planted = shared / fmt::format(".out.txt.tmp.{}.{}", ::getpid(), n);
        std::ofstream(planted) << "planted";
        REQUIRE(::chown(planted.c_str(), other_uid, static_cast<gid_t>(-1)) == 0);
    }
    write_file_atomic(shared / "out.txt", "mine");
    CHECK(read_bytes(shared / "out.txt") == "mine");
    CHECK(read_bytes(shared / fmt::format(".out.txt.tmp.{}.0", ::getpid())) == "planted");  // left as it was
}
