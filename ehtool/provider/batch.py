"""``ehtool write --batch``: events from JSON Lines.

One JSON object a line (see ``ehtool write --help``). Lines shaped like one
seen before go through a compiled plan (:mod:`ehtool.eventheader.encode_plans`);
the rest through :func:`batch_event`, which defines the result and the errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ehtool.errors import EXIT_DISABLED, EXIT_INPUT, InputError
from ehtool.eventheader import names
from ehtool.eventheader.encode_plans import MISSES, EventPlan, compile_event
from ehtool.eventheader.encoder import (
    EncodeError,
    Event,
    Field,
    activity_extension,
    encode,
    parse_type,
)
from ehtool.provider.writer import EventWriter, WriteDefaults, event_of


def write_batch(writer: EventWriter, path: str | None, defaults: WriteDefaults, *,
                strict: bool = False, require_enabled: bool = False,
                warn: Callable[[str], None] | None = None) -> int:
    """Write every JSON line of ``path`` (stdin when None); return the exit status."""
    import sys

    warn = warn or (lambda message: None)
    source = path or "stdin"
    loads = _json_loads()
    plans = _BatchPlans(defaults)
    lookup, default_ext = plans.plans, plans.activity
    dry_write = writer.out.write if writer.dry_run and writer.out is not None else None
    send = writer.send
    try:
        stream = open(path, "rb") if path else sys.stdin.buffer  # noqa: SIM115
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", path) from None
    bad = disabled = written = 0
    # dry-run lines go out in chunks (stdout may be unbuffered: PYTHONUNBUFFERED),
    # one by one when a person types the input
    pending: list[str] = []
    chunk = 1 if stream.isatty() else 256
    try:
        for number, line in enumerate(stream, 1):
            try:
                try:
                    obj = loads(line)
                except ValueError as exc:  # (the JSON parser's words, said as such)
                    raise ValueError(f"not a JSON line ({exc})") from None
                # the hot path: a line shaped like one seen before (see _BatchPlans)
                try:
                    fields = obj.pop("fields")
                    try:
                        if "activity" in obj or "related_activity" in obj:
                            raise LookupError
                        names_, types_, values = zip(*fields, strict=True)
                        tracepoint, plan = lookup[(tuple(obj.items()),
                                                   tuple(map(type, obj.values())),
                                                   names_, types_)]
                        data = plan.encode(values, default_ext)
                    except MISSES:
                        obj["fields"] = fields
                        raise
                except MISSES:
                    event = plans.general(obj) if type(obj) is dict else None
                    if event is None:
                        event = batch_event(obj, defaults, f"{source}:{number}")
                    tracepoint, data = event
            except (ValueError, EncodeError, names.InvalidNameError) as exc:
                if not line.strip():
                    continue
                message = str(exc) if str(exc).startswith(source) else (
                    f"{source}:{number}: {exc}")
                if strict:
                    raise InputError(message) from None
                warn(f"{message} (line skipped)")
                bad += 1
                continue
            if dry_write is not None:
                pending.append(f"{tracepoint} {data.hex()}\n")
                written += 1
                if len(pending) >= chunk:
                    dry_write("".join(pending))
                    pending.clear()
            elif not send(tracepoint, data):
                disabled += 1
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path=source) from None
    finally:
        if pending:
            dry_write("".join(pending))
        writer.written += written
        if path:
            stream.close()
    if bad:
        return EXIT_INPUT
    return EXIT_DISABLED if require_enabled and disabled else 0


def batch_event(obj: Any, defaults: WriteDefaults, where: str) -> tuple[str, bytes]:
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object")
    unknown = set(obj) - {"provider", "event", "level", "keyword", "opcode", "id",
                          "version", "tag", "activity", "related_activity", "group",
                          "fields"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {', '.join(sorted(unknown))}")
    provider, event_name = obj.get("provider"), obj.get("event")
    if not isinstance(provider, str) or not isinstance(event_name, str):
        raise ValueError(f"{where}: 'provider' and 'event' (strings) are required")
    d = defaults.replace(**{k: _number(obj[k], k, where) if k in _NUMERIC else obj[k]
                             for k in obj if k not in ("provider", "event", "fields")})
    name = names.build(provider, d.level, d.keyword, d.group)
    fields = fields_from_json(obj.get("fields", []), where)
    return str(name), encode(event_of(event_name, fields, d))


def fields_from_json(items: Any, where: str) -> list[Field]:
    """Batch ``fields``: ``[name, type, value]`` triples or ``{"name", "type", "value", "tag"}``."""
    if not isinstance(items, list):
        raise ValueError(f"{where}: 'fields' must be a list")
    out = []
    for item in items:
        if isinstance(item, dict):
            name, type_, value, tag = (item.get("name"), item.get("type", "str"),
                                       item.get("value"), item.get("tag", 0))
        elif isinstance(item, list) and len(item) in (2, 3):
            name, type_ = item[0], item[1] if len(item) == 3 else "str"
            value, tag = item[-1], 0
        else:
            raise ValueError(f"{where}: a field is [name, type, value] or an object, "
                             f"not {item!r}")
        if not isinstance(name, str) or not isinstance(type_, str):
            raise ValueError(f"{where}: field name and type must be strings in {item!r}")
        ftype, count = parse_type(type_)
        if ftype.name == "struct":
            if count is None:
                value = fields_from_json(value, f"{where}: struct {name!r}")
            else:
                value = [fields_from_json(v, f"{where}: struct {name!r}") for v in value]
        out.append(Field(name, type_, value, int(tag)))
    return out


_NUMERIC = frozenset(("level", "keyword", "opcode", "id", "version", "tag"))


def _number(value: Any, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"{where}: {key!r} must be a number")
    try:
        return value if isinstance(value, int) else int(value, 0)
    except ValueError:
        raise ValueError(f"{where}: {key!r} must be a number, not {value!r}") from None


def _json_loads() -> Callable[[bytes], Any]:
    """orjson's loads when installed (3x the stdlib's rate here), else json.loads."""
    try:
        import orjson
    except ImportError:
        import json

        return json.loads
    return orjson.loads


_MISSING = object()
_HEADER_KEYS = frozenset(("provider", "event", "level", "keyword", "opcode", "id", "version",
                          "tag", "group"))


class _BatchPlans:
    """Batch lines through compiled :class:`EventPlan`s, one per distinct line shape.

    The shape is the header keys with their values (and value types: ``true`` is
    not ``1``) and each field's name and type. ``encode`` returns None for what it
    does not handle (structs, object-form fields, anything invalid): those lines go
    through ``EventWriter._batch_event``, which defines the result and the errors.
    """

    MAX_PLANS = 4096

    def __init__(self, defaults: WriteDefaults) -> None:
        self.defaults = defaults
        self.plans: dict[Any, tuple[str, EventPlan] | None] = {}
        #: the activity extension of lines without their own ids (None: invalid defaults)
        try:
            self.activity: Any = activity_extension(defaults.activity, defaults.related_activity)
        except EncodeError:
            self.activity = None

    def general(self, obj: dict) -> tuple[str, bytes] | None:
        """(tracepoint, event bytes) through a plan (compiled when new), or None.

        ``obj`` is not changed; None sends the line to ``EventWriter._batch_event``.
        """
        head = dict(obj)
        fields = head.pop("fields", [])
        activity = head.pop("activity", self.defaults.activity)
        related = head.pop("related_activity", self.defaults.related_activity)
        if type(fields) is not list:
            return None
        try:
            ext = activity_extension(activity, related)
            if fields:
                names_, types_, values = zip(*fields, strict=True)
            else:
                names_ = types_ = values = ()
            key = (tuple(head.items()), tuple(map(type, head.values())), names_, types_)
            entry = self.plans[key] if key in self.plans else self._compile(head, fields, key)
            return None if entry is None else (entry[0], entry[1].encode(values, ext))
        except (TypeError, ValueError, EncodeError):
            return None

    def _compile(self, head: dict, fields: list, key: Any) -> tuple[str, EventPlan] | None:
        try:
            if not _HEADER_KEYS.issuperset(head) or not all(
                    type(f) is list and len(f) == 3 and type(f[0]) is str and type(f[1]) is str
                    for f in fields):
                raise ValueError
            provider, event_name = head.get("provider"), head.get("event")
            if type(provider) is not str or type(event_name) is not str:
                raise ValueError
            d = self.defaults.replace(**{k: _number(v, k, "") if k in _NUMERIC else v
                                          for k, v in head.items()
                                          if k not in ("provider", "event")})
            tracepoint = str(names.build(provider, d.level, d.keyword, d.group))
            plan = compile_event(Event(event_name, [Field(f[0], f[1], None) for f in fields],
                                       level=d.level, opcode=d.opcode, id=d.id,
                                       version=d.version, tag=d.tag))
        except (ValueError, TypeError, EncodeError, names.InvalidNameError):
            return None  # not cached: the general path reports the error
        entry = None if plan is None else (tracepoint, plan)
        if len(self.plans) >= self.MAX_PLANS:
            self.plans.clear()
        self.plans[key] = entry
        return entry
