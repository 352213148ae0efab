"""The pipe-mode relay: samples and lost events counted, bytes passed on unchanged."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ehtool.decode.info import summarize
from ehtool.perfdata import PerfDataFile
from ehtool.perfdata.grammar import RecordType
from ehtool.perfdata.writer import PerfDataWriter
from ehtool.record.stream import StreamCounter, StreamRelay

PIPE_DATA = Path(__file__).resolve().parents[1] / "data" / "sched-pipe.data"
#: what lossy_stream adds: LOST 7 + LOST_SAMPLES 5 + LOST 3; its attrs have read_format
#: LOST (as perf 6.1 writes them on Linux 6.12), so the LOST_SAMPLES count is a count of
#: the same loss as the LOST records' (RecordCounts): 10 lost, not 15
LOST, LOST_RECORDS = 10, 3


def lossy_stream(tmp_path: Path, big_endian: bool = False) -> bytes:
    """perf's pipe-mode reference recording (23 samples) followed by three lost-event
    records with sample_id trailers, as perf writes them after a ring buffer overrun."""
    with PerfDataFile.open(PIPE_DATA) as f:
        for _ in f.batches("file"):
            pass
        sample_type = f.descs[0].attr.sample_type
    writer = PerfDataWriter(tmp_path / "scratch.data", big_endian=big_endian)
    trailer = {name: 0 for name in ("pid", "tid", "time", "cpu", "cpu_reserved", "identifier")}

    def record(rtype: RecordType, **body: int) -> bytes:
        return writer.record_bytes(rtype, body, sample_id=trailer, sample_type=sample_type)

    tail = (record(RecordType.LOST, id=0, lost=7) + record(RecordType.LOST_SAMPLES, lost=5)
            + record(RecordType.LOST, id=0, lost=3)
            + writer.record_bytes(RecordType.FINISHED_ROUND))
    writer.close()
    if big_endian:
        return b"2ELIFREP" + (16).to_bytes(8, "big") + tail
    return PIPE_DATA.read_bytes() + tail


@pytest.fixture
def lossy(tmp_path: Path) -> Path:
    path = tmp_path / "lossy.data"
    path.write_bytes(lossy_stream(tmp_path))
    return path


def test_counts_match_ehtool_info_and_the_reader(lossy):
    counter = StreamCounter()
    counter.feed(lossy.read_bytes())
    stats = counter.finish()
    assert stats.errors == []
    assert (stats.lost, stats.lost_events, stats.lost_samples) == (LOST, 10, 5)
    assert stats.lost_records == LOST_RECORDS
    assert summarize(str(lossy))["lost_events"] == LOST  # ehtool info counts the same
    with PerfDataFile.open(lossy) as f:
        assert stats.samples == sum(1 for _ in f.samples(order="file")) == 23


@pytest.mark.parametrize("piece", [1, 7, 37, 4096])
def test_records_split_across_reads(lossy, piece):
    """Headers, records and the tracing-data payload cut anywhere still count once."""
    data = lossy.read_bytes()
    counter = StreamCounter()
    for at in range(0, len(data), piece):
        counter.feed(data[at:at + piece])
    stats = counter.finish()
    assert stats.errors == []
    assert (stats.samples, stats.lost, stats.lost_records) == (23, LOST, LOST_RECORDS)


def test_big_endian_stream(tmp_path):
    counter = StreamCounter()
    counter.feed(lossy_stream(tmp_path, big_endian=True))
    stats = counter.finish()
    # (no attrs in this stream, so no read_format LOST: the two kinds of loss add up)
    assert stats.errors == [] and (stats.lost, stats.lost_records) == (7 + 5 + 3, LOST_RECORDS)


def test_problems_are_reported_not_raised(lossy):
    counter = StreamCounter()
    counter.feed(b"this is not perf data at all")
    assert "no PERFILE2 magic" in counter.finish().errors[0]
    counter = StreamCounter()
    counter.feed(lossy.read_bytes()[:-40])  # cut in the last LOST record (3 lost)
    stats = counter.finish()
    assert stats.errors == ["the stream ends inside a record (perf killed mid-write?)"]
    assert stats.lost == LOST - 3  # the records before the cut are counted
    counter = StreamCounter()
    assert counter.finish().errors == ["perf wrote no complete pipe-mode header"]


def _feed_pipe(data: bytes, piece: int = 1000) -> tuple[int, threading.Thread]:
    """The read end of a pipe that a thread fills with ``data``, a piece at a time."""
    r, w = os.pipe()

    def fill() -> None:
        try:
            for at in range(0, len(data), piece):
                os.write(w, data[at:at + piece])
        except BrokenPipeError:
            pass
        finally:
            os.close(w)

    thread = threading.Thread(target=fill)
    thread.start()
    return r, thread


def test_relay_passes_every_byte_on(lossy, tmp_path):
    data = lossy.read_bytes()
    r, filler = _feed_pipe(data)
    out = tmp_path / "copy.data"
    with open(r, "rb", buffering=0) as source, open(out, "wb") as sink:
        relay = StreamRelay(source, sink, close_sink=True)
        relay.start()
        stats = relay.join(30)
        assert sink.closed
    filler.join()
    assert stats is not None and (stats.samples, stats.lost) == (23, LOST)
    assert out.read_bytes() == data


def test_relay_closes_perfs_pipe_when_its_reader_is_gone(lossy):
    data = lossy.read_bytes() * 40  # more than a pipe holds
    r, filler = _feed_pipe(data)
    sink_r, sink_w = os.pipe()
    os.close(sink_r)  # the reader (ehtool decode, head -c ...) went away
    with open(r, "rb", buffering=0) as source:
        relay = StreamRelay(source, sink_w)
        relay.start()
        assert relay.join(30) is not None
        assert relay.broken_pipe and source.closed
    filler.join(30)
    assert not filler.is_alive(), "the writer (perf) gets EPIPE instead of blocking"
    os.close(sink_w)


@pytest.mark.parametrize("name", ["sched-zpipe.data", "sched-612-zpipe.data",
                                  "eh-612-zpipe.data"])
@pytest.mark.parametrize("piece", [13, 1 << 20])
def test_compressed_streams_are_counted_inside(name, piece):
    """perf record -z -o -: the records inside the zstd stream are counted, as the reader
    and ehtool info count them (the stream cut anywhere)."""
    path = PIPE_DATA.parent / name
    data = path.read_bytes()
    counter = StreamCounter()
    for at in range(0, len(data), piece):
        counter.feed(data[at:at + piece])
    stats = counter.finish()
    assert stats.errors == [] and counter.compressed
    with PerfDataFile.open(path) as f:
        assert stats.samples == sum(1 for _ in f.samples(order="file")) > 0
    assert stats.lost == summarize(str(path))["lost_events"]


def test_a_compressed_lost_record_is_counted(tmp_path):
    """A LOST record inside the compressed stream (re-compressed from the lossy stream)."""
    import struct

    import zstandard

    plain = lossy_stream(tmp_path)
    stream = zstandard.ZstdCompressor().compress(plain[16:])
    half = len(stream) // 2
    compressed = b"".join(struct.pack("<IHH", int(RecordType.COMPRESSED), 0, 8 + len(c)) + c
                          for c in (stream[:half], stream[half:]))
    counter = StreamCounter()
    counter.feed(plain[:16] + compressed)
    stats = counter.finish()
    assert stats.errors == []
    assert (stats.samples, stats.lost, stats.lost_records) == (23, LOST, LOST_RECORDS)


def test_lost_samples_and_lost_records_count_one_loss_with_read_format_lost():
    """perf 6.0+ writes LOST_SAMPLES from the kernel's per-event count of lost samples
    (read_format LOST), which includes the ring buffer overruns the LOST records report:
    the larger of the two is the loss (perf's "Total Lost Samples"); without read_format
    LOST, LOST_SAMPLES come only from the hardware's drops, and the two add up."""
    from ehtool.perfdata.counts import RecordCounts

    for counters, lost in ((True, 16885), (False, 2 * 16885)):
        stats = RecordCounts(lost_events=16885, lost_samples=16885, counters=counters)
        assert stats.lost == lost
    killed = RecordCounts(lost_events=40, counters=True)  # perf killed before LOST_SAMPLES
    assert killed.lost == 40
