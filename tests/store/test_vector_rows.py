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


# --------------------------------------------------------------------------- growing in place


def test_extending_the_latest_copy_appends_into_its_headroom_without_touching_it() -> None:
    index = content([10, 20])
    first = VectorRows.load(index, [(10, blob(1)), (20, blob(2))])
    grown = index.changed(2, 1, np.asarray([30]), [(30, 1, 1, "doc#30", 0, b"", b"")], None)

    second = first.extended(grown, [(30, blob(3))])

    assert second is not None
    assert np.shares_memory(first.matrix, second.matrix)  # no copy of the matrix
    assert first.matrix.tolist() == [[1], [2]]  # the older copy still sees its own rows
    assert second.matrix.tolist() == [[1], [2], [3]]
    assert second.positions.tolist() == [0, 1, 2]


def test_extending_an_older_copy_again_never_overwrites_the_newer_one() -> None:
    index = content([10, 20])
    first = VectorRows.load(index, [(10, blob(1)), (20, blob(2))])
    grown = index.changed(2, 1, np.asarray([30]), [(30, 1, 1, "doc#30", 0, b"", b"")], None)
    newer = first.extended(grown, [(30, blob(3))])
    assert newer is not None

    other = first.extended(grown, [(30, blob(9))])  # the same older copy, extended again

    assert other is not None
    assert not np.shares_memory(newer.matrix, other.matrix)
    assert newer.matrix.tolist() == [[1], [2], [3]]
    assert other.matrix.tolist() == [[1], [2], [9]]


def test_growing_past_the_headroom_moves_to_a_larger_buffer() -> None:
    keys = list(range(1, 3001))
    index = content(keys)
    loaded = VectorRows.load(index, [(k, blob(float(k))) for k in keys[:1]])
    capacity = loaded._buffer.array.shape[0] if loaded._buffer is not None else 0
    rest = [(k, blob(float(k))) for k in keys[1:]]

    grown = loaded.extended(index, rest)

    assert capacity < len(keys)
    assert grown is not None and grown.matrix.shape == (len(keys), 1)
    assert grown.matrix[:, 0].tolist() == [float(k) for k in keys]
    assert loaded.matrix.tolist() == [[1.0]]
