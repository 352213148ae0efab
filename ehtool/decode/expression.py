"""The ``--filter`` expression language of ``ehtool decode``, and the view of an event
it is evaluated on.

Expressions are ftrace-like::

    level <= 3 && Field2 > 40
    comm ~ "nginx*" || !(pid == 0)
    keyword & 0x4 && n == "MyProvider:Started"

Operators: ``== != < <= > >=``, ``~`` (glob match), ``&`` (any bit set),
``&& || !`` and parentheses. Values are integers (decimal or 0x hex), floats,
double-quoted strings, ``true``/``false``/``null``. An identifier names a field
of the event (a name with a ``;tag=`` suffix matches its base name; struct
members as ``outer.inner``; any other name between backquotes, e.g. `1/3` or
`a b`, a backslash before a backquote or backslash in it: a top-level field of that name
first), else a meta key (time, cpu, pid, tid, comm, id,
version, level, keyword, opcode, tag, activity, relatedActivity), or ``n``,
``provider``, ``event``; ``meta.cpu`` names the meta key even where a field has
that name. Every meta key is visible (``comm`` too) whatever ``--meta`` prints.
Hex strings as perf-decode prints them (``"0x950"``) compare as numbers; a value
that decode shows as text but is a number (an errno, a hex value) compares with a
number as its number and with another string as its text (``err == 2``, ``err ==
"ENOENT(2)"``, ``err ~ "ENOENT*"``, ``ptr ~ "0xFFFF*"``: upper-case digits). A
comparison with a missing identifier is false; a name that no event of the input
has is reported at the end (``ehtool.decode.filters.Selection.unknown_names``).

Filters evaluate on the typed event (``ehtool.events``): field values as Python
values, shown as the JSON shows them (addresses, UUIDs and times as strings,
binary data as hex bytes). An expression that names only ``meta.cpu``, ``meta.pid``,
``meta.tid``, ``meta.time`` and ``meta.comm`` is checked on the sample itself, before
anything is decoded (a bare ``pid`` may be a field: each event decides).
"""

from __future__ import annotations

import fnmatch
import operator
import re
from collections.abc import Callable
from typing import Any

from ehtool.eventheader.kinds import time_text
from ehtool.values.shown import ShownInt

Predicate = Callable[[dict[str, Any]], bool]
#: the parsed expression: ("or"|"and", a, b), ("not", a), ("cmp", name, op, value) or
#: ("name", name) (a bare name: its truth); the predicate and the C program both come
#: from it (:func:`predicate`, ``ehtool.decode.native``)
Node = tuple
MISSING = object()
_TOKEN = re.compile(r"""
    (?P<ws>\s+) |
    (?P<num>-?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)) |
    (?P<str>"(?:[^"\\]|\\.)*") |
    (?P<op>&&|\|\||==|!=|<=|>=|[<>~&!()]) |
    (?P<ident>[A-Za-z_][A-Za-z0-9_.]*(?:;tag=(?:0[xX])?[0-9a-fA-F]+)?) |
    (?P<quoted>`(?:[^`\\]|\\.)*`)
""", re.VERBOSE)


class FilterSyntaxError(ValueError):
    """A bad ``--filter`` expression; the message points at the column."""

    def __init__(self, text: str, column: int, message: str) -> None:
        super().__init__(f"--filter: {message} at column {column + 1}\n  {text}\n"
                         f"  {' ' * column}^")


#: names an expression may use that are checked on the sample, before decoding
SAMPLE_NAMES = frozenset(("cpu", "pid", "tid", "time", "comm"))


class Filter:
    """A compiled expression: ``filter(view) -> bool``, the names it uses and its tree."""

    def __init__(self, tree: Node, names: frozenset[str]) -> None:
        self.tree = tree
        self.predicate = predicate(tree)
        self.names = names
        #: True when only sample meta is named, as ``meta.cpu``, ``meta.pid``... (a bare
        #: ``pid`` is an event's field where it has one: the event decides)
        self.on_sample = all(n.startswith("meta.") and n[5:] in SAMPLE_NAMES for n in names)

    def __call__(self, view: dict[str, Any]) -> bool:
        return self.predicate(view)


def compile_filter(text: str) -> Filter:
    """Compile an expression into a predicate over an event view (see ``event_view``)."""
    try:
        parser = _Parser(text)
        return Filter(parser.parse(), frozenset(parser.names))
    except RecursionError:  # (parentheses or ! hundreds deep: a chain of || is not)
        raise FilterSyntaxError(text, 0, "the expression nests too deep") from None


