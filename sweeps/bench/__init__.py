"""``sweeps bench``: how fast the engine is, against the limits that matter, in one run.

A **point** is one cell of the decode grid or of the prefill grid (one row of ``decode`` or
``prefill`` Parquet) with every output variable of its phase evaluated: the full-rank ones
(bottleneck, attainable FLOP/s, utilization, feasible, step time / TTFT, tokens/s) written to
memory, the lower-rank ones (ceiling, knee, max batch, ...) held once per configuration, as
the Dataset stores them. Points/s counts decode plus prefill points per second of
``build_grid``, single-threaded, float64.

Measured on one grid, in one process (except the end-to-end run):

a. engine points/s (``build_grid``);
b. the same formulas in a plain scalar Python loop over a sample of points, and the ratio;
c. this machine's write limit for the bytes the engine writes: ``numpy.ndarray.fill`` and
   ``numpy.copyto`` into freshly allocated arrays of the same shapes and dtypes, and the
   engine's share of it; (a) and (c) take turns, best of five each, so that both see the
   same moments of a machine whose speed moves; each call is timed as ``timeit`` does
   (garbage collector off), with nothing of the previous call still held;
d. the export as ``run`` does it (``write_tables``: build each table's frame from the grid and
   write it) against Polars' own ``write_parquet`` (same settings, no metadata) of equal
   frames built beforehand, every column one contiguous array;
e. an end-to-end ``run_to_folder`` of a larger grid, streamed under a memory budget, in a
   subprocess, with its peak RSS.
"""

from __future__ import annotations

import gc
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweeps.config import Sweep, parse_config

POINT = (
    "one decode or prefill grid cell with all its outputs evaluated; points/s = "
    "(decode + prefill points) / seconds of build_grid, one thread, float64"
)


def _config(
    name: str,
    models: list[str],
    hardware: list[str],
    batch: int,
    contexts: list[int],
    kv_heads: list[str | int],
    kv_dtypes: list[str],
    weight_dtypes: list[str],
) -> str:
    return "\n".join(
        [
            "[sweep]",
            f'name = "{name}"',
            "[axes]",
            f"model = {json.dumps(models)}",
            f"hardware = {json.dumps(hardware)}",
            f"batch = {{ start = 1, stop = {batch} }}",
            f"context = {json.dumps(contexts)}",
            f"kv_heads = {json.dumps(kv_heads)}",
            f"kv_dtype = {json.dumps(kv_dtypes)}",
            f"weight_dtype = {json.dumps(weight_dtypes)}",
            "[outputs]",
            "charts = []",
            'grid = "none"',
            "",
        ]
    )


