import pytest

from attnconv import grid_coordinates, relative_shifts


def test_grid_coordinates_row_major_with_padding():
    c = grid_coordinates((2, 3), padding=1)
    assert c.shape == (4 * 5, 2)
    expected = [(i, j) for i in range(-1, 3) for j in range(-1, 4)]
    assert [tuple(r) for r in c.tolist()] == expected


def test_relative_shifts_match_plain_loop():
    h, w, p = 3, 4, 1
    d = relative_shifts((h, w), p)
    queries = [(i, j) for i in range(h) for j in range(w)]
    keys = [(i, j) for i in range(-p, h + p) for j in range(-p, w + p)]
    assert d.shape == (len(queries), len(keys), 2)
    for qi, q in enumerate(queries):
        for ki, k in enumerate(keys):
            assert tuple(d[qi, ki].tolist()) == (k[0] - q[0], k[1] - q[1])


def test_relative_shifts_1d():
    d = relative_shifts((5,), 2)
    assert d.shape == (5, 9, 1)
    assert d[0, 0, 0] == -2 and d[4, 8, 0] == 4 - 4 + 2


@pytest.mark.parametrize("shape,padding", [((0, 3), 0), ((3,), -1), ((), 0)])
def test_grid_errors(shape, padding):
    with pytest.raises(ValueError):
        grid_coordinates(shape, padding)
