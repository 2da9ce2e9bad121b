"""The one error boundary of the ``metasched`` command.

Every error a user can cause (a malformed trace, workflow or option, a missing or unwritable file or
directory, a database that cannot be opened) ends the command with ONE line on stderr,
``error: <what>, <where>`` (the message of a :class:`SwfError` or of a path-named validation error
already carries its place), and exit status 2. Nothing is lost: a command that refuses its input
has not changed any state (the store's submissions are one transaction).

A traceback is printed only with the global option ``--debug`` (anywhere before a ``--``) or
``METASCHED_DEBUG=1``. An exception that is not a known kind of bad input is a bug of ours: it also
gets one line (``error: internal error ...``, exit status 1) saying how to get the traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
import zlib
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

__all__ = ["DEBUG_FLAG", "bad_input", "describe", "run", "split_debug"]

DEBUG_FLAG = "--debug"
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1


def split_debug(argv: Sequence[str]) -> tuple[list[str], bool]:
    """``argv`` without the global ``--debug`` flag (only before a ``--``: after it the words are a
    job's command line) and whether it was there."""
    out: list[str] = []
    debug = False
    for i, arg in enumerate(argv):
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg == DEBUG_FLAG:
            debug = True
            continue
        out.append(arg)
    return out, debug


def _oserror(exc: OSError) -> str:
    what = exc.strerror or str(exc) or type(exc).__name__
    names = [n for n in (exc.filename, exc.filename2) if n is not None]
    where = " -> ".join(os.fsdecode(n) if isinstance(n, bytes | str) else str(n) for n in names)
    return f"{what}, {where}" if where else what


def describe(exc: BaseException) -> str | None:
    """The one-line message for a known kind of bad input, None for anything else (a bug)."""
    from metasched.workload.swf import SwfError

    if isinstance(exc, SwfError):
        return str(exc)
    try:
        from pydantic import ValidationError
    except ImportError:  # pragma: no cover - pydantic is a dependency
        ValidationError = ()  # type: ignore[assignment,misc]
    if isinstance(exc, ValidationError):
        return str(exc).splitlines()[0]
    mod = type(exc).__module__
    name = type(exc).__name__
    # The store's errors (and their subclasses, e.g. TokenError) are the user's, by their class:
    # matched by name so that this module does not import the store (SQLAlchemy) to recognise them.
    if any(c.__name__ == "StoreError" and c.__module__.startswith("metasched.") for c in type(exc).__mro__):
        return str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, ConnectionError | TimeoutError):
        return _oserror(exc)
    if isinstance(exc, UnicodeError):
        return f"not text in a known encoding ({exc})"
    if isinstance(exc, zlib.error | EOFError):
        return f"corrupt or truncated compressed data ({exc})"
    if mod.startswith("sqlalchemy") and name in ("OperationalError", "ArgumentError"):
        orig = getattr(exc, "orig", None)
        return f"database: {orig if orig is not None else str(exc).splitlines()[0]}"
    if mod.startswith("yaml"):
        return f"not valid YAML: {' '.join(str(exc).split())}"
    if isinstance(exc, MemoryError):
        return "out of memory (an input value asks for more than this machine has)"
    if isinstance(exc, RecursionError):
        return "input nested too deeply"
    return None


def bad_input(exc: BaseException) -> SystemExit:
    """For a command that handles a known error itself (so that it also reads well when the command
    is invoked without :func:`run`, as tests do): print the boundary's line (and, with ``--debug``,
    the traceback) and return the exit to raise (status 2)."""
    if os.environ.get("METASCHED_DEBUG", "") not in ("", "0"):
        traceback.print_exception(exc)
    sys.stderr.write(f"error: {_one_line(describe(exc) or str(exc))}\n")
    return SystemExit(EXIT_BAD_INPUT)


def run(main: Callable[..., Any], argv: Sequence[str] | None = None) -> None:
    """Run the command ``main`` (a Typer app) inside the boundary; exits the process."""
    args, debug = split_debug(sys.argv[1:] if argv is None else argv)
    debug = debug or os.environ.get("METASCHED_DEBUG", "") not in ("", "0")
    if debug:
        os.environ["METASCHED_DEBUG"] = "1"
    try:
        # Not click's standalone mode: it would print a usage error as a framed block, and turn an
        # EOFError (a truncated gzip file read by a command) into a bare "Aborted!".
        code = main(args=args, prog_name="metasched", standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        sys.exit(130)
    except Exception as exc:  # the boundary: every error ends here
        # Typer ships its own copy of click: its exceptions are recognised by their interface.
        if type(exc).__name__ == "Abort":
            if isinstance(exc.__context__, EOFError):
                _report(exc.__context__, debug)
            sys.stderr.write("interrupted\n")
            sys.exit(130)
        if hasattr(exc, "format_message") and isinstance(getattr(exc, "exit_code", None), int):
            # A usage error (bad option value, missing argument): one line too, naming the option.
            if debug:
                traceback.print_exception(exc)
            ctx = getattr(exc, "ctx", None)
            hint = f" (see: {ctx.command_path} --help)" if ctx is not None else ""
            message = _one_line(exc.format_message())
            if message:  # (empty: a group run without a command, whose help was printed)
                sys.stderr.write(f"error: {message}{hint}\n")
            sys.exit(getattr(exc, "exit_code", EXIT_BAD_INPUT))
        _report(exc, debug)


def _report(exc: BaseException, debug: bool) -> NoReturn:
    """Print the one line for ``exc`` (and its traceback with ``debug``) and exit."""
    if debug:
        traceback.print_exception(exc)
    message = describe(exc)
    if message is not None:
        sys.stderr.write(f"error: {_one_line(message)}\n")
        sys.exit(EXIT_BAD_INPUT)
    sys.stderr.write(
        f"error: internal error {type(exc).__name__}: {_one_line(str(exc))} "
        f"(a bug: run with {DEBUG_FLAG} for the traceback and report it)\n"
    )
    sys.exit(EXIT_INTERNAL)


def _one_line(text: str) -> str:
    return " ".join(text.split())
