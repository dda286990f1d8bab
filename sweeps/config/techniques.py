"""Speculative drafts and KV tiers: the records of the ``spec_draft`` and ``kv_tier`` axes.

A draft is ``ngram`` (prompt lookup: free), ``mtp`` (the target's own multi-token-prediction
heads, one mean layer per draft token) or a draft model (a catalog id or a ``[models.*]``
table, smaller than every target). A tier is ``hbm`` (the prefix stays in device memory:
nothing to reload), ``host`` (over the device's host link, the catalog's
``host_link_bandwidth``), ``nvme`` or a ``[kv_tiers.*]`` table. Imports nothing heavy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sweeps.catalog import Model
from sweeps.config.messages import Problems
from sweeps.errors import CatalogError

NGRAM, MTP = "ngram", "mtp"
BUILTIN_DRAFTS = (NGRAM, MTP)

HBM, HOST, NVME = "hbm", "host", "nvme"
BUILTIN_TIERS = (HBM, HOST, NVME)

NVME_BANDWIDTH = 14e9 / 8
"""The ``nvme`` tier per device [byte/s]: one PCIe Gen5 x4 NVMe drive (about 14 GB/s of
sequential read, the class of Samsung PM1743 / Micron 9550 datasheets) shared by the 8 devices
of a node, 1.75 GB/s a device. Give a ``[kv_tiers.*]`` table for another layout."""

SPEC_DEFAULTS: dict[str, tuple[Any, ...]] = {
    "spec_tokens": (0, 2, 4),
    "spec_acceptance": (0.6, 0.8),
    "spec_draft": (NGRAM,),
}
"""The speculative axes a config leaves out when it gives another of them."""

PREFIX_DEFAULTS: dict[str, tuple[Any, ...]] = {
    "prefix_hit_rate": (0.0, 0.5, 0.9),
    "kv_tier": (HBM,),
}
"""The prefix axes a config leaves out when it gives another of them."""


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


def resolve_drafts(
    names: Sequence[str],
    targets: Sequence[Model],
    custom: Mapping[str, Model],
    catalog: Mapping[str, Model],
    lookup: Callable[[str], Model],
    problems: Problems,
) -> tuple[Draft, ...]:
    """The draft records of ``axes.spec_draft``; a draft model must be smaller than every
    target (its parameters below the target's)."""
    out: list[Draft] = []
    for index, name in enumerate(names):
        key = f"axes.spec_draft[{index}]"
        if name in BUILTIN_DRAFTS:
            out.append(Draft(name, name))
            continue
        model = custom.get(name) or catalog.get(name)
        if model is None:
            try:
                model = lookup(name)
            except CatalogError as error:
                problems.add(key, f"{error}; or one of {list(BUILTIN_DRAFTS)}")
                continue
        for target in targets:
            if model.params >= target.params:
                problems.add(
                    key,
                    f"draft model {name!r} ({model.params:.4g} parameters) is not smaller "
                    f"than the target {target.id!r} ({target.params:.4g}); allowed: a model "
                    f"smaller than every target, or {list(BUILTIN_DRAFTS)}",
                )
        out.append(Draft(model.id, "model", model))
    return tuple(out)


def resolve_tiers(
    names: Sequence[str], custom: Mapping[str, Any], hardware: Sequence[Any], problems: Problems
) -> tuple[KvTier, ...]:
    """The tier records of ``axes.kv_tier``: ``[kv_tiers.*]`` tables first, then the
    built-ins; ``host`` needs every device's host link bandwidth."""
    out: list[KvTier] = []
    for index, name in enumerate(names):
        key = f"axes.kv_tier[{index}]"
        table = custom.get(name)
        if table is not None:
            out.append(KvTier(name, table.bandwidth, table.capacity, table.source))
            continue
        tier = BUILTIN_TIER_RECORDS.get(name)
        if tier is None:
            allowed = [*BUILTIN_TIERS, *custom]
            problems.add(key, f"unknown tier {name!r}; allowed: {allowed} or a [kv_tiers.*] table")
            continue
        for device in hardware if tier.bandwidth is None else ():
            if getattr(device, "host_link_bandwidth", None) is None:
                problems.add(
                    key,
                    f"'host' needs the host link bandwidth of hardware {device.id!r}, which "
                    "has none; give a [kv_tiers.*] table with its bandwidth",
                )
        out.append(tier)
    return tuple(out)


def technique_fields(
    axes: Any,
    custom_tiers: Mapping[str, Any],
    targets: Sequence[Model],
    hardware: Sequence[Any],
    models: tuple[Mapping[str, Model], Mapping[str, Model], Callable[[str], Model]],
    problems: Problems,
) -> dict[str, tuple[Any, ...]]:
    """The ``Sweep`` fields of the speculative and prefix axes (empty when not asked for):
    values given or their defaults, duplicates reported, drafts and tiers resolved."""
    fields: dict[str, tuple[Any, ...]] = {}
    for defaults in (SPEC_DEFAULTS, PREFIX_DEFAULTS):
        given = {key: getattr(axes, key) for key in defaults}
        if all(value is None for value in given.values()):
            continue
        for key, default in defaults.items():
            value = given[key]
            values = tuple(default if value is None else value)
            if len(set(values)) < len(values):
                problems.add(f"axes.{key}", f"duplicate values in {list(values)}; give each once")
            fields[key] = values
    if "spec_draft" in fields:
        fields["spec_draft"] = resolve_drafts(fields["spec_draft"], targets, *models, problems)
    if "kv_tier" in fields:
        fields["kv_tier"] = resolve_tiers(fields["kv_tier"], custom_tiers, hardware, problems)
    return fields
