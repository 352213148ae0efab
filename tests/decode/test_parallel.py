"""Two-process decoding gives byte-identical output to one process."""

from __future__ import annotations

import io

import pytest

from ehtool.decode.filters import Selection
from ehtool.decode.pipeline import _PARALLEL_MIN_BYTES, DecodeOptions, decode_to
from ehtool.perfdata import PerfDataFile
from ehtool.perfdata.writer import replay_samples
from golden import golden_path


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("par") / "big.data"
    replay_samples(golden_path("linuxtracepoints/perf.data"), path, 80_000, round_every=1000)
    with PerfDataFile.open(str(path)) as f:
        start, end = f.data_range
        assert end - start > _PARALLEL_MIN_BYTES and f.split_point() is not None
    return str(path)


def run(path: str, **kw) -> bytes:
    out = io.BytesIO()
    assert decode_to(out, [path], DecodeOptions(**kw)) == []
    return out.getvalue()


@pytest.mark.parametrize("order", ["time", "file"])
def test_same_bytes_with_two_processes(big, order):
    one = run(big, order=order, jobs=1)
    assert one.count(b'"n":') == 80_000
    assert run(big, order=order, jobs=2) == one


def test_same_bytes_with_a_filter(big):
    sel = Selection(providers=("TestProviderC",), level=4)
    kw = dict(select=sel.select, prefilter=sel.prefilter, bind=sel.bind)
    one = run(big, jobs=1, **kw)
    assert 0 < one.count(b'"n":') < 80_000
    assert run(big, jobs=2, **kw) == one


@pytest.mark.parametrize("kw", [dict(jsonl=True), dict(pretty=True), dict(order="file", bom=True)],
                         ids=["jsonl", "pretty", "file-order-bom"])
def test_same_bytes_in_every_output_form(big, kw):
    assert run(big, jobs=2, **kw) == run(big, jobs=1, **kw)


@pytest.mark.parametrize("keep", ["second-half", "nothing"])
def test_same_bytes_when_the_first_half_is_empty(big, keep):
    """The second core's events are framed as followers; with nothing before them
    the splice must turn the first lead into the array's opening."""
    with PerfDataFile.open(big) as f:
        split = f.split_point()
    if keep == "second-half":
        def prefilter(sample):
            return sample.offset >= split
    else:
        def prefilter(sample):
            return False
    one = run(big, jobs=1, prefilter=prefilter)
    assert run(big, jobs=2, prefilter=prefilter) == one
    assert (one.count(b'"n":') > 0) == (keep == "second-half")


def test_same_bytes_for_several_inputs(big):
    out1, out2 = io.BytesIO(), io.BytesIO()
    assert decode_to(out1, [big, big], DecodeOptions(jobs=1)) == []
    assert decode_to(out2, [big, big], DecodeOptions(jobs=2)) == []
    assert out1.getvalue() == out2.getvalue()


def test_stop_at_split_ends_where_split_point_cuts(big):
    with PerfDataFile.open(big) as f:
        split = f.split_point()
        every = [s.offset for s in f.samples("file")]
    with PerfDataFile.open(big) as f:
        f.stop_at_split()
        first = [s.offset for s in f.samples("file")]
    assert 0 < len(first) < len(every) and first == [o for o in every if o < split]


def test_no_round_boundary_in_the_second_half(tmp_path):
    """Without a FINISHED_ROUND after the middle the child finds no split and adds
    nothing; this process reads to the end."""
    path = str(tmp_path / "one-round.data")
    replay_samples(golden_path("linuxtracepoints/perf.data"), path, 80_000, round_every=10**9)
    with PerfDataFile.open(path) as f:
        start, end = f.data_range
        assert end - start > _PARALLEL_MIN_BYTES and f.split_point() is None
    one = run(path, jobs=1)
    assert one.count(b'"n":') == 80_000 and run(path, jobs=2) == one
