"""Names that ``vulture`` (``make lint``'s dead-code check) would report as unused but that are used
from outside the code it reads. Each line names who uses it; a name that is really unused is
deleted, not added here. (Not a test module: pytest collects ``test_*.py`` only.)"""

from unittest import mock

import attnconv
from attnconv.chapters.shared import hover_spots
from attnconv.core import attention, encodings
from attnconv.experiments import store

# Python: a module's attribute look-up and dir() (the lazy plotting names of the facade).
attnconv.__getattr__
attnconv.__dir__
# torch: nn.Module.__repr__ calls extra_repr.
attention.nn.Module.extra_repr
encodings.nn.Module.extra_repr
# IPython: a cell's output is an object's _repr_mimebundle_.
hover_spots.HoverSpots._repr_mimebundle_
# The history's JSON fields: read by readers of history.json (notebooks, dataclasses.asdict).
store.HeadRecord.peak_shift
store.History.num_parameters
store.History.data_note
store.History.train_size
store.History.validation_size
store.History.first_step_losses
# pytest: a module's marks and autouse fixtures.
pytestmark  # noqa: F821
_book_dir_restored  # noqa: F821
# unittest.mock: configured by assignment.
mock.MagicMock.side_effect
mock.MagicMock.return_value
# tests/browser/test_check_book.py: the browser checks' helper (their files are maintained apart).
_soup  # noqa: F821
