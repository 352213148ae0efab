"""The C loop of Selection.filter_batch (``_speedups.Filter`` running the Programs of
``ehtool.decode.native``) keeps exactly the samples the Python path keeps, and finds
the same names, on every event of real recordings, malformed ones too."""

from __future__ import annotations

import fnmatch
import random
import re
from pathlib import Path

import pytest

from golden import golden_path, mutated_golden
from impl import require_speedups

REPO = Path(__file__).resolve().parents[2]

ROOT = Path(__file__).resolve().parents[2]

#: every operator, missing names, hex strings, strings against ints, floats, bools,
#: meta names, n/provider/event, tags, names through structs, comm and globs
EXPRESSIONS = [
    "a1 > 3", "a1 != 3", "a1", "!a1", "a1 == 100", "level <= 3", "meta.level <= 3",
    "prev_pid > 3", "prev_pid >= 0x10 && next_prio < 130", "prev_state & 1", "prev_comm",
    "prev_comm == \"swapper/0\"", "next_comm ~ \"s*\"", "prev_prio == \"0x78\"",
    "Field2 == 0x1", "Field2 == \"0x1\"", "Field2 != \"x\"", "Field2 < \"a\"",
    "Field2 & 0x3", "Field2 & \"0x2\"", "Field2", "Field3 >= 1.5", "Field3 < 2",
    "enabled == true", "enabled == 1", "enabled != false", "enabled & 1",
    "f32 > 0.5", "f64 <= -1e300", "i8 < 0", "u64 > 0xffffffff", "s == \"abc\"",
    "s ~ \"a*\"", "s", "s == 3", "s > 3", "hex32 == 0x950", "hex32 > 0x10",
    "errno == 2", "errno < 0", "port == 80", "pid == 2004", "meta.pid == 2004",
    "cpu == 16 && level == 5", "time > 0 && meta.time > 0", "tid != 0",
    "n == \"TestProviderC:Default\"", "n ~ \"*Cpp*\" || opcode", "provider == \"sched\"",
    "event ~ \"*Value*\" && keyword & 0x1", "meta.provider == \"TestProviderC\"",
    "meta.event == \"ai8\"", "id || version", "tag", "options", "flags & 0x1",
    "activity", "relatedActivity ~ \"*\"", "meta.activity", "comm ~ \"k*\"",
    "meta.comm ~ \"e*\"", "a.b == 1", "no_such_name > 1", "no_such_name != 1",
    "!(no_such_name == 1)", "meta.no_such", "meta", "raw", "V8;tag=0x1 >= 0",
    "level <= 3 && (a1 > 3 || !(cpu == 1))", "null_field == null", "x == false",
]


def _recording(name: str, tmp_path_factory) -> str:
    if name == "golden":
        return str(golden_path("linuxtracepoints/perf.data"))
    if name == "mutated":
        return _mutated(tmp_path_factory)
    if name == "scrambled":
        return _scrambled(tmp_path_factory)
    if name == "big-endian":
        return _big_endian(tmp_path_factory)
    return str(ROOT / name)


def _big_endian(tmp_path_factory) -> str:
    """The scrambled recording as a big-endian machine would have written it."""
    from ehtool.perfdata.writer import transcode_file

    if "big" not in _MUTATED:
        path = tmp_path_factory.mktemp("native") / "big.data"
        transcode_file(_scrambled(tmp_path_factory), path, big_endian=True)
        _MUTATED["big"] = str(path)
    return _MUTATED["big"]


