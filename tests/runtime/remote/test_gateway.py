"""The SSH gateway: which requests it lets through, and how it relays them (no sshd needed here)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from metasched.runtime.remote.gateway import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    MAX_BODY_BYTES,
    GatewayRefusal,
    parse_request,
    parse_response,
    serve,
    split_url,
)

from .relay_server import relay_server


def test_parse_accepts_protocol_verbs_with_or_without_program_word() -> None:
    assert parse_request("metasched claim", '{"placeholder_id": "p1", "cpus": 2}') == (
        "claim",
        {"placeholder_id": "p1", "cpus": 2},
    )
    assert parse_request("heartbeat placeholder_id=p1", "") == ("heartbeat", {"placeholder_id": "p1"})
    assert parse_request("claim cpus=4 remaining_s=null name='a b'", "") == (
        "claim",
        {"cpus": 4, "remaining_s": None, "name": "a b"},
    )


@pytest.mark.parametrize(
    ("command", "body", "message"),
    [
        (None, "", "no shell, no login"),
        ("   ", "", "no shell, no login"),
        ("bash -i", "", "verb 'bash' not allowed"),
        ("metasched", "", "verb '' not allowed"),
        ("metasched submit x", "", "verb 'submit' not allowed"),
        ("claim; rm -rf ~", "", "not allowed"),
        ("claim 'unterminated", "", "cannot parse"),
        ("claim", "[1, 2]", "must be a JSON object"),
        ("claim", "{nope", "not JSON"),
        ("claim cpus", "", "not key=value"),
        ("claim", "x" * (MAX_BODY_BYTES + 1), "larger than"),
    ],
)
def test_parse_refuses(command: str | None, body: str, message: str) -> None:
    with pytest.raises(GatewayRefusal, match=message):
        parse_request(command, body)


def test_site_pin_fills_in_and_refuses_other_sites() -> None:
    assert parse_request("claim", '{"placeholder_id": "A-p"}', site="A")[1]["site"] == "A"
    assert parse_request("hello", '{"site": "A"}', site="A")[1]["site"] == "A"
    assert "site" not in parse_request("heartbeat", '{"placeholder_id": "A-p"}', site="A")[1]
    with pytest.raises(GatewayRefusal, match="placeholders of site 'A' only"):
        parse_request("complete", '{"placeholder_id": "B-p", "results": []}', site="A")
    with pytest.raises(GatewayRefusal, match="site 'A' only"):
        parse_request("claim", '{"site": "B"}', site="A")
    # The next claim carried by a report is pinned too.
    report = parse_request("complete", '{"placeholder_id": "A-p", "claim": {"placeholder_id": "A-p"}}', site="A")[1]
    assert report["claim"]["site"] == "A"
    with pytest.raises(GatewayRefusal, match="site 'A' only"):
        parse_request(
            "complete", '{"placeholder_id": "A-p", "claim": {"placeholder_id": "A-p", "site": "B"}}', site="A"
        )
    with pytest.raises(GatewayRefusal, match="placeholders of site 'A' only"):
        parse_request("complete", '{"placeholder_id": "A-p", "claim": {"placeholder_id": "B-p"}}', site="A")
    with pytest.raises(GatewayRefusal, match="must be a JSON object"):
        parse_request("complete", '{"placeholder_id": "A-p", "claim": [1]}', site="A")


def _serve(url: str, token_file: Path, command: str | None, body: str, site: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["--url", url, "--token-file", str(token_file), "--timeout", "5"] + (["--site", site] if site else [])
    env = {} if command is None else {"SSH_ORIGINAL_COMMAND": command}
    rc = serve(argv, environ=env, stdin=io.StringIO(body), stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


def test_serve_relays_to_the_server_with_its_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("s3cret-0123456789\n")
    with relay_server("s3cret-0123456789") as server:
        server.answer = {"action": "run", "jobs": [{"job_id": 7}]}
        rc, out, err = _serve(server.url, token_file, "metasched claim", '{"placeholder_id": "A-p1"}', site="A")
        assert (rc, json.loads(out), err) == (EXIT_OK, server.answer, "")
        assert server.requests == [("/v1/claim", {"placeholder_id": "A-p1", "site": "A"})]
        server.status = 409
        rc, out, err = _serve(server.url, token_file, "complete", "{}")
        assert (rc, out) == (EXIT_REFUSED, "") and "server refused complete: 409" in err
        server.status = 503
        assert _serve(server.url, token_file, "bye", "{}")[0] == EXIT_UNAVAILABLE
        token_file.write_text("wrong-0123456789abcdef")
        rc, _, err = _serve(server.url, token_file, "claim", "{}")
        assert rc == EXIT_REFUSED and "401" in err
    # A refused request never reaches the server.
    with relay_server("s3cret-0123456789") as server:
        assert _serve(server.url, token_file, "sh -c id", "")[0] == EXIT_REFUSED
        assert server.requests == []


def test_serve_reports_an_unreachable_server(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("t-0123456789abcdef")
    rc, _, err = _serve("http://127.0.0.1:1", token_file, "claim", "{}")
    assert rc == EXIT_UNAVAILABLE and "unreachable" in err
    rc, _, err = _serve("http://127.0.0.1:1", tmp_path / "missing", "claim", "{}")
    assert rc == EXIT_UNAVAILABLE and "cannot read the server token" in err


def test_parse_response_content_length_and_chunked() -> None:
    assert parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}garbage") == (200, b"{}")
    chunked = b"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"
    assert parse_response(chunked) == (409, b"abcde")
    with pytest.raises(ValueError, match="not an HTTP response"):
        parse_response(b"SSH-2.0-OpenSSH\r\n")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://127.0.0.1:8765", ("http", "127.0.0.1", 8765, "")),
        ("https://mq.example.org/api/", ("https", "mq.example.org", 443, "/api")),
        ("http://[::1]:9000/x", ("http", "::1", 9000, "/x")),
    ],
)
def test_split_url(url: str, expected: tuple[str, str, int, str]) -> None:
    assert split_url(url) == expected


def test_misconfigured_forced_command_is_refused(tmp_path: Path) -> None:
    err = io.StringIO()
    rc = serve(["--token-file", "x"], environ={"SSH_ORIGINAL_COMMAND": "claim"}, stdin=io.StringIO(""), stderr=err)
    assert rc == EXIT_REFUSED and "--url is required" in err.getvalue()
    with pytest.raises(ValueError, match="must be http"):
        split_url("ftp://x")
