"""The output files' column reference (the docs' tables), generated through the real export.

The tables are built from an actual (tiny) result, so they list exactly the columns and units
that the Parquet files carry; the documentation site renders them at build time
(``scripts/mkdocs_hooks.py``), so they never fall behind the declarations.
"""

from __future__ import annotations

TINY = """
[sweep]
name = "columns"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [1]
context = [512]
[serving]
prompt_tokens = [512]
output_tokens = [128]
arrival_rate = [1.0]
"""


def column_reference() -> str:
    """Markdown tables of every output file's columns with unit and meaning."""
    from sweeps.config import parse_config
    from sweeps.export.parquet import column_info, frames
    from sweeps.grid import build_grid

    tables = frames(build_grid(parse_config(TINY)))
    parts = []
    for name, frame in tables.items():
        parts.append(f"**`{name}.parquet`**\n")
        parts.append("| column | unit | meaning |\n|---|---|---|")
        for column, info in column_info(frame, name).items():
            parts.append(f"| `{column}` | {info['unit']} | {info['description']} |")
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"
