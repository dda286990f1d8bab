"""Regenerate the README's output-column tables from the export (``sweeps.export.columns``).

Run from the repository root: ``python scripts/update_readme.py``. The tables sit between
``START`` and ``END``; everything else in the README is left as it is.
"""

from __future__ import annotations

from pathlib import Path

from sweeps.export.columns import column_reference

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- columns:start -->", "<!-- columns:end -->"


def update_readme(text: str) -> str:
    """``text`` with the block between the column markers replaced by ``column_reference()``."""
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    return f"{head}{START}\n{column_reference()}{END}{tail}"


if __name__ == "__main__":
    README.write_text(update_readme(README.read_text(encoding="utf-8")), encoding="utf-8")