def _scrambled(tmp_path_factory) -> str:
    """The reference recording's samples four times over (the first event of a metadata
    is decided in Python, the others in C), with random payloads in every EventHeader
    event whose fields are all fixed-size scalars (negative numbers, NaNs, bools that
    are neither 0 nor 1, big unsigned values...), each event still whole, and in every
    sched_switch record after its common fields."""
    if "scrambled" in _MUTATED:
        return _MUTATED["scrambled"]
    from ehtool.eventheader.kinds import FIXED_SIZES
    from ehtool.perfdata import PerfDataFile
    from ehtool.perfdata.writer import replay_samples
    from ehtool.render.eventheader import EventHeaderDecoder
    from ehtool.render.style import COMPACT

    golden = golden_path("linuxtracepoints/perf.data")
    with PerfDataFile.open(str(golden)) as f:
        count = sum(1 for _ in f.samples("file"))
    src = tmp_path_factory.mktemp("native") / "replayed.data"
    replay_samples(golden, src, 4 * count)
    data = bytearray(src.read_bytes())
    decoder = EventHeaderDecoder(COMPACT)
    rng = random.Random(13)
    with PerfDataFile.open(str(src)) as f:
        for s in f.samples("file"):
            offset = getattr(s.desc.format, "eventheader_offset", None)
            end = s.offset + int.from_bytes(data[s.offset + 6:s.offset + 8], "little")
            if s.desc.format is not None and s.desc.format.name == "sched_switch":
                start = end - len(s.raw) + 8  # (after the common fields)
                data[start:end] = rng.randbytes(end - start)
                continue
            parts = None if offset is None else decoder.check_parts(s.desc.format.name,
                                                                    s.raw, offset)
            if parts is None or not all(d.array is None and d.encoding in FIXED_SIZES
                                        for d in parts[0].plan.fields):
                continue
            start = end - len(s.raw) + parts[3]
            data[start:end] = rng.randbytes(end - start)
    path = tmp_path_factory.mktemp("native") / "scrambled.data"
    path.write_bytes(bytes(data))
    _MUTATED["scrambled"] = str(path)
    return str(path)


_MUTATED: dict[str, str] = {}


def _mutated(tmp_path_factory) -> str:
    """The reference recording with a byte changed in 200 EventHeader samples."""
    if "path" not in _MUTATED:
        _MUTATED["path"] = mutated_golden(tmp_path_factory.mktemp("native") / "mutated.data",
                                          11)
    return _MUTATED["path"]


def _compare(path: str, **options) -> tuple[int, int]:
    """Keep/drop of every sample and the names found, C loop against Python; returns
    (samples, samples the C Programs decided)."""
    from ehtool import speedups
    from ehtool.decode.filters import Selection
    from ehtool.perfdata import PerfDataFile
    from ehtool.perfdata.records import Sample

    require_speedups()
    fast, slow = Selection(**options), Selection(**options)
    asked = [0]
    total = 0
    with PerfDataFile.open(path, on_error=lambda err: None) as f:
        fast.bind(f)
        slow.bind(f)
        if fast._native is None:  # the sample options (--pid, --since...): Python's
            assert fast.needs_prefilter()
            return 0, 0
        slow._native = None  # the Python path
        fallback = fast._fallback

        def select(sample):
            asked[0] += 1
            return fallback(sample)
        fast._native = speedups.load().Filter({}, fast._entry, select, fast._found, Sample)
        for batch in f.batches("file", nonsample=False):
            total += len(batch)
            want = [s.offset for s in slow.filter_batch(batch)]
            got = [s.offset for s in fast.filter_batch(batch)]
            assert got == want, options
    assert fast.seen == slow.seen and fast.unknown_names == slow.unknown_names, options
    return total, total - asked[0]


PATHS = ["golden", "mutated", "examples/eventheader.data", "examples/sched.data"]
#: (its three events each bring a new metadata, which Python decides: no C decision)
FEW = "examples/eventheader.data"


@pytest.mark.parametrize("path", PATHS)
def test_c_decisions_are_the_python_ones(path, tmp_path_factory):
    decided = 0
    for text in EXPRESSIONS:
        total, in_c = _compare(_recording(path, tmp_path_factory), expr=text)
        decided += in_c
    # (the C Programs decide most events of most expressions)
    assert decided >= (0 if path == FEW else total * 10), decided


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("options", [
    {"providers": ("TestProviderC",)}, {"providers": ("sched", "*Cpp")},
    {"events": ("*Value*",)}, {"level": 3}, {"keyword": 0x1},
    {"providers": ("TestProviderC",), "expr": "a1 > 3 || Field2"},
    {"level": 4, "expr": "prev_pid > 3 || n ~ \"*8\""},
])
def test_c_identity_decisions_are_the_python_ones(path, options, tmp_path_factory):
    total, in_c = _compare(_recording(path, tmp_path_factory), **options)
    assert in_c > (-1 if path == FEW else total // 2)


def _names(path: str) -> list[str]:
    """Every top-level field name (an identifier) of the recording, and the meta names."""
    from ehtool.events import SampleConverter
    from ehtool.perfdata import PerfDataFile

    names = {"n", "provider", "event", "level", "keyword", "cpu", "pid", "time",
             "opcode", "meta.level", "meta.cpu", "missing_x"}
    with PerfDataFile.open(path, on_error=lambda err: None) as f:
        whole = SampleConverter(big_endian=f.big_endian)
        for sample in f.samples("file"):
            if sample.is_sample:
                names |= {n for n, _ in whole.convert(sample).fields
                          if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n)}
    return sorted(names)


