"""Compact PNG files: the same pixels as vl-convert drew, in fewer bytes."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
import vl_convert as vlc

from sweeps.charts.png import SIGNATURE, chunks, compact, compacted, pixels


def _chunk(kind: bytes, payload: bytes) -> bytes:
    return (
        struct.pack(">I", len(payload))
        + kind
        + payload
        + struct.pack(">I", zlib.crc32(kind + payload))
    )


def encode_loop(image: np.ndarray, row_filter: int) -> bytes:
    """A PNG of ``image`` (RGBA) written byte by byte, each row filtered None (0) or Sub (1)."""
    height, width, _ = image.shape
    raw = bytearray()
    for y in range(height):
        raw.append(row_filter)
        row = image[y].reshape(-1).tolist()
        for i, value in enumerate(row):
            left = row[i - 4] if i >= 4 and row_filter == 1 else 0
            raw.append((value - left) % 256)
    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(bytes(raw)))
        + _chunk(b"IEND", b"")
    )


def decode_loop(data: bytes) -> np.ndarray:
    """The pixels of a non-interlaced 8-bit RGB or RGBA PNG, every filter undone byte by byte."""
    found = dict(chunks(data))
    width, height, _, colour, _, _, _ = struct.unpack(">IIBBBBB", found[b"IHDR"])
    bpp = 4 if colour == 6 else 3
    raw = zlib.decompress(b"".join(p for k, p in chunks(data) if k == b"IDAT"))
    stride, out, prev = width * bpp, [], [0] * (width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], list(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a, b, c = (
                (line[i - bpp] if i >= bpp else 0),
                prev[i],
                (prev[i - bpp] if i >= bpp else 0),
            )
            p = a + b - c
            paeth = (
                a
                if abs(p - a) <= abs(p - b) and abs(p - a) <= abs(p - c)
                else (b if abs(p - b) <= abs(p - c) else c)
            )
            line[i] = (line[i] + [0, a, b, (a + b) // 2, paeth][kind]) % 256
        out.append(line)
        prev = line
    return np.array(out, dtype=np.uint8).reshape(height, width, bpp)


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    rng = np.random.default_rng(7)
    picture = np.full((23, 31, 4), 255, np.uint8)
    picture[..., :3] = rng.integers(0, 256, (23, 31, 3))
    picture[5:15, 3:20, :3] = (12, 200, 90)  # a flat block, as a chart has
    return picture


@pytest.mark.parametrize("row_filter", [0, 1])
def test_pixels_reads_what_a_plain_loop_wrote(image: np.ndarray, row_filter: int) -> None:
    assert (pixels(encode_loop(image, row_filter)) == image).all()


def test_compact_keeps_every_pixel_and_drops_only_the_opaque_alpha(image: np.ndarray) -> None:
    data = encode_loop(image, 1)
    small = compact(data)
    assert (decode_loop(small) == image[..., :3]).all()
    assert compact(small) == small  # already compact: returned as it is


def test_a_translucent_png_keeps_its_alpha(image: np.ndarray) -> None:
    see_through = image.copy()
    see_through[0, 0, 3] = 10
    data = encode_loop(see_through, 1)
    out = compact(data)
    assert out == data or (decode_loop(out) == see_through).all()


def test_what_it_cannot_read_comes_back_as_it_came() -> None:
    assert compact(b"not a png") == b"not a png"
    assert compacted({"svg": b"<svg/>"}) == {"svg": b"<svg/>"}


def test_a_chart_from_vl_convert_shrinks_and_keeps_its_resolution_and_pixels() -> None:
    spec = {
        "data": {"values": [{"x": i, "y": i * i % 7} for i in range(20)]},
        "mark": "line",
        "encoding": {
            "x": {"field": "x", "type": "quantitative"},
            "y": {"field": "y", "type": "quantitative"},
        },
    }
    data = bytes(vlc.vegalite_to_png(spec, scale=1))
    small = compact(data)
    assert len(small) < 0.8 * len(data)
    original = pixels(data)
    assert original is not None
    assert (original[..., 3] == 255).all()
    assert (pixels(small) == original[..., :3]).all()
    assert dict(chunks(small)).get(b"pHYs") == dict(chunks(data)).get(b"pHYs")
