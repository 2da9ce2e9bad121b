"""write_rows_csv and its reading twin read_rows_csv: the values come back as they were written."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metasched.sim.metrics import read_rows_csv, write_rows_csv


def test_numbers_come_back_as_numbers_and_text_as_text(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    write_rows_csv(path, [{"name": "007", "n": 3, "x": 0.25, "big": 1e300}, {"name": "b", "n": -1, "x": 2.0, "big": 0}])
    rows = read_rows_csv(path, ["name"])
    assert rows == [{"name": "007", "n": 3, "x": 0.25, "big": 1e300}, {"name": "b", "n": -1, "x": 2.0, "big": 0}]
    assert isinstance(rows[1]["x"], float) and isinstance(rows[1]["big"], int)


@given(
    st.lists(st.tuples(st.integers(-(10**12), 10**12), st.floats(allow_nan=False, allow_infinity=False)), max_size=20)
)
def test_written_values_read_back_equal(
    tmp_path_factory: pytest.TempPathFactory, values: list[tuple[int, float]]
) -> None:
    path = tmp_path_factory.mktemp("rows") / "rows.csv"
    rows = [{"i": i, "f": f} for i, f in values]
    write_rows_csv(path, rows)
    assert read_rows_csv(path) == rows if rows else path.read_text() == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a,b\n1,2\n3,x\n", r":3: b is not a number: 'x'$"),
        ("a,b\n1,2\n3\n", r":3: not as many cells as columns$"),
        ("a,b\n1,2,3\n", r":2: not as many cells as columns$"),
    ],
)
def test_a_bad_row_is_named_by_file_and_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=str(path).replace(".", r"\.") + message):
        read_rows_csv(path)
