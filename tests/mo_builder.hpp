// Writing small gettext .mo files in tests, byte by byte, in either byte order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace testing {

/// The bytes of a .mo file (revision 0, no hash table) holding `entries` (original,
/// translation) in the order given: the 28-byte header (magic, revision 0, N, the offsets of
/// the two tables, no hash table), the table of originals at 28, the table of translations after it, then
/// each string followed by a NUL.
inline std::string make_mo(const std::vector<std::pair<std::string, std::string>>& entries,
                           bool big_endian = false) {
    const auto put = [big_endian](std::string& to, std::uint32_t value) {
        for (int k = 0; k < 4; ++k)
            to += static_cast<char>((value >> (big_endian ? 8 * (3 - k) : 8 * k)) & 0xff);
    };
    const auto n = static_cast<std::uint32_t>(entries.size());
    const std::uint32_t originals = 28, translations = 28 + 8 * n;
    std::string out;
    for (const std::uint32_t field : {0x950412deu, 0u, n, originals, translations, 0u, 0u}) put(out, field);
    std::uint32_t offset = translations + 8 * n;  // the strings follow both tables
    std::string tables, strings;
    for (const bool original : {true, false}) {
        for (const auto& [source, translation] : entries) {
            const std::string& text = original ? source : translation;
            put(tables, static_cast<std::uint32_t>(text.size()));
            put(tables, offset);
            strings += text;
            strings += '\0';
            offset += static_cast<std::uint32_t>(text.size() + 1);
        }
    }
    return out + tables + strings;
}

/// Writes `bytes` to `path`.
inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace testing
