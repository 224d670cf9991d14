"""Loading the vector matrix: rows are streamed into one preallocated matrix and each row
lands at its own chunk's position, or nowhere."""

from __future__ import annotations

import numpy as np

from clearance.store.memory import ContentIndex, Row, VectorRows


def content(keys: list[int]) -> ContentIndex:
    rows: list[Row] = [(k, 1, 1, f"doc#{k}", 0, b"", b"") for k in keys]
    return ContentIndex.build(1, 0, rows)


def blob(*values: float) -> bytes:
    return np.asarray(values, dtype=np.float32).tobytes()


def test_rows_land_at_their_chunks_positions_in_any_order() -> None:
    index = content([10, 20, 30])
    rows = [(30, blob(3, 3)), (10, blob(1, 1))]

    loaded = VectorRows.load(index, iter(rows), count=2)

    assert loaded.positions.tolist() == [2, 0]
    assert loaded.matrix.tolist() == [[3, 3], [1, 1]]
    assert loaded.dim == 2


def test_unknown_chunks_and_rows_of_another_width_are_left_out() -> None:
    index = content([10, 20, 30])
    rows = [(10, blob(1, 1)), (99, blob(9, 9)), (20, blob(2, 2, 2)), (30, blob(3, 3))]

    loaded = VectorRows.load(index, iter(rows), count=len(rows))

    assert loaded.positions.tolist() == [0, 2]
    assert loaded.matrix.tolist() == [[1, 1], [3, 3]]


def test_a_count_above_the_rows_and_a_list_without_count_give_the_same() -> None:
    index = content([10, 20])
    rows = [(20, blob(2)), (10, blob(1))]

    streamed = VectorRows.load(index, iter(rows), count=10)
    listed = VectorRows.load(index, rows)

    for loaded in (streamed, listed):
        assert loaded.positions.tolist() == [1, 0]
        assert loaded.matrix.tolist() == [[2], [1]]


def test_no_rows_give_an_empty_matrix() -> None:
    loaded = VectorRows.load(content([10]), iter([]), count=0)
    assert loaded.positions.size == 0 and loaded.matrix.shape == (0, 0)


def test_positions_of_dead_chunks_are_not_found() -> None:
    index = content([10, 20]).changed(2, 1, np.asarray([10]), [], None)

    loaded = VectorRows.load(index, [(10, blob(1)), (20, blob(2))])

    assert loaded.positions.tolist() == [1]
    assert loaded.matrix.tolist() == [[2]]