def _random_expression(rng: random.Random, names: list[str], depth: int = 0) -> str:
    if depth < 3 and rng.random() < 0.45:
        op = rng.choice(["&&", "||"])
        left = _random_expression(rng, names, depth + 1)
        right = _random_expression(rng, names, depth + 1)
        text = f"({left} {op} {right})"
        return "!" + text if rng.random() < 0.2 else text
    name = rng.choice(names)
    if rng.random() < 0.1:
        return name
    op = rng.choice(["==", "!=", "<", "<=", ">", ">=", "&", "~"])
    value = rng.choice([0, 1, 3, -1, 100, 0x950, 2**63, 1.5, -0.25, '"0x10"', '"abc"',
                        '"0xzz"', '"*"', '"a*"', "true", "false", "null", "0x7fffffff"])
    return f"{name} {op} {value}"


@pytest.mark.parametrize("path", ["golden", "mutated", "scrambled", "big-endian",
                                  "examples/eventheader.data"])
def test_random_expressions(path, tmp_path_factory):
    path = _recording(path, tmp_path_factory)
    names = _names(path)
    assert len(names) > 15
    rng = random.Random(5)
    for _ in range(60):
        _compare(path, expr=_random_expression(rng, names))


def _literal(value: object) -> str | None:
    """``value`` as an expression's constant, or None when the language has none."""
    import json
    import math

    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float:
        return repr(value) if math.isfinite(value) else None
    if type(value) is str and '"' not in value and "\\" not in value:
        return json.dumps(value, ensure_ascii=False)
    return None


@pytest.mark.parametrize("path", ["golden", "mutated", "scrambled", "big-endian"])
def test_values_read_in_c_are_the_typed_ones(path, tmp_path_factory):
    """``name == value`` and ``name < value`` for values the typed events have: a value the
    C code read wrong would keep other events than the Python path."""
    from ehtool.decode.expression import plain
    from ehtool.events import SampleConverter
    from ehtool.perfdata import PerfDataFile

    path = _recording(path, tmp_path_factory)
    pairs: dict[str, dict[str, None]] = {}  # name -> its values' literals
    with PerfDataFile.open(path, on_error=lambda err: None) as f:
        whole = SampleConverter(big_endian=f.big_endian)
        for sample in f.samples("file"):
            for name, value in whole.convert(sample).fields:
                text = _literal(plain(value))
                if text is not None and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                    pairs.setdefault(name, {}).setdefault(text)
    assert len(pairs) > 50
    decided = 0
    for name, texts in sorted(pairs.items()):
        for text in list(texts)[:5]:  # (every name, a few of its values)
            decided += _compare(path, expr=f"{name} == {text} || {name} < {text} "
                                           f"&& !({name} != {text})")[1]
    assert decided > 10_000


# -- encoded events: every kind the C code reads, values of every sign and script -------

_KINDS = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "x8", "x32", "x64", "iptr",
          "bool", "bool32", "f32", "f64", "errno", "pid", "port", "str", "lstr", "char",
          "time", "ipv4", "u16[]", "i8[2]", "str16"]
_TEXTS = ["", "abc", "0x1f", "0X10", "0xzz", "0x", "é中文", "a\u0301", "ENOENT", "10"]


