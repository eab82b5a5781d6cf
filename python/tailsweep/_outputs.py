"""What runs made, onto this machine: a download streamed to a file in
chunks (never whole in memory) under a temporary name, checked against its
SHA-256 and length, then renamed into place; a command job's checkpoint
(a POSIX tar of its step-N/ directory, core/schema/checkpoint_bundle.h)
unpacked only when every entry is safe.

An entry is safe when it is a regular file or a directory whose path is
relative, made of plain components (no "", "." or ".."), under the one top
directory every entry shares. A tar with any other entry (absolute, with
"..", a symbolic or hard link, a device, a FIFO) is refused whole: nothing
of it is written. Entries are written by this module (regular files and
directories only, into a fresh directory), not by tarfile's extract, so
the result does not depend on the Python version's extraction filters.
"""

import hashlib
import os
import pathlib
import re
import secrets
import shutil
import stat
import tarfile
import tempfile
from typing import IO, List, Optional, Union

from tailsweep.errors import DataLoss, InvalidArgument, Unavailable

# Bytes read and written at a time.
CHUNK = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")
# A bundle in the format before tar (core/schema/checkpoint_bundle.cc).
_LEGACY_MAGIC = b"TAILSWEEP-BUNDLE 1\n"

PathLike = Union[str, "os.PathLike[str]"]


def unsafe(name: str) -> Optional[str]:
    """Why the path `name` is not relative with plain components; None
    when it is."""
    parts = name.split("/")
    if not name:
        return "an empty name"
    if name.startswith("/"):
        return "an absolute path"
    if "\0" in name:
        return "a NUL byte in the name"
    if ".." in parts:
        return "a '..' component"
    if any(p in ("", ".") for p in parts):
        return "an empty or '.' component"
    return None


def relative_parts(name: str, what: str) -> List[str]:
    """The components of `name`, a relative path of plain components;
    InvalidArgument naming `what` otherwise."""
    why = unsafe(name)
    if why is not None:
        raise InvalidArgument("%s '%s' refused: %s (a path relative to its "
                              "folder, plain components only)"
                              % (what, name, why))
    return name.split("/")


def make_dirs(root: pathlib.Path, parts: List[str]) -> pathlib.Path:
    """root/parts[0]/.../parts[-1], the folders made as needed; an existing
    component that is a symbolic link or not a folder is refused
    (InvalidArgument), so nothing is written outside `root`."""
    at = root
    for part in parts:
        at = at / part
        try:
            mode = os.lstat(at).st_mode
        except FileNotFoundError:
            os.mkdir(at)
            continue
        if not stat.S_ISDIR(mode):
            raise InvalidArgument(
                "%s is in the way: a %s, not a folder; move it or choose "
                "another folder" % (at, "symbolic link" if stat.S_ISLNK(mode)
                                    else "file"))
    return at


def save(body: IO[bytes], path: pathlib.Path, sha256: str,
         length: Optional[int], what: str) -> pathlib.Path:
    """Writes `body` to `path` (its folder exists): to a temporary name
    beside it, checked against `sha256` (64 hex digits) and `length` (when
    known), then renamed to `path` (replacing a file there). Unavailable
    for a body shorter than `length` (cut on the way), DataLoss for one
    whose SHA-256 differs; either way nothing is left behind."""
    expected = (sha256 or "").lower()
    if not _SHA256.fullmatch(expected):
        raise DataLoss("%s: the coordinator sent no SHA-256 to check it "
                       "against (got %r); nothing was written"
                       % (what, sha256))
    temp = path.with_name(".%s.%d-%s.part" % (path.name, os.getpid(),
                                              secrets.token_hex(4)))
    digest = hashlib.sha256()
    written = 0
    try:
        # O_EXCL: never a file (or link) that was there; 0o666 less umask.
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as out:
            while True:
                chunk = body.read(CHUNK)
                if not chunk:
                    break
                digest.update(chunk)
                out.write(chunk)
                written += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        if length is not None and written != length:
            raise Unavailable(
                "%s: the answer was cut off after %d of its %d bytes (the "
                "coordinator stopped or failed midway); nothing was kept, "
                "fetch it again" % (what, written, length))
        got = digest.hexdigest()
        if got != expected:
            raise DataLoss(
                "%s: its %d bytes have SHA-256 %s, not the %s the "
                "coordinator sent: damaged on the way; nothing was kept, "
                "fetch it again" % (what, written, got, expected))
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return path


