"""Reciprocal rank fusion: the formula with k=60, and deterministic tie-breaking."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clearance.retrieval.fusion import reciprocal_rank_fusion


def test_rrf_scores_follow_the_formula_with_k_60() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]]))

    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)


def test_rrf_orders_best_first() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])

    assert [item for item, _ in fused] == ["b", "a", "d", "c"]
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)


def test_rrf_k_changes_the_scores() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b"]], k=1))

    assert fused == {"a": pytest.approx(1 / 2), "b": pytest.approx(1 / 3)}


def test_appearing_in_both_lists_beats_leading_one() -> None:
    fused = reciprocal_rank_fusion([["x", "both"], ["y", "both"]])

    assert fused[0][0] == "both"
    assert fused[0][1] == pytest.approx(2 / 62)


def test_ties_break_by_best_single_rank_then_by_id() -> None:
    # mirrored lists: equal scores, equal best rank → by id
    assert [i for i, _ in reciprocal_rank_fusion([["b", "a"], ["a", "b"]])] == ["a", "b"]
    assert [i for i, _ in reciprocal_rank_fusion([["z"], ["y"], ["x"]])] == ["x", "y", "z"]


def test_an_exact_tie_is_decided_by_the_rule_not_by_float_rounding() -> None:
    """Regression: "z" (ranks 1, 2, 8) and "a" (ranks 2, 8, 1) tie exactly, but summing
    1/61 + 1/62 + 1/68 in two orders differs in the last bit, and that used to put "z"
    first. Both have best rank 1, so the id decides."""
    lists = [
        ["z", "a", *(f"f{i}" for i in range(6))],
        ["g0", "z", *(f"g{i}" for i in range(1, 6)), "a"],
        ["a", *(f"h{i}" for i in range(6)), "z"],
    ]
    fused = reciprocal_rank_fusion(lists)

    assert fused[0][1] == fused[1][1] == pytest.approx(1 / 61 + 1 / 62 + 1 / 68)
    assert [item for item, _ in fused[:2]] == ["a", "z"]


def test_best_rank_breaks_an_exact_tie_before_the_id() -> None:
    # With k=1: "b" at ranks (1, 5) scores 1/2 + 1/6 = 2/3; "a" at ranks (2, 2) scores 2/3.
    lists = [["b", "a", "x1", "x2", "x3"], ["y1", "a", "y2", "y3", "b"]]
    fused = reciprocal_rank_fusion(lists, k=1)
    scores = dict(fused)

    assert scores["a"] == pytest.approx(scores["b"])
    order = [item for item, _ in fused]
    assert order.index("b") < order.index("a")  # best single rank 1 beats 2, despite the id


def test_fusion_is_independent_of_list_order() -> None:
    lists = [["a", "b", "c"], ["c", "d"], ["d", "a", "e"]]
    results = {
        tuple(item for item, _ in reciprocal_rank_fusion(list(p)))
        for p in itertools.permutations(lists)
    }
    assert len(results) == 1


def test_empty_inputs_and_bad_k() -> None:
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []]) == []
    with pytest.raises(ValueError, match="rrf k must be positive"):
        reciprocal_rank_fusion([["a"]], k=0)


@given(st.lists(st.lists(st.sampled_from("abcdefgh"), unique=True, max_size=6), max_size=4))
def test_rrf_is_deterministic_and_sorted(lists: list[list[str]]) -> None:
    first = reciprocal_rank_fusion(lists)
    again = reciprocal_rank_fusion([list(x) for x in reversed(lists)])

    assert [i for i, _ in first] == [i for i, _ in again]
    assert {i for i, _ in first} == {i for lst in lists for i in lst}
    assert [s for _, s in first] == sorted((s for _, s in first), reverse=True)


def test_weights_scale_each_list_and_zero_removes_one() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "c"]], k=60, weights=[1.0, 0.5]))
    assert fused == {
        "a": pytest.approx(1 / 61),
        "b": pytest.approx(1 / 62 + 0.5 / 61),
        "c": pytest.approx(0.5 / 62),
    }
    only_first = reciprocal_rank_fusion([["a", "b"], ["c", "b"]], k=60, weights=[1.0, 0.0])
    assert only_first == reciprocal_rank_fusion([["a", "b"]], k=60)
    # the best single rank of a zero-weight list does not break ties either
    assert [i for i, _ in only_first] == ["a", "b"]


def test_unit_weights_change_nothing() -> None:
    lists = [["a", "b", "c"], ["c", "d"]]
    assert reciprocal_rank_fusion(lists, weights=[1.0, 1.0]) == reciprocal_rank_fusion(lists)


@pytest.mark.parametrize("weights", [[1.0], [1.0, -0.5], [1.0, float("inf")], [1.0, float("nan")]])
def test_bad_weights_are_refused(weights: list[float]) -> None:
    with pytest.raises(ValueError, match="weights"):
        reciprocal_rank_fusion([["a"], ["b"]], weights=weights)
