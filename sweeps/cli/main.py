"""The ``sweeps`` command. Thin: each command loads, calls one library function, prints.

This is the one place that turns library errors into ``Error: ...`` and an exit code:
0 success, 1 a failed run (e.g. the result exists without ``--force``), 2 a bad config or
bad arguments. Heavy modules are imported inside the commands so that ``--help`` is instant.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from sweeps.cli.options import memory_budget_option

EXIT_FAILED = 1
EXIT_CONFIG = 2


@contextmanager
def _errors() -> Iterator[None]:
    from sweeps.errors import CatalogError, ConfigError, SweepsError

    try:
        yield
    except (ConfigError, CatalogError) as error:
        click.echo(f"Error: {error}", err=True)
        sys.exit(EXIT_CONFIG)
    except SweepsError as error:
        click.echo(f"Error: {error}", err=True)
        sys.exit(EXIT_FAILED)


def _console() -> Any:
    import shutil

    from rich.console import Console

    return Console(soft_wrap=False, width=max(120, shutil.get_terminal_size().columns))


@contextmanager
def _cluster(scheduler: str | None, workers: int | None) -> Iterator[Any]:
    """A dask ``Client`` for ``--scheduler`` or ``--workers``, else ``None``."""
    if scheduler is None and workers is None:
        yield None
        return
    from sweeps.errors import ConfigError

    try:
        from distributed import Client, LocalCluster
    except ImportError:
        msg = "--scheduler/--workers need the dask extra: pip install 'sweeps[dask]'"
        raise ConfigError(msg) from None
    if scheduler is not None:
        with Client(scheduler) as client:
            yield client
        return
    with (
        LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        yield client


@contextmanager
def _progress(console: Any, name: str) -> Iterator[Any]:
    """A progress callback drawing a bar with ETA on a terminal; ``None`` elsewhere."""
    if not console.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(name, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sweeps")
def cli() -> None:
    """Roofline sweeps of LLM decode and prefill: memory- or compute-bound, how close to the
    asymptotic ceiling, and where memory runs out.

    \b
    Example:
      sweeps run configs/seed-llama3-8b-h100.toml
    """


def _load_all(configs: tuple[Path, ...]) -> list[Any]:
    from sweeps.config import load_config

    return [load_config(path) for path in configs]


@cli.command()
@click.argument("configs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=Path("outputs"),
    show_default=True,
    help="Folder that receives <sweep name>/.",
)
@click.option("--force", is_flag=True, help="Replace an existing result.")
@memory_budget_option(
    "Memory a run may use, e.g. 2GiB (at least 448MiB); bigger grids are computed in "
    "chunks and streamed to decode/model=<id>/part-N.parquet. Default: half the RAM."
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Evaluate on this dask.distributed scheduler (needs the dask extra).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Evaluate on a local dask cluster of N workers (needs the dask extra).",
)
def run(
    configs: tuple[Path, ...],
    out: Path,
    force: bool,
    memory_budget: str | None,
    scheduler: str | None,
    workers: int | None,
) -> None:
    """Validate CONFIGS, compute every grid, write outputs/<name>/ and print a summary.

    Every config is validated before any is computed; a failed run leaves earlier results
    untouched.

    \b
    Example:
      sweeps run configs/seed-llama3-8b-h100.toml --out outputs --force
    """
    with _errors():
        sweeps = _load_all(configs)
        from sweeps.charts import output_hooks
        from sweeps.cli.options import parse_size
        from sweeps.cli.render import print_summary, row_counts
        from sweeps.pipeline import run_to_folder

        budget = parse_size(memory_budget) if memory_budget else None
        console = _console()
        with _cluster(scheduler, workers) as client:
            for sweep in sweeps:
                with _progress(console, sweep.name) as progress:
                    result = run_to_folder(
                        sweep,
                        out,
                        force=force,
                        hooks=output_hooks(sweep),
                        memory_budget=budget,
                        progress=progress,
                        client=client,
                    )
                partitioned = result.layout == "partitioned"
                summary = result.summary()
                if summary is not None:
                    where = "the decode/ dataset" if partitioned else "decode.parquet"
                    print_summary(console, sweep, summary, where)
                how = f" in {result.chunks} chunks, partitioned by model" if partitioned else ""
                console.print(
                    f"wrote {result.folder}/{how} ({row_counts(result.rows)}) "
                    f"in {sum(result.timings.values()):.2f} s"
                )
                if result.skipped:
                    hint = (
                        "a run on a dask cluster always streams"
                        if client is not None
                        else "a larger --memory-budget keeps it in one piece"
                    )
                    console.print(
                        f"not written: {', '.join(result.skipped)} (they need the whole grid "
                        f"in memory; {hint})"
                    )


@cli.command()
@click.argument("configs", nargs=-1, required=True, type=click.Path(path_type=Path))
@memory_budget_option("Budget to plan chunks against, e.g. 2GiB. Default: half the RAM.")
def validate(configs: tuple[Path, ...], memory_budget: str | None) -> None:
    """Check CONFIGS without computing: print each grid's size and estimated memory.

    \b
    Example:
      sweeps validate configs/*.toml
    """
    with _errors():
        from sweeps.cli.options import parse_size
        from sweeps.cli.render import print_validation
        from sweeps.config import load_config
        from sweeps.errors import ConfigError
        from sweeps.pipeline import plan

        budget = parse_size(memory_budget) if memory_budget else None
        failed = False
        for path in configs:  # each file on its own: one bad config hides no other verdict
            try:
                sweep = load_config(path)
            except ConfigError as error:
                click.echo(f"Error: {error}", err=True)
                failed = True
                continue
            print_validation(plan(sweep, budget))
        if failed:
            sys.exit(EXIT_CONFIG)


@cli.command("list")
@click.argument("what", type=click.Choice(["hardware", "models", "dtypes"]))
def list_catalog(what: str) -> None:
    """List the catalog: hardware, models or dtypes, with their sources.

    \b
    Example:
      sweeps list hardware
    """
    from sweeps.cli.render import print_catalog

    print_catalog(_console(), what)


@cli.command()
@click.option("--params", type=float, required=True, help="Parameters, e.g. 7e9.")
@click.option(
    "--sequence-length",
    type=int,
    default=512,
    show_default=True,
    help="Prompt tokens of the prefill.",
)
@click.option(
    "--batch-size", type=int, default=1, show_default=True, help="Sequences in the decode step."
)
@click.option("--bytes-per-param", type=float, default=2.0, show_default=True)
@click.option(
    "--hardware",
    "hardware_id",
    default=None,
    help="Catalog device for the peaks (else give --peak-flops and --bandwidth).",
)
@click.option("--peak-flops", type=float, default=None, help="Peak dense FLOP/s.")
@click.option("--bandwidth", type=float, default=None, help="Peak bandwidth [byte/s].")
def classify(
    params: float,
    sequence_length: int,
    batch_size: int,
    bytes_per_param: float,
    hardware_id: str | None,
    peak_flops: float | None,
    bandwidth: float | None,
) -> None:
    """One point, like the note's classify_llm_phases: prefill vs decode as a table.

    \b
    Example:
      sweeps classify --params 7e9 --sequence-length 512 --batch-size 8 --hardware h100-sxm
    """
    with _errors():
        from sweeps.cli.render import print_classification
        from sweeps.errors import ConfigError
        from sweeps.physics import classify_llm_phases

        if hardware_id is not None:
            from sweeps.catalog import load_catalog

            device = load_catalog().lookup_hardware(hardware_id)
            peak_flops = peak_flops or device.peak_flops["bf16"]
            bandwidth = bandwidth or device.bandwidth
        if peak_flops is None or bandwidth is None:
            msg = "give --hardware, or both --peak-flops and --bandwidth"
            raise ConfigError(msg)
        for name, value in (
            ("--params", params),
            ("--sequence-length", sequence_length),
            ("--batch-size", batch_size),
            ("--bytes-per-param", bytes_per_param),
            ("--peak-flops", peak_flops),
            ("--bandwidth", bandwidth),
        ):
            if not value > 0:
                msg = f"{name} must be > 0 (got {value})"
                raise ConfigError(msg)
        result = classify_llm_phases(
            params, sequence_length, batch_size, bytes_per_param, peak_flops, bandwidth
        )
        print_classification(_console(), result)


@cli.command("import-model")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--id",
    "model_id",
    default=None,
    help="Model id for the table (default: from _name_or_path or the folder name).",
)
def import_model(path: Path, model_id: str | None) -> None:
    """Read a Hugging Face config.json from disk (nothing is fetched): print the resolved
    spec and a [models.NAME] table to paste into a sweep config.

    \b
    Example:
      sweeps import-model path/to/Meta-Llama-3-8B/config.json --id llama3-8b
    """
    from sweeps.catalog.hf_import import load_model, model_to_toml
    from sweeps.errors import ImportModelError

    try:
        model = load_model(path, model_id)
    except ImportModelError as error:
        click.echo(f"Error: {error}", err=True)
        sys.exit(EXIT_CONFIG)
    latent = model.kv_lora_rank + model.qk_rope_head_dim
    per_layer = latent if model.is_mla else 2 * model.kv_heads * model.head_dim
    lines = [
        f"model            {model.id} ({model.family})",
        f"params           {model.params:,.0f} total, {model.active_params:,.0f} active",
        f"layers           {model.layers}",
        f"heads            {model.heads} query, {model.kv_heads} KV, head_dim {model.head_dim}",
        f"attention        {model.attention}",
        f"kv bytes/token   {per_layer * 2 * model.layers:,} in bf16, all layers",
    ]
    if model.is_moe:
        lines.append(
            f"experts          {model.experts} routed, {model.experts_per_token} per "
            f"token, {model.shared_experts} shared"
        )
    if model.is_mla:
        lines.append(
            f"mla              kv_lora_rank {model.kv_lora_rank}, qk_rope_head_dim "
            f"{model.qk_rope_head_dim}, v_head_dim {model.v_head_dim}"
        )
    if model.local_layers:
        lines.append(
            f"sliding window   {model.sliding_window} tokens on {model.local_layers} "
            f"of {model.layers} layers"
        )
    lines.append(f"max context      {model.max_context:,}")
    if model.notes:
        lines.append(f"notes            {model.notes}")
    click.echo("\n".join(lines))
    click.echo("")
    click.echo(model_to_toml(model, str(path)), nl=False)


@cli.command()
@click.option("--quick", is_flag=True, help="A small grid: seconds, for tests and smoke checks.")
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option(
    "--e2e-budget",
    default="2GiB",
    show_default=True,
    metavar="SIZE",
    help="Memory budget of the end-to-end run.",
)
def bench(quick: bool, as_json: bool, e2e_budget: str) -> None:
    """Measure the engine: points/s, vs a scalar loop, vs the write limit, the export vs
    Polars, and an end-to-end streamed run with its peak RSS.

    \b
    Example:
      sweeps bench --json
    """
    with _errors():
        import json

        from sweeps.bench import format_report, run_bench
        from sweeps.cli.options import parse_size

        def say(step: str) -> None:
            if not as_json:
                click.echo(f"measuring: {step}", err=True)

        report = run_bench(quick=quick, e2e_budget=parse_size(e2e_budget), progress=say)
        click.echo(json.dumps(report, indent=2) if as_json else format_report(report))


def main() -> None:
    """Console-script entry point."""
    cli()