def predicate(node: Node) -> Predicate:
    """The Python predicate of an expression tree (the reference)."""
    kind = node[0]
    if kind == "or":
        a, b = predicate(node[1]), predicate(node[2])
        return lambda v: a(v) or b(v)
    if kind == "and":
        a, b = predicate(node[1]), predicate(node[2])
        return lambda v: a(v) and b(v)
    if kind == "not":
        inner = predicate(node[1])
        return lambda v: not inner(v)
    if kind == "name":
        name = node[1]
        return lambda v: _truthy(lookup(v, name))
    _, name, op, value = node
    return _comparison(_getter(name), op, value)


def meta_name(name: str) -> str:
    """The meta key ``meta.KEY`` names (other names as they are)."""
    return name[5:] if name.startswith("meta.") else name


def event_view(ev: Any, keys: frozenset[str] | None = None,
               meta_keys: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A typed event (``ehtool.events.Event``) as filters see it: ``n``, fields by name,
    every meta key (``meta.x`` too), ``provider``/``event``. With ``keys``, only those
    top-level names (and the ``meta_keys`` under ``meta``), for speed."""
    if keys is not None:
        return _some_view(ev, keys, meta_keys)
    meta = {k: plain(v) for k, v in ev.meta.items() if v is not None}
    if "related_activity" in meta:
        meta["relatedActivity"] = meta["related_activity"]
    if ev.eventheader:
        meta.update(provider=ev.provider, event=ev.event)
    view: dict[str, Any] = {"n": ev.name, "provider": ev.provider, "event": ev.event}
    for name, value in ev.fields:
        view.setdefault(name, plain(value))
    for key, value in meta.items():
        view.setdefault(key, value)
    view["meta"] = meta
    return view


def _meta_value(ev: Any, key: str) -> Any:
    """meta ``key`` of a typed event as :func:`event_view` has it (None: absent)."""
    if key in ("provider", "event"):
        return getattr(ev, key) if ev.eventheader else None
    value = ev.meta.get("related_activity" if key == "relatedActivity" else key)
    return None if value is None else plain(value)


def _some_view(ev: Any, keys: frozenset[str], meta_keys: frozenset[str]) -> dict[str, Any]:
    view: dict[str, Any] = {}
    for key in ("n", "provider", "event"):
        if key in keys:
            view[key] = ev.name if key == "n" else getattr(ev, key)
    for name, value in ev.fields:
        if name in keys and name not in view:
            view[name] = plain(value)
    for key in keys:
        if key not in view:
            value = _meta_value(ev, key)
            if value is not None:
                view[key] = value
    if meta_keys:
        meta = {}
        for key in meta_keys:
            value = _meta_value(ev, key)
            if value is not None:
                meta[key] = value
        view["meta"] = meta
    return view


#: types :func:`plain` gives back as they are (subclasses take the long way)
_PLAIN = frozenset((int, str, float, bool, type(None)))


def plain(value: Any) -> Any:
    """A typed value as the JSON shows it, for comparisons."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, tuple):  # Fields: a struct
        out: dict[str, Any] = {}
        for name, item in value:
            out.setdefault(name, plain(item))
        return out
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, bytes):
        return " ".join(f"{b:02x}" for b in value)
    if hasattr(value, "isoformat"):
        return time_text(value)
    return str(value)  # uuid.UUID, ipaddress


def lookup(view: dict[str, Any], name: str) -> Any:
    name = name.split(";", 1)[0]  # field names carry no tag in the typed view
    if name.startswith("meta."):
        return view.get("meta", {}).get(name[5:], MISSING)
    if name in view:
        return view[name]
    head, _, rest = name.partition(".")
    value = view.get(head, MISSING)
    while rest and isinstance(value, dict):
        head, _, rest = rest.partition(".")
        value = value.get(head, MISSING)
    return MISSING if rest else value


_EMPTY: dict[str, Any] = {}
_ORDER = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
          ">": operator.gt, ">=": operator.ge}


def _getter(name: str) -> Callable[[dict[str, Any]], Any]:
    """``lookup(view, name)`` specialised for one name (the usual ones are one get)."""
    base = name.split(";", 1)[0]
    if base.startswith("meta."):
        key = base[5:]
        return lambda view: view.get("meta", _EMPTY).get(key, MISSING)
    if "." not in base:
        return lambda view: view.get(base, MISSING)
    return lambda view: lookup(view, base)


