"""The construct grammar on real bytes: golden perf.data, attr sizes and bit orders."""

from __future__ import annotations

import struct

import construct as c
import pytest

from ehtool.perfdata.grammar import (
    ATTR_FLAG_BITS,
    Feature,
    RecordType,
    detect_byte_order,
    grammar_for,
)
from ehtool.perfdata.tracing_data import build_tracing_data, parse_tracing_data


def _golden(golden_perf):
    data = golden_perf.read_bytes()
    g = grammar_for(False)
    return data, g, g.file_header.parse(data)


def _feature(data, g, h, bit):
    bits = [b for b in range(256) if h.features[b // 64] >> (b % 64) & 1]
    at = h.data.offset + h.data.size + 16 * bits.index(bit)
    sec = g.section.parse(data[at:at + 16])
    return data[sec.offset:sec.offset + sec.size]


def test_magic_detects_byte_order():
    assert detect_byte_order(b"PERFILE2") is False
    assert detect_byte_order(b"2ELIFREP") is True
    assert detect_byte_order(b"PERFFILE") is None


def test_golden_file_header(golden_perf):
    data, g, h = _golden(golden_perf)
    assert (h.size, h.attr_size) == (104, 152)
    assert (h.attrs.offset, h.attrs.size) == (0x8A8, 0x688)
    assert (h.data.offset, h.data.size) == (0xF30, 0x21D88)
    bits = [b for b in range(256) if h.features[b // 64] >> (b % 64) & 1]
    assert bits == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 20, 21, 23, 25, 26, 28,
                    29, 31]


def test_golden_attrs_and_flags(golden_perf):
    data, g, h = _golden(golden_perf)
    entries = [g.file_attr.parse(data[h.attrs.offset + i * 152:], attr_size=152)
               for i in range(h.attrs.size // 152)]
    assert len(entries) == 11
    sched = entries[9].attr
    assert (sched.type, sched.size, sched.config, sched.sample_type) == (2, 136, 391, 0x10587)
    assert sched.stored_size == 136
    assert sched.read_format == 20 and sched.clockid == 1
    f = sched.flags
    assert f.disabled and f.inherit and f.sample_id_all and f.use_clockid and f.exclude_guest
    assert not (f.mmap or f.comm or f.freq or f.pinned or f.sigtrap)
    # the flag word itself: bits 0, 1, 18, 20, 25
    word = struct.unpack_from("<Q", data, h.attrs.offset + 9 * 152 + 40)[0]
    assert word == (1 << 0) | (1 << 1) | (1 << 18) | (1 << 20) | (1 << 25)
    dummy = entries[10].attr
    assert (dummy.type, dummy.config, dummy.sample_type) == (1, 9, 0x10087)
    ids = g.ids.parse(data[entries[0].ids.offset:entries[0].ids.offset + entries[0].ids.size])
    assert list(ids) == list(range(6928, 6952))


@pytest.mark.parametrize("bit,width", [(0, 1), (15, 2), (18, 1), (25, 1), (37, 1)])
def test_attr_flag_bit_numbering_both_byte_orders(bit, width):
    name = next(n for n, (pos, _w) in _flag_positions().items() if pos == bit)
    value = (1 << width) - 1
    le = grammar_for(False).attr_flags.parse(struct.pack("<Q", value << bit))
    assert le[name] in (True, value)
    # big-endian C bitfields start at the most significant bit: bit N = (be >> (63 - N)) & 1
    be_word = 0
    for k in range(width):
        be_word |= 1 << (63 - (bit + k))
    be = grammar_for(True).attr_flags.parse(struct.pack(">Q", be_word))
    assert be[name] in (True, value)
    others = [n for n in _flag_positions() if n != name]
    assert not any(le[n] for n in others) and not any(be[n] for n in others)


def _flag_positions():
    pos, out = 0, {}
    for name, width in ATTR_FLAG_BITS:
        out[name] = (pos, width)
        pos += width
    return dict(sorted(out.items(), key=lambda kv: kv[1][0]))


def test_precise_ip_value_order():
    # precise_ip = 2 (binary 10): LE bit 16 set; BE: the field's high bit comes first (bit 15)
    assert grammar_for(False).attr_flags.parse(struct.pack("<Q", 1 << 16)).precise_ip == 2
    assert grammar_for(True).attr_flags.parse(struct.pack(">Q", 1 << (63 - 15))).precise_ip == 2


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("size", [64, 72, 80, 96, 104, 112, 120, 128, 136, 144])
def test_attr_of_every_size(big, size):
    g = grammar_for(big)
    full = g.attr.build(dict(
        type=2, size=size, config=0x1234, sample_period=1, sample_type=0x10587, read_format=4,
        flags={n: (0 if w > 1 else n == "sample_id_all") for n, w in ATTR_FLAG_BITS},
        wakeup_events=1, bp_type=0, config1=5, config2=6, branch_sample_type=7,
        sample_regs_user=8, sample_stack_user=9, clockid=1, sample_regs_intr=10,
        aux_watermark=11, sample_max_stack=12, reserved_2=0, aux_sample_size=13,
        reserved_3=0, sig_data=14, config3=15))
    stored = full[:size] + b"\xee" * max(0, size - len(full))  # unknown tail beyond VER8
    ids = struct.pack(g.endian + "QQ", 100, 101)
    obj = g.attr_self_sized.parse(stored + ids)
    assert obj.stored_size == size and obj.size == size
    assert (obj.config, obj.sample_type, obj.flags.sample_id_all) == (0x1234, 0x10587, True)
    assert obj.config2 == (6 if size >= 72 else 0)
    assert obj.clockid == (1 if size >= 96 else 0)
    assert obj.sig_data == (14 if size >= 128 else 0)
    assert obj.config3 == (15 if size >= 136 else 0)
    rec = g.records[RecordType.HEADER_ATTR].parse(stored + ids)
    assert list(rec.ids) == [100, 101] and rec.attr.stored_size == size


def test_attr_size_too_small_is_an_error():
    g = grammar_for(False)
    with pytest.raises(c.ConstructError):
        g.attr_self_sized.parse(struct.pack("<II", 2, 4) + b"\0" * 64)


def test_golden_features(golden_perf):
    data, g, h = _golden(golden_perf)
    f = g.features
    assert f[Feature.HOSTNAME].parse(_feature(data, g, h, 3)) == "dcook2"
    osrelease = f[Feature.OSRELEASE].parse(_feature(data, g, h, 4))
    assert osrelease == "6.3.0-rc7-microsoft-standard-WSL2+"
    assert f[Feature.VERSION].parse(_feature(data, g, h, 5)) == "6.6.13"
    assert f[Feature.ARCH].parse(_feature(data, g, h, 6)) == "x86_64"
    nr = f[Feature.NRCPUS].parse(_feature(data, g, h, 7))
    assert (nr.available, nr.online) == (24, 24)
    cmd = f[Feature.CMDLINE].parse(_feature(data, g, h, 11))
    assert cmd[:4] == ["/usr/bin/perf", "record", "-k", "monotonic"] and len(cmd) == 6
    assert f[Feature.CLOCKID].parse(_feature(data, g, h, 23)) == 1
    cd = f[Feature.CLOCK_DATA].parse(_feature(data, g, h, 29))
    assert (cd.version, cd.clockid) == (1, 1)
    assert (cd.wall_clock_ns, cd.clockid_time_ns) == (1711586712588060000, 12782502283276)
    st = f[Feature.SAMPLE_TIME].parse(_feature(data, g, h, 21))
    assert (st.first, st.last) == (12782555136396, 12786184517299)
    ed = f[Feature.EVENT_DESC].parse(_feature(data, g, h, 12))
    names = [e.name for e in ed.events]
    assert names[2] == "user_events:TestProviderC_L4K85"
    assert names[9:] == ["sched:sched_switch", "dummy:HG"]
    assert list(ed.events[9].ids)[:2] == [7144, 7145] and ed.events[9].nr_ids == 24
    # perf strings round-trip to the same padded bytes
    assert f[Feature.HOSTNAME].build("dcook2") == _feature(data, g, h, 3)


def test_tracing_data_golden_round_trip(golden_perf):
    data, g, h = _golden(golden_perf)
    blob = _feature(data, g, h, 1)
    td = parse_tracing_data(blob)
    assert (td.version, td.big_endian, td.long_size, td.page_size) == ("0.6", False, 8, 4096)
    assert [s for s, _ in td.formats] == ["user_events"] * 9 + ["sched"]
    ids = td.format_index()
    assert sorted(ids) == [391] + list(range(2761, 2770))
    assert td.formats[ids[391]][1].startswith("name: sched_switch\nID: 391\nformat:")
    assert b"header_page" not in td.header_page and b"commit" in td.header_page
    assert build_tracing_data(td) == blob
    td.big_endian = True
    be = build_tracing_data(td)
    assert be[be.index(b"0.6\0") + 4] == 1  # the endian byte
    assert struct.unpack_from(">I", be, be.index(b"0.6\0") + 6)[0] == 4096
    assert parse_tracing_data(be) == td


def test_tracing_data_rejects_bad_signature():
    with pytest.raises(c.ConstructError):
        parse_tracing_data(b"\x17\x08\x44tracinx0.6\0")


@pytest.mark.parametrize("big", [False, True])
def test_sample_id_trailer_order(big):
    g = grammar_for(big)
    tr = g.sample_id(0x10587)  # TID TIME CPU IDENTIFIER (+ IP, PERIOD, RAW ignored)
    assert [s.name for s in tr.subcons] == ["pid", "tid", "time", "cpu", "cpu_reserved",
                                            "identifier"]
    assert tr.sizeof() == 32


@pytest.mark.parametrize("big_endian", [False, True])
def test_sizes_offsets_and_hot_structs_come_from_the_grammar(big_endian):
    """The constants and structs the readers use are the grammar's (perf.data's layout
    is written once, in grammar.py)."""
    from ehtool.perfdata import grammar as gm
    from ehtool.perfdata.compression import compressed_data, compressed_size
    from ehtool.perfdata.hotpath import body_offset, header_struct, identified_header_struct

    g = grammar_for(big_endian)
    assert g.pipe_header.sizeof() == gm.PIPE_HEADER_SIZE
    assert g.file_header.sizeof() == gm.FILE_HEADER_SIZE
    header = dict(type=RecordType.SAMPLE, misc=2, size=24)
    raw = g.record_header.build(header) + (0x1122334455667788).to_bytes(
        8, "big" if big_endian else "little") + bytes(8)
    assert header_struct(g).unpack_from(raw) == (9, 2, 24)
    assert identified_header_struct(g).unpack_from(raw) == (9, 2, 24, 0x1122334455667788)
    u64 = struct.Struct(g.endian + "Q").unpack_from
    record = g.record(RecordType.COMPRESSED2, 24)
    built = record.build(dict(header=dict(type=RecordType.COMPRESSED2, misc=0, size=32),
                              body=dict(data=b"zstdzstd", pad=bytes(8))))
    assert compressed_size(built, 0, len(built), u64) == 8
    assert compressed_data(True, built, 0, len(built), u64) == b"zstdzstd"
    assert body_offset(g, RecordType.COMPRESSED2, "data") == 16
    assert body_offset(g, RecordType.EVENT_UPDATE, "id") == 16
    with pytest.raises(KeyError):
        body_offset(g, RecordType.LOST, "nope")


def test_id_offsets_come_from_the_grammar():
    """Where the sample id is, for every combination of the fields before it: the
    offsets the reader takes from the grammar equal perf's rule, written out here."""
    import itertools

    from ehtool.perfdata.grammar import SampleType as S
    from ehtool.perfdata.hotpath import id_offsets

    def by_hand(st: int) -> tuple[int, int]:
        if st & S.IDENTIFIER:  # right after the header; last in the trailer
            return 8, 8
        if st & S.ID:  # after IP, TID, TIME, ADDR; before STREAM_ID and CPU in the trailer
            before = S.IP | S.TID | S.TIME | S.ADDR
            return (8 + 8 * bin(st & before).count("1"),
                    8 + 8 * bin(st & (S.CPU | S.STREAM_ID)).count("1"))
        return -1, -1

    bits = [S.IDENTIFIER, S.IP, S.TID, S.TIME, S.ADDR, S.ID, S.STREAM_ID, S.CPU, S.PERIOD,
            S.RAW]
    for big_endian in (False, True):
        g = grammar_for(big_endian)
        for n in range(len(bits) + 1):
            for combo in itertools.combinations(bits, n):
                st = sum(combo)
                assert id_offsets(g, st) == by_hand(st), hex(st)
