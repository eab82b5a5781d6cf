#ifndef TAILSWEEP_CORE_SCHEMA_NAME_TABLE_H_
#define TAILSWEEP_CORE_SCHEMA_NAME_TABLE_H_

// A closed set of names for an enum, in one table read both ways: the
// value's name, the value of a name, and the list of names an error says
// is allowed. Each enum that crosses a file or a process (job kinds and
// states, kernels, norms, precisions) spells its names once, in such a
// table in its .cc file. Header-only, torch-free.

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tailsweep {

template <typename E>
struct EnumName {
  E value;
  absl::string_view name;
};

template <typename E>
using NameTable = absl::Span<const EnumName<E>>;

// The name of `value`; "unknown" for a value the table lacks.
template <typename E>
absl::string_view NameOf(NameTable<E> table, E value) {
  for (const EnumName<E>& e : table) {
    if (e.value == value) return e.name;
  }
  return "unknown";
}

// The value named `name`; nullopt for any other text.
template <typename E>
std::optional<E> ValueOf(NameTable<E> table, absl::string_view name) {
  for (const EnumName<E>& e : table) {
    if (e.name == name) return e.value;
  }
  return std::nullopt;
}

// "a, b, c", in the table's order.
template <typename E>
std::string AllNames(NameTable<E> table) {
  std::string out;
  for (const EnumName<E>& e : table) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", e.name);
  }
  return out;
}

}  // namespace tailsweep

#endif  // TAILSWEEP_CORE_SCHEMA_NAME_TABLE_H_
