"""What an SQL statement reads of the view ``events`` (``ehtool query``), from DuckDB's own
parser: which columns to decode, and how many times the statement scans it.

A statement DuckDB serializes (``json_serialize_sql``: SELECT statements, including
DESCRIBE and SUMMARIZE) is read from its syntax tree: a star or ``COLUMNS(...)``, a
positional reference, a NATURAL join, a PIVOT/UNPIVOT, ``events`` or one of its aliases
as a value (``select e from events e``) or with renamed columns (``events e(a, b)``)
need every column; otherwise the columns are the column references and USING columns
that name one of them (case-insensitive, anywhere in the statement: a name another
table also has only costs that column). Text in string literals does not count.
Anything the tree does not show (another statement type, a view or macro of the
session, ``query()``/``query_table()``) reads every column, an unknown number of times;
such a statement that names neither ``events`` nor a query function, while the session
has no view or macro and the statement is no EXECUTE, reads nothing of it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ehtool.analysis.arrow import require

#: table functions that read a table named in a string
_QUERY_FUNCTIONS = frozenset(("query", "query_table"))


@dataclass(frozen=True)
class Reads:
    """``columns``: the columns of ``events`` to decode, in schema order (None: all; a
    statement that needs none gets one cheap column for the row count). ``scans``: how
    many times the statement names ``events`` as a table (None: unknown)."""

    columns: list[str] | None
    scans: int | None


def reads(con: Any, sql: str, table: str = "events") -> Reads:
    """What the single statement ``sql`` reads of ``table`` on connection ``con`` (its
    views and macros count)."""
    from ehtool.analysis.arrow import schema

    names = schema().names
    tree = _tree(con, sql)
    user = _user_objects(con) - {table.lower()}
    if tree is None:
        if (user or re.search(rf"\b{re.escape(table)}\b|query", sql, re.IGNORECASE)
                or re.match(r"\s*execute\b", sql, re.IGNORECASE)):
            return Reads(None, None)
        return Reads([names[_CHEAP]], 0)
    walk = _Walk(table.lower(), {n.lower() for n in names}, user)
    walk.visit(tree)
    if walk.unknown:
        return Reads(None, None)
    if walk.everything or walk.values & walk.tables:
        return Reads(None, walk.scans)
    wanted = walk.columns
    return Reads([n for n in names if n.lower() in wanted] or [names[_CHEAP]], walk.scans)


#: index of the column kept when none is needed (cpu: a fixed-size integer)
_CHEAP = 3


def _tree(con: Any, sql: str) -> Any:
    """DuckDB's syntax tree of ``sql`` as JSON, or None when it cannot serialize it."""
    duckdb = require("duckdb")
    try:
        row = con.execute("select json_serialize_sql(?::varchar)", [sql]).fetchone()
    except duckdb.Error:  # a DuckDB without it, an interrupt: not known
        return None
    try:
        tree = json.loads(row[0])
    except RecursionError:  # nested deeper than Python's JSON reader goes: not known
        return None
    if tree.get("error") or len(tree.get("statements", ())) != 1:
        return None
    return tree["statements"][0]


def _user_objects(con: Any) -> set[str]:
    """Lower-case names of the session's own views and macros (any may read events)."""
    duckdb = require("duckdb")
    try:
        rows = con.execute(
            "select lower(view_name) from duckdb_views() where not internal union all "
            "select lower(function_name) from duckdb_functions() where not internal and "
            "function_type in ('macro', 'table_macro')").fetchall()
    except duckdb.Error:
        return {"?"}  # unknown: every statement reads every column
    return {name for (name,) in rows}


class _Walk:
    """One pass over a syntax tree (nested dicts and lists)."""

    def __init__(self, table: str, names: set[str], user: set[str]) -> None:
        self.table = table
        self.names = names
        self.user = user
        self.tables = {table}  # the table's name and its aliases
        self.columns: set[str] = set()
        self.values: set[str] = set()  # one-part column references (a table as a value?)
        self.scans = 0
        self.everything = False
        self.unknown = False

    def visit(self, tree: Any) -> None:
        todo = [tree]  # (not recursive: a tree can be deeper than Python's stack)
        while todo:
            node = todo.pop()
            if isinstance(node, list):
                todo.extend(node)
            elif isinstance(node, dict):
                self.node(node)
                todo.extend(v for v in node.values() if isinstance(v, dict | list))

    def node(self, node: dict) -> None:
        kind = node.get("class") or node.get("type")
        if kind == "COLUMN_REF":
            parts = [p.lower() for p in node.get("column_names", ())]
            self.columns.update(p for p in parts if p in self.names)
            if len(parts) == 1:
                self.values.add(parts[0])
            elif not any(p in self.names for p in parts):
                self.values.update(parts)  # events.x: x no column, the table?
        elif kind in ("STAR", "POSITIONAL_REFERENCE", "PIVOT"):
            self.everything = True
        elif kind == "BASE_TABLE":
            name = str(node.get("table_name", "")).lower()
            if name == self.table:
                self.scans += 1
                if node.get("alias"):
                    self.tables.add(node["alias"].lower())
                if node.get("column_name_alias"):
                    self.everything = True  # events e(a, b): columns renamed
            elif name in self.user:
                self.unknown = True
        elif kind == "JOIN":
            self.columns.update(c.lower() for c in node.get("using_columns") or ())
            if node.get("ref_type") == "NATURAL":
                self.everything = True
        elif kind == "FUNCTION":
            name = str(node.get("function_name", "")).lower()
            if name in _QUERY_FUNCTIONS or name in self.user:
                self.unknown = True
