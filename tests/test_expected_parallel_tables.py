"""``prefix_expected`` and ``speculative_expected`` on parallel layouts (issue 43): both tables
take the ``ep``, ``dp_attention`` and ``pp`` dims as expected.parquet does; ``k = 0`` is its
decode step and ``h = 0`` its TTFT bit for bit at every layout; at ``ep = pp = 1`` they are the
run without the axes; no expectation of a parallel layout sits below its bound; the drafts
are placed as the bound places them.

Reads the installed ``aiconfigurator-core`` (the ``measured`` extra, a test dependency)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from sweeps.config import parse_config
from sweeps.engine.parallel_terms import PARALLEL_DIMS
from sweeps.grid.build import build_grid
from sweeps.studies.expected.prefixed import PREFIX_EXPECTED
from sweeps.studies.expected.speculative import SPECULATIVE_EXPECTED, _draft
from sweeps.studies.expected.step import Config, decode

from .test_expected_parallel import _config
from .test_speculative_expected import _bits, k0_bits

pytest.importorskip("aiconfigurator_core")

AXES = """
[sweep]
name = "xparspec"

[axes]
model = ["qwen3-235b-a22b"]
hardware = ["h100-sxm"]
tp = [1]
batch = [1, 16, 256]
context = [2048]
prompt = [2048]
weight_dtype = ["fp8"]
kv_dtype = ["fp8"]
engine = ["vllm", "trtllm"]
spec_tokens = [0, 4]
spec_acceptance = [0.7]
spec_draft = ["ngram", "mtp", "llama-3.2-1b"]
prefix_hit_rate = [0.0, 0.5, 0.9]
"""
"""A MoE model at ep 1 and 4 with and without data-parallel attention, pp 1 and 2, under two
engines; the prompts are the contexts, so expected.parquet's TTFT is at the same points."""

LAYOUTS = "ep = [1, 4]\ndp_attention = [true, false]\npp = [1, 2]\n"


@pytest.fixture(scope="module")
def ds() -> xr.Dataset:
    return build_grid(parse_config(AXES + LAYOUTS, "<parallel>"))


@pytest.fixture(scope="module")
def plain() -> xr.Dataset:
    return build_grid(parse_config(AXES, "<plain>"))


def _layered(ds: xr.Dataset, like: xr.DataArray) -> np.ndarray:
    """Where ``like``'s points are on a parallel layout (``ep`` or ``pp`` above 1)."""
    layered = ((ds["ep"] > 1) | (ds["pp"] > 1)).broadcast_like(like)
    return np.asarray(layered.transpose(*like.dims).values)


def test_both_tables_take_the_parallel_dims_and_compose_every_layout(ds: xr.Dataset) -> None:
    for analysis in (PREFIX_EXPECTED, SPECULATIVE_EXPECTED):
        for variable in analysis.variables:
            assert set(PARALLEL_DIMS) <= set(ds[variable.name].dims), variable.name
    per_token = ds["expected_spec_time_per_output_token_s"]
    hit = ds["expected_hit_prefill_s"]
    assert np.isfinite(per_token.values).all()  # the H100's tables hold every layout
    assert np.isfinite(hit.values).all()
    assert (ds["expected_spec_reason"] == "").all()
    assert (ds["prefix_expected_reason"] == "").all()


def test_k0_is_the_expected_decode_step_bit_for_bit_at_every_layout(ds: xr.Dataset) -> None:
    at = k0_bits(ds)
    assert (at["expected_draft_time_s"] == 0).all()
    # the check can fail: a verify step of 5 rows is another step at every layout
    longer = ds.sel(spec_tokens=4)["expected_verify_time_s"] > ds["expected_step_time_s"]
    assert bool(longer.sel(batch=[16, 256]).all())


def test_h0_is_the_expected_ttft_bit_for_bit_at_every_layout(ds: xr.Dataset) -> None:
    hit = ds["expected_hit_prefill_s"].sel(prefix_hit_rate=0.0)
    ttft = ds["expected_ttft_s"].sel(context=2048, drop=True)
    _bits(hit.sel(prompt=2048, drop=True), ttft, "ttft")
    assert (ds["expected_cached_tokens"].sel(prefix_hit_rate=0.0) == 0).all()
    half = ds["expected_hit_prefill_s"].sel(prefix_hit_rate=0.5)
    assert bool((half < hit).all())  # the check can fail: a hit skips half the prompt


def test_at_ep_and_pp_one_the_rows_are_the_run_without_the_axes(
    ds: xr.Dataset, plain: xr.Dataset
) -> None:
    names = [v.name for a in (PREFIX_EXPECTED, SPECULATIVE_EXPECTED) for v in a.variables]
    for dp in ("true", "false"):  # data-parallel attention at ep 1: one copy either way
        one = ds.sel(ep=1, pp=1, dp_attention=dp, drop=True)
        for name in names:
            assert set(one[name].dims) == set(plain[name].dims), name
            _bits(one[name], plain[name], f"{name} dp {dp}")
    moved = ds.sel(ep=4, pp=1, dp_attention="true", drop=True)["expected_hit_prefill_s"]
    assert not bool((moved == plain["expected_hit_prefill_s"]).all())  # the check can fail


