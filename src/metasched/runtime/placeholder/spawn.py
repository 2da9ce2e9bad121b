"""Starting a job's process with ``posix_spawn(3)``: the placeholder's per-job start, without :class:`subprocess.Popen`.

Why: a placeholder running short jobs spends a large part of its CPU starting them. ``Popen`` costs
~0.3 ms of the parent's CPU per start on the project's VM (Python-side set-up, an error pipe, opening
the two output files in the parent, converting the environment); glibc's ``posix_spawn`` with file
actions does the same work in C (the child opens its own output files and changes directory),
~0.15 ms. Python's :func:`os.posix_spawn` has no "change directory" action (3.11), so glibc is
called through :mod:`ctypes`: ``posix_spawn_file_actions_addchdir_np`` (glibc >= 2.29).
:func:`Spawner.available` says whether this works here; the agent falls back to ``Popen`` if not.

What the child gets, as with the ``Popen`` call it replaces: stdin ``/dev/null``, stdout and stderr
truncated to the given files (created 0600: a job's output is its owner's only), the job's working directory, the given
environment, a new session (own process group: ``killpg`` reaches the job and its children), and
``SIGPIPE`` / ``SIGXFSZ`` back to their default action (Python ignores them; ``Popen``'s
``restore_signals``). Descriptors: only 0, 1 and 2 are meant to reach the job. Python opens every
descriptor close-on-exec (PEP 446), as do SQLite, libpq and ``pidfd_open``; :meth:`Spawner.__init__`
also marks the ones the process inherited (from the batch system, say) close-on-exec once, which
``Popen(close_fds=True)`` did at each start.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Mapping, Sequence

_POSIX_SPAWN_SETSIGDEF = 0x04  # glibc's <spawn.h> values (the only libc this module loads)
_POSIX_SPAWN_SETSID = 0x80
_OUT_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
#: Larger than glibc's posix_spawn_file_actions_t (80 bytes) and posix_spawnattr_t (336) on any architecture.
_OPAQUE = 1024


def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.posix_spawn_file_actions_addchdir_np  # noqa: B018 - glibc >= 2.29, or no fast path
    except (OSError, AttributeError):
        return None
    p, s = ctypes.c_void_p, ctypes.c_char_p
    libc.posix_spawn.argtypes = [ctypes.POINTER(ctypes.c_int), s, p, p, ctypes.POINTER(s), ctypes.POINTER(s)]
    libc.posix_spawn_file_actions_addopen.argtypes = [p, ctypes.c_int, s, ctypes.c_int, ctypes.c_uint]
    libc.posix_spawn_file_actions_addchdir_np.argtypes = [p, s]
    for name in ("posix_spawn_file_actions_init", "posix_spawn_file_actions_destroy"):
        getattr(libc, name).argtypes = [p]
    libc.posix_spawnattr_setflags.argtypes = [p, ctypes.c_short]
    libc.posix_spawnattr_setsigdefault.argtypes = [p, p]
    return libc


_LIBC = _libc()


class Child:
    """A spawned process: ``pid``, and ``returncode`` once reaped (negative: killed by that signal, as ``Popen``)."""

    __slots__ = ("pid", "returncode")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def wait(self) -> int:
        """Reap the process (blocking until it ends) and return its exit code."""
        if self.returncode is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped elsewhere: its status is gone (Popen says 0 too)
                self.returncode = 0
            else:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


class Spawner:
    """Starts jobs with glibc's ``posix_spawn``; the placeholder's environment is read once, here.

    Invariant: :meth:`spawn` either returns a started child that will run ``argv[0]`` (already exec'd:
    glibc's vfork-style spawn reports a failed exec or a failed file action as an error) or raises
    ``OSError`` and nothing was started.
    """

    def __init__(self) -> None:
        if _LIBC is None:
            raise OSError("posix_spawn with a working-directory action needs glibc >= 2.29")
        self._lib = _LIBC
        self._attr = ctypes.create_string_buffer(_OPAQUE)
        sigs = ctypes.create_string_buffer(_OPAQUE)
        lib = self._lib
        if (
            lib.posix_spawnattr_init(self._attr)
            or lib.sigemptyset(sigs)
            or lib.sigaddset(sigs, signal.SIGPIPE)
            or lib.sigaddset(sigs, signal.SIGXFSZ)
            or lib.posix_spawnattr_setsigdefault(self._attr, sigs)
            or lib.posix_spawnattr_setflags(self._attr, _POSIX_SPAWN_SETSIGDEF | _POSIX_SPAWN_SETSID)
        ):
            raise OSError("posix_spawn attributes could not be set")
        #: The placeholder's own environment, encoded once: ``{name: b"name=value"}``.
        self._env = {os.fsencode(k): os.fsencode(f"{k}={v}") for k, v in os.environ.items()}
        _close_inherited()

    @staticmethod
    def available() -> bool:
        return _LIBC is not None

    def spawn(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None, stdout: str, stderr: str) -> Child:
        """Start ``argv`` (``argv[0]`` a path) with the placeholder's environment updated by ``env``, in ``cwd``
        (``None``: ours), output to the files ``stdout`` and ``stderr``. ``OSError`` if it cannot start."""
        lib = self._lib
        merged = dict(self._env)
        for k, v in env.items():
            merged[os.fsencode(k)] = os.fsencode(f"{k}={v}")
        envp = (ctypes.c_char_p * (len(merged) + 1))(*merged.values(), None)
        args = [os.fsencode(a) for a in argv]
        argvp = (ctypes.c_char_p * (len(args) + 1))(*args, None)
        actions = ctypes.create_string_buffer(_OPAQUE)
        if lib.posix_spawn_file_actions_init(actions):
            raise OSError("posix_spawn_file_actions_init failed")
        try:
            if (
                lib.posix_spawn_file_actions_addopen(actions, 0, b"/dev/null", os.O_RDONLY, 0)
                or lib.posix_spawn_file_actions_addopen(actions, 1, os.fsencode(stdout), _OUT_FLAGS, 0o600)
                or lib.posix_spawn_file_actions_addopen(actions, 2, os.fsencode(stderr), _OUT_FLAGS, 0o600)
                # last: the output paths are the placeholder's, relative or not
                or (cwd and lib.posix_spawn_file_actions_addchdir_np(actions, os.fsencode(cwd)))
            ):
                raise OSError("posix_spawn file actions could not be set")
            pid = ctypes.c_int()
            err = lib.posix_spawn(ctypes.byref(pid), args[0], actions, self._attr, argvp, envp)
        finally:
            lib.posix_spawn_file_actions_destroy(actions)
        if err:
            where = f" in {cwd!r}" if cwd else ""
            raise OSError(err, f"{os.strerror(err)}: {argv[0]!r}{where} (output to {stdout!r})")
        return Child(pid.value)


def _close_inherited() -> None:
    """Mark every descriptor above 2 close-on-exec (what ``Popen(close_fds=True)`` ensured per start)."""
    try:
        fds = [int(d) for d in os.listdir("/proc/self/fd")]
    except OSError:
        return
    for fd in fds:
        if fd > 2:
            with contextlib.suppress(OSError):  # the listing's own descriptor, already closed
                os.set_inheritable(fd, False)
