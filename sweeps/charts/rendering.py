"""Rendering with vl-convert (no browser, nothing fetched): offline HTML, SVG, PNG and PDF.

Each spec is drawn once, to SVG; PNG and PDF are converted from that SVG, so nothing is
rendered twice, and each PNG is stored compactly (``png.compact``: lossless). The Vega /
Vega-Lite / vega-embed JavaScript bundle takes vl-convert about a second to build: it is built
once and kept on disk, keyed by the vl-convert and Vega-Lite versions, under the user cache
folder (``$XDG_CACHE_HOME/sweeps`` or ``~/.cache/sweeps``), or a temporary folder where that is
not writable. A page on its own (``render(spec, "html")``) inlines it; the pages of an output
folder load the folder's one copy, ``vega/<bundle_name()>``, by relative path (``script``).
"""

from __future__ import annotations

import dataclasses
import html
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

import altair as alt
import vl_convert as vlc

from .drawing import DRAWN, Request, drawers
from .png import compact, compacted
from .theme import FONT, INK, SCREEN, Size

FORMATS = ("html", "png", "svg", "pdf")
"""What ``render`` writes; PNG at the size's scale (2x on screen, 300 dpi for print)."""


def vegalite_version() -> str | None:
    """The Vega-Lite version Altair writes, if vl-convert has it (else its latest) [-]."""
    wanted = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return wanted if wanted in vlc.get_vegalite_versions() else None


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError:
        return False
    return True


def cache_folder() -> Path:
    """Where the bundle is kept: the user cache folder, else a temporary one."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    folder = Path(base) / "sweeps"
    if _writable(folder):
        return folder
    return (
        Path(tempfile.gettempdir()) / f"sweeps-cache-{os.getuid() if hasattr(os, 'getuid') else 0}"
    )


def bundle_path() -> Path:
    """The cached bundle's file, named by the vl-convert and Vega-Lite versions."""
    version = getattr(vlc, "__version__", "unknown")
    return cache_folder() / f"vl-convert-{version}-vega-lite-{vegalite_version() or 'latest'}.js"


BUNDLE_FOLDER = "vega"
"""The folder of an output folder that holds its one copy of the bundle."""


def bundle_name() -> str:
    """The bundle's file name, by the vl-convert and Vega-Lite versions [-]."""
    return bundle_path().name


def bundle_file() -> str:
    """The bundle's path inside an output folder [-]."""
    return f"{BUNDLE_FOLDER}/{bundle_name()}"


BUILDING = threading.Lock()
"""Held while the bundle is read or built, so that render threads build it once."""


@lru_cache(maxsize=1)
def javascript() -> str:
    """Vega, Vega-Lite and vega-embed as one script, safe to inline in ``<script>`` [-]."""
    with BUILDING:
        return _bundle()


def _bundle() -> str:
    """The bundle from its cache file, else built by vl-convert and written there."""
    path = bundle_path()
    try:
        return path.read_text("utf-8")
    except OSError:
        pass
    bundle: str = vlc.javascript_bundle(None, vl_version=vegalite_version())  # type: ignore[arg-type]
    text = bundle.replace("</script", "<\\/script")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.partial")
        partial.write_text(text, "utf-8")
        partial.replace(path)
    except OSError:
        pass  # a read-only cache only costs the next run the second again
    return text


