"""A job's output read where it was written: on this machine, or on its remote site over SSH (issue 36).

A job that ran on a remote site (a cluster reached over SSH, see :mod:`metasched.runtime.remote.ssh`)
wrote its stdout and stderr there; the placeholder recorded their paths in the job's row. ``metasched logs``,
``Client.job(id).logs()`` and ``GET /v1/jobs/{id}/logs`` read them back with one short-lived OpenSSH master
to the site (the site's ``ssh`` table, as ``metasched sites run`` recorded it in the store) and one bounded
command: ``wc -c`` for the size and ``tail -c`` for at most :data:`MAX_LOG_BYTES`. Only the recorded paths are
ever read (never a path from the user), quoted for the remote shell, and the whole read has a timeout.

Invariant (:func:`shape`): the text answered is a suffix of the file, never more than the cap or the tail
asked for, and ``truncated`` is true exactly when it is shorter than the file.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Largest log answered whole (the tail is kept beyond: a job writing gigabytes must not fill a reply).
MAX_LOG_BYTES = 16 << 20
#: Longest a remote read may take (connecting has its own ``connect_timeout_s``).
READ_TIMEOUT_S = 30.0
_MISSING = 66
_UNREADABLE = 77
# Run by ``sh`` whatever the user's login shell (csh on some clusters); the path is ``$1``, never spliced in.
_SCRIPT = 'test -e "$1" || exit 66; test -r "$1" || exit 77; wc -c < "$1" && tail -c "$2" "$1"'
_TAIL = re.compile(r"^\s*(\d+)\s*([cCkKmM]?)\s*$")
_UNITS = {"": 0, "c": 1, "k": 1 << 10, "m": 1 << 20}


class LogUnavailable(Exception):
    """The output cannot be read: the site is unreachable, the read timed out, or the file is gone."""


@dataclass(frozen=True, slots=True)
class Tail:
    """How much of the end of a log to show: ``lines`` (``tail -n``) or ``bytes`` (``tail -c``)."""

    lines: int | None = None
    bytes: int | None = None


def parse_tail(text: str | int | None) -> Tail | None:
    """``--tail``: ``N`` the last N lines; ``Nc`` the last N bytes, ``Nk``/``NM`` kibibytes/mebibytes.
    ``ValueError`` with the forms accepted otherwise."""
    if text is None:
        return None
    m = _TAIL.match(str(text))
    if not m:
        raise ValueError(f"--tail {text!r}: N lines, or Nc bytes (Nk, NM: KiB, MiB), e.g. 20 or 4k")
    n, unit = int(m.group(1)), m.group(2).lower()
    return Tail(lines=n) if not unit else Tail(bytes=n * _UNITS[unit])


class LogText(str):
    """A log's text (a ``str``), with what was left out: ``size`` (bytes of the whole file), ``truncated``,
    and ``where`` (the path, and the site when remote)."""

    size: int
    truncated: bool
    where: str

    def __new__(cls, text: str, *, size: int, truncated: bool, where: str) -> LogText:
        self = super().__new__(cls, text)
        self.size = size
        self.truncated = truncated
        self.where = where
        return self

    @property
    def note(self) -> str | None:
        """One line saying what is shown when not the whole file, else None."""
        if not self.truncated:
            return None
        shown = len(self.encode())
        lines = self.count("\n") + (0 if self.endswith("\n") or not self else 1)
        return f"truncated: the last {lines} lines ({shown} of {self.size} bytes) of {self.where}"


def byte_cap(tail: Tail | None) -> int:
    """How many bytes of the end of the file to fetch for ``tail``."""
    return MAX_LOG_BYTES if tail is None or tail.bytes is None else min(tail.bytes, MAX_LOG_BYTES)


def shape(data: str, size: int, tail: Tail | None, where: str) -> LogText:
    """The text to answer from ``data`` (the last :func:`byte_cap` bytes of a file of ``size`` bytes)."""
    if tail is not None and tail.lines is not None:
        lines = data.splitlines(keepends=True)
        if len(lines) > tail.lines:
            data = "".join(lines[len(lines) - tail.lines :])
    return LogText(data, size=size, truncated=len(data.encode()) < size, where=where)


def read_local(path: str, tail: Tail | None) -> LogText | None:
    """The file on this machine, or None when it cannot be read."""
    cap = byte_cap(tail)
    try:
        with Path(path).open("rb") as f:
            size = f.seek(0, 2)
            f.seek(max(0, size - cap))
            data = f.read(cap)
    except OSError:
        return None
    return shape(data.decode(errors="replace"), size, tail, path)


def ssh_mapping(target: Any) -> dict[str, Any]:
    """A site's :class:`~metasched.runtime.remote.ssh.SshTarget` as the ``ssh`` table it was read from
    (what :meth:`SshTarget.from_mapping` reads back): stored with the site so a reader finds the site."""
    out: dict[str, Any] = {
        "host": target.host,
        "user": target.user,
        "port": target.port,
        "key": None if target.identity_file is None else str(target.identity_file),
        "jump": target.jump,
        "known_hosts": None if target.known_hosts is None else str(target.known_hosts),
        "host_key_policy": target.host_key_policy,
        "ssh_config": target.ssh_config,
        "connect_timeout_s": target.connect_timeout_s,
        "keepalive_s": target.keepalive_s,
        "options": dict(target.options),
    }
    return {k: v for k, v in out.items() if v is not None}


class RemoteReader:
    """Reads files on one site over one OpenSSH master (opened on the first read, closed by :meth:`close`)."""

    def __init__(self, site: str, ssh: Mapping[str, Any], *, timeout_s: float = READ_TIMEOUT_S) -> None:
        from metasched.runtime.remote.ssh import SshRunner, SshTarget

        self.site = site
        self.timeout_s = timeout_s
        try:
            target = SshTarget.from_mapping(ssh)
        except (ValueError, TypeError) as exc:
            raise LogUnavailable(f"site {site}: its recorded ssh table is invalid ({exc})") from None
        self.runner = SshRunner(target, persist_s=30)

    def read(self, path: str, tail: Tail | None, what: str) -> LogText:
        """``path`` on the site; :class:`LogUnavailable` naming the site and the path otherwise."""
        from metasched.runtime.remote.runner import CommandError, CommandTimeout, SiteUnreachable

        where = f"{path} on site {self.site}"
        command = shlex.join(["sh", "-c", _SCRIPT, "sh", path, str(byte_cap(tail))])
        try:
            res = self.runner.run(command, timeout_s=self.timeout_s)
        except SiteUnreachable as exc:
            raise LogUnavailable(
                f"cannot read {where} ({what}): site {self.site} is unreachable: {_reason(exc)}"
            ) from None
        except CommandTimeout:
            raise LogUnavailable(
                f"cannot read {where} ({what}): no answer from site {self.site} within {self.timeout_s:g} s"
            ) from None
        except CommandError as exc:
            raise LogUnavailable(f"cannot read {where} ({what}): {_reason(exc)}") from None
        if res.returncode == _MISSING:
            raise LogUnavailable(f"{where} ({what}) no longer exists: removed since the job ran?")
        if res.returncode == _UNREADABLE:
            raise LogUnavailable(f"{where} ({what}) is not readable by {self.runner.target}")
        head, _, data = res.stdout.partition("\n")
        if res.returncode != 0 or not head.strip().isdigit():
            err = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
            raise LogUnavailable(f"cannot read {where} ({what}): {err}")
        return shape(data, int(head), tail, where)

    def close(self) -> None:
        self.runner.dispose()

    def __enter__(self) -> RemoteReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reason(exc: Exception) -> str:
    """A runner error's message without its target prefix and command suffix."""
    text = str(exc)
    target = getattr(exc, "target", None)
    if target and text.startswith(f"{target}: "):
        text = text[len(target) + 2 :]
    return " ".join(text.rsplit(" (command: ", 1)[0].split())
