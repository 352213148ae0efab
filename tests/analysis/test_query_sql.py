"""ehtool query: the columns a statement reads, from DuckDB's parser
(ehtool.analysis.sql); statements that read 'events' more than once; output details."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")
duckdb = pytest.importorskip("duckdb")

REPO = Path(__file__).resolve().parents[2]
EVENTHEADER = str(REPO / "examples" / "eventheader.data")
SCHED = str(REPO / "examples" / "sched.data")
PIPE = REPO / "tests" / "data" / "sched-pipe.data"  # pipe-mode: can be standard input
ALL = None


def ehtool(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ehtool", *args], capture_output=True,
                          cwd=REPO, check=False, **kwargs)


def rows(done: subprocess.CompletedProcess) -> list[dict]:
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def query(sql: str, *inputs: str) -> list[dict]:
    return rows(ehtool("query", "--format", "jsonl", sql, *(inputs or (EVENTHEADER,))))


@pytest.mark.parametrize(("sql", "columns", "scans"), [
    ("select count(*) from events", ["cpu"], 1),
    ("select count(*) as n from events order by n", ["cpu"], 1),
    ("select count() from events", ["cpu"], 1),
    ("select * from events", ALL, 1),
    ("select e.* from events e", ALL, 1),
    ("select * exclude (fields) from events", ALL, 1),
    ("from events limit 1", ALL, 1),
    ("describe events", ALL, 1),
    ("summarize events", ALL, 1),
    ("pragma table_info('events')", ALL, None),
    ("select events from events", ALL, 1),
    ("select to_json(events) from events", ALL, 1),
    ("select to_json(e) from events as e", ALL, 1),
    ("select min(columns(*)) from events", ALL, 1),
    ("select columns('prov.*') from events", ALL, 1),
    ("select #1 from events", ALL, 1),
    ("select provider from events e(a, b)", ALL, 1),
    ("create table t as from events", ALL, 1),
    # a statement that saves a query's result reads what its query reads
    ("create table t as select provider from events", ["provider"], 1),
    ("create or replace temp table \"as t\" as -- as select *\n select level from events",
     ["level"], 1),
    ("create table if not exists t as select count(*) from events a join events b using (pid)",
     ["pid"], 2),
    ("insert into t select provider from events where level = 2", ["provider", "level"], 1),
    ("insert or replace into main.t (a, b) by name select pid as a, 1 as b from events",
     ["pid"], 1),
    ("insert into t values (1)", ALL, 0),
    ("insert into t select pid from events returning *", ALL, None),
    ("copy (select provider, count(*) from events where ')' = '(' group by 1) to 'x.csv'",
     ["provider"], 1),
    ("copy events to 'x.csv'", ALL, None),
    ("create view v as select provider from events", ALL, None),
    # PIVOT: with GROUP BY, the columns it names; an ON entry without IN: two scans
    ("pivot events on provider using count(*) group by file", ["file", "provider"], 2),
    ("pivot_wider events on \"Level\" in (1, 2), event using max(time) group by comm",
     ["time", "comm", "event", "level"], 2),
    ("pivot events on level in (1, 2) using count(*) group by provider",
     ["provider", "level"], 1),
    ("select * from events pivot (sum(pid) for level in (1, 2) group by provider)",
     ["pid", "provider", "level"], 1),
    ("copy (pivot events on event using count(*) group by cpu) to 'x.csv'",
     ["cpu", "event"], 2),
    ("pivot events on provider", ALL, 2),
    ("pivot events on level in (1) using count(*)", ALL, 1),
    ("pivot events on event using count(*) group by all", ALL, 2),
    ("pivot events on columns('prov.*') using count(*) group by cpu", ALL, 2),
    ("pivot events on event using max(columns(*)) group by cpu", ALL, 2),
    ("select * from (pivot events on level in (1) using count(*) group by pid) join events "
     "using (pid)", ALL, 2),
    ("pivot (select provider, file from events) on provider using count(*) group by file",
     ALL, 2),
    ("select * from (pivot events on provider in ('a') using count(*) group by file)",
     ALL, 1),
    ("pivot main.events on comm using count(*) group by file", ALL, 2),
    ("pivot events on provider not in ('sched') using count(*) group by file",
     ["file", "provider"], 2),
    ("pivot events on level > 2 and level in (3, 4) using count(*) group by file",
     ["file", "level"], 2),
    # a scan inside a recursive CTE may run at every step
    ("with recursive r(n) as (select 1 union all select n + 1 from r where n < "
     "(select count(*) from events)) select max(n) from r", ["cpu"], 2),
    ("pivot t on a using count(*) group by b", ["cpu"], 0),
    ("pivot events e on e.level in (1, 2), e.provider in ('a') using sum(e.pid) "
     "group by e.comm", ["pid", "comm", "provider", "level"], 1),
    # an IN that is not the entry's list; a positional reference; the table as a value
    ("pivot events on case when pid in (1, 2) then 'a' else 'b' end using count(*) "
     "group by file", ["file", "pid"], 2),
    ("pivot events on provider using max(#2) group by file", ALL, 2),
    ("pivot events e on provider using first(e) group by file", ALL, 2),
    # not the table alone: a join, renamed columns, a subquery (another scan)
    ("pivot events natural join t on label using count(*) group by file", ALL, 2),
    ("pivot events e(a) on provider using max(a) group by pid", ALL, 2),
    ("pivot events on level in (select level from events) using count(*) group by pid",
     ALL, 2),
    ("pivot events semi join query('select pid from events') q using (pid) on provider "
     "using count(*) group by file", ALL, 2),
    ("unpivot (select provider from events) on provider", ALL, 1),
    ("select count(provider) from t", ["provider"], 0),
    # a star with no scan of events may still read it (its schema, through a function)
    ("select * from pragma_table_info('events')", ALL, 0),
    ("copy (select * from pragma_table_info('events')) to 'x.csv'", ALL, 0),
    ("select count(*) from pragma_table_info('events')", ALL, 0),
    ("select column_name from duckdb_columns() where table_name = 'events'", ALL, 0),
    ("select count(*) from information_schema.columns where table_name = 'events'", ALL, 0),
    ("select 1", ["cpu"], 0),
    ("set threads = 1", ["cpu"], 0),
    ("select provider, event, count(*) from events group by all", ["provider", "event"], 1),
    ("select fields->>'url' from events where level <= 2", ["level", "fields"], 1),
    # a name in a string literal does not count; quoted identifiers, any case
    ("select 'provider', 'fields' as x from events where 'level' = 'pid'", ["cpu"], 1),
    ('select "Provider", EVENT from events', ["provider", "event"], 1),
    ("select events.provider from events", ["provider"], 1),
    ("select e.provider from events e where e.level > 1", ["provider", "level"], 1),
    ("select e.comm from main.events as e", ["comm"], 1),
    # joins, CTEs, subqueries, UNION, windows
    ("select a.provider, b.pid from events a join events b on a.tid = b.tid",
     ["pid", "tid", "provider"], 2),
    ("select count(*) from events a join events b using (cpu)", ["cpu"], 2),
    ("select count(*) from events natural join t", ALL, 1),
    ("with x as (select provider from events) select count(*) from x", ["provider"], 1),
    ("with x as (select provider as p from events) select p from x, x as y",
     ["provider"], 1),
    ("select p from (select provider as p from events where pid > 0) s", ["pid", "provider"],
     1),
    ("select count(*) from events where level > (select avg(level) from events)",
     ["level"], 2),
    ("select (select count(*) from events) + (select count(*) from events)", ["cpu"], 2),
    ("select provider from events union all select event from events",
     ["provider", "event"], 2),
    ("select row_number() over (partition by provider order by time) from events",
     ["time", "provider"], 1),
    ("select lag(tid) over w from events window w as (order by session_time)",
     ["session_time", "tid"], 1),
    ("select * from query_table('events')", ALL, None),
    ("select * from query('select provider from events')", ALL, None),
])
def test_columns_and_scans(sql, columns, scans):
    from ehtool.analysis.sql import reads

    found = reads(duckdb.connect(), sql)
    assert (found.columns, found.scans) == (columns, scans)


def test_views_and_macros_of_the_session_read_every_column():
    """A view or macro may read events under another name: every column, scans unknown;
    once one exists, any statement the tree does not show reads every column."""
    from ehtool.analysis.sql import reads

    con = duckdb.connect()
    con.execute("create view events as select 1 as cpu")  # ehtool's own: not counted
    assert reads(con, "set threads = 1").columns == ["cpu"]
    con.execute("create view v as select 1 as cpu")
    found = reads(con, "select count(*) from v")
    assert (found.columns, found.scans) == (ALL, None)
    assert reads(con, "select 1").columns == ["cpu"]
    assert reads(con, "set threads = 1").columns is ALL
    con.execute("create macro m() as table select 1 as cpu")
    con.execute("create macro f(x) as x + 1")
    assert reads(con, "select * from m()").scans is None
    assert reads(con, "select f(cpu) from events").columns is ALL


def test_statements_that_read_every_column():
    """They saw cpu alone (the columns were guessed from words of the text)."""
    names = ["file", "time", "session_time", "cpu", "pid", "tid", "comm", "provider",
             "event", "level", "keyword", "opcode", "id", "version", "activity",
             "related_activity", "fields", "error"]
    assert [r["column_name"] for r in query("describe events")] == names
    assert [r["column_name"] for r in query("summarize events")] == names
    assert [r["name"] for r in query("pragma table_info('events')")] == names
    first = query("from events limit 1")
    assert list(first[0]) == names and first[0]["provider"] == "MyProvider"
    for sql in ("select events as v from events limit 1",
                "select to_json(events) as v from events limit 1"):
        value = query(sql)[0]["v"]
        assert list(value) == names and value["comm"] == first[0]["comm"] == "ehtool"
        assert json.loads(value["fields"]) if isinstance(value["fields"], str) else \
            value["fields"] == first[0]["fields"]
    assert query("select min(columns(*)) from events")[0]["provider"] == "MyProvider"
    assert query("create table t as from events; select count(provider) as n from t") == [
        {"n": 3}]


def test_statements_that_read_events_more_than_once():
    """DuckDB cannot scan the stream twice ("This RecordBatchReader has already been
    consumed ..."): the columns are kept in a temporary table first."""
    both = (EVENTHEADER, SCHED)
    assert query("select (select count(*) from events) + (select count(*) from events) "
                 "as n", *both) == [{"n": 76}]
    assert query("select count(*) as n from events a join events b using (provider)",
                 *both) == [{"n": 3 * 3 + 35 * 35}]
    assert query("select count(*) as n from (select provider from events union all "
                 "select event from events)", *both) == [{"n": 76}]
    assert query("select count(*) as n from events where pid > (select avg(pid) from "
                 "events)", *both) == [{"n": 11}]
    # PIVOT finds the values of its ON column first
    expected = [{"file": EVENTHEADER, "MyProvider": 3, "sched": 0},
                {"file": SCHED, "MyProvider": 0, "sched": 35}]
    assert query("pivot events on provider using count(*) group by file order by file",
                 *both) == expected
    assert query("pivot (select provider, file from events) on provider using count(*) "
                 "group by file order by file", *both) == expected
    # not shown by the tree: run again over a table once DuckDB found the stream read
    assert query("prepare p as select count(*) as n from events a join events b using "
                 "(provider); execute p", *both) == [{"n": 3 * 3 + 35 * 35}]
    # the table it reads may have the view's name, or any other; so may the schema
    assert query("create temp table events as select a.provider from events a join events "
                 "b using (pid); select count(*) as n from temp.events", *both) == [{"n": 454}]
    assert query("create temp table ehtool_events as select 42 as x; select count(*) as n "
                 "from events a join events b using (pid); from ehtool_events",
                 *both) == [{"n": 454}, {"x": 42}]
    assert query("create schema s; use s; select count(*) as n from events a join events b "
                 "using (pid)", *both) == [{"n": 454}]
    # standard input, read once into the table; the next statement has a stream again
    done = ehtool("query", "--format", "jsonl",
                  "select (select count(*) from events) + (select count(*) from events) "
                  "as n", "-", input=PIPE.read_bytes())
    assert rows(done) == [{"n": 46}]
    done = ehtool("query", "--format", "jsonl",
                  "select count(*) as n from events e join events f using (tid); "
                  "select count(*) as m from events", str(PIPE))
    assert rows(done) == [{"n": 139}, {"m": 23}]


def test_reading_standard_input_twice_is_one_clear_error():
    """The scans of a prepared statement are not in the tree: on standard input, a second
    decode is not possible; one line says what to do, not DuckDB's read_all() hint."""
    sql = ("prepare p as select a.file, count(*) as n from events a join events b using (tid) "
           "group by a.file; execute p")
    done = ehtool("query", sql, "-", input=PIPE.read_bytes())
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.count(b"\n") == 1 and b"read_all" not in done.stderr
    assert b"create temp table t as select ... from events" in done.stderr
    done = ehtool("query", "--format", "jsonl", f"create temp table t as from events; "
                  f"{sql.replace('events', 't')}", "-", input=PIPE.read_bytes())
    assert rows(done) == [{"file": "stdin", "n": 139}]


def test_a_terminal_no_statement_read_is_not_opened_for_a_look():
    """A device's header is read after the query; a terminal's would wait for a user."""
    import os

    leader, follower = os.openpty()
    try:
        done = ehtool("query", "select 1 as one", os.ttyname(follower), timeout=30)
    finally:
        os.close(leader)
        os.close(follower)
    assert (done.returncode, done.stdout, done.stderr) == (0, b'"one"\n1\n', b"")


def test_a_file_cut_in_its_data_no_statement_read_is_reported(tmp_path):
    """A statement without 'events' (or a LIMIT) left a file cut inside its data section
    unseen (exit 0): its header says its records and feature sections are cut off."""
    cut = tmp_path / "cut.data"
    cut.write_bytes((REPO / "examples" / "sched.data").read_bytes()[:30000])
    done = ehtool("query", "select 1 as one", str(cut))
    assert done.returncode == 1 and done.stdout == b'"one"\n1\n'
    assert done.stderr.startswith(f"ehtool: error: {cut}: offset 0x7530: truncated file: "
                                  "data section ends at ".encode()), done.stderr
    assert done.stderr.count(b"\n") == 1


def test_a_statement_that_only_names_events_may_follow_one_that_reads_stdin():
    """'events' in a string or as an alias made a statement count as reading standard
    input a second time (a usage error before anything ran); DuckDB's syntax tree says
    it reads none of it. Two that read it are still refused."""
    done = ehtool("query", "--format", "jsonl", "select count(*) as n from events; "
                  "select 'events' as w, 1 as events", "-", input=PIPE.read_bytes())
    assert rows(done) == [{"n": 23}, {"w": "events", "events": 1}]
    done = ehtool("query", "select count(*) from events; select count(*) from events", "-",
                  input=PIPE.read_bytes())
    assert done.returncode == 2 and b"only one statement may read 'events'" in done.stderr


@pytest.mark.parametrize("sql", [
    # each an error or a wrong count once (a review): the view is memory.main.events
    # whatever the current schema or database, a view or macro named events is the
    # session's own, a table macro reads the table it is given
    "create schema s; use s; select count(*) as n from main.events",
    "attach ':memory:' as o; use o; select count(*) as n from memory.main.events",
    "create schema s; set search_path = 's,main'; select count(*) as n from main.events",
    "create schema s; create view s.events as select pid from memory.main.events where "
    "tid > 0; select count(pid) as n from s.events",
    "create macro events(x) as (select count(*) from main.events) + x; select events(0) as n",
    "select sum(count) as n from histogram_values(events, level)",
    "prepare p as select count(*) as n from events; /* a comment */ execute p",
])
def test_the_view_is_found_as_in_duckdb(sql):
    assert query(sql) == [{"n": 3}]


def test_statements_whose_pivot_reads_standard_input_once():
    for sql in ("pivot events on comm not in ('perf') using count(*) group by file",
                "create macro f(x) as x + 1; pivot events on comm in ('perf') using count(*) "
                "group by file",
                "select * from (pivot events on comm using count(*) group by file)"):
        done = ehtool("query", "--format", "jsonl", sql, "-", input=PIPE.read_bytes())
        assert rows(done)[0]["file"] == "stdin", sql
    done = ehtool("query", "--format", "jsonl", "with recursive r(n) as (select 1 union all "
                  "select n + 1 from r where n < (select count(*) from events)) select max(n) "
                  "as n from r", "-", input=PIPE.read_bytes())
    assert rows(done) == [{"n": 23}]


def test_standard_input_read_again_through_a_view_is_a_usage_error(tmp_path):
    """The second statement saw no event (then 'no PERFILE2 magic'); a FIFO waited
    forever for a writer."""
    import os
    import threading

    sql = ("create view v as from events; select count(*) as n from v; "
           "select count(*) as m from v")
    done = ehtool("query", "--format", "jsonl", sql, "-", input=PIPE.read_bytes())
    assert done.returncode == 2 and done.stdout == b'{"n":23}\n'
    assert done.stderr == (b"ehtool: error: stdin can be read once, and a statement before "
                           b"read it: save the columns first ('create temp table t as select "
                           b"... from events') (see 'ehtool query --help')\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(PIPE.read_bytes()))
    writer.start()
    done = ehtool("query", "--format", "jsonl", sql, str(fifo), timeout=60)
    writer.join()
    assert done.returncode == 2 and done.stdout == b'{"n":23}\n'
    assert done.stderr.startswith(f"ehtool: error: {fifo} can be read once".encode())


def test_standard_input_given_twice_is_a_usage_error():
    done = ehtool("query", "select count(*) from events", "-", "-",
                  input=PIPE.read_bytes())
    assert done.returncode == 2 and not done.stdout
    assert done.stderr.startswith(b"ehtool: error: standard input ('-') and a FIFO can be read "
                                  b"once")
    assert done.stderr.count(b"\n") == 1


def test_closed_standard_output_is_a_usage_error():
    """As decode: exit 2, one line (was an internal error, exit 1)."""
    for args in (["decode", "--format", "jsonl", SCHED], ["query", "select 1", SCHED],
                 ["info", SCHED], ["info", "--json", SCHED], ["list"]):
        done = subprocess.run(["sh", "-c", '"$0" -m ehtool "$@" >&-', sys.executable,
                               *args], capture_output=True, cwd=REPO, check=False)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith(b"ehtool: error: standard output is closed")
        assert done.stderr.count(b"\n") == 1


def test_repeated_names_times_and_bits():
    """Names made unique as DuckDB's COPY makes them; a time as the same text in jsonl
    and csv; BIT as DuckDB's text."""
    sql = ("select 1 a, 2 a, 3 A, 4 a_1, time '01:02:03' t, time '01:02:03.5' u, "
           "'101'::bit b, '1111111100'::bit c")
    expected = {"a": 1, "a_1": 2, "A_2": 3, "a_1_1": 4, "t": "01:02:03",
                "u": "01:02:03.500000", "b": "101", "c": "1111111100"}
    done = ehtool("query", "--format", "jsonl", sql, SCHED)
    assert done.stdout.startswith(b'{"a":1,"a_1":2,"A_2":3,"a_1_1":4,')
    assert rows(done) == [expected]
    copy = duckdb.sql(f"select * from ({sql})").columns
    assert copy[:2] == ["a", "a_1"]  # DuckDB's own names for a subquery's columns
    done = ehtool("query", "--format", "csv", sql, SCHED)
    assert done.returncode == 0, done.stderr
    header, values = csv.reader(done.stdout.decode().splitlines())
    assert dict(zip(header, values, strict=True)) == {k: str(v) for k, v in
                                                      expected.items()}


def test_unique_names():
    from ehtool.cli.query import _unique

    assert _unique(["a", "a", "A", "a_1", "b"]) == ["a", "a_1", "A_2", "a_1_1", "b"]
    assert _unique(["x", "X_1", "x"]) == ["x", "X_1", "x_2"]


_SLOW_ANALYSIS = '''
import os, signal, sys, threading
import ehtool.analysis.sql as sql
from ehtool.cli import main

real = sql.reads


class Slow:
    """A connection whose first query runs long: the analysis is under way when the
    signal comes."""

    slow = [1]

    def __init__(self, con):
        self.con = con

    def execute(self, *args):
        if self.slow:
            self.slow.clear()
            threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGHUP)).start()
            self.con.execute("select sum(range % 7) from range(100000000000)").fetchall()
        return self.con.execute(*args)

    def __getattr__(self, name):
        return getattr(self.con, name)


sql.reads = lambda con, text, *rest: real(Slow(con), text, *rest)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
sys.argv = ["ehtool", "query", "select 1 as x", sys.argv[1]]
main()
'''


def test_a_signal_during_the_analysis_exits_as_the_signal(tmp_path):
    """The analysis runs DuckDB queries (its parser) before the stream exists: a SIGHUP
    there, outside 'interrupting', was lost (the query ran and exited 0)."""
    script = tmp_path / "slow.py"
    script.write_text(_SLOW_ANALYSIS)
    done = subprocess.run([sys.executable, str(script), SCHED], capture_output=True,
                          cwd=REPO, check=False, timeout=120)
    assert done.returncode == 128 + 1, done.stderr
    assert not done.stdout and b"Traceback" not in done.stderr


def test_a_fifo_is_read_once_and_not_opened_before_the_query(tmp_path):
    """A FIFO path (``<(...)``) was opened for a look before the query, which took its
    header: the query then read 'no PERFILE2 magic'. A self-join over it is decoded
    once, into the temporary table."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat '{PIPE}' > '{fifo}'"])
    try:
        done = ehtool("query", "select count(*) from events a join events b using "
                      "(session_time, cpu, tid)", str(fifo), timeout=60)
    finally:
        writer.kill()
        writer.wait()
    expected = ehtool("query", "select count(*) from events a join events b using "
                      "(session_time, cpu, tid)", str(PIPE))
    assert (done.returncode, done.stdout) == (0, expected.stdout), done.stderr


def test_a_device_no_statement_read_is_looked_at_as_standard_input_is():
    """``query 'select 1' /dev/zero`` exited 0: a stream no statement reads was not
    looked at; a device's header is read, as standard input's (a FIFO's is not: the
    open would wait for a writer), so it is reported after the results."""
    done = ehtool("query", "select 1 as one", "/dev/zero")
    assert done.returncode == 1
    assert done.stdout == b'"one"\n1\n'
    assert done.stderr == (b"ehtool: error: /dev/zero: offset 0x0: not a perf.data file "
                           b"(no PERFILE2 magic)\n")


def test_statements_that_save_a_query_give_its_rows(tmp_path):
    """CREATE TABLE AS, INSERT ... SELECT and COPY (...) TO decode only the columns
    their query reads, and save what it gives."""
    low = query("select count(*) as n from events where level < 4")[0]["n"]
    assert 0 < low < 3
    assert query("create table t as select provider, level from events; "
                 "insert into t select provider, level from events where level < 4; "
                 "select count(*) as n, count(distinct provider) as p from t") == [
        {"n": 3 + low, "p": 1}]
    assert query("create table c as select * from pragma_table_info('events'); "
                 "select count(*) as n from c") == [{"n": 18}]
    assert query("select count(*) as n from pragma_table_info('events')") == [{"n": 18}]
    assert query("select count(*) as n from information_schema.columns "
                 "where table_name = 'events'") == [{"n": 18}]
    out = tmp_path / "by-provider.csv"
    done = ehtool("query", f"copy (select provider, count(*) as n from events group by 1) "
                           f"to '{out}' (header)", EVENTHEADER)
    assert done.returncode == 0, done.stderr
    with out.open() as f:
        assert list(csv.DictReader(f)) == [{"provider": "MyProvider", "n": "3"}]
