"""perf.data binary layouts as construct grammars: the single source of truth.

Every layout exists once per byte order; ``grammar_for(big_endian)`` returns the
(cached) :class:`PerfGrammar` for one order, chosen from the magic with
:func:`detect_byte_order`. The hot path (``hotpath.py``) and the writer
(``writer.py``) are derived from these definitions.

References: ``tools/perf/Documentation/perf.data-file-format.txt`` and
``include/uapi/linux/perf_event.h`` in the Linux tree.
"""

from __future__ import annotations

import enum
import functools

import construct as c
from construct import this

MAGIC = b"PERFILE2"
MAGIC_BE = MAGIC[::-1]
PIPE_HEADER_SIZE = 16
FILE_HEADER_SIZE = 104
ATTR_SIZE_VER0 = 64
#: the attr layout this module knows (VER8); longer attrs are cut, shorter zero-filled
ATTR_SIZE_KNOWN = 136


class RecordType(enum.IntEnum):
    """``perf_event_header.type`` values (kernel records < 64, perf's own >= 64)."""

    MMAP = 1
    LOST = 2
    COMM = 3
    EXIT = 4
    THROTTLE = 5
    UNTHROTTLE = 6
    FORK = 7
    READ = 8
    SAMPLE = 9
    MMAP2 = 10
    LOST_SAMPLES = 13
    HEADER_ATTR = 64
    HEADER_EVENT_TYPE = 65
    HEADER_TRACING_DATA = 66
    HEADER_BUILD_ID = 67
    FINISHED_ROUND = 68
    ID_INDEX = 69
    AUXTRACE_INFO = 70
    AUXTRACE = 71
    THREAD_MAP = 73
    CPU_MAP = 74
    EVENT_UPDATE = 78
    TIME_CONV = 79
    HEADER_FEATURE = 80
    COMPRESSED = 81
    FINISHED_INIT = 82
    COMPRESSED2 = 83


class Feature(enum.IntEnum):
    """Feature (header section) bit numbers."""

    TRACING_DATA = 1
    BUILD_ID = 2
    HOSTNAME = 3
    OSRELEASE = 4
    VERSION = 5
    ARCH = 6
    NRCPUS = 7
    CPUDESC = 8
    CPUID = 9
    TOTAL_MEM = 10
    CMDLINE = 11
    EVENT_DESC = 12
    SAMPLE_TIME = 21
    CLOCKID = 23
    DIR_FORMAT = 24
    CLOCK_DATA = 29


class SampleType(enum.IntFlag):
    """``perf_event_attr.sample_type`` bits."""

    IP = 1 << 0
    TID = 1 << 1
    TIME = 1 << 2
    ADDR = 1 << 3
    READ = 1 << 4
    CALLCHAIN = 1 << 5
    ID = 1 << 6
    CPU = 1 << 7
    PERIOD = 1 << 8
    STREAM_ID = 1 << 9
    RAW = 1 << 10
    IDENTIFIER = 1 << 16


class ReadFormat(enum.IntFlag):
    """``perf_event_attr.read_format`` bits."""

    TOTAL_TIME_ENABLED = 1
    TOTAL_TIME_RUNNING = 2
    ID = 4
    GROUP = 8
    LOST = 16


PERF_TYPE_TRACEPOINT = 2
EVENT_UPDATE_NAME = 2


