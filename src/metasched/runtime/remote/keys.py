"""The placeholder's restricted key: make the key pair and the ``authorized_keys`` line that confines it.

Seed 003, section 3: placeholders use "a special-purpose public-private key pair", and "should a
malicious user acquire the private key of the placeholder, the damage would be limited". We limit
it further than Trellis did: the line starts with OpenSSH's ``restrict`` (no pty, no port, agent or
X11 forwarding, no ``~/.ssh/rc``) and forces ``command=`` to the gateway
(:mod:`metasched.runtime.remote.gateway`) pinned to one site, optionally with ``from=`` limiting the
source addresses. A stolen key can then claim, heartbeat and complete as that site's placeholders,
and nothing else.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

_KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
_FROM = re.compile(r"^!?[A-Za-z0-9.*?:/_-]+$")


def parse_public_key(text: str) -> str:
    """``type base64 [comment]`` -> ``type base64`` (the comment dropped); raises :class:`ValueError` otherwise."""
    parts = text.strip().split()
    if len(parts) < 2 or parts[0] not in _KEY_TYPES or not _BASE64.match(parts[1]):
        raise ValueError(f"not an OpenSSH public key (expected '<type> <base64> [comment]'): {text.strip()[:60]!r}")
    return f"{parts[0]} {parts[1]}"


def gateway_command(
    *,
    url: str,
    token_file: str | Path,
    site: str,
    python: str = sys.executable,
    gateway: str | Path | None = None,
    timeout_s: float = 30.0,
) -> str:
    """The forced command: ``python -I -S <gateway.py>`` pinned to ``site``.

    The gateway file is run directly, isolated and without ``site`` (it needs only the standard
    library): one bare interpreter start per request instead of the CLI's imports. ``gateway``
    defaults to this installation's :mod:`metasched.runtime.remote.gateway` file.
    """
    from metasched.runtime.remote import gateway as module

    script = str(gateway) if gateway is not None else module.__file__
    return shlex.join(
        [
            python,
            "-I",
            "-S",
            str(script),
            "--url",
            url,
            "--token-file",
            str(token_file),
            "--site",
            site,
            "--timeout",
            f"{timeout_s:g}",
        ]
    )


def authorized_keys_line(
    public_key: str,
    command: str,
    *,
    from_hosts: Sequence[str] = (),
    environment: dict[str, str] | None = None,
    comment: str = "metasched placeholder",
) -> str:
    """One ``authorized_keys`` line confining ``public_key`` to ``command``.

    Invariant: the line begins with ``restrict`` and has exactly one ``command=`` option, and no
    option value contains an unescaped double quote (sshd would end the value there).
    ``environment`` needs ``PermitUserEnvironment`` on the server, so it is rarely useful; prefer
    putting variables in ``command`` (``env K=V ...``).
    """
    key = parse_public_key(public_key)
    if "\n" in command or "\r" in command:
        raise ValueError("the forced command must be one line")
    options = ["restrict", f'command="{_escape(command)}"']
    if from_hosts:
        for host in from_hosts:
            if not _FROM.match(host):
                raise ValueError(f"bad from= pattern {host!r}")
        options.append(f'from="{",".join(from_hosts)}"')
    for name, value in (environment or {}).items():
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            raise ValueError(f"bad environment variable name {name!r}")
        options.append(f'environment="{name}={_escape(value)}"')
    safe_comment = re.sub(r"\s+", "-", comment.strip()) if comment.strip() else ""
    return " ".join([",".join(options), key, *([safe_comment] if safe_comment else [])])


def generate_keypair(path: Path, *, comment: str = "metasched-placeholder", overwrite: bool = False) -> Path:
    """Make an ed25519 key pair without passphrase at ``path`` (+ ``.pub``); returns the public key's path.

    Refuses to replace an existing key unless ``overwrite``: every site holding the old public key
    would lose its placeholders' access.
    """
    path = Path(path)
    pub = path.with_name(path.name + ".pub")
    if path.exists() and not overwrite:
        if not pub.exists():
            raise FileExistsError(f"{path} exists but {pub} does not; remove it or pass overwrite")
        return pub
    path.parent.mkdir(parents=True, exist_ok=True)
    for p in (path, pub):
        p.unlink(missing_ok=True)
    proc = subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"ssh-keygen failed: {proc.stderr.strip()}")
    path.chmod(0o600)
    return pub


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
