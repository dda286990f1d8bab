"""What the serving figures are drawn from: each slice's serving and pools variables, kept
while the slices stream past, and each model's serving grid joined from them."""

from __future__ import annotations

from collections.abc import Iterator

import xarray as xr

from sweeps.studies import CORE, STUDIES, serving


def _serving_dims() -> frozenset[str]:
    """The dims of the serving study's analyses (with those they take on) that neither a core
    analysis nor another study's axes have: read off the declarations, not listed here."""
    mine = {d for a in serving.STUDY.analyses for d in (*a.dims, *a.extra_dims)}
    core = {d for a in CORE for d in a.dims}
    others = {d for study in STUDIES if study is not serving.STUDY for d in study.axes}
    return frozenset(mine - core - others)


SERVING_DIMS = _serving_dims()
"""Dimensions only the serving and pools analyses' variables have."""


def serving_part(one: xr.Dataset) -> xr.Dataset:
    """A copy of the serving and pools variables of one slice (what the serving figures
    read), so that the rest of the slice is not held."""
    names = [str(n) for n, v in one.data_vars.items() if SERVING_DIMS.intersection(v.dims)]
    return one[names].copy(deep=True)


def serving_grids(parts: list[xr.Dataset]) -> Iterator[tuple[str, xr.Dataset]]:
    """Each model of ``parts`` (slices of ``serving_part``, or whole grids) and its serving
    grid: the devices' serving variables joined, the pools taken once."""
    models = list(dict.fromkeys(str(m) for part in parts for m in part["model"].values))
    for model in models:
        mine = [part.sel(model=[model]) for part in parts if model in part["model"].values]
        grid = mine[0]
        if len(mine) > 1:
            local = [str(n) for n, v in grid.data_vars.items() if "hardware" in v.dims]
            joined = xr.concat([m[local] for m in mine], dim="hardware")
            rest = grid.drop_dims("hardware")
            grid = xr.merge(
                [joined, rest], join="exact", compat="override", combine_attrs="override"
            )
        yield model, grid
