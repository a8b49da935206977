"""Files from untrusted data, safely: names that become paths, destinations checked before the work,
writes that appear whole or not at all, and reads bounded in size.

Every name taken from a model, an inputs file or a campaign directory (a node, an output, a group) becomes a
path only through :func:`safe_component`: one component, inside the directory the user named. Every file
we write goes through :func:`write_atomic` or :func:`atomic_dir`. See docs/security.md.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from customops.errors import CustomOpsError
from customops.signals import signals_held

MAX_COMPONENT = 100
"""Longest path component made from a name (characters)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_TMP_PREFIX = ".customops-"


def _read_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()
"""The process's umask, read once at import (reading it means setting it, which is not thread-safe)."""


def safe_component(name: str, used: set[str] | None = None, fallback: str = "item") -> str:
    """``name`` as one safe path component: only ``A-Z a-z 0-9 _ . -``, never empty, never starting with a
    dot (so never ``.`` or ``..``, never hidden), at most :data:`MAX_COMPONENT` characters. With ``used``
    (lower-cased components already taken in the same directory) the result is made unique with a numbered
    suffix and added to it; case is ignored, as some file systems ignore it."""
    base = _UNSAFE.sub("_", str(name)).strip("_.-")[:MAX_COMPONENT].rstrip("_.-") or fallback
    if used is None:
        return base
    candidate, n = base, 1
    while candidate.lower() in used:
        n += 1
        suffix = f"-{n}"
        candidate = base[: MAX_COMPONENT - len(suffix)] + suffix
    used.add(candidate.lower())
    return candidate


def printable(text: object) -> str:
    """``text`` for a terminal or a Markdown page: every character that is not printable (a newline, an
    escape sequence's ESC, other control characters) written as its escape (``\\n``, ``\\x1b``), so a name
    from data can neither break a one-line message nor drive the terminal."""
    out = str(text)
    if out.isprintable():
        return out
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in out)


