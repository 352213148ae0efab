"""ehtool.dask.read_perfdata: exact dtypes, errors that name the input, its arguments.
(The synchronous scheduler: test_analysis.py runs the reader on a LocalCluster.)"""

from __future__ import annotations

import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from golden import golden_path

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
dask = pytest.importorskip("dask")
pytest.importorskip("dask.dataframe")

REPO = Path(__file__).resolve().parents[2]
SCHED = REPO / "examples" / "sched.data"  # 35 sched events
KEYWORD = 0xF123456789ABCDEF  # two events of the reference recording

DTYPES = {"file": pd.StringDtype("pyarrow"), "time": pd.DatetimeTZDtype("ns", "UTC"),
          "session_time": pd.Int64Dtype(), "cpu": pd.UInt32Dtype(), "pid": pd.UInt32Dtype(),
          "tid": pd.UInt32Dtype(), "comm": pd.StringDtype("pyarrow"),
          "provider": pd.StringDtype("pyarrow"), "event": pd.StringDtype("pyarrow"),
          "level": pd.UInt8Dtype(), "keyword": pd.UInt64Dtype(), "opcode": pd.UInt8Dtype(),
          "id": pd.UInt16Dtype(), "version": pd.UInt8Dtype(),
          "activity": pd.StringDtype("pyarrow"), "related_activity": pd.StringDtype("pyarrow"),
          "fields": pd.StringDtype("pyarrow"), "error": pd.StringDtype("pyarrow")}


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def read_perfdata(*args, **kwargs):
    from ehtool.dask import read_perfdata

    return read_perfdata(*args, **kwargs)


def values(series) -> list:
    """A column's values as Arrow's to_pylist gives them (null: None)."""
    if isinstance(series.dtype, pd.DatetimeTZDtype):
        return [None if pd.isna(v) else v.value for v in series]
    return [None if pd.isna(v) else v for v in series.tolist()]


