"""Files that are whole or absent: atomic writes, locks, checksums and the sweeping of leftovers.

Every file or folder the package writes into its cache (assembled GGUF files, converted
models, measurements) is written under a temporary name next to its target and renamed
into place only when complete, inside a lock on the target, so concurrent processes never
see a partial copy and never remove one another's.  A process killed mid-write leaves its
temporary behind; the next process that takes the lock sweeps it (holding the lock, nobody
else can be writing one).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from pathlib import Path

TEMP_MARKERS = (".tmp-", ".part-")


_HASHED: dict[tuple, str] = {}


def sha256_of(path: Path, block: int = 1 << 24) -> str:
    """The sha256 of a file, read in blocks; remembered for this process while its size, time and inode are
    unchanged (a model file of a GB is checked once per process, not on every load).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "x"
    >>> _ = p.write_bytes(b"abc")
    >>> sha256_of(p)[:16]
    'ba7816bf8f01cfea'
    """
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _HASHED:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(block):
                h.update(chunk)
        _HASHED[key] = h.hexdigest()
    return _HASHED[key]


def temporary(target: Path, kind: str = "tmp") -> Path:
    """A fresh name next to ``target`` for writing it: ``<name>.<kind>-<pid>-<random>``."""
    return target.with_name(f"{target.name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def remove(path: Path) -> None:
    """Remove a file or a folder, whichever ``path`` is; absent is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def sweep(target: Path, *, everything: bool = False) -> list[Path]:
    """Remove the temporaries of ``target`` left by killed runs; call it holding :func:`locked` on ``target``.

    Temporaries are ``<name>.tmp-*`` and ``<name>.part-*`` (and, from earlier versions, the same
    with the name's suffix replaced).  With ``everything``, every temporary in ``target``'s folder
    goes: for a folder whose writers all hold one lock on the folder.
    """
    gone = []
    prefixes = {target.name} | ({target.stem} if target.suffix else set())
    if target.parent.is_dir():
        for entry in target.parent.iterdir():
            if everything:
                ours = any(m in entry.name for m in TEMP_MARKERS)
            else:
                ours = any(entry.name.startswith(p) and entry.name[len(p):].startswith(TEMP_MARKERS)
                           for p in prefixes)
            if ours:
                remove(entry)
                gone.append(entry)
    return gone


@contextlib.contextmanager
def locked(target: Path):
    """Hold an exclusive lock on ``target`` (a ``<name>.lock`` file beside it) across processes."""
    try:
        import fcntl
    except ImportError:                      # no POSIX locks (Windows): atomic renames still keep files whole
        yield
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = target.with_name(target.name + ".lock")
    with open(lock, "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one, never a part."""
    path = Path(path)
    tmp = temporary(path)
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def regular_file(path: Path) -> Path:
    """``path``, if it is a regular file (or a link to one); else an ``OSError`` naming it: a FIFO, a socket or a
    device in its place could block a reader forever, and a folder holds no report.

    >>> import os, tempfile, pathlib
    >>> fifo = pathlib.Path(tempfile.mkdtemp()) / "r.json"
    >>> os.mkfifo(fifo)
    >>> regular_file(fifo)
    Traceback (most recent call last):
    ...
    OSError: [Errno 22] not a regular file (a FIFO, a socket, a device or a folder; it is not read): '...r.json'
    """
    import errno
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # a FIFO opens at once, without a writer
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    finally:
        os.close(fd)
    if not regular:
        raise OSError(errno.EINVAL, "not a regular file (a FIFO, a socket, a device or a folder; it is not read)",
                      str(path))
    return Path(path)


def read_json(path: Path, what: str = "cached measurement"):
    """The JSON held at ``path``; None if it is absent, or, with a warning naming the file, if it cannot be
    read or parsed (a torn write by an older version, a disk error): the caller then computes it again."""
    import json
    import warnings

    try:
        return json.loads(regular_file(path).read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError):      # nothing there (a file where a folder should be: the
        return None                                      # writer says so)
    except (OSError, ValueError) as exc:
        warnings.warn(f"the {what} {path} cannot be read ({exc}); recomputing it", stacklevel=3)
        return None
