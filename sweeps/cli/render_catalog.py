"""``sweeps list``: the catalog as rows of plain values (``--json``, SI) and as a table.

Sources are never cut: in a terminal they follow the table as numbered notes, wrapped at its
width; ``--wide`` puts them in the table on one line each, as long as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sweeps.cli.numbers import binary, count, si
from sweeps.cli.render import units

LISTS = ("hardware", "models", "dtypes")
"""What ``sweeps list`` lists."""


def _hardware(hw: Any) -> dict[str, Any]:
    from sweeps.physics import ridge_point

    return {
        "id": hw.id,
        "name": hw.name,
        "vendor": hw.vendor,
        "memory": hw.memory,
        "bandwidth": hw.bandwidth,
        "peak_flops": dict(hw.peak_flops),
        "ridge_point": float(ridge_point(hw.peak_flops["bf16"], hw.bandwidth)),
        "source": hw.source,
    }


def _model(m: Any) -> dict[str, Any]:
    return {
        "id": m.id,
        "params": m.params,
        "active_params": m.active_params,
        "layers": m.layers,
        "heads": m.heads,
        "kv_heads": m.kv_heads,
        "head_dim": m.head_dim,
        "attention": m.attention,
        "source": m.source,
    }


def _dtype(d: Any) -> dict[str, Any]:
    return {
        "name": d.name,
        "bits": d.bits,
        "group_size": d.group_size,
        "scale_bytes": d.scale_bytes,
        "bytes_per_element": d.bytes_per_element,
        "description": d.description,
    }


UNITS = {
    "hardware": units(["memory", "bandwidth", "peak_flops", "ridge_point"]),
    "models": units(["params", "active_params", "head_dim"]),
    "dtypes": {"bits": "bit", "scale_bytes": "byte", "bytes_per_element": "byte"},
}
"""Units of the numeric fields of each list: the variable registry's (a dtype's are its own)."""


def _peak(row: dict[str, Any], dtype: str) -> str:
    peaks = row["peak_flops"]
    return si(peaks[dtype], UNITS["hardware"]["peak_flops"]) if dtype in peaks else "-"


_CELLS: dict[str, tuple[tuple[str, Callable[[dict[str, Any]], str]], ...]] = {
    "hardware": (
        ("id", lambda r: r["id"]),
        ("name", lambda r: r["name"]),
        ("bf16 dense", lambda r: _peak(r, "bf16")),
        ("fp8 dense", lambda r: _peak(r, "fp8")),
        ("bandwidth", lambda r: si(r["bandwidth"], UNITS["hardware"]["bandwidth"])),
        ("memory", lambda r: binary(r["memory"])),
        (f"ridge\n[{UNITS['hardware']['ridge_point']}]", lambda r: f"{r['ridge_point']:,.0f}"),
    ),
    "models": (
        ("id", lambda r: r["id"]),
        ("params", lambda r: count(r["params"])),
        ("active", lambda r: count(r["active_params"])),
        ("layers", lambda r: str(r["layers"])),
        ("heads", lambda r: str(r["heads"])),
        ("kv heads", lambda r: str(r["kv_heads"])),
        ("head dim", lambda r: str(r["head_dim"])),
        ("attention", lambda r: r["attention"]),
    ),
    "dtypes": (
        ("name", lambda r: r["name"]),
        ("bits", lambda r: f"{r['bits']:g}"),
        ("group", lambda r: str(r["group_size"] or "-")),
        ("scale\n[byte]", lambda r: f"{r['scale_bytes']:g}"),
        ("per element\n[byte]", lambda r: f"{r['bytes_per_element']:.6g}"),
        ("description", lambda r: r["description"]),
    ),
}
_WRAPPED = {"name", "description"}
"""Columns that may wrap in a narrow terminal; every other cell stays on one line, whole."""

_DROP: dict[str, tuple[str, ...]] = {
    "hardware": ("fp8 dense", f"ridge\n[{UNITS['hardware']['ridge_point']}]", "memory"),
    "models": ("attention", "head dim", "active"),
    "dtypes": ("group", "scale\n[byte]"),
}
"""Columns a list leaves out, in this order, when the width given is too narrow for it (the
note under the table says which; ``--json`` has them all)."""


def catalog_rows(what: str) -> list[dict[str, Any]]:
    """Every record of the ``what`` list (``hardware``, ``models``, ``dtypes``) as plain values."""
    from sweeps.catalog import load_catalog, unique

    catalog = load_catalog()
    if what == "hardware":
        return [_hardware(hw) for hw in unique(catalog.hardware)]
    if what == "models":
        return [_model(m) for m in unique(catalog.models)]
    return [_dtype(d) for d in catalog.dtypes.values()]


def catalog_document(what: str) -> dict[str, Any]:
    """``sweeps list WHAT --json``."""
    return {"list": what, "items": catalog_rows(what), "units": UNITS[what]}


def catalog_table(
    what: str, wide: bool, console: Any = None, width: int | None = None
) -> list[Any]:
    """The ``what`` list as a table, then its sources as notes (in the table with ``wide``).

    Given a ``console`` and a ``width``, columns leave in ``_DROP``'s order until the table
    fits it (its narrowest layout: names wrap, ids and numbers are never cut), and a note
    says which left."""
    from rich.measure import Measurement
    from rich.text import Text

    rows = catalog_rows(what)
    dropped: list[str] = []
    while True:
        parts = _catalog_table(what, wide, rows, dropped)
        if console is None or width is None or wide:
            return parts
        options = console.options.update_width(10_000)
        narrowest = Measurement.get(console, options, parts[0]).minimum
        left = [title for title in _DROP[what] if title not in dropped]
        if narrowest <= width or not left:
            break
        dropped.append(left[0])
    if dropped:
        names = ", ".join(title.split("\n")[0] for title in dropped)
        parts.insert(1, Text(f"left out to fit the terminal: {names} (see --wide or --json)"))
    return parts


def _catalog_table(what: str, wide: bool, rows: list[dict[str, Any]], dropped: list[str]) -> Any:
    from rich.text import Text

    from sweeps.cli.console import table as new_table

    cells = [(title, cell) for title, cell in _CELLS[what] if title not in dropped]
    table = new_table(f"catalog: {what}")
    for title, cell in cells:
        whole = wide or title not in _WRAPPED
        header = max(len(line) for line in title.split("\n"))
        widest = max([header, *(len(cell(row)) for row in rows)]) if whole else None
        table.add_column(Text(title), no_wrap=whole, min_width=widest)
    sources = "source" in rows[0] if rows else False
    notes: dict[str, int] = {}
    if sources:
        table.add_column("source" if wide else "src", no_wrap=True, min_width=5)
    for row in rows:
        values = [cell(row) for _, cell in cells]
        if sources:
            number = notes.setdefault(row["source"], len(notes) + 1)
            values.append(row["source"] if wide else f"[{number}]")
        table.add_row(*(Text(value) for value in values))
    if wide or not notes:
        return [table]
    lines = [Text(f"[{n}] {source}", overflow="fold") for source, n in notes.items()]
    return [table, Text("sources:"), *lines]
