"""Event filters for ``ehtool decode``: the filter options (``--provider``, ``--pid``,
``--since``...) and ``--filter`` (the language is :mod:`ehtool.decode.expression`)
together as one :class:`Selection`, which checks samples as cheaply as it can: sample
meta on the sample itself; EventHeader events checked whole by a C walk of the JSON
renderer's plan, their identities and headers from its cache and the fields named read
by a field extractor per metadata (values as the typed decoder gives them); tracefs
fields straight from the record; and the typed event for the rest (malformed events).
With the C speedups, :meth:`Selection.filter_batch` decides a batch in C where it can:
a Program per EventInfo or tracefs event (:mod:`ehtool.decode.native`) walks the event
as the check does and reads the names' values in place; the rest goes to ``select``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Any

from ehtool.decode import native
from ehtool.decode.expression import (
    MISSING,
    SAMPLE_NAMES,
    compile_filter,
    event_view,
    lookup,
    meta_name,
    plain,
)
from ehtool.eventheader.decoder import field_extractor
from ehtool.eventheader.enums import HeaderFlags
from ehtool.formats.values import field_value
from ehtool.speedups import load

#: extractors kept per file before the cache is emptied (as the JSON renderer's plans)
PLAN_CACHE_MAX = 4096
_LITTLE_ENDIAN = int(HeaderFlags.LITTLE_ENDIAN)


def parse_when(text: str) -> tuple[str, int]:
    """``--since``/``--until``: ("abs", UTC ns) for ISO 8601, ("rel", ns) for seconds
    after the first event (``1.5``, ``+1.5``, ``250ms``)."""
    from datetime import UTC, datetime

    t = text.strip()
    match = re.fullmatch(r"\+?(\d+(?:\.\d*)?)(ms|s)?", t)
    if match:
        scale = 1_000_000 if match.group(2) == "ms" else 1_000_000_000
        return "rel", int(float(match.group(1)) * scale)
    try:
        moment = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{text!r}: give seconds after the first event (1.5, 250ms) or a "
                         "UTC time (2024-03-28T00:45:13Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    frac = re.search(r"\.(\d+)", t)
    ns = int(moment.replace(microsecond=0).timestamp()) * 1_000_000_000
    if frac:
        ns += int(frac.group(1)[:9].ljust(9, "0"))
    return "abs", ns


def _eventheader_meta(info: Any, activity: bytes | None,
                      related: bytes | None) -> dict[str, Any]:
    """The meta keys of an EventHeader event as :func:`event_view` shows them, from the
    JSON renderer's EventInfo (the typed event's meta, plain)."""
    import uuid

    meta: dict[str, Any] = {
        "id": info.id, "version": info.version, "level": info.level,
        "keyword": info.keyword, "opcode": info.opcode, "tag": info.tag,
        "options": info.options, "flags": info.flags,
        "provider": info.provider, "event": info.event_name}
    if activity is not None:
        meta["activity"] = str(uuid.UUID(bytes=activity))
    if related is not None:
        meta["related_activity"] = meta["relatedActivity"] = str(uuid.UUID(bytes=related))
    return meta


class _SampleView:
    """The view of an expression that names only sample meta (cpu, pid, tid, time, comm,
    also as meta.KEY): read from the sample itself, no dict built."""

    __slots__ = ("_comm", "sample")

    def __init__(self, sample: Any, comm: Callable[[Any], str | None]) -> None:
        self.sample = sample
        self._comm = comm

    def get(self, key: str, default: Any = None) -> Any:
        if key == "meta":
            return self
        if key == "comm":
            value = self._comm(self.sample) if self.sample.tid is not None else None
        elif key in SAMPLE_NAMES:
            value = getattr(self.sample, key)
        else:
            return default
        return default if value is None else value

    def __contains__(self, key: str) -> bool:
        return self.get(key, MISSING) is not MISSING

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, MISSING)
        if value is MISSING:
            raise KeyError(key)
        return value


#: a bound after every time (a relative --since before the first sample's time is known)
_AFTER_ALL = float("inf")


class _SharedView(dict):
    """The view of every event of an EventInfo (when nothing differs between them), and
    the expression's answer on it once known."""

    __slots__ = ("decision",)

    def __init__(self, items: dict[str, Any]) -> None:
        super().__init__(items)
        self.decision: bool | None = None


