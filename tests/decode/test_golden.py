"""Every event of the reference recordings decodes exactly as perf-decode printed it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from golden import golden_path

# perf-decode writes code points above U+10FFFF as legacy 5- and 6-byte UTF-8
# forms (invalid UTF-8); ehtool writes U+FFFD there (see ehtool/values/text.py).
_LEGACY_UTF8 = re.compile(
    rb"[\xf8-\xfb][\x80-\xbf]{4}|[\xfc-\xfd][\x80-\xbf]{5}|\xfe[\x80-\xbf]{6}")


def _events(document: bytes, indent: bytes) -> list[bytes]:
    """The event lines of a perf-decode style document, without separators."""
    out = []
    for line in document.split(b"\n"):
        if line.startswith(indent + b"{"):
            line = line.removesuffix(b",")
            if line.endswith(b"} ]"):
                line = line[:-2]
            out.append(line)
    return out


def _expected(name: str, indent: bytes) -> list[bytes]:
    events = _events(golden_path(f"linuxtracepoints/{name}").read_bytes(), indent)
    return [_LEGACY_UTF8.sub("\ufffd".encode(), e) for e in events]


def _decode(*args: str) -> bytes:
    run = subprocess.run([sys.executable, "-m", "ehtool", "decode", *args],
                         capture_output=True, check=True)
    assert run.stderr == b""
    return run.stdout


def test_dat_file_matches_perf_decode_byte_for_byte():
    dat = golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat")
    expected = _expected("EventHeaderInterceptorLE64.dat.linux.json", b"  ")
    out = _decode("--input-format", "dat", str(dat))
    got = _events(out, b"  ")
    assert len(got) == len(expected) == 374
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == e, f"event {i}"
    json.loads(out)  # one valid document, valid UTF-8


def test_perf_data_matches_perf_decode_byte_for_byte():
    data = golden_path("linuxtracepoints/perf.data")
    # the reference fixture is compact, without field tags, in file order
    expected = _expected("perf.data.linux.json", b" ")
    out = _decode("--sort", "file", "--compact", "--no-field-tags", str(data))
    got = _events(out, b" ")
    assert len(got) == len(expected) == 539
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        assert g == e, f"event {i}"
    doc = json.loads(out)
    assert list(doc) == [str(data)]


def test_time_order_sorts_within_rounds_only():
    data = golden_path("linuxtracepoints/perf.data")
    by_time = json.loads(_decode(str(data)))[str(data)]
    by_file = json.loads(_decode("--sort", "file", str(data)))[str(data)]
    assert sorted(map(json.dumps, by_time)) == sorted(map(json.dumps, by_file))
    assert by_time != by_file  # the golden file is not in time order across CPUs


@pytest.mark.parametrize("style", [[], ["--compact"]])
def test_replacement_is_the_only_difference_on_legacy_forms(style):
    dat = golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat")
    out = _decode("--input-format", "dat", *style, str(dat))
    assert out.count("\ufffd".encode()) == 4
    out.decode("utf-8")