def _comparison(get: Callable[[dict[str, Any]], Any], op: str, value: Any) -> Predicate:
    """``get(view) OP value`` as :func:`_compare` says, with the operator chosen once."""
    right = constant(op, value)
    if op == "~":
        return lambda view: _glob(get(view), right)
    if op == "&":
        return lambda view: _compare(op, get(view), value)
    test = _ORDER[op]
    text = type(right) is str  # an errno, a hex value: as its text

    def compare(view: dict[str, Any]) -> bool:
        left = get(view)
        if left is MISSING:
            return False
        if type(left) is str:
            left = _number(left)
        elif text and isinstance(left, ShownInt):
            left = str(left)
        try:
            return test(left, right)
        except TypeError:
            return False

    return compare


def constant(op: str, value: Any) -> Any:
    """The right-hand value ``OP value`` compares with: hex strings as numbers; for
    ``~``, the glob's test (:func:`glob_matcher`)."""
    return glob_matcher(value) if op == "~" else _number(value)


def glob_matcher(pattern: Any) -> Callable[[str], Any]:
    """``~ pattern``'s test: ``test(text)`` is a match (not None) when ``text`` matches
    the glob as ``fnmatch.fnmatchcase`` says (its documented regular expression)."""
    return re.compile(fnmatch.translate(str(pattern))).match


def _glob(left: Any, test: Callable[[str], Any]) -> bool:
    """``left ~ pattern``: only text matches (an errno's, a hex value's too)."""
    if isinstance(left, ShownInt):
        left = str(left)
    return isinstance(left, str) and test(left) is not None


def _number(value: Any) -> Any:
    if isinstance(value, str) and value[:2] in ("0x", "0X"):
        try:
            return int(value, 16)
        except ValueError:
            return value
    return value


def _compare(op: str, left: Any, right: Any) -> bool:
    if left is MISSING:
        return False
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
        self.names: set[str] = set()

    def parse(self) -> Node:
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

    def _or(self) -> Node:
        terms = [self._and()]
        while (tok := self._peek()) and tok[1] == "||":
            self.i += 1
            terms.append(self._and())
        return _balanced("or", terms)

    def _and(self) -> Node:
        terms = [self._not()]
        while (tok := self._peek()) and tok[1] == "&&":
            self.i += 1
            terms.append(self._not())
        return _balanced("and", terms)

    def _not(self) -> Node:
        tok = self._peek()
        if tok and tok[1] == "!":
            self.i += 1
            return ("not", self._not())
        if tok and tok[1] == "(":
            self.i += 1
            inner = self._or()
            close = self._peek()
            if not close or close[1] != ")":
                raise self._error("')'")
            self.i += 1
            return inner
        return self._comparison()

    def _comparison(self) -> Node:
        tok = self._peek()
        if not tok or tok[0] not in ("ident", "quoted"):
            raise self._error("a field or meta name")
        self.i += 1
        name = tok[1] if tok[0] == "ident" else re.sub(r"\\(.)", r"\1", tok[1][1:-1])
        if not name:
            raise FilterSyntaxError(self.text, tok[2], "an empty name")
        self.names.add(name)
        op = self._peek()
        if not op or op[1] not in ("==", "!=", "<", "<=", ">", ">=", "~", "&"):
            if op is None or op[1] in ("&&", "||", ")"):
                return ("name", name)
            raise self._error("a comparison operator after " + repr(name))
        self.i += 1
        at = self._peek()
        value = self._value(op[1])
        number = _number(value)
        if name == "meta.time" and (isinstance(number, str)
                                    or isinstance(number, float) and not number.is_integer()):
            raise FilterSyntaxError(self.text, at[2] if at else len(self.text),
                                    "meta.time is the session clock in nanoseconds (an "
                                    "integer, query's session_time, whatever --time shows); "
                                    "--since/--until take seconds or UTC times")
        return ("cmp", name, op[1], value)

    def _value(self, after: str) -> Any:
        tok = self._peek()
        if tok is None or tok[0] not in ("num", "str", "ident"):
            raise self._error(f"a value after {after!r}")
        self.i += 1
        kind, text = tok[0], tok[1]
        if kind == "str":
            import json

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


def _balanced(op: str, terms: list[Node]) -> Node:
    """``a op b op c ...`` as a tree of ``log2(len(terms))`` levels, the terms in their
    order (a chain of a thousand ``||`` made a tree, and a predicate, that deep)."""
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    return (op, _balanced(op, terms[:half]), _balanced(op, terms[half:]))


def _truthy(value: Any) -> bool:
    return value is not MISSING and bool(_number(value))
