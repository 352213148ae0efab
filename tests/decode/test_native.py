"""``ehtool decode`` gives the same bytes with the C hot loops as in pure Python, on
every recording the project has, in every output shape, and on malformed events."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ehtool.perfdata.writer import replay_samples
from golden import golden_path
from impl import require_speedups
from recordings import rewrite_samples

REPO = Path(__file__).resolve().parents[2]
FILES = ["golden", "examples/eventheader.data", "examples/sched.data",
         "tests/data/sched-ids.data", "tests/data/sched-pipe.data",
         "tests/data/sched-task-noid.data"]
SHAPES = [[], ["--compact"], ["--no-field-tags"], ["--meta", "all"], ["--meta", "+comm"],
          ["--meta", "-time"], ["--sort", "file"], ["--format", "jsonl"], ["-j", "1"],
          ["--time", "ns"], ["--time", "rel", "--nonsample"],
          ["--time", "delta", "--filter", "pid != 0"],
          ["--time", "delta", "--sort", "file", "--meta", "+comm"], ["--fields-key", "f"],
          ["--meta", "+provider,+event,+flags"],
          ["--format", "jsonl", "--meta", "+options,-level,-activity"],
          ["--meta", "none,+pid"], ["--meta", "tid,comm,level"], ["--meta", "none,+comm"],
          ["--format", "jsonl", "--meta", "cpu,comm,-file"], ["--meta", "none"],
          ["--meta", "common"], ["--meta", "common,+activity", "--compact"],
          ["--fields-key", "f", "--meta", "all"], ["--fields-key", "f", "--meta", "none"],
          ["--fields-key", "x", "--compact", "--format", "jsonl", "--meta", "common,+comm"]]


def decode(path: Path, *args: str, pure: bool) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("EHTOOL_PURE", None)
    if pure:
        env["EHTOOL_PURE"] = "1"
    return subprocess.run([sys.executable, "-m", "ehtool", "decode", *args, str(path)],
                          capture_output=True, env=env, cwd=REPO)


def both(path: Path, *args: str) -> bytes:
    require_speedups()
    c, py = decode(path, *args, pure=False), decode(path, *args, pure=True)
    assert (c.returncode, c.stdout, c.stderr) == (py.returncode, py.stdout, py.stderr)
    return c.stdout


@pytest.mark.parametrize("name", FILES)
def test_every_recording_in_every_shape(name):
    path = golden_path("linuxtracepoints/perf.data") if name == "golden" else REPO / name
    for shape in SHAPES:
        assert len(both(path, *shape)) > 100, shape


def test_a_big_file_decoded_by_two_processes(tmp_path):
    """Big enough for the second core (-j 2): the C loop runs in both processes."""
    big = tmp_path / "big.data"
    replay_samples(golden_path("linuxtracepoints/perf.data"), big, 60_000)
    out = both(big)
    assert out.count(b'"n": ') == 60_000


def test_malformed_eventheader_events_fall_back_the_same_way(tmp_path):
    """Every payload byte of every EventHeader sample of the reference recording cut
    or flipped: the C loop hands such events to Python, which warns and shows them
    as plain tracepoints, identically."""
    n = 0

    def raws(s: Any) -> list[bytes]:
        nonlocal n
        fmt, raw = s.desc.format, s.raw
        if fmt is not None and fmt.eventheader_offset is not None:
            k = 8 + n % max(1, len(raw) - 8)
            raw = raw[:k] + bytes([raw[k] ^ 0x5A]) + raw[k + 1:] if n % 2 else raw[:k]
            n += 1
        return [raw]
    dst = rewrite_samples(golden_path("linuxtracepoints/perf.data"),
                          tmp_path / "mutated.data", raws)
    out = both(dst)
    assert n > 200 and out.count(b'"n": ') > 500


def _mutated(src: Path, dst: Path) -> Path:
    """``src`` with every EventHeader sample cut or flipped at a moving byte."""
    count = iter(range(1 << 62))

    def raws(s: Any) -> list[bytes]:
        n, raw = next(count), s.raw
        if n % 3:
            k = n % max(1, len(raw))
            raw = raw[:k] + bytes([raw[k] ^ 0xA5]) + raw[k + 1:] if n % 2 else raw[:k]
        return [raw]
    return rewrite_samples(src, dst, raws)


@pytest.mark.parametrize("time_mode", ["perf", "ns", "rel", "delta"])
@pytest.mark.parametrize("name", [*FILES, "mutated"])
def test_format_joined_is_the_joined_format_many(name, time_mode, tmp_path, monkeypatch):
    """The C loop's one-buffer output (Formatter.format_joined, which runs the C renderers
    straight into it) is sep.join of its per-event objects and of the pure-Python ones,
    between the lead and the tail it is given."""
    from ehtool.perfdata import PerfDataFile
    from ehtool.render.events import SampleFormatter
    from ehtool.render.style import SPACED

    monkeypatch.delenv("EHTOOL_PURE", raising=False)
    require_speedups()
    golden = golden_path("linuxtracepoints/perf.data")
    if name == "mutated":
        path = _mutated(golden, tmp_path / "mutated.data")
    else:
        path = golden if name == "golden" else REPO / name
    sep = b",\n  "
    native: list[bool] = []

    def formatted(how: str) -> list[bytes]:
        if how == "pure":
            monkeypatch.setenv("EHTOOL_PURE", "1")
        else:
            monkeypatch.delenv("EHTOOL_PURE", raising=False)
        out = []
        with PerfDataFile.open(path, on_error=lambda e: None) as f:
            fmt = SampleFormatter(SPACED, big_endian=f.big_endian, long_size=f.long_size,
                                  time_json=f.session.time_json, clock=f.session.clock,
                                  comm_of=f.session.comm, warn=lambda m: None,
                                  time_mode=time_mode)
            if how == "pure":
                assert fmt._native is None
            else:
                native.append(fmt._native is not None)
            for batch in f.batches("time", nonsample=False):
                if how == "joined":
                    out.append(fmt.format_joined(batch, sep))
                    out.append(fmt.format_joined(batch, sep, b"<", b">\n"))
                else:
                    out.append(sep.join(fmt.format_many(batch)))
                    out.append(b"<" + sep.join(fmt.format_many(batch)) + b">\n")
        return out

    joined = formatted("joined")
    assert joined == formatted("many")
    assert joined == formatted("pure")
    assert sum(len(b) for b in joined) > 500
    assert all(native) or name != "golden"


@pytest.mark.parametrize("jsonl", [False, True])
@pytest.mark.parametrize("meta", [None, "+provider,+event,+options,+flags", "+comm",
                                  "none,+tid,+level,+activity"])
def test_eventheader_events_are_formatted_by_the_c_loop(tmp_path, monkeypatch, jsonl, meta):
    """Events met again (fast-path hits) are formatted in C, with activity ids too: the
    Python decoder is not called for them, and the bytes are pure Python's. In JSON
    Lines too, whose meta ends with "file", and with other --meta keys (both were left
    to Python: 3x the time), thread names (comm) and fewer of time, cpu, pid and tid
    among them; there, events with activity ids (whose ids go between the other keys)
    stay Python's."""
    from ehtool.decode.pipeline import DecodeOptions
    from ehtool.render.eventheader import EventHeaderDecoder
    from ehtool.render.meta_keys import parse_meta

    require_speedups()
    src = golden_path("linuxtracepoints/perf.data")
    big = tmp_path / "twice.data"
    replay_samples(src, big, 3000)
    calls = _count_calls(monkeypatch, EventHeaderDecoder, "_with_activity")
    decoded = _count_calls(monkeypatch, EventHeaderDecoder, "decode_parts")

    keys = None if meta is None else parse_meta(meta, lines=jsonl)
    options = DecodeOptions(jobs=1, jsonl=jsonl, meta=keys)

    def decode(pure: bool) -> bytes:
        return _decoded(monkeypatch, big, options, pure)

    c = decode(False)
    assert calls == [] or meta is not None
    in_c = len(decoded)
    assert decode(True) == c
    assert len(calls) > 10
    assert in_c * 4 < len(decoded) - in_c  # (C: the first of each event only)
    assert c.count(b'"activity": ') > 10
    with_file = jsonl and (keys is None or "file" in keys)
    assert c.count(b'"file": ') == (c.count(b'"n": ') if with_file else 0)


