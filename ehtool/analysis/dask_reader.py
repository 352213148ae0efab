"""Recordings as a Dask DataFrame: a partition per file, or per part of a big file,
decoded where it runs."""

from __future__ import annotations

import glob as globbing
import os
from typing import Any

from ehtool.analysis.arrow import record_batches, require, schema
from ehtool.analysis.parallel import partitions

#: a file-mode file with more data than this is read as several partitions, cut at
#: FINISHED_ROUND records (as ``ehtool decode -j N`` cuts a file)
PARTITION_BYTES = 256 << 20


def _expand(paths: str | list[str]) -> list[str]:
    """Globs, paths and fsspec URLs (globs too: ``s3://bucket/traces/*.data``) -> paths;
    a glob that matches nothing is a FileNotFoundError now, not at the computation (a
    path without glob characters, or one that exists as written, is kept as it is)."""
    items = [paths] if isinstance(paths, str) else list(paths)
    out: list[str] = []
    for item in items:
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


def _expand_url(url: str) -> list[str]:
    fsspec = require("fsspec")
    fs, _, found = fsspec.core.get_fs_token_paths(url)
    return [fs.unstrip_protocol(p) for p in sorted(found)]


def _partition(spec: tuple[str, tuple[int, int] | None], columns: list[str] | None,
               errors: str = "raise") -> Any:
    """One partition's events as a pandas DataFrame (runs on a worker); ``errors="warn"``:
    an input error is a warning and the partition holds the events that decode."""
    path, part = spec
    pa = require("pyarrow")
    if "://" in path:  # object storage and other fsspec file systems: a local copy first
        import os
        import shutil
        import tempfile

        fsspec = require("fsspec")
        with fsspec.open(path, "rb") as src, tempfile.NamedTemporaryFile(
                suffix=".data", delete=False) as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        try:
            frame = _partition((dst.name, part), columns, errors)
        finally:
            os.unlink(dst.name)
        if "file" in frame:
            frame["file"] = path
        return frame
    if errors == "warn":
        import warnings

        def warn(exc: Exception) -> None:
            warnings.warn(f"ehtool: {exc}", InputWarning, stacklevel=2)

        batches = record_batches([path], columns, part, on_error=warn, on_fatal=warn)
    else:
        batches = record_batches([path], columns, part)
    return pa.Table.from_batches(list(batches), schema=schema(columns)).to_pandas()


class InputWarning(UserWarning):
    """A recording's input error, with ``read_perfdata(errors="warn")``."""


def read_perfdata(paths: str | list[str], columns: list[str] | None = None,
                  partition_bytes: int = PARTITION_BYTES, errors: str = "raise") -> Any:
    """A Dask DataFrame of the events of ``paths`` (a glob, a path, fsspec URLs such as
    ``s3://bucket/traces/*.data``, or a list of them) with the columns of ``ehtool
    decode --format parquet`` (or ``columns`` of them). One partition per file; a local
    file-mode file with more than ``partition_bytes`` of data is split into several,
    at FINISHED_ROUND records (as ``ehtool decode -j N`` cuts it), so that a partition's memory
    stays about ``partition_bytes``' worth of rows. Partitions keep file order and,
    within a file, perf-decode's event order.

    ``errors``: ``"raise"`` (a missing, cut or corrupt file fails the computation with
    its InputError, as nothing is counted wrong in silence) or ``"warn"`` (its events
    that decode are kept, as ``ehtool decode`` and ``query`` keep them, and the error is
    an :class:`InputWarning` on the worker)."""
    if errors not in ("raise", "warn"):
        raise ValueError(f"errors={errors!r}: choose 'raise' or 'warn'")
    dd = require("dask.dataframe")
    files = _expand(paths)
    if not files:
        raise FileNotFoundError(f"no recordings match {paths!r}")
    meta = _partition_meta(columns)
    return dd.from_map(_partition, partitions(files, partition_bytes), columns=columns,
                       errors=errors, meta=meta)


def _partition_meta(columns: list[str] | None) -> Any:
    return schema(columns).empty_table().to_pandas()
