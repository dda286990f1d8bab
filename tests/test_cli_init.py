"""``sweeps init``, the shipped examples as package data, ``sweeps schema`` and completion."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from sweeps.cli.init import SCHEMA_FILE, SCHEMA_LINE, example_names, schema_text
from sweeps.cli.main import cli
from sweeps.config import load_config
from sweeps.config.schema import ConfigFile

from .conftest import CONFIGS, ROOT

README = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")  # its "Editor support"
SHIPPED = sorted(CONFIGS.glob("*.toml"))


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(tmp_path)
    return CliRunner()


def test_init_writes_a_commented_starter_that_validates(runner: CliRunner, tmp_path: Path) -> None:
    args = ["init", "mine", "--model", "llama-3-8b", "--model", "mistral-7b", "--hardware", "h200"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "wrote mine.toml, sweeps.schema.json; next: sweeps run mine.toml" in result.stderr
    text = (tmp_path / "mine.toml").read_text(encoding="utf-8")
    assert text.startswith(SCHEMA_LINE + "\n")
    assert "# catalog ids (`sweeps list models`)" in text  # commented
    sweep = load_config(tmp_path / "mine.toml")
    assert [m.id for m in sweep.models] == ["llama-3-8b", "mistral-7b"]
    assert [h.id for h in sweep.hardware] == ["h200"]
    assert sweep.batch == (1, 2, 4, 8, 16, 32, 64, 128, 256)
    assert json.loads((tmp_path / SCHEMA_FILE).read_text(encoding="utf-8")) == json.loads(
        schema_text()
    )
    again = runner.invoke(cli, args)
    assert again.exit_code == 2
    assert again.stderr.startswith("Error: mine.toml: a file is already there; pass --force")
    assert runner.invoke(cli, [*args, "--force"]).exit_code == 0


def test_init_defaults_and_a_bad_id(runner: CliRunner, tmp_path: Path) -> None:
    assert runner.invoke(cli, ["init"]).exit_code == 0
    assert load_config(tmp_path / "my-sweep.toml").models[0].id == "llama-3-8b"
    bad = runner.invoke(cli, ["init", "other", "--hardware", "h100"])
    assert bad.exit_code == 2
    assert "other.toml: axes.hardware[0]: unknown hardware 'h100'; did you mean" in bad.stderr
    assert not (tmp_path / "other.toml").exists()  # nothing written that would not validate


def test_init_lists_and_copies_the_shipped_examples(runner: CliRunner, tmp_path: Path) -> None:
    # by name: a name that extends another ("...-v3-dep", "...-v3") sorts after it, its file before
    assert example_names() == sorted(path.stem for path in SHIPPED)
    listed = runner.invoke(cli, ["init", "--list"])
    assert listed.exit_code == 0
    assert len(listed.stdout.splitlines()) == len(SHIPPED)
    assert "seed-llama3-8b-h100" in listed.stdout
    assert "The seed note's study: Llama-3 8B decode on an H100 SXM" in listed.stdout
    copied = runner.invoke(cli, ["init", "--example", "seed-llama3-8b-h100"])
    assert copied.exit_code == 0, copied.output
    assert (tmp_path / "seed-llama3-8b-h100.toml").read_bytes() == (
        CONFIGS / "seed-llama3-8b-h100.toml"
    ).read_bytes()
    wrong = runner.invoke(cli, ["init", "--example", "seed"])
    assert wrong.exit_code == 2
    assert (
        "Error: --example seed: no such example; did you mean 'seed-llama3-8b-h100'?"
        in wrong.stderr
    )
    both = runner.invoke(cli, ["init", "--example", "seed-llama3-8b-h100", "--model", "llama-3-8b"])
    assert both.exit_code == 2
    assert "--example" in runner.invoke(cli, ["init", "--help"]).stdout
    assert "--study" not in runner.invoke(cli, ["init", "--help"]).stdout  # hidden: deprecated


def test_init_study_is_a_deprecated_alias_of_example(runner: CliRunner, tmp_path: Path) -> None:
    old = runner.invoke(cli, ["init", "old", "--study", "seed-llama3-8b-h100"])
    assert old.exit_code == 0, old.output
    assert "--study is deprecated; use --example" in old.stderr
    assert load_config(tmp_path / "old.toml").name == "old"


def test_schema_is_the_config_model_and_the_shipped_copy_is_current() -> None:
    result = CliRunner().invoke(cli, ["schema"])
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert {k: v for k, v in document.items() if k != "$schema"} == ConfigFile.model_json_schema()
    shipped = (CONFIGS / SCHEMA_FILE).read_text(encoding="utf-8")
    assert shipped == result.stdout, "run: sweeps schema > configs/sweeps.schema.json"


def validator() -> jsonschema.protocols.Validator:
    schema = json.loads(schema_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_config_carries_the_directive_and_validates(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.splitlines()[0] == SCHEMA_LINE
    assert (path.parent / SCHEMA_FILE).is_file()  # what the directive points at
    errors = list(validator().iter_errors(tomllib.loads(text)))
    assert not errors, [e.message for e in errors]


def test_the_readme_bad_examples_are_rejected_by_the_schema() -> None:
    examples = [block.split("```", 1)[0] for block in README.split("```toml bad\n")[1:]]
    assert len(examples) == 2
    found = [list(validator().iter_errors(tomllib.loads(example))) for example in examples]
    assert "'bacth' was unexpected" in found[0][0].message
    assert list(found[1][0].absolute_path) == ["axes", "batch"]


def complete(words: str, tmp_path: Path) -> list[str]:
    env = {
        "_SWEEPS_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    result = CliRunner(env=env).invoke(cli, [], prog_name="sweeps")
    return [line.split(",", 1)[1] for line in result.stdout.splitlines()]


def test_completion_of_commands_options_ids_and_configs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.toml").write_text("", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("", encoding="utf-8")
    (tmp_path / "studies").mkdir()
    assert complete("sweeps in", tmp_path) == ["init"]
    assert "--memory-budget" in complete("sweeps run --mem", tmp_path)
    hardware = complete("sweeps classify --hardware h1", tmp_path)
    assert {"h100-sxm", "h100-pcie"} <= set(hardware)
    assert all(h.startswith("h1") for h in hardware)
    assert "h200" in complete("sweeps classify --hardware h", tmp_path)
    assert "llama-3-8b" in complete("sweeps init --model llama-3-", tmp_path)
    configs = complete("sweeps run ", tmp_path)
    assert "mine.toml" in configs
    assert "studies/" in configs
    assert "notes.txt" not in configs


def test_init_names_and_the_commented_serving_table(runner: CliRunner, tmp_path: Path) -> None:
    assert runner.invoke(cli, ["init", "my.toml"]).exit_code == 0
    assert (tmp_path / "my.toml").is_file()
    assert not (tmp_path / "my.toml.toml").exists()
    text = (tmp_path / "my.toml").read_text(encoding="utf-8")
    assert "serving" not in load_config(tmp_path / "my.toml").studies  # commented out: no plan
    assert "\n# [serving]" in text
    served = "\n".join(  # uncommented, the table is a plan that validates
        line.removeprefix("# ")
        if (line.startswith("# ") and "=" in line.split("#", 2)[1])
        or line.startswith("# [serving]")
        else line
        for line in text.splitlines()
    )
    (tmp_path / "served.toml").write_text(served, encoding="utf-8")
    sweep = load_config(tmp_path / "served.toml")
    assert sweep.studies.get("serving") is not None
    assert (
        runner.invoke(cli, ["init", "renamed", "--example", "seed-llama3-8b-h100"]).exit_code == 0
    )
    copied = load_config(tmp_path / "renamed.toml")
    assert copied.name == "renamed"  # its own output folder, outputs/renamed/
    assert copied.title == load_config(CONFIGS / "seed-llama3-8b-h100.toml").title


@pytest.mark.parametrize("name", ["", "a\nb", ".toml", "Upper"])
def test_init_refuses_a_name_that_is_no_config_name(runner: CliRunner, name: str) -> None:
    result = runner.invoke(cli, ["init", name])
    assert result.exit_code == 2, result.output
    assert f"Error: NAME (sweeps init): {name.removesuffix('.toml')!r} is not a valid name" in (
        result.output
    )
    assert "starts with a-z or 0-9" in result.output
    assert not list(Path().glob("*.toml"))


def test_bench_runs_has_a_ceiling() -> None:
    result = CliRunner().invoke(cli, ["bench", "--runs", "1000000000"])
    assert result.exit_code == 2
    assert "Invalid value for '--runs': 1000000000 is not in the range 1<=x<=100." in (
        result.output
    )
