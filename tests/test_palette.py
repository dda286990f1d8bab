"""Colours for colour-blind readers, and one colour and marker per device in every study."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sweeps.catalog import load_catalog, unique
from sweeps.charts import compare_chart
from sweeps.charts.palette import (
    DEVICE_ORDER,
    MACHADO,
    MIN_DELTA_E,
    PALETTE,
    SHAPES,
    VISIONS,
    ciede2000,
    device_colour,
    device_position,
    device_shape,
    distances,
    lab,
    linear,
    rgb,
    simulate,
)
from sweeps.charts.theme import COLORS, SERIES
from sweeps.config import parse_config
from sweeps.grid import build_grid

SHARMA = [  # Sharma, Wu and Dalal (2005), table 1: pairs 1, 7, 17, 19, 25 and their dE00
    ((50.0, 2.6772, -79.7751), (50.0, 0.0, -82.7485), 2.0425),
    ((50.0, 0.0, 0.0), (50.0, -1.0, 2.0), 2.3669),
    ((50.0, 2.5, 0.0), (73.0, 25.0, -18.0), 27.1492),
    ((50.0, 2.5, 0.0), (56.0, -27.0, -3.0), 31.9030),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
]
OLD_SERIES = ("#1b6ca8", "#d1495b", "#2a9d6f", "#edae49", "#6a4c93", "#00a6c0", "#8c564b")


@pytest.mark.parametrize(("one", "two", "expected"), SHARMA)
def test_ciede2000_matches_sharmas_published_pairs(
    one: tuple[float, ...], two: tuple[float, ...], expected: float
) -> None:
    assert ciede2000(one, two) == pytest.approx(expected, abs=1e-4)
    assert ciede2000(two, one) == pytest.approx(expected, abs=1e-4)  # symmetric


def test_lab_of_white_black_and_srgb_red() -> None:
    assert lab(linear(rgb("#ffffff"))) == pytest.approx([100.0, 0.0, 0.0], abs=1e-3)
    assert lab(linear(rgb("#000000"))) == pytest.approx([0.0, 0.0, 0.0], abs=1e-9)
    assert lab(linear(rgb("#ff0000"))) == pytest.approx([53.24, 80.09, 67.20], abs=0.02)


@pytest.mark.parametrize("vision", list(MACHADO))
def test_the_dichromacy_matrices_keep_white_white(vision: str) -> None:
    assert MACHADO[vision].sum(axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert simulate("#ffffff", vision) == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)


def test_the_old_palette_fails_where_the_issue_measured_it() -> None:
    """The five-hue series had blue against purple at dE00 4.0 for a deuteranope."""
    pair = distances(["#1b6ca8", "#6a4c93"], "deuteranopia")[("#1b6ca8", "#6a4c93")]
    assert pair == pytest.approx(4.0, abs=0.05)
    worst = min(distances(OLD_SERIES, "deuteranopia").values())
    assert worst < MIN_DELTA_E  # the check can fail


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize(
    "colours",
    [PALETTE, tuple(COLORS.values()), SERIES],
    ids=["palette", "categories", "series"],
)
def test_every_pair_stays_apart_for_every_vision(colours: tuple[str, ...], vision: str) -> None:
    found = distances(colours, vision)
    worst = min(found, key=found.__getitem__)
    assert found[worst] > MIN_DELTA_E, f"{worst} at dE00 {found[worst]:.1f} ({vision})"


def test_every_catalog_device_has_one_place_in_the_fixed_order() -> None:
    ids = {h.id for h in unique(load_catalog().hardware)}
    assert len(DEVICE_ORDER) == len(set(DEVICE_ORDER))
    assert set(DEVICE_ORDER) == ids
    looks = {(device_colour(d), device_shape(d)) for d in DEVICE_ORDER}
    assert len(looks) == len(DEVICE_ORDER)  # colour and marker together tell every device
    assert len(PALETTE) * len(SHAPES) >= len(DEVICE_ORDER)
    assert np.gcd(len(PALETTE), len(SHAPES)) == 1


def test_a_device_outside_the_catalog_gets_the_same_look_every_time() -> None:
    assert device_position("my-own-accelerator") == device_position("my-own-accelerator")
    assert device_position("my-own-accelerator") >= len(DEVICE_ORDER)
    assert device_colour("my-own-accelerator") in PALETTE


STUDY = """
[sweep]
name = "colours"
[axes]
model = ["llama-3-8b"]
hardware = {hardware}
batch = [1, 64]
context = [1024]
kv_heads = ["native"]
"""


def _colour_of(spec: dict[str, Any], shown: str) -> str:
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    return str(scale["range"][scale["domain"].index(shown)])


def test_two_studies_that_share_b200_draw_it_in_the_same_colour() -> None:
    first = build_grid(parse_config(STUDY.format(hardware='["h200", "b200"]')))
    second = build_grid(parse_config(STUDY.format(hardware='["b200", "mi300x", "a100-80gb"]')))
    name = str(first["hardware_name"].sel(hardware="b200").values)
    one, two = compare_chart(first).to_dict(), compare_chart(second).to_dict()
    assert _colour_of(one, name) == _colour_of(two, name) == device_colour("b200")
    others = [str(n) for n in second["hardware_name"].values]
    assert len({_colour_of(two, n) for n in others}) == len(others)  # one study: all apart
