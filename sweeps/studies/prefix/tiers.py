"""KV tiers: the records of the ``kv_tier`` axis.

A tier is ``hbm`` (the prefix stays in device memory: nothing to reload), ``host`` (over the
device's host link, the catalog's ``host_link_bandwidth``), ``nvme`` or a ``[kv_tiers.*]``
table. Imports nothing heavy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

HBM, HOST, NVME = "hbm", "host", "nvme"
BUILTIN_TIERS = (HBM, HOST, NVME)

NVME_BANDWIDTH = 14e9 / 8
"""The ``nvme`` tier per device [byte/s]: one PCIe Gen5 x4 NVMe drive (about 14 GB/s of
sequential read, the class of Samsung PM1743 / Micron 9550 datasheets) shared by the 8 devices
of a node, 1.75 GB/s a device. Give a ``[kv_tiers.*]`` table for another layout."""


@dataclass(frozen=True, slots=True)
class KvTier:
    """One value of the ``kv_tier`` axis.

    id : Its label
    bandwidth : Tier-to-HBM bandwidth per device [byte/s]; ``inf`` for hbm; None for host,
        whose bandwidth is each device's ``host_link_bandwidth``
    capacity : Bytes held per device [byte]; None: unknown (hbm: what the weights leave)
    source : Where the figures come from
    in_device_memory : The prefix stays in device memory (the built-in ``hbm``): nothing to
        reload, the capacity what the weights leave. A ``[kv_tiers.*]`` table is never one,
        even one named ``hbm``: its own bandwidth and capacity replace the built-in tier whole.
    """

    id: str
    bandwidth: float | None
    capacity: float | None = None
    source: str = ""
    in_device_memory: bool = False

    def bandwidth_on(self, device: Any) -> float:
        """The tier's bandwidth per device on ``device`` [byte/s] (NaN: unknown)."""
        if self.bandwidth is not None:
            return self.bandwidth
        link = getattr(device, "host_link_bandwidth", None)
        return math.nan if link is None else float(link)


BUILTIN_TIER_RECORDS = {
    HBM: KvTier(HBM, math.inf, None, "device memory: the prefix is already in HBM", True),
    HOST: KvTier(HOST, None, None, "the device's host link (catalog host_link_bandwidth)"),
    NVME: KvTier(NVME, NVME_BANDWIDTH, None, "PCIe Gen5 x4 NVMe, 14 GB/s shared by 8 devices"),
}


Problem = tuple[str, str]
"""A key relative to ``[axes]`` and its message."""


def resolve_tiers(
    names: Sequence[str], custom: Mapping[str, Any], hardware: Sequence[Any]
) -> tuple[tuple[KvTier, ...], list[Problem]]:
    """The tier records of ``kv_tier``: ``[kv_tiers.*]`` tables first (a table named like a
    built-in tier replaces it whole), then the built-ins; ``host`` needs every device's host
    link bandwidth."""
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


def tier_records(
    values: Mapping[str, tuple[Any, ...]], axes: Mapping[str, Any], sources: Mapping[str, Any]
) -> tuple[dict[str, tuple[Any, ...]], list[Problem]]:
    """``Study.records`` of the prefix study: the tiers resolved."""
    tiers, problems = resolve_tiers(values["kv_tier"], sources["config"].kv_tiers, axes["hardware"])
    return {"kv_tier": tiers}, problems
