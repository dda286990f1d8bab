"""Regenerate the README's output-column tables from the variable registry.

Run from the repository root: ``python scripts/update_readme.py``.
"""

from __future__ import annotations

from pathlib import Path

from sweeps.readme import update_readme

README = Path(__file__).resolve().parent.parent / "README.md"

if __name__ == "__main__":
    README.write_text(update_readme(README.read_text(encoding="utf-8")), encoding="utf-8")