def _value(rng: random.Random, kind: str) -> object:
    if kind.endswith("]"):
        n = 2 if kind.endswith("[2]") else rng.randrange(3)
        return [rng.randrange(-100, 100) if kind.startswith("i") else rng.randrange(300)
                for _ in range(n)]
    if kind in ("str", "lstr", "str16"):
        return rng.choice(_TEXTS)
    if kind == "char":
        return rng.choice("aé0x")
    if kind in ("f32", "f64"):
        return rng.choice([0.0, -0.0, 1.5, -2.25, 1e30, float("inf"), float("nan"), 3.0])
    if kind == "ipv4":
        return "10.0.0.1"
    if kind in ("bool", "bool32"):
        return rng.choice([0, 1, 2, 255] if kind == "bool" else [0, 1, -1, 7])
    bits = {"8": 8, "16": 16, "32": 32, "64": 64}.get(kind.lstrip("iuxptr") or "64", 64)
    if kind == "errno" and rng.random() < 0.5:
        return rng.choice([2, -5, 200])  # (a named one, a negative one, an unnamed one)
    if kind in ("errno", "pid", "time"):
        bits = 32
    if kind == "port":
        return rng.randrange(1 << 16)
    if kind.startswith(("i", "errno", "pid", "time")):
        return rng.randrange(-(1 << (bits - 1)), 1 << (bits - 1))
    return rng.choice([0, 1, 3, 0x950, (1 << bits) - 1, rng.randrange(1 << bits)]) & (
        (1 << bits) - 1)


def _encoded_samples(rng: random.Random) -> list:
    """Samples of three metadata (field names shared between them, one name twice),
    each many times with random values, in both byte orders; some cut (malformed)."""
    from dataclasses import dataclass, field

    from eventheader.reference import to_big_endian

    from ehtool.eventheader.encoder import Event, Field, encode
    from ehtool.perfdata.records import Sample

    @dataclass(eq=False)
    class Format:
        name: str
        system: str = "user_events"
        eventheader_offset: int = 8
        fields: list = field(default_factory=list)

    @dataclass(eq=False)
    class Desc:
        name: str
        format: Format

    desc = Desc("user_events:Prov_L5K1", Format("Prov_L5K1"))
    layouts = [[(f"f_{k.replace('[', '').replace(']', '')}", k) for k in _KINDS],
               [("f_u32", "u32"), ("f_i8", "i8"), ("f_u32", "i32"), ("f_str", "lstr"),
                ("level", "u8"), ("n", "u8"), ("f_f64", "f32")],
               [("f_str", "str"), ("f_i64", "x64"), ("f_bool", "u8")]]
    samples = []
    for i in range(600):
        layout = layouts[i % 3]
        event = Event(f"Ev{i % 3}", [Field(name, kind, _value(rng, kind))
                                     for name, kind in layout])
        data = encode(event)
        raw = bytes(8) + (to_big_endian(data) if i % 6 >= 3 else data)
        if rng.random() < 0.08:
            raw = raw[:rng.randrange(20, len(raw))]  # malformed, or cut before the fields
        samples.append(Sample(1000 + i, i % 4, 7, 7 + i % 2, raw, desc, i))
    return samples


