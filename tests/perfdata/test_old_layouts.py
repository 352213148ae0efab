"""Layouts older perf wrote: the 12-byte PERF_RECORD_HEADER_TRACING_DATA of pipe mode."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PIPE = REPO / "tests" / "data" / "sched-pipe.data"
_TRACING_DATA = 66


def _records(data: bytes):
    """(offset, type, size) of each record after the 16-byte pipe header."""
    pos = 16
    while pos + 8 <= len(data):
        rtype, _misc, size = struct.unpack_from("<IHH", data, pos)
        yield pos, rtype, size
        pos += size + (struct.unpack_from("<I", data, pos + 8)[0]
                       if rtype == _TRACING_DATA else 0)


def twelve_byte_form(data: bytes) -> bytes:
    """The stream with its TRACING_DATA record as older perf wrote it: header + u32 size."""
    for pos, rtype, size in _records(data):
        if rtype == _TRACING_DATA:
            assert size == 16
            header = struct.pack("<IHH", rtype, 0, 12) + data[pos + 8:pos + 12]
            return data[:pos] + header + data[pos + 16:]
    raise AssertionError("no HEADER_TRACING_DATA record")


def decode(data: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", "decode", "-"], input=data,
                          capture_output=True, cwd=REPO)


def test_twelve_byte_tracing_data_decodes_as_the_sixteen_byte_form():
    data = PIPE.read_bytes()
    old = twelve_byte_form(data)
    assert len(old) == len(data) - 4
    new_form, old_form = decode(data), decode(old)
    assert old_form.returncode == 0, old_form.stderr
    assert old_form.stdout == new_form.stdout and b'"prev_comm"' in old_form.stdout


@pytest.mark.parametrize("form", [16, 12])
def test_tracing_data_without_its_signature_is_named(form):
    data = PIPE.read_bytes()
    if form == 12:
        data = twelve_byte_form(data)
    pos = next(p for p, rtype, _ in _records(data) if rtype == _TRACING_DATA)
    bad = bytearray(data)
    bad[pos + form + 3] ^= 0xFF  # inside "tracing"
    done = decode(bytes(bad))
    assert done.returncode == 1
    assert b"without the tracing data signature" in done.stderr
    assert done.stderr.count(b"\n") == 1


def test_the_reference_pipe_file_when_given():
    """microsoft/LinuxTracepoints TestOutput/pipe.data (12-byte TRACING_DATA, 551 events)
    against its pipe.data.linux.json; not shipped here: set EHTOOL_REFERENCE_PIPE to the
    .data file with the .linux.json beside it."""
    import os
    import re

    path = os.environ.get("EHTOOL_REFERENCE_PIPE")
    if not path:
        pytest.skip("EHTOOL_REFERENCE_PIPE is not set")
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--compact",
                           "--no-field-tags", "--sort", "file", path], capture_output=True)
    assert done.returncode == 0, done.stderr
    legacy = re.compile(rb"[\xf8-\xfb][\x80-\xbf]{4}|[\xfc-\xfd][\x80-\xbf]{5}|\xfe[\x80-\xbf]{6}")

    def events(doc: bytes) -> list[bytes]:
        return [legacy.sub("\ufffd".encode(), line.strip().rstrip(b",").removesuffix(b"]"))
                for line in doc.split(b"\n") if line.strip().startswith(b'{"n"')]

    expected = events(Path(path + ".linux.json").read_bytes())
    assert len(expected) == 551 and events(done.stdout) == expected


def test_a_file_cut_at_every_record_boundary_says_so(tmp_path):
    """Issue 12: a file-mode file cut at a record boundary (perf killed, disk full) exited
    0 without a word: events after the cut were silently missing."""
    import io
    import json

    from ehtool.decode.pipeline import DecodeOptions, decode_to

    data = (REPO / "examples" / "sched.data").read_bytes()
    start, size = struct.unpack_from("<QQ", data, 40)
    pos, boundaries, samples_before = start, [], []
    n = 0
    while pos < start + size:
        rtype, _misc, rsize = struct.unpack_from("<IHH", data, pos)
        pos += rsize
        n += rtype == 9
        boundaries.append(pos)
        samples_before.append(n)
    assert n == 35 and len(boundaries) > 100
    path = tmp_path / "cut.data"
    for cut, expected in zip(boundaries, samples_before, strict=True):
        path.write_bytes(data[:cut])
        out = io.BytesIO()
        errors = decode_to(out, [str(path)], DecodeOptions(jobs=1, warn=lambda m: None))
        events = json.loads(out.getvalue())[str(path)]
        assert len(errors) == 1 and "truncated file" in str(errors[0]), cut
        if cut == start + size:  # the data section is whole; the features are gone
            assert "feature sections" in str(errors[0])
        assert len(events) == expected, cut
