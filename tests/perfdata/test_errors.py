"""Bad input: every complete record first, then one InputError naming file and offset."""

from __future__ import annotations

import struct

import pytest

from ehtool.errors import InputError
from ehtool.perfdata.grammar import RecordType
from ehtool.perfdata.reader import PerfDataFile
from ehtool.perfdata.tracing_data import TracingData, build_tracing_data
from ehtool.perfdata.writer import PerfDataWriter, make_attr

from .conftest import DATA, EXAMPLE


def _drain(f, order="file"):
    got = []
    with pytest.raises(InputError) as info:
        for s in f.samples(order=order):
            got.append(s)
    return got, info.value


def _sample_offsets(path):
    with PerfDataFile.open(path) as f:
        return [s.offset for s in f.samples(order="file")]


def test_missing_file(tmp_path):
    with pytest.raises(InputError) as info:
        PerfDataFile.open(tmp_path / "nope.data")
    assert "nope.data" in str(info.value) and "No such file" in str(info.value)


@pytest.mark.parametrize("content,why", [(b"", "too short"), (b"PERF", "too short"),
                                          (b"hello world, not perf data at all", "magic"),
                                          (b"PERFFILE" + bytes(120), "magic")])
def test_not_perf_data(tmp_path, content, why):
    p = tmp_path / "x.data"
    p.write_bytes(content)
    with pytest.raises(InputError) as info:
        PerfDataFile.open(p)
    assert why in str(info.value) and str(p) in str(info.value)
    assert info.value.offset == 0


def test_bad_header_size(tmp_path):
    data = bytearray(EXAMPLE.read_bytes())
    struct.pack_into("<Q", data, 8, 50)
    p = tmp_path / "h.data"
    p.write_bytes(data)
    with pytest.raises(InputError, match="header size 50"):
        PerfDataFile.open(p)


def _cut_inside_last_sample(path, tmp_path):
    offsets = _sample_offsets(path)
    data = path.read_bytes()
    cut = offsets[-1] + 20
    p = tmp_path / "cut.data"
    p.write_bytes(data[:cut])
    return p, offsets


@pytest.mark.parametrize("order", ["file", "time"])
def test_truncated_file_mode(tmp_path, order):
    p, offsets = _cut_inside_last_sample(EXAMPLE, tmp_path)
    with PerfDataFile.open(p) as f:
        assert f.info.hostname is None  # the feature sections were cut away
        got, err = _drain(f, order)
    assert sorted(s.offset for s in got) == offsets[:-1]
    assert err.offset == offsets[-1] and err.path == str(p)
    assert "truncated" in str(err) and f"{offsets[-1]:#x}" in str(err)


def test_truncated_pipe_stream(tmp_path):
    p, offsets = _cut_inside_last_sample(DATA / "sched-pipe.data", tmp_path)
    with p.open("rb") as stream:
        got, err = _drain(PerfDataFile.open_stream(stream, "stdin"), "time")
    assert sorted(s.offset for s in got) == offsets[:-1]
    assert err.offset == offsets[-1] and err.path == "stdin"
    assert "runs past the end of the pipe stream" in str(err)


def test_truncated_pipe_mode_file(tmp_path):
    """The same bytes as a file: its records, then the cut named as the file's end (a
    pipe-mode file has no data section to name)."""
    p, offsets = _cut_inside_last_sample(DATA / "sched-pipe.data", tmp_path)
    with PerfDataFile.open(p) as f:
        assert f.pipe_mode
        got, err = _drain(f, "time")
    assert sorted(s.offset for s in got) == offsets[:-1]
    assert err.offset == offsets[-1] and err.path == str(p)
    assert "record runs past the end of the file (truncated input?)" in str(err)


def test_unfinalised_data_size_reads_to_eof(tmp_path):
    """perf killed with SIGKILL leaves data.size 0: read records to the end of the file."""
    data = bytearray(DATA.joinpath("sched-ids.data").read_bytes())
    data_offset, data_size = struct.unpack_from("<QQ", data, 40)
    struct.pack_into("<Q", data, 48, 0)
    p = tmp_path / "killed.data"
    p.write_bytes(data[:data_offset + data_size])  # no feature sections either
    problems = []
    with PerfDataFile.open(p, on_error=problems.append) as f:
        got = list(f.samples())
    assert len(got) == 27
    # said once, at the data size field: the names and formats are missing (exit 1)
    assert [(e.offset, "perf did not finish this file" in str(e)) for e in problems] == [
        (48, True)]
    with PerfDataFile.open(p) as f, pytest.raises(InputError, match="data size is 0"):
        list(f.samples())
    # names and formats lived in the lost feature sections; the attrs remain
    assert {s.desc.attr.type for s in got} == {2} and {s.desc.name for s in got} == {""}
    with PerfDataFile.open(DATA / "sched-ids.data") as f:
        assert [(s.time, s.cpu, s.tid) for s in f.samples()] == [
            (s.time, s.cpu, s.tid) for s in got]