def is_plain_tar(path: pathlib.Path) -> bool:
    """Whether the file at `path` opens as an uncompressed tar (a command
    job's checkpoint; a train job's .pt does not)."""
    try:
        with tarfile.open(path, "r:"):
            return True
    except (tarfile.TarError, OSError):
        return False


def is_legacy_bundle(path: pathlib.Path) -> bool:
    """Whether the file is a checkpoint bundle of the format before tar."""
    with open(path, "rb") as f:
        return f.read(len(_LEGACY_MAGIC)) == _LEGACY_MAGIC


def _kind(member: tarfile.TarInfo) -> str:
    if member.issym():
        return "a symbolic link"
    if member.islnk():
        return "a hard link"
    if member.ischr() or member.isblk():
        return "a device"
    if member.isfifo():
        return "a FIFO"
    return "not a regular file or folder (tar type %r)" % member.type


def check_members(members: List[tarfile.TarInfo], where: str) -> str:
    """The one top directory of a checkpoint tar's `members`; InvalidArgument
    naming the first entry that is not safe (see the module's doc)."""
    if not members:
        raise InvalidArgument("%s: an empty tar, no checkpoint directory in "
                              "it" % where)
    files = set()
    seen = set()
    tops = set()
    for m in members:
        def refuse(why: str) -> InvalidArgument:
            return InvalidArgument(
                "%s: entry '%s' refused (%s); nothing was unpacked"
                % (where, m.name, why))
        if not (m.isreg() or m.isdir()):
            raise refuse(_kind(m))
        why = unsafe(m.name)
        if why is not None:
            raise refuse(why)
        parts = m.name.split("/")
        if m.isreg() and len(parts) == 1:
            raise refuse("a file outside the checkpoint's directory")
        if m.name in seen:
            raise refuse("listed twice")
        seen.add(m.name)
        tops.add(parts[0])
        if m.isreg():
            files.add(m.name)
    if len(tops) != 1:
        raise InvalidArgument(
            "%s: entries under %d top directories (%s); a checkpoint is one "
            "step-N/ directory; nothing was unpacked"
            % (where, len(tops), ", ".join(sorted(tops))))
    for m in members:
        parts = m.name.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in files:
                raise InvalidArgument(
                    "%s: entry '%s' refused (below the file '%s'); nothing "
                    "was unpacked" % (where, m.name, "/".join(parts[:i])))
    return tops.pop()


def unpack(tar_path: pathlib.Path, dest: pathlib.Path) -> pathlib.Path:
    """Unpacks the checkpoint tar at `tar_path` into the folder `dest`:
    its one top directory appears there whole (an older one of that name
    is replaced) or not at all. Returns that directory. InvalidArgument for
    a tar with an unsafe entry or a damaged one; the tar is left as it is."""
    where = str(tar_path)
    try:
        with tarfile.open(tar_path, "r:") as tar:
            members = tar.getmembers()
            top = check_members(members, where)
            stage = pathlib.Path(tempfile.mkdtemp(
                prefix=".%s.unpack-" % top, dir=dest))
            try:
                dirs = []
                for m in members:
                    target = stage.joinpath(*m.name.split("/"))
                    if m.isdir():
                        target.mkdir(parents=True, exist_ok=True)
                        dirs.append((target, m))
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    source = tar.extractfile(m)
                    if source is None:
                        raise InvalidArgument("%s: entry '%s' has no data"
                                              % (where, m.name))
                    with source, open(target, "xb") as out:
                        shutil.copyfileobj(source, out, CHUNK)
                    os.chmod(target, m.mode & 0o777)
                    os.utime(target, (m.mtime, m.mtime))
                # Folders last (deepest first): writing in them moved
                # their times; the owner keeps the right to enter them.
                for target, m in reversed(dirs):
                    os.chmod(target, (m.mode & 0o777) | 0o700)
                    os.utime(target, (m.mtime, m.mtime))
                final = dest / top
                if os.path.lexists(final):
                    os.rename(final, stage / (".old-" + top))
                os.rename(stage / top, final)
            finally:
                shutil.rmtree(stage, ignore_errors=True)
    except tarfile.TarError as e:
        raise InvalidArgument("%s: a damaged checkpoint tar (%s); nothing "
                              "was unpacked" % (where, e)) from None
    return final
