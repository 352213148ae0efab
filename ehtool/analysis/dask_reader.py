"""Recordings as a Dask DataFrame: one partition per file, decoded where it runs."""

from __future__ import annotations

import glob as globbing
from typing import Any

from ehtool.analysis.arrow import record_batches, require, schema


def _expand(paths: str | list[str]) -> list[str]:
    """A glob, a path or a list of them -> paths (fsspec URLs are kept as they are)."""
    items = [paths] if isinstance(paths, str) else list(paths)
    out: list[str] = []
    for item in items:
        if "://" in item:
            out.append(item)
        else:
            matched = sorted(globbing.glob(item))
            out.extend(matched or [item])
    return out


def _partition(path: str, columns: list[str] | None) -> Any:
    """One file's events as a pandas DataFrame (runs on a worker)."""
    pa = require("pyarrow")
    if "://" in path:  # object storage and other fsspec file systems: a local copy first
        import os
        import tempfile

        import fsspec

        with fsspec.open(path, "rb") as src, tempfile.NamedTemporaryFile(
                suffix=".data", delete=False) as dst:
            dst.write(src.read())
        try:
            frame = _partition(dst.name, columns)
        finally:
            os.unlink(dst.name)
        if "file" in frame:
            frame["file"] = path
        return frame
    full = schema()
    out = pa.schema([full.field(n) for n in columns]) if columns else full
    return pa.Table.from_batches(list(record_batches([path], columns)), schema=out).to_pandas()


def read_perfdata(paths: str | list[str], columns: list[str] | None = None) -> Any:
    """A Dask DataFrame of the events of ``paths`` (a glob, a path, a list, or fsspec URLs
    such as ``s3://bucket/traces/*.data`` given as a list), one partition per file, with
    the columns of ``ehtool decode --format parquet`` (or ``columns`` of them)."""
    dd = require("dask.dataframe")
    files = _expand(paths)
    if not files:
        raise FileNotFoundError(f"no recordings match {paths!r}")
    meta = _partition_meta(columns)
    return dd.from_map(_partition, files, columns=columns, meta=meta)


def _partition_meta(columns: list[str] | None) -> Any:
    pa = require("pyarrow")
    full = schema()
    out = pa.schema([full.field(n) for n in columns]) if columns else full
    return out.empty_table().to_pandas()
