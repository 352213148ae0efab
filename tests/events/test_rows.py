"""``EventFile.rows()`` (the columnar writers' fast way: ``_speedups.RowMaker``, and the
Python ``SampleConverter.row`` it falls back on) gives, for every sample, what
``event_row`` makes of the typed event: on every recording the tests have, the
reference one, and mutations of them (malformed EventHeader events, cut files)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from fuzz.harness import mutate, seeds

import ehtool
from ehtool.events import ROW_COLUMNS, SampleConverter, event_row
from impl import is_native
from recordings import every_recording, rewrite_samples

ROOT = Path(__file__).resolve().parents[2]


def _both(path: Path, fields: bool) -> tuple[list, list]:
    """(rows, event_row of each event) of ``path``, up to a fatal error (which both meet
    at the same record)."""
    only = None if fields else ()
    got: list = []
    want: list = []
    for out, read in ((got, lambda f: f.rows()),
                      (want, lambda f: (event_row(ev, fields) for ev in f))):
        try:
            with ehtool.open(path, fields=only, fields_json=fields,
                             on_error=lambda err: None) as events:
                out.extend(read(events))
        except ehtool.InputError as exc:
            out.append(str(exc))
    return got, want


def _payloads_mutated(src: Path, dst: Path) -> Path:
    """``src`` with each EventHeader sample followed by copies of it cut, and flipped, at
    each of its first 64 bytes (after its tracepoint's common fields)."""
    def raws(s: Any) -> list[bytes]:
        raw, start = s.raw, getattr(s.desc.format, "eventheader_offset", None)
        out = [raw]
        if start is not None:
            for k in range(start, min(len(raw), start + 64)):
                out += [raw[:k], raw[:k] + bytes([raw[k] ^ 0x5A]) + raw[k + 1:]]
        return out
    return rewrite_samples(src, dst, raws)


@pytest.mark.parametrize("fields", [True, False], ids=["fields", "no-fields"])
def test_rows_are_the_events_rows_on_every_recording(fields, impl, tmp_path):
    rows = activities = malformed = 0
    recordings = every_recording()
    recordings += [_payloads_mutated(p, tmp_path / f"cut-{p.name}") for p in recordings
                   if p.name in ("eventheader.data", "eh-612.data")]
    for path in recordings:
        got, want = _both(path, fields)
        assert got == want, path
        tuples = [g for g in got if isinstance(g, tuple)]
        rows += len(tuples)
        activities += sum(g[ROW_COLUMNS.index("activity")] is not None for g in tuples)
        malformed += sum(g[ROW_COLUMNS.index("error")] is not None for g in tuples)
    assert rows > 500 and activities > 0
    assert malformed >= 80  # (EventHeader events shown as tracepoints: the fallback)


def test_rows_are_the_events_rows_on_mutated_recordings(impl, tmp_path):
    rng = random.Random(11)
    corpus = seeds(ROOT)
    compared = 0
    for i in range(120):
        path = tmp_path / f"m{i}.data"
        path.write_bytes(mutate(rng, rng.choice(corpus)))
        for fields in (True, False):
            try:
                got, want = _both(path, fields)
            except ehtool.InputError:
                continue  # (refused when opened: no row either way)
            assert got == want, (i, fields)
            compared += len(got)
    assert compared > 1000


@pytest.mark.parametrize("fields", [True, False], ids=["fields", "no-fields"])
@pytest.mark.parametrize("name", ["eh-612.data", "sched-612.data"])
def test_the_c_rows_are_most_rows(name, fields, impl, monkeypatch, tmp_path):
    """With the C module, the Python row is made only for what the RowMaker cannot make
    (the first event of each layout, which fills the decoder's cache; events whose
    fields have no C renderer): the comparisons above test the C rows. Each sample of
    the recording comes 20 times here."""
    path = rewrite_samples(ROOT / "tests" / "data" / name, tmp_path / name,
                           lambda s: [s.raw] * 20)
    python_rows = []
    row = SampleConverter.row

    def counted(self: SampleConverter, sample: Any, with_fields: bool = True) -> tuple:
        python_rows.append(sample.offset)
        return row(self, sample, with_fields)
    monkeypatch.setattr(SampleConverter, "row", counted)
    with ehtool.open(path, fields=None if fields else (), fields_json=fields) as events:
        assert is_native(events.converter.row_maker(fields)) == (impl == "c")
        rows = list(events.rows())
    assert len(rows) >= 60
    if impl == "c":
        assert len(python_rows) <= len(rows) // 10, (len(python_rows), len(rows))
    else:
        assert len(python_rows) == len(rows)


def test_rows_of_a_batch_its_callbacks_change(impl, monkeypatch):
    """The rows of a batch are those of the batch as given, even when a Python callback
    (here the fallback row) empties or refills the caller's list meanwhile (the C loop
    once read the list itself and crashed on that)."""
    path = ROOT / "tests" / "data" / "eh-612.data"
    with ehtool.open(path) as events:
        samples = [s for b in events.perf.batches(events.order, nonsample=False) for s in b]
    assert len(samples) >= 3
    with ehtool.open(path) as events:
        want = events.converter.row_maker()(list(samples))
    row = SampleConverter.row
    batch: list = []
    meddled = []

    def meddling(self: SampleConverter, sample: Any, with_fields: bool = True) -> tuple:
        meddled.append(sample.offset)
        batch.clear()
        batch.extend(samples[:1])
        return row(self, sample, with_fields)
    monkeypatch.setattr(SampleConverter, "row", meddling)
    with ehtool.open(path) as events:  # (a fresh decoder: each layout's first is Python's)
        batch.extend(samples)
        assert events.converter.row_maker()(batch) == want
    assert len(meddled) >= 2
