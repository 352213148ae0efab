"""Event filters for ``ehtool decode``: simple options and a small expression language.

Expressions are ftrace-like::

    level <= 3 && Field2 > 40
    comm ~ "nginx*" || !(pid == 0)
    keyword & 0x4 && n == "MyProvider:Started"

Operators: ``== != < <= > >=``, ``~`` (glob match), ``&`` (any bit set),
``&& || !`` and parentheses. Values are integers (decimal or 0x hex), floats,
double-quoted strings, ``true``/``false``/``null``. An identifier names a field
of the event (a name with a ``;tag=`` suffix matches its base name; struct
members as ``outer.inner``), else a meta key (time, cpu, pid, tid, comm, id,
version, level, keyword, opcode, tag, activity, relatedActivity), or ``n``,
``provider``, ``event``. Hex strings as perf-decode prints them (``"0x950"``)
compare as numbers. A comparison with a missing identifier is false.

Filters run on the event as it is printed (its JSON), so they select exactly
what a script filtering ehtool's output would.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable
from typing import Any

Predicate = Callable[[dict[str, Any]], bool]
_MISSING = object()
_TOKEN = re.compile(r"""
    (?P<ws>\s+) |
    (?P<num>-?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)) |
    (?P<str>"(?:[^"\\]|\\.)*") |
    (?P<op>&&|\|\||==|!=|<=|>=|[<>~&!()]) |
    (?P<ident>[A-Za-z_][A-Za-z0-9_.;=]*)
""", re.VERBOSE)


class FilterSyntaxError(ValueError):
    """A bad ``--filter`` expression; the message points at the column."""

    def __init__(self, text: str, column: int, message: str) -> None:
        super().__init__(f"--filter: {message} at column {column + 1}\n  {text}\n"
                         f"  {' ' * column}^")


def compile_filter(text: str) -> Predicate:
    """Compile an expression into a predicate over a parsed event (see ``event_view``)."""
    return _Parser(text).parse()


def event_view(event: bytes) -> dict[str, Any]:
    """The parsed JSON event as filters see it: the first ``n``, fields by name (tags
    stripped too), ``meta`` merged in, ``provider``/``event`` split from ``n``."""
    pairs = json.loads(event, object_pairs_hook=lambda items: items)
    view: dict[str, Any] = {}
    for key, value in pairs:
        if key == "meta" and isinstance(value, list):
            for mkey, mvalue in value:
                view.setdefault(mkey, _plain(mvalue))
            continue
        value = _plain(value)
        view.setdefault(key, value)
        base = key.split(";", 1)[0]
        view.setdefault(base, value)
    n = view.get("n", "")
    provider, _, name = str(n).partition(":")
    view.setdefault("provider", provider)
    view.setdefault("event", name)
    return view


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {k: _plain(v) for k, v in value}
        return [_plain(v) for v in value]
    return value


def _lookup(view: dict[str, Any], name: str) -> Any:
    if name in view:
        return view[name]
    head, _, rest = name.partition(".")
    value = view.get(head, _MISSING)
    while rest and isinstance(value, dict):
        head, _, rest = rest.partition(".")
        value = value.get(head, value.get(_tagless(value, head), _MISSING))
    return _MISSING if rest else value


def _tagless(obj: dict[str, Any], base: str) -> str:
    for key in obj:
        if key.split(";", 1)[0] == base:
            return key
    return base


def _number(value: Any) -> Any:
    if isinstance(value, str) and value[:2] in ("0x", "0X"):
        try:
            return int(value, 16)
        except ValueError:
            return value
    return value


def _compare(op: str, left: Any, right: Any) -> bool:
    if left is _MISSING:
        return False
    if op == "~":
        return isinstance(left, str) and fnmatch.fnmatchcase(left, str(right))
    left, right = _number(left), _number(right)
    if op == "&":
        return isinstance(left, int) and isinstance(right, int) and bool(left & right)
    if op == "==":
        return left == right
    if op == "!=":
        return left != right
    try:
        return {"<": left < right, "<=": left <= right, ">": left > right,
                ">=": left >= right}[op]
    except TypeError:
        return False


class _Parser:
    """Recursive descent: or -> and -> not -> comparison | ( or )."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise FilterSyntaxError(text, pos, f"unexpected {text[pos]!r}")
            if match.lastgroup != "ws":
                self.tokens.append((match.lastgroup, match.group(), pos))
            pos = match.end()
        self.i = 0

    def parse(self) -> Predicate:
        if not self.tokens:
            raise FilterSyntaxError(self.text, 0, "empty expression")
        pred = self._or()
        if self.i < len(self.tokens):
            raise FilterSyntaxError(self.text, self.tokens[self.i][2],
                                    f"unexpected {self.tokens[self.i][1]!r}")
        return pred

    def _peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _error(self, expected: str) -> FilterSyntaxError:
        tok = self._peek()
        column = tok[2] if tok else len(self.text)
        return FilterSyntaxError(self.text, column, f"expected {expected}")

    def _or(self) -> Predicate:
        left = self._and()
        while (tok := self._peek()) and tok[1] == "||":
            self.i += 1
            right = self._and()
            left = (lambda a, b: lambda v: a(v) or b(v))(left, right)
        return left

    def _and(self) -> Predicate:
        left = self._not()
        while (tok := self._peek()) and tok[1] == "&&":
            self.i += 1
            right = self._not()
            left = (lambda a, b: lambda v: a(v) and b(v))(left, right)
        return left

    def _not(self) -> Predicate:
        tok = self._peek()
        if tok and tok[1] == "!":
            self.i += 1
            inner = self._not()
            return lambda v: not inner(v)
        if tok and tok[1] == "(":
            self.i += 1
            inner = self._or()
            close = self._peek()
            if not close or close[1] != ")":
                raise self._error("')'")
            self.i += 1
            return inner
        return self._comparison()

    def _comparison(self) -> Predicate:
        tok = self._peek()
        if not tok or tok[0] != "ident":
            raise self._error("a field or meta name")
        self.i += 1
        name = tok[1]
        op = self._peek()
        if not op or op[1] not in ("==", "!=", "<", "<=", ">", ">=", "~", "&"):
            if op is None or op[1] in ("&&", "||", ")"):
                return lambda v: _truthy(_lookup(v, name))
            raise self._error("a comparison operator after " + repr(name))
        self.i += 1
        value = self._value(op[1])
        operator = op[1]
        return lambda v: _compare(operator, _lookup(v, name), value)

    def _value(self, after: str) -> Any:
        tok = self._peek()
        if tok is None or tok[0] not in ("num", "str", "ident"):
            raise self._error(f"a value after {after!r}")
        self.i += 1
        kind, text = tok[0], tok[1]
        if kind == "str":
            return json.loads(text)
        if kind == "num":
            if re.fullmatch(r"-?0[xX][0-9a-fA-F]+", text):
                return int(text, 16)
            return float(text) if any(c in text for c in ".eE") else int(text)
        keywords = {"true": True, "false": False, "null": None}
        if text in keywords:
            return keywords[text]
        raise FilterSyntaxError(self.text, tok[2], f"expected a value, not {text!r} "
                                "(quote strings)")