PAIRS = (
    ("expected_spec_time_per_output_token_s", "spec_time_per_output_token_s", "spec_below_bound",
     216),
    ("expected_hit_prefill_s", "hit_compute_time_s", "prefix_below_bound", 108),
    ("expected_verify_time_s", "verify_time_s", "", 216),
    ("expected_draft_time_s", "draft_time_s", "", 72),
)  # fmt: skip
"""Each expectation, its bound, its flag, and how many points of a parallel layout have both."""


@pytest.mark.parametrize(("name", "bound", "flag", "points"), PAIRS, ids=[p[0] for p in PAIRS])
def test_no_expectation_of_a_parallel_layout_sits_below_its_bound(
    ds: xr.Dataset, name: str, bound: str, flag: str, points: int
) -> None:
    """None of the times per output token (216 on parallel layouts), hit prefills (108),
    verify steps (216) or drafts (72, an MTP head or a draft model) is below the bound of the
    same layout (the speculative table's with the link and hand-offs): measured, the highest
    bound over expectation on a parallel layout 0.856 (a verify step of k = 4), 0.717 (a hit
    prefill), 0.665 (a draft); at ep = pp = 1, 0.991 (a plain step: the routing's, as
    expected.parquet's). A verify step whose rows were split from their sequence ran 6.6 %
    below (``test_a_verify_steps_rows_stay_with_their_sequence``); this fails on it too.
    Where one is below, ``below_bound`` flags it."""
    expected, held = xr.broadcast(ds[name], ds[bound])
    held = held.transpose(*expected.dims)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (held / expected).values
    layered = _layered(ds, expected)
    known = np.isfinite(ratio)
    drafted = expected.values > 0  # ngram's draft is 0 against 0
    assert int((known & layered & drafted).sum()) == points
    below = known & drafted & (ratio > 1.0)
    assert int(below.sum()) == 0, expected.where(below).to_dataframe().dropna().head()
    if flag:
        flags = ds[flag].broadcast_like(expected).transpose(*expected.dims).values
        assert (flags[known] == (expected.values < held.values)[known]).all()


def test_the_drafts_run_on_the_last_stage_for_each_micro_batch_in_turn() -> None:
    """Placed as the bound places them (``sweeps.engine.drafts``): at ep 4 with data-parallel
    attention and pp 2 a rank's micro-batch of 64 sequences is ``ceil(ceil(64 / 2) / 4) = 8``,
    and the last stage drafts the 2 micro-batches in turn: a draft model (dense, at the
    rank's tp, no experts to split) twice its steps at batch 8 without the axes. At pp 2 alone
    an MTP head's passes are twice those of pp 1 at 32 sequences (its mean layer: the
    micro-batch's operations, no hand-off), bit for bit."""
    sweep = parse_config(AXES, "<drafts>")
    records = {str(r.id if r.kind == "model" else r.kind): r for r in sweep.spec_draft}
    ks, context = np.array([0, 2, 4]), np.array([2048])

    def drafted(config: Config, batch: int, record: object) -> np.ndarray:
        plain = decode(config, np.array([batch]), context)
        assert not isinstance(plain, str)
        time, _, reason = _draft(config, record, plain, ks, np.array([batch]), context)
        assert reason == ""
        return time

    alone = _config("qwen3-235b-a22b", "h100-sxm", "vllm")
    placed = _config("qwen3-235b-a22b", "h100-sxm", "vllm", 1, 4, True, 2)
    model = records["llama-3.2-1b"]
    assert (drafted(placed, 64, model) == 2.0 * drafted(alone, 8, model)).all()
    assert (drafted(placed, 64, model)[1:] > 0).all()
    piped = _config("qwen3-235b-a22b", "h100-sxm", "vllm", pp=2)
    mtp = records["mtp"]
    assert (drafted(piped, 64, mtp) == 2.0 * drafted(alone, 32, mtp)).all()
    assert (drafted(piped, 64, mtp)[1:] > drafted(alone, 64, mtp)[1:]).all()  # can fail