_MARKDOWN = str.maketrans(
    {"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "&": "&amp;", "<": "&lt;", ">": "&gt;"}
)


def markdown_text(text: object) -> str:
    """``text`` from data for a Markdown page, a table cell or a line: :func:`printable` (one line, no
    control characters), then written so that it renders as that text: no HTML tag or entity (``&``,
    ``<``, ``>`` as entities), no link or image (``[`` and ``]`` escaped), no cell separator (``|`` and
    the backslash itself escaped). A code span (backticks) is left: nothing is interpreted inside one,
    and a table's cells are split before it is read."""
    return printable(text).translate(_MARKDOWN)


def is_safe_component(name: object) -> bool:
    """Whether ``name`` (read from data) is already one safe path component (see :func:`safe_component`)."""
    return isinstance(name, str) and bool(name) and safe_component(name) == name


def _existing_kind(path: Path) -> str | None:
    """'file', 'directory', 'other' (a device, a FIFO, a socket) for what ``path`` names, or None."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "other" if os.path.islink(path) else None  # a dangling symbolic link
    except OSError as exc:
        raise CustomOpsError(f"cannot use {str(path)!r}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        return "file"
    return "directory" if stat.S_ISDIR(mode) else "other"


def _writable(directory: Path) -> bool:
    """Whether a file can be made in ``directory`` (tried, as permissions alone do not tell root's case
    or a read-only mount)."""
    with signals_held():  # Ctrl-C or SIGTERM between making and removing the probe would leave it behind
        try:
            fd, probe = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=".probe", dir=directory)
        except OSError:
            return False
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
    return True


def _check_parent(path: Path, what: str) -> Path:
    parent = path.absolute().parent
    if not parent.is_dir():
        raise CustomOpsError(f"{what} {str(path)!r}: directory {str(parent)!r} does not exist")
    if not _writable(parent):
        raise CustomOpsError(f"{what} {str(path)!r}: directory {str(parent)!r} is not writable")
    return parent


def check_output_file(path: str | os.PathLike[str], what: str) -> None:
    """Raise CustomOpsError unless ``path`` can be written as a regular file: its directory exists and is
    writable, and it is not a directory, a device, a FIFO or a socket. ``what`` names it in the message
    (e.g. ``"--json"``)."""
    out = Path(path)
    kind = _existing_kind(out)
    if kind == "directory":
        raise CustomOpsError(f"{what} {str(out)!r} is a directory, not a file")
    if kind == "other":
        raise CustomOpsError(
            f"{what} {str(out)!r} exists and is not a regular file (a device, FIFO, socket or dangling link)"
        )
    _check_parent(out, what)
    if kind == "file" and not os.access(out, os.W_OK):
        raise CustomOpsError(f"{what} {str(out)!r} is not writable")


def check_output_dir(path: str | os.PathLike[str], what: str) -> None:
    """Raise CustomOpsError unless ``path`` is a writable directory or can be made one: it is not an
    existing file and its parent exists. ``what`` names it in the message (e.g. ``"--out"``)."""
    out = Path(path)
    kind = _existing_kind(out)
    if kind is not None and kind != "directory":
        raise CustomOpsError(f"{what} {str(out)!r} exists and is not a directory")
    if kind == "directory":
        if not _writable(out):
            raise CustomOpsError(f"{what} {str(out)!r} is not writable")
        return
    _check_parent(out, what)


def check_distinct(targets: list[tuple[str, str | os.PathLike[str] | None]]) -> None:
    """Raise CustomOpsError when two options (``(option, path)``; None: not given) name the same file."""
    seen: dict[str, str] = {}
    for option, target in targets:
        if not target:
            continue
        key = os.path.realpath(target)
        if key in seen:
            raise CustomOpsError(
                f"{seen[key]} and {option} name the same file {str(target)!r}; give each its own"
            )
        seen[key] = option


def inside(path: str | os.PathLike[str], directory: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is ``directory`` or lies inside it, symbolic links followed (for refusing an output
    that would land in an input)."""
    real, base = os.path.realpath(path), os.path.realpath(directory)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` to ``path`` so that it appears complete or not at all: a temporary file beside it,
    flushed to disk, then renamed over it. On any failure (a full disk, a signal) the temporary file is
    removed and ``path`` is as it was. Raises CustomOpsError naming the path."""
    out = Path(path)
    payload = data.encode() if isinstance(data, str) else data
    tmp: str | None = None
    try:
        with signals_held():  # the temporary file exists only once its removal below is armed
            fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=".tmp", dir=out.absolute().parent)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, _mode_for(out))
        os.replace(tmp, out)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(exc, OSError):
            raise CustomOpsError(f"cannot write {str(out)!r}: {exc.strerror or exc}") from None
        raise


def _mode_for(path: Path) -> int:
    """The permission bits a file written at ``path`` gets: those of the file it replaces, else the
    umask's (as ``open`` would give)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_UMASK


@contextlib.contextmanager
def atomic_dir(final: str | os.PathLike[str], *, replace: bool = False) -> Iterator[Path]:
    """Yield a fresh hidden directory beside ``final`` to fill; on success it becomes ``final``, on any
    failure it is removed and ``final`` is untouched. An existing ``final`` is refused, unless ``replace``
    (the caller has checked that it is a directory of its own making): a real directory is then removed
    first; a file or a symbolic link is still refused."""
    out = Path(final)
    if os.path.lexists(out) and (not replace or out.is_symlink() or not out.is_dir()):
        raise CustomOpsError(f"{str(out)!r} already exists and is not replaced")
    tmp: Path | None = None
    try:
        with signals_held():  # the directory exists only once its removal below is armed
            tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=out.absolute().parent))
        os.chmod(tmp, 0o777 & ~_UMASK)
        yield tmp
        if out.is_dir() and not out.is_symlink():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except OSError as exc:
        raise CustomOpsError(f"cannot write {str(out)!r}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def open_bounded(
    path: str | os.PathLike[str], limit: int, what: str, *, below: str | os.PathLike[str] | None = None
) -> BinaryIO:
    """``path`` opened for reading, refused (CustomOpsError) unless it is a regular file of at most
    ``limit`` bytes: a device (``/dev/zero``), a FIFO (which would block) or a directory is never read.
    With ``below`` (a directory the user named, holding ``path``), no component of ``path`` below it may
    be a symbolic link (:func:`open_below`). The checks are made on the open file itself, so what is read
    is what was checked."""
    p = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK
    try:
        fd = os.open(p, flags) if below is None else open_below(Path(below), p, flags)
    except FileNotFoundError:
        raise CustomOpsError(f"{what} {str(p)!r} does not exist") from None
    except (OSError, ValueError) as exc:
        raise CustomOpsError(
            f"cannot read {what} {str(p)!r}: {getattr(exc, 'strerror', None) or exc}"
        ) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise CustomOpsError(f"{what} {str(p)!r} is not a regular file")
        raise CustomOpsError(f"{what} {str(p)!r} is larger than {limit} bytes, the most allowed")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def open_below(root: Path, path: Path, flags: int) -> int:
    """``os.open(path, flags)`` for a ``path`` inside the directory ``root`` (which may itself be a link:
    the user named it), opening each component below ``root`` relative to the one above it without
    following a symbolic link: no component of ``path`` below ``root`` may be one, whatever the directory
    holds and whenever it changes. A link is a CustomOpsError naming it; a missing component is
    FileNotFoundError, other failures OSError."""
    parts = path.relative_to(root).parts  # lexical: ValueError for a path outside root
    if not parts or any(part in (".", "..") for part in parts):
        raise ValueError(f"{str(path)!r} is not a path inside {str(root)!r}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            mode = flags if i == len(parts) - 1 else os.O_RDONLY | os.O_DIRECTORY
            try:
                step = os.open(part, mode | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                here = root.joinpath(*parts[: i + 1])
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(here):
                    raise CustomOpsError(
                        f"{str(here)!r} is a symbolic link; nothing inside {str(root)!r} is read through a link"
                    ) from None
                raise
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bounded(
    path: str | os.PathLike[str], limit: int, what: str, *, below: str | os.PathLike[str] | None = None
) -> bytes:
    """The bytes of the regular file ``path``, refused (CustomOpsError) when it holds more than ``limit``;
    with ``below``, read through no symbolic link below that directory (:func:`open_bounded`)."""
    with open_bounded(path, limit, what, below=below) as f:
        try:
            data = f.read(limit + 1)
        except OSError as exc:
            raise CustomOpsError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise CustomOpsError(f"{what} {str(path)!r} is larger than {limit} bytes, the most allowed")
    return data


def inflate_bounded(data: bytes, limit: int, what: str) -> bytes:
    """zlib-decompress ``data``, refused (CustomOpsError) when it is corrupt or would expand beyond
    ``limit`` bytes; never allocates more than that."""
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise CustomOpsError(f"{what}: corrupt compressed data ({exc})") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise CustomOpsError(f"{what}: compressed data expands beyond {limit} bytes, the most allowed")
    if not inflater.eof:
        raise CustomOpsError(f"{what}: truncated compressed data")
    return out


MAX_JSON_ITEMS = 1 << 21
"""Most JSON values a document read as untrusted may hold, counted before it is parsed as its ``[``, ``{``
and ``,`` (each value but the first of an array or object follows a comma): each becomes a Python object
of 50 to 150 bytes, so that a file of a few bytes a value (``[[],[],...]``) cannot cost gigabytes (a
75 MB one took 3.7 GB). A Polygraphy file holds 5 of them an array, a campaign's files a few an entry."""


def read_json(
    path: str | os.PathLike[str],
    limit: int,
    what: str,
    max_depth: int | None = None,
    *,
    below: str | os.PathLike[str] | None = None,
) -> Any:
    """The JSON document of ``path``, read as untrusted: at most ``limit`` bytes (:func:`read_bounded`,
    with ``below`` through no symbolic link below that directory), strict JSON (NaN and Infinity
    refused), at most :data:`MAX_JSON_ITEMS` values, and with ``max_depth`` at most that many arrays and
    objects deep. CustomOpsError (one line naming ``what`` and the path) otherwise."""
    import json

    data = read_bounded(path, limit, what, below=below)
    items = data.count(b"[") + data.count(b"{") + data.count(b",")
    if items > MAX_JSON_ITEMS:
        raise CustomOpsError(
            f"{what} {str(path)!r} holds {items} JSON values (counted as its [, {{ and ,), over the "
            f"{MAX_JSON_ITEMS} allowed"
        )
    try:
        text, data = data.decode("utf-8"), b""  # the bytes go before the parse: one copy less at its peak
        value = json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc).splitlines()[0][:100]
        raise CustomOpsError(f"{what} {str(path)!r} is not valid JSON ({reason})") from None
    if max_depth is not None and _depth(value, max_depth) > max_depth:
        raise CustomOpsError(f"{what} {str(path)!r} nests arrays and objects more than {max_depth} deep")
    return value


def _reject_constant(token: str) -> None:
    raise ValueError(f"{token} is not JSON")


def _depth(value: Any, limit: int) -> int:
    """How deep arrays and objects nest in ``value``, counted up to ``limit`` + 1 (iteratively: no
    recursion limit to hit)."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level <= limit:
                todo.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest
