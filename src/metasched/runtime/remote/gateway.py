"""The SSH gateway: the forced command behind a placeholder's restricted key (the Trellis transport).

Seed 003, section 3: "placeholders contact the command-line server via Secure Shell. Placeholders use
a special-purpose public-private key pair that allows it to authenticate and invoke the command-line
server on the remote system." Here the key's ``authorized_keys`` line on the metaqueue host says
``restrict,command="... gateway --url URL --token-file F --site S"`` (see
:mod:`metasched.runtime.remote.keys`), so whatever the placeholder asks for, sshd runs this program
with the request in ``SSH_ORIGINAL_COMMAND``:

    ssh -i placeholder_key METAQUEUE_HOST metasched claim < body.json

The gateway allows only the protocol verbs (``hello``, ``claim``, ``heartbeat``, ``complete``,
``bye``) and relays each one, unchanged, to the running metaqueue server's HTTP API
(``POST /v1/<verb>`` with the server's bearer token, which the placeholder never sees). The answer
is the server's, so the semantics are the HTTP transport's by construction: exactly-once claims,
leases, WAIT/EXIT. The body is a JSON object on standard input; ``key=value`` words after the verb
are merged into it (values parsed as JSON when they parse, else strings), for hand use.

``ssh ... metasched session`` keeps one channel open for a placeholder's whole life instead: one
JSON request per line (``{"verb": "claim", "body": {...}}``) in, one JSON line
(``{"status": 0|2|3, "answer": ..., "error": "..."}``) out, with the same checks. A request then
costs a round trip on an open channel, not a new SSH session and a Python start.

A key is pinned to one site (``--site``): a request naming another site, or another site's placeholder
(the site manager names them ``<site>-<random>``), is refused, so a private key copied off one cluster
cannot pull work, or renew or complete jobs, as another.

Exit status (what the placeholder's SSH transport maps to errors): 0 = the server's JSON answer is
on stdout; 2 = refused (verb not allowed, bad body, wrong site, the server said 4xx);
3 = the metaqueue is unavailable (not running, 5xx, timeout): retry later.

Only a few standard-library modules are imported, so each request costs one small Python start (this
module must stay that way: it runs once per placeholder request, and it must run as a lone file,
``python3 -S gateway.py``, with nothing installed).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

VERBS: tuple[str, ...] = ("hello", "claim", "heartbeat", "complete", "bye")
#: The first word a placeholder may put before the verb (``ssh host metasched claim``).
PROGRAM_WORDS: tuple[str, ...] = ("metasched",)
#: A long-lived channel: one JSON request per line in, one JSON answer per line out.
SESSION = "session"
MAX_BODY_BYTES = 1 << 20
#: The shortest token relayed: ``metasched.runtime.metaqueue.secure.MIN_TOKEN_CHARS`` (repeated here: this
#: file runs alone, importing nothing of ours; a test keeps the two equal).
MIN_TOKEN_CHARS = 16

EXIT_OK = 0
EXIT_REFUSED = 2
EXIT_UNAVAILABLE = 3


class GatewayRefusal(Exception):
    """A request the gateway will not relay; the message goes to the placeholder's stderr."""


def parse_request(
    original_command: str | None, body_text: str, *, site: str | None = None
) -> tuple[str, dict[str, Any]]:
    """``SSH_ORIGINAL_COMMAND`` and stdin -> (verb, JSON body). Raises :class:`GatewayRefusal`.

    Invariant: the verb returned is in :data:`VERBS` (or is :data:`SESSION`, then the body is
    empty); when ``site`` is pinned, a body that names a site names that one (a missing ``site`` is
    filled in for ``hello`` and ``claim``).
    """
    if original_command is None or not original_command.strip():
        raise GatewayRefusal("this key only runs the metasched placeholder protocol; no shell, no login")
    try:
        words = shlex.split(original_command)
    except ValueError as exc:
        raise GatewayRefusal(f"cannot parse the command: {exc}") from None
    if words and words[0] in PROGRAM_WORDS:
        words = words[1:]
    if words == [SESSION]:
        return SESSION, {}
    if not words or words[0] not in VERBS:
        asked = words[0] if words else ""
        raise GatewayRefusal(f"verb {asked!r} not allowed; allowed: {', '.join((*VERBS, SESSION))}")
    verb, args = words[0], words[1:]
    if len(body_text.encode()) > MAX_BODY_BYTES:
        raise GatewayRefusal(f"request body larger than {MAX_BODY_BYTES} bytes")
    body: dict[str, Any] = {}
    if body_text.strip():
        body = _json_object(body_text, "the request body")
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or not key:
            raise GatewayRefusal(f"argument {arg!r} is not key=value")
        try:
            body[key] = json.loads(value)
        except json.JSONDecodeError:
            body[key] = value
    return verb, pin_site(verb, body, site)


def parse_session_line(line: str, *, site: str | None = None) -> tuple[str, dict[str, Any]]:
    """One session request ``{"verb": ..., "body": {...}}`` -> (verb, body), with the same checks."""
    request = _json_object(line, "a session request")
    verb, body = request.get("verb"), request.get("body", {})
    if verb not in VERBS:
        raise GatewayRefusal(f"verb {verb!r} not allowed; allowed: {', '.join(VERBS)}")
    if not isinstance(body, dict):
        raise GatewayRefusal("the request body must be a JSON object")
    return verb, pin_site(verb, body, site)


def pin_site(verb: str, body: dict[str, Any], site: str | None) -> dict[str, Any]:
    """Refuse a body naming another site than the key's; fill the site in where the server needs it."""
    if site is not None:
        named = body.get("site")
        if named is not None and named != site:
            raise GatewayRefusal(f"this key may act for site {site!r} only, not {named!r}")
        # The site manager names its placeholders "<site>-<random>": another site's are out of reach too.
        placeholder = body.get("placeholder_id")
        if placeholder is not None and not str(placeholder).startswith(f"{site}-"):
            raise GatewayRefusal(f"this key may act for placeholders of site {site!r} only, not {placeholder!r}")
        if verb in ("hello", "claim"):
            body["site"] = site
        # A report may carry the next claim (one round trip): it is pinned like a claim.
        nested = body.get("claim")
        if verb == "complete" and nested is not None:
            if not isinstance(nested, dict):
                raise GatewayRefusal("the claim inside a report must be a JSON object")
            body["claim"] = pin_site("claim", nested, site)
    return body


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        loaded = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GatewayRefusal(f"{what} is not JSON: {exc}") from None
    if not isinstance(loaded, dict):
        raise GatewayRefusal(f"{what} must be a JSON object")
    return loaded


def split_url(url: str) -> tuple[str, str, int, str]:
    """``http(s)://host[:port][/prefix]`` -> (scheme, host, port, prefix); raises :class:`ValueError`."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("http", "https"):
        raise ValueError(f"metaqueue URL must be http(s)://host[:port], got {url!r}")
    hostport, _, path = rest.partition("/")
    host, port = hostport, 443 if scheme == "https" else 80
    if hostport.startswith("["):  # [IPv6]:port
        host, _, tail = hostport[1:].partition("]")
        if tail.startswith(":"):
            port = int(tail[1:])
    elif ":" in hostport:
        host, _, p = hostport.rpartition(":")
        port = int(p)
    if not host:
        raise ValueError(f"metaqueue URL has no host: {url!r}")
    return scheme, host, port, ("/" + path).rstrip("/")


def relay(url: str, token: str, verb: str, body: Mapping[str, Any], *, timeout_s: float) -> tuple[int, bytes]:
    """POST ``body`` to ``url/v1/<verb>`` with the bearer token; returns (HTTP status, response body).

    A plain HTTP/1.1 exchange on a socket (``Connection: close``), not :mod:`http.client`, whose
    imports (email, ssl) cost more than the whole request on a busy login node.
    Raises :class:`OSError` when the server cannot be reached, :class:`ValueError` on a garbled answer.
    """
    import socket

    scheme, host, port, prefix = split_url(url)
    payload = json.dumps(body).encode()
    head = (
        f"POST {prefix}/v1/{verb} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
    ).encode()
    sock: Any = socket.create_connection((host, port), timeout=timeout_s)
    try:
        if scheme == "https":
            import ssl

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        sock.sendall(head + payload)
        chunks = []
        while True:
            data = sock.recv(65536)
            if not data:
                break
            chunks.append(data)
    finally:
        sock.close()
    return parse_response(b"".join(chunks))


def parse_response(raw: bytes) -> tuple[int, bytes]:
    """An HTTP/1.1 response read to EOF -> (status, body); handles Content-Length and chunked bodies."""
    head, sep, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split()
    if not sep or len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP response: {raw[:80]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0] or b"0", 16)
            if size == 0:
                break
            body += rest[:size]
            rest = rest[size + 2 :]
        return int(parts[1]), bytes(body)
    if "content-length" in headers:
        rest = rest[: int(headers["content-length"])]
    return int(parts[1]), rest


USAGE = "usage: gateway --url URL --token-file FILE [--site NAME] [--timeout SECONDS]"


def parse_args(argv: Sequence[str]) -> dict[str, str]:
    """The forced command's options (hand-parsed: :mod:`argparse` costs a noticeable part of a request)."""
    known = {"--url": "url", "--token-file": "token_file", "--site": "site", "--timeout": "timeout"}
    out: dict[str, str] = {"timeout": "30"}
    words = list(argv)
    while words:
        word = words.pop(0)
        name, eq, value = word.partition("=")
        if name not in known:
            raise GatewayRefusal(f"gateway misconfigured: unknown option {word!r}; {USAGE}")
        if not eq:
            if not words:
                raise GatewayRefusal(f"gateway misconfigured: {name} needs a value; {USAGE}")
            value = words.pop(0)
        out[known[name]] = value
    for required in ("url", "token_file"):
        if required not in out:
            raise GatewayRefusal(f"gateway misconfigured: --{required.replace('_', '-')} is required; {USAGE}")
    return out


def read_token(path: str) -> str:
    """The server's token from ``path``; :class:`GatewayRefusal` when it is empty or short (an empty token is
    never sent: it would mean no authentication at all); ``OSError`` when it cannot be read (yet)."""
    with open(path, "rb") as fh:
        token = fh.read().decode("utf-8", errors="replace").strip()
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise GatewayRefusal(
            f"the server token in {path} is unusable ({len(token)} characters, at least {MIN_TOKEN_CHARS} "
            "without whitespace needed)"
        )
    return token


def handle(verb: str, body: Mapping[str, Any], opts: Mapping[str, str]) -> tuple[int, str, str]:
    """Relay one checked request -> (exit status, answer text, error message)."""
    try:
        token = read_token(opts["token_file"])
    except GatewayRefusal as exc:
        return EXIT_REFUSED, "", str(exc)
    except OSError as exc:
        return EXIT_UNAVAILABLE, "", f"cannot read the server token, {opts['token_file']}: {exc.strerror}"
    try:
        status, answer = relay(opts["url"], token, verb, body, timeout_s=float(opts["timeout"]))
    except (OSError, ValueError) as exc:
        return EXIT_UNAVAILABLE, "", f"metaqueue server unreachable at {opts['url']}: {exc}"
    text = answer.decode(errors="replace")
    if status >= 500:
        return EXIT_UNAVAILABLE, "", f"server error {status}: {text[:200]}"
    if status >= 400:
        return EXIT_REFUSED, "", f"server refused {verb}: {status} {text[:200]}"
    return EXIT_OK, text, ""


def serve(
    argv: Sequence[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Handle one request, or a session of them; returns the exit status (see the module docstring)."""
    environ = os.environ if environ is None else environ
    stdin = sys.stdin if stdin is None else stdin
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    try:
        opts = parse_args(sys.argv[1:] if argv is None else argv)
        command = environ.get("SSH_ORIGINAL_COMMAND")
        is_session = command is not None and command.split()[-1:] == [SESSION]
        verb, body = parse_request(command, "" if is_session else stdin.read(MAX_BODY_BYTES + 1), site=opts.get("site"))
    except GatewayRefusal as exc:
        print(f"metasched gateway: refused: {exc}", file=stderr)
        return EXIT_REFUSED
    if verb == SESSION:
        return _session(opts, stdin, stdout)
    code, text, error = handle(verb, body, opts)
    if code != EXIT_OK:
        print(f"metasched gateway: {error}", file=stderr)
        return code
    stdout.write(text)
    stdout.flush()
    return EXIT_OK


def _session(opts: Mapping[str, str], stdin: TextIO, stdout: TextIO) -> int:
    """Answer one JSON line per request line until EOF: ``{"status": 0|2|3, "answer": ..., "error": ...}``."""
    while True:
        line = stdin.readline(MAX_BODY_BYTES + 1)
        if not line:
            return EXIT_OK
        if not line.strip():
            continue
        try:
            verb, body = parse_session_line(line, site=opts.get("site"))
        except GatewayRefusal as exc:
            code, text, error = EXIT_REFUSED, "", f"refused: {exc}"
        else:
            code, text, error = handle(verb, body, opts)
        answer: Any = None
        if code == EXIT_OK:
            try:
                answer = json.loads(text)
            except json.JSONDecodeError:
                code, error = EXIT_UNAVAILABLE, f"server answered non-JSON: {text[:200]!r}"
        stdout.write(json.dumps({"status": code, "answer": answer, "error": error}) + "\n")
        stdout.flush()


if __name__ == "__main__":  # pragma: no cover - the forced command's entry point
    sys.exit(serve())
