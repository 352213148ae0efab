"""Recordings as a Dask DataFrame: a partition per file, or per part of a big file,
decoded where it runs."""

from __future__ import annotations

import glob as globbing
import operator
import os
from typing import Any

from ehtool.analysis.arrow import record_batches, require, schema
from ehtool.analysis.parallel import partitions
from ehtool.errors import InputError, combined
from ehtool.perfdata.finding import recordings_under

#: a file-mode file with more data than this is read as several partitions, cut at
#: FINISHED_ROUND records (as ``ehtool decode -j N`` cuts a file)
PARTITION_BYTES = 256 << 20
#: and never into parts of less data than this (``partition_bytes`` below it is raised
#: to it: a part per byte made a task graph of millions of mostly empty partitions)
MIN_PARTITION_BYTES = 64 << 10


def _inputs(paths: Any) -> list[str]:
    """``paths`` (a str or os.PathLike, or an iterable of them) as strings."""
    if isinstance(paths, (str, os.PathLike)):
        items = [paths]
    elif isinstance(paths, (bytes, bytearray)):
        raise TypeError("paths: give a str or os.PathLike, or a list of them, not bytes")
    else:
        try:
            items = list(paths)
        except TypeError:
            raise TypeError("paths: give a str or os.PathLike, or a list of them, not "
                            f"{type(paths).__name__}") from None
    out = []
    for item in items:
        name = os.fspath(item) if isinstance(item, os.PathLike) else item
        if not isinstance(name, str):
            raise TypeError(f"paths: {item!r} is a {type(item).__name__}, not a str or "
                            "os.PathLike")
        out.append(name)
    return out


def _expand(paths: list[str]) -> list[str]:
    """Globs, paths, directories (the perf.data files under them, as the CLI takes
    them) and fsspec URLs (globs too: ``s3://bucket/traces/*.data``) -> paths;
    a glob that matches nothing is a FileNotFoundError now, not at the computation (a
    path without glob characters, or one that exists as written, is kept as it is)."""
    out: list[str] = []
    for item in paths:
        if "://" not in item and os.path.isdir(item):  # its recordings, as the CLI's
            found = recordings_under(item, _raise)
            if not found:
                raise FileNotFoundError(f"no recordings under {item!r}")
            out.extend(found)
            continue
        if not globbing.has_magic(item):
            out.append(item)
            continue
        matched = _expand_url(item) if "://" in item else sorted(globbing.glob(item))
        if not matched and "://" not in item and os.path.exists(item):
            matched = [item]  # (a name with brackets, say)
        if not matched:
            raise FileNotFoundError(f"no recordings match {item!r}")
        out.extend(matched)
    return out


def _raise(exc: OSError) -> None:
    raise exc  # (a directory that cannot be listed: its recordings are not left out)


def _expand_url(url: str) -> list[str]:
    fsspec = require("fsspec")
    fs, _, found = fsspec.core.get_fs_token_paths(url)
    return [fs.unstrip_protocol(p) for p in sorted(found)]


def _columns(columns: Any) -> list[str] | None:
    """``columns`` checked: None, a column name, or a list of distinct names."""
    if columns is None:
        return None
    names = [columns] if isinstance(columns, str) else list(columns)
    valid = schema().names
    for name in names:
        if name not in valid:
            raise ValueError(f"columns: no column {name!r}; the columns are "
                             f"{', '.join(valid)}")
    if len(set(names)) < len(names):
        raise ValueError(f"columns: {names!r} names a column twice")
    return names


def _pandas_types(pa: Any) -> Any:
    """The pandas dtype of each Arrow type of the rows: nullable, as exact as Arrow's
    (a plain ``to_pandas()`` makes an integer column with a null float64, which cannot
    hold every uint64 keyword). Timestamps keep pandas' datetime64[ns, UTC] (null:
    NaT)."""
    pd = require("pandas")
    return {pa.uint8(): pd.UInt8Dtype(), pa.uint16(): pd.UInt16Dtype(),
            pa.uint32(): pd.UInt32Dtype(), pa.uint64(): pd.UInt64Dtype(),
            pa.int64(): pd.Int64Dtype(), pa.string(): pd.StringDtype("pyarrow")}.get


def _frame(table: Any) -> Any:
    pa = require("pyarrow")
    return table.to_pandas(types_mapper=_pandas_types(pa))


