"""attnconv.chapters.live_query_explorer: the data the explorer carries gives back, through the
package's own maps, the maps of the saved heads, and bad input gets a one-line error."""

import json
import re
from html import unescape

import numpy as np
import pytest
import torch

from attnconv.chapters.live_query_explorer import (
    query_explorer_data,
    query_explorer_widget,
)
from attnconv.chapters.shared.gaussian_maps import gaussian_head_maps

RECORDS = [
    {
        "centers": [[-1.0, 1.0], [2.0, -2.0]],
        "inverse_covariance": [[[8.0, 0.0], [0.0, 8.0]], [[3.0, 1.2], [1.2, 0.8]]],
    }
]
IMAGES = [np.zeros((8, 8, 3), dtype=np.uint8)]


def test_the_carried_heads_give_the_saved_heads_maps():
    data = query_explorer_data(RECORDS, IMAGES, ["x"], (4, 4), (0, 0, 1, 2))
    heads = data["layers"][0]
    carried = {
        "centers": [h["c"] for h in heads],
        "inverse_covariance": [
            [[h["a"][0], h["a"][1]], [h["a"][1], h["a"][2]]] for h in heads
        ],
    }
    for query in ((0, 0), (1, 2), (3, 3)):
        torch.testing.assert_close(
            gaussian_head_maps(carried, (4, 4), query),
            gaussian_head_maps(RECORDS[0], (4, 4), query),
            rtol=0,
            atol=0,
        )
    assert data["images"] == ["A" * 256]  # 192 zero bytes in base64
    html = query_explorer_widget(RECORDS, IMAGES, ["x"], (4, 4), (0, 0, 1, 2)).data
    assert json.loads(unescape(re.search(r"data-initial='([^']*)'", html)[1])) == data


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"records": []}, "no layer records"),
        ({"labels": ["x", "y"]}, "1 images for 2 labels"),
        ({"images": [np.zeros((8, 8), dtype=np.uint8)]}, r"\(H, W, 3\) arrays"),
        ({"grid": (3, 3)}, "does not split into 3×3 tokens"),
        ({"initial": (0, 1, 0, 0)}, "layer 1 does not exist"),
        ({"initial": (0, 0, 4, 0)}, r"query \(4, 0\) is outside"),
    ],
)
def test_bad_input_is_refused(kwargs, message):
    args = {"records": RECORDS, "images": IMAGES, "labels": ["x"], "grid": (4, 4)}
    with pytest.raises(ValueError, match=message):
        query_explorer_data(**{**args, **kwargs})


def test_the_maps_have_a_key_in_the_colours_the_script_paints():
    """The key under the readout: a ramp from 0 to the layer's largest weight in the same five
    blues that the script shades the maps with (the data carries them), and its scale named."""
    html = query_explorer_widget(RECORDS, IMAGES, ["x"], (4, 4), (0, 0, 1, 2)).data
    data = json.loads(unescape(re.search(r"data-initial='([^']*)'", html)[1]))
    ramp = re.search(r"linear-gradient\(to right, ([^)]*\)(?:, [^)]*\))*)\)", html)[1]
    assert ramp == ", ".join(f"rgb({r}, {g}, {b})" for r, g, b in data["blues"])
    assert data["blues"][0] == [247, 251, 255] and len(data["blues"]) == 5
    assert "square-root scale" in html and 'data-role="ramp"' in html


def test_one_image_needs_no_image_buttons():
    """The maps do not depend on the image: with one image the explorer offers no image buttons
    (nothing to pick); with several, one button each."""
    one = query_explorer_widget(RECORDS, IMAGES, ["x"], (4, 4), (0, 0, 1, 2)).data
    assert 'data-role="image" data-value' not in one
    assert one.count('data-role="layer" data-value') == 1
    two = query_explorer_widget(
        RECORDS, IMAGES * 2, ["x", "y"], (4, 4), (0, 0, 1, 2)
    ).data
    assert two.count('data-role="image" data-value') == 2
