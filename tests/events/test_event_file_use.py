"""How an EventFile may be used from Python: one iteration at a time, not once closed,
arguments checked when it is opened; decode_to's errors name their place with any -j."""

from __future__ import annotations

import io
import pathlib

import pytest

import ehtool
from ehtool.decode.pipeline import DecodeOptions, decode_to
from ehtool.errors import InputError, combined

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
REF = str(DATA / "eh-612.data")  # (a file-mode recording of EventHeader events)
PIPE = str(DATA / "eh-612-pipe.data")


#: the ways an EventFile is iterated: its events, its rows, its rows a list at a time
WAYS = {"events": iter, "rows": lambda f: f.rows(), "row_batches": lambda f: f.row_batches()}


@pytest.mark.parametrize("second", WAYS)
@pytest.mark.parametrize("first", WAYS)
@pytest.mark.parametrize("path", [REF, PIPE])
def test_a_second_iteration_while_one_is_paused_is_refused(path, first, second):
    """Both read the file with its one reader: the paused one failed later with an
    AttributeError (a thread update where a sample was expected)."""
    with ehtool.open(path) as f:
        it = WAYS[first](f)
        head = next(it)
        with pytest.raises(RuntimeError, match="one iteration at a time"):
            next(WAYS[second](f))
        rest = list(it)
        assert head
        if first != "row_batches":
            assert len(rest) + 1 == sum(1 for _ in ehtool.open(path))
        if path == REF:  # (file mode: it may be read again once the first is done)
            assert sum(1 for _ in WAYS[first](f)) == len(rest) + 1


@pytest.mark.parametrize("way", WAYS)
def test_a_closed_event_file_says_so(way):
    f = ehtool.open(REF)
    f.close()
    with pytest.raises(ValueError, match="closed"):
        list(WAYS[way](f))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("path", [REF, PIPE, str(DATA / "eh-612-z.data"),
                                  str(DATA / "threads" / "sched-threads.data")])
def test_an_iteration_goes_no_further_once_the_file_is_closed(path, way):
    """An iterator used after close() failed in the mapped file's reader (ValueError:
    mmap closed or invalid, a traceback from the walk) or, where its records were read
    already (pipe mode, -z, a small file), went on to the end."""
    f = ehtool.open(path)
    it = WAYS[way](f)
    next(it)
    f.close()
    with pytest.raises(ValueError, match=f"^{path}: the (EventFile|file) was closed during"):
        for _ in it:
            pass


@pytest.mark.parametrize("kw", [{"order": "bogus"}, {"part": (5, 2)}])
def test_bad_arguments_are_refused_before_the_file_is_opened(kw, recwarn):
    with pytest.raises(ValueError):
        ehtool.open(REF, **kw)
    assert not [w for w in recwarn if issubclass(w.category, ResourceWarning)]


def test_decode_to_errors_name_their_place_with_workers_too(tmp_path):
    cut = tmp_path / "cut.data"
    cut.write_bytes(pathlib.Path(REF).read_bytes()[:30_000])
    inputs = [REF, str(cut), str(tmp_path / "missing.data")]
    found = []
    for jobs in (1, 2, 3):
        with open(tmp_path / f"out{jobs}.json", "wb") as out:
            errors = decode_to(out, inputs, DecodeOptions(jobs=jobs))
        found.append([(type(e), str(e), e.path, e.offset) for e in errors])
    assert found[0][0][2:] == (str(cut), 0x7470)  # (the last whole record before the cut)
    assert found[0] == found[1] == found[2]


def test_decode_to_takes_path_like_inputs_and_refuses_one_path():
    out = io.BytesIO()
    assert decode_to(out, [pathlib.Path(REF)], DecodeOptions(jobs=1)) == []
    assert out.getvalue().startswith(b'{\n"' + REF.encode())
    with pytest.raises(TypeError, match="a list of paths"):
        decode_to(io.BytesIO(), REF, DecodeOptions(jobs=1))


def test_combined_problems_keep_the_first_ones_place():
    both = combined([InputError("a", "f.data", 16), InputError("b", "f.data", 32)])
    assert (str(both), both.path, both.offset) == ("f.data: offset 0x10: a (and 1 more "
                                                    "problems)", "f.data", 16)