def _count_calls(monkeypatch, cls: type, name: str) -> list[int]:
    """A list that grows by one at each call of ``cls.name`` (patched for the test)."""
    calls: list[int] = []
    original = getattr(cls, name)

    def counting(self, *args):
        calls.append(1)
        return original(self, *args)
    monkeypatch.setattr(cls, name, counting)
    return calls


def test_the_c_loops_meta_members_per_event_stay_bounded(tmp_path, monkeypatch):
    """Under other --meta keys the C loop keeps each EventInfo's members in a dict: it is
    cleared at the decoder caches' bound (else a recording of ever new event layouts
    grew it without end), and the bytes stay pure Python's."""
    import ehtool.render.plan as plan
    from ehtool.decode.pipeline import DecodeOptions
    from ehtool.render.events import SampleFormatter
    from ehtool.render.meta_keys import parse_meta

    require_speedups()
    big = tmp_path / "replayed.data"
    replay_samples(golden_path("linuxtracepoints/perf.data"), big, 3000)
    options = DecodeOptions(jobs=1, meta=parse_meta("+provider,+event"))

    def decode(pure: bool) -> bytes:
        return _decoded(monkeypatch, big, options, pure)

    unbounded = decode(False)
    made = _count_calls(monkeypatch, SampleFormatter, "_eh_meta_of")
    once = decode(False)
    distinct = len(made)
    made.clear()
    monkeypatch.setattr(plan, "PLAN_CACHE_MAX", 4)
    bounded = decode(False)
    assert len(made) > 2 * distinct  # (made again after each clearing)
    assert bounded == once == unbounded == decode(True)


