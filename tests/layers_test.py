#!/usr/bin/env python3
"""The layering rule CMake cannot state (docs/architecture.md): no file of a
torch-free target includes, directly or through other headers, anything of
LibTorch - a <torch/...>, <ATen/...> or <c10/...> header, or a header of
tailsweep_core (core/CMakeLists.txt), whose code needs LibTorch.

The targets and their sources are read from the CMakeLists.txt files, so a
new file or target is checked without editing this test. Exits 1 and prints
each include chain that breaks the rule.

With --grpc, the second rule (issue 27): gRPC stops at proto/. No file under
core/, worker/, cli/ or report/, nor the coordinator's store, names a gRPC
type (grpc::...) or includes gRPC or the generated service header
(*.grpc.pb.h) itself: they call proto/worker_api.h or proto/coordinator_api.h
and see absl::Status. The coordinator's service code (GRPC_SERVICE_FILES),
proto/, tests and benchmarks may.

With --kinds, the third rule (issue 36): a job kind is one registration
(core/schema/job_kinds.h). No file outside a kind's own file
(core/schema/NAME_*.h/.cc, NAME a registered kind's) and the registry (job_kind.h, job_kinds.h/.cc)
branches on which kind a job is: no comparison with a kind's name (as
registered there) or with a parsed kind, no JobKind::kNAME. Code asks the
kind's definition instead.

With --kinds, the page (report/web/*.js) and the Python package
(python/tailsweep/) are read too: neither compares anything with a kind's
name; they show the table the kind made.

With --shape, the fourth rule (issue 48): report/ includes nothing of
cli/ (the report is read by the coordinator, which links no command
line), and no function of the product (core/, proto/, coordinator/,
worker/, cli/, report/) is over 100 lines, counted from its signature's
first line to its closing brace (a definition at the file's top level).

  tests/layers_test.py [--grpc | --kinds | --shape] [REPO_ROOT]
"""
import os
import re
import sys

ARGS = [a for a in sys.argv[1:]
        if a not in ("--grpc", "--kinds", "--shape")]
ROOT = os.path.abspath(ARGS[0] if ARGS else
                       os.path.join(os.path.dirname(__file__), ".."))
GRPC = re.compile(r'\bgrpc::|#include\s*[<"]grpc|\.grpc\.pb\.h"')
GRPC_FOLDERS = ("core", "worker", "cli", "report", "coordinator")
# The coordinator's service: the gRPC handlers, their interceptors, the
# gateway that calls them in process, and the executable that serves them.
GRPC_SERVICE_FILES = re.compile(
    r"coordinator/(service|service_reads|service_metrics|telemetry|http_gateway|"
    r"coordinator_main)\.(h|cc)$")
TORCH_TARGET = "tailsweep_core"
# Targets that link LibTorch (through tailsweep_core) and may include it.
TORCH_TARGETS = {TORCH_TARGET, "tailsweep-lab"}
TORCH_SYSTEM = re.compile(r'#include\s*<(torch|ATen|c10)/')
QUOTED = re.compile(r'#include\s*"([^"]+)"')
TARGET = re.compile(r'add_(?:library|executable)\(\s*([\w-]+)\s+([^)]*)\)',
                    re.S)


def targets():
    """{target: [source paths relative to ROOT]} from every CMakeLists.txt."""
    out = {}
    for folder in ("core", "proto", "coordinator", "worker", "cli", "report"):
        path = os.path.join(ROOT, folder, "CMakeLists.txt")
        text = re.sub(r"#.*", "", open(path).read())
        for name, body in TARGET.findall(text):
            files = [w for w in body.split()
                     if w.endswith((".cc", ".h")) and "$" not in w]
            # core/'s kinds are globbed (schema/*_kind.cc).
            if "${tailsweep_kind_sources}" in body:
                files += ["schema/" + n for n in sorted(os.listdir(
                    os.path.join(ROOT, folder, "schema")))
                    if n.endswith("_kind.cc")]
            out.setdefault(name, []).extend(
                os.path.normpath(os.path.join(folder, f)) for f in files)
    return out