def test_a_verify_steps_rows_stay_with_their_sequence() -> None:
    """The pipeline's micro-batches and a rank's share are of whole sequences, each with its
    ``k + 1`` rows: at pp 2 one sequence's 5 rows (``k = 4``) cross the stages together, as 5
    sequences' single rows at pp 1 (but the hand-off), and 3 sequences of 3 rows are a
    micro-batch of 2 of them, 6 rows; at ep 4 with data-parallel attention one sequence's 3
    rows are on one rank, as 12 single-row sequences spread 3 a rank. Read as rows alone they
    were split (3 of 5 rows a micro-batch; 1 of 3 a rank) and the verify step of one sequence
    at pp 2 ran 6.6 % below its bound (H100, TensorRT-LLM, 512 tokens)."""
    context = np.array([512, 8192])
    alone = _config("qwen3-235b-a22b", "h100-sxm", "trtllm")
    piped = _config("qwen3-235b-a22b", "h100-sxm", "trtllm", pp=2)
    for batch, rows, path in ((1, 5, 5), (3, 3, 6)):
        got, held = (
            decode(piped, np.array([batch]), context, rows),
            decode(alone, np.array([path]), context),
        )
        assert not isinstance(got, str)
        assert not isinstance(held, str)
        assert set(got.expected) == {*held.expected, "handoff"}
        for op, value in held.expected.items():
            assert (got.expected[op] == value).all(), (batch, op)
    ranked = _config("qwen3-235b-a22b", "h100-sxm", "trtllm", 1, 4, True)
    got, held = decode(ranked, np.array([1]), context, 3), decode(ranked, np.array([12]), context)
    assert not isinstance(got, str)
    assert not isinstance(held, str)
    assert (got.step == held.step).all()


def test_a_trace_hit_rate_is_read_at_each_layouts_own_cache(tmp_path: Path) -> None:
    """``prefix_hit_rate = "trace"``: the hit rate is the trace's at each point's own cache,
    which a layout changes (pp 2 holds half the weights and half the layers' cache a device);
    the hit prefill skips each layout's own share (three requests, by hand: 2/7 of the prompt
    tokens hit with one block of cache at pp 1, 3/7 with room for more at pp 2)."""
    import sweeps
    from sweeps import physics

    from .test_prefix_trace import _reserve, _write_trace

    _write_trace(tmp_path, [[1, 2], [1, 2, 3], [1, 4]], [1024, 1536, 1024])
    path = tmp_path / "sweep.toml"
    path.write_text(
        f"""
[sweep]
name = "trace-layouts"
[axes]
model = ["llama-3.1-8b"]
hardware = ["h100-sxm"]
tp = [1]
pp = [1, 2]
batch = [1, 4]
context = [1024]
prompt = [1024, 4096]
kv_dtype = ["bf16"]
weight_dtype = ["bf16"]
engine = ["vllm"]
prefix_hit_rate = "trace"
prefix_trace = "reuse.jsonl"
[options]
memory_reserve = {_reserve(1.25)!r}
[outputs]
charts = []
grid = "none"
""",
        encoding="utf-8",
    )
    ds = sweeps.run(path)
    hit = ds["hit_rate"]
    assert "pp" in hit.dims
    assert float(hit.sel(pp=1).max()) == pytest.approx(2 / 7, abs=1e-15)
    assert float(hit.sel(pp=2).min()) == pytest.approx(3 / 7, abs=1e-15)
    cached = ds["expected_cached_tokens"]
    held = physics.whole_cached_tokens(ds["prompt"], hit).broadcast_like(cached)
    _bits(cached, held.transpose(*cached.dims), "cached")
    assert np.isfinite(ds["expected_hit_prefill_s"].values).all()


def test_the_once_verify_step_composes_on_every_layout(ds: xr.Dataset) -> None:
    """``expected_verify_time_once_s`` at every layout: the decode step at k 0 bit for bit,
    never above the per-row verify step, null where it is; and its attention is the rank's
    micro-batch's: one sequence's at pp 2 and 4 sequences' at ep 4 with data-parallel
    attention (one a rank) save the per-row reading what one sequence saves alone."""
    from sweeps.studies.expected.speculative import _once

    once, rows = ds["expected_verify_time_once_s"], ds["expected_verify_time_s"]
    _bits(once.sel(spec_tokens=0), ds["expected_step_time_s"], "once at k 0")
    assert (np.isnan(once) == np.isnan(rows)).all()
    known = np.isfinite(rows.sel(spec_tokens=4))
    assert bool(known.where(_layered(ds, known)).any())  # some layouts compose
    assert (once.sel(spec_tokens=4) <= rows.sel(spec_tokens=4)).where(known, True).all()
    context = np.array([512, 8192])

    def saved(config: Config, batch: int) -> np.ndarray:
        plain, verify = decode(config, np.array([batch]), context), None
        verify = decode(config, np.array([batch]), context, 5)
        assert not isinstance(plain, str)
        assert not isinstance(verify, str)
        return verify.step - _once(config, plain, verify, 4, np.array([batch]), context)

    alone = saved(_config("qwen3-235b-a22b", "h100-sxm", "trtllm"), 1)
    assert (alone >= 0).all()
    assert (alone[:, 1] > 0).all()  # at S 8192 the cache read once saves (can fail)
    piped = saved(_config("qwen3-235b-a22b", "h100-sxm", "trtllm", pp=2), 1)
    ranked = saved(_config("qwen3-235b-a22b", "h100-sxm", "trtllm", 1, 4, True), 4)
    assert np.allclose(piped, alone, rtol=1e-9)
    assert np.allclose(ranked, alone, rtol=1e-9)
