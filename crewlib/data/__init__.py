"""Data: typed records, loaders for the real datasets and the bundled sample, the split."""

from crewlib.data.loaders import (
    SAMPLE_FILES,
    DatasetUnavailableError,
    load_long_documents,
    load_multinews,
    load_oarelatedwork,
    load_task_data,
)
from crewlib.data.records import LoadReport, LongDocument, MultiDocExample, RecordError, Reference, RWGExample, Section
from crewlib.data.split import Split, split_examples

__all__ = [
    "SAMPLE_FILES", "DatasetUnavailableError", "LoadReport", "LongDocument", "MultiDocExample", "RWGExample",
    "RecordError", "Reference", "Section", "Split", "load_long_documents", "load_multinews",
    "load_oarelatedwork", "load_task_data", "split_examples",
]
