// LIBXSMM's singleton file (core/detail/libxsmm_singleton.hpp). Compiled with or without
// LIBXSMM, so that its tests run in every build.
#include "core/detail/libxsmm_singleton.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace attograd::detail {

std::filesystem::path libxsmm_singleton_path() {
    // LIBXSMM names the file by the real uid (getuid), not the effective one.
    return "/tmp/.libxsmm." + std::to_string(::getuid());
}

namespace {

// An existing entry LIBXSMM may open: a regular file of ours. lstat, not stat: a link is
// refused whoever owns it and wherever it points, as a planted one would be.
bool existing_file_is_ours(const std::filesystem::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return false;
    return S_ISREG(st.st_mode) && (st.st_uid == ::geteuid() || st.st_uid == ::getuid());
}

}  // namespace

bool singleton_file_is_safe(const std::filesystem::path& path) {
    // O_EXCL fails on any existing entry, a link (even dangling) included, without following it.
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ::close(fd);  // LIBXSMM opens it again, locks it, and removes it at exit
        return true;
    }
    if (errno == EEXIST) return existing_file_is_ours(path);
    return true;  // nothing could be created there: neither can LIBXSMM's open
}

}  // namespace attograd::detail
