"""What a decode prints and how (:class:`DecodeOptions`), and what a selection of
events (``--filter`` and the other filter options) must offer the pipeline."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ehtool.render.meta_keys import FILE_KEY, META_DEFAULT
from ehtool.render.style import SPACED, JsonStyle

if TYPE_CHECKING:
    from ehtool.perfdata import PerfDataFile
    from ehtool.perfdata.records import Record, Sample


def available_cpus() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity``), the default -j."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class EventSelection(Protocol):
    """What ``--filter`` and the other selections give the pipeline
    (``ehtool.decode.filters.Selection``)."""

    @property
    def parallel_safe(self) -> bool:
        """False when selecting an event needs the records before it."""

    @property
    def names_threads(self) -> bool:
        """True when selecting an event looks at thread names (``session.comm``)."""

    def bind(self, perf_file: PerfDataFile) -> None:
        """Called with each opened PerfDataFile before its records are read."""

    def needs_prefilter(self) -> bool:
        """True when :meth:`prefilter` must run."""

    def needs_event(self) -> bool:
        """True when :meth:`select` must run (checks beyond :meth:`prefilter`)."""

    def prefilter(self, sample: Sample | Record) -> bool:
        """Cheap checks on the sample's own values (pid, cpu, time...)."""

    def select(self, sample: Sample | Record) -> bool:
        """Checks on the typed event (provider, level, fields...)."""

    def filter_batch(self, batch: list[Sample | Record]) -> list[Sample | Record]:
        """The samples of ``batch`` that :meth:`prefilter` and :meth:`select` keep, in
        order (what the pipeline calls; a batch at a time, for the C loop)."""

    def report(self) -> list[str]:
        """State a worker process hands back (JSON-able), for :meth:`absorb`."""

    def absorb(self, report: list[str]) -> None:
        """Take in a worker process's :meth:`report`."""


@dataclass
class DecodeOptions:
    """What ``ehtool decode`` prints and how."""

    style: JsonStyle = SPACED
    order: str = "time"  # "time" (perf-decode's order within each round) or "file"
    #: the meta keys shown (``--meta``); None: the format's default set (JSON Lines adds
    #: ``file``, the input of each event)
    meta: frozenset[str] | None = None
    jsonl: bool = False
    #: indented multi-line JSON (the json format only)
    pretty: bool = False
    bom: bool = False
    input_format: str = "perf"  # "perf" or "dat"
    #: how meta time is shown: perf, iso, ns, rel, delta (ehtool/render/times.py)
    time: str = "perf"
    #: nest each event's fields under this key (``--fields-key``); None: perf-decode's
    #: flat members beside "n" and "meta"
    fields_key: str | None = None
    #: which events are printed (filters); None prints all
    selection: EventSelection | None = None
    nonsample: bool = False
    #: processes to decode with: a big file-mode input is split at FINISHED_ROUND points,
    #: several inputs are decoded side by side; 1 uses one process
    jobs: int = field(default_factory=available_cpus)
    #: the running kernel's formats for events a (cut) file has none for
    formats_from_host: bool = False
    warn: Callable[[str], None] | None = None
    #: ``progress(bytes_done, bytes_total)`` after each batch (total 0: unknown)
    progress: Callable[[int, int], None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.meta is None:
            self.meta = META_DEFAULT | {FILE_KEY} if self.jsonl else META_DEFAULT