def bench_configs(quick: bool) -> tuple[str, str]:
    """Config texts of the engine grid and of the larger end-to-end grid."""
    from sweeps.catalog import load_catalog, unique

    catalog = load_catalog()
    models = [m.id for m in unique(catalog.models) if not m.is_mla]
    hardware = [h.id for h in unique(catalog.hardware)]
    contexts = [256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
    if quick:
        engine = _config(
            "bench-quick",
            models[:3],
            hardware[:3],
            64,
            contexts[:4],
            ["native", 1],
            ["bf16", "fp8"],
            ["bf16"],
        )
        e2e = _config(
            "bench-quick-e2e",
            models[:4],
            hardware[:4],
            128,
            contexts[:4],
            ["native", 1],
            ["bf16", "fp8"],
            ["bf16"],
        )
        return engine, e2e
    engine = _config(
        "bench-engine",
        models,
        hardware,
        512,
        contexts[:8],
        ["native", 1],
        ["bf16", "fp8"],
        ["bf16"],
    )
    e2e = _config(
        "bench-e2e",
        models,
        hardware,
        1024,
        contexts,
        ["native", 1],
        ["bf16", "fp8", "int4"],
        ["bf16"],
    )
    return engine, e2e


def _timed(function: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds of one call, and its result, measured the way ``timeit`` does.

    The garbage collector runs before the call and is off during it, so a collection of
    unrelated objects (a build creates thousands) does not land in one call's time.
    """
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        result = function()
        return time.perf_counter() - start, result
    finally:
        if enabled:
            gc.enable()


def _interleaved(
    functions: dict[str, Callable[[], Any]], rounds: int
) -> dict[str, tuple[float, Any]]:
    """Best time (and last result) of each function, run in turn ``rounds`` times.

    Taking turns makes every function see the same moments of a noisy machine, so the ratios
    between them hold even when the machine's speed moves between runs. A function's previous
    result is released before it runs again: a single call (``sweeps run``) has no earlier
    grid in memory, and with the previous 0.8 GB grid held the median build took 2.4x longer.
    """
    best: dict[str, tuple[float, Any]] = {name: (math.inf, None) for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            best[name] = (best[name][0], None)
            seconds, result = _timed(function)
            best[name] = (min(best[name][0], seconds), result)
    return best


# --- (b) the scalar loop ------------------------------------------------------------------------


def _scalar_point(
    sweep: Sweep,
    m: Any,
    hw: Any,
    tp: int,
    batch: int,
    context: int,
    prompt: int,
    kv_label: str,
    kv_dtype: Any,
    weight_dtype: Any,
) -> tuple[float, ...]:
    """Every full-rank output of one decode and one prefill point, one float at a time."""
    from sweeps import physics

    opt = sweep.options
    on = 1.0 if opt.attention_flops else 0.0
    bw = hw.bandwidth * opt.bandwidth_efficiency
    peak_raw = hw.peak_flops[opt.compute_dtype]
    peak = peak_raw * opt.compute_efficiency
    kv_heads = m.kv_heads if kv_label == "native" else int(kv_label)
    latent = (m.kv_lora_rank + m.qk_rope_head_dim) if m.is_mla else 0
    attention_dim = (2 * m.kv_lora_rank + m.qk_rope_head_dim) if m.is_mla else 2 * m.head_dim
    window = m.sliding_window if m.sliding_window > 0 else math.inf
    kv_elements = latent if m.is_mla else 2 * kv_heads * m.head_dim
    shards = physics.kv_shards(tp, 1 if m.is_mla else kv_heads)
    wb, kb = weight_dtype.bytes_per_element, kv_dtype.bytes_per_element
    w_dev = physics.weight_bytes(m.params, wb) / tp
    read = (
        physics.params_read(m.params, m.active_params, m.experts, m.experts_per_token, batch)
        * wb
        / tp
    )
    layer_tokens = physics.kv_cached_layer_tokens(context, m.layers, m.local_layers, window)
    kv_dev = physics.kv_bytes_per_sequence(kv_elements, kb, layer_tokens) / shards
    f_seq = (
        physics.decode_flops_per_sequence(
            m.active_params,
            physics.attention_flops_per_token(m.heads, attention_dim, layer_tokens),
            on,
        )
        / tp
    )
    flops = physics.decode_flops(batch, f_seq)
    step_bytes = physics.decode_bytes(read, batch, kv_dev)
    ai = physics.arithmetic_intensity(flops, step_bytes)
    ridge = physics.ridge_point(peak, bw)
    attainable = physics.attainable_flops(ai, peak, bw)
    max_batch = physics.max_batch(hw.memory, opt.memory_reserve, w_dev, kv_dev)
    step = physics.roofline_time(flops, step_bytes, peak, bw)
    # prefill
    p_tokens = physics.kv_cached_layer_tokens(prompt, m.layers, m.local_layers, window)
    p_kv = physics.kv_bytes_per_sequence(kv_elements, kb, p_tokens) / shards
    pairs = physics.prefill_attention_pairs(prompt, m.layers, m.local_layers, window)
    p_flops = (
        physics.prefill_flops(batch, prompt, m.active_params, m.heads, attention_dim, pairs, on)
        / tp
    )
    p_read = (
        physics.params_read(
            m.params, m.active_params, m.experts, m.experts_per_token, batch * prompt
        )
        * wb
        / tp
    )
    p_bytes = physics.prefill_bytes(p_read, batch, p_kv)
    p_ai = physics.arithmetic_intensity(p_flops, p_bytes)
    p_attainable = physics.attainable_flops(p_ai, peak, bw)
    p_max = physics.max_batch(hw.memory, opt.memory_reserve, w_dev, p_kv)
    return (
        float(physics.is_compute_bound(ai, ridge)),
        float(attainable),
        float(physics.utilization(attainable, peak_raw)),
        float(batch <= max_batch),
        float(step),
        float(physics.tokens_per_second(batch, step)),
        float(physics.is_compute_bound(p_ai, ridge)),
        float(p_attainable),
        float(physics.utilization(p_attainable, peak_raw)),
        float(batch <= p_max),
        float(physics.roofline_time(p_flops, p_bytes, peak, bw)),
    )


def _sample(sweep: Sweep, size: int, seed: int = 4) -> list[tuple[int, ...]]:
    rng = random.Random(seed)
    sizes = (
        len(sweep.models),
        len(sweep.hardware),
        len(sweep.tp),
        len(sweep.batch),
        len(sweep.context),
        len(sweep.kv_heads),
        len(sweep.kv_dtype),
        len(sweep.weight_dtype),
    )
    return [tuple(rng.randrange(n) for n in sizes) for _ in range(size)]


def scalar_loop(sweep: Sweep, sample: list[tuple[int, ...]]) -> list[tuple[float, ...]]:
    """The scalar loop over ``sample`` (indices into the axes; prefill uses the same index
    into ``prompt`` as into ``context``, which is the same axis in the bench grids)."""
    out = []
    for mi, hi, ti, bi, ci, ki, di, wi in sample:
        out.append(
            _scalar_point(
                sweep,
                sweep.models[mi],
                sweep.hardware[hi],
                sweep.tp[ti],
                sweep.batch[bi],
                sweep.context[ci],
                sweep.prompt[ci],
                sweep.kv_heads[ki],
                sweep.kv_dtype[di],
                sweep.weight_dtype[wi],
            )
        )
    return out


def _check(ds: Any, sample: list[tuple[int, ...]], values: list[tuple[float, ...]]) -> float:
    """Largest relative difference between the scalar loop and the engine on the sample."""
    import numpy as np

    names = (
        "bottleneck",
        "attainable_flops",
        "utilization",
        "feasible",
        "step_time_s",
        "tokens_per_s",
        "prefill_bottleneck",
        "prefill_attainable_flops",
        "prefill_utilization",
        "prefill_feasible",
        "ttft_s",
    )
    worst = 0.0
    for index, row in zip(sample, values, strict=True):
        for name, scalar in zip(names, row, strict=True):
            da = ds[name]
            at = {
                d: index[i]
                for i, d in enumerate(
                    (
                        "model",
                        "hardware",
                        "tp",
                        "batch",
                        "prompt" if "prompt" in da.dims else "context",
                        "kv_heads",
                        "kv_dtype",
                        "weight_dtype",
                    )
                )
                if d in da.dims
            }
            engine = float(da.isel(at).values)
            if np.isfinite(engine) or np.isfinite(scalar):
                worst = max(worst, abs(engine - scalar) / max(abs(engine), 1e-300))
    return worst


# --- (c) the write limit -----------------------------------------------------------------------


def write_limit(
    shapes: list[tuple[tuple[int, ...], Any]],
) -> tuple[Callable[[], None], Callable[[], None]]:
    """Two functions: ``fill`` and ``copyto`` into fresh arrays of these shapes and dtypes."""
    import numpy as np

    def fill() -> None:
        for shape, dtype in shapes:
            np.empty(shape, dtype).fill(1)

    sources = [np.ones(shape, dtype) for shape, dtype in shapes]

    def copy() -> None:
        for source in sources:
            np.copyto(np.empty_like(source), source)

    return fill, copy


# --- (e) end to end ------------------------------------------------------------------------------

_CHILD = """
import json, resource, sys, time
from sweeps.config import parse_config
from sweeps.pipeline import run_to_folder
sweep = parse_config(open(sys.argv[1]).read(), sys.argv[1])
start = time.perf_counter()
result = run_to_folder(sweep, sys.argv[2], force=True, memory_budget=int(sys.argv[3]))
seconds = time.perf_counter() - start
# VmHWM is this process's own high-water mark; ru_maxrss would also count the parent's pages
# shared at fork time (Linux folds them in across execve).
try:
    status = open("/proc/self/status").read().split("VmHWM:")[1]
    peak = int(status.split()[0]) * 1024
except (OSError, IndexError):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "chunks": result.chunks, "layout": result.layout,
                  "rows": result.rows, "peak_rss_bytes": peak}))
