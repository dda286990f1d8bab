"""Bad speculative and prefix inputs (``sweeps/studies/speculative/drafts.py``, ``sweeps/studies/prefix/tiers.py``): each named, exit 2
through the CLI with nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from sweeps.cli.main import cli
from sweeps.config import parse_config
from sweeps.errors import ConfigError

from .techniques import BASE

# --- bad inputs -------------------------------------------------------------------------------


BAD = [
    ("spec_tokens = [-1]", "axes.spec_tokens"),
    ("spec_acceptance = [1.5]", "axes.spec_acceptance"),
    ("spec_acceptance = [-0.1]", "axes.spec_acceptance"),
    ('spec_draft = ["llama-3.1-70b"]', "axes.spec_draft[0]: draft model 'llama-3.1-70b'"),
    ('spec_draft = ["no-such-draft"]', "axes.spec_draft[0]"),
    ("prefix_hit_rate = [1.5]", "axes.prefix_hit_rate"),
    ('kv_tier = ["floppy"]', "axes.kv_tier[0]: unknown tier 'floppy'"),
    ('kv_tier = ["slow"]\n\n[kv_tiers.slow]\ncapacity = 1e12', "kv_tiers.slow.bandwidth"),
]


@pytest.mark.parametrize(("extra", "message"), BAD, ids=[m for _, m in BAD])
def test_bad_inputs_are_named(extra: str, message: str) -> None:
    axes, _, tables = extra.partition("\n\n")
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_config(BASE.format(models='["llama-3.1-8b"]', extra=axes) + tables)


@pytest.mark.parametrize("extra", [extra for extra, _ in BAD[:2] + BAD[3:4] + BAD[5:6] + BAD[7:]])
def test_bad_inputs_exit_2_and_write_nothing(extra: str, tmp_path: Path) -> None:
    axes, _, tables = extra.partition("\n\n")
    config = tmp_path / "bad.toml"
    config.write_text(BASE.format(models='["llama-3.1-8b"]', extra=axes) + tables)
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["run", str(config), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "bad.toml" in result.output
    assert not out.exists() or not any(out.iterdir())


def test_host_tier_on_a_device_without_a_host_link_is_named() -> None:
    custom = "[hardware.bare]\npeak_flops = { bf16 = 1e15 }\nbandwidth = 3e12\nmemory = 80e9\n"
    text = BASE.format(models='["llama-3.1-8b"]', extra='kv_tier = ["host"]') + custom
    text = text.replace('["h100-sxm", "h200"]', '["bare"]')
    with pytest.raises(ConfigError, match=r"axes.kv_tier\[0\]: 'host' needs .* 'bare'"):
        parse_config(text)