@pytest.mark.parametrize("bad_size", [0, 4])
def test_record_size_below_header(tmp_path, bad_size):
    offsets = _sample_offsets(EXAMPLE)
    data = bytearray(EXAMPLE.read_bytes())
    struct.pack_into("<H", data, offsets[10] + 6, bad_size)
    p = tmp_path / "bad.data"
    p.write_bytes(data)
    with PerfDataFile.open(p) as f:
        got, err = _drain(f, "time")
    assert sorted(s.offset for s in got) == offsets[:10]
    assert err.offset == offsets[10] and f"size {bad_size} < 8" in str(err)


def test_record_size_past_data_end(tmp_path):
    offsets = _sample_offsets(EXAMPLE)
    data = bytearray(EXAMPLE.read_bytes())
    struct.pack_into("<H", data, offsets[-1] + 6, 0xFFF8)
    p = tmp_path / "big.data"
    p.write_bytes(data)
    with PerfDataFile.open(p) as f:
        got, err = _drain(f)
    assert [s.offset for s in got] == offsets[:-1]
    assert err.offset == offsets[-1] and "past the end" in str(err)


def test_unknown_attr_id_is_reported_after_the_rest(tmp_path):
    offsets = _sample_offsets(EXAMPLE)
    data = bytearray(EXAMPLE.read_bytes())
    struct.pack_into("<Q", data, offsets[3] + 8, 999_999)  # the IDENTIFIER
    p = tmp_path / "id.data"
    p.write_bytes(data)
    with PerfDataFile.open(p) as f:
        got, err = _drain(f)
    assert [s.offset for s in got] == offsets[:3] + offsets[4:]
    assert err.offset == offsets[3] and "999999" in str(err)
    seen = []
    with PerfDataFile.open(p, on_error=seen.append) as f:
        assert len(list(f.samples())) == len(offsets) - 1
    assert [e.offset for e in seen] == [offsets[3]]


def test_raw_size_past_record_is_a_corrupt_sample(tmp_path):
    offsets = _sample_offsets(EXAMPLE)
    data = bytearray(EXAMPLE.read_bytes())
    struct.pack_into("<I", data, offsets[5] + 56, 4000)  # RAW size of a 0x10587 sample
    p = tmp_path / "raw.data"
    p.write_bytes(data)
    with PerfDataFile.open(p) as f:
        got, err = _drain(f)
    assert len(got) == len(offsets) - 1
    assert err.offset == offsets[5] and "RAW size 4000" in str(err)


def _tracepoint_file(path, format_text: str, *, samples: int = 3) -> None:
    w = PerfDataWriter(path)
    ev = w.add_event(make_attr(w.g, type=2, config=77, sample_type=0x10587,
                               sample_id_all=True), [5])
    td = TracingData(version="0.6", big_endian=False, long_size=8, page_size=4096,
                     header_page=b"", header_event=b"", formats=[("demo", format_text)])
    w.set_tracing_data(build_tracing_data(td))
    for i in range(samples):
        w.add_sample(ev, id=5, pid=1, tid=1, time=i, cpu=0, raw=b"\x4d\x00\x00\x00")
    w.add_record(RecordType.FINISHED_ROUND)
    w.close()


_BROKEN = "name: broken\nID: 77\nthis is not a format file\n"


def test_format_that_does_not_parse(tmp_path):
    p = tmp_path / "fmt.data"
    _tracepoint_file(p, _BROKEN)
    text_at = p.read_bytes().index(_BROKEN.encode())  # the format text in the feature section
    with PerfDataFile.open(p) as f:
        assert f.descs[0].format is None and f.descs[0].name == "demo:broken"
        got, err = _drain(f)
    assert len(got) == 3  # still yielded (a decoder shows them raw)
    assert err.offset == text_at and err.path == str(p)
    assert str(err) == (f"{p}: offset {text_at:#x}: format of demo:broken (id 77) does not "
                        "parse: broken: no 'format:' fields")  # once: no "(and 1 more ...)"


def test_format_failure_is_reported_once_per_event(tmp_path):
    """Tracing data is read at open and the formats attached once more after the
    features; a format that failed the first time is not parsed (and reported) again."""
    p = tmp_path / "fmt.data"
    _tracepoint_file(p, _BROKEN)
    seen: list[InputError] = []
    with PerfDataFile.open(p, on_error=seen.append) as f:
        assert len(list(f.samples())) == 3
    assert len(seen) == 1 and "does not parse" in str(seen[0])


def test_format_error_on_the_command_line_is_one_line_with_offset(tmp_path):
    import subprocess
    import sys

    p = tmp_path / "badfmt.data"
    _tracepoint_file(p, _BROKEN)
    text_at = p.read_bytes().index(_BROKEN.encode())
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", str(p)],
                          capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == (f"ehtool: error: {p}: offset {text_at:#x}: format of demo:broken "
                           "(id 77) does not parse: broken: no 'format:' fields\n")


