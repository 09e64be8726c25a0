"""The CPU-scale box says what the runs are: its numbers against the sample file itself (read
with numpy, not through the package's loader) and the profiles' settings."""

import numpy as np

from attnconv.chapters.shared.scale import scale_box, scale_title
from attnconv.experiments.data import SAMPLE_PATH
from attnconv.experiments.profiles import PROFILES


def _sample_counts():
    with np.load(SAMPLE_PATH) as f:
        labels = sorted(k for k in f.files if k.startswith("y"))
        return {k: len(f[k]) for k in labels}


def test_the_title_carries_the_sample_the_width_and_the_epochs():
    counts = _sample_counts()
    n_train = max(counts.values())
    title = scale_title()
    assert f"{n_train:,} images" in title
    deep = PROFILES["deep"]
    assert f"hidden size {deep.self_attention_overrides['hidden_size']}," in title
    assert title.endswith(f"{deep.epochs['quadratic']} epochs")


def test_the_box_sets_each_number_beside_the_papers():
    text = scale_box("One more sentence.", full=True)
    assert text.startswith("```{admonition} At CPU scale")
    assert ":class: dropdown scale-box" in text
    assert "hidden size 32 instead of 400" in text
    assert "40 epochs instead of 300" in text
    assert "instead of 50,000" in text
    assert f"its {min(_sample_counts().values()):,} test images" in text
    assert "not shown wrong" in text
    assert text.rstrip("`\n").endswith("One more sentence.")


def test_without_a_chapter_sentence_the_box_ends_with_its_caveat():
    assert scale_box(full=True).rstrip("`\n").endswith("may behave as it says.")


def test_the_one_line_form_links_to_the_labelled_box():
    from attnconv.chapters.shared.scale import SCALE_LABEL

    line = scale_box()
    assert "\n" not in line and scale_title() in line
    assert f"<{SCALE_LABEL}>`" in line
    labelled = scale_box(full=True, label=True)
    assert labelled.startswith(f"({SCALE_LABEL})=\n```{{admonition}} At CPU scale")
