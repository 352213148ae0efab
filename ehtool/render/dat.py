"""JSON objects for bare EventHeader events (a ``.dat`` capture, ``write --dry-run
--decode``): ``{ "n": "Provider:Event", <fields>, "meta": { level, keyword... } }``
with no sample meta (time, cpu, pid)."""

from __future__ import annotations

from ehtool.render.eventheader import decoder_for
from ehtool.render.style import JsonStyle
from ehtool.values.text import hex_bytes, text_json


class EventObjects:
    """Formats ``(tracepoint name, event bytes)`` pairs in one style."""

    def __init__(self, style: JsonStyle, fields_key: str | None = None,
                 file: str | None = None) -> None:
        """``file``: the input's name, the last meta member (JSON Lines' ``file``)."""
        s = self.style = style
        self._decoder = decoder_for(style)  # (the process's, shared with perf.data inputs)
        self._head = b"{" + s.first + b'"n"' + s.colon
        self._meta_key = s.sep + b'"meta"' + s.colon
        self._raw_key = s.sep + b'"raw"' + s.colon
        self._fields_key = (None if fields_key is None
                            else text_json(fields_key))
        self._file = b"" if file is None else (
            s.sep + b'"file"' + s.colon + text_json(file))

    def _nest(self, members: bytes) -> bytes:
        return members if self._fields_key is None else self.style.nest(self._fields_key,
                                                                        members)

    def event(self, name: str, data: bytes) -> bytes | None:
        """The event's object; None when ``name`` is no EventHeader tracepoint name.
        Raises ValueError for a malformed event (:meth:`raw` shows it)."""
        ev = self._decoder.decode(name, data, 0)
        if ev is None:
            return None
        return self._head + ev.name_json + self._nest(ev.fields) + self._meta(ev.meta)

    def raw(self, name: str, data: bytes) -> bytes:
        """A malformed event as its bytes (``"raw"``, as a tracepoint without a format)."""
        name_json = text_json(name)
        return (self._head + name_json + self._nest(self._raw_key + hex_bytes(data))
                + self._meta(b""))

    def _meta(self, members: bytes) -> bytes:
        """The meta object of ``members`` (each after a separator), and the event's end."""
        s = self.style
        members = (members + self._file)[len(s.sep):]
        return self._meta_key + (b"{" + s.first + members + s.close_obj if members
                                 else s.empty_obj) + s.close_obj