def _partition(spec: tuple[str, tuple[int, int] | None], columns: list[str] | None,
               errors: str = "raise") -> Any:
    """One partition's events as a pandas DataFrame (runs on a worker); ``errors="warn"``:
    an input error is a warning and the partition holds the events that decode."""
    path, part = spec
    if "://" not in path:
        return _frame(_table(path, path, part, columns, errors))
    # object storage and other fsspec file systems: a local copy first (its errors,
    # warnings and file column name the URL)
    import shutil
    import tempfile

    pa = require("pyarrow")
    fsspec = require("fsspec")
    with tempfile.NamedTemporaryFile(suffix=".data", delete=False) as dst:
        pass
    try:
        try:
            with fsspec.open(path, "rb") as src, open(dst.name, "wb") as out:
                shutil.copyfileobj(src, out, 1 << 20)
        except Exception as exc:  # noqa: BLE001 - fsspec back ends raise their own
            # (botocore's NoCredentialsError, ClientError...): an input error all the same
            why = (exc.strerror or exc) if isinstance(exc, OSError) else (
                f"{type(exc).__name__}: {exc}")
            error = InputError(f"cannot open: {why}", path)
            if errors == "raise":
                raise error from exc
            _warn(error)
            return _frame(schema(columns).empty_table())
        table = _table(dst.name, path, part, columns, errors)
    finally:
        os.unlink(dst.name)
    if "file" in table.column_names:
        i = table.column_names.index("file")
        table = table.set_column(i, "file", pa.array([path] * table.num_rows, pa.string()))
    return _frame(table)


def _table(local: str, name: str, part: tuple[int, int] | None,
           columns: list[str] | None, errors: str) -> Any:
    """The rows of ``local`` as an Arrow table; its input errors name ``name``."""
    pa = require("pyarrow")
    problems: list[InputError] = []
    if errors == "warn":  # (one warning for them all, as decode reports them)
        batches = record_batches([local], columns, part, on_error=problems.append,
                                 on_fatal=problems.append)
    else:
        batches = record_batches([local], columns, part)
    try:
        return pa.Table.from_batches(list(batches), schema=schema(columns))
    except InputError as exc:
        _named(exc, local, name)
        raise
    finally:
        if problems:
            _warn(_named(combined(problems), local, name))


def _named(exc: InputError, local: str, name: str) -> InputError:
    """``exc`` naming the input ``name`` where it names its local copy ``local``."""
    if local != name:
        exc.args = (str(exc).replace(local, name), *exc.args[1:])
        if exc.path == local:
            exc.path = name
    return exc


def _warn(exc: InputError) -> None:
    import warnings

    warnings.warn(f"ehtool: {exc}", InputWarning, stacklevel=3)


class InputWarning(UserWarning):
    """A recording's input error, with ``read_perfdata(errors="warn")``."""


def read_perfdata(paths: str | os.PathLike | list[str | os.PathLike],
                  columns: str | list[str] | None = None,
                  partition_bytes: int = PARTITION_BYTES, errors: str = "raise") -> Any:
    """A Dask DataFrame of the events of ``paths`` (a glob, a path, an ``os.PathLike``, a
    directory for the perf.data files under it, fsspec URLs such as
    ``s3://bucket/traces/*.data``, or a list of them) with the
    columns of ``ehtool decode --format parquet``, or ``columns`` of them (a list of
    names, or one name for a one-column DataFrame; an unknown name is a ValueError that
    lists the columns).

    Column dtypes are pandas' nullable ones, the same in the frame's meta and in every
    computed partition, and exact: string columns ``string[pyarrow]``, ``time``
    ``datetime64[ns, UTC]`` (NaT without clock data), ``session_time`` ``Int64``,
    ``cpu``/``pid``/``tid`` ``UInt32``, ``level``/``opcode``/``version`` ``UInt8``,
    ``keyword`` ``UInt64``, ``id`` ``UInt16``; null (``pd.NA``) where the Parquet column
    is null, as the EventHeader columns of other tracepoints.

    One partition per file; a local file-mode file with more than ``partition_bytes`` (an
    int, at least 1; below 64 KiB it counts as 64 KiB) of data is split into several, at
    FINISHED_ROUND records (as ``ehtool decode -j N`` cuts it), so that a partition's
    memory stays about ``partition_bytes``' worth of rows. Partitions keep file order
    and, within a file, perf-decode's event order.

    ``errors``: ``"raise"`` (a missing, cut or corrupt file fails the computation with
    its InputError, naming the input as given, URL or path, and the offset, as nothing
    is counted wrong in silence) or ``"warn"`` (its events that decode are kept, as
    ``ehtool decode`` and ``query`` keep them, and the error is an
    :class:`InputWarning` on the worker)."""
    if errors not in ("raise", "warn"):
        raise ValueError(f"errors={errors!r}: choose 'raise' or 'warn'")
    try:
        partition_bytes = operator.index(partition_bytes)
    except TypeError:
        raise TypeError(f"partition_bytes={partition_bytes!r}: give an int (bytes)") from None
    if partition_bytes < 1:
        raise ValueError(f"partition_bytes={partition_bytes}: give at least 1 (bytes of "
                         "data per partition)")
    columns = _columns(columns)
    dd = require("dask.dataframe")
    files = _expand(_inputs(paths))
    if not files:
        raise FileNotFoundError(f"no recordings match {paths!r}")
    meta = _partition_meta(columns)
    specs = partitions(files, max(partition_bytes, MIN_PARTITION_BYTES))
    return dd.from_map(_partition, specs, columns=columns,
                       errors=errors, meta=meta)


def _partition_meta(columns: list[str] | None) -> Any:
    return _frame(schema(columns).empty_table())