STYLE = f"""
* {{ box-sizing: border-box; }}
body {{ font-family: {FONT}; color: {INK}; margin: 1.5rem auto; max-width: 1200px;
       padding: 0 1rem; line-height: 1.4; }}
h1 {{ font-size: 1.5rem; }} h2 {{ font-size: 1.2rem; margin-top: 2rem; }}
figure {{ margin: 1rem 0 2rem; max-width: 100%; }}
figure svg, figure canvas {{ max-width: 100%; height: auto; }}
.vega-embed {{ max-width: 100%; }}
.table {{ max-width: 100%; overflow-x: auto; }}
table {{ border-collapse: collapse; font-size: 0.85rem; margin: 0.5rem 0 1rem; }}
th, td {{ border-bottom: 1px solid #ddd; padding: 0.25rem 0.5rem; text-align: right; }}
th {{ background: #f4f4f4; }} td:first-child, th:first-child {{ text-align: left; }}
ul.skipped {{ color: #555; }}
@media print {{
  body {{ margin: 0; max-width: none; }}
  figure {{ break-inside: avoid; page-break-inside: avoid; }}
  h2 {{ break-after: avoid; page-break-after: avoid; }}
  details {{ display: block; }} details > * {{ display: block; }}
}}
"""


def page(
    title: str,
    body: str,
    specs: Sequence[dict[str, Any]],
    script: str | None = None,
    style: str = "",
    tail: str = "",
) -> str:
    """An HTML page that opens offline: ``body``, whose ``<figure id="fig-N">`` placeholders are
    drawn as SVG by vega-embed (``figure_tag`` writes them), inlined, or loaded from the
    relative path ``script`` (an output folder's ``bundle_file()``); ``style`` and ``tail`` (a
    script run once the figures are drawn) are added to the page's own."""
    payload = json.dumps(list(specs)).replace("</", "<\\/")
    bundle = (
        f'<script src="{html.escape(script)}"></script>'
        if script
        else f"<script>{javascript()}</script>"
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{STYLE}{style}</style></head><body>
{body}
{bundle}
<script>
const specs = {payload};
window.sweepsDrawn = Promise.all(specs.map((spec, i) =>
  vegaEmbed("#fig-" + i, spec, {{renderer: "svg", actions: false}})
    .catch(error => console.error("chart " + i + ": " + error))));
{tail}
</script>
</body></html>
"""


def _lines(value: Any) -> list[str]:
    if isinstance(value, dict):
        return _lines(value.get("text", ""))
    return [str(v) for v in value] if isinstance(value, list) else [str(value)] if value else []


def caption(spec: dict[str, Any]) -> str:
    """The caption of a chart spec as a paper pastes it: its title on the first line, then
    its subtitle as one paragraph (the lines the figure wraps, joined) and the sentences
    that did not fit it (its ``description``, ``spec.shortened``) [-]."""
    head = spec.get("title", "")
    subtitle = head.get("subtitle", []) if isinstance(head, dict) else []
    more = [str(spec["description"])] if spec.get("description") else []
    title, body = " ".join(_lines(head)), " ".join([*_lines(subtitle), *more])
    return f"{title}\n\n{body}\n" if body else f"{title}\n"


def figure_tag(index: int, label: str, note: str = "") -> str:
    """The placeholder ``page`` draws spec ``index`` into, and ``note`` (the caption's
    sentences beyond the figure's subtitle) below it."""
    tag = f'<figure id="fig-{index}" class="chart" aria-label="{html.escape(label)}"></figure>'
    return tag + (f'<p class="note">{html.escape(note)}</p>' if note else "")


def render_spec(
    spec: dict[str, Any], formats: Iterable[str], size: Size = SCREEN
) -> dict[str, bytes]:
    """One chart spec in each of ``formats``, in this process: the SVG drawn once, PNG and
    PDF converted from it (the HTML page inlines the bundle)."""
    wanted = _checked(formats)
    out = {"html": html_page(spec)} if "html" in wanted else {}
    if set(DRAWN) & set(wanted):
        svg = vlc.vegalite_to_svg(spec, vl_version=vegalite_version(), allowed_base_urls=[])
        out["svg"] = svg.encode("utf-8")
        if "png" in wanted:
            out["png"] = compact(bytes(vlc.svg_to_png(svg, scale=size.png_scale)))
        if "pdf" in wanted:
            out["pdf"] = bytes(vlc.svg_to_pdf(svg))
    return {f: out[f] for f in wanted}


def html_page(spec: dict[str, Any], script: str | None = None) -> bytes:
    """The offline HTML page of one chart spec, titled by its title, the bundle inlined or
    loaded from ``script`` (a relative path) [-]."""
    title = spec.get("title", "chart")  # a string, lines, or {"text": either, ...}
    head = title.get("text", "chart") if isinstance(title, dict) else title
    name = " ".join(head) if isinstance(head, list) else str(head)
    return page(name, figure_tag(0, name), [spec], script).encode("utf-8")


def _checked(formats: Iterable[str]) -> list[str]:
    wanted = list(dict.fromkeys(formats))
    unknown = [f for f in wanted if f not in FORMATS]
    if unknown:
        msg = f"charts: unknown format {unknown[0]!r}; allowed: {list(FORMATS)}"
        raise ValueError(msg)
    return wanted


def render(spec: dict[str, Any], fmt: str, size: Size = SCREEN) -> bytes:
    """One chart spec as ``html`` (JavaScript inlined), ``png``, ``svg`` or ``pdf`` bytes."""
    return render_spec(spec, [fmt], size)[fmt]


def _draw_here(request: Request) -> dict[str, bytes]:
    spec, formats, _, scale = request
    return render_spec(spec, formats, dataclasses.replace(SCREEN, png_scale=scale))


class Renderer:
    """Renders specs while the caller builds the next ones: ``submit`` returns at once;
    ``done`` hands back the finished renders in the order submitted.

    Each spec is drawn (SVG, and PNG and PDF from it) by one of the processes of
    ``sweeps.charts.drawing`` (vl-convert holds the GIL while it draws), or, where those cannot
    run, on a thread here; the HTML page is written here. Making one starts the processes, if
    a run has not already (``drawing.start``).
    """

    def __init__(
        self,
        formats: Sequence[str],
        size: Size = SCREEN,
        workers: int = 2,
        script: str | None = None,
    ) -> None:
        self.formats = tuple(_checked(formats))
        self.script = script
        self.size = size
        self.drawn = tuple(f for f in self.formats if f in DRAWN)
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="sweeps-render")
        self.pending: list[tuple[str, Future[bytes] | None, Future[dict[str, bytes]] | None]] = []
        self.drawers = drawers() if self.drawn else None
        if "html" in self.formats:  # read (or, the first time, built) while specs are made
            self.pool.submit(javascript)

    def submit(self, stem: str, spec: dict[str, Any]) -> None:
        """Start rendering ``spec`` in every format, to be written as ``stem``."""
        page = self.pool.submit(html_page, spec, self.script) if "html" in self.formats else None
        job = None
        if self.drawn:
            request: Request = (spec, self.drawn, vegalite_version(), self.size.png_scale)
            job = (
                self.drawers.submit(request, _draw_here)
                if self.drawers is not None
                else self.pool.submit(render_spec, spec, self.drawn, self.size)
            )
        self.pending.append((stem, page, job))

    def done(self, keep: int = 0) -> list[tuple[str, dict[str, bytes] | Exception]]:
        """Wait for all but the last ``keep`` renders submitted; ``(stem, {format: bytes})``,
        or ``(stem, error)`` where drawing that chart raised (nothing of it is written)."""
        cut = max(0, len(self.pending) - keep)
        finished, self.pending = self.pending[:cut], self.pending[cut:]
        out: list[tuple[str, dict[str, bytes] | Exception]] = []
        for stem, page, job in finished:
            try:
                drawn = compacted(job.result()) if job is not None else {}
                both = {**({"html": page.result()} if page is not None else {}), **drawn}
            except Exception as error:  # one chart's failure: handed back, the others go on
                out.append((stem, error))
                continue
            out.append((stem, {f: both[f] for f in self.formats}))
        return out

    def close(self) -> None:
        """Stop the threads (after the pending renders); the processes stay for the next."""
        self.pool.shutdown(wait=True)