def test_encoded_events_of_every_kind(tmp_path_factory):
    """Every kind the C code reads (and some it does not), negative numbers, NaNs,
    bools neither 0 nor 1, non-ASCII and hex-looking text, cut events: the C loop keeps
    what the Python path keeps, for each field alone and at random."""
    from ehtool import speedups
    from ehtool.decode.filters import Selection
    from ehtool.perfdata import PerfDataFile
    from ehtool.perfdata.records import Sample

    require_speedups()
    rng = random.Random(3)
    samples = _encoded_samples(rng)
    names = sorted({f"f_{k.replace('[', '').replace(']', '')}" for k in _KINDS}
                   | {"level", "n", "cpu", "tid", "meta.level", "provider", "event"})
    constants = ["0", "1", "-1", "3", "0x950", "1.5", "-2.25", "2", "255", "65535",
                 "true", "false", "null", '"abc"', '"0x1f"', '"é中文"', '"10"', '"a*"',
                 '"ENOENT(2)"',
                 "9223372036854775807", "-9223372036854775808", "18446744073709551615"]
    texts = [f"{n} {op} {c}" for n in names for op in ("==", "<", ">=", "&", "!=")
             for c in rng.sample(constants, 4)]
    texts += [n for n in names] + [f"!{n}" for n in names]
    texts += [_random_expression(rng, names) for _ in range(150)]
    decided = 0
    with PerfDataFile.open(str(golden_path("linuxtracepoints/perf.data"))) as f:
        for text in texts:
            fast, slow = Selection(expr=text), Selection(expr=text)
            fast.bind(f)
            slow.bind(f)
            if fast._native is None:
                continue
            slow._native = None
            asked = [0]

            def select(sample, fallback=fast._fallback, asked=asked):
                asked[0] += 1
                return fallback(sample)
            fast._native = speedups.load().Filter({}, fast._entry, select, fast._found,
                                                  Sample)
            for start in range(0, len(samples), 100):
                batch = samples[start:start + 100]
                assert ([s.offset for s in fast.filter_batch(batch)]
                        == [s.offset for s in slow.filter_batch(batch)]), text
            assert fast.seen == slow.seen, text
            decided += len(samples) - asked[0]
    assert decided > len(texts) * len(samples) // 2


@pytest.mark.parametrize("options", [
    {"pids": (30907,)}, {"cpus": (1,)}, {"tids": (0, 103)},
    {"since": "0.1"}, {"until": "0.15"}, {"since": "0.05", "until": "0.1", "cpus": (0,)},
    {"since": "2026-11-22T11:10:03.1Z"}, {"since": "2024-03-28T00:45:15Z",
                                          "until": "2024-03-28T00:45:16Z"},
    {"since": "9", "until": "10"}, {"until": "0"}, {"since": "0", "cpus": (1,)},
    {"cpus": (0,), "expr": "prev_pid > 3 || level <= 4"},
    {"since": "0.5", "providers": ("TestProviderC*",), "expr": "a1 > 3"},
    {"comms": ("p*",)}, {"comms": ("mig*", "sw*"), "since": "0.1"},
    {"comms": ("e*",), "expr": "level <= 4"},
])
@pytest.mark.parametrize("path", ["golden", "examples/sched.data", "examples/eventheader.data"])
def test_sample_options_on_a_batch_keep_what_prefilter_keeps(path, options):
    """--pid/--tid/--cpu/--since/--until checked a batch at a time keep the samples, and
    count the window for the warnings, as prefilter does a sample at a time."""
    from ehtool.decode.filters import Selection
    from ehtool.perfdata import PerfDataFile

    path = str(golden_path("linuxtracepoints/perf.data")) if path == "golden" else \
        str(REPO / path)
    fast, slow = Selection(**options), Selection(**options)
    with PerfDataFile.open(path, on_error=lambda err: None) as f:
        fast.bind(f)
        slow.bind(f)
        assert fast._step is not None
        one = _OneAtATime(slow, f)
        slow._step = slow._native = None  # the options by the reference, then Python
        pre, pre_window = Selection(**options), [0, 0, 0, 0]  # prefilter, a sample at a time
        pre.bind(f)
        for batch in f.batches("time", nonsample=False):
            assert ([s.offset for s in fast.filter_batch(batch)]
                    == [s.offset for s in slow.filter_batch([s for s in batch
                                                             if one.keeps(s)])]), options
            assert ([pre.prefilter(s) for s in batch]
                    == [one.again(s, pre_window, pre) for s in batch]), options
    assert fast._window == slow._window == pre._window == pre_window
    assert fast.time_warnings() == slow.time_warnings()
    assert fast.seen == slow.seen