def _truthy(value: Any) -> bool:
    return value is not _MISSING and bool(_number(value))


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


class Selection:
    """The ``ehtool decode`` filter options as a cheap sample prefilter plus an
    event-level predicate on the printed JSON."""

    def __init__(self, *, providers: tuple[str, ...] = (), events: tuple[str, ...] = (),
                 level: int | None = None, keyword: int | None = None,
                 pids: tuple[int, ...] = (), tids: tuple[int, ...] = (),
                 cpus: tuple[int, ...] = (), comms: tuple[str, ...] = (),
                 since: str | None = None, until: str | None = None,
                 expr: str | None = None) -> None:
        self.providers, self.events, self.comms = providers, events, comms
        self.level, self.keyword = level, keyword
        self.pids, self.tids, self.cpus = frozenset(pids), frozenset(tids), frozenset(cpus)
        self.since = parse_when(since) if since else None
        self.until = parse_when(until) if until else None
        self.expr = compile_filter(expr) if expr else None
        self._file: Any = None
        self._first: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.providers or self.events or self.comms or self.pids or self.tids
                    or self.cpus or self.since or self.until or self.expr
                    or self.level is not None or self.keyword is not None)

    @property
    def parallel_safe(self) -> bool:
        """False when selection depends on earlier records (thread names, first time)."""
        relative = any(w is not None and w[0] == "rel" for w in (self.since, self.until))
        return not (self.comms or relative)

    def bind(self, perf_file: Any) -> None:
        self._file = perf_file
        self._first = None

    def _bound(self, when: tuple[str, int], t: int) -> int:
        kind, ns = when
        if kind == "rel":
            if self._first is None:
                self._first = t
            return self._first + ns
        clock = self._file.info.clock_data if self._file is not None else None
        return ns - (clock[1] - clock[2]) if clock else ns

    def prefilter(self, sample: Any) -> bool:
        """Checks on the sample itself, before it is formatted."""
        if self.pids and sample.pid not in self.pids:
            return False
        if self.tids and sample.tid not in self.tids:
            return False
        if self.cpus and sample.cpu not in self.cpus:
            return False
        if self.comms:
            comm = self._file.session.comm(sample.tid) if self._file is not None else None
            if comm is None or not any(fnmatch.fnmatchcase(comm, g) for g in self.comms):
                return False
        t = sample.time
        if self.since or self.until:
            if t is None:
                return False
            if self.since and t < self._bound(self.since, t):
                return False
            if self.until and t > self._bound(self.until, t):
                return False
        return True

    def needs_event(self) -> bool:
        return bool(self.providers or self.events or self.expr or self.level is not None
                    or self.keyword is not None)

    def select(self, sample: Any, event: bytes) -> bool:
        """Checks on the printed event."""
        view = event_view(event)
        if self.providers and not any(fnmatch.fnmatchcase(view["provider"], p)
                                      for p in self.providers):
            return False
        if self.events and not any(fnmatch.fnmatchcase(view["event"], g)
                                   or fnmatch.fnmatchcase(str(view.get("n")), g)
                                   for g in self.events):
            return False
        if self.level is not None:
            level = view.get("level")
            if not isinstance(level, int) or level > self.level:
                return False
        if self.keyword is not None:
            keyword = _number(view.get("keyword", 0))
            if not isinstance(keyword, int) or not keyword & self.keyword:
                return False
        if self.comms and "comm" not in view and self._file is not None:
            view["comm"] = self._file.session.comm(sample.tid)
        return self.expr is None or self.expr(view)
