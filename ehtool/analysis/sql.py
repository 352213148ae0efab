"""What an SQL statement reads of the view ``events`` (``ehtool query``), from DuckDB's own
parser: which columns to decode, and how many times the statement scans it.

A statement DuckDB serializes (``json_serialize_sql``: SELECT statements, including
DESCRIBE and SUMMARIZE), or the query of one that saves a query's result (``CREATE TABLE
... AS``, ``INSERT INTO ... SELECT``, ``COPY (...) TO``: found with DuckDB's tokenizer), is
read from its syntax tree: a star or ``COLUMNS(...)`` (but over the result of a PIVOT with
GROUP BY), a positional reference, a NATURAL join, an UNPIVOT or a PIVOT without GROUP
BY, ``events`` or one of its aliases
as a value (``select e from events e``) or with renamed columns (``events e(a, b)``)
need every column; otherwise the columns are the column references and USING columns
that name one of them (case-insensitive, anywhere in the statement: a name another
table also has only costs that column). Text in string literals does not count.
DuckDB's PIVOT statement, which it does not serialize, is read from its tokens
(:func:`pivot_reads`).
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

#: table functions that read a table named in a string (or in a serialized statement)
_QUERY_FUNCTIONS = frozenset(("query", "query_table", "json_execute_serialized_sql"))
#: functions and schemas that show the catalog (events' columns among it) as rows
_CATALOG_FUNCTIONS = ("duckdb_", "pragma_")
_CATALOG_SCHEMAS = frozenset(("information_schema", "pg_catalog"))


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
    inner = None
    if tree is None:
        inner = saved_query(sql)
        tree = None if inner is None else _tree(con, inner)
    user = _user_objects(con, table)
    if table.lower() in user:  # a view or macro of the session has the view's name
        return Reads(None, None)
    if tree is None:
        pivot = pivot_reads(inner or sql, table, names, bool(user))
        if pivot is not None:
            return pivot
        if (user or re.search(rf"\b{re.escape(table)}\b|query", sql, re.IGNORECASE)
                or re.match(r"\s*execute\b", sql, re.IGNORECASE)):
            return Reads(None, None)
        return Reads([names[_CHEAP]], 0)
    walk = _Walk(table.lower(), {n.lower() for n in names}, user)
    walk.visit(tree)
    if walk.recursive and walk.scans:
        walk.scans = max(walk.scans, 2)
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


def pivot_reads(sql: str, table: str, names: list[str], user: bool = False) -> Reads | None:
    """What DuckDB's PIVOT statement reads of ``table``, from its tokens (DuckDB has no
    syntax tree of it); None for any other statement, and for one that pivots something
    else. An ON entry without ``IN (values)`` has DuckDB find its values first: two
    scans. Only the plain form, ``PIVOT table [[AS] alias] ON ... [USING ...] GROUP BY
    ... [ORDER BY ...] [LIMIT ...]`` with no subquery, positional reference, star
    (but ``count(*)``), ``COLUMNS(...)`` or the table as a value, reads just the columns
    it names (any token that is a column's name: a superset); every other PIVOT of the
    table reads every column, and twice at most (its columns are held in a table), as
    does any statement with a PIVOT statement inside that names the table, a query
    function or (``user``) when the session has views or macros."""
    tokens = _tokens(sql)
    if tokens is None:
        return None
    texts = [text.strip('"') if kind == "identifier" else text for _, text, kind in tokens]
    words = [text if kind == "keyword" else "" for _, text, kind in tokens]
    if not {"pivot", "pivot_wider"} & set(words):
        return None
    if (words[0] not in ("pivot", "pivot_wider") or tokens[1:2] == [] or tokens[1][2] !=
            "identifier" or texts[1] != table.lower() or user):
        reached = user or any(text == table.lower() or text in _QUERY_FUNCTIONS
                              for text in texts)
        return Reads(None, 2) if reached else None
    k = 3 if words[2:3] == ["as"] else 2
    alias = texts[k] if k < len(tokens) and tokens[k][2] == "identifier" else None
    if alias is not None:
        k += 1
    if words[k:k + 1] != ["on"]:  # a join, renamed columns (e(a, b)): not the plain form
        return Reads(None, 2)
    rest, after = texts[k + 1:], words[k + 1:]
    # no subquery, join or table function: the table is scanned here alone
    alone = not (_NOT_ALONE & set(after) or any(
        (text in _QUERY_FUNCTIONS and rest[i + 1:i + 2] == ["("])
        or text.startswith(_CATALOG_FUNCTIONS) for i, text in enumerate(rest)))
    entries = _top_level(tokens[k + 1:], rest, after)
    scans = 1 if alone and all(_in_list(entry) for entry in entries) else 2
    values = {table.lower(), alias}  # the table as a value: every column
    named = alone and not any(
        text == "#" or (text == "*" and rest[i - 1:i + 2] != ["(", "*", ")"])
        or (text in values and rest[i + 1:i + 2] != ["."])
        or (text == "columns" and rest[i + 1:i + 2] == ["("]) for i, text in enumerate(rest))
    grouped = any(after[i:i + 2] == ["group", "by"] and after[i + 2:i + 3] != ["all"]
                  for i in range(len(after)))
    if not (named and grouped):
        return Reads(None, scans)
    found = set(rest)
    return Reads([n for n in names if n.lower() in found] or [names[_CHEAP]], scans)


#: keywords of a subquery or a join, after which a PIVOT does not scan its table alone
_NOT_ALONE = frozenset(("select", "from", "with", "table", "on", "join", "natural",
                        "positional", "asof", "lateral"))


def _top_level(tokens: list, texts: list[str], words: list[str]) -> list[list[str]]:
    """The ON list's entries (as texts) in the tokens after ON, up to the next clause."""
    entries: list[list[str]] = [[]]
    depth = 0
    for (_, _, kind), text, word in zip(tokens, texts, words, strict=True):
        if not depth and word in ("using", "group", "order", "limit", "offset"):
            break
        depth += {"(": 1, ")": -1}.get(text, 0) if kind == "operator" else 0
        if not depth and text == "," and kind == "operator":
            entries.append([])
        else:
            entries[-1].append(word or text)
    return entries


def _in_list(entry: list[str]) -> bool:
    """Whether an ON entry is ``column IN (...)`` (``alias.column`` too): its values are
    given."""
    column = 3 if entry[1:2] == ["."] else 1
    if entry[column:column + 2] != ["in", "("] or entry[-1] != ")":
        return False
    depth = 0
    for i, text in enumerate(entry[column + 1:], column + 1):
        depth += {"(": 1, ")": -1}.get(text, 0)
        if not depth:
            return i == len(entry) - 1  # (its parenthesis closes the entry)
    return False


def _tokens(sql: str) -> list[tuple[int, str, str]] | None:
    """DuckDB's tokens of ``sql`` but comments: ``(position, lower-case text, kind)``,
    kind one of keyword, identifier, operator, numeric_const, string_const; None when
    it cannot tokenize it."""
    duckdb = require("duckdb")
    try:
        found = duckdb.tokenize(sql)
    except Exception:  # noqa: BLE001 - whatever it refuses is not known
        return None
    ends = [pos for pos, _ in found[1:]] + [len(sql)]
    return [(pos, sql[pos:end].strip().lower(), str(kind).rsplit(".", 1)[-1])
            for (pos, kind), end in zip(found, ends, strict=True)
            if not str(kind).endswith("comment")]


def saved_query(sql: str) -> str | None:
    """The query whose result ``sql`` saves, when it is ``CREATE [OR REPLACE] [TEMP]
    TABLE name AS query``, ``INSERT [OR ...] INTO name [(columns)] [BY NAME] query`` or
    ``COPY (query) TO ...``; else None. Read from DuckDB's tokens (comments, strings and
    quoted names are theirs); the rest of an INSERT (RETURNING, ON CONFLICT) stays with
    the query, which then does not parse as one: None is the caller's too."""
    tokens = _tokens(sql)
    if tokens is None:
        return None
    words = [text if kind in ("keyword", "operator") else "" for _, text, kind in tokens]
    k = 0

    def take(*options: str) -> bool:
        nonlocal k
        if k < len(words) and words[k] in options:
            k += 1
            return True
        return False

    def name() -> bool:  # a table's name: identifiers joined by dots
        nonlocal k
        if k >= len(tokens) or tokens[k][2] != "identifier":
            return False
        k += 1
        while take(".") and k < len(tokens) and tokens[k][2] == "identifier":
            k += 1
        return True

    def rest() -> str | None:
        return sql[tokens[k][0]:] if k < len(tokens) else None

    def parenthesized() -> bool:  # at "(": past its matching ")" (False: none)
        nonlocal k
        depth = 0
        while k < len(words):
            depth += {"(": 1, ")": -1}.get(words[k], 0)
            k += 1
            if not depth:
                return True
        return False

    if take("create"):
        if take("or"):
            take("replace")
        take("temp", "temporary")
        if not take("table"):
            return None
        if take("if") and not (take("not") and take("exists")):
            return None
        return rest() if name() and take("as") else None
    if take("insert"):
        if take("or") and not take("replace", "ignore"):
            return None
        if not (take("into") and name()):
            return None
        if take("as") and not name():
            return None
        if k < len(words) and words[k] == "(" and not parenthesized():
            return None
        if take("by") and not take("name", "position"):
            return None
        return rest()
    if take("copy") and k < len(words) and words[k] == "(":
        start = k
        if not (parenthesized() and take("to")):
            return None
        return sql[tokens[start][0] + 1:tokens[k - 2][0]]
    return None


def _user_objects(con: Any, table: str) -> set[str]:
    """Lower-case names of the session's own views and macros (any may read events), but
    the view ``memory.main.<table>`` (ehtool's)."""
    duckdb = require("duckdb")
    try:
        rows = con.execute(
            "select lower(view_name) from duckdb_views() where not internal and not "
            "(database_name = 'memory' and schema_name = 'main' and lower(view_name) = ?) "
            "union all select lower(function_name) from duckdb_functions() where not "
            "internal and function_type in ('macro', 'table_macro')",
            [table.lower()]).fetchall()
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
        self.scoped: set[int] = set()  # stars over a grouped PIVOT's result (ids)
        self.recursive = False  # a recursive CTE: a scan in it may run again and again

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
        elif kind == "RECURSIVE_CTE_NODE":
            self.recursive = True
        elif kind == "SELECT_NODE" and _grouped_pivot(node.get("from_table")):
            self.scoped.update(id(item) for item in node.get("select_list", ())
                               if item.get("class") == "STAR")
        elif kind == "PIVOT" and _grouped_pivot(node):
            self.columns.update(str(name).lower() for name in node["groups"])
        elif kind in ("STAR", "POSITIONAL_REFERENCE", "PIVOT") and id(node) not in self.scoped:
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
            elif str(node.get("schema_name", "")).lower() in _CATALOG_SCHEMAS:
                self.everything = True  # information_schema.columns: events' columns
        elif kind == "JOIN":
            self.columns.update(c.lower() for c in node.get("using_columns") or ())
            if node.get("ref_type") == "NATURAL":
                self.everything = True
        elif kind == "FUNCTION":
            name = str(node.get("function_name", "")).lower()
            if name in _QUERY_FUNCTIONS or name in self.user:
                self.unknown = True
            elif name.startswith(_CATALOG_FUNCTIONS):  # events' columns, as data
                self.everything = True


def _grouped_pivot(node: Any) -> bool:
    """Whether ``node`` is a PIVOT with GROUP BY: its result has the group columns, the
    pivot values and the aggregates (columns it names), not every column of its source
    (a star over it reads only those)."""
    return (isinstance(node, dict) and node.get("type") == "PIVOT" and bool(node.get("groups"))
            and not node.get("unpivot_names"))