def test_good_format_attaches(tmp_path):
    p = tmp_path / "fmt.data"
    text = ("name: ok\nID: 77\nformat:\n\tfield:unsigned short common_type;\toffset:0;\t"
            "size:2;\tsigned:0;\n\n\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n\n"
            'print fmt: "x=%d", REC->x\n')
    _tracepoint_file(p, text)
    with PerfDataFile.open(p) as f:
        assert f.descs[0].format is not None and f.descs[0].format.name == "ok"
        assert f.descs[0].name == "demo:ok"
        assert [s.raw for s in f.samples()] == [b"\x4d\x00\x00\x00"] * 3


def test_pipe_header_required_on_stdin():
    with EXAMPLE.open("rb") as stream, pytest.raises(InputError, match="from a pipe"):
        PerfDataFile.open_stream(stream, "stdin")


def test_truncation_inside_attrs_is_reported_at_open(tmp_path):
    data = EXAMPLE.read_bytes()
    attrs_offset, attrs_size = struct.unpack_from("<QQ", data, 24)
    assert (attrs_offset, attrs_size) == (152, 432)  # perf 6.1 puts attrs before the data
    p = tmp_path / "short.data"
    p.write_bytes(data[:attrs_offset + 100])
    with pytest.raises(InputError, match="attrs section runs past the end") as info:
        PerfDataFile.open(p)
    assert info.value.offset == 24


def test_format_error_in_pipe_mode_names_the_text_offset(tmp_path):
    """In a pipe stream the tracing data follows its HEADER_TRACING_DATA record."""
    from ehtool.perfdata.grammar import MAGIC

    w = PerfDataWriter(tmp_path / "scratch.data")  # only its record builders are used
    attr = make_attr(w.g, type=2, config=77, sample_type=0x10587, sample_id_all=True)
    ev = w.add_event(attr, [5])
    td = TracingData(version="0.6", big_endian=False, long_size=8, page_size=4096,
                     header_page=b"", header_event=b"", formats=[("demo", _BROKEN)])
    blob = build_tracing_data(td)
    blob += b"\0" * (-len(blob) % 8)
    stream = (MAGIC + struct.pack("<Q", 16)
              + w.record_bytes(RecordType.HEADER_ATTR, dict(attr=attr, ids=[5]))
              + w.record_bytes(RecordType.HEADER_TRACING_DATA, dict(size=len(blob), pad=bytes(4))))
    stream += blob + w.sample_bytes(ev, id=5, pid=1, tid=1, time=1, cpu=0, raw=b"\x4d\0\0\0")
    w.close()
    p = tmp_path / "pipe.data"
    p.write_bytes(stream)
    with p.open("rb") as src:
        got, err = _drain(PerfDataFile.open_stream(src, "stdin"))
    assert len(got) == 1, err
    assert err.offset == stream.index(_BROKEN.encode())
    assert str(err).startswith(f"stdin: offset {err.offset:#x}: format of demo:broken")
    assert "more problems" not in str(err)


def test_a_construct_error_is_said_in_one_line_without_constructs_words():
    """'bad ID_INDEX: Error in path (parsing) -> entries -> id' named construct's path."""
    import construct as c

    from ehtool.errors import brief

    layout = c.Struct("nr" / c.Int64ul, "entries" / c.Array(c.this.nr, c.Struct(
        "id" / c.Int64ul)))
    with pytest.raises(c.ConstructError) as cut:
        layout.parse(bytes([5]) + bytes(15))
    assert brief(cut.value) == "entries.id: cut short"
    with pytest.raises(c.ConstructError) as other:
        c.Const(b"ab").parse(b"xx")
    assert brief(other.value) == "parsing expected b'ab' but parsed b'xx'"


@pytest.mark.parametrize("order", ["file", "time"])
def test_an_input_error_makes_no_cycle_through_the_file(tmp_path, order):
    """The raised error's traceback holds the reader's frames; had the file kept the
    error (or a frame the error), the file and its buffers would wait for a full
    garbage collection: decoding corrupt inputs in one process grew 15 -> 52 MB."""
    import gc

    cut = tmp_path / "cut.data"
    cut.write_bytes(EXAMPLE.read_bytes()[:20_000])
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        message = ""
        with PerfDataFile.open(cut) as f:
            try:
                for _sample in f.samples(order=order):
                    pass
            except InputError as exc:  # (not pytest.raises: its ExceptionInfo is a cycle)
                message = str(exc)
        assert "truncated" in message
        del f
        gc.collect()
        kept = {type(o).__name__ for o in gc.garbage} & {"PerfDataFile", "InputError", "frame"}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert not kept


def test_a_file_that_cannot_be_mapped_is_an_input_error(monkeypatch):
    """ENOMEM from mmap (``ulimit -v``) names the input, as a file that cannot be
    opened does (a decode worker reported it as "cannot write output")."""
    import errno

    import ehtool.perfdata.reader as reader

    def no_memory(*args, **kw):
        raise OSError(errno.ENOMEM, "Cannot allocate memory")

    monkeypatch.setattr(reader.mmap, "mmap", no_memory)
    with pytest.raises(InputError) as info:
        PerfDataFile.open(EXAMPLE)
    assert str(info.value) == f"{EXAMPLE}: cannot map: Cannot allocate memory"
