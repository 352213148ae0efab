"""The bounded caches a process's inputs share."""

from __future__ import annotations

from ehtool.caches import Bounded


def test_a_bounded_cache_empties_itself_before_it_passes_its_size():
    cache: Bounded[str, int] = Bounded(2)
    made = []
    for key in "aabca":
        assert cache.made(key, lambda key=key: made.append(key) or ord(key)) == ord(key)
        assert len(cache) <= 2
    assert made == ["a", "b", "c", "a"]  # (c emptied it: a is made again)


def test_a_cache_bounded_by_bytes_keeps_no_key_bigger_than_its_bound():
    cache: Bounded[bytes, int] = Bounded(10, maxbytes=8)
    cache.keep(b"123456789", 1)
    assert cache == {}
    cache.keep(b"12345", 2)
    cache.keep(b"abc", 3)
    assert len(cache) == 2
    cache.keep(b"x", 4)  # (9 bytes in all: emptied first)
    assert cache == {b"x": 4}
    cache.clear()
    cache.keep(b"12345678", 5)
    assert cache == {b"12345678": 5}