class Selection:
    """The ``ehtool decode`` filter options: a cheap check on the sample (pid, cpu,
    time, comm, and expressions that name only those) and a check on the typed event."""

    def __init__(self, *, providers: tuple[str, ...] = (), events: tuple[str, ...] = (),
                 level: int | None = None, keyword: int | None = None,
                 pids: tuple[int, ...] = (), tids: tuple[int, ...] = (),
                 cpus: tuple[int, ...] = (), comms: tuple[str, ...] = (),
                 since: str | None = None, until: str | None = None,
                 expr: str | None = None, sample_meta: bool = True,
                 decimal_pids: bool = False) -> None:
        """``sample_meta=False``: for events without perf sample meta (a .dat capture,
        ``bind(None)``): the options on it are a ValueError naming them, and the
        expression's names are fields or header meta, never sample meta."""
        self.providers, self.events, self.comms = providers, events, comms
        self.level, self.keyword = level, keyword
        self.pids, self.tids, self.cpus = frozenset(pids), frozenset(tids), frozenset(cpus)
        self.since = parse_when(since) if since else None
        self.until = parse_when(until) if until else None
        self.expr = compile_filter(expr) if expr is not None else None
        self.sample_meta = sample_meta
        self.decimal_pids = decimal_pids  # (tracefs pid_t fields as decode shows them)
        if not sample_meta:
            self._no_sample_meta()
        #: the field names the expression may mean (a dotted name: its head too)
        self._fields = frozenset() if self.expr is None else frozenset(
            part for name in self.expr.names if not name.startswith("meta.")
            for part in {name.split(";", 1)[0], name.split(";", 1)[0].split(".", 1)[0]})
        self._meta_keys = frozenset() if self.expr is None else frozenset(
            name[5:].split(".", 1)[0] for name in self.expr.names if name.startswith("meta."))
        #: select() is the expression alone
        self._view_only = (self.expr is not None and not self.expr.on_sample
                           and not (providers or events or level is not None
                                    or keyword is not None))
        self._file: Any = None
        self._convert: Any = None
        self._identify: Any = None
        self._first: int | None = None
        #: names of the expression some event had (the others are reported)
        self.seen: set[str] = set()
        #: --since/--until problems (reversed, beyond a file, UTC without clock data)
        self._time_warnings: list[str] = []
        self._window: list[int] = []  # per file: [events, in the window, first, last]
        self._reversed = bool(self.since and self.until and self.since[0] == self.until[0]
                              and self.since[1] > self.until[1])
        if self._reversed:
            self._time_warnings.append(f"--since {since} is after --until {until}: "
                                       "no event can be in between")
        self._unseen = set(self.expr.names) if self.expr is not None else set()
        self._native: Any = None  # the C loop of filter_batch, made by bind

    def _no_sample_meta(self) -> None:
        """Refuse what needs perf sample meta (ValueError naming the option). What is
        left of an expression reads its names from the event (a bare pid is a field):
        ``on_sample`` holds only for ``meta.X`` names, refused here."""
        why = ".dat events have no perf sample meta (time, cpu, pid, tid, comm)"
        given = [("--pid", self.pids), ("--tid", self.tids), ("--cpu", self.cpus),
                 ("--comm", self.comms), ("--since", self.since), ("--until", self.until)]
        for option, value in given:
            if value:
                raise ValueError(f"{option}: {why}; it applies to perf.data input")
        if self.expr is not None:
            for name in sorted(self.expr.names):
                if name.startswith("meta.") and meta_name(name).split(".", 1)[0] \
                        in SAMPLE_NAMES:
                    raise ValueError(f"--filter: {name!r}: {why}")

    @property
    def active(self) -> bool:
        return bool(self.providers or self.events or self.comms or self.pids or self.tids
                    or self.cpus or self.since or self.until or self.expr
                    or self.level is not None or self.keyword is not None)

    @property
    def names_threads(self) -> bool:
        """Whether selection looks at thread names (--comm, or comm in the expression)."""
        names = self.expr.names if self.expr is not None else frozenset()
        return bool(self.comms) or "comm" in {meta_name(n) for n in names}

    @property
    def parallel_safe(self) -> bool:
        """False when selection depends on earlier records (thread names; for --since and
        --until the first time, and whether any event was in the window). The names
        the expression found travel back from the second process (report/absorb)."""
        return not (self.names_threads or self.since or self.until)

    def report(self) -> list[str]:
        """What the second process learnt that the first must know: the names found."""
        return sorted(self.seen)

    def absorb(self, report: list[str]) -> None:
        """Take in the second process's :meth:`report`."""
        self.seen |= set(report)
        self._unseen -= set(report)

    def bind(self, perf_file: Any | None, decimal_pids: bool | None = None) -> None:
        """Before the samples of each input: its PerfDataFile, or None for a .dat
        capture's (``ehtool.decode.dat_input.dat_batches``; needs ``sample_meta=False``).
        ``decimal_pids``: the values tested are those of ``ehtool.open(decimal_pids=)``
        for this input (None: this selection's own ``decimal_pids``)."""
        from ehtool.events import SampleConverter

        if perf_file is None and self.sample_meta:
            raise ValueError("a .dat capture needs Selection(sample_meta=False)")
        self._check_window()
        self._file = perf_file
        self._first = None
        self._window = [0, 0, 0, 0]
        converter = SampleConverter() if perf_file is None else SampleConverter(
            big_endian=perf_file.big_endian, comm_of=perf_file.session.comm,
            clock=perf_file.session.clock,
            decimal_pids=self.decimal_pids if decimal_pids is None else decimal_pids)
        self._tracefs_fields = converter.tracefs_fields
        self._convert, self._identify = converter.convert, converter.identify
        self._describe = converter.describe
        self._eventheader: Any = None  # the JSON renderer's decoder, made when needed
        self._identities: dict[Any, tuple[str, int] | None] = {}
        self._views: dict[Any, Callable[[Any], dict[str, Any]]] = {}
        self._extractors: dict[Any, Callable[[bytes, int, int], Any] | None] = {}
        self._shared: dict[Any, tuple] = {}
        self._step = self._sample_step()
        self._native = self._native_filter()

    def _sample_step(self) -> Callable[[list], list] | None:
        """--pid, --tid, --cpu, --comm, --since and --until on a batch of samples, in
        one pass each, counting the --since/--until window for the warnings; None
        without them."""
        if not (self.pids or self.tids or self.cpus or self.comms or self.since
                or self.until):
            return None
        pids, tids, cpus, since, until = self.pids, self.tids, self.cpus, self.since, \
            self.until
        comm_ok = self._comm_check() if self.comms else None

        def step(batch: list) -> list:
            if pids:
                batch = [s for s in batch if s.pid in pids]
            if tids:
                batch = [s for s in batch if s.tid in tids]
            if cpus:
                batch = [s for s in batch if s.cpu in cpus]
            if comm_ok is not None:
                batch = [s for s in batch if comm_ok(s.tid)]
            if not (since or until):
                return batch
            timed = [s for s in batch if s.time is not None]
            if not timed:
                return []
            # the window's warnings and relative bounds go by the samples (--nonsample
            # records do not move where they start): a record before the first sample is
            # before any relative bound
            samples = [s for s in timed if s.is_sample]
            window = self._window
            if samples:
                if not window[0]:
                    window[2] = samples[0].time
                window[0] += len(samples)
                window[3] = samples[-1].time
            first = samples[0].time if samples else None
            unknown = first is None and self._first is None  # no sample yet: no origin
            lo = hi = None
            if since:
                lo = _AFTER_ALL if unknown and since[0] == "rel" else self._bound(since, first)
            if until:
                hi = None if unknown and until[0] == "rel" else self._bound(until, first)
            kept = [s for s in timed if (lo is None or s.time >= lo)
                    and (hi is None or s.time <= hi)]
            window[1] += len(kept) if len(samples) == len(timed) else sum(
                s.is_sample for s in kept)
            return kept

        return step

    def _comm_check(self) -> Callable[[int | None], bool]:
        """--comm on a thread id: its session name matches a glob (the answer kept per
        name)."""
        names = self._file.session.comms
        globs = self.comms
        verdicts: dict[str, bool] = {}

        def check(tid: int | None) -> bool:
            name = names.get(tid) if tid is not None else None
            if name is None:
                return False
            verdict = verdicts.get(name)
            if verdict is None:
                verdict = verdicts[name] = any(fnmatch.fnmatchcase(name, g) for g in globs)
            return verdict

        return check

    def _native_filter(self) -> Any:
        """The C loop of :meth:`filter_batch` (``_speedups.Filter``), or None: without
        the C speedups, and when an expression on sample meta comes with other options
        (Python checks it). An expression on sample meta alone has one Program for every
        event."""
        speedups = load()
        on_sample = self.expr is not None and self.expr.on_sample and not self.narrowed
        rest = self.expr is not None and self.expr.on_sample  # left to Python per sample
        if speedups is None or not (on_sample or (self.needs_event() and not rest)):
            return None
        from ehtool.perfdata.records import Sample

        self._speedups = speedups
        self._names = tuple(sorted(self.expr.names)) if self.expr is not None else ()
        self._found = bytearray(len(self._names))
        #: what decides a desc's samples in C, and what decides those it leaves to Python
        self._entry, self._fallback = self._native_entry, self.select
        if on_sample:  # (the events themselves are not read: no walk, as in Python)
            sources = native.sample_sources(self._bases(), self._file.session.comms)
            whole = native.program(speedups, self.expr, self._names, sources.__getitem__)
            self._entry, self._fallback = (lambda desc: whole), self.prefilter
        return speedups.Filter({}, self._entry, self._fallback, self._found, Sample)

    def filter_batch(self, batch: list) -> list:
        """The samples of ``batch`` that :meth:`prefilter` and :meth:`select` keep, in
        order; with the C speedups mostly decided in C (``ehtool.decode.native``)."""
        if self._step is not None:
            batch = self._step(batch)
        if self._native is not None:
            kept = self._native.filter(batch)
            if self._unseen and any(self._found):
                found = {n for n, hit in zip(self._names, self._found, strict=True) if hit}
                self.seen |= found
                self._unseen -= found
            return kept
        if self.expr is not None and self.expr.on_sample:
            batch = [sample for sample in batch if self._sample_expr(sample)]
        if self.needs_event():
            batch = [sample for sample in batch if self.select(sample)]
        return batch

    def _native_entry(self, desc: Any) -> Any:
        """What decides the samples of ``desc`` in the C loop (see ``_speedups.Filter``):
        a Program, the EventHeader fast-cache lookup and its Programs, or None."""
        name, provider, event, fmt, eh_offset = self._describe(desc)
        if eh_offset is not None:
            programs: dict[Any, Any] = {}

            def program_of(info: Any) -> Any:
                if len(programs) >= PLAN_CACHE_MAX:
                    programs.clear()
                return self._eventheader_program(info)
            return (fmt.name, eh_offset, self._json_decoder().fast_cache, programs,
                    program_of)
        speedups = self._speedups
        if not self._identity_passes(provider, event, None, None) or self.expr is None:
            return native.decision(speedups, self.expr is None
                                   and self._identity_passes(provider, event, None, None))
        if fmt is None:
            return None
        fixed = {"n": name, "provider": provider, "event": event}
        sources = native.tracefs_sources(fixed, self._tracefs_fields(fmt, common=True),
                                         self._file.big_endian, self._bases())
        return native.program(speedups, self.expr, self._names, sources.__getitem__)

    def _bases(self) -> set[str]:
        """The expression's names without their tags."""
        return {n.split(";", 1)[0] for n in self._names}

    def _eventheader_program(self, info: Any) -> Any:
        """The Program of the EventHeader events of ``info`` (fast-cache hits without
        activity ids), or None."""
        plan = info.plan.native
        if plan is None:
            return None
        speedups = self._speedups
        if not self._identity_passes(info.provider, info.event_name, info.level,
                                     info.keyword):
            return native.decision(speedups, False, plan)
        if self.expr is None:
            return native.decision(speedups, True, plan)
        sources, marks = native.eventheader_sources(
            info, bool(info.flags & _LITTLE_ENDIAN), _eventheader_meta(info, None, None),
            self._bases())
        return native.program(speedups, self.expr, self._names, sources.__getitem__, plan,
                              marks)

    def _bound(self, when: tuple[str, int], t: int | None) -> int:
        """A --since/--until bound in session time; ``t``: the batch's first sample's
        time, which starts relative bounds when none started them yet."""
        kind, ns = when
        if kind == "rel":
            if self._first is None:
                self._first = t
            return self._first + ns
        clock = self._file.info.clock_data if self._file is not None else None
        return ns - (clock[1] - clock[2]) if clock else ns

    def _comm(self, sample: Any) -> str | None:
        return self._file.session.comm(sample.tid) if self._file is not None else None

    def prefilter(self, sample: Any) -> bool:
        """Checks on the sample itself, before it is formatted: the sample options (the
        batch step on this one sample) and an expression on sample meta."""
        if self._step is not None and not self._step([sample]):
            return False
        return self.expr is None or not self.expr.on_sample or self._sample_expr(sample)

    def _sample_expr(self, sample: Any) -> bool:
        """The expression (on sample meta only) on ``sample``."""
        view = _SampleView(sample, self._comm)
        if self._unseen:
            self._note(view)
        return self.expr(view)

    def needs_prefilter(self) -> bool:
        return bool(self.pids or self.tids or self.cpus or self.comms or self.since
                    or self.until or (self.expr is not None and self.expr.on_sample))

    def needs_event(self) -> bool:
        return bool(self.providers or self.events or self.level is not None
                    or self.keyword is not None
                    or (self.expr is not None and not self.expr.on_sample))

    def select(self, sample: Any) -> bool:
        """Checks on the typed event of ``sample``."""
        if not sample.is_sample:
            return self._record_passes(sample)
        if self._view_only:  # only the expression: one typed decode answers everything
            return self._test(sample)
        if not self._identity_passes(*self._identity(sample)):
            return False
        if self.expr is None or self.expr.on_sample:
            return True
        return self._test(sample)

    def _record_passes(self, record: Any) -> bool:
        """A ``--nonsample`` record as the event it is shown as (``perf:comm``...):
        provider ``perf``, no level or keyword, its fields and sample meta."""
        from ehtool.render.events import RECORD_FIELDS

        spec = RECORD_FIELDS.get(record.type)
        if spec is None or record.body is None:
            return True  # (not shown)
        event = spec[0].decode()
        if not self._identity_passes("perf", event, None, None):
            return False
        if self.expr is None or self.expr.on_sample:
            return True
        view: dict[str, Any] = {k: getattr(record.body, k) for k in spec[1]}
        meta = {"time": record.time, "cpu": record.cpu, "pid": record.pid,
                "tid": record.tid, "comm": self._comm(record) if record.tid is not None
                else None}
        meta = {k: v for k, v in meta.items() if v is not None}
        for key, value in meta.items():
            view.setdefault(key, value)
        view.update(meta=meta, n=f"perf:{event}", provider="perf", event=event)
        if self._unseen:
            self._note(view)
        return self.expr.predicate(view)

    def _identity_passes(self, provider: str, event: str, level: int | None,
                         keyword: int | None) -> bool:
        """--provider, --event, --level and --keyword on an event's identity."""
        if self.providers and not any(fnmatch.fnmatchcase(provider, p)
                                      for p in self.providers):
            return False
        # (the name shown: a .dat capture's bare tracepoint name has no provider; a perf
        # event that is not a tracepoint, "cpu-clock:", has no event: its name is the
        # provider's, as info lists it)
        name = event or provider
        if self.events and not any(fnmatch.fnmatchcase(name, g)
                                   or (provider and fnmatch.fnmatchcase(f"{provider}:{event}",
                                                                        g))
                                   for g in self.events):
            return False
        if self.level is not None and (level is None or level > self.level):
            return False
        return self.keyword is None or (keyword is not None and bool(keyword & self.keyword))

    def _test(self, sample: Any) -> bool:
        """The expression on the typed event (only the fields it names decoded)."""
        make = self._views.get(sample.desc)
        if make is None:
            make = self._views[sample.desc] = self._view_maker(sample.desc)
        view = make(sample)
        if type(view) is _SharedView:  # the view of many events: one answer
            decision = view.decision
            if decision is None:
                self._note(view)
                decision = view.decision = self.expr.predicate(view)
            return decision
        if self._unseen:
            self._note(view)
        return self.expr.predicate(view)

    def _json_decoder(self) -> Any:
        """The JSON renderer's EventHeader decoder (its C cache serves identities and
        headers), made when first needed."""
        if self._eventheader is None:
            from ehtool.render.eventheader import EventHeaderDecoder
            from ehtool.render.style import COMPACT

            self._eventheader = EventHeaderDecoder(COMPACT)
        return self._eventheader

    def _identity(self, sample: Any) -> tuple[str, str, int | None, int | None]:
        """``(provider, event, level, keyword)`` as the typed layer's ``identify`` says,
        through the JSON renderer's C cache for EventHeader events it can render (the
        typed identify for the others: not EventHeader, malformed)."""
        desc = sample.desc
        tracepoint = self._identities.get(desc, False)
        if tracepoint is False:
            fmt = self._describe(desc)[3]
            offset = getattr(fmt, "eventheader_offset", None) if fmt is not None else None
            tracepoint = self._identities[desc] = None if offset is None else (fmt.name,
                                                                               offset)
        if tracepoint is not None:
            try:
                parts = self._json_decoder().check_parts(tracepoint[0], sample.raw,
                                                         tracepoint[1])
            except ValueError:  # malformed: shown as a plain tracepoint, selected so
                parts = None
            if parts is not None:
                info = parts[0]
                return info.provider, info.event_name, info.level, info.keyword
        return self._identify(sample)

    def _eventheader_view_maker(self, tracepoint: str,
                                offset: int) -> Callable[[Any], dict[str, Any]]:
        """Views of an EventHeader tracepoint's samples, as :func:`event_view` builds them
        from the typed event, without one: the JSON renderer's cache (C speed; it also
        checks the whole event) gives the header, the names and where the payload
        starts, and the top-level fields the expression names are read by a field
        extractor made once per metadata (``field_extractor``: their values as the
        typed decoder has them). A malformed event or one that is not EventHeader goes
        through the typed event (the plain tracepoint view)."""

        keys, meta_keys = self._fields, self._meta_keys
        convert = self._convert
        check = self._json_decoder().check_parts
        #: plan -> the extractor of the fields the expression names (None: it has none)
        extractors = self._extractors
        #: EventInfo -> what its events' views share (see ``shared``)
        shared_parts = self._shared
        only = frozenset(k.encode("utf-8", "surrogateescape") for k in keys)
        head_keys = [k for k in ("n", "provider", "event") if k in keys]
        wanted = keys | meta_keys
        sample_keys = [k for k in ("time", "cpu", "pid", "tid") if k in wanted]
        comm = "comm" in wanted
        #: whether the meta differs between events of one EventInfo
        per_event = bool(sample_keys or comm or wanted & {"activity", "relatedActivity",
                                                          "related_activity"})

        def typed(sample: Any) -> dict[str, Any]:
            return event_view(convert(sample, keys), keys, meta_keys)

        def shared(info: Any) -> tuple:
            """(the whole view when no event of ``info`` differs, else None; the view's
            n/provider/event; the extractor; the header meta; the view's keys from it;
            its meta keys from it)."""
            plan = info.plan
            try:
                extract = extractors[plan]
            except KeyError:
                if len(extractors) >= PLAN_CACHE_MAX:
                    extractors.clear()
                extract = extractors[plan] = (
                    field_extractor(plan.fields, bool(info.flags & _LITTLE_ENDIAN), only)
                    if any(d.name in only for d in plan.fields) else None)
            names = {"n": f"{info.provider}:{info.event_name}", "provider": info.provider,
                     "event": info.event_name}
            head = {k: names[k] for k in head_keys}
            meta = _eventheader_meta(info, None, None)
            from_meta = {k: meta[k] for k in keys if k in meta and k not in head}
            meta_view = {k: meta[k] for k in meta_keys if k in meta}
            whole = None
            if extract is None and not per_event:
                whole = _SharedView({**head, **from_meta})
                if meta_keys:
                    whole["meta"] = meta_view
            if len(shared_parts) >= PLAN_CACHE_MAX:
                shared_parts.clear()
            entry = shared_parts[info] = (whole, head, extract, meta, from_meta, meta_view)
            return entry

        def make(sample: Any) -> dict[str, Any]:
            raw = sample.raw
            try:
                parts = check(tracepoint, raw, offset)
            except ValueError:  # malformed: the typed event is the plain tracepoint
                return typed(sample)
            if parts is None:
                return typed(sample)
            entry = shared_parts.get(parts[0]) or shared(parts[0])
            if entry[0] is not None:
                return entry[0]
            _, head, extract, meta, from_meta, meta_view = entry
            view = dict(head)
            if extract is not None:
                for name, value in extract(raw if type(raw) is bytes else bytes(raw),
                                           parts[3], offset):
                    if name not in view:
                        view[name] = plain(value)
            if not per_event:
                for key, value in from_meta.items():
                    if key not in view:
                        view[key] = value
                if meta_keys:
                    view["meta"] = meta_view
                return view
            meta = _eventheader_meta(*parts[:3])
            for key in sample_keys:
                value = getattr(sample, key)
                if value is not None:
                    meta[key] = value
            if comm and sample.tid is not None:
                thread = self._comm(sample)
                if thread is not None:
                    meta["comm"] = thread
            for key in keys:
                if key not in view and key in meta:
                    view[key] = meta[key]
            if meta_keys:
                view["meta"] = {k: meta[k] for k in meta_keys if k in meta}
            return view

        return make

    def _view_maker(self, desc: Any) -> Callable[[Any], dict[str, Any]]:
        """How to make the view of ``desc``'s samples: through the typed event, or, for
        a tracefs event, straight from the sample and the named fields' formats (the
        same view, without an Event)."""
        keys, meta_keys = self._fields, self._meta_keys
        name, provider, event, fmt, eh_offset = self._describe(desc)
        if fmt is None:
            convert = self._convert
            return lambda sample: event_view(convert(sample, keys), keys, meta_keys)
        if eh_offset is not None:
            return self._eventheader_view_maker(fmt.name, eh_offset)
        fields, seen = [], set()
        for f in self._tracefs_fields(fmt, common=True):  # (common_pid... too)
            if f.name in keys and f.name not in seen:
                fields.append(f)
                seen.add(f.name)
        fixed = {k: v for k, v in (("n", name), ("provider", provider), ("event", event))
                 if k in keys}
        big_endian = self._file.big_endian
        sample_keys = [k for k in ("time", "cpu", "pid", "tid") if k in keys and k not in fixed
                       and k not in seen]
        sample_meta = [k for k in ("time", "cpu", "pid", "tid") if k in meta_keys]
        comm = "comm" in keys and "comm" not in fixed and "comm" not in seen
        comm_meta = "comm" in meta_keys

        def make(sample: Any) -> dict[str, Any]:
            view = dict(fixed)
            raw = sample.raw
            for f in fields:
                if f.name not in view:
                    view[f.name] = plain(field_value(f, raw, big_endian))
            for key in sample_keys:
                value = getattr(sample, key)
                if value is not None:
                    view[key] = value
            if comm or comm_meta:
                thread = self._comm(sample) if sample.tid is not None else None
                if thread is not None and comm:
                    view["comm"] = thread
            if meta_keys:
                meta = {k: getattr(sample, k) for k in sample_meta
                        if getattr(sample, k) is not None}
                if comm_meta and thread is not None:
                    meta["comm"] = thread
                view["meta"] = meta
            return view

        return make

    def _note(self, view: dict[str, Any]) -> None:
        if self._unseen:
            found = {n for n in self._unseen if lookup(view, n) is not MISSING}
            self.seen |= found
            self._unseen -= found

    def _check_window(self) -> None:
        """Warn when the file just read had events but none in the --since/--until window."""
        if self._file is None or not self._window or not self._window[0] or self._window[1] \
                or self._reversed:
            return
        name = self._file.path
        if any(w is not None and w[0] == "abs" for w in (self.since, self.until)) \
                and self._file.info.clock_data is None:
            self._time_warnings.append(
                f"{name}: no clock data (record with perf record -k monotonic), so a UTC "
                "--since/--until cannot be placed: give seconds after the first event")
            return
        first, last = self._window[2:4]
        self._time_warnings.append(
            f"{name}: no event in the --since/--until window: its events span "
            f"{(last - first) / 1e9:.3f} s from {self._file.session.clock.time_text(first)}")

    def time_warnings(self) -> list[str]:
        """--since/--until problems seen so far (call after the last input)."""
        self._check_window()
        self._window = []
        out, self._time_warnings = self._time_warnings, []
        return out

    @property
    def narrowed(self) -> bool:
        """True when options other than --filter choose events too (the expression then
        sees only the events they keep)."""
        return bool(self.providers or self.events or self.comms or self.pids or self.tids
                    or self.cpus or self.since or self.until or self.level is not None
                    or self.keyword is not None)

    @property
    def unknown_names(self) -> list[str]:
        """Names of the expression that no event of the input had."""
        return sorted(self._unseen)
