"""``sweeps init``: a commented starter config, or a copy of a shipped example.

The examples are package data (``sweeps/examples/*.toml``, the repository's ``configs/``), so a
plain ``pip install`` has them. Every file written here carries the ``#:schema`` line that
points editors (taplo, VS Code's Even Better TOML) at ``sweeps.schema.json`` beside it.
"""

from __future__ import annotations

import json
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from sweeps.cli.errors import BadArguments

SCHEMA_FILE = "sweeps.schema.json"
"""The JSON Schema's file name, beside the configs that point at it."""
SCHEMA_LINE = f"#:schema ./{SCHEMA_FILE}"
"""The first line of every shipped config: taplo's directive, relative to the config."""

JSON_SCHEMA_DRAFT = "http://json-schema.org/draft-07/schema#"
"""The draft the schema declares: the one taplo's validator and ``jsonschema`` both read
(pydantic's output uses nothing newer; ``$defs`` are reached by JSON pointer)."""

STARTER = """\
{schema}
# A sweep: every combination of the [axes] values is one point of the grid.
# Check it with `sweeps validate {file}`, run it with `sweeps run {file}`.
# Every key: `sweeps schema`, and the docs' config reference (docs/config.md).

[sweep]
name = "{name}"  # the output folder: outputs/{name}/
title = "{title}"

[axes]
model = {models}  # catalog ids (`sweeps list models`) or [models.NAME] tables
hardware = {hardware}  # catalog ids (`sweeps list hardware`) or [hardware.NAME] tables
batch = {{ start = 1, stop = 256, geometric = true }}  # sequences per decode step: 1, 2, 4 ... 256
context = [512, 8192]  # tokens in each sequence's KV cache
kv_heads = ["native"]  # the model's own KV heads, or counts to compare (GQA)
kv_dtype = ["bf16"]  # KV-cache number formats (`sweeps list dtypes`)
weight_dtype = ["bf16"]  # weight number formats
# tp = [1, 2]  # tensor-parallel degrees

[options]
memory_reserve = 0.10  # fraction of device memory kept for activations and runtime
ceiling_fraction = 0.90  # "how close to the ceiling" the summary asks about

# [serving]  # uncomment for a serving plan: requests at a rate, at a price, per device
# prompt_tokens = [512, 2048]  # prompt tokens per request
# output_tokens = [256]  # output tokens per request
# arrival_rate = [1.0, 10.0]  # requests per second (Poisson)
# ttft_slo_s = 2.0  # time to first token a plan must meet [s]
# tpot_slo_s = 0.05  # time per output token a plan must meet [s]
# chunk_tokens = 4096  # chunked prefill's chunk (0: no chunked mode)
# kv_link_bandwidth = 50e9  # prefill-to-decode link of a disaggregated plan [byte/s]
# (then add "serving" to [outputs] charts; `sweeps run` prints the cheapest plans)

[outputs]
charts = ["ceiling", "bottleneck", "ai-vs-batch", "roofline"]
formats = ["html"]  # add "png", "svg" for static figures
"""


def _examples() -> Traversable:
    return resources.files("sweeps") / "examples"


def example_names() -> list[str]:
    """The shipped examples by name (their file names less ``.toml``)."""
    files = [p.name for p in _examples().iterdir()]
    return sorted(name.removesuffix(".toml") for name in files if name.endswith(".toml"))


def example_text(name: str) -> str:
    """The text of the shipped example ``name``."""
    from sweeps.catalog.loader import suggest

    names = example_names()
    if name not in names:
        msg = f"--example {name}: no such example; {suggest(name, names)} (see sweeps init --list)"
        raise BadArguments(msg)
    return (_examples() / f"{name}.toml").read_text(encoding="utf-8")


def example_title(name: str) -> str:
    """The first comment line of an example: what it is about."""
    for line in example_text(name).splitlines():
        if line.startswith("# "):
            return line.removeprefix("# ")
    return ""


def starter_text(name: str, models: tuple[str, ...], hardware: tuple[str, ...]) -> str:
    """A commented starter config for ``models`` on ``hardware`` (it validates)."""
    return STARTER.format(
        schema=SCHEMA_LINE,
        file=f"{name}.toml",
        name=name,
        title=f"{', '.join(models)} on {', '.join(hardware)}",
        models=json.dumps(list(models)),
        hardware=json.dumps(list(hardware)),
    )


def config_name(name: str) -> str:
    """``my-sweep`` of ``my-sweep`` or ``my-sweep.toml``: the name without the file suffix."""
    return name.removesuffix(".toml")


def renamed(text: str, name: str) -> str:
    """An example's ``text`` with its ``[sweep] name`` (its output folder) set to ``name``."""
    import re

    sweep = re.search(r"^\[sweep\]\s*$", text, flags=re.MULTILINE)
    start = sweep.end() if sweep else 0
    head, tail = text[:start], text[start:]
    tail, done = re.subn(
        r'^name\s*=\s*"[^"\n]*"', f"name = {json.dumps(name)}", tail, count=1, flags=re.MULTILINE
    )
    if not done:
        msg = f"--example: the example has no [sweep] name to replace with {name!r}"
        raise BadArguments(msg)
    return head + tail


def schema_text() -> str:
    """The config files' JSON Schema (``sweeps.config.schema.ConfigFile``), as JSON text."""
    from sweeps.config.schema import ConfigFile

    document = {"$schema": JSON_SCHEMA_DRAFT, **ConfigFile.model_json_schema()}
    return json.dumps(document, indent=2) + "\n"


def write_config(path: Path, text: str, force: bool) -> list[Path]:
    """Validate ``text`` as ``path``, write it and, when missing, the schema beside it."""
    from sweeps.config import parse_config

    if path.exists() and not force:
        msg = f"{path}: a file is already there; pass --force to replace it, or give another NAME"
        raise BadArguments(msg)
    parse_config(text, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    written = [path]
    schema = path.parent / SCHEMA_FILE
    if not schema.exists():
        schema.write_text(schema_text(), encoding="utf-8")
        written.append(schema)
    return written
