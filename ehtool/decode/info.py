"""A summary of a perf.data file: header features, time range, events per tracepoint."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from ehtool.perfdata.grammar import RecordType

_RECORD_NAMES = {RecordType.LOST: "lost", RecordType.LOST_SAMPLES: "lost_samples",
                 RecordType.COMM: "comm", RecordType.FORK: "fork", RecordType.EXIT: "exit",
                 RecordType.SAMPLE: "sample"}


def summarize(path: str) -> dict[str, Any]:
    """Everything ``ehtool info`` prints, as plain data. A file that opens but is cut
    short or corrupt is summarized up to where it could be read, and its problems are
    listed under ``"problems"`` (a file that does not open raises)."""
    from ehtool.errors import EhtoolError, InputError, input_name
    from ehtool.events import SampleConverter
    from ehtool.perfdata import PerfDataFile
    from ehtool.values.strings import escape_surrogates

    per_event: Counter[str] = Counter()
    per_eventheader: Counter[str] = Counter()
    first = last = None
    problems: list[InputError] = []
    with PerfDataFile.open(path) as f:
        f.on_error = problems.append
        f.threads = False  # (no thread names shown)
        identify = SampleConverter(big_endian=f.big_endian).identify
        try:
            for sample in f.samples(order="file"):
                desc = sample.desc
                per_event[desc.name or "?"] += 1
                if desc.format is not None and desc.format.eventheader_offset is not None:
                    provider, event, level, _ = identify(sample)
                    if level is not None:  # (a lone surrogate as decode's JSON escapes it)
                        per_eventheader[escape_surrogates(f"{provider}:{event}")] += 1
                t = sample.time
                if t is not None:
                    first = t if first is None or t < first else first
                    last = t if last is None or t > last else last
        except EhtoolError as exc:  # where reading stops: the summary of what came before
            problems.append(exc)
        info = f.info
        clock = f.session.clock
        records = {_RECORD_NAMES.get(k, str(k)): v for k, v in sorted(f.counts.items())
                   if k in _RECORD_NAMES}
        time_range = None
        if first is not None:
            time_range = {"first": clock.time_text(first), "last": clock.time_text(last),
                          "seconds": (last - first) / 1e9}
        return {
            "file": input_name(path),
            "byte_order": "big-endian" if f.big_endian else "little-endian",
            "hostname": info.hostname,
            "os_release": info.osrelease,
            "perf_version": info.perf_version,
            "arch": info.arch,
            "cpus_online": info.nrcpus_online,
            "cpus_available": info.nrcpus_available,
            "cmdline": info.cmdline,
            "data_files": ([os.path.basename(p) for p in f.more_files]
                           if info.dir_format is not None else None),
            "clock": ({"clockid": info.clock_data[0], "utc": True} if info.clock_data
                      else {"utc": False}),
            "time_range": time_range,
            "records": records,
            "compression": ({"type": "zstd", "records": f.compression.records,
                             "compressed_bytes": f.compression.compressed,
                             "decompressed_bytes": f.compression.decompressed,
                             "ratio": (None if f.compression.ratio is None
                                       else round(f.compression.ratio, 3))}
                            if f.compression.records else None),
            "lost_events": f.lost.lost,
            "events": dict(per_event.most_common()),
            "eventheader_events": dict(per_eventheader.most_common()),
            "problems": [str(p) for p in problems],
        }


def format_text(summary: dict[str, Any]) -> str:
    """The summary as aligned text."""
    lines = []
    for key in ("file", "byte_order", "hostname", "os_release", "perf_version", "arch",
                "cpus_online"):
        if summary.get(key) is not None:
            lines.append(f"{key.replace('_', ' '):14} {summary[key]}")
    if summary.get("cmdline"):
        lines.append(f"{'command':14} {' '.join(summary['cmdline'])}")
    if summary.get("data_files") is not None:
        lines.append(f"{'directory':14} perf record --threads: data, "
                     + ", ".join(summary["data_files"]))
    clock = summary["clock"]
    lines.append(f"{'clock':14} " + (f"clockid {clock['clockid']}, UTC times" if clock["utc"]
                                     else "no CLOCK_DATA (times are seconds since boot)"))
    tr = summary.get("time_range")
    if tr:
        lines.append(f"{'time range':14} {tr['first']} .. {tr['last']} ({tr['seconds']:.3f} s)")
    z = summary.get("compression")
    if z:
        ratio = f" (ratio {z['ratio']:.2f})" if z["ratio"] is not None else ""
        lines.append(f"{'compressed':14} zstd, {z['records']} records, {z['compressed_bytes']} "
                     f"bytes -> {z['decompressed_bytes']} bytes{ratio}")
    lines.append(f"{'lost events':14} {summary['lost_events']}")
    lines.append("")
    lines.append(f"{'samples':>10}  tracepoint")
    for name, count in summary["events"].items():
        lines.append(f"{count:10}  {name}")
    lines.append(f"{sum(summary['events'].values()):10}  total")
    if summary.get("eventheader_events"):
        lines.append("")
        lines.append(f"{'samples':>10}  EventHeader event (provider:event)")
        for name, count in summary["eventheader_events"].items():
            lines.append(f"{count:10}  {name}")
    return "\n".join(lines)
