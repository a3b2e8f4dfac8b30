// Reading untrusted files: regular files only (never blocking on a FIFO), bounded JSON nesting,
// bounded excerpts of bad values for error messages, and a checksum of a file's bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

namespace attograd {

/// A regular file opened for reading. The path is checked with stat() before opening and the
/// opened file again with fstat(), and it is opened O_NONBLOCK, so a FIFO, socket, device or
/// directory in its place is refused at once instead of hanging; a link another user planted on
/// the way is not followed (check_protected_path). Throws IoError starting with
/// `where` and naming the kind of file found ("is a FIFO, not a regular file"), or the errno
/// text when it cannot be opened.
class InputFile {
public:
    /// Opens `path` for reading (see the class for what it refuses).
    InputFile(const std::filesystem::path& path, std::string where);
    ~InputFile();
    InputFile(const InputFile&) = delete;
    InputFile& operator=(const InputFile&) = delete;

    /// The file's size in bytes when it was opened.
    std::uint64_t size() const { return size_; }
    /// Reads exactly `bytes` bytes at `offset`; false when the file ends first. Throws IoError
    /// when a read fails.
    bool read_at(void* data, std::size_t bytes, std::uint64_t offset) const;
    /// Calls `take` with each piece of the file in order (at most `piece_bytes` each) up to its
    /// end, which may be past size() if it grew. Throws IoError when a read fails.
    void read_pieces(const std::function<void(std::string_view)>& take,
                     std::size_t piece_bytes = std::size_t{1} << 20) const;
    /// The whole file. Throws IoError when it holds more than `max_bytes` bytes or cannot be read.
    std::string read_all(std::size_t max_bytes = static_cast<std::size_t>(-1)) const;

private:
    std::string where_;
    int fd_ = -1;
    std::uint64_t size_ = 0;
};

/// Throws IoError "`where`: JSON nested deeper than `max_depth` levels" when arrays and objects
/// in `text` nest deeper than `max_depth` (strings are skipped). Run before parsing untrusted
/// JSON: copying, printing or destroying a parsed value recurses once per level, so a header of
/// `[[[[...` a million deep would overflow the stack.
void check_json_depth(std::string_view text, std::size_t max_depth, std::string_view where);

/// At most `max_chars` bytes of `text` (cut at a UTF-8 boundary, with "..." and the full length
/// appended when cut): how error messages quote values from untrusted files.
std::string excerpt(std::string_view text, std::size_t max_chars = 64);

/// FNV-1a 64-bit hash of `bytes` (Fowler, Noll, Vo; offset basis 0xcbf29ce484222325, prime
/// 0x100000001b3). Any change of a single byte changes it (each step is a bijection of the
/// state); it guards against corruption, not against deliberate forgery.
std::uint64_t fnv1a64(std::string_view bytes);
/// fnv1a64 continued over `bytes` from the state `hash` (the hash of the bytes before them), so
/// that a long stream is hashed in pieces: fnv1a64(a + b) == fnv1a64(b, fnv1a64(a)).
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash);

/// fnv1a64 of the file at `path` as 16 lowercase hex digits, read in pieces (a file of any size
/// takes no more memory). Throws IoError as InputFile does, and when a read fails.
std::string file_checksum(const std::filesystem::path& path);

/// True when `text` is a checksum as file_checksum writes it: exactly 16 lowercase hex digits.
bool is_checksum_text(std::string_view text);

}  // namespace attograd
