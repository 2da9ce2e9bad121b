"""The user guide's Python examples run as written (issue 36): every ```pycon block of docs/user-guide.md
is a doctest, on a fresh embedded database, with real placeholders; so is :mod:`metasched.client`'s."""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import metasched.client

ROOT = Path(__file__).resolve().parents[2]


def _placeholder(db: str, home: Path) -> None:
    env = {**os.environ, "METASCHED_DB": db, "METASCHED_HOME": str(home)}
    argv = [sys.executable, "-m", "metasched", "placeholder", "--site", "here", "--idle-exit", "1"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


@pytest.mark.timeout(300)
def test_user_guide_python_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = f"sqlite:///{tmp_path / 'guide.db'}"
    monkeypatch.setenv("METASCHED_DB", db)
    monkeypatch.setenv("METASCHED_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs/user-guide.md").read_text()
    blocks = re.findall(r"```pycon\n(.*?)```", text, flags=re.S)
    assert blocks, "no ```pycon block in the user guide"
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    globs = {"run_placeholder": lambda: _placeholder(db, tmp_path / "home")}
    for i, block in enumerate(blocks):
        test = parser.get_doctest(block, globs, f"user-guide pycon block {i}", "docs/user-guide.md", 0)
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted > 5


def test_client_module_docstring(tmp_path: Path) -> None:
    result = doctest.testmod(metasched.client, extraglobs={"tmp": tmp_path}, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
