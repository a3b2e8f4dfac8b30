// LIBXSMM's singleton file (core/detail/libxsmm_singleton.hpp): made our own when missing, used
// only when it is our own regular file, never followed when it is a link. On paths in a fresh
// temporary directory only: the real /tmp/.libxsmm.<uid> is left alone.
#include "core/detail/libxsmm_singleton.hpp"
#include "core/detail/process_umask.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using attograd::detail::singleton_file_is_safe;
namespace fs = std::filesystem;
using testing::TempDir;

namespace {

constexpr uid_t other_uid = 54321;  // an owner that is not the test's user

struct stat lstat_of(const fs::path& path) {
    struct stat st {};
    REQUIRE(::lstat(path.c_str(), &st) == 0);
    return st;
}

std::string contents(const fs::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("the singleton file is LIBXSMM's name for the real uid, in /tmp") {
    CHECK(attograd::detail::libxsmm_singleton_path() ==
          fs::path("/tmp/.libxsmm." + std::to_string(::getuid())));
}

TEST_CASE("a missing singleton file is created as our own regular file, mode 0600") {
    const TempDir dir;
    const fs::path file = dir.path() / ".libxsmm.test";
    CHECK(singleton_file_is_safe(file));
    const struct stat st = lstat_of(file);
    CHECK(S_ISREG(st.st_mode));
    CHECK(st.st_uid == ::geteuid());
    CHECK((st.st_mode & 07777) == (0600 & ~attograd::detail::process_umask()));
    CHECK(st.st_size == 0);
}

TEST_CASE("an existing singleton file of our own is safe and left as it was") {
    const TempDir dir;
    const fs::path file = dir.path() / ".libxsmm.test";
    std::ofstream(file) << "held";
    CHECK(singleton_file_is_safe(file));
    CHECK(contents(file) == "held");
    CHECK(singleton_file_is_safe(file));  // a second process of ours finds it too
}

TEST_CASE("a symbolic link as the singleton file is refused and not followed") {
    const TempDir dir;
    const fs::path link = dir.path() / ".libxsmm.test";
    SUBCASE("dangling: its target is not created") {
        const fs::path target = dir.path() / "victim";
        fs::create_symlink(target, link);
        CHECK_FALSE(singleton_file_is_safe(link));
        CHECK_FALSE(fs::exists(fs::symlink_status(target)));
    }
    SUBCASE("to a file: the file is unchanged") {
        const fs::path target = dir.path() / "victim";
        std::ofstream(target) << "theirs";
        ::chmod(target.c_str(), 0644);
        fs::create_symlink(target, link);
        CHECK_FALSE(singleton_file_is_safe(link));
        CHECK(contents(target) == "theirs");
        CHECK((lstat_of(target).st_mode & 07777) == 0644);
    }
    CHECK(fs::is_symlink(fs::symlink_status(link)));  // left in place
}

TEST_CASE("a singleton file owned by another user is refused") {
    if (::geteuid() != 0) {
        MESSAGE("skipped: giving a file to another owner (chown) needs root");
        return;
    }
    const TempDir dir;
    const fs::path file = dir.path() / ".libxsmm.test";
    std::ofstream(file) << "theirs";
    REQUIRE(::chown(file.c_str(), other_uid, static_cast<gid_t>(-1)) == 0);
    CHECK_FALSE(singleton_file_is_safe(file));
    CHECK(contents(file) == "theirs");
}

TEST_CASE("a directory as the singleton file is refused") {
    const TempDir dir;
    const fs::path sub = dir.path() / ".libxsmm.test";
    fs::create_directory(sub);
    CHECK_FALSE(singleton_file_is_safe(sub));
    CHECK(fs::is_empty(sub));
}

TEST_CASE("where nothing can be created, LIBXSMM's own open fails too: safe") {
    const TempDir dir;
    CHECK(singleton_file_is_safe(dir.path() / "missing" / ".libxsmm.test"));
    CHECK_FALSE(fs::exists(dir.path() / "missing"));
}
