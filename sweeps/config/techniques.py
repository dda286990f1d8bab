"""Speculative drafts and KV tiers: the records of the ``spec_draft`` and ``kv_tier`` axes.

A draft is ``ngram`` (prompt lookup: free), ``mtp`` (the target's own multi-token-prediction
heads, one mean layer per draft token) or a draft model (a catalog id or a ``[models.*]``
table, smaller than every target). A tier is ``hbm`` (the prefix stays in device memory:
nothing to reload), ``host`` (over the device's host link, the catalog's
``host_link_bandwidth``), ``nvme`` or a ``[kv_tiers.*]`` table. Imports nothing heavy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweeps.catalog import Model
from sweeps.errors import CatalogError

NGRAM, MTP = "ngram", "mtp"
BUILTIN_DRAFTS = (NGRAM, MTP)

HBM, HOST, NVME = "hbm", "host", "nvme"
BUILTIN_TIERS = (HBM, HOST, NVME)

NVME_BANDWIDTH = 14e9 / 8
"""The ``nvme`` tier per device [byte/s]: one PCIe Gen5 x4 NVMe drive (about 14 GB/s of
sequential read, the class of Samsung PM1743 / Micron 9550 datasheets) shared by the 8 devices
of a node, 1.75 GB/s a device. Give a ``[kv_tiers.*]`` table for another layout."""


@dataclass(frozen=True, slots=True)
class Draft:
    """One value of the ``spec_draft`` axis.

    id : Its label (``ngram``, ``mtp`` or the model's id)
    kind : ``ngram``, ``mtp`` or ``model``
    model : The draft model (``kind == "model"``), else None
    """

    id: str
    kind: str
    model: Model | None = None


@dataclass(frozen=True, slots=True)
class KvTier:
    """One value of the ``kv_tier`` axis.

    id : Its label
    bandwidth : Tier-to-HBM bandwidth per device [byte/s]; ``inf`` for hbm; None for host,
        whose bandwidth is each device's ``host_link_bandwidth``
    capacity : Bytes held per device [byte]; None: unknown (hbm: what the weights leave)
    source : Where the figures come from
    """

    id: str
    bandwidth: float | None
    capacity: float | None = None
    source: str = ""

    def bandwidth_on(self, device: Any) -> float:
        """The tier's bandwidth per device on ``device`` [byte/s] (NaN: unknown)."""
        if self.bandwidth is not None:
            return self.bandwidth
        link = getattr(device, "host_link_bandwidth", None)
        return math.nan if link is None else float(link)


BUILTIN_TIER_RECORDS = {
    HBM: KvTier(HBM, math.inf, None, "device memory: the prefix is already in HBM"),
    HOST: KvTier(HOST, None, None, "the device's host link (catalog host_link_bandwidth)"),
    NVME: KvTier(NVME, NVME_BANDWIDTH, None, "PCIe Gen5 x4 NVMe, 14 GB/s shared by 8 devices"),
}


Problem = tuple[str, str]
"""A key relative to ``[axes]`` and its message."""


def resolve_drafts(
    names: Sequence[str],
    targets: Sequence[Model],
    custom: Mapping[str, Model],
    catalog: Any,
) -> tuple[tuple[Draft, ...], list[Problem]]:
    """The draft records of ``spec_draft`` (``[models.*]`` tables first, then catalog ids and
    aliases); a draft model must be smaller than every target (fewer parameters)."""
    out: list[Draft] = []
    problems: list[Problem] = []
    for index, name in enumerate(names):
        key = f"spec_draft[{index}]"
        if name in BUILTIN_DRAFTS:
            out.append(Draft(name, name))
            continue
        model = custom.get(name) or catalog.models.get(name)
        if model is None:
            try:
                model = catalog.lookup_model(name)
            except CatalogError as error:
                problems.append((key, f"{error}; or one of {list(BUILTIN_DRAFTS)}"))
                continue
        for target in targets:
            if model.params >= target.params:
                problems.append(
                    (
                        key,
                        f"draft model {name!r} ({model.params:.4g} parameters) is not smaller "
                        f"than the target {target.id!r} ({target.params:.4g}); allowed: a "
                        f"model smaller than every target, or {list(BUILTIN_DRAFTS)}",
                    )
                )
        out.append(Draft(model.id, "model", model))
    return tuple(out), problems


def resolve_tiers(
    names: Sequence[str], custom: Mapping[str, Any], hardware: Sequence[Any]
) -> tuple[tuple[KvTier, ...], list[Problem]]:
    """The tier records of ``kv_tier``: ``[kv_tiers.*]`` tables first, then the built-ins;
    ``host`` needs every device's host link bandwidth."""
    out: list[KvTier] = []
    problems: list[Problem] = []
    for index, name in enumerate(names):
        key = f"kv_tier[{index}]"
        table = custom.get(name)
        if table is not None:
            out.append(KvTier(name, table.bandwidth, table.capacity, table.source))
            continue
        tier = BUILTIN_TIER_RECORDS.get(name)
        if tier is None:
            allowed = [*BUILTIN_TIERS, *custom]
            problems.append(
                (key, f"unknown tier {name!r}; allowed: {allowed} or a [kv_tiers.*] table")
            )
            continue
        for device in hardware if tier.bandwidth is None else ():
            if getattr(device, "host_link_bandwidth", None) is None:
                problems.append(
                    (
                        key,
                        f"'host' needs the host link bandwidth of hardware {device.id!r}, "
                        "which has none; give a [kv_tiers.*] table with its bandwidth",
                    )
                )
        out.append(tier)
    return tuple(out), problems


def draft_records(
    values: Mapping[str, tuple[Any, ...]], axes: Mapping[str, Any], sources: Mapping[str, Any]
) -> tuple[dict[str, tuple[Any, ...]], list[Problem]]:
    """``Study.records`` of the speculative study: the drafts resolved."""
    drafts, problems = resolve_drafts(
        values["spec_draft"], axes["models"], sources["models"], sources["catalog"]
    )
    return {"spec_draft": drafts}, problems


def tier_records(
    values: Mapping[str, tuple[Any, ...]], axes: Mapping[str, Any], sources: Mapping[str, Any]
) -> tuple[dict[str, tuple[Any, ...]], list[Problem]]:
    """``Study.records`` of the prefix study: the tiers resolved."""
    tiers, problems = resolve_tiers(values["kv_tier"], sources["config"].kv_tiers, axes["hardware"])
    return {"kv_tier": tiers}, problems
