"""The text boxes of an SVG that Vega drew, and which of them overlap.

Each ``<text>`` (and each ``<tspan>`` line of it) gets a box estimated from its font size and
its string: DejaVu Sans advance widths by character class, bold 13 % wider (both within 5 %
of the ink of vl-convert's PNG); from 0.75 em above the baseline to 0.22 em below; placed by ``text-anchor`` and mapped through every transform
of it and its ancestors (translate, rotate, scale, matrix), so a rotated tick label is a
rotated box. Two boxes overlap when the separating-axis test finds no axis between them,
after each is shrunk by ``SLACK`` on every side (an estimate: touching is not overlapping).
Hidden text (``opacity="0"``, which Vega uses for labels its overlap rule removed) and empty
text are left out.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np

SLACK = 0.3
"""Shrink of each estimated box on every side [px]."""
NS = "{http://www.w3.org/2000/svg}"

WIDTHS = {
    **dict.fromkeys("0123456789", 0.636),
    **dict.fromkeys(" ", 0.318),
    **dict.fromkeys(".,:;'|!", 0.32),
    **dict.fromkeys("ijlft()[]", 0.33),
    **dict.fromkeys("mwMW%", 0.92),
    **dict.fromkeys("ABCDEFGHKNOPQRSTUVXYZ&", 0.72),
    **dict.fromkeys("-", 0.36),
}
"""DejaVu Sans advance widths [em] by character; any other character is 0.6 em."""


def text_width(text: str, size: float, bold: bool = False) -> float:
    """Estimated advance width [px] of ``text`` at font ``size`` [px]."""
    em = sum(WIDTHS.get(c, 0.6) for c in text)
    return em * size * (1.13 if bold else 1.0)


def _matrix(transform: str) -> np.ndarray:
    out = np.eye(3)
    for name, args in re.findall(r"(\w+)\s*\(([^)]*)\)", transform or ""):
        v = [float(a) for a in re.split(r"[\s,]+", args.strip()) if a]
        if name == "translate":
            m = np.array([[1, 0, v[0]], [0, 1, v[1] if len(v) > 1 else 0], [0, 0, 1]])
        elif name == "scale":
            sy = v[1] if len(v) > 1 else v[0]
            m = np.array([[v[0], 0, 0], [0, sy, 0], [0, 0, 1]])
        elif name == "rotate":
            a = math.radians(v[0])
            r = np.array([[math.cos(a), -math.sin(a), 0], [math.sin(a), math.cos(a), 0], [0, 0, 1]])
            cx, cy = (v[1], v[2]) if len(v) == 3 else (0.0, 0.0)
            to = np.array([[1, 0, cx], [0, 1, cy], [0, 0, 1]])
            back = np.array([[1, 0, -cx], [0, 1, -cy], [0, 0, 1]])
            m = to @ r @ back
        elif name == "matrix":
            m = np.array([[v[0], v[2], v[4]], [v[1], v[3], v[5]], [0, 0, 1]])
        else:
            continue
        out = out @ m
    return out


@dataclass(frozen=True)
class Box:
    """One line of text: its string and the four corners of its box [px]."""

    text: str
    corners: np.ndarray  # 4 x 2

    def overlaps(self, other: Box) -> bool:
        """Whether the two convex quadrilaterals intersect (separating-axis test)."""
        for quad in (self.corners, other.corners):
            for i in range(4):
                edge = quad[(i + 1) % 4] - quad[i]
                axis = np.array([-edge[1], edge[0]])
                if not axis.any():
                    continue
                a, b = self.corners @ axis, other.corners @ axis
                if a.max() <= b.min() or b.max() <= a.min():
                    return False
        return True


def _size(element: ET.Element, inherited: float) -> float:
    found = element.get("font-size")
    return float(found.rstrip("px")) if found else inherited


def boxes(svg: str) -> list[Box]:
    """Every visible line of text of ``svg`` as a ``Box``."""
    root = ET.fromstring(svg)
    out: list[Box] = []

    def walk(node: ET.Element, matrix: np.ndarray, size: float) -> None:
        here = matrix @ _matrix(node.get("transform", ""))
        size = _size(node, size)
        if node.get("opacity") == "0" or node.get("fill-opacity") == "0":
            return
        if node.tag == f"{NS}text":
            out.extend(_lines(node, here, size))
            return
        for child in node:
            walk(child, here, size)

    walk(root, np.eye(3), 10.0)
    return out


def _lines(node: ET.Element, matrix: np.ndarray, size: float) -> list[Box]:
    anchor = node.get("text-anchor", "start")
    bold = node.get("font-weight") in ("bold", "700")
    spans = list(node.iter(f"{NS}tspan"))
    lines = [(node.text or "", 0.0)] if not spans else []
    y = 0.0
    for span in spans:
        y += float(span.get("dy", "0").rstrip("px") or 0)
        lines.append((span.text or "", y))
    found = []
    for text, dy in lines:
        if not text.strip():
            continue
        width = text_width(text, size, bold)
        left = {"start": 0.0, "middle": -width / 2, "end": -width}.get(anchor, 0.0)
        x0, x1 = left + SLACK, left + width - SLACK
        y0, y1 = dy - 0.75 * size + SLACK, dy + 0.22 * size - SLACK
        local = np.array([[x0, y0, 1], [x1, y0, 1], [x1, y1, 1], [x0, y1, 1]]).T
        found.append(Box(text, (matrix @ local)[:2].T))
    return found


def overlapping(svg: str) -> list[tuple[str, str]]:
    """The pairs of visible text lines of ``svg`` whose boxes overlap."""
    found = boxes(svg)
    lo = np.array([b.corners.min(axis=0) for b in found]).reshape(-1, 2)
    hi = np.array([b.corners.max(axis=0) for b in found]).reshape(-1, 2)
    pairs = []
    for i in range(len(found)):
        near = np.flatnonzero(
            (lo[i + 1 :, 0] < hi[i, 0])
            & (hi[i + 1 :, 0] > lo[i, 0])
            & (lo[i + 1 :, 1] < hi[i, 1])
            & (hi[i + 1 :, 1] > lo[i, 1])
        )
        for j in near + i + 1:
            if found[i].overlaps(found[j]):
                pairs.append((found[i].text, found[j].text))
    return pairs