def main():
    all_targets = targets()
    torch_headers = {os.path.splitext(f)[0] + ".h"
                     for f in all_targets.get(TORCH_TARGET, [])}
    if not torch_headers:
        print(f"no sources of {TORCH_TARGET} found in core/CMakeLists.txt")
        return 1
    seen = {}  # file -> the chain to torch from it, or None

    def chain(path, stack):
        if path in seen:
            return seen[path]
        seen[path] = None  # cycles end here
        full = os.path.join(ROOT, path)
        if not os.path.isfile(full):
            return None  # generated (proto/*.pb.h) or a third party's
        for line in open(full, errors="replace"):
            if TORCH_SYSTEM.match(line.strip()):
                seen[path] = [path, line.strip()]
                return seen[path]
            m = QUOTED.match(line.strip())
            if not m:
                continue
            inc = os.path.normpath(m.group(1))
            if inc in torch_headers:
                seen[path] = [path, inc]
                return seen[path]
            if inc not in stack:
                below = chain(inc, stack | {inc})
                if below:
                    seen[path] = [path] + below
                    return seen[path]
        return None

    broken = 0
    checked = 0
    for target, sources in sorted(all_targets.items()):
        if target in TORCH_TARGETS:
            continue
        for src in sources:
            checked += 1
            found = chain(src, {src})
            if found:
                broken += 1
                print(f"{target}: {' -> '.join(found)}")
    print(f"{checked} files of {len(all_targets) - len(TORCH_TARGETS)} "
          f"torch-free targets checked; {broken} reach LibTorch")
    return 1 if broken else 0


def grpc_main():
    broken = 0
    checked = 0
    for folder in GRPC_FOLDERS:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.relpath(os.path.join(base, name), ROOT)
                if GRPC_SERVICE_FILES.match(path):
                    continue
                checked += 1
                for n, line in enumerate(open(os.path.join(ROOT, path),
                                              errors="replace"), 1):
                    code = line.split("//")[0]
                    if GRPC.search(code):
                        broken += 1
                        print(f"{path}:{n}: {line.strip()}")
    print(f"{checked} files outside proto/ and the coordinator's service "
          f"checked; {broken} lines name gRPC")
    return 1 if broken else 0


KIND_FOLDERS = ("core", "worker", "cli", "report", "coordinator", "proto")
KIND_OWNERS = re.compile(r"core/schema/(\w+_kind\.(h|cc)|job_kinds?\.(h|cc))$")
KIND_NAME = re.compile(r'(?:\.name = |KindName\[\] = )"(\w+)"')


def kind_branch():
    """A comparison with a registered kind's name or with a parsed kind."""
    names = set()
    folder = os.path.join(ROOT, "core", "schema")
    for name in os.listdir(folder):
        if KIND_OWNERS.match("core/schema/" + name):
            names.update(KIND_NAME.findall(open(os.path.join(folder,
                                                             name)).read()))
    alt = "|".join(sorted(names))
    return re.compile(rf'[=!]=\s*"({alt})"|"({alt})"\s*[=!]='
                      r"|ParseJobKind\([^)]*\)\s*[=!]=|[=!]=\s*\*?ParseJobKind"
                      r"|JobKindName\([^)]*\)\s*[=!]=|[=!]=\s*JobKindName"
                      r"|JobKind::k\w+"), names


