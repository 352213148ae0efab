"""ehtool.values.text: nanoseconds per call of the per-field formatters.

    python3 bench/bench_values.py [--number N] [--repeat R]

Prints the best of R runs of N calls for each case (loop overhead included; the
``baseline`` row is an empty call for comparison).
"""

from __future__ import annotations

import argparse
import struct
import timeit

from ehtool.values import text as v

F32_THIRD = struct.unpack("<I", struct.pack("<f", 1 / 3))[0]

CASES = [
    ("baseline (no-op call)", "f(x)", lambda x: x, b""),
    ("utf8_json ascii 12 B", "f(x)", v.utf8_json, b"HowAreYou?12"),
    ("utf8_json ascii 64 B", "f(x)", v.utf8_json, b"x" * 64),
    ("utf8_json non-ascii 24 B", "f(x)", v.utf8_json, "héllo wörld ünïcode".encode()),
    ("utf8_json invalid 12 B", "f(x)", v.utf8_json, b"abc\xffdef\x80ghi"),
    ("utf8_json memoryview 12 B", "f(x)", v.utf8_json, memoryview(b"HowAreYou?12")),
    ("latin1_json 12 B", "f(x)", v.latin1_json, b"HowAreYou?\xfe\xff"),
    ("utf16_json 12 units", "f(x, False)", v.utf16_json, "HowAreYou?12".encode("utf-16-le")),
    ("utf32_json 12 units", "f(x, False)", v.utf32_json, "HowAreYou?12".encode("utf-32-le")),
    ("bom_string_json utf-16", "f(x, 1, False)", v.bom_string_json,
     "\ufeffHowAreYou".encode("utf-16-le")),
    ("hex_int", "f(x)", v.hex_int, 60000),
    ("hex_bytes 16 B", "f(x)", v.hex_bytes, bytes(range(16))),
    ("boolean_json", "f(x, 4)", v.boolean_json, 1),
    ("errno_json named", "f(x)", v.errno_json, 13),
    ("errno_json unnamed", "f(x)", v.errno_json, 0xF0F1F2F3),
    ("float64_json 6.28", "f(x)", v.float64_json, 6.28),
    ("float64_json 1/3", "f(x)", v.float64_json, 1 / 3),
    ("float64_json 1e+15", "f(x)", v.float64_json, 1e15),
    ("float32_json 3.14 (cached)", "f(x)", v.float32_json, 3.14),
    ("float32_bits_json 1/3 (cached)", "f(x)", v.float32_bits_json, F32_THIRD),
    ("float32 1/3 uncached (exact search)", "f(x)", v._float32_text, F32_THIRD),
    ("float32 1e-45 uncached (exact search)", "f(x)", v._float32_text, 1),
    ("time_json", "f(x)", v.time_json, 1700000000),
    ("utc_ns_json", "f(x)", v.utc_ns_json, 1700000000123456789),
    ("seconds_json", "f(x)", v.seconds_json, 123456789012345),
    ("uuid_json", "f(x)", v.uuid_json, bytes(range(16))),
    ("ipv4_json", "f(x)", v.ipv4_json, b"\x7f\x00\x00\x01"),
    ("ipv6_json no zeros", "f(x)", v.ipv6_json, bytes(range(1, 17))),
    ("ipv6_json 2001:db8::1", "f(x)", v.ipv6_json,
     bytes.fromhex("20010db8000000000000000000000001")),
    ("port_json", "f(x)", v.port_json, b"\x00\x50"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    width = max(len(name) for name, *_ in CASES)
    print(f"{'case':{width}}  ns/call  result")
    for name, stmt, func, arg in CASES:
        best = min(timeit.repeat(stmt, globals={"f": func, "x": arg},
                                 number=args.number, repeat=args.repeat))
        result = eval(stmt, {"f": func, "x": arg})  # noqa: S307 - fixed local expressions
        print(f"{name:{width}}  {best / args.number * 1e9:7.0f}  {result!r}"[:110])


if __name__ == "__main__":
    main()
