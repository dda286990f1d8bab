"""The one look of every chart: palette, fonts, sizes, axis titles from the variable registry.

Each colour means one thing in every chart (memory-bound is always the same orange, "does not
fit" always the same grey), and every axis title is the registry's ``label``, so units are
declared once, in ``sweeps.grid.variables``.

The look is a registered Altair theme (``sweeps``; ``sweeps-single-column`` /
``sweeps-double-column`` for print) that each chart of this package carries itself
(``themed``): nothing is turned on for the session, so a user's own charts keep their look.
It is not a ``.configure()`` on each chart, so charts compose:
``ceiling_chart(ds) | bottleneck_chart(ds)`` carries the left chart's theme.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import altair as alt

from sweeps.grid.variables import BOTTLENECK_FLAGS, REGISTRY

from .palette import PALETTE, SHAPES, device_colour, device_shape

DOES_NOT_FIT = "does not fit"
MEMORY_BOUND, COMPUTE_BOUND = BOTTLENECK_FLAGS
DECODE, PREFILL = "decode", "prefill"

COLORS: dict[str, str] = {
    MEMORY_BOUND: "#E69F00",
    COMPUTE_BOUND: "#0072B2",
    DECODE: "#CC79A7",
    PREFILL: "#009E73",
    DOES_NOT_FIT: "#c9c9c9",
    "colocated": "#56B4E9",
    "disaggregated": "#D55E00",
}
"""Categorical colours, one meaning each across all charts: Okabe-Ito hues and a grey, every
pair apart for colour-blind readers (``palette.MIN_DELTA_E``)."""

INK = "#222222"
"""Annotations: ridge rules, outlines, labels."""
HALO = "#ffffff"
"""Drawn under an ``INK`` mark so that it stands out on every colour of a scale."""
SEQUENTIAL: Final = "viridis"
"""Scheme of continuous quantities (fraction of the ceiling)."""
SERIES: Final = PALETTE
"""Distinct hues of the lines of one chart (contexts, tiers): six, then repeated; a
device takes its own (``device_scale``)."""

FONT = "DejaVu Sans, Liberation Sans, Helvetica, Arial, sans-serif"


@dataclass(frozen=True)
class Size:
    """Geometry and type sizes of one target: a screen page or a print column.

    ``width`` is the whole figure's width [px]; at ``ppi`` / 72 scale a PNG is printed at that
    width in points, so a ``single-column`` figure is 3.5 in wide at 300 dpi.
    """

    name: str
    width: int
    panel_height: int
    font: float
    title: float
    cell: tuple[int, int]
    png_scale: float
    legend: str
    left: int
    """Room the y axis, its title and a facet row header take left of the panels [px]."""

    @property
    def theme(self) -> str:
        """The registered Altair theme of this size [-]."""
        return "sweeps" if self.name == "screen" else f"sweeps-{self.name}"


PRINT_SCALE = 300 / 72
"""PNG scale of the print sizes: 300 dpi for 1 px = 1 pt [-]."""
SIZES: dict[str, Size] = {
    "screen": Size("screen", 900, 220, 11, 16, (12, 36), 2.0, "right", 70),
    "single-column": Size("single-column", 252, 110, 7, 8.5, (5, 20), PRINT_SCALE, "bottom", 125),
    "double-column": Size("double-column", 504, 160, 8, 10, (8, 28), PRINT_SCALE, "bottom", 135),
}
"""Figure sizes by ``[outputs.figures] width``: 252 pt = 3.5 in, 504 pt = 7 in."""
SCREEN = SIZES["screen"]


def size_of(width: str | Size | None) -> Size:
    """The ``Size`` called ``width`` (``None``: screen); ``ValueError`` names the allowed."""
    if isinstance(width, Size):
        return width
    if width is None:
        return SCREEN
    if width not in SIZES:
        msg = f"charts: width {width!r} is unknown; allowed: {list(SIZES)}"
        raise ValueError(msg)
    return SIZES[width]


def theme_config(size: Size) -> dict[str, Any]:
    """The Vega-Lite ``config`` of the theme of ``size``: fonts, colours, no frame."""
    small = size.font
    label = {"labelFontSize": small, "titleFontSize": small + 1, "titleColor": INK}
    return {
        "config": {
            "font": FONT,
            "padding": {"left": 6, "right": 6, "top": 6, "bottom": 6},
            "title": {
                "fontSize": size.title,
                "subtitleFontSize": small,
                "subtitleColor": "#444444",
                "subtitlePadding": 4,
                "offset": 10,
                "color": INK,
                "anchor": "start",
            },
            "axis": {
                **label,
                "labelColor": INK,
                "gridColor": "#e6e6e6",
                "domainColor": "#888888",
                "tickColor": "#888888",
            },
            "header": {**label, "labelColor": INK},
            "legend": {
                **label,
                "labelColor": INK,
                "orient": size.legend,
                "titleLimit": 260,
                "labelLimit": 260,
                "symbolSize": 6 * small,
            },
            "text": {"fontSize": small - 1, "color": INK},
            "view": {"stroke": None},
        }
    }


def _theme(size: Size) -> Callable[[], Any]:
    def config() -> Any:
        return theme_config(size)

    return config


for _size in SIZES.values():
    alt.theme.register(_size.theme, enable=False)(_theme(_size))


class _Themed:
    """Mixed into a chart's own class (``themed``): its ``to_dict`` (and so its display,
    ``save`` and ``to_json``) runs under the theme it carries, and what it composes into
    (``|``, ``&``, ``+``) carries that theme too."""

    sweeps_theme: str = SCREEN.theme

    def to_dict(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("context") is not None:  # a part of a bigger chart: the top one themes
            return super().to_dict(*args, **kwargs)  # type: ignore[misc]
        with alt.theme.enable(self.sweeps_theme):
            return super().to_dict(*args, **kwargs)  # type: ignore[misc]

    def __or__(self, other: Any) -> Any:
        return _carry(super().__or__(other), self.sweeps_theme)  # type: ignore[misc]

    def __and__(self, other: Any) -> Any:
        return _carry(super().__and__(other), self.sweeps_theme)  # type: ignore[misc]

    def __add__(self, other: Any) -> Any:
        return _carry(super().__add__(other), self.sweeps_theme)  # type: ignore[misc]


_CLASSES: dict[tuple[type, str], type] = {}


def _themed_class(base: type, theme: str) -> type:
    key = (base, theme)
    if key not in _CLASSES:
        _CLASSES[key] = type(base.__name__, (_Themed, base), {"sweeps_theme": theme})
    return _CLASSES[key]


def _carry(chart: Any, theme: str) -> Any:
    base = type(chart)
    if issubclass(base, _Themed):
        base = base.__mro__[2]
    # Altair's charts keep every attribute set on them as a Vega-Lite property: past that
    object.__setattr__(chart, "__class__", _themed_class(base, theme))
    return chart


def themed(builder: Callable[..., Any]) -> Callable[..., Any]:
    """A chart builder whose charts carry the theme of their ``width`` option (``SIZES``)."""

    @functools.wraps(builder)
    def build(*args: Any, **kwargs: Any) -> Any:
        return _carry(builder(*args, **kwargs), size_of(kwargs.get("width")).theme)

    return build


UNIT_WORDS: Final = frozenset({"s", "ms", "usd", "j", "w"})
"""Last words of variable names that only say the unit (``step_time_s``): a title leaves them
to its bracket, so the unit is written once ("step time [s]", not "step time s [s]")."""


def title(name: str) -> str:
    """Axis or legend title of a registry variable: its name in words, unit in brackets, the
    unit written once ("cost per million output tokens [USD]"; "per s" spelled "per second").

    Categorical variables (unit ``-``) show no bracket.
    """
    entry = REGISTRY[name]
    words = entry.name.split("_")
    if len(words) > 1 and words[-1] in UNIT_WORDS and words[-2] != "per":
        words = words[:-1]
    text = " ".join(words).replace(" per s ", " per second ")
    text = text[:-6] + " per second" if text.endswith(" per s") else text
    return text if entry.unit == "-" else f"{text} [{entry.unit}]"


def percent_title(name: str) -> str:
    """``title`` of a share [1] drawn on a percent scale: its unit written ``[%]``, as the
    ticks read ("fraction of ceiling [%]", not "[1]")."""
    text = title(name)
    return text.removesuffix(" [1]") + " [%]"


def fit_title(text: str, room: float, font: float) -> str | list[str]:
    """``text`` (a title), broken before its unit bracket into two lines where one line of
    ``font`` [px] would be longer than ``room`` [px] (a narrow panel's axis) [-]."""
    if "[" not in text or len(text) * 0.62 * font <= room:
        return text
    at = text.rindex(" [")
    return [text[:at], text[at + 1 :]]


def unit(name: str) -> str:
    """The registry unit of ``name``."""
    return REGISTRY[name].unit


def category_scale(*names: str) -> alt.Scale:
    """Nominal scale over ``names`` with their fixed colours."""
    return alt.Scale(domain=list(names), range=[COLORS[n] for n in names])


def series_scale(names: Sequence[str]) -> alt.Scale:
    """Nominal scale giving each of ``names`` its own hue of ``SERIES``."""
    return alt.Scale(domain=list(names), range=[SERIES[i % len(SERIES)] for i in range(len(names))])


def series_shapes(names: Sequence[str]) -> alt.Scale:
    """Nominal scale giving each of ``names`` its own marker of ``SHAPES``, beside its hue."""
    return alt.Scale(domain=list(names), range=[SHAPES[i % len(SHAPES)] for i in range(len(names))])


def device_scale(devices: Sequence[str], shown: Sequence[str] | None = None) -> alt.Scale:
    """Nominal scale of the colour of each of ``devices`` (catalog ids), the same in every
    study (``palette.DEVICE_ORDER``); ``shown``: the labels the chart writes for them (default
    the ids)."""
    return alt.Scale(domain=list(shown or devices), range=[device_colour(d) for d in devices])


def device_shapes(devices: Sequence[str], shown: Sequence[str] | None = None) -> alt.Scale:
    """Nominal scale of the marker of each of ``devices`` (catalog ids), as ``device_scale``."""
    return alt.Scale(domain=list(shown or devices), range=[device_shape(d) for d in devices])


def tooltip(name: str, fmt: str = "", field: str = "") -> alt.Tooltip:
    """Tooltip of a registry variable titled with its label (``field``: the column, if
    renamed); a share shown as a percentage (``fmt`` ending ``%``) titled ``[%]``."""
    kind = "N" if unit(name) == "-" else "Q"
    shown = percent_title(name) if fmt.endswith("%") else title(name)
    kwargs: dict[str, Any] = {"title": shown}
    if fmt:
        kwargs["format"] = fmt
    return alt.Tooltip(f"{field or name}:{kind}", **kwargs)


def heading(text: str, subtitle: Sequence[str], size: Size = SCREEN) -> alt.TitleParams:
    """Chart title with subtitle (caption) lines, wrapped to a print figure's width (on a
    screen the title stays one line and captions wrap at 150 characters)."""
    screen = size.name == "screen"
    per_line = 150 if screen else chars(size.width, size.font)
    lines = [part for line in subtitle for part in wrap(line, per_line)]
    head = [text] if screen else wrap(text, chars(size.width, size.title * 1.12))
    return alt.TitleParams(text=head[0] if len(head) == 1 else head, subtitle=lines)


def chars(width: float, font: float) -> int:
    """Characters of ``font`` [px] that fill ``width`` [px]: DejaVu Sans averages 0.58 em."""
    return max(30, int(width / (0.58 * font)))


def wrap(text: str, width: int) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` characters [-]."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def number(value: float) -> str:
    """Three significant digits, thousands separated, never in exponent form [-]."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def percent(value: float) -> str:
    """A fraction as a whole percentage, rounded down as the heatmap's labels are (89.5 % is
    "89%"; see ``data.shown_percent``) [-]."""
    return f"{math.floor(value * 100 + 1e-6)}%"