#: ``perf_event_attr`` flag bitfield at offset 40, as (name, width) from bit 0 upwards
ATTR_FLAG_BITS: tuple[tuple[str, int], ...] = (
    ("disabled", 1), ("inherit", 1), ("pinned", 1), ("exclusive", 1),
    ("exclude_user", 1), ("exclude_kernel", 1), ("exclude_hv", 1), ("exclude_idle", 1),
    ("mmap", 1), ("comm", 1), ("freq", 1), ("inherit_stat", 1),
    ("enable_on_exec", 1), ("task", 1), ("watermark", 1), ("precise_ip", 2),
    ("mmap_data", 1), ("sample_id_all", 1), ("exclude_host", 1), ("exclude_guest", 1),
    ("exclude_callchain_kernel", 1), ("exclude_callchain_user", 1), ("mmap2", 1),
    ("comm_exec", 1), ("use_clockid", 1), ("context_switch", 1), ("write_backward", 1),
    ("namespaces", 1), ("ksymbol", 1), ("bpf_event", 1), ("aux_output", 1), ("cgroup", 1),
    ("text_poke", 1), ("build_id", 1), ("inherit_thread", 1), ("remove_on_exec", 1),
    ("sigtrap", 1), ("reserved_1", 26),
)


def detect_byte_order(magic: bytes) -> bool | None:
    """True for a big-endian perf.data magic, False for little-endian, None otherwise."""
    if magic == MAGIC:
        return False
    if magic == MAGIC_BE:
        return True
    return None


class NulPadded(c.Adapter):
    """Bytes up to the first NUL as a str (Latin-1); builds NUL-padded to 8 bytes."""

    def __init__(self, subcon: c.Construct, align: int = 8) -> None:
        super().__init__(subcon)
        self.align = align

    @staticmethod
    def text(data: bytes) -> str:
        """The string stored in ``data`` (the parse rule, for readers derived from it)."""
        end = data.find(b"\0")
        return (data if end < 0 else data[:end]).decode("latin-1")

    def _decode(self, obj, context, path):
        return self.text(obj)

    def _encode(self, obj, context, path):
        data = obj.encode("latin-1") + b"\0"
        return data + b"\0" * (-len(data) % self.align)


class SizedAttr(c.Construct):
    """A ``perf_event_attr`` stored in ``length`` bytes (a context expression or None).

    None means "as long as the attr's own ``size`` field says". The known VER8
    prefix is parsed (shorter attrs zero-filled); ``stored_size`` keeps the size
    on disk. Building writes ``stored_size`` bytes (default: the known size).
    """

    def __init__(self, attr: c.Construct, length=None) -> None:
        super().__init__()
        self.attr = attr
        self.length = length
        self.flagbuildnone = False

    def _parse(self, stream, context, path):
        if self.length is None:
            head = c.stream_read(stream, 8, path)
            size = self.attr.subcons[1].parse(head[4:8])  # the "size" field
            if size < 8:
                raise c.ExplicitError(f"perf_event_attr size {size} too small", path=path)
            data = head + c.stream_read(stream, size - 8, path)
        else:
            size = c.evaluate(self.length, context)
            data = c.stream_read(stream, size, path)
        known = data[:ATTR_SIZE_KNOWN].ljust(ATTR_SIZE_KNOWN, b"\0")
        obj = self.attr._parsereport(c.io.BytesIO(known), context, path)
        obj.stored_size = size
        return obj

    def _build(self, obj, stream, context, path):
        size = obj.get("stored_size", None) or obj.get("size", None) or ATTR_SIZE_KNOWN
        if self.length is not None:
            size = c.evaluate(self.length, context)
        data = self.attr.build(obj)
        c.stream_write(stream, data[:size].ljust(size, b"\0"), size, path)
        return obj

    def _sizeof(self, context, path):
        if self.length is None:
            raise c.SizeofError("attr size depends on its size field", path=path)
        return c.evaluate(self.length, context)


