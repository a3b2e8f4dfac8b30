// Reading GNU gettext's compiled message catalogs (.mo files) directly from their bytes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attograd::data {

/// One message of a catalog: an original string and its translation(s).
struct CatalogMessage {
    std::string context;        ///< msgctxt: the text before the "\x04" of the original, "" when none
    std::string source;         ///< msgid: the original (singular) text
    std::string source_plural;  ///< msgid_plural: the text after the original's NUL, "" when none
    /// msgstr, or msgstr[0], msgstr[1], ... of a plural message (the translation's NUL-separated
    /// parts, in order); never empty (an empty translation is one empty string).
    std::vector<std::string> translations;
};

/// A parsed .mo file: the header and every other message, in the file's order (sorted by
/// original, as msgfmt writes it).
struct GettextCatalog {
    /// The translation of the empty msgid: the catalog's metadata ("Content-Type: ...",
    /// "Plural-Forms: ..."); "" when the file has none.
    std::string header;
    std::vector<CatalogMessage> messages;  ///< every entry but the header
};

/// Parses the bytes of a .mo file (GNU gettext manual, "The Format of GNU MO Files"):
///   offset 0  magic 0x950412de, read in either byte order; the order it reads in is the order
///             of every other number in the file
///   offset 4  file format revision: major revision (the high 16 bits) 0 or 1 is read; revision 1
///             adds system-dependent strings (such as <PRIu64>), which are not read
///   offset 8  N, the number of strings
///   offset 12 O, the offset of the table of originals: N (length, offset) pairs of 32-bit numbers
///   offset 16 T, the offset of the table of translations, laid out as O's
/// (the hash table at offsets 20 and 24 is not used). A string is `length` bytes at `offset`;
/// an original is [msgctxt "\x04"] msgid [NUL msgid_plural], a translation its forms separated
/// by NUL. Kept: the header, and for every other message its context, original, plural
/// original and every translation form. Strings are bytes as the file holds them (the header's
/// charset is not applied; catalogs on Debian are UTF-8).
///
/// Throws IoError starting with `name` (usually the path) when the bytes are not such a file:
/// shorter than the 28-byte header, a bad magic number (given in hex), an unsupported revision,
/// a table that does not fit in the file (giving N, its offset and the file size), or a string
/// whose offset and length pass the end of the file (giving the entry). Every read is bounds
/// checked, so no input reads outside `bytes`.
GettextCatalog parse_gettext_catalog(std::string_view bytes, const std::string& name);

/// Reads and parses the .mo file at `path` (see parse_gettext_catalog). Throws IoError naming the
/// path when it cannot be read, is not a regular file (a FIFO, directory or device) or holds more
/// than 64 MiB, and as parse_gettext_catalog.
GettextCatalog read_gettext_catalog(const std::filesystem::path& path);

}  // namespace attograd::data
