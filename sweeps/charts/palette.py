"""Colours that stay apart for colour-blind readers, and one colour and marker per device.

``PALETTE`` is Okabe and Ito's colour-blind-safe set without its yellow (too light for a line
on white) and its black (the annotations' ink). ``distances`` simulates protanopia,
deuteranopia and tritanopia with the matrices of Machado, Oliveira and Fernandes (2009,
severity 1, applied in linear RGB) and measures every pair with CIEDE2000 (Sharma, Wu and
Dalal 2005); the tests hold every pair of the palette, and of the categorical colours, above
``MIN_DELTA_E``.

``DEVICE_ORDER`` lists every catalog device once, in a fixed order: a device's colour and
marker come from its position there, never from a config's order, so a B200 looks the same in
every study. Pure functions of arrays: no I/O.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterable, Sequence
from typing import Final

import numpy as np

PALETTE: Final = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7")
"""Okabe-Ito blue, orange, bluish green, vermillion, sky blue, reddish purple."""
SHAPES: Final = ("circle", "square", "triangle-up", "diamond", "cross", "triangle-down", "wedge")
"""Markers beside the colours: seven against six colours, so that the (colour, marker) pair
of each of the first 42 positions is its own."""
MIN_DELTA_E: Final = 10.0
"""Least CIEDE2000 distance [1] between two colours a chart shows side by side, under normal
vision and each simulated dichromacy (2.3 is a just-noticeable difference; 10 reads at a glance
on a thin line)."""

DEVICE_ORDER: Final = (
    "h100-sxm", "h200", "b200", "mi300x", "a100-80gb", "gb200",
    "b300", "mi355x", "h100-pcie", "h100-nvl", "h200-nvl", "gh200",
    "gb300", "mi325x", "mi350x", "mi250x", "a100-40gb", "h20",
    "l4", "l40s", "rtx-pro-6000", "rtx-4090", "rtx-5090", "tpu-v4",
    "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu7x", "gaudi2", "gaudi3",
    "trainium2", "inferentia2", "m2-ultra", "m3-max", "m4-max",
)  # fmt: skip
"""Every catalog device, the most compared first (so the devices of one study mostly get
colours of their own); a device not listed (one a config defines) takes the position its id
hashes to, past the listed ones: the same in every study."""

MACHADO: Final = {
    "protanopia": np.array(
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
         [-0.003882, -0.048116, 1.051998]]
    ),
    "deuteranopia": np.array(
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
         [-0.011820, 0.042940, 0.968881]]
    ),
    "tritanopia": np.array(
        [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
         [0.004733, 0.691367, 0.303900]]
    ),
}  # fmt: skip
"""Machado et al. (2009) dichromacy matrices at severity 1, on linear RGB [1]."""
VISIONS: Final = ("normal", *MACHADO)

_SRGB_TO_XYZ: Final = np.array(
    [[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
     [0.0193339, 0.1191920, 0.9503041]]
)  # fmt: skip
_D65: Final = np.array([0.95047, 1.0, 1.08883])


def device_position(device: str) -> int:
    """The position [-] of ``device`` (a catalog id) in ``DEVICE_ORDER``; an id not listed
    hashes (CRC-32, stable across runs) to a position past the listed ones."""
    if device in DEVICE_ORDER:
        return DEVICE_ORDER.index(device)
    return len(DEVICE_ORDER) + zlib.crc32(device.encode("utf-8")) % 1000


def device_colour(device: str) -> str:
    """The colour of ``device`` (a catalog id) in every chart [-]."""
    return PALETTE[device_position(device) % len(PALETTE)]


def device_shape(device: str) -> str:
    """The marker of ``device`` (a catalog id) in every chart [-]."""
    return SHAPES[device_position(device) % len(SHAPES)]


def rgb(colour: str) -> np.ndarray:
    """``#rrggbb`` as sRGB in [0, 1] [1]."""
    return np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255.0


def linear(srgb: np.ndarray) -> np.ndarray:
    """sRGB [1] to linear RGB [1] (IEC 61966-2-1)."""
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def simulate(colour: str, vision: str) -> np.ndarray:
    """Linear RGB [1] of ``colour`` as seen with ``vision`` (``VISIONS``)."""
    lin = linear(rgb(colour))
    return lin if vision == "normal" else np.clip(MACHADO[vision] @ lin, 0.0, 1.0)


def lab(lin: np.ndarray) -> np.ndarray:
    """CIELAB (D65) [1] of linear RGB [1]."""
    t = (_SRGB_TO_XYZ @ lin) / _D65
    e = 6.0 / 29.0
    f = np.where(t > e**3, np.cbrt(t), t / (3 * e**2) + 4.0 / 29.0)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def ciede2000(one: Sequence[float] | np.ndarray, two: Sequence[float] | np.ndarray) -> float:
    """CIEDE2000 colour difference [1] of two CIELAB colours (Sharma et al. 2005)."""
    l1, a1, b1 = (float(v) for v in one)
    l2, a2, b2 = (float(v) for v in two)
    c_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_mean**7 / (c_mean**7 + 25.0**7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = np.hypot(a1, b1), np.hypot(a2, b2)
    h1, h2 = np.degrees(np.arctan2(b1, a1)) % 360, np.degrees(np.arctan2(b2, a2)) % 360
    chroma = c1 * c2 != 0
    dh = (h2 - h1 + 180) % 360 - 180 if chroma else 0.0
    d_h = 2 * np.sqrt(c1 * c2) * np.sin(np.radians(dh / 2))
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    h_mean = ((h1 + h2) / 2 + (180 if chroma and abs(h1 - h2) > 180 else 0)) % 360
    h_mean = h_mean if chroma else h1 + h2
    t = (
        1
        - 0.17 * np.cos(np.radians(h_mean - 30))
        + 0.24 * np.cos(np.radians(2 * h_mean))
        + 0.32 * np.cos(np.radians(3 * h_mean + 6))
        - 0.20 * np.cos(np.radians(4 * h_mean - 63))
    )
    rotation = 30 * np.exp(-(((h_mean - 275) / 25) ** 2))
    r_c = 2 * np.sqrt(c_mean**7 / (c_mean**7 + 25.0**7))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / np.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    r_t = -np.sin(np.radians(2 * rotation)) * r_c
    dl, dc, dhh = (l2 - l1) / s_l, (c2 - c1) / s_c, d_h / s_h
    return float(np.sqrt(dl**2 + dc**2 + dhh**2 + r_t * dc * dhh))


def distances(colours: Iterable[str], vision: str) -> dict[tuple[str, str], float]:
    """CIEDE2000 [1] of every pair of ``colours`` as seen with ``vision``."""
    seen = {c: lab(simulate(c, vision)) for c in dict.fromkeys(colours)}
    return {(a, b): ciede2000(seen[a], seen[b]) for a, b in itertools.combinations(seen, 2)}