def _decoded(monkeypatch, path: Path, options, pure: bool) -> bytes:
    """``path`` decoded in this process, with the C loop or in pure Python."""
    import io

    from ehtool.decode.pipeline import decode_to

    if pure:
        monkeypatch.setenv("EHTOOL_PURE", "1")
    else:
        monkeypatch.delenv("EHTOOL_PURE", raising=False)
    out = io.BytesIO()
    assert decode_to(out, [str(path)], options) == []
    return out.getvalue()


@pytest.mark.parametrize("jsonl", [False, True])
def test_a_joined_batch_is_written_in_one_call(jsonl):
    """After the first, each batch goes to the output in one write, its lead (or its
    newlines) included: a signal raised between two writes (Python checks for them
    inside a buffered write) left a dangling comma before the closing."""
    import io
    import json

    from ehtool.decode.formatting import Joined
    from ehtool.render.document import DocumentWriter, JsonLinesWriter

    class Calls(io.BytesIO):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[bytes] = []

        def write(self, data) -> int:
            self.calls.append(bytes(data))
            return super().write(data)

        def writelines(self, parts) -> None:
            for part in parts:
                self.write(part)

    out = Calls()
    writer = (JsonLinesWriter if jsonl else DocumentWriter)(out)
    writer.begin_file("f")
    lead, sep, tail = writer.joining
    events = [b'{ "a": 1 }', b'{ "b": 2 }']
    for _ in range(3):
        writer.joined(Joined(lead + sep.join(events) + tail, 2).data, 2)
    writer.close()
    with_events = [call for call in out.calls if b'"a"' in call]
    assert len(with_events) == 3
    assert with_events[1] == with_events[2] == lead + sep.join(events) + tail
    if not jsonl:
        assert json.loads(out.getvalue()) == {"f": [{"a": 1}, {"b": 2}] * 3}
    else:
        assert [json.loads(line) for line in out.getvalue().splitlines()] == [
            {"a": 1}, {"b": 2}] * 3


@pytest.mark.parametrize("kw", [dict(meta="none"), dict(meta="common"), dict(meta="all"),
                                dict(meta="none,+level"), dict(fields_key="f"),
                                dict(fields_key="f", meta="common,+comm")],
                         ids=["none", "common", "all", "none+level", "fields-key",
                              "fields-key+common+comm"])
def test_meta_and_field_options_keep_the_c_loop(tmp_path, monkeypatch, kw):
    """With --meta none/common/all or --fields-key, the C loop formats each event after
    the first of its kind (they went through the Python handlers, ~3-5x slower): only a
    few events reach the Python meta writer."""
    import io

    from ehtool.decode.pipeline import DecodeOptions, decode_to
    from ehtool.render.events import SampleFormatter
    from ehtool.render.meta_keys import parse_meta

    require_speedups()
    recording = tmp_path / "many.data"
    replay_samples(golden_path("linuxtracepoints/perf.data"), recording, 6000)
    calls = []
    real = SampleFormatter._meta
    monkeypatch.setattr(SampleFormatter, "_meta",
                        lambda self, *a: calls.append(1) or real(self, *a))
    opts = dict(kw, meta=parse_meta(kw["meta"])) if "meta" in kw else kw
    out = io.BytesIO()
    assert decode_to(out, [str(recording)], DecodeOptions(jobs=1, **opts)) == []
    assert out.getvalue().count(b'"n": ') == 6000
    assert len(calls) < 600, len(calls)
