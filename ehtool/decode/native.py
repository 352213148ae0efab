"""The C programs of ``ehtool decode``'s filters (``_speedups.Program``, run by
``_speedups.Filter``): for the events of one EventHeader EventInfo or one tracefs event,
where the value of each name of the expression comes from (a constant of the event, the
sample, a field read in place) and the expression's tree as nodes. Where the C code
cannot answer as the Python path does (names through structs, ``comm``, values it does
not read), there is no program and
:meth:`ehtool.decode.filters.Selection.select` decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ehtool.decode.expression import Filter, Node, constant
from ehtool.eventheader.grammar import FieldDef
from ehtool.eventheader.kinds import FIXED_SIZES, UNIT_SIZES, fixed_kind, string_kind
from ehtool.formats.tracefs_format import (
    FIXED,
    HEX,
    SCALAR,
    SIGNED,
    STRING,
    UNSIGNED,
    FieldFormat,
)
from ehtool.perfdata.records import Sample
from ehtool.speedups import (
    CMP_BITS,
    CMP_GLOB,
    N_AND,
    N_CMP,
    N_NAME,
    N_NOT,
    N_OR,
    RD_ARRAY,
    RD_FIXED,
    RD_LATIN1,
    RD_UTF8,
    SRC_COMM,
    SRC_CONST,
    SRC_FIELD,
    SRC_MISSING,
    SRC_RECORD,
    SRC_SAMPLE,
)

#: where the sample meta the C code reads is in a Sample
SAMPLE_INDEX = {k: Sample._fields.index(k) for k in ("time", "cpu", "pid", "tid")}
#: Python's Py_LT..Py_GE, and ``&``, ``~``
_OPS = {"<": 0, "<=": 1, "==": 2, "!=": 3, ">": 4, ">=": 5, "&": CMP_BITS, "~": CMP_GLOB}
#: the string kinds it reads
_STRING_READS = {"utf8": RD_UTF8, "latin1": RD_LATIN1}
_MISSING = (SRC_MISSING, None)
_PROGRAM_SLOTS = 32  # (the C Program's limit)

#: a name's source: (SRC_*, ...) as the C Program's slots have it, without ``found``;
#: None: the Python path
Source = tuple | None


class _Unsupported(Exception):
    """The C nodes cannot say this (an operator they do not know)."""


def nodes(tree: Node, slot: Callable[[str], int]) -> list[tuple]:
    """The C nodes of an expression tree (children first, the root last)."""
    out: list[tuple] = []

    def add(node: Node) -> int:
        kind = node[0]
        if kind in ("or", "and"):
            a, b = add(node[1]), add(node[2])
            out.append((N_OR if kind == "or" else N_AND, a, b))
        elif kind == "not":
            out.append((N_NOT, add(node[1])))
        elif kind == "name":
            out.append((N_NAME, slot(node[1])))
        else:
            _, name, op, value = node
            if op not in _OPS:
                raise _Unsupported(op)
            out.append((N_CMP, slot(name), _OPS[op], constant(op, value)))
        return len(out) - 1

    add(tree)
    return out


def program(speedups: Any, expr: Filter, names: tuple[str, ...],
            source: Callable[[str], Source], plan: Any = None,
            marks: tuple[int, ...] = ()) -> Any:
    """The Program of ``expr`` whose names' values come from ``source(base name)``
    (``names``: the expression's, in the order of the Filter's ``found``), or None."""
    if len(names) > _PROGRAM_SLOTS:
        return None
    slots, index = [], {}
    for i, name in enumerate(names):
        src = source(name.split(";", 1)[0])
        if src is None:
            return None
        index[name] = len(slots)
        slots.append((i, *src))
    if all(s[1] in (SRC_MISSING, SRC_CONST) for s in slots):  # one answer: Python's
        view: dict[str, Any] = {}
        for name, s in zip(names, slots, strict=True):
            base = name.split(";", 1)[0]
            if s[1] == SRC_CONST:
                if base.startswith("meta."):
                    view.setdefault("meta", {})[base[5:]] = s[2]
                else:
                    view[base] = s[2]
        return speedups.Program(plan, marks, tuple(slots), (),
                                int(bool(expr.predicate(view))))
    try:
        tree = nodes(expr.tree, index.__getitem__)
    except _Unsupported:
        return None
    return speedups.Program(plan, marks, tuple(slots), tuple(tree), -1)


def decision(speedups: Any, keep: bool, plan: Any = None) -> Any:
    """The Program that keeps every event (that its plan's walk accepts), or none."""
    return speedups.Program(plan, (), (), (), int(keep))


def _meta_source(key: str, meta: dict[str, Any]) -> Source:
    """Meta ``key``: the sample's, or a constant of ``meta`` (None for comm, which the
    session knows, and for names through structs)."""
    if "." in key or key == "comm":
        return None
    if key in SAMPLE_INDEX:
        return SRC_SAMPLE, SAMPLE_INDEX[key]
    return (SRC_CONST, meta[key]) if key in meta else _MISSING


def sample_sources(names: Iterable[str], comms: dict[int, str]) -> dict[str, Source]:
    """The sources of ``names`` (base names) in an expression on sample meta alone, as
    ``Selection.prefilter``'s view has them for every event: cpu, pid, tid, time and the
    thread's name (``comms``: the session's live tid -> name dict), also as meta.KEY."""
    found: dict[str, Source] = {}
    for base in names:
        key = base[5:] if base.startswith("meta.") else base
        if key == "comm":
            found[base] = SRC_COMM, comms, SAMPLE_INDEX["tid"]
        else:
            found[base] = (SRC_SAMPLE, SAMPLE_INDEX[key]) if key in SAMPLE_INDEX else _MISSING
    return found


def eventheader_sources(info: Any, little: bool, meta: dict[str, Any],
                        names: Iterable[str]) -> tuple[dict[str, Source], tuple[int, ...]]:
    """The sources of ``names`` (base names) for the events of an EventInfo whose view is
    ``Selection._eventheader_view_maker``'s: n/provider/event, then the first top-level
    field of that name, then sample meta, then ``meta`` (the header's) -- and the marks
    (op indices of the fields read, ascending) of its plan (``little``: its byte order)."""
    plan = info.plan
    heads = {"n": f"{info.provider}:{info.event_name}", "provider": info.provider,
             "event": info.event_name}
    wanted: dict[str, tuple[int, int] | None] = {}  # name -> (op index, read) or None
    found: dict[str, Source] = {}
    for base in names:
        if base == "meta":
            found[base] = None
        elif base.startswith("meta."):
            found[base] = _meta_source(base[5:], meta)
        elif "." in base:
            found[base] = None
        elif base in heads:
            found[base] = (SRC_CONST, heads[base])
        else:
            k = _first(plan.fields, base.encode("utf-8", "surrogateescape"))
            if k is not None:
                read = _field_read(plan.fields[k], little)
                op = plan.starts[k] if k < len(plan.starts) else -1
                wanted[base] = None if read is None or op < 0 else (op, read)
                continue
            found[base] = _meta_source(base, meta)
    marks = tuple(sorted({w[0] for w in wanted.values() if w is not None}))
    for base, w in wanted.items():
        found[base] = None if w is None else (SRC_FIELD, marks.index(w[0]), w[1])
    return found, marks


def _first(defs: list[FieldDef], name: bytes) -> int | None:
    """The index of the first definition named ``name``, or None."""
    for k, d in enumerate(defs):
        if d.name == name:
            return k
    return None


def _field_read(d: FieldDef, little: bool) -> int | None:
    """How the C code reads a top-level field's typed value, or None when it does not."""
    if d.error is not None:
        return None
    size = FIXED_SIZES.get(d.encoding)
    if size is not None:
        if size > 8 or not fixed_kind(size, d.format, little).c_reads:
            return None
        return RD_FIXED if d.array is None else RD_ARRAY
    if d.array is not None or UNIT_SIZES.get(d.encoding) != 1:
        return None
    return _STRING_READS.get(string_kind(d.encoding, d.format, little).name)


def tracefs_sources(fixed: dict[str, str], fields: list[FieldFormat], big_endian: bool,
                    names: Iterable[str]) -> dict[str, Source]:
    """The sources of ``names`` (base names) for a tracefs event whose view is
    ``Selection._view_maker``'s: n/provider/event, then the first field of that name,
    then sample meta (its only meta)."""
    found: dict[str, Source] = {}
    for base in names:
        if base == "meta" or ("." in base and not base.startswith("meta.")):
            found[base] = None
        elif base.startswith("meta."):
            found[base] = _meta_source(base[5:], {})
        elif base in fixed:
            found[base] = SRC_CONST, fixed[base]
        else:
            f = next((f for f in fields if f.name == base), None)
            found[base] = _meta_source(base, {}) if f is None else _record(f, big_endian)
    return found


def _record(f: FieldFormat, big_endian: bool) -> Source:
    """A tracefs scalar integer or fixed char array as ``field_value`` reads it, or
    None."""
    if f.array == FIXED and f.format == STRING and f.size > 0:  # element size 0: text
        return SRC_RECORD, f.offset, f.size, 0, 0, int(big_endian)
    if f.array != SCALAR or f.format not in (UNSIGNED, SIGNED, HEX) or f.size < 1 \
            or f.element_size not in (1, 2, 4, 8):
        return None
    return (SRC_RECORD, f.offset, f.size, f.element_size, int(f.format == SIGNED),
            int(big_endian))
