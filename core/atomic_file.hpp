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
/// file and leaves `target` as it was. Refuses a `target` that exists and is not a regular file:
/// renaming over a device or FIFO (as root: /dev/null) would replace it. A replaced file keeps
/// its permission bits; a symbolic link at `target` is replaced by the new file (the file it
/// pointed to is left as it was), as with any write-then-rename.
/// Every failure throws IoError whose message starts with `where` (e.g. "save_safetensors:
/// 'model.safetensors'").
class AtomicFile {
public:
    AtomicFile(const std::filesystem::path& target, std::string where);
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

/// Writes `contents` to `path` through an AtomicFile; `where` defaults to the path. Throws
/// IoError naming the path when any step fails (the previous file, if any, is untouched).
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);

}  // namespace attograd
