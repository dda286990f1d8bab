"""The ``sweeps`` command. Thin: each command loads, makes one library call, renders.

Errors are mapped to ``Error: ...`` and an exit code in one place (``sweeps.cli.errors``);
shared options are declared once (``sweeps.cli.options``); what is printed is built in
``sweeps.cli.render`` and written through ``sweeps.cli.console`` (results on stdout, progress
and status on stderr). Heavy modules are imported inside the commands so that ``--help`` and
``validate`` are instant.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from sweeps.cli.console import Output
from sweeps.cli.errors import EXIT_BAD_INPUT, EXIT_FAILED, error_line, fail, handled
from sweeps.cli.options import (
    Bounded,
    CatalogId,
    attention_option,
    bench_options,
    budget,
    check_out,
    cluster_options,
    configs_argument,
    engine_option,
    limited_int,
    memory_budget_option,
    out_option,
    out_options,
    output_options,
    parse_size,
)
from sweeps.cli.workload import workload
from sweeps.distribution import DISTRIBUTION, VERSION
from sweeps.limits import MAX_PARAMS


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(version=VERSION, package_name=DISTRIBUTION, prog_name="sweeps")
def cli() -> None:
    """Roofline sweeps of LLM decode and prefill: memory- or compute-bound, how close to the
    asymptotic ceiling, and where memory runs out.

    \b
    Example:
      sweeps init my-sweep --model llama-3-8b --hardware h100-sxm
      sweeps run configs/seed-llama3-8b-h100.toml
    """


@cli.command()
@configs_argument
@out_option
@memory_budget_option(
    "Memory a run may use, e.g. 2GiB (512MiB runs every shipped config); bigger grids are "
    "computed in chunks, each written into the same files as a grid in one piece. Default: "
    "half of what the process may use (address-space limit, container memory.max, RAM)."
)
@cluster_options
@output_options
@handled
def run(
    configs: tuple[Path, ...],
    out: Path | str,
    force: bool,
    memory_budget: str | None,
    scheduler: str | None,
    workers: int | None,
    cluster_timeout: float,
    output: Output,
) -> None:
    """Validate CONFIGS, compute every grid, write outputs/<name>/ and print a summary.

    Every config is validated before any is computed; a failed run leaves earlier results
    untouched. The summary goes to stdout, progress and status to stderr.

    \b
    Example:
      sweeps run configs/seed-llama3-8b-h100.toml --out outputs --force
      sweeps run configs/*.toml --json > runs.json
    """
    from sweeps.config import load_config

    sweeps = [load_config(path) for path in configs]  # every config checked before anything heavy
    size = budget(memory_budget)
    if isinstance(out, Path):
        check_out(out)
    from sweeps.cli.cluster import cluster
    from sweeps.cli.execute import preflight, run_one
    from sweeps.pipeline import check_targets

    # two configs of one name, or a result already there; on a URL, a stopped commit recovered
    for line in check_targets(sweeps, out, force):
        output.status(line)
    if isinstance(out, str) and (workers or scheduler):  # before a cluster starts
        from sweeps.pipeline.remote import check_workers, open_url

        asked = f"--workers {workers}" if workers else f"--scheduler {scheduler}"
        check_workers(open_url(out, "--out"), asked=asked, key="--out")
    preflight(sweeps)  # the address space, the extras: before any work
    from sweeps.charts.drawing import start

    start(f for sweep in sweeps if sweep.charts for f in sweep.formats)  # beside the imports
    documents = []
    with cluster(scheduler, workers, cluster_timeout) as client:
        for sweep in sweeps:
            documents.append(run_one(sweep, out, force, size, client, output))
    if output.json:
        output.document({"runs": documents})


@cli.command()
@configs_argument
@memory_budget_option(
    "Budget to plan chunks against, e.g. 2GiB. Default: half of what the process may use."
)
@output_options
@handled
def validate(configs: tuple[Path, ...], memory_budget: str | None, output: Output) -> None:
    """Check CONFIGS without computing: print each grid's size and estimated memory.

    \b
    Example:
      sweeps validate configs/*.toml
    """
    from sweeps.cli.render import plan_document, plan_line
    from sweeps.config import load_config
    from sweeps.errors import ConfigError
    from sweeps.pipeline import plan
    from sweeps.pipeline.extras import check_extras
    from sweeps.studies import STUDIES

    size = budget(memory_budget)
    documents: list[dict[str, Any]] = []
    for path in configs:  # each file on its own: one bad config hides no other verdict
        try:
            sweep = load_config(path)
            check_extras(sweep)
            how = plan(sweep, size)
            steps = (
                s for study in STUDIES if study.name in sweep.studies for s in study.post_steps
            )
            for step in steps:
                if step.wanted(sweep):  # what it reads before the grid (a lengths CSV), as run
                    step.prepare(sweep)
        except ConfigError as error:
            error_line(str(error))
            documents.append({"config": str(path), "ok": False, "error": str(error)})
            continue
        documents.append(plan_document(how))
        output.result(plan_line(how))
    if output.json:
        output.document({"configs": documents})
    if not all(document["ok"] for document in documents):
        sys.exit(EXIT_BAD_INPUT)


@cli.command("list")
@click.argument("what", type=click.Choice(["hardware", "models", "dtypes"]))
@click.option("--wide", is_flag=True, help="Sources in the table, on one line each.")
@output_options
@handled
def list_catalog(what: str, wide: bool, output: Output) -> None:
    """List the catalog: hardware, models or dtypes, with their sources.

    \b
    Example:
      sweeps list hardware
      sweeps list models --json | jq '.items[].id'
    """
    from sweeps.cli.render_catalog import catalog_document, catalog_table

    if output.json:
        output.document(catalog_document(what))
        return
    for renderable in catalog_table(what, wide, output.out, output.width):
        output.result(renderable)


@cli.command()
@click.option("--params", type=Bounded(1, MAX_PARAMS), required=True, help="Parameters, e.g. 7e9.")
@click.option("--sequence-length", type=limited_int("MAX_TOKENS"), default=512, show_default=True)
@click.option("--batch-size", type=limited_int("MAX_BATCH"), default=1, show_default=True)
@click.option("--bytes-per-param", type=Bounded(0.125, 64), default=2.0, show_default=True)
@click.option(
    "--hardware",
    "hardware_id",
    type=CatalogId("hardware"),
    help="Catalog device for the peaks (else give --peak-flops and --bandwidth).",
)
@click.option("--peak-flops", type=Bounded(1e3, 1e24), help="Peak dense FLOP/s.")
@click.option("--bandwidth", type=Bounded(1e3, 1e21), help="Peak bandwidth [byte/s].")
@output_options
@handled
def classify(
    params: float,
    sequence_length: int,
    batch_size: int,
    bytes_per_param: float,
    hardware_id: str | None,
    peak_flops: float | None,
    bandwidth: float | None,
    output: Output,
) -> None:
    """One point, like the note's classify_llm_phases: prefill vs decode as a table.

    A peak given next to --hardware overrides the catalog's.

    \b
    Example:
      sweeps classify --params 7e9 --sequence-length 512 --batch-size 8 --hardware h100-sxm
    """
    from sweeps.cli.errors import BadArguments
    from sweeps.cli.render import classification_table
    from sweeps.physics import classify_llm_phases

    if hardware_id is not None:
        from sweeps.catalog import load_catalog

        device = load_catalog().lookup_hardware(hardware_id)
        peak_flops = device.peak_flops["bf16"] if peak_flops is None else peak_flops
        bandwidth = device.bandwidth if bandwidth is None else bandwidth
    if peak_flops is None or bandwidth is None:
        msg = "give --hardware, or both --peak-flops and --bandwidth"
        raise BadArguments(msg)
    result = classify_llm_phases(
        params, sequence_length, batch_size, bytes_per_param, peak_flops, bandwidth
    )
    if output.json:
        inputs = {
            "params": params,
            "sequence_length": sequence_length,
            "batch_size": batch_size,
            "bytes_per_param": bytes_per_param,
            "peak_flops": peak_flops,
            "bandwidth": bandwidth,
        }
        output.document({"inputs": inputs, **result})
        return
    output.result(classification_table(result))


@cli.command()
@click.argument("measurements", required=False, type=click.Path(path_type=Path))
@attention_option
@engine_option
@out_options("calibration/")
@output_options
@handled
def calibrate(
    measurements: Path | None, attention_dtype: str, engine: str | None, **given: Any
) -> None:
    """Hold MEASUREMENTS (a CSV; default: the shipped published figures) against their
    roofline bounds: per row the bound, the ratio (1 at the roof) and a flag where a
    measurement beats it; per device the share of the bound reached. Writes
    calibration.parquet and the chart into DIR/calibration/. Exit 1 when a row beats its
    bound (a defect of the bound, or a misread row).

    \b
    Example:
      sweeps calibrate
      sweeps calibrate my-benchmark.csv --out outputs --force
    """
    from sweeps.calibrate import shipped_measurements
    from sweeps.cli.calibration import calibrate_to_folder

    out, force, output = given["out"], given["force"], given["output"]
    if isinstance(out, Path):
        check_out(out)
    path = measurements or shipped_measurements()
    beating = calibrate_to_folder(path, out, force, output, attention_dtype, engine)
    if beating:
        lines = ", ".join(map(str, beating))
        fail(
            f"{path}: {len(beating)} measurement(s) beat their bound (line {lines}): "
            "a defect of the bound, or a misread row",
            EXIT_FAILED,
        )


@cli.command("import-model")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--id",
    "model_id",
    default=None,
    help="Model id for the table (default: from _name_or_path or the folder name).",
)
@handled
def import_model(path: Path, model_id: str | None) -> None:
    """Read a Hugging Face config.json (or the model folder holding it) from disk (nothing is
    fetched): print the resolved spec (stderr) and a [models.NAME] table to paste into a
    sweep config (stdout).

    \b
    Example:
      sweeps import-model path/to/Meta-Llama-3-8B/config.json --id llama3-8b >> my-sweep.toml
    """
    from sweeps.catalog.hf import load_model, model_to_toml
    from sweeps.cli.render import model_lines

    model = load_model(path, model_id)
    click.echo("\n".join([*model_lines(model), ""]), err=True)
    config = path / "config.json" if path.is_dir() else path
    click.echo(model_to_toml(model, str(config)), nl=False)


@cli.command()
@bench_options
@handled
def bench(quick: bool, as_json: bool, e2e_budget: str, runs: int, only: str | None) -> None:
    """Measure the engine: points/s, vs a scalar loop, vs the write limit, the export vs
    Polars, and an end-to-end streamed run with its peak RSS.

    \b
    Examples:
      sweeps bench --json
      sweeps bench --runs 5
      sweeps bench --only m
    """
    import json

    from sweeps.bench import format_report, run_bench

    def say(step: str) -> None:
        if not as_json:
            click.echo(f"measuring: {step}", err=True)

    budget = parse_size(e2e_budget)
    report = run_bench(quick=quick, e2e_budget=budget, progress=say, runs=runs, only=only)
    click.echo(json.dumps(report, indent=2) if as_json else format_report(report))


@cli.command()
@click.argument("name", required=False)
@click.option(
    "--model", "models", multiple=True, type=CatalogId("model"), help="A model id (repeatable)."
)
@click.option(
    "--hardware",
    "hardware",
    multiple=True,
    type=CatalogId("hardware"),
    help="A device id (repeatable).",
)
@click.option("--example", default=None, help="Copy the shipped example NAME instead.")
@click.option("--study", "study", default=None, hidden=True, help="Deprecated: --example.")
@click.option("--list", "list_examples", is_flag=True, help="List the shipped examples.")
@click.option("--force", is_flag=True, help="Replace an existing file.")
@handled
def init(
    name: str | None,
    models: tuple[str, ...],
    hardware: tuple[str, ...],
    example: str | None,
    study: str | None,
    list_examples: bool,
    force: bool,
) -> None:
    """Write NAME.toml, a commented starter config that validates, and sweeps.schema.json
    beside it for editors; or copy a shipped example.

    \b
    Example:
      sweeps init my-sweep --model llama-3-8b --model llama-3-70b --hardware h200
      sweeps init --list
      sweeps init my-sweep --example seed-llama3-8b-h100
    """
    from sweeps.cli import init as examples
    from sweeps.cli.errors import BadArguments

    if study is not None:  # the old name of --example, kept for scripts that use it
        click.echo("--study is deprecated; use --example", err=True)
        example = example if example is not None else study
    if example is not None and (models or hardware):
        msg = "--example copies a shipped example as it is; give --model/--hardware without it"
        raise BadArguments(msg)
    if list_examples:
        for example_name in examples.example_names():
            click.echo(f"{example_name:<36} {examples.example_title(example_name)}")
        return
    name = None if name is None else examples.config_name(name)
    if name is not None:  # the file's and the output folder's name: the config's own rule
        from sweeps.config import check_name

        check_name(name, "NAME (sweeps init)")
    if example is not None:
        text = examples.example_text(example)
        if name is not None and name != example:  # its own name: its own output folder
            text = examples.renamed(text, name)
        name = name or example
    else:
        name = name or "my-sweep"
        text = examples.starter_text(name, models or ("llama-3-8b",), hardware or ("h100-sxm",))
    written = examples.write_config(Path(f"{name}.toml"), text, force)
    files = ", ".join(str(p) for p in written)
    click.echo(f"wrote {files}; next: sweeps run {name}.toml", err=True)


@cli.command()
@handled
def schema() -> None:
    """Print the config files' JSON Schema (for taplo, VS Code, jsonschema).

    \b
    Example:
      sweeps schema > sweeps.schema.json
    """
    from sweeps.cli.init import schema_text

    click.echo(schema_text(), nl=False)


cli.add_command(workload)


def main() -> None:
    """Console-script entry point."""
    from sweeps import processes
    from sweeps.cli.errors import quiet_broken_pipe

    processes.start_process()
    try:
        cli()
    except BrokenPipeError:  # one raised outside a command (help text, click's own echo)
        quiet_broken_pipe()
    finally:
        processes.end_process()
