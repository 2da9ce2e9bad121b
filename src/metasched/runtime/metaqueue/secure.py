"""The metaqueue's secrets and private files, in one place: bearer tokens, the ``Authorization`` header, and
files only their owner may read.

Trust model: whoever holds the server's token may make every protocol call as any placeholder (the token
is shared by all placeholders; per-user identity is a later issue). So the token must never be empty or
guessable, every route checks it the same way (:func:`bearer_matches`), and it lives in files no other
local user can read (:func:`write_private`; the metaqueue's home is 0700, see :func:`private_dir`).
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from metasched.runtime.metaqueue.records import StoreError

log = logging.getLogger("metasched.secure")

#: The shortest bearer token a server accepts (characters). ``secrets.token_urlsafe(32)`` gives 43.
MIN_TOKEN_CHARS = 16


class TokenError(StoreError):
    """A token that must not be used (empty, too short, unreadable): the message names the file."""


def check_token(token: str, where: str) -> str:
    """``token`` if a server may accept it: at least :data:`MIN_TOKEN_CHARS` characters, printable, no
    whitespace (it travels as ``Bearer <token>``); else :class:`TokenError` saying why and ``where``."""
    if not token:
        raise TokenError(f"the bearer token is empty, {where}: a token needs at least {MIN_TOKEN_CHARS} characters")
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(
            f"the bearer token has {len(token)} characters, {where}: a token needs at least {MIN_TOKEN_CHARS}"
        )
    if not token.isprintable() or any(c.isspace() for c in token) or not token.isascii():
        raise TokenError(f"the bearer token holds whitespace or non-printable characters, {where}")
    return token


def bearer_credentials(headers: Sequence[tuple[bytes, bytes]]) -> bytes | None:
    """The token of the request's ONE ``Authorization: Bearer <token>`` header, else ``None``.

    The single parser of every route: the scheme ``Bearer`` (any case, RFC 7235), exactly one space,
    then a non-empty token without whitespace. Two ``Authorization`` headers, two spaces, a missing
    token or another scheme: ``None``.
    """
    found: bytes | None = None
    for name, value in headers:
        if name.lower() == b"authorization":
            if found is not None:
                return None
            found = value
    if found is None:
        return None
    scheme, sep, credentials = found.partition(b" ")
    if not sep or scheme.lower() != b"bearer" or not credentials:
        return None
    if any(c in b" \t\r\n" for c in credentials):
        return None
    return credentials


def bearer_matches(headers: Sequence[tuple[bytes, bytes]], accepted: Sequence[bytes]) -> bool:
    """True when the request's bearer token (:func:`bearer_credentials`) is one of ``accepted`` (each
    compared in constant time; an empty accepted token never matches)."""
    given = bearer_credentials(headers)
    if given is None:
        return False
    ok = False
    for token in accepted:
        ok |= bool(token) and hmac.compare_digest(given, token)
    return ok


@contextlib.contextmanager
def private_umask() -> Iterator[None]:
    """Files and directories created inside are for their owner only (umask 077); the old umask after.
    (The umask is per process: used only around the creation of our own files.)"""
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


_warned: set[Path] = set()


def private_dir(path: Path, *, warn: bool = True) -> Path:
    """``path`` as a directory, created 0700 (parents too, where missing). An existing directory that
    other users may read or enter is left as it is (it may be shared on purpose; the files we put in it
    are 0600 anyway), with a warning once per process if ``warn``."""
    with private_umask():
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if warn and path not in _warned:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            _warned.add(path)
            log.warning("%s is open to other users (mode %04o): `chmod 700 %s` keeps them out", path, mode, path)
    return path


def private_file(path: Path, *, create: bool = True) -> None:
    """Make ``path`` a file for its owner only: created empty with mode 0600 if missing (``create``), an
    existing file of ours set to 0600 (one of somebody else's is left as it is)."""
    flags = os.O_WRONLY | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    try:
        with private_umask():
            fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        if create:
            raise
        return
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            with contextlib.suppress(PermissionError):
                os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def write_private(path: Path, text: str, *, replace: bool = True) -> bool:
    """Write ``text`` to ``path`` atomically with mode 0600: a temporary file in the same directory,
    flushed to disk, then renamed over ``path`` (a reader sees the old file or the whole new one, never
    a part). ``replace=False``: only if ``path`` does not exist yet (a hard link, which never replaces:
    of two processes racing, one wins and the other gets False and reads the winner's file)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mkstemp: 0600
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
