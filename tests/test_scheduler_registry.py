"""The ``Scheduler`` registry (``sweeps.schedulers``): every list, check, price
and code of a mode derives from its record, and every record is priced, simulated, checked by
the config and has its plain loop (the oracle of its closed form)."""

from __future__ import annotations

import json

import pytest

from sweeps import schedulers as registry
from sweeps.axes import AXIS
from sweeps.config import parse_config
from sweeps.errors import ConfigError
from sweeps.schedulers import MODES, SCHEDULERS, Scheduler
from sweeps.studies.serving.closed_forms import PRICED
from sweeps.studies.serving.simulate import kernel

from .schedulers import Chunked, Costs, Run, oracles

BASE = """
[sweep]
name = "registry"
[axes]
model = ["llama-3-8b"]
hardware = ["h100-sxm"]
batch = [8]
context = [1024]
[serving]
"""


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_each_mode_is_priced_by_the_closed_form_its_record_names(mode: Scheduler) -> None:
    assert PRICED[mode.name].__name__ == mode.closed_form
    assert mode.doc
    assert "\n" not in mode.doc


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
def test_each_simulated_mode_has_its_code_in_the_kernel(mode: Scheduler) -> None:
    if mode.code is None:  # the bound: no schedule to run
        assert mode.name not in registry.SCHEDULER_CODES
        return
    assert kernel.SCHEDULER_CODES[mode.name] == mode.code
    assert (mode.code in kernel.CHUNKED) is mode.chunked


@pytest.mark.parametrize("name", SCHEDULERS)
def test_each_named_scheduler_has_its_plain_loop(name: str) -> None:
    run = Run(Costs.__new__(Costs), 1, 1, 1, 1, True)  # the loops are looked up, not run
    assert name in oracles(run, Chunked(run))


def test_the_lists_derive_from_the_records() -> None:
    assert tuple(m.name for m in MODES) == registry.SERVING_MODES
    assert tuple(m.name for m in MODES if m.named) == registry.SCHEDULERS
    assert tuple(m.name for m in MODES if m.chunked) == registry.CHUNKED
    assert (*registry.SCHEDULERS, "disaggregated") == registry.POOL_MODES
    assert set(registry.MODE_ALIASES.values()) <= set(registry.SCHEDULERS)
    assert all(name in AXIS["mode"].description for name in SCHEDULERS)


def test_the_config_checks_names_against_the_registry() -> None:
    every = parse_config(BASE)
    assert every.studies["serving"].schedulers == list(SCHEDULERS)
    assert AXIS["mode"].labels(every) == list(registry.SERVING_MODES)
    allowed = ", ".join(repr(n) for n in (*SCHEDULERS, *registry.MODE_ALIASES))
    with pytest.raises(ConfigError) as bad:
        parse_config(BASE + 'schedulers = ["serial-prefill", "fifo"]\n')
    assert "serving.schedulers[1]" in str(bad.value)
    assert f"'fifo' is not a named scheduler; allowed: {allowed}" in str(bad.value)


def test_the_json_schema_lists_the_registered_names() -> None:
    from sweeps.config.schema import ConfigFile

    schema = json.dumps(ConfigFile.model_json_schema())
    for name in (*SCHEDULERS, *registry.MODE_ALIASES):
        assert json.dumps(name) in schema
