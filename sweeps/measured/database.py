"""Where the measured kernel database is and what it holds: devices, engines and versions.

The database is NVIDIA's ``aiconfigurator-core`` (Apache-2.0), installed by the ``measured``
extra: per-kernel latencies measured on real devices under
``aiconfigurator_core/systems/data/<system>/<op>/<engine>/<version>/*.parquet``. This module
maps the catalog's device ids to its systems and lists the engines and versions it holds for
each, from the package's files alone (nothing of it is imported here, so validating a config
stays fast). Every lookup of a latency is in ``sweeps.measured.kernels``.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeps.errors import MissingExtraError, install_hint

OPERATIONS: tuple[str, ...] = (
    "embedding",
    "qkv",
    "attention",
    "o_proj",
    "ffn_up",
    "ffn_down",
    "router",
    "experts",
    "allreduce",
    "lm_head",
    "dispatch",
    "handoff",
)
"""The operations of a step the expected pass reads from measured kernels (the labels of
kernels.parquet's ``operation`` axis), in the order they run (a dense model has no router or
experts, a MoE model no dense FFN; those are zero). ``dispatch`` (a MoE layer's dispatch and
combine under expert parallelism) and ``handoff`` (the pipeline stages' hand-offs) came later
and are appended, so that the rows before them keep their places; zero without ``ep`` or
``pp``."""


PACKAGE = "aiconfigurator-core"
"""The distribution holding the database (the ``measured`` extra)."""

ENGINES: tuple[str, ...] = ("trtllm", "vllm", "sglang")
"""The serving engines the database measured kernels under (TensorRT-LLM, vLLM, SGLang)."""

SYSTEMS: dict[str, str] = {
    "a100-80gb": "a100_sxm",
    "h100-sxm": "h100_sxm",
    "h100-pcie": "h100_pcie",
    "h200": "h200_sxm",
    "l4": "l4",
    "l40s": "l40s",
    "b200": "b200_sxm",
    "gb200": "gb200",
    "b300": "b300_sxm",
    "gb300": "gb300",
    "rtx-pro-6000": "rtx_pro_6000_server",
}
"""Catalog device id -> the database's system, where the database measured that very device
(an A100 40 GB, an H200 NVL or a GH200 differ in memory, bandwidth or power from the system
measured, so they map to none: their expectations are null, with the reason)."""

SEPARATOR = "-"
"""Between an engine and a pinned version in an ``engine`` label: ``vllm-0.24.0``."""

A2A_SEPARATOR = "_"
"""Before the MoE all-to-all backend in an ``engine`` label: ``sglang_deepep``."""

A2A_BACKENDS: dict[str, tuple[str, ...]] = {"sglang": ("deepep",)}
"""The MoE all-to-all backends an engine label may name, by engine: SGLang's DeepEP (its
``--moe-a2a-backend deepep``, off by default: the wide-EP layout, read from the database's
wide-EP tables; docs/expected.md)."""


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """One label of the ``engine`` axis: an engine, and the version asked for (None: the
    database's current version for each device, ``default_version``)."""

    engine: str
    version: str | None = None
    a2a: str = ""

    @property
    def id(self) -> str:
        """The label as written: ``vllm``, ``vllm-0.24.0`` or ``sglang_deepep``."""
        label = self.engine if self.version is None else f"{self.engine}{SEPARATOR}{self.version}"
        return f"{label}{A2A_SEPARATOR}{self.a2a}" if self.a2a else label


def parse(label: str) -> EngineChoice:
    """``vllm``, ``vllm-0.24.0`` or ``sglang-0.5.14_deepep`` as an ``EngineChoice``
    (unchecked)."""
    head, _, a2a = label.partition(A2A_SEPARATOR)
    engine, _, version = head.partition(SEPARATOR)
    return EngineChoice(engine.strip().lower(), version.strip() or None, a2a.strip().lower())


def installed() -> bool:
    """Whether the ``measured`` extra's package is installed."""
    return importlib.util.find_spec("aiconfigurator_core") is not None


def require(what: str) -> None:
    """Raise ``MissingExtraError`` naming ``what`` asked for the database, when it is missing."""
    if not installed():
        msg = (
            f"{what} needs the measured kernel database ({PACKAGE}); install the extra: "
            f"{install_hint('measured')}"
        )
        raise MissingExtraError(msg)


@functools.cache
def systems_root() -> Path:
    """The package's ``systems`` folder (``MissingExtraError`` without the extra)."""
    require("an engine")
    spec = importlib.util.find_spec("aiconfigurator_core")
    assert spec is not None
    assert spec.origin is not None
    return Path(spec.origin).parent / "systems"


def _version_key(version: str) -> tuple[Any, ...]:
    """Sort key of ``1.3.0rc20``, ``0.5.6.post2``: release numbers, then a pre-release
    (rc) before the release and a post-release after it."""
    parts: list[Any] = []
    for piece in version.replace("-", ".").split("."):
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        head = piece[: len(digits)] if piece.startswith(digits) else ""
        rest = piece[len(head) :]
        parts.append(int(head) if head else -1)
        if rest:
            tail = "".join(c for c in rest if c.isdigit())
            rank = 1 if rest.startswith("post") else -1
            parts.append((rank, int(tail) if tail else 0))
    return tuple(parts)


@functools.cache
def _slots() -> dict[str, Any]:
    import yaml  # a dependency of the measured extra

    text = (systems_root() / "query_versions.yaml").read_text(encoding="utf-8")
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def default_version(system: str, engine: str) -> str | None:
    """The database's ``current`` version of ``engine`` on ``system``: its newest complete
    collection (None: the database has no such engine there)."""
    slots = _slots()
    slot = slots.get("overrides", {}).get(system, {}).get(engine)
    slot = slot or slots.get("defaults", {}).get(engine)
    current = slot.get("current") if slot else None
    return current if current in versions(system, engine) else None


@functools.cache
def versions(system: str, engine: str) -> tuple[str, ...]:
    """The versions of ``engine`` the database holds GEMM and attention tables of on
    ``system``, oldest first."""
    root = systems_root() / "data" / system
    held = [
        {p.name for p in (root / op / engine).glob("*") if any(p.glob("*.parquet"))}
        for op in ("gemm", "attention")
    ]
    return tuple(sorted(held[0] & held[1], key=_version_key))


def system_of(device: str) -> str | None:
    """The database's system for catalog device ``device`` (None: not measured)."""
    system = SYSTEMS.get(device)
    return system if system and (systems_root() / "data" / system).is_dir() else None


def holdings(device: str) -> dict[str, tuple[str, ...]]:
    """What the database holds for ``device``: each engine's versions (empty: none)."""
    system = system_of(device)
    if system is None:
        return {}
    return {e: v for e in ENGINES if (v := versions(system, e))}


@dataclass(frozen=True, slots=True)
class Resolved:
    """An engine label on one device: the system and version to read, or the reason none."""

    system: str | None
    engine: str
    version: str | None
    reason: str = ""


def resolve(device: str, choice: EngineChoice) -> Resolved:
    """Which tables ``choice`` reads on ``device``: the version asked for, or the current one;
    None with the reason where the database has no data (the device, the engine, the
    version)."""
    system = system_of(device)
    if system is None:
        return Resolved(None, choice.engine, None, f"device {device!r} not in the database")
    held = versions(system, choice.engine)
    if not held:
        reason = f"engine {choice.engine!r} not measured on {device!r} ({system})"
        return Resolved(system, choice.engine, None, reason)
    version = choice.version or default_version(system, choice.engine) or held[-1]
    if version not in held:
        reason = f"{choice.engine} {version} not measured on {device!r}; held: {list(held)}"
        return Resolved(system, choice.engine, None, reason)
    return Resolved(system, choice.engine, version)


def choices(
    labels: tuple[str, ...], devices: tuple[Any, ...]
) -> tuple[tuple[EngineChoice, ...], list[tuple[str, str]]]:
    """The ``engine`` axis's labels as choices, and the problems: an engine the database does
    not know, a version it holds on none of ``devices`` (each problem a key of the axis and a
    message naming the value and what the database holds for each device), or the extra
    missing. A device the database does not cover is no problem: its expectations are null."""
    problems: list[tuple[str, str]] = []
    out: list[EngineChoice] = []
    if not installed():
        return (), [
            (
                "engine",
                f"needs the measured kernel database; {install_hint('measured')} ({PACKAGE})",
            )
        ]
    for index, label in enumerate(labels):
        key, choice = f"engine[{index}]", parse(str(label))
        if choice.engine not in ENGINES:
            problems.append(
                (
                    key,
                    f"unknown engine {label!r}; allowed: {list(ENGINES)}, each optionally -version",
                )
            )
            continue
        if choice.a2a and choice.a2a not in A2A_BACKENDS.get(choice.engine, ()):
            allowed = [e + A2A_SEPARATOR + b for e, bs in A2A_BACKENDS.items() for b in bs]
            problems.append(
                (
                    key,
                    f"unknown MoE all-to-all backend {choice.a2a!r} for {choice.engine}; "
                    f"allowed: {allowed}",
                )
            )
            continue
        if choice.version is not None:
            held = {d.id: holdings(d.id).get(choice.engine, ()) for d in devices}
            covered = {d: v for d, v in held.items() if system_of(d)}
            if covered and not any(choice.version in v for v in covered.values()):
                where = "; ".join(f"{d}: {list(v)}" for d, v in covered.items())
                problems.append(
                    (
                        key,
                        f"{choice.engine} version {choice.version!r} is not in the database "
                        f"for these devices; it holds {where}",
                    )
                )
                continue
        out.append(choice)
    return tuple(out), problems
