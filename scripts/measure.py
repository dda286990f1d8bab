"""Time decode steps and prefills of a model on your own GPU, as rows ``sweeps calibrate`` reads.

The model is built from a Hugging Face ``config.json`` (a Llama-style decoder: grouped-query
attention, a gated MLP, RMSNorm, untied or tied embeddings) with random weights: no download,
the shapes are what the roofline is about. Each decode step runs ``B`` new tokens against a
preallocated KV cache of ``S`` tokens; each prefill runs ``B`` prompts of ``N`` tokens with
causal attention. Times are CUDA events after warm-up, the median of ``--iters`` runs.

    python scripts/measure.py tests/data/hf/llama-3-8b/config.json --model llama-3-8b \\
        --hardware h200 --batch 1,8,32,128 --context 1024,8192 --prompt 512,2048 \\
        --out measured-h200.csv
    sweeps calibrate measured-h200.csv

PyTorch is needed to measure (it is not a dependency of sweeps); everything else here, the
arguments and the CSV, works without it (sweeps itself provides the CSV's columns).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweeps.calibrate import COLUMNS  # the CSV is written for sweeps calibrate

DTYPES = ("bf16", "fp16", "fp32")


@dataclass(frozen=True)
class Options:
    """What to measure and how to label it."""

    config: Path
    model: str
    hardware: str
    dtype: str
    batches: tuple[int, ...]
    contexts: tuple[int, ...]
    prompts: tuple[int, ...]
    warmup: int
    iters: int
    out: Path
    source: str


def _sizes(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        msg = f"{text!r}: write positive whole numbers separated by commas, e.g. 1,8,32"
        raise argparse.ArgumentTypeError(msg) from None
    if not values or min(values) < 1:
        msg = f"{text!r}: every value must be a whole number >= 1"
        raise argparse.ArgumentTypeError(msg)
    return values


def _positive(text: str) -> int:
    value = _sizes(text)
    if len(value) != 1:
        msg = f"{text!r}: one whole number >= 1"
        raise argparse.ArgumentTypeError(msg)
    return value[0]


def parse_args(argv: Sequence[str] | None = None) -> Options:
    """The command line as ``Options``; argparse exits 2 with a message on a bad value."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", type=Path, help="Hugging Face config.json of the model")
    parser.add_argument("--model", required=True, help="model id written in the CSV")
    parser.add_argument("--hardware", required=True, help="device id written in the CSV")
    parser.add_argument("--dtype", choices=DTYPES, default="bf16", help="weights and KV cache")
    parser.add_argument("--batch", type=_sizes, default=(1, 8, 32), help="decode batches")
    parser.add_argument("--context", type=_sizes, default=(1024, 4096), help="KV cache lengths")
    parser.add_argument("--prompt", type=_sizes, default=(512, 2048), help="prefill lengths")
    parser.add_argument("--warmup", type=_positive, default=3, help="untimed runs first")
    parser.add_argument("--iters", type=_positive, default=10, help="timed runs (median kept)")
    parser.add_argument("--out", type=Path, default=Path("measured.csv"), help="CSV to write")
    parser.add_argument("--source", default="scripts/measure.py", help="the source column")
    args = parser.parse_args(argv)
    if not args.config.is_file():
        parser.error(f"{args.config}: no such config.json")
    return Options(
        args.config,
        args.model,
        args.hardware,
        args.dtype,
        args.batch,
        args.context,
        args.prompt,
        args.warmup,
        args.iters,
        args.out,
        args.source,
    )


def rows(options: Options, timings: Iterable[tuple[str, int, int, float]]) -> list[dict[str, Any]]:
    """Calibrate rows from ``(phase, batch, tokens, seconds)`` timings.

    A decode step at cache length ``S`` becomes an ``itl_s`` row and an
    ``output_tokens_per_s`` row (``B / t``, per replica) with ``prompt_tokens = S`` and
    ``output_tokens = 1``, so that calibrate's mean context ``I + O//2`` is ``S``; a prefill of
    ``N`` tokens becomes a ``ttft_s`` row with ``prompt_tokens = N``.
    """
    base = {
        "model": options.model,
        "hardware": options.hardware,
        "tp": 1,
        "weight_dtype": options.dtype,
        "kv_dtype": options.dtype,
        "compute_dtype": "auto",
        "output_tokens": 1,
        "basis": "replica",
        "source": options.source,
    }
    out: list[dict[str, Any]] = []
    for phase, batch, tokens, seconds in timings:
        common = {**base, "batch": batch, "prompt_tokens": tokens}
        if phase == "decode":
            out.append({**common, "metric": "itl_s", "value": seconds})
            out.append({**common, "metric": "output_tokens_per_s", "value": batch / seconds})
        elif phase == "prefill":
            out.append({**common, "metric": "ttft_s", "value": seconds})
        else:
            msg = f"unknown phase {phase!r}; allowed: decode, prefill"
            raise ValueError(msg)
    return out


def write_csv(table: list[dict[str, Any]], path: Path) -> None:
    """Write calibrate rows to ``path`` with the columns of ``COLUMNS``, values in SI."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in table:
            writer.writerow({k: repr(v) if isinstance(v, float) else v for k, v in row.items()})


def _median_time(run: Callable[[], Any], warmup: int, iters: int) -> float:
    """Median seconds of ``run`` on the GPU, timed with CUDA events after ``warmup`` runs."""
    import torch

    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def _model(config: dict[str, Any], dtype: Any) -> Any:
    """A random Llama-style decoder of ``config``'s shapes (``measure_model.Decoder``)."""
    import torch
    from measure_model import Decoder  # type: ignore[import-not-found]

    torch.manual_seed(0)
    return Decoder(config).to(device="cuda", dtype=dtype).eval()


def measure(options: Options) -> list[tuple[str, int, int, float]]:
    """Time every decode (batch x context) and prefill (batch x prompt) point on the GPU."""
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[options.dtype]
    config = json.loads(options.config.read_text(encoding="utf-8"))
    model = _model(config, dtype)
    timings = []
    with torch.inference_mode():
        for batch in options.batches:
            for context in options.contexts:
                step = model.decode_step(batch, context)
                t = _median_time(step, options.warmup, options.iters)
                timings.append(("decode", batch, context, t))
                del step
                torch.cuda.empty_cache()
            for prompt in options.prompts:
                run = model.prefill(batch, prompt)
                t = _median_time(run, options.warmup, options.iters)
                timings.append(("prefill", batch, prompt, t))
                del run
                torch.cuda.empty_cache()
    return timings


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and write the CSV."""
    options = parse_args(argv)
    write_csv(rows(options, measure(options)), options.out)


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
