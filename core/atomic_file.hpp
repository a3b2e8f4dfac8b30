// Files written whole or not at all: a temporary file in the same directory, then rename.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace attograd {

/// A file that replaces `target` only when complete. The bytes go to a new temporary file next
/// to `target` (`.NAME.tmp.PID.N`, created exclusively); commit() fsyncs it, renames it over
/// `target` and fsyncs the directory, so readers see the old file or the whole new one, never a
/// part. Destroyed without commit() (an exception, a failed write), it removes the temporary
/// file and leaves `target` as it was; the temporaries of `target` that a process no longer
/// running left (killed before its rename) are removed when the next one is made. Refuses a `target` that
/// exists and is not a regular file: renaming over a device or FIFO (as root: /dev/null) would replace it. A
/// replaced file keeps its permission bits. A symbolic link at `target` is written through: the file it
/// points to (after every link in the chain) is replaced and the link stays; a link to what is not a regular
/// file (/dev/stdout on a terminal or pipe) is refused like the file itself. A link is followed only where
/// the kernel's protected_symlinks rule (Documentation/admin-guide/sysctl/ fs.rst) would follow it, whatever
/// that setting: a link in a sticky world-writable directory
/// (/tmp) whose owner is neither the caller's effective uid nor the directory's owner is
/// refused, since renaming over the file it names would bypass that rule. With
/// Symlinks::refuse a link at `target` is refused instead (and one made there meanwhile is
/// replaced by the rename, never written through). Every failure throws IoError whose message
/// starts with `where` (e.g. "save_safetensors: 'model.safetensors'"); a write beyond the
/// file-size limit (EFBIG, with SIGXFSZ ignored) says so.
class AtomicFile {
public:
    /// What AtomicFile does with a symbolic link at its target.
    enum class Symlinks { follow, refuse };

    /// Opens a temporary file beside `target` for writing, private (0600) until commit() gives it
    /// the permission bits of the file it replaces, or 0666 less the umask for a new one; the
    /// error messages start with `where`. Throws IoError when it cannot be created.
    AtomicFile(const std::filesystem::path& target, std::string where, Symlinks symlinks = Symlinks::follow);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    /// Appends `bytes` bytes. Throws IoError (disk full, I/O error, called after commit()).
    void write(const void* data, std::size_t bytes);
    /// Makes the file `target`. Throws IoError when fsync, close or rename fail, or when called
    /// twice.
    void commit();

private:
    std::filesystem::path target_, temp_;
    std::string where_;
    int fd_ = -1;
    bool committed_ = false;
};

/// Puts the complete directory `staging` in place of `target` in one step: a reader of
/// `target` sees the old directory or the new one whole, never a mixture or nothing. A missing
/// `target` is a plain rename; an existing one is swapped with renameat2(RENAME_EXCHANGE). On a
/// file system without RENAME_EXCHANGE it falls back to two renames, with a moment in which
/// `target` is missing. Both must be on the same file system. The parent directory is fsynced.
/// Returns where the old contents now are (`staging` after a swap; empty when `target` did not
/// exist): the caller removes them. Throws IoError starting with `where`.
std::filesystem::path replace_directory(const std::filesystem::path& staging,
                                        const std::filesystem::path& target, std::string_view where);

/// fsyncs the directory `dir` (best effort: makes renames and new entries in it durable).
void sync_directory(const std::filesystem::path& dir);

/// Writes `contents` to `path` through an AtomicFile; `where` defaults to the path. Throws
/// IoError naming the path when any step fails (the previous file, if any, is untouched), or,
/// with Symlinks::refuse, when `path` is a symbolic link.
void write_file_atomic(const std::filesystem::path& path, std::string_view contents,
                       AtomicFile::Symlinks symlinks = AtomicFile::Symlinks::follow);

}  // namespace attograd