class PerfGrammar:
    """All perf.data layouts for one byte order (an ELFStructs-like factory product)."""

    def __init__(self, big_endian: bool) -> None:
        self.big_endian = big_endian
        if big_endian:
            u8, u16, u32, u64 = c.Int8ub, c.Int16ub, c.Int32ub, c.Int64ub
            s32, f64 = c.Int32sb, c.Float64b
        else:
            u8, u16, u32, u64 = c.Int8ul, c.Int16ul, c.Int32ul, c.Int64ul
            s32, f64 = c.Int32sl, c.Float64l
        self.u8, self.u16, self.u32, self.u64, self.s32 = u8, u16, u32, u64, s32
        self.endian = ">" if big_endian else "<"

        self.section = c.Struct("offset" / u64, "size" / u64)
        self.pipe_header = c.Struct("magic" / c.Bytes(8), "size" / u64)
        self.file_header = c.Struct(
            "magic" / c.Bytes(8),
            "size" / u64,
            "attr_size" / u64,
            "attrs" / self.section,
            "data" / self.section,
            "event_types" / self.section,
            "features" / c.Array(4, u64),
        )
        self.record_header = c.Struct("type" / u32, "misc" / u16, "size" / u16)

        # perf_event_attr flags: C bitfields, allocated from the low bit on little-endian
        # targets and from the high bit on big-endian ones.
        bits = [name / (c.Flag if width == 1 else c.BitsInteger(width))
                for name, width in ATTR_FLAG_BITS]
        if big_endian:
            self.attr_flags = c.BitStruct(*bits)
        else:
            self.attr_flags = c.ByteSwapped(c.BitStruct(*reversed(bits)))
        self.attr = c.Struct(
            "type" / u32,
            "size" / u32,
            "config" / u64,
            "sample_period" / u64,
            "sample_type" / u64,
            "read_format" / u64,
            "flags" / self.attr_flags,
            "wakeup_events" / u32,
            "bp_type" / u32,
            "config1" / u64,
            "config2" / u64,
            "branch_sample_type" / u64,
            "sample_regs_user" / u64,
            "sample_stack_user" / u32,
            "clockid" / s32,
            "sample_regs_intr" / u64,
            "aux_watermark" / u32,
            "sample_max_stack" / u16,
            "reserved_2" / u16,
            "aux_sample_size" / u32,
            "reserved_3" / u32,
            "sig_data" / u64,
            "config3" / u64,
        )
        #: an attr whose length is its own ``size`` field (HEADER_ATTR records)
        self.attr_self_sized = SizedAttr(self.attr)
        #: one attrs-section entry: attr (attr_size - 16 bytes) + its ids section
        self.file_attr = c.Struct(
            "attr" / SizedAttr(self.attr, this._.attr_size - 16),
            "ids" / self.section,
        )
        self.ids = c.GreedyRange(u64)

        nul_padded = NulPadded(c.GreedyBytes)
        self.perf_string = c.Prefixed(u32, NulPadded(c.GreedyBytes, align=64))

        # -- record bodies (after the 8-byte header, before any sample_id trailer) --
        pid_tid = ("pid" / u32, "tid" / u32)
        self.records: dict[int, c.Construct] = {
            RecordType.MMAP: c.Struct(*pid_tid, "addr" / u64, "len" / u64, "pgoff" / u64,
                                      "filename" / nul_padded),
            RecordType.LOST: c.Struct("id" / u64, "lost" / u64),
            RecordType.COMM: c.Struct(*pid_tid, "comm" / nul_padded),
            RecordType.EXIT: c.Struct("pid" / u32, "ppid" / u32, "tid" / u32, "ptid" / u32,
                                      "time" / u64),
            RecordType.FORK: c.Struct("pid" / u32, "ppid" / u32, "tid" / u32, "ptid" / u32,
                                      "time" / u64),
            RecordType.LOST_SAMPLES: c.Struct("lost" / u64),
            RecordType.HEADER_ATTR: c.Struct("attr" / self.attr_self_sized, "ids" / self.ids),
            RecordType.HEADER_EVENT_TYPE: c.Struct(
                "event_id" / u64, "name" / NulPadded(c.Bytes(64))),
            # the tracing blob follows the record (at record start + header.size),
            # uncounted in header.size; perf from 2025 adds a u32 pad (header.size 16)
            RecordType.HEADER_TRACING_DATA: c.Struct("size" / u32, "pad" / c.GreedyBytes),
            RecordType.HEADER_BUILD_ID: c.Struct(
                "pid" / s32, "build_id" / c.Bytes(24), "filename" / nul_padded),
            RecordType.FINISHED_ROUND: c.Struct(),
            RecordType.FINISHED_INIT: c.Struct(),
            RecordType.ID_INDEX: c.Struct(
                "nr" / u64,
                "entries" / c.Array(this.nr, c.Struct(
                    "id" / u64, "idx" / u64, "cpu" / u64, "tid" / u64)),
            ),
            RecordType.TIME_CONV: c.Struct(
                "time_shift" / u64, "time_mult" / u64, "time_zero" / u64,
                "extended" / c.Optional(c.Struct(
                    "time_cycles" / u64, "time_mask" / u64,
                    "cap_user_time_zero" / u8, "cap_user_time_short" / u8,
                    "reserved" / c.Bytes(6))),
            ),
            RecordType.EVENT_UPDATE: c.Struct(
                "type" / u64,
                "id" / u64,
                "data" / c.Switch(this.type, {
                    0: nul_padded,        # UNIT
                    1: f64,               # SCALE
                    EVENT_UPDATE_NAME: nul_padded,
                }, default=c.GreedyBytes),  # CPUS and newer kinds
            ),
            RecordType.HEADER_FEATURE: c.Struct("feature" / u64, "data" / c.GreedyBytes),
            # ``perf record -z``: pieces of one zstd stream (a record may continue in the next)
            RecordType.COMPRESSED: c.Struct("data" / c.GreedyBytes),
            RecordType.COMPRESSED2: c.Struct(
                "data_size" / c.Rebuild(u64, c.len_(this.data)), "data" / c.Bytes(this.data_size),
                "pad" / c.GreedyBytes),
            # AUXTRACE: ``size`` more bytes follow the record, uncounted in header.size
            RecordType.AUXTRACE: c.Struct(
                "size" / u64, "offset" / u64, "reference" / u64,
                "idx" / u32, "tid" / u32, "cpu" / u32, "reserved" / u32),
        }

        # -- feature sections --
        self.event_desc = c.Struct(
            "nr" / u32,
            "attr_size" / u32,
            "events" / c.Array(this.nr, c.Struct(
                "attr" / SizedAttr(self.attr, this._.attr_size),
                "nr_ids" / u32,
                "name" / c.Prefixed(u32, nul_padded),
                "ids" / c.Array(this.nr_ids, u64),
            )),
        )
        self.features: dict[int, c.Construct] = {
            Feature.HOSTNAME: self.perf_string,
            Feature.OSRELEASE: self.perf_string,
            Feature.VERSION: self.perf_string,
            Feature.ARCH: self.perf_string,
            Feature.CPUDESC: self.perf_string,
            Feature.CPUID: self.perf_string,
            Feature.NRCPUS: c.Struct("available" / u32, "online" / u32),
            Feature.TOTAL_MEM: u64,
            Feature.CMDLINE: c.PrefixedArray(u32, self.perf_string),
            Feature.EVENT_DESC: self.event_desc,
            Feature.SAMPLE_TIME: c.Struct("first" / u64, "last" / u64),
            Feature.CLOCKID: u64,
            Feature.DIR_FORMAT: u64,  # (its version: perf record --threads)
            Feature.CLOCK_DATA: c.Struct(
                "version" / u32, "clockid" / u32,
                "wall_clock_ns" / u64, "clockid_time_ns" / u64),
        }

    # -- sample layouts --------------------------------------------------------

    @functools.lru_cache(maxsize=256)  # noqa: B019 - one grammar object per byte order
    def sample_fields(self, sample_type: int, read_format: int) -> tuple[c.Construct, ...]:
        """The PERF_RECORD_SAMPLE fields (after the header) up to and including RAW."""
        st = sample_type
        u32, u64 = self.u32, self.u64
        fields: list[c.Construct] = []
        if st & SampleType.IDENTIFIER:
            fields.append("identifier" / u64)
        if st & SampleType.IP:
            fields.append("ip" / u64)
        if st & SampleType.TID:
            fields += ["pid" / u32, "tid" / u32]
        if st & SampleType.TIME:
            fields.append("time" / u64)
        if st & SampleType.ADDR:
            fields.append("addr" / u64)
        if st & SampleType.ID:
            fields.append("id" / u64)
        if st & SampleType.STREAM_ID:
            fields.append("stream_id" / u64)
        if st & SampleType.CPU:
            fields += ["cpu" / u32, "cpu_reserved" / u32]
        if st & SampleType.PERIOD:
            fields.append("period" / u64)
        if st & SampleType.READ:
            fields += self._read_fields(read_format)
        if st & SampleType.CALLCHAIN:
            fields += ["callchain_nr" / u64, "callchain" / c.Array(this.callchain_nr, u64)]
        if st & SampleType.RAW:
            fields += ["raw_size" / u32, "raw" / c.Bytes(this.raw_size)]
        return tuple(fields)

    def _read_fields(self, read_format: int) -> list[c.Construct]:
        u64 = self.u64
        rf = read_format
        if rf & ReadFormat.GROUP:
            value = c.Struct(
                "value" / u64,
                *(["id" / u64] if rf & ReadFormat.ID else []),
                *(["lost" / u64] if rf & ReadFormat.LOST else []),
            )
            out = ["read_nr" / u64]
            if rf & ReadFormat.TOTAL_TIME_ENABLED:
                out.append("read_time_enabled" / u64)
            if rf & ReadFormat.TOTAL_TIME_RUNNING:
                out.append("read_time_running" / u64)
            out.append("read_values" / c.Array(this.read_nr, value))
            return out
        out = ["read_value" / u64]
        if rf & ReadFormat.TOTAL_TIME_ENABLED:
            out.append("read_time_enabled" / u64)
        if rf & ReadFormat.TOTAL_TIME_RUNNING:
            out.append("read_time_running" / u64)
        if rf & ReadFormat.ID:
            out.append("read_id" / u64)
        if rf & ReadFormat.LOST:
            out.append("read_lost" / u64)
        return out

    @functools.lru_cache(maxsize=256)  # noqa: B019
    def sample(self, sample_type: int, read_format: int) -> c.Struct:
        """A whole PERF_RECORD_SAMPLE record (header included) for one attr layout."""
        return c.Struct(
            "header" / self.record_header,
            *self.sample_fields(sample_type, read_format),
            "rest" / c.GreedyBytes,  # BRANCH_STACK, REGS_USER, ... (not decoded)
        )

    @functools.lru_cache(maxsize=256)  # noqa: B019
    def sample_id(self, sample_type: int) -> c.Struct:
        """The ``sample_id_all`` trailer at the end of non-sample records."""
        st = sample_type
        u32, u64 = self.u32, self.u64
        fields: list[c.Construct] = []
        if st & SampleType.TID:
            fields += ["pid" / u32, "tid" / u32]
        if st & SampleType.TIME:
            fields.append("time" / u64)
        if st & SampleType.ID:
            fields.append("id" / u64)
        if st & SampleType.STREAM_ID:
            fields.append("stream_id" / u64)
        if st & SampleType.CPU:
            fields += ["cpu" / u32, "cpu_reserved" / u32]
        if st & SampleType.IDENTIFIER:
            fields.append("identifier" / u64)
        return c.Struct(*fields)

    def record(self, rtype: int, body_size: int, trailer: c.Struct | None = None) -> c.Struct:
        """A whole record of ``rtype`` whose body (without trailer) is ``body_size`` bytes."""
        body = self.records.get(rtype, c.GreedyBytes)
        parts = ["header" / self.record_header, "body" / c.FixedSized(body_size, body)]
        if trailer is not None:
            parts.append("sample_id" / trailer)
        return c.Struct(*parts)


@functools.cache
def grammar_for(big_endian: bool) -> PerfGrammar:
    """The grammar for one byte order (built once, then cached)."""
    return PerfGrammar(big_endian)