class _OneAtATime:
    """The reference for the batch step: the sample options checked one sample at a
    time, counting the --since/--until window into the Selection (as its warnings read
    it), written apart from it."""

    def __init__(self, sel, f) -> None:
        self.sel, self.f, self.first = sel, f, None

    def bound(self, when, t: int) -> int:
        kind, ns = when
        if kind == "rel":
            if self.first is None:
                self.first = t
            return self.first + ns
        clock = self.f.info.clock_data
        return ns - (clock[1] - clock[2]) if clock else ns

    def keeps(self, s, window: list[int] | None = None) -> bool:
        sel = self.sel
        window = sel._window if window is None else window
        if (sel.pids and s.pid not in sel.pids) or (sel.tids and s.tid not in sel.tids) \
                or (sel.cpus and s.cpu not in sel.cpus):
            return False
        if sel.comms:
            comm = self.f.session.comm(s.tid)
            if comm is None or not any(fnmatch.fnmatchcase(comm, g) for g in sel.comms):
                return False
        if sel.since or sel.until:
            t = s.time
            if t is None:
                return False
            if not window[0]:
                window[2] = t
            window[0] += 1
            window[3] = t
            if (sel.since and t < self.bound(sel.since, t)) or (
                    sel.until and t > self.bound(sel.until, t)):
                return False
            window[1] += 1
        return True

    def again(self, s, window: list[int], sel) -> bool:
        """keeps(s), counting into ``window``, and then ``sel``'s expression on sample
        meta: what ``sel.prefilter`` answers."""
        if not self.keeps(s, window):
            return False
        return sel.expr is None or not sel.expr.on_sample or sel._sample_expr(s)


def _mutated_dat(tmp_path_factory) -> str:
    """The reference .dat capture with a byte changed in 100 of its events (some become
    malformed, some change values, names or levels)."""
    from ehtool.eventheader.dat import records

    if "dat" not in _MUTATED:
        src = golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat")
        data = bytearray(src.read_bytes())
        rng = random.Random(3)
        spots = [(offset + len(data_) - len(event), len(event))
                 for offset, name, event in records(str(src))
                 for data_ in [data[offset:offset + 4 + len(name) + 1 + len(event)]]]
        for start, size in rng.sample(spots, 100):
            data[start + rng.randrange(size)] ^= 1 << rng.randrange(8)
        path = tmp_path_factory.mktemp("native") / "mutated.dat"
        path.write_bytes(bytes(data))
        _MUTATED["dat"] = str(path)
    return _MUTATED["dat"]


@pytest.mark.parametrize("which", ["golden", "mutated"])
def test_dat_decisions_are_the_typed_ones(which, tmp_path_factory):
    """On a .dat capture (samples without sample meta, ``bind(None)``) the C loop keeps what
    the Python path keeps, which is what the expression says of the typed event's view."""
    from ehtool import speedups
    from ehtool.decode.dat_input import dat_batches
    from ehtool.decode.expression import event_view
    from ehtool.decode.filters import Selection
    from ehtool.events import SampleConverter
    from ehtool.perfdata.records import Sample

    require_speedups()
    path = (str(golden_path("linuxtracepoints/EventHeaderInterceptorLE64.dat"))
            if which == "golden" else _mutated_dat(tmp_path_factory))
    samples = [s for batch in dat_batches(path, 100) for s in batch]
    whole = SampleConverter()
    views = [event_view(whole.convert(s)) for s in samples]
    texts = [t for t in EXPRESSIONS
             if not re.search(r"meta\.(time|cpu|pid|tid|comm)", t)]
    decided = 0
    for text in texts:
        fast = Selection(expr=text, sample_meta=False)
        slow = Selection(expr=text, sample_meta=False)
        fast.bind(None)
        slow.bind(None)
        assert fast._native is not None
        slow._native = None
        asked = [0]
        fallback = fast._fallback

        def select(sample, fallback=fallback, asked=asked):
            asked[0] += 1
            return fallback(sample)
        fast._native = speedups.load().Filter({}, fast._entry, select, fast._found, Sample)
        want = [s.offset for s, v in zip(samples, views, strict=True) if fast.expr(v)]
        got_slow = [s.offset for s in slow.filter_batch(samples)]
        got_fast = [s.offset for s in fast.filter_batch(samples)]
        assert got_fast == got_slow, text
        if text != "meta":  # (a bare 'meta' is no name of the filters, as in perf.data)
            assert got_slow == want, text
        assert fast.seen == slow.seen, text
        decided += len(samples) - asked[0]
    assert decided > 50  # (most of its metadata have one event: Python decides those)