def kinds_main():
    branch, names = kind_branch()
    if not names:
        print("no kind's name found in core/schema/*_kind.{h,cc}")
        return 1
    # A kind's own files: core/schema/NAME_*.{h,cc} (command_job.cc, ...).
    owned = re.compile(rf"core/schema/({'|'.join(sorted(names))})_\w+\.(h|cc)$")
    broken = 0
    checked = 0
    for folder in KIND_FOLDERS:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.relpath(os.path.join(base, name), ROOT)
                if KIND_OWNERS.match(path) or owned.match(path):
                    continue
                checked += 1
                for n, line in enumerate(open(os.path.join(ROOT, path),
                                              errors="replace"), 1):
                    if branch.search(line.split("//")[0]):
                        broken += 1
                        print(f"{path}:{n}: {line.strip()}")
    # The page and the Python package: a kind's name in quotes compared.
    quoted = "|".join(sorted(names))
    script = re.compile(rf"""[=!]==?\s*['"]({quoted})['"]"""
                        rf"""|['"]({quoted})['"]\s*[=!]==?"""
                        rf"""|\bin\s*\(\s*['"]({quoted})['"]""")
    for folder, ext in (("report/web", ".js"), ("python/tailsweep", ".py")):
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if not name.endswith(ext):
                continue
            path = os.path.join(folder, name)
            checked += 1
            for n, line in enumerate(open(os.path.join(ROOT, path),
                                          errors="replace"), 1):
                if script.search(line.split("//")[0].split("#")[0]):
                    broken += 1
                    print(f"{path}:{n}: {line.strip()}")
    print(f"{checked} files outside the kinds' own files checked; {broken} "
          f"lines branch on a job kind")
    return 1 if broken else 0


SHAPE_FOLDERS = ("core", "proto", "coordinator", "worker", "cli", "report")
MAX_FUNCTION_LINES = 100
# A top-level definition's first line: not blank, indented, a comment, a
# preprocessor line, a closing brace or a declaration of another kind.
DEFINITION = re.compile(r"^(?!namespace|extern|struct|class|enum|union|"
                        r"using|template|typedef|#|//|}|\s)\S")


def long_functions(path):
    """(name, first line, lines) of each top-level function of `path`."""
    lines = open(path, errors="replace").read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        if not DEFINITION.match(lines[i]):
            i += 1
            continue
        j = i  # the signature runs to the line that opens the body
        while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
            j += 1
        head = " ".join(x.strip() for x in lines[i:j + 1])
        if (j == len(lines) or not lines[j].rstrip().endswith("{") or
                "(" not in head or "=" in head.split("(")[0]):
            i = j + 1
            continue
        k = j + 1
        while k < len(lines) and not lines[k].startswith("}"):
            k += 1
        out.append((head.split("(")[0].split()[-1], i + 1, k - i + 1))
        i = k + 1
    return out


def shape_main():
    broken = 0
    checked = 0
    cli_include = re.compile(r'#include\s*"cli/')
    for base, _, files in os.walk(os.path.join(ROOT, "report")):
        for name in sorted(files):
            if name.endswith((".h", ".cc")):
                path = os.path.relpath(os.path.join(base, name), ROOT)
                for n, line in enumerate(open(os.path.join(ROOT, path)), 1):
                    if cli_include.match(line.strip()):
                        broken += 1
                        print(f"{path}:{n}: report/ includes cli/: "
                              f"{line.strip()}")
    for folder in SHAPE_FOLDERS:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in sorted(files):
                if not name.endswith(".cc"):
                    continue
                path = os.path.relpath(os.path.join(base, name), ROOT)
                checked += 1
                for fn, line, count in long_functions(
                        os.path.join(ROOT, path)):
                    if count > MAX_FUNCTION_LINES:
                        broken += 1
                        print(f"{path}:{line}: {fn} is {count} lines (at "
                              f"most {MAX_FUNCTION_LINES})")
    print(f"{checked} product files checked; {broken} problems")
    return 1 if broken else 0


if __name__ == "__main__":
    if "--grpc" in sys.argv[1:]:
        sys.exit(grpc_main())
    if "--shape" in sys.argv[1:]:
        sys.exit(shape_main())
    sys.exit(kinds_main() if "--kinds" in sys.argv[1:] else main())
