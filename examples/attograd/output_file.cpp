// Where the program writes a file: a --to path the user names, or a file it names itself.
#include "output_file.hpp"

#include "commands.hpp"
#include "quoting.hpp"

#include "core/error.hpp"
#include "core/input_file.hpp"
#include "core/protected_path.hpp"
#include "data/text.hpp"

#include <fmt/format.h>

#include <climits>
#include <csignal>
#include <iterator>

namespace attograd::cli {

namespace fs = std::filesystem;

namespace {

/// Whether `path` reaches a file through a descriptor link of /proc (/dev/stdout is
/// /proc/self/fd/1, /dev/fd is /proc/self/fd), checked link by link.
bool names_descriptor(fs::path path) {
    std::error_code ec;
    for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(path, ec)); ++hops) {
        const fs::path dir = fs::weakly_canonical(path.parent_path().empty() ? "." : path.parent_path(), ec);
        if (!ec && dir.filename() == "fd" && *std::next(dir.begin()) == "proc") return true;
        const fs::path points_to = fs::read_symlink(path, ec);
        if (ec) return false;
        path = points_to.is_absolute() ? points_to : path.parent_path() / points_to;
    }
    return false;
}

}  // namespace

void check_name_lengths(const std::string& to) {
    for (const fs::path& part : fs::path(to)) {
        if (part.native().size() > NAME_MAX)
            throw UsageError(fmt::format(
                "--to {}: '{}' is {} bytes, past the {} a file or folder name may have", shown_path(to),
                data::escape_control(excerpt(part.string(), 40)), part.native().size(), NAME_MAX));
    }
}

void check_to_file(const std::string& to) {
    check_name_lengths(to);
    std::error_code ec;
    const fs::file_status status = fs::status(to, ec);  // through links, as the write goes
    if (fs::path(to).filename().empty() || fs::is_directory(status))
        throw UsageError(fmt::format("--to {}: give a file name, not a directory", shown_path(to)));
    if (fs::exists(status) && !fs::is_regular_file(status))
        throw UsageError(
            fmt::format("--to {}: not a regular file (a pipe, device or socket); `--to -` writes "
                        "to standard output",
                        shown_path(to)));
    // A link to nothing: the file is made where it points, in a folder that must exist (folders
    // are made for the path given, not for a link's target).
    if (fs::is_symlink(fs::symlink_status(to, ec)) && !fs::exists(status)) {
        const fs::path target = fs::read_symlink(to, ec);
        const fs::path folder =
            (target.is_absolute() ? target : fs::path(to).parent_path() / target).parent_path();
        if (!ec && !folder.empty() && !fs::is_directory(fs::status(folder, ec)))
            throw UsageError(
                fmt::format("--to {}: is a link to {}, whose folder {} does not exist (folders are "
                            "made for the --to path, not for where a link points)",
                            shown_path(to), shown_path(target), shown_path(folder)));
    }
    // /dev/stdout on a file: the rename would replace that file while the shell's descriptor
    // keeps the old one, so what it writes next goes nowhere.
    if (names_descriptor(to))
        throw UsageError(fmt::format(
            "--to {}: names an open descriptor (/dev/stdout, /dev/fd/N); `--to -` writes to standard output",
            shown_path(to)));
}

void refuse_link(const fs::path& path) {
    std::error_code ec;
    AG_CHECK(!fs::is_symlink(fs::symlink_status(path, ec)), IoError,
             "{}: is a symbolic link; the program writes no file it names itself through a link: remove it, "
             "or pass --to another path",
             shown_path(path));
}

MadeDirectories::~MadeDirectories() { remove(); }

void MadeDirectories::remove() {
    std::error_code ec;
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) fs::remove(*it, ec);  // only an empty one
    made_.clear();
}

MadeDirectories make_output_directory(const fs::path& dir) {
    if (dir.empty()) return {};
    check_protected_path(dir, shown_path(dir));
    std::error_code ec;
    if (fs::is_directory(fs::status(dir, ec))) return {};
    // The component in the way, for the message: the first that exists and is no directory.
    fs::path prefix;
    for (const auto& part : dir) {
        prefix /= part;
        const fs::file_status named = fs::symlink_status(prefix, ec);
        if (!fs::exists(named)) continue;
        if (fs::is_directory(fs::status(prefix, ec))) continue;
        throw IoError(fmt::format(
            "{}: cannot create the directory: {} is {}", shown_path(dir), shown_path(prefix),
            fs::is_symlink(named) ? "a symbolic link to nothing or to a file" : "not a directory"));
    }
    // Made race-free: a link planted in a missing folder's place meanwhile is never followed.
    return MadeDirectories(make_directories_protected(dir, shown_path(dir)));
}

int write_unless_interrupted(const fs::path& path, std::string_view contents,
                             const train::InterruptGuard& guard, AtomicFile::Symlinks symlinks) {
    if (guard.signal() != 0) return guard.signal();
    AtomicFile file(path, shown_path(path), symlinks);
    file.write(contents.data(), contents.size());
    if (guard.signal() != 0) return guard.signal();  // the temporary goes with `file`
    file.commit();
    return 0;
}

int end_as_signal(int signal) {
    ::raise(signal);
    return 128 + signal;
}

}  // namespace attograd::cli
