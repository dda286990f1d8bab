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
    from rich.console import Console

    import shutil

    return Console(soft_wrap=False, width=max(120, shutil.get_terminal_size().columns))


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
@click.option("--out", type=click.Path(path_type=Path), default=Path("outputs"),
              show_default=True, help="Folder that receives <sweep name>/.")
@click.option("--force", is_flag=True, help="Replace an existing result.")
def run(configs: tuple[Path, ...], out: Path, force: bool) -> None:
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
        from sweeps.cli.render import print_summary
        from sweeps.pipeline import run_to_folder

        console = _console()
        for sweep in sweeps:
            result = run_to_folder(sweep, out, force=force, hooks=output_hooks(sweep))
            print_summary(console, sweep, result)


@cli.command()
@click.argument("configs", nargs=-1, required=True, type=click.Path(path_type=Path))
def validate(configs: tuple[Path, ...]) -> None:
    """Check CONFIGS without computing: print each grid's size and estimated memory.

    \b
    Example:
      sweeps validate configs/*.toml
    """
    with _errors():
        from sweeps.cli.render import print_validation

        for sweep in _load_all(configs):
            print_validation(sweep)


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
@click.option("--sequence-length", type=int, default=512, show_default=True,
              help="Prompt tokens of the prefill.")
@click.option("--batch-size", type=int, default=1, show_default=True,
              help="Sequences in the decode step.")
@click.option("--bytes-per-param", type=float, default=2.0, show_default=True)
@click.option("--hardware", "hardware_id", default=None,
              help="Catalog device for the peaks (else give --peak-flops and --bandwidth).")
@click.option("--peak-flops", type=float, default=None, help="Peak dense FLOP/s.")
@click.option("--bandwidth", type=float, default=None, help="Peak bandwidth [byte/s].")
def classify(params: float, sequence_length: int, batch_size: int, bytes_per_param: float,
             hardware_id: str | None, peak_flops: float | None, bandwidth: float | None) -> None:
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
        for name, value in (("--params", params), ("--sequence-length", sequence_length),
                            ("--batch-size", batch_size), ("--bytes-per-param", bytes_per_param),
                            ("--peak-flops", peak_flops), ("--bandwidth", bandwidth)):
            if not value > 0:
                msg = f"{name} must be > 0 (got {value})"
                raise ConfigError(msg)
        result = classify_llm_phases(params, sequence_length, batch_size, bytes_per_param,
                                     peak_flops, bandwidth)
        print_classification(_console(), result)


@cli.command("import-model")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--id", "model_id", default=None,
              help="Model id for the table (default: from _name_or_path or the folder name).")
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
        lines.append(f"experts          {model.experts} routed, {model.experts_per_token} per "
                     f"token, {model.shared_experts} shared")
    if model.is_mla:
        lines.append(f"mla              kv_lora_rank {model.kv_lora_rank}, qk_rope_head_dim "
                     f"{model.qk_rope_head_dim}, v_head_dim {model.v_head_dim}")
    if model.local_layers:
        lines.append(f"sliding window   {model.sliding_window} tokens on {model.local_layers} "
                     f"of {model.layers} layers")
    lines.append(f"max context      {model.max_context:,}")
    if model.notes:
        lines.append(f"notes            {model.notes}")
    click.echo("\n".join(lines))
    click.echo("")
    click.echo(model_to_toml(model, str(path)), nl=False)


def main() -> None:
    """Console-script entry point."""
    cli()
