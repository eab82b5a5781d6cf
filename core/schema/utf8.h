#ifndef TAILSWEEP_CORE_SCHEMA_UTF8_H_
#define TAILSWEEP_CORE_SCHEMA_UTF8_H_

// UTF-8 as the API's text fields need it: proto3 `string` fields must be
// valid UTF-8 (a message with other bytes does not parse, so a call
// carrying a child's raw stderr would be lost), and the CLI decodes what
// it prints. Torch-free.

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace tailsweep {

// The length (2-4) of the well-formed UTF-8 sequence that starts at
// text[i] with a byte >= 0x80, and its code point; 0 when the bytes there
// are not one (a stray continuation byte, an overlong form, a surrogate,
// past U+10FFFF, or cut short).
size_t Utf8SequenceAt(absl::string_view text, size_t i, uint32_t* code_point);

// `text` with every byte that is not part of well-formed UTF-8 replaced by
// U+FFFD; valid text comes back unchanged.
std::string ValidUtf8(absl::string_view text);

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_UTF8_H_