def test_dtypes_are_nullable_exact_and_those_of_the_meta():
    """Integer columns with a null (every non-EventHeader row's level, keyword...) were
    float64 after compute while the meta said uint8/uint64, and the keyword
    0xF123456789ABCDEF came back as 17375808098319192064.0; now every partition has the
    meta's nullable dtypes and Arrow's values."""
    from ehtool.analysis.arrow import record_batches

    golden = str(golden_path("linuxtracepoints/perf.data"))
    df = read_perfdata(golden, partition_bytes=50_000)  # several partitions
    assert df.npartitions > 1
    assert df.dtypes.to_dict() == DTYPES
    got = df.compute()
    assert got.dtypes.to_dict() == DTYPES
    for k in range(df.npartitions):
        assert df.get_partition(k).compute().dtypes.to_dict() == DTYPES
    whole = pa.Table.from_batches(list(record_batches([golden])))
    for name in DTYPES:
        column = whole.column(name)
        if name == "time":
            column = column.cast(pa.int64())
        assert values(got[name]) == column.to_pylist(), name
    assert got["level"].isna().sum() == (got["provider"] == "sched").sum() > 0
    assert sorted(set(values(got["keyword"])) - {None})[-1] == KEYWORD
    assert df[df["keyword"] == KEYWORD][["provider", "event"]].compute().values.tolist() == [
        ["TestProviderC", "CScalars2"], ["TestProviderCpp", "CScalars2"]]
    # a projection, columns=, a URL (its file column) and an empty partition keep them
    picked = df[["event", "level"]]
    assert picked.compute().dtypes.to_dict() == picked.dtypes.to_dict()
    few = read_perfdata(golden, columns=["keyword", "file"])
    assert few.compute().dtypes.to_dict() == few.dtypes.to_dict() == {
        "keyword": DTYPES["keyword"], "file": DTYPES["file"]}
    url = f"file://{SCHED}"
    frame = read_perfdata([url, f"file://{SCHED.parent}/nosuch.data"], errors="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = frame.compute()
    assert got.dtypes.to_dict() == frame.dtypes.to_dict() == DTYPES
    assert got["file"].tolist() == [url] * 35


def copy_cut(tmp_path: Path) -> Path:
    cut = tmp_path / "cut.data"
    cut.write_bytes(golden_path("linuxtracepoints/perf.data").read_bytes()[:100_000])
    return cut


def test_errors_of_a_url_name_the_url_not_its_local_copy(tmp_path):
    """An fsspec URL is decoded from a temporary copy; its InputError and InputWarning
    named the copy (/tmp/tmpx63mdwvu.data: offset...), now the URL as given."""
    from ehtool.analysis.dask_reader import InputWarning
    from ehtool.errors import InputError

    cut = copy_cut(tmp_path)
    url = f"file://{cut}"
    copy = re.compile(r"tmp\w{8}\.data")
    for given in (url, f"file://{tmp_path}/[c]*.data"):
        with pytest.raises(InputError) as caught:
            len(read_perfdata(given))
        message = str(caught.value)
        assert message.startswith(f"{url}: offset 0x"), message
        assert "truncated file" in message and not copy.search(message)
        assert caught.value.path == url
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        got = read_perfdata(url, errors="warn").compute()
    assert len(got) == 218 and set(got["file"]) == {url}
    messages = [str(w.message) for w in warned if issubclass(w.category, InputWarning)]
    assert messages and all(m.startswith(f"ehtool: {url}: offset 0x") for m in messages)
    assert not any(copy.search(m) for m in messages)
    # a URL that cannot be opened: an InputError too (was fsspec's FileNotFoundError)
    missing = f"file://{tmp_path}/nosuch.data"
    with pytest.raises(InputError, match=f"^{re.escape(missing)}: cannot open"):
        len(read_perfdata(missing))


def test_partition_bytes_below_1_is_a_value_error():
    """partition_bytes=0 was a ZeroDivisionError and -1 was taken."""
    for bad in (0, -1):
        with pytest.raises(ValueError, match=f"partition_bytes={bad}"):
            read_perfdata(str(SCHED), partition_bytes=bad)
    with pytest.raises(TypeError, match="partition_bytes"):
        read_perfdata(str(SCHED), partition_bytes=1.5)
    assert len(read_perfdata(str(SCHED), partition_bytes=16_384)) == 35


def test_a_tiny_partition_bytes_counts_as_64_kib():
    """partition_bytes=1 made a partition per byte of data (a task graph of ~170,000
    mostly empty partitions for the reference recording)."""
    golden = str(golden_path("linuxtracepoints/perf.data"))
    one = read_perfdata(golden, partition_bytes=1)
    assert one.npartitions == read_perfdata(golden, partition_bytes=64 << 10).npartitions == 3
    assert len(one) == len(read_perfdata(golden))


def test_columns_one_name_or_names_of_columns():
    """columns="event" was read as the columns e, v...: now one column; an unknown or
    repeated name is a ValueError listing the columns."""
    df = read_perfdata(str(SCHED), columns="event")
    assert df.columns.tolist() == ["event"]
    got = df.compute()
    assert got.columns.tolist() == ["event"] and len(got) == 35
    assert got["event"].tolist()[:2] == ["sched_wakeup", "sched_switch"]
    with pytest.raises(ValueError, match=r"'nope'.*file, time, session_time"):
        read_perfdata(str(SCHED), columns=["event", "nope"])
    with pytest.raises(ValueError, match="twice"):
        read_perfdata(str(SCHED), columns=["event", "event"])


def test_paths_may_be_path_objects():
    """A pathlib.Path, alone or in a list, was a TypeError."""
    assert len(read_perfdata(SCHED)) == 35
    assert len(read_perfdata([SCHED, str(SCHED)])) == 70
    for bad in (b"sched.data", [SCHED, 3], 3):
        with pytest.raises(TypeError, match="paths"):
            read_perfdata(bad)


def test_a_time_past_int64_is_an_input_error_naming_the_input(tmp_path):
    """A corrupt sample time >= 2^63 made len(read_perfdata(...)) a bare OverflowError;
    with record_batches' rule it is an InputError naming the input (path or URL) and the
    sample's offset, or with errors="warn" a null time (NaT, pd.NA) and a warning."""
    import struct

    from ehtool.analysis.dask_reader import InputWarning
    from ehtool.errors import InputError
    from ehtool.perfdata.reader import PerfDataFile

    source = REPO / "examples" / "eventheader.data"  # 3 events
    data = bytearray(source.read_bytes())
    with PerfDataFile.open(source) as f:
        sample = list(f.samples("file"))[1]
        endian = f.grammar.endian
    at = data.index(struct.pack(endian + "Q", sample.time), sample.offset)
    data[at:at + 8] = struct.pack(endian + "Q", (1 << 64) - 12345)
    bad = tmp_path / "huge.data"
    bad.write_bytes(bytes(data))
    for given in (str(bad), f"file://{bad}"):
        with pytest.raises(InputError, match=rf"^{re.escape(given)}: offset "
                           rf"{sample.offset:#x}: (session_)?time \d+ does not fit"):
            len(read_perfdata([given]))
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            frame = read_perfdata([given], errors="warn")
            got = frame.compute()
        messages = [str(w.message) for w in warned if issubclass(w.category, InputWarning)]
        assert len(messages) == 1  # time's, and session_time's as one more
        assert messages[0].startswith(f"ehtool: {given}: offset {sample.offset:#x}: ")
        assert messages[0].endswith("(and 1 more problems)")
        assert got.dtypes.to_dict() == frame.dtypes.to_dict() == DTYPES
        assert len(got) == 3 and got["session_time"].isna().sum() == 1
        assert got["time"].isna().sum() == 1  # (the recording has clock data)


def test_an_object_store_error_that_is_not_an_oserror_is_an_input_error(tmp_path):
    """fsspec back ends raise their own errors (botocore's NoCredentialsError is no
    OSError): they passed through as they were, and errors="warn" did not keep the
    other partitions."""
    import fsspec
    from fsspec.implementations.local import LocalFileSystem

    from ehtool.analysis.dask_reader import InputWarning
    from ehtool.errors import InputError

    class NoCredentials(Exception):
        pass

    class Locked(LocalFileSystem):
        protocol = "locked"

        def _open(self, path, *args, **kwargs):
            raise NoCredentials("Unable to locate credentials")

    fsspec.register_implementation("locked", Locked, clobber=True)
    url = f"locked://{SCHED}"
    with pytest.raises(InputError, match=f"^{re.escape(url)}: cannot open: NoCredentials: "
                                         "Unable to locate credentials"):
        len(read_perfdata(url))
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        assert len(read_perfdata([url, str(SCHED)], errors="warn")) == 35
    assert [str(w.message) for w in warned if issubclass(w.category, InputWarning)] == [
        f"ehtool: {url}: cannot open: NoCredentials: Unable to locate credentials"]


def test_a_directory_is_the_recordings_under_it(tmp_path):
    """As the command line takes it: the perf.data files at any depth, in path order,
    told by their magic; none is a FileNotFoundError."""
    import shutil

    (tmp_path / "host-a" / "deep").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    shutil.copy(SCHED, tmp_path / "host-a" / "deep" / "perf.data.2026112700")
    shutil.copy(SCHED, tmp_path / "host-a" / "b.data")
    (tmp_path / "host-a" / "b.json").write_text("{}")
    df = read_perfdata(tmp_path, columns="file")
    assert df.npartitions == 2
    assert sorted(set(df.compute()["file"])) == [str(tmp_path / "host-a" / "b.data"),
                                                 str(tmp_path / "host-a" / "deep" /
                                                     "perf.data.2026112700")]
    with pytest.raises(FileNotFoundError, match="no recordings under"):
        read_perfdata(tmp_path / "empty")


def test_warn_gives_one_warning_per_partition_as_decode_reports_them():
    """A recording with 120 recoverable problems gave 120 warnings with errors="warn";
    decode, query and errors="raise" report one line (the first and how many more)."""
    from ehtool.analysis.dask_reader import InputWarning

    path = Path(__file__).resolve().parents[1] / "data" / "fuzz" / "split-before-id-index.data"
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        frame = read_perfdata(str(path), errors="warn").compute()
    messages = [str(w.message) for w in warned if issubclass(w.category, InputWarning)]
    done = subprocess.run([sys.executable, "-m", "ehtool", "decode", "--format", "jsonl",
                           str(path)], capture_output=True, text=True)
    assert done.returncode == 1 and len(done.stdout.splitlines()) == len(frame) > 0
    assert messages == [done.stderr.strip().replace("ehtool: error: ", "ehtool: ")]
    assert messages[0].endswith("(and 119 more problems)")
