"""Data for the character-level names model: vocabulary, corpora, datasets, batching.

* ``CharVocab`` -- ``'$'`` + characters, ``stoi``/``itos``, ``encode``/``decode`` (tutorial 2.1).
* ``load_names``, ``load_census_first_names``, ``load_census_last_names``,
  ``split_names`` -- corpora and the seeded 80/10/10 split.
* ``CharAutoregressiveDataset`` (tutorial 4: every prefix -> next character) and
  ``FullSequenceDataset`` (whole names, targets shifted by one, padding ignored).
* ``DataLoader`` -- seeded shuffling, batching, ``drop_last``.

Everything here is NumPy / pure Python.
"""
from .corpora import clean_names, load_census_first_names, load_census_last_names, load_names, split_names
from .datasets import IGNORE_INDEX, ArrayDataset, CharAutoregressiveDataset, FullSequenceDataset
from .loader import DataLoader
from .vocab import SENTINEL, CharVocab

__all__ = [
    "ArrayDataset", "CharAutoregressiveDataset", "CharVocab", "DataLoader", "FullSequenceDataset",
    "IGNORE_INDEX", "SENTINEL", "clean_names", "load_census_first_names", "load_census_last_names",
    "load_names", "split_names",
]