"""


def end_to_end(text: str, budget: int, folder: Path) -> dict[str, Any]:
    """Run ``text`` through ``run_to_folder`` in a fresh interpreter; its time and peak RSS."""
    config = folder / "e2e.toml"
    config.write_text(text, "utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(config), str(folder / "out"), str(budget)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        msg = f"end-to-end run failed: {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run_bench(
    quick: bool = False, e2e_budget: int = 2 * 2**30, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run the five measurements; a JSON-ready dict of figures (seconds, points, bytes)."""
    import numpy as np

    from sweeps.export.parquet import WRITE_OPTIONS, frames, write_tables
    from sweeps.grid import build_grid
    from sweeps.grid.memory import BASE_BYTES

    say = progress or (lambda _: None)
    engine_text, e2e_text = bench_configs(quick)
    sweep = parse_config(engine_text, "<bench>")
    points = sweep.decode_points + sweep.prefill_points
    report: dict[str, Any] = {
        "point": POINT,
        "quick": quick,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
    }

    say("engine and write limit")
    ds = build_grid(sweep)  # warm-up: imports, caches, compiling
    shapes = [(ds[name].shape, ds[name].dtype) for name in ds.data_vars]
    written = int(sum(ds[name].nbytes for name in ds.data_vars))
    fill, copy = write_limit(shapes)
    del ds
    # (a) and (c) take turns, best of five each: the share of the limit compares like moments
    timed = _interleaved({"engine": lambda: build_grid(sweep), "fill": fill, "copy": copy}, 5)
    t_engine, ds = timed["engine"]
    report["engine"] = {
        "decode_points": sweep.decode_points,
        "prefill_points": sweep.prefill_points,
        "seconds": t_engine,
        "points_per_s": points / t_engine,
    }
    t_fill, t_copy = timed["fill"][0], timed["copy"][0]
    report["write_limit"] = {
        "bytes": written,
        "fill_s": t_fill,
        "copy_s": t_copy,
        "fill_bytes_per_s": written / t_fill,
        "copy_bytes_per_s": written / t_copy,
        "engine_bytes_per_s": written / t_engine,
        "engine_percent_of_fill": 100 * t_fill / t_engine,
        "engine_percent_of_copy": 100 * t_copy / t_engine,
    }
    del fill, copy  # the copy sources

    say("scalar loop")
    sample = _sample(sweep, 500 if quick else 5000)
    t_scalar, values = _timed(lambda: scalar_loop(sweep, sample))
    scalar_rate = 2 * len(sample) / t_scalar  # each sample is one decode and one prefill point
    report["scalar"] = {
        "sample_points": 2 * len(sample),
        "seconds": t_scalar,
        "points_per_s": scalar_rate,
        "engine_speedup": report["engine"]["points_per_s"] / scalar_rate,
        "max_relative_difference": _check(ds, sample, values),
    }

    say("export")
    with tempfile.TemporaryDirectory(prefix="sweeps-bench-") as tmp:
        folder = Path(tmp)
        # The equal frames Polars writes: the same tables, each column one contiguous array,
        # as a frame a user built in memory would be. They are made before timing starts.
        tables = {name: frame.rechunk() for name, frame in frames(ds).items()}

        def ours() -> None:
            write_tables(ds, folder)

        def polars_own() -> None:
            for name, frame in tables.items():
                frame.write_parquet(folder / f"polars-{name}.parquet", **WRITE_OPTIONS)

        # in turns, best of three each, so neither pays for going first
        timed = _interleaved({"ours": ours, "polars": polars_own}, 3)
        t_ours, t_polars = timed["ours"][0], timed["polars"][0]
        report["export"] = {
            "rows": tables["decode"].height + tables["prefill"].height,
            "seconds": t_ours,
            "polars_seconds": t_polars,
            "ratio": t_ours / t_polars,
        }
        tables.clear()  # free them before the end-to-end run

        say("end to end")
        e2e_sweep = parse_config(e2e_text, "<bench-e2e>")
        # the quick grid is small: a budget just over the minimum still cuts it into chunks
        budget = BASE_BYTES + 8 * 2**20 if quick else e2e_budget
        result = end_to_end(e2e_text, budget, folder)
        e2e_points = e2e_sweep.decode_points + e2e_sweep.prefill_points
        report["end_to_end"] = {
            **result,
            "points": e2e_points,
            "memory_budget_bytes": budget,
            "points_per_s": e2e_points / result["seconds"],
        }
    return report


