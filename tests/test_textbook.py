"""The note's two textbook functions: exact keys, 4-decimal rounding, the >= tie rule."""

from __future__ import annotations

from sweeps import classify_llm_phases, compute_arithmetic_intensity


def test_classify_llm_phases_check_value() -> None:
    # cost-model.md section 1: 7e9 params, sequence 512, batch 8, 2 bytes, 989e12, 3.35e12
    result = classify_llm_phases(7e9, 512, 8, 2, 989e12, 3.35e12)
    assert set(result) == {"ridge_point", "prefill", "decode"}
    assert result["ridge_point"] == 295.2239  # 989 / 3.35 = 295.22388 -> 4 decimals
    prefill, decode = result["prefill"], result["decode"]
    keys = {
        "total_flops",
        "memory_bytes",
        "arithmetic_intensity",
        "bottleneck",
        "achieved_flops",
        "utilization_percent",
    }
    assert set(prefill) == keys == set(decode)  # type: ignore[arg-type]
    assert prefill["arithmetic_intensity"] == 512.0  # type: ignore[index]
    assert prefill["bottleneck"] == "compute-bound"  # type: ignore[index]
    assert prefill["utilization_percent"] == 100.0  # type: ignore[index]
    assert decode["total_flops"] == 2 * 7e9 * 8  # type: ignore[index]
    assert decode["memory_bytes"] == 14e9  # type: ignore[index]
    assert decode["arithmetic_intensity"] == 8.0  # type: ignore[index]
    assert decode["bottleneck"] == "memory-bound"  # type: ignore[index]
    assert decode["utilization_percent"] == 2.7098  # 8 * 3.35 / 989 * 100 = 2.70981  # type: ignore[index]


def test_compute_arithmetic_intensity_keys_and_rounding() -> None:
    result = compute_arithmetic_intensity(1e12, 3e9, 989.4e12, 3.35e12)
    assert list(result) == [
        "arithmetic_intensity",
        "ridge_point",
        "bottleneck",
        "achieved_performance",
        "utilization_percent",
    ]
    assert result["arithmetic_intensity"] == 333.3333  # 1000/3
    assert result["ridge_point"] == 295.3433  # 989.4/3.35 = 295.34328
    assert result["bottleneck"] == "compute-bound"
    assert result["utilization_percent"] == 100.0


def test_exact_tie_is_compute_bound() -> None:
    result = compute_arithmetic_intensity(295.0, 1.0, 295.0, 1.0)
    assert result["arithmetic_intensity"] == result["ridge_point"] == 295.0
    assert result["bottleneck"] == "compute-bound"
    below = compute_arithmetic_intensity(294.0, 1.0, 295.0, 1.0)
    assert below["bottleneck"] == "memory-bound"
    assert below["utilization_percent"] == round(294 / 295 * 100, 4)
