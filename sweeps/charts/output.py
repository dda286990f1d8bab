"""Writing the figures of a result: one model-and-device slice at a time, so that a streamed
grid gets the same figures and report as one held in memory.

``write_figures_streamed(slices, folder, ...)`` is the one writer: it takes an iterable of
per-(model, hardware) Datasets, renders and writes each slice's charts before asking for the
next, keeps only the small per-device selections the cross-device roofline needs, and writes
``report.html`` at the end. ``write_figures(ds, ...)`` feeds it the slices of a grid in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import xarray as xr

from sweeps.outputs import PAIRS_DRAWN, Kind, registered
from sweeps.views.summary import summary_rows

from .data import Choice, Selection, choose, select
from .failures import built, failed, skipped_line
from .fitting import within_rows
from .heatmaps import CEILING
from .plans import cheapest, plans_section
from .rendering import Renderer, bundle_file, caption, javascript
from .report import FULL_ROWS, REPORT, Figure, condensed_row, full_rows, labels_as_text, report_html
from .roofline import (
    DEVICE_ROOFS,
    DEVICES,
    ROOFLINE,
    compare_from,
    device_roofs_chart,
    device_roofs_part,
)
from .served import serving_grids, serving_part
from .serving import BUILDERS as SERVING_BUILDERS
from .serving import SERVING, has_serving
from .sizes import MODEL_SIZE, size_figures, size_rows
from .spec import chart_spec
from .techniques import TECHNIQUES, technique_figures, technique_part
from .theme import size_of

if TYPE_CHECKING:
    from sweeps.config import Sweep


@dataclass(frozen=True)
class Settings:
    """``[outputs.figures]`` and ``max_chart_cells``: what every chart of a result shows."""

    pick: str = "smallest-fit"
    tp: int | None = None
    weight_dtype: str | None = None
    width: str = "screen"
    max_cells: int | None = None

    @classmethod
    def of(cls, sweep: Sweep) -> Settings:
        """The settings ``sweep`` asks for."""
        f = sweep.figures
        return cls(f.pick, f.tp, f.weight_dtype, f.width, sweep.options.max_chart_cells)

    def choice(self, one: xr.Dataset, model: str, device: str) -> Choice:
        """The tp and weight dtype ``model`` on ``device`` is drawn at (``data.choose``)."""
        return choose(
            one, model, device, tp=self.tp, weight_dtype=self.weight_dtype, pick=self.pick
        )

    def options(self) -> dict[str, Any]:
        """Keyword arguments of the builders."""
        return {
            "pick": self.pick,
            "tp": self.tp,
            "weight_dtype": self.weight_dtype,
            "width": self.width,
            "max_cells": self.max_cells,
        }


def slices(ds: xr.Dataset) -> Iterator[xr.Dataset]:
    """The per-(model, hardware) slices of a grid in memory, dimensions kept (size 1).

    Sliced by position, so each is a view of the grid: a list of labels would copy every
    variable (2.3 s of a 16.8 M-point grid's report went to those copies).
    """
    for i in range(ds.sizes["model"]):
        for j in range(ds.sizes["hardware"]):
            yield ds.isel(model=slice(i, i + 1), hardware=slice(j, j + 1))


def slice_figures(one: xr.Dataset, charts: Iterable[str], settings: Settings) -> Iterator[Figure]:
    """The figures of one model-and-device slice, each as soon as its spec is built (so that
    it can be drawn while the next is built): each kind's spec, or, where the model fits
    nowhere the settings allow, the one reason for all of them."""
    registry = registered()
    kinds = [k for k in charts if registry[k].builder is not None and _applies(registry[k], one)]
    if not kinds:  # the report alone: no choice to make here (``_Kept.add`` makes its own)
        return
    model, device = str(one["model"].values[0]), str(one["hardware"].values[0])
    choice = settings.choice(one, model, device)
    for kind in kinds:
        stem = f"{kind}-{model}-{device}"
        if not choice.fits:
            yield Figure(stem, kind, model, device, None, choice.reason)
            continue
        yield built(
            stem,
            kind,
            model,
            device,
            chart_spec,
            registry[kind].builder,
            settings.width,
            one,
            model,
            device,
            **settings.options(),
        )


def _applies(kind: Kind, one: xr.Dataset) -> bool:
    """Whether ``one`` has what ``kind``'s figures need (an engine for the expected ones): a
    kind drawn by default is left out quietly where it does not."""
    return kind.applies is None or kind.applies(one)


def across_devices(selections: list[Selection], settings: Settings) -> list[Figure]:
    """The cross-device roofline of one model's selections: none for a single device; the
    reason, not a chart, where the model fits on none."""
    if len(selections) < 2:
        return []
    model = selections[0].model
    stem = f"{DEVICES.name}-{model}"
    if not any(sel.choice.fits for sel in selections):
        names = ", ".join(sel.device_name for sel in selections)
        return [Figure(stem, DEVICES.name, model, None, None, f"{model} fits on none of {names}")]
    return [
        built(
            stem,
            DEVICES.name,
            model,
            None,
            chart_spec,
            compare_from,
            settings.width,
            selections,
            settings.width,
        )
    ]


def device_roofs_figures(parts: dict[str, xr.Dataset], settings: Settings) -> list[Figure]:
    """The devices' roofs (``device_roofs_part`` of a slice of each device): one figure, none
    for a single device."""
    if len(parts) < 2:
        return []
    return [
        built(
            f"{DEVICE_ROOFS.name}-all",
            DEVICE_ROOFS.name,
            "",
            None,
            chart_spec,
            device_roofs_chart,
            settings.width,
            list(parts.values()),
            width=settings.width,
        )
    ]


def serving_figures(parts: list[xr.Dataset], settings: Settings) -> list[Figure]:
    """The serving figures of each model of ``parts`` (``serving_grids``)."""
    figures = []
    for model, grid in serving_grids(parts):
        for name, builder in SERVING_BUILDERS.items():
            stem = f"{SERVING.name}-{name}-{model}"
            figures.append(
                built(
                    stem,
                    SERVING.name,
                    model,
                    None,
                    within_rows,  # fewer batches where Altair's row limit stops it
                    partial(chart_spec, builder, settings.width),
                    grid,
                    model,
                    settings.weight_dtype,
                    width=settings.width,
                )
            )
    return figures


def _write(
    renders: Iterable[tuple[str, dict[str, bytes] | Exception]],
    folder: Path,
    failures: dict[str, Exception],
) -> list[str]:
    """Write each render's files; a render that failed goes into ``failures`` by stem."""
    written: list[str] = []
    for stem, data in renders:
        if isinstance(data, Exception):
            failures[stem] = data
            continue
        (folder / "charts").mkdir(parents=True, exist_ok=True)
        for fmt, content in data.items():
            relative = f"charts/{stem}.{fmt}"
            (folder / relative).write_bytes(content)
            written.append(relative)
    return written


def write_figures_streamed(
    pieces: Iterable[xr.Dataset],
    folder: Path,
    charts: Iterable[str],
    formats: Iterable[str],
    settings: Settings | None = None,
    report: bool = True,
    extra: Sequence[Figure] = (),
    notes: list[str] | None = None,
    left_out: Sequence[str] = (),
) -> list[str]:
    """Write ``charts/<kind>-<model>-<hardware>.<fmt>`` for every slice of ``pieces``: each a
    grid of one model and one device, dimensions kept, with the variables, coordinates and
    attributes ``build_grid`` gives (``slices(ds)`` of a grid in memory, or
    ``build_grid(dataclasses.replace(sweep, models=(m,), hardware=(h,)))`` one at a time),
    the cross-device rooflines ``charts/roofline-devices-<model>.<fmt>`` where a model was seen
    on several devices, the ``extra`` figures made elsewhere (the simulated plans' CDFs), each
    figure's caption ``charts/<stem>.txt``, the one Vega bundle the folder's pages load,
    ``vega/<name>.js`` (where there is an HTML page), and ``report.html``; returns the paths
    written, relative to ``folder``.

    A slice's charts are rendered on worker threads while the next slice is built, and
    written before the one after is asked for (at most one slice's renders wait); what is kept
    is the summary rows of each slice and, when ``roofline`` is among ``charts``, each slice's
    selection at its chosen tp and weight dtype.

    A chart whose spec cannot be built or drawn is skipped (``failures``): the report says
    why, its line is appended to ``notes``, and the rest is written. So are the kinds
    ``left_out`` (``scaled``), one line for all, those that apply to some slice.
    """
    settings = settings or Settings()
    charts, formats = tuple(charts), tuple(formats)
    figures: list[Figure] = []
    written: list[str] = []
    kept = _Kept(left_out=tuple(left_out))
    attrs: dict[str, Any] = {}
    failures: dict[str, Exception] = {}
    script = f"../{bundle_file()}"  # the folder's one bundle, from charts/
    renderer = Renderer(formats, size_of(settings.width), script=script) if formats else None
    try:
        for one in pieces:
            attrs = attrs or dict(one.attrs)
            done = _submitted(renderer, slice_figures(one, charts, settings))
            if renderer is not None:  # the slice before's renders: at most one slice waits
                waiting = sum(f.spec is not None for f in done)
                written += _write(renderer.done(keep=waiting), folder, failures)
            figures += done
            kept.add(one, charts, settings)
        later = [f for sels in kept.selections.values() for f in across_devices(sels, settings)]
        later += technique_figures(kept.techniques, charts, settings.width)
        later += size_figures(kept.sizes, settings.width)
        later += device_roofs_figures(kept.roofs, settings)
        later += serving_figures(kept.served, settings) + list(extra) + kept.left_figures()
        figures += _submitted(renderer, later)
        if renderer is not None:
            written += _write(renderer.done(), folder, failures)
    finally:
        if renderer is not None:
            renderer.close()
    figures = [failed(f, failures[f.stem]) if f.stem in failures else f for f in figures]
    if notes is not None:
        notes += [skipped_line(f) for f in figures if f.failed]
        notes += [f.reason for f in kept.left_figures()]
    written += _captions(figures, folder, written)
    if report or "html" in formats:
        written.append(_bundle(folder))
    if report:
        title = str(attrs.get("title", attrs.get("sweep", "sweep")))
        full = pl.concat(kept.full) if kept.full else None
        grids = [grid for _, grid in serving_grids(kept.served)]
        note, plans = str(attrs.get("note", "")), plans_section(cheapest(grids))
        page = report_html(
            title, note, figures, kept.condensed, full, kept.rows, plans, script=bundle_file()
        )
        (folder / REPORT).write_text(page, "utf-8")
        written.append(REPORT)
    return written


def _captions(figures: Iterable[Figure], folder: Path, written: list[str]) -> list[str]:
    """Write ``charts/<stem>.txt``, the caption (``rendering.caption``), beside each figure
    whose files were written, for a paper to paste [-]."""
    stems = {Path(p).stem for p in written if p.startswith("charts/")}
    out = []
    for figure in figures:
        if figure.spec is not None and figure.stem in stems:
            (folder / f"charts/{figure.stem}.txt").write_text(caption(figure.spec), "utf-8")
            out.append(f"charts/{figure.stem}.txt")
    return out


def _bundle(folder: Path) -> str:
    """Write the Vega bundle the folder's pages load (``rendering.bundle_file``) [-]."""
    (folder / bundle_file()).parent.mkdir(parents=True, exist_ok=True)
    (folder / bundle_file()).write_text(javascript(), "utf-8")
    return bundle_file()


def _submitted(renderer: Renderer | None, figures: Iterable[Figure]) -> list[Figure]:
    """``figures``, each handed to ``renderer`` as soon as it comes (drawn while the next is
    built)."""
    done = []
    for figure in figures:
        if renderer is not None and figure.spec is not None:
            renderer.submit(figure.stem, figure.spec)
        done.append(figure)
    return done


@dataclass
class _Kept:
    """What a streamed figure run keeps of each slice once its charts are drawn: the report's
    rows, and what the cross-device rooflines and the serving charts are drawn from."""

    condensed: list[dict[str, str]] = field(default_factory=list)
    full: list[pl.DataFrame] = field(default_factory=list)
    rows: int = 0
    selections: dict[str, list[Selection]] = field(default_factory=dict)
    served: list[xr.Dataset] = field(default_factory=list)
    techniques: list[xr.Dataset] = field(default_factory=list)
    sizes: list[pl.DataFrame] = field(default_factory=list)
    roofs: dict[str, xr.Dataset] = field(default_factory=dict)
    left_out: tuple[str, ...] = ()
    """The kinds ``scaled`` left out; ``applied``: those that apply to a slice seen."""
    applied: set[str] = field(default_factory=set)

    def left_figures(self) -> list[Figure]:
        """The one line, as a figure not drawn, of the kinds left out that would have been
        drawn (none where none applies to any slice)."""
        left = [k for k in self.left_out if k in self.applied]
        line = left_out_line(left, len(self.condensed)) if left else ""
        return [Figure("", left[0], "", None, None, line)] if left else []

    def add(self, one: xr.Dataset, charts: tuple[str, ...], settings: Settings) -> None:
        # long: what each of the cross-slice figures and the report keeps, one after another
        registry = registered()
        self.applied.update(k for k in self.left_out if _applies(registry[k], one))
        model, device = str(one["model"].values[0]), str(one["hardware"].values[0])
        across = not {ROOFLINE.name, DEVICES.name}.isdisjoint(charts)
        if across:  # the whole selection, kept for the cross-device roofline
            sel = select(one, model, device, **settings.options())
            choice, name = sel.choice, sel.device_name
        else:  # the choice alone: selecting all ~100 variables would cost more than the row
            choice = settings.choice(one, model, device)
            name = str(one["hardware_name"].values.reshape(-1)[0])
        self.condensed.append(condensed_row(one, model, name, choice))
        if self.rows < FULL_ROWS:  # once the page's table is full, the rows are counted only
            summary = labels_as_text(full_rows(one))  # only what the page shows is kept
            self.full.append(summary.head(FULL_ROWS - self.rows))
        self.rows += summary_rows(one)
        if across:  # a copy: a view would hold the whole slice in memory
            self.selections.setdefault(model, []).append(replace(sel, ds=sel.ds.copy(deep=True)))
        if SERVING.name in charts and has_serving(one):
            self.served.append(serving_part(one))
        if TECHNIQUES.intersection(charts):
            self.techniques.append(technique_part(one))
        if MODEL_SIZE.name in charts:
            self.sizes.append(size_rows(one, **settings.options()))
        if DEVICE_ROOFS.name in charts and device not in self.roofs:
            self.roofs[device] = device_roofs_part(one)


def write_figures(
    ds: xr.Dataset,
    folder: Path,
    charts: Iterable[str],
    formats: Iterable[str],
    max_cells: int | None = None,
    report: bool = True,
    settings: Settings | None = None,
) -> list[str]:
    """``write_figures_streamed`` over the slices of a grid held in memory."""
    settings = settings or Settings(max_cells=max_cells)
    return write_figures_streamed(slices(ds), folder, charts, formats, settings, report)


def scaled(
    charts: Sequence[str], pairs: int, named: bool = False
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The kinds a run of ``pairs`` model-device pairs draws of ``charts``, and those it leaves
    out: all of them up to ``PAIRS_DRAWN`` pairs or where the config names them (``named``);
    past it, the figures across pairs only: each kind drawn per model and device is left out
    (the roofline's across devices with it: its points grow with the devices, each keeping
    its share of the cells; named, it is drawn so), the devices' roofs drawn for the roofline
    (``device-roofs``, one figure) and the ceiling across models for the ceiling
    (``model-size``: the share of the ceiling at the memory wall, model by context, one per
    device)."""
    charts = tuple(charts)
    if named or pairs <= PAIRS_DRAWN:
        return charts, ()
    registry = registered()
    left = tuple(k for k in charts if registry[k].builder is not None)
    drawn = [k for k in charts if k not in left]
    drawn += [DEVICE_ROOFS.name] if ROOFLINE.name in left else []
    drawn += [MODEL_SIZE.name] if CEILING.name in left else []
    return tuple(dict.fromkeys(drawn)), left


def left_out_line(left: Sequence[str], pairs: int) -> str:
    """The run's status line (and the report's) of the kinds ``scaled`` left out [-]."""
    return (
        f"{', '.join(left)} per model and device: left out for {pairs:,} model-device pairs "
        f"(drawn by default up to {PAIRS_DRAWN}; past that the figures across them); name "
        "them in [outputs] charts to draw them"
    )


def sweep_figures(
    ds: xr.Dataset | Iterable[xr.Dataset],
    sweep: Sweep,
    folder: Path,
    extra: Sequence[Figure] = (),
    notes: list[str] | None = None,
    told: Told | None = None,
) -> list[str]:
    """The figures and report ``sweep`` asks for, from a grid or its model-and-device slices
    (and the ``extra`` figures), as many as ``scaled`` draws for its model-device pairs; the
    lines of the charts skipped or left out are appended to ``notes``; ``told`` as they are
    drawn (``Told``: one unit a slice, one the figures across slices, one the report)."""
    pieces = slices(ds) if isinstance(ds, xr.Dataset) else ds
    settings = Settings.of(sweep)
    pairs = len(sweep.models) * len(sweep.hardware)
    charts, left = scaled(sweep.charts, pairs, sweep.charts_named)
    if told is not None:
        pieces = _told_slices(pieces, pairs, told)
    written = write_figures_streamed(
        pieces, folder, charts, sweep.formats, settings, extra=extra, notes=notes, left_out=left
    )
    if told is not None:
        units = len(sweep.models) * len(sweep.hardware) + 2
        told(units, units, "figures written")
    return written


Told = Callable[[int, int, str], None]
"""Told how the figures move: (units done, units in all, what is drawn now) [1]."""


def _told_slices(pieces: Iterable[xr.Dataset], count: int, told: Told) -> Iterator[xr.Dataset]:
    """``pieces`` (``count`` slices), ``told`` of each as it is taken (the one before it is
    drawn), and of the figures across slices and the report once the last is."""
    units = count + 2
    for done, one in enumerate(pieces):
        told(done, units, f"writing figures: {_label(one)} ({done + 1} of {count})")
        yield one
    told(count, units, "writing figures across devices and the report")


def _label(one: xr.Dataset) -> str:
    """``<model> on <device>`` of a one-model-one-device slice."""
    return f"{one['model'].values.flat[0]} on {one['hardware'].values.flat[0]}"


def chart_specs(
    ds: xr.Dataset, charts: Iterable[str], settings: Settings | None = None
) -> Iterator[Figure]:
    """Every figure of a grid in memory (drawn or not), without rendering: the per-slice ones,
    then the cross-device rooflines."""
    settings = settings or Settings()
    charts = tuple(charts)
    for one in slices(ds):
        yield from slice_figures(one, charts, settings)
    if SERVING.name in charts and has_serving(ds):
        yield from serving_figures([ds], settings)
    yield from technique_figures([ds], charts, settings.width)
    if MODEL_SIZE.name in charts:
        options = settings.options()
        yield from size_figures([size_rows(one, **options) for one in slices(ds)], settings.width)
    if DEVICE_ROOFS.name in charts:
        parts: dict[str, xr.Dataset] = {}
        for one in slices(ds):
            parts.setdefault(str(one["hardware"].values[0]), device_roofs_part(one))
        yield from device_roofs_figures(parts, settings)
    if ROOFLINE.name in charts:
        for model in (str(m) for m in ds["model"].values):
            options = settings.options()
            yield from across_devices(
                [select(ds, model, str(h), **options) for h in ds["hardware"].values], settings
            )