def format_report(report: dict[str, Any]) -> str:
    """The bench figures as lines of text."""
    e, s, w, x, r = (report[k] for k in ("engine", "scalar", "write_limit", "export", "end_to_end"))
    return "\n".join(
        [
            f"point: {report['point']}",
            f"(a) engine: {e['decode_points']:,} decode + {e['prefill_points']:,} prefill "
            f"points in {e['seconds']:.3f} s = {e['points_per_s'] / 1e6:,.1f} M points/s",
            f"(b) scalar loop: {s['sample_points']:,} points in {s['seconds']:.3f} s = "
            f"{s['points_per_s'] / 1e3:,.1f} k points/s; engine is {s['engine_speedup']:,.0f}x "
            f"(max relative difference {s['max_relative_difference']:.1e})",
            f"(c) write limit for {w['bytes'] / 2**30:.2f} GiB: "
            f"fill {w['fill_bytes_per_s'] / 1e9:.2f} "
            f"GB/s, copy {w['copy_bytes_per_s'] / 1e9:.2f} GB/s; "
            f"engine {w['engine_bytes_per_s'] / 1e9:.2f} GB/s = "
            f"{w['engine_percent_of_fill']:.0f} % of fill, "
            f"{w['engine_percent_of_copy']:.0f} % of copy",
            f"(d) export: {x['rows']:,} rows in {x['seconds']:.3f} s; Polars' write_parquet "
            f"{x['polars_seconds']:.3f} s; ratio {x['ratio']:.2f}x",
            f"(e) end to end: {r['points']:,} points in {r['seconds']:.1f} s "
            f"({r['points_per_s'] / 1e6:.1f} M points/s, {r['chunks']} chunks, {r['layout']}), "
            f"peak RSS {r['peak_rss_bytes'] / 1e9:.2f} GB under a budget of "
            f"{r['memory_budget_bytes'] / 2**30:.2f} GiB",
        ]
    )
