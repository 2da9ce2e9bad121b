"""Trace labels in the summaries: the full file name and the SWF header's machine words."""

from __future__ import annotations

from pathlib import Path

from metasched.experiments import ernemann2002
from metasched.experiments.traces import trace_words

JOB = "    1      0    0    10    1  -1 -1    1    20 -1  1  1  1 -1  1 -1 -1 -1\n"


def _swf(path: Path, header: str) -> Path:
    path.write_text(header + JOB)
    return path


def test_two_logs_of_one_site_read_apart(tmp_path: Path) -> None:
    a = _swf(
        tmp_path / "SDSC-SP2-1998-4.2-cln.swf",
        "; Computer: IBM SP2\n; Installation: San Diego Supercomputer Center\n; MaxProcs: 128\n",
    )
    b = _swf(tmp_path / "SDSC-BLUE-2000-4.2-cln.swf", "; Computer: IBM SP\n; MaxProcs: 1152\n; MaxNodes: 144\n")
    assert trace_words(a) == (
        "SDSC-SP2-1998-4.2-cln.swf (Computer: IBM SP2, Installation: San Diego Supercomputer Center, MaxProcs: 128)"
    )
    assert trace_words(b) == "SDSC-BLUE-2000-4.2-cln.swf (Computer: IBM SP, MaxProcs: 1152)"


def test_a_trace_without_those_words_is_its_file_name(tmp_path: Path) -> None:
    assert trace_words(_swf(tmp_path / "mine.swf", "; Note: hand-made\n")) == "mine.swf"


def test_ernemann2002_setup_names_the_header(tmp_path: Path) -> None:
    path = _swf(tmp_path / "CTC-SP2-1996-3.1-cln.swf", "; Computer: IBM SP2\n; MaxProcs: 512\n")
    lines = ernemann2002.describe_setup({"CTC": path}, {}, {})
    assert lines[0].startswith("Trace CTC: CTC-SP2-1996-3.1-cln.swf (Computer: IBM SP2, MaxProcs: 512); ")
