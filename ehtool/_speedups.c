/* ehtool._speedups: the decode hot loops in C (optional; the Python code is the reference).
 *
 * Scanner  -- reads runs of consecutive PERF_RECORD_SAMPLEs of one fixed layout into
 *             Sample tuples (ehtool.perfdata.hotpath.make_run_scanner in Python).
 * Plan     -- renders the payload of one EventHeader metadata as JSON by interpreting
 *             a flat op list (ehtool.eventheader.cplan compiles it from the same field
 *             definitions as the generated Python renderer); render_record does the
 *             same for a plain tracepoint record (ehtool.output.tracefs_fields).
 * Formatter -- the per-sample loop of SampleFormatter.format_many for its two hot
 *             cases (plain tracepoints and EventHeader cache hits, UTC times); every
 *             other sample goes to the Python handler made for its event.
 *
 * Both take their layouts from the Python side, which derives them from the construct
 * grammars, and both defer to Python for anything unusual: the Scanner stops at the first
 * record it does not handle, and the Plan calls the Python renderer of the same metadata
 * whenever an event is malformed or a value needs a Python formatter's rules, so the
 * output and the errors are the Python ones by construction.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <arpa/inet.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

/* -- byte order helpers ------------------------------------------------------------ */

static inline uint64_t
read_uint(const unsigned char *q, int size, int little)
{
    uint64_t v = 0;
    if (little) {
        for (int i = size - 1; i >= 0; i--)
            v = (v << 8) | q[i];
    }
    else {
        for (int i = 0; i < size; i++)
            v = (v << 8) | q[i];
    }
    return v;
}

static inline int64_t
sign_extend(uint64_t v, int size)
{
    if (size == 8)
        return (int64_t)v;
    int shift = 64 - 8 * size;
    return (int64_t)(v << shift) >> shift;
}

static inline int
plain_char(uint64_t v) /* printable ASCII that JSON writes as itself */
{
    return v >= 0x20 && v < 0x7f && v != '"' && v != '\\';
}

/* -- growable output buffer -------------------------------------------------------- */

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t cap;
    char local[2048];
} Out;

static void
out_init(Out *o)
{
    o->data = o->local;
    o->len = 0;
    o->cap = sizeof(o->local);
}

static void
out_free(Out *o)
{
    if (o->data != o->local)
        PyMem_Free(o->data);
}

static int
out_reserve(Out *o, Py_ssize_t extra)
{
    if (o->len + extra <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2;
    while (cap < o->len + extra)
        cap *= 2;
    char *d;
    if (o->data == o->local) {
        d = PyMem_Malloc(cap);
        if (d != NULL)
            memcpy(d, o->data, o->len);
    }
    else {
        d = PyMem_Realloc(o->data, cap);
    }
    if (d == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->data = d;
    o->cap = cap;
    return 0;
}

static inline int
out_put(Out *o, const char *s, Py_ssize_t n)
{
    if (out_reserve(o, n) < 0)
        return -1;
    memcpy(o->data + o->len, s, n);
    o->len += n;
    return 0;
}

static int
out_put_bytes(Out *o, PyObject *b)
{
    return out_put(o, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b));
}

static int
out_put_u64(Out *o, uint64_t v)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return out_put(o, tmp + sizeof(tmp) - n, n);
}

static int
out_put_i64(Out *o, int64_t v)
{
    if (v >= 0)
        return out_put_u64(o, (uint64_t)v);
    if (out_put(o, "-", 1) < 0)
        return -1;
    return out_put_u64(o, (uint64_t)0 - (uint64_t)v);
}

static int
out_put_hex(Out *o, uint64_t v) /* "0x%X" with the quotes */
{
    static const char digits[] = "0123456789ABCDEF";
    char tmp[20];
    int n = 0;
    tmp[sizeof(tmp) - 1 - n++] = '"';
    do {
        tmp[sizeof(tmp) - 1 - n++] = digits[v & 15];
        v >>= 4;
    } while (v);
    tmp[sizeof(tmp) - 1 - n++] = 'x';
    tmp[sizeof(tmp) - 1 - n++] = '0';
    tmp[sizeof(tmp) - 1 - n++] = '"';
    return out_put(o, tmp + sizeof(tmp) - n, n);
}

/* ================================================================================== */
/* Plan: EventHeader payload renderer                                                 */
/* ================================================================================== */

enum { OP_LIT = 0, OP_FIXED = 1, OP_STR = 2, OP_ARRAY = 3, OP_SEEK = 4, OP_CSTR = 5, OP_CALL = 6 };
enum { FX_UNSIGNED = 0, FX_SIGNED = 1, FX_HEX = 2, FX_PORT = 3, FX_PY = 4, FX_CHAR = 5,
       FX_BOOL = 6, FX_HEXBYTES = 7, FX_UUID = 8, FX_ERRNO = 9, FX_TIME = 10, FX_FLOAT = 11,
       FX_IP = 12, FX_CHAR_TEXT = 13 /* FX_CHAR, a lone surrogate as the text \\udxxx */ };
/* STR flags */
enum { STR_ASCII = 1, STR_BOM = 2, STR_HEX = 4, STR_UTF = 8, STR_SURROGATE_TEXT = 16 };

typedef struct {
    int op;
    int size;        /* FIXED: value size; STR: code-unit size */
    int kind;        /* FIXED: FX_*; STR: 1 for zero-terminated, 0 for counted */
    int fast;        /* STR: STR_ASCII: printable ASCII renders as itself between quotes;
                        STR_BOM: after a leading BOM, which picks the unit size and order;
                        STR_HEX: the bytes as hex pairs (output.values.hex_bytes);
                        STR_UTF: UTF-8/16/32 text written here too (put_utf8, put_units);
                        STR_SURROGATE_TEXT: with it, a lone surrogate as the text \\udxxx
                        (values.typed_json's rule), not as the JSON escape \udxxx */
    int count;       /* ARRAY: constant count, 0 when it is in the payload; SEEK: offset */
    int per;         /* ARRAY: MoveNext steps per element (structs), 0 otherwise */
    Py_ssize_t body; /* ARRAY: number of ops of the element, which follow */
    PyObject *obj;   /* LIT: bytes; FIXED/STR/CSTR: the Python formatter (bytes -> bytes);
                        CALL: a Python getter of the whole record (raw -> bytes) */
    PyObject *open, *sep, *close, *empty; /* ARRAY: bytes */
    PyObject *table; /* FIXED FX_ERRNO: tuple of the JSON of the values below its length;
                        FX_FLOAT size 4: the JSON of the 256 powers of two by exponent */
} Op;

typedef struct {
    PyObject_HEAD
    Op *ops;
    Py_ssize_t nops;
    int little;
    long budget; /* MoveNext steps left for the dynamic part (limit - static) */
    Py_ssize_t min_len; /* render_record: shorter records go to the fallback */
    PyObject *fallback; /* the Python renderer: render(data, p, o) or render(raw) */
} PlanObject;

/* Failure codes of the interpreter: FAIL_PY means a Python exception is set. */
enum { OK = 0, FAIL_DEFER = 1, FAIL_PY = 2 };

typedef struct {
    PyObject *object; /* the data as a Python object (for CALL) */
    const unsigned char *data;
    Py_ssize_t len;
    Py_ssize_t base; /* where rendering started (SEEK offsets count from it) */
    Py_ssize_t p;
    long steps;
    int little;
    long budget;
    Out *out; /* where the members are written */
    /* the walk's marks (a filter program's fields): when the walk reaches the top-level
     * op marks[next], at[next] = p (marks in op order; nmarks 0: none) */
    const Op *const *marks;
    Py_ssize_t *at;
    Py_ssize_t nmarks, next;
} Ctx;

/* ``"01 ab ff"``: lowercase pairs separated by spaces (output.values.hex_bytes) */
static int
put_hex_bytes(Out *o, const unsigned char *q, Py_ssize_t n)
{
    static const char digits[] = "0123456789abcdef";
    if (out_reserve(o, 3 * n + 2) < 0)
        return FAIL_PY;
    char *w = o->data + o->len;
    *w++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i)
            *w++ = ' ';
        *w++ = digits[q[i] >> 4];
        *w++ = digits[q[i] & 15];
    }
    *w++ = '"';
    o->len = w - o->data;
    return OK;
}

/* ``"xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"`` in stored byte order (output.values.uuid_json) */
static int
put_uuid(Out *o, const unsigned char *q)
{
    static const char digits[] = "0123456789abcdef";
    char text[38];
    int w = 0;
    text[w++] = '"';
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            text[w++] = '-';
        text[w++] = digits[q[i] >> 4];
        text[w++] = digits[q[i] & 15];
    }
    text[w++] = '"';
    return out_put(o, text, w) < 0 ? FAIL_PY : OK;
}

/* -- values the Python formatters of ehtool.values.text also write -------------------
 * Each returns OK, FAIL_PY, or FAIL_DEFER when the value is left to the Python formatter
 * (rare inputs whose rules are only written there); tests/speedups/test_values.py
 * compares them with the Python formatters. */

/* errno_json: the table's text below its length, else "ERRNO(n)" with n signed 32-bit */
static int
put_errno(Out *o, uint32_t v, PyObject *table)
{
    if (table == NULL || !PyTuple_Check(table))
        return FAIL_DEFER;
    if (v < (uint64_t)PyTuple_GET_SIZE(table)) {
        PyObject *text = PyTuple_GET_ITEM(table, v);
        if (!PyBytes_Check(text))
            return FAIL_DEFER;
        return out_put_bytes(o, text) < 0 ? FAIL_PY : OK;
    }
    char buf[32];
    int n = snprintf(buf, sizeof buf, "\"ERRNO(%d)\"", (int32_t)v);
    return out_put(o, buf, n) < 0 ? FAIL_PY : OK;
}

/* time_json: "YYYY-MM-DDTHH:MM:SS" (UTC, proleptic Gregorian, the year as %04d), or
 * "TIME(n)" when year - 1900 does not fit an int (glibc gmtime_r fails) */
static int
put_time_seconds(Out *o, int64_t sec)
{
    int64_t days = sec / 86400, rem = sec % 86400;
    if (rem < 0) {
        rem += 86400;
        days -= 1;
    }
    /* Howard Hinnant's days-to-civil, as ehtool.values.times.civil_from_days (no
     * overflow: |days| < 2**47) */
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    int64_t day = doy - (153 * mp + 2) / 5 + 1;
    int64_t month = mp < 10 ? mp + 3 : mp - 9;
    int64_t year = yoe + era * 400 + (month <= 2);
    char buf[48];
    int n;
    if (year - 1900 < INT32_MIN || year - 1900 > INT32_MAX)
        n = snprintf(buf, sizeof buf, "\"TIME(%lld)\"", (long long)sec);
    else
        n = snprintf(buf, sizeof buf, "\"%04lld-%02d-%02dT%02d:%02d:%02d\"", (long long)year,
                     (int)month, (int)day, (int)(rem / 3600), (int)(rem / 60 % 60),
                     (int)(rem % 60));
    return out_put(o, buf, n) < 0 ? FAIL_PY : OK;
}

/* The std::to_chars text of sign * digits * 10**e (digits: n of them, no trailing zero,
 * the shortest that read back to ``value``): fixed when -(n + 3) <= e <= 5 (-3 <= e <= 4
 * for one digit), else scientific; fixed with e >= 0 prints the exact integer value. */
static int
put_shortest(Out *o, int neg, const char *digits, int n, int e, double value)
{
    char buf[400];
    int w = 0;
    if (neg)
        buf[w++] = '-';
    int fixed = n == 1 ? (e >= -3 && e <= 4) : (e >= -(n + 3) && e <= 5);
    if (fixed && e >= 0) {
        w += snprintf(buf + w, sizeof buf - w, "%.0f", fabs(value));
    }
    else if (fixed) {
        int point = n + e;
        if (point > 0) {
            memcpy(buf + w, digits, point);
            w += point;
            buf[w++] = '.';
            memcpy(buf + w, digits + point, n - point);
            w += n - point;
        }
        else {
            buf[w++] = '0';
            buf[w++] = '.';
            for (int i = 0; i < -point; i++)
                buf[w++] = '0';
            memcpy(buf + w, digits, n);
            w += n;
        }
    }
    else {
        int x = e + n - 1;
        buf[w++] = digits[0];
        if (n > 1) {
            buf[w++] = '.';
            memcpy(buf + w, digits + 1, n - 1);
            w += n - 1;
        }
        w += snprintf(buf + w, sizeof buf - w, "e%c%02d", x < 0 ? '-' : '+', x < 0 ? -x : x);
    }
    return out_put(o, buf, w) < 0 ? FAIL_PY : OK;
}

/* nan, inf and zero as float64_json/float32_json write them; 0 when v is none of them */
static int
put_special(Out *o, double v, int neg, int *done)
{
    const char *text = NULL;
    if (isnan(v))
        text = neg ? "\"-nan\"" : "\"nan\"";
    else if (isinf(v))
        text = neg ? "\"-inf\"" : "\"inf\"";
    else if (v == 0)
        text = neg ? "-0" : "0";
    *done = text != NULL;
    return text != NULL && out_put(o, text, strlen(text)) < 0 ? FAIL_PY : OK;
}

/* The significant digits (no trailing zeros) and exponent of a %e or repr text. */
static int
split_decimal(const char *text, char *digits, int *e)
{
    int n = 0, point = -1, exp = 0;
    const char *q = text;
    if (*q == '-')
        q++;
    for (; *q && *q != 'e' && *q != 'E'; q++) {
        if (*q == '.')
            point = n;
        else if (n || *q != '0')
            digits[n++] = *q;
        else if (point >= 0)
            exp--; /* a leading zero after the point */
    }
    if (*q)
        exp += atoi(q + 1);
    if (point < 0)
        point = n;
    /* the value is the n-digit integer times 10**(exp + point - n) */
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = 0;
    *e = exp + point - n;
    return n;
}

/* float64_json: the shortest round-trip digits (Python's repr) laid out as to_chars */
static int
put_float64(Out *o, uint64_t bits)
{
    double v;
    memcpy(&v, &bits, 8);
    int neg = (int)(bits >> 63), done;
    int rc = put_special(o, v, neg, &done);
    if (rc != OK || done)
        return rc;
    char *r = PyOS_double_to_string(v, 'r', 0, 0, NULL);
    if (r == NULL)
        return FAIL_PY;
    char digits[40];
    int e, n = (int)strlen(r) < 32 ? split_decimal(r, digits, &e) : 0;
    PyMem_Free(r);
    if (n == 0)
        return FAIL_DEFER;
    return put_shortest(o, neg, digits, n, e, v);
}

/* float32_bits_json: the fewest digits that read back to the same float (strtof rounds
 * to nearest, ties to even, as the rounding interval's closed ends), the closest of
 * them (printf rounds correctly). Binade starts (powers of two), whose interval is
 * lopsided, are looked up in ``table`` (the Python formatter's text of each exponent's
 * power of two), else left to the Python formatter. */
static int
put_float32(Out *o, uint32_t bits, PyObject *table)
{
    float f;
    memcpy(&f, &bits, 4);
    int neg = (int)(bits >> 31), done;
    int rc = put_special(o, (double)f, neg, &done);
    if (rc != OK || done)
        return rc;
    uint32_t mag = bits & 0x7FFFFFFF;
    if ((mag & 0x7FFFFF) == 0) {
        PyObject *text;
        if (table == NULL || !PyTuple_Check(table) || PyTuple_GET_SIZE(table) != 256 ||
            !PyBytes_Check(text = PyTuple_GET_ITEM(table, mag >> 23)))
            return FAIL_DEFER;
        if (neg && out_put(o, "-", 1) < 0)
            return FAIL_PY;
        return out_put_bytes(o, text) < 0 ? FAIL_PY : OK;
    }
    double d = fabs((double)f);
    char text[40];
    for (int p = 1; p <= 9; p++) {
        snprintf(text, sizeof text, "%.*e", p - 1, d);
        if (strtof(text, NULL) == (float)d) {
            char digits[40];
            int e, n = split_decimal(text, digits, &e);
            return put_shortest(o, neg, digits, n, e, (double)f);
        }
    }
    return FAIL_DEFER;
}

/* ipv4_json / ipv6_json (glibc inet_ntop) */
static int
put_ip(Out *o, const unsigned char *q, int size)
{
    char text[INET6_ADDRSTRLEN + 2];
    if (inet_ntop(size == 4 ? AF_INET : AF_INET6, q, text + 1, INET6_ADDRSTRLEN) == NULL)
        return FAIL_DEFER;
    text[0] = '"';
    size_t n = strlen(text);
    text[n] = '"';
    return out_put(o, text, n + 1) < 0 ? FAIL_PY : OK;
}

/* One code point of a JSON string (ehtool.values.strings): ``"``, ``\`` and C0 controls
 * escaped (``\b \t \n \f \r``, else ``\u00xx``), lone surrogates as ``\udxxx``, the rest
 * as UTF-8. */
static inline int
put_code_point(Out *o, uint32_t cp, int surrogate_text)
{
    static const char digits[] = "0123456789abcdef";
    char b[7];
    int n;
    if (cp < 0x80) {
        if (plain_char(cp) || cp == 0x7f) {
            b[0] = (char)cp;
            n = 1;
        }
        else if (cp == '"' || cp == '\\') {
            b[0] = '\\', b[1] = (char)cp, n = 2;
        }
        else {
            const char *e = cp == 8 ? "\\b" : cp == 9 ? "\\t" : cp == 10 ? "\\n"
                          : cp == 12 ? "\\f" : cp == 13 ? "\\r" : NULL;
            if (e != NULL)
                return out_put(o, e, 2);
            b[0] = '\\', b[1] = 'u', b[2] = '0', b[3] = '0';
            b[4] = digits[cp >> 4], b[5] = digits[cp & 15];
            n = 6;
        }
    }
    else if (cp < 0x800) {
        b[0] = (char)(0xC0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    }
    else if (cp >= 0xD800 && cp <= 0xDFFF) { /* \udxxx, or its text: \\udxxx */
        char *w = b;
        *w++ = '\\';
        if (surrogate_text)
            *w++ = '\\';
        *w++ = 'u', *w++ = digits[cp >> 12], *w++ = digits[(cp >> 8) & 15];
        *w++ = digits[(cp >> 4) & 15], *w++ = digits[cp & 15];
        n = (int)(w - b);
    }
    else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12), b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    }
    else {
        if (cp > 0x10FFFF)
            cp = 0xFFFD;
        return cp == 0xFFFD ? out_put(o, "\xef\xbf\xbd", 3)
                            : (b[0] = (char)(0xF0 | cp >> 18),
                               b[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
                               b[2] = (char)(0x80 | ((cp >> 6) & 0x3F)),
                               b[3] = (char)(0x80 | (cp & 0x3F)), out_put(o, b, 4));
    }
    return out_put(o, b, n);
}

/* utf16_json / utf32_json of n bytes (a trailing partial unit ignored): UTF-16 pairs
 * combine, lone surrogates are escaped, UTF-32 units above U+10FFFF are U+FFFD; unit 1
 * is Latin-1 (latin1_json). */
static int
put_units(Out *o, const unsigned char *q, Py_ssize_t n, int unit, int little,
          int surrogate_text)
{
    Py_ssize_t count = n / unit;
    if (out_reserve(o, count + 2) < 0 || out_put(o, "\"", 1) < 0)
        return FAIL_PY;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t cp = (uint32_t)read_uint(q + i * unit, unit, little);
        if (unit == 2 && cp >= 0xD800 && cp <= 0xDBFF && i + 1 < count) {
            uint32_t low = (uint32_t)read_uint(q + (i + 1) * unit, 2, little);
            if (low >= 0xDC00 && low <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                i++;
            }
        }
        if (put_code_point(o, cp, surrogate_text) < 0)
            return FAIL_PY;
    }
    return out_put(o, "\"", 1) < 0 ? FAIL_PY : OK;
}

/* utf8_json of n bytes: valid sequences (no overlong forms, surrogates or code points
 * above U+10FFFF) pass through; ``ED A0..BF xx`` is its lone surrogate (escaped); any
 * other byte that starts no valid sequence is its Latin-1 character, and decoding goes
 * on at the next byte (ehtool.values.strings._utf8_error). */
static int
put_utf8(Out *o, const unsigned char *q, Py_ssize_t n, int surrogate_text)
{
    if (out_reserve(o, n + 2) < 0 || out_put(o, "\"", 1) < 0)
        return FAIL_PY;
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned b0 = q[i];
        uint32_t cp = b0;
        int len = 1;
        if (b0 >= 0xC2 && b0 <= 0xDF && i + 1 < n && (q[i + 1] & 0xC0) == 0x80) {
            cp = (b0 & 0x1F) << 6 | (q[i + 1] & 0x3F);
            len = 2;
        }
        else if (b0 >= 0xE0 && b0 <= 0xEF && i + 2 < n && (q[i + 1] & 0xC0) == 0x80 &&
                 (q[i + 2] & 0xC0) == 0x80) {
            uint32_t v = (b0 & 0x0F) << 12 | (q[i + 1] & 0x3F) << 6 | (q[i + 2] & 0x3F);
            if (v >= 0x800) { /* (a surrogate is escaped by put_code_point) */
                cp = v;
                len = 3;
            }
        }
        else if (b0 >= 0xF0 && b0 <= 0xF4 && i + 3 < n && (q[i + 1] & 0xC0) == 0x80 &&
                 (q[i + 2] & 0xC0) == 0x80 && (q[i + 3] & 0xC0) == 0x80) {
            uint32_t v = (b0 & 0x07) << 18 | (q[i + 1] & 0x3F) << 12 |
                         (q[i + 2] & 0x3F) << 6 | (q[i + 3] & 0x3F);
            if (v >= 0x10000 && v <= 0x10FFFF) {
                cp = v;
                len = 4;
            }
        }
        if (put_code_point(o, cp, surrogate_text) < 0)
            return FAIL_PY;
        i += len;
    }
    return out_put(o, "\"", 1) < 0 ? FAIL_PY : OK;
}

static int
call_formatter(Ctx *c, PyObject *fmt, Py_ssize_t start, Py_ssize_t n)
{
    PyObject *arg = PyBytes_FromStringAndSize((const char *)c->data + start, n);
    if (arg == NULL)
        return FAIL_PY;
    PyObject *r = PyObject_CallOneArg(fmt, arg);
    Py_DECREF(arg);
    if (r == NULL || !PyBytes_Check(r)) {
        /* the Python renderer reports what is wrong with this event */
        Py_XDECREF(r);
        PyErr_Clear();
        return FAIL_DEFER;
    }
    int rc = out_put_bytes(c->out, r) < 0 ? FAIL_PY : OK;
    Py_DECREF(r);
    return rc;
}

static int
run_fixed(Ctx *c, const Op *op)
{
    int size = op->size;
    if (c->p + size > c->len)
        return FAIL_DEFER;
    const unsigned char *q = c->data + c->p;
    int rc;
    switch (op->kind) {
    case FX_UNSIGNED:
        rc = out_put_u64(c->out, read_uint(q, size, c->little)) < 0 ? FAIL_PY : OK;
        break;
    case FX_SIGNED:
        rc = out_put_i64(c->out, sign_extend(read_uint(q, size, c->little), size)) < 0
                 ? FAIL_PY : OK;
        break;
    case FX_HEX:
        rc = out_put_hex(c->out, read_uint(q, size, c->little)) < 0 ? FAIL_PY : OK;
        break;
    case FX_PORT: /* network byte order whatever the event's */
        rc = out_put_u64(c->out, read_uint(q, 2, 0)) < 0 ? FAIL_PY : OK;
        break;
    case FX_BOOL: { /* false, true, else the value as a signed 32-bit decimal */
        uint64_t v = read_uint(q, size, c->little);
        if (v <= 1)
            rc = out_put(c->out, v ? "true" : "false", v ? 4 : 5) < 0 ? FAIL_PY : OK;
        else
            rc = out_put_i64(c->out, (int32_t)(uint32_t)v) < 0 ? FAIL_PY : OK;
        break;
    }
    case FX_HEXBYTES:
        rc = put_hex_bytes(c->out, q, size);
        break;
    case FX_UUID:
        rc = size == 16 ? put_uuid(c->out, q) : call_formatter(c, op->obj, c->p, size);
        break;
    case FX_CHAR: /* one character: printable ASCII here, the rest by the formatter */
    case FX_CHAR_TEXT: {
        uint64_t v = read_uint(q, size, c->little);
        if (plain_char(v)) {
            char text[3] = {'"', (char)v, '"'};
            rc = out_put(c->out, text, 3) < 0 ? FAIL_PY : OK;
        }
        else if (size == 1 || size == 2 || size == 4) { /* Latin-1, UTF-16, UTF-32 */
            rc = put_units(c->out, q, size, size, c->little, op->kind == FX_CHAR_TEXT);
        }
        else {
            rc = call_formatter(c, op->obj, c->p, size);
        }
        break;
    }
    case FX_ERRNO:
        rc = size == 4 ? put_errno(c->out, (uint32_t)read_uint(q, 4, c->little), op->table)
                       : FAIL_DEFER;
        break;
    case FX_TIME:
        rc = size == 4 || size == 8
                 ? put_time_seconds(c->out, sign_extend(read_uint(q, size, c->little), size))
                 : FAIL_DEFER;
        break;
    case FX_FLOAT:
        rc = size == 8   ? put_float64(c->out, read_uint(q, 8, c->little))
             : size == 4 ? put_float32(c->out, (uint32_t)read_uint(q, 4, c->little), op->table)
                         : FAIL_DEFER;
        break;
    case FX_IP:
        rc = size == 4 || size == 16 ? put_ip(c->out, q, size) : FAIL_DEFER;
        break;
    default:
        rc = FAIL_DEFER;
    }
    if (rc == FAIL_DEFER) /* the Python formatter's rules */
        rc = call_formatter(c, op->obj, c->p, size);
    c->p += size;
    return rc;
}

/* The string at c->p: its data [start, start + n) and the position after it. */
static int
string_bounds(Ctx *c, const Op *op, Py_ssize_t *start, Py_ssize_t *n, Py_ssize_t *next)
{
    int unit = op->size;
    Py_ssize_t p = c->p;
    if (op->kind) { /* zero-terminated, stepping by whole units */
        Py_ssize_t e = p;
        for (;;) {
            if (e + unit > c->len)
                return FAIL_DEFER;
            const unsigned char *q = c->data + e;
            if (unit == 1 ? q[0] == 0
                          : unit == 2 ? (q[0] | q[1]) == 0 : (q[0] | q[1] | q[2] | q[3]) == 0)
                break;
            e += unit;
        }
        *start = p;
        *n = e - p;
        *next = e + unit;
    }
    else { /* u16 count of units, then the units */
        if (p + 2 > c->len)
            return FAIL_DEFER;
        Py_ssize_t bytes = (Py_ssize_t)read_uint(c->data + p, 2, c->little) * unit;
        if (p + 2 + bytes > c->len)
            return FAIL_DEFER;
        *start = p + 2;
        *n = bytes;
        *next = p + 2 + bytes;
    }
    return OK;
}


/* Printable ASCII text in any unit size and order, written between quotes; *done = 0
 * when the data is not such text. */
static int
try_ascii(Ctx *c, int unit, int little, Py_ssize_t start, Py_ssize_t n, int *done)
{
    const unsigned char *q = c->data + start;
    Py_ssize_t chars = n / unit;
    *done = 0;
    if (n % unit)
        return OK;
    for (Py_ssize_t i = 0; i < chars; i++) {
        if (!plain_char(read_uint(q + i * unit, unit, little)))
            return OK;
    }
    if (out_reserve(c->out, chars + 2) < 0)
        return FAIL_PY;
    char *w = c->out->data + c->out->len;
    *w++ = '"';
    if (unit == 1) {
        memcpy(w, q, chars);
    }
    else {
        int low = little ? 0 : unit - 1;
        for (Py_ssize_t i = 0; i < chars; i++)
            w[i] = (char)q[i * unit + low];
    }
    w[chars] = '"';
    c->out->len += chars + 2;
    *done = 1;
    return OK;
}

static int
run_string(Ctx *c, const Op *op)
{
    Py_ssize_t start, n, next;
    int rc = string_bounds(c, op, &start, &n, &next);
    if (rc != OK)
        return rc;
    if (op->fast & STR_HEX) {
        rc = put_hex_bytes(c->out, c->data + start, n);
        c->p = next;
        return rc;
    }
    if (op->fast) {
        int done, unit = op->size, little = c->little;
        Py_ssize_t text = start, chars = n;
        if (op->fast & STR_BOM && n >= 2) { /* as output.strings.bom_string_json */
            const unsigned char *h = c->data + start;
            int skip = 0;
            if (h[0] == 0xFF && h[1] == 0xFE) {
                int wide = n >= 4 && h[2] == 0 && h[3] == 0;
                skip = wide ? 4 : 2, unit = wide ? 4 : 2, little = 1;
            }
            else if (n >= 4 && h[0] == 0 && h[1] == 0 && h[2] == 0xFE && h[3] == 0xFF)
                skip = 4, unit = 4, little = 0;
            else if (h[0] == 0xFE && h[1] == 0xFF)
                skip = 2, unit = 2, little = 0;
            else if (n >= 3 && h[0] == 0xEF && h[1] == 0xBB && h[2] == 0xBF)
                skip = 3, unit = 1;
            text += skip;
            chars -= skip;
        }
        rc = try_ascii(c, unit, little, text, chars, &done);
        if (rc == OK && !done && op->fast & STR_UTF) {
            int as_text = (op->fast & STR_SURROGATE_TEXT) != 0;
            rc = unit == 1 ? put_utf8(c->out, c->data + text, chars, as_text)
                           : put_units(c->out, c->data + text, chars, unit, little, as_text);
            done = 1;
        }
        if (rc != OK || done) {
            c->p = next;
            return rc;
        }
    }
    rc = call_formatter(c, op->obj, start, n);
    c->p = next;
    return rc;
}

/* A tracefs char array of op->size bytes at c->p: the bytes up to the first NUL. */
static int
run_cstr(Ctx *c, const Op *op)
{
    if (c->p + op->size > c->len)
        return FAIL_DEFER;
    const unsigned char *q = c->data + c->p;
    const unsigned char *nul = memchr(q, 0, op->size);
    Py_ssize_t n = nul != NULL ? nul - q : op->size;
    int done;
    int rc = try_ascii(c, 1, 1, c->p, n, &done);
    if (rc == OK && !done)
        rc = call_formatter(c, op->obj, c->p, n);
    c->p += op->size;
    return rc;
}

static int
run_call(Ctx *c, const Op *op)
{
    PyObject *r = PyObject_CallOneArg(op->obj, c->object);
    if (r == NULL)
        return FAIL_PY; /* as the Python renderer, which calls the same getter */
    int rc = OK;
    if (!PyBytes_Check(r)) {
        PyErr_SetString(PyExc_TypeError, "a field getter must return bytes");
        rc = FAIL_PY;
    }
    else if (out_put_bytes(c->out, r) < 0) {
        rc = FAIL_PY;
    }
    Py_DECREF(r);
    return rc;
}

static int run_ops(Ctx *c, const Op *ops, Py_ssize_t nops);

/* An array's element count: fixed, or the u16 before the elements (read past); the
 * MoveNext steps it costs are counted against the budget. FAIL_DEFER when the count
 * runs past the data or the budget is spent (the Python renderer raises the error). */
static int
array_count(Ctx *c, const Op *op, long *count)
{
    long n = op->count;
    int variable = n == 0;
    if (variable) {
        if (c->p + 2 > c->len)
            return FAIL_DEFER;
        n = (long)read_uint(c->data + c->p, 2, c->little);
        c->p += 2;
    }
    if (op->per)
        c->steps += n * op->per;
    else if (variable)
        c->steps += n;
    *count = n;
    return c->steps > c->budget ? FAIL_DEFER : OK;
}

static int
run_array(Ctx *c, const Op *op)
{
    long count;
    int rc = array_count(c, op, &count);
    if (rc != OK)
        return rc;
    if (count == 0)
        return out_put_bytes(c->out, op->empty) < 0 ? FAIL_PY : OK;
    if (out_put_bytes(c->out, op->open) < 0)
        return FAIL_PY;
    for (long i = 0; i < count; i++) {
        if (i && out_put_bytes(c->out, op->sep) < 0)
            return FAIL_PY;
        rc = run_ops(c, op + 1, op->body);
        if (rc != OK)
            return rc;
    }
    return out_put_bytes(c->out, op->close) < 0 ? FAIL_PY : OK;
}

static int
run_ops(Ctx *c, const Op *ops, Py_ssize_t nops)
{
    for (Py_ssize_t i = 0; i < nops; i++) {
        const Op *op = &ops[i];
        int rc;
        switch (op->op) {
        case OP_LIT:
            rc = out_put_bytes(c->out, op->obj) < 0 ? FAIL_PY : OK;
            break;
        case OP_FIXED:
            rc = run_fixed(c, op);
            break;
        case OP_STR:
            rc = run_string(c, op);
            break;
        case OP_SEEK:
            c->p = c->base + op->count;
            rc = OK;
            break;
        case OP_CSTR:
            rc = run_cstr(c, op);
            break;
        case OP_CALL:
            rc = run_call(c, op);
            break;
        default:
            rc = run_array(c, op);
            i += op->body;
        }
        if (rc != OK)
            return rc;
    }
    return OK;
}

/* The members of the payload of ``data`` (bytes) from ``p``, appended to ``out``: OK,
 * FAIL_DEFER (the caller hands the event to the fallback; ``out`` may hold part of it)
 * or FAIL_PY. */
static int
plan_run(PlanObject *self, PyObject *data, Py_ssize_t p, Out *out)
{
    Ctx c;
    c.object = data;
    c.data = (const unsigned char *)PyBytes_AS_STRING(data);
    c.len = PyBytes_GET_SIZE(data);
    c.base = c.p = p;
    c.steps = 0;
    c.little = self->little;
    c.budget = self->budget;
    c.out = out;
    c.nmarks = c.next = 0;
    return p < 0 || p > c.len ? FAIL_DEFER : run_ops(&c, self->ops, self->nops);
}

static PyObject *
Plan_render(PlanObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_Check(args[0])) {
        if (nargs == 3)
            return PyObject_Vectorcall(self->fallback, args, 3, NULL);
        PyErr_SetString(PyExc_TypeError, "render(data: bytes, p: int, o: int)");
        return NULL;
    }
    Py_ssize_t p = PyLong_AsSsize_t(args[1]);
    if (p == -1 && PyErr_Occurred())
        return NULL;
    Out out;
    out_init(&out);
    int rc = plan_run(self, args[0], p, &out);
    PyObject *result = NULL;
    if (rc == OK)
        result = PyBytes_FromStringAndSize(out.data, out.len);
    else if (rc == FAIL_DEFER)
        result = PyObject_Vectorcall(self->fallback, args, 3, NULL);
    out_free(&out);
    return result;
}

/* The walk of Plan.check: run_ops' bounds, terminators and MoveNext steps, nothing
 * written and no formatter called (a formatter's failure is no bounds failure: the
 * typed decoder reads such a value as it reads any other). */
static int walk_ops(Ctx *c, const Op *ops, Py_ssize_t nops);

static int
walk_array(Ctx *c, const Op *op)
{
    long count;
    int rc = array_count(c, op, &count);
    if (rc != OK)
        return rc;
    if (op->body == 1 && op[1].op == OP_FIXED) { /* fixed-size elements: one step */
        if (c->p + (Py_ssize_t)count * op[1].size > c->len)
            return FAIL_DEFER;
        c->p += (Py_ssize_t)count * op[1].size;
        return OK;
    }
    for (long i = 0; i < count; i++) {
        rc = walk_ops(c, op + 1, op->body);
        if (rc != OK)
            return rc;
    }
    return OK;
}

static int
walk_ops(Ctx *c, const Op *ops, Py_ssize_t nops)
{
    for (Py_ssize_t i = 0; i < nops; i++) {
        const Op *op = &ops[i];
        int rc = OK;
        if (c->next < c->nmarks && op == c->marks[c->next])
            c->at[c->next++] = c->p;
        switch (op->op) {
        case OP_LIT:
            break;
        case OP_FIXED:
        case OP_CSTR:
            if (c->p + op->size > c->len)
                return FAIL_DEFER;
            c->p += op->size;
            break;
        case OP_STR: {
            Py_ssize_t start, n, next;
            rc = string_bounds(c, op, &start, &n, &next);
            if (rc == OK)
                c->p = next;
            break;
        }
        case OP_SEEK:
            c->p = c->base + op->count;
            break;
        case OP_CALL:
            return FAIL_DEFER; /* (tracefs records only) the fallback decides */
        default:
            rc = walk_array(c, op);
            i += op->body;
        }
        if (rc != OK)
            return rc;
    }
    return OK;
}

static PyObject *
Plan_check(PlanObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_Check(args[0])) {
        if (nargs != 3) {
            PyErr_SetString(PyExc_TypeError, "check(data: bytes, p: int, o: int)");
            return NULL;
        }
    }
    else {
        Py_ssize_t p = PyLong_AsSsize_t(args[1]);
        if (p == -1 && PyErr_Occurred())
            return NULL;
        Ctx c;
        c.object = args[0];
        c.data = (const unsigned char *)PyBytes_AS_STRING(args[0]);
        c.len = PyBytes_GET_SIZE(args[0]);
        c.base = c.p = p;
        c.steps = 0;
        c.little = self->little;
        c.budget = self->budget;
        c.nmarks = c.next = 0;
        if (p >= 0 && p <= c.len && walk_ops(&c, self->ops, self->nops) == OK)
            Py_RETURN_NONE;
    }
    /* the fallback renderer raises what is wrong, if anything */
    PyObject *r = PyObject_Vectorcall(self->fallback, args, 3, NULL);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *
Plan_render_record(PlanObject *self, PyObject *raw)
{
    if (!PyBytes_Check(raw) || PyBytes_GET_SIZE(raw) < self->min_len)
        return PyObject_CallOneArg(self->fallback, raw);
    Out out;
    out_init(&out);
    int rc = plan_run(self, raw, 0, &out);
    PyObject *result = NULL;
    if (rc == OK)
        result = PyBytes_FromStringAndSize(out.data, out.len);
    else if (rc == FAIL_DEFER)
        result = PyObject_CallOneArg(self->fallback, raw);
    out_free(&out);
    return result;
}

static int
need_bytes(PyObject *o, const char *what)
{
    if (!PyBytes_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes", what);
        return -1;
    }
    return 0;
}

/* One op from its tuple: (LIT, bytes) | (FIXED, size, kind, formatter)
 * [, table] | (STR, unit, zero, fast, formatter) | (ARRAY, count, per, body, open, sep, close, empty)
 * | (SEEK, offset) | (CSTR, size, formatter) | (CALL, getter) */
static int
op_from_tuple(Op *op, PyObject *t)
{
    memset(op, 0, sizeof(*op));
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 2) {
        PyErr_SetString(PyExc_TypeError, "an op is a tuple");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    long code = PyLong_AsLong(PyTuple_GET_ITEM(t, 0));
    op->op = (int)code;
#define INT_AT(i) ((int)PyLong_AsLong(PyTuple_GET_ITEM(t, (i))))
    switch (code) {
    case OP_LIT:
        op->obj = Py_NewRef(PyTuple_GET_ITEM(t, 1));
        return need_bytes(op->obj, "a literal");
    case OP_FIXED:
        if (n != 4 && n != 5)
            break;
        op->size = INT_AT(1);
        op->kind = INT_AT(2);
        op->obj = Py_NewRef(PyTuple_GET_ITEM(t, 3));
        if (n == 5)
            op->table = Py_NewRef(PyTuple_GET_ITEM(t, 4));
        if (op->size < 1 || op->size > 16 || op->kind < 0 || op->kind > FX_CHAR_TEXT ||
            (op->size > 8 && op->kind != FX_PY && op->kind != FX_HEXBYTES &&
             op->kind != FX_UUID && op->kind != FX_IP) ||
            (op->kind >= FX_ERRNO && !PyCallable_Check(op->obj)) ||
            (op->kind == FX_PORT && op->size != 2))
            break;
        return PyErr_Occurred() ? -1 : 0;
    case OP_STR:
        if (n != 5)
            break;
        op->size = INT_AT(1);
        op->kind = INT_AT(2);
        op->fast = INT_AT(3);
        op->obj = Py_NewRef(PyTuple_GET_ITEM(t, 4));
        if (op->size != 1 && op->size != 2 && op->size != 4)
            break;
        return PyErr_Occurred() ? -1 : 0;
    case OP_SEEK:
        op->count = INT_AT(1);
        if (op->count < 0)
            break;
        return PyErr_Occurred() ? -1 : 0;
    case OP_CSTR:
        if (n != 3)
            break;
        op->size = INT_AT(1);
        op->obj = Py_NewRef(PyTuple_GET_ITEM(t, 2));
        if (op->size < 1)
            break;
        return PyErr_Occurred() ? -1 : 0;
    case OP_CALL:
        op->obj = Py_NewRef(PyTuple_GET_ITEM(t, 1));
        return 0;
    case OP_ARRAY:
        if (n != 8)
            break;
        op->count = INT_AT(1);
        op->per = INT_AT(2);
        op->body = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, 3));
        op->open = Py_NewRef(PyTuple_GET_ITEM(t, 4));
        op->sep = Py_NewRef(PyTuple_GET_ITEM(t, 5));
        op->close = Py_NewRef(PyTuple_GET_ITEM(t, 6));
        op->empty = Py_NewRef(PyTuple_GET_ITEM(t, 7));
        if (PyErr_Occurred())
            return -1;
        if (need_bytes(op->open, "open") || need_bytes(op->sep, "sep") ||
            need_bytes(op->close, "close") || need_bytes(op->empty, "empty"))
            return -1;
        if (op->count < 0 || op->per < 0 || op->body < 1)
            break;
        return 0;
    }
#undef INT_AT
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "malformed op %R", t);
    return -1;
}

static void
clear_op(Op *op)
{
    Py_CLEAR(op->obj);
    Py_CLEAR(op->open);
    Py_CLEAR(op->sep);
    Py_CLEAR(op->close);
    Py_CLEAR(op->empty);
    Py_CLEAR(op->table);
}

static void
Plan_dealloc(PlanObject *self)
{
    PyObject_GC_UnTrack(self);
    if (self->ops != NULL) {
        for (Py_ssize_t i = 0; i < self->nops; i++)
            clear_op(&self->ops[i]);
        PyMem_Free(self->ops);
    }
    Py_CLEAR(self->fallback);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Plan_traverse(PlanObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    for (Py_ssize_t i = 0; i < self->nops; i++) {
        Py_VISIT(self->ops[i].obj);
        Py_VISIT(self->ops[i].table);
    }
    return 0;
}

/* Array bodies must stay inside the op list (checked once, not per event). */
static int
check_bodies(const Op *ops, Py_ssize_t nops)
{
    for (Py_ssize_t i = 0; i < nops; i++) {
        if (ops[i].op == OP_ARRAY) {
            if (ops[i].body > nops - i - 1 || check_bodies(ops + i + 1, ops[i].body) < 0)
                return -1;
            i += ops[i].body;
        }
    }
    return 0;
}

static PyObject *
Plan_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ops", "little", "budget", "fallback", "min_len", NULL};
    PyObject *ops_list, *fallback;
    int little;
    long budget;
    Py_ssize_t min_len = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!plO|n", kwlist, &PyList_Type, &ops_list,
                                     &little, &budget, &fallback, &min_len))
        return NULL;
    PlanObject *self = (PlanObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->little = little;
    self->budget = budget;
    self->min_len = min_len;
    self->fallback = Py_NewRef(fallback);
    Py_ssize_t n = PyList_GET_SIZE(ops_list);
    self->ops = PyMem_Calloc(n ? n : 1, sizeof(Op));
    if (self->ops == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        self->nops = i + 1;
        if (op_from_tuple(&self->ops[i], PyList_GET_ITEM(ops_list, i)) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    self->nops = n;
    if (check_bodies(self->ops, n) < 0) {
        PyErr_SetString(PyExc_ValueError, "an array body runs past the op list");
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyMethodDef Plan_methods[] = {
    {"render", (PyCFunction)(void (*)(void))Plan_render, METH_FASTCALL,
     "render(data, p, o) -> bytes: the JSON members of the payload at data[p:]"},
    {"render_record", (PyCFunction)Plan_render_record, METH_O,
     "render_record(raw) -> bytes: the JSON members of a tracefs record"},
    {"check", (PyCFunction)(void (*)(void))Plan_check, METH_FASTCALL,
     "check(data, p, o) -> None: raises what render(data, p, o) would raise for the "
     "payload's layout (bounds, terminators, limits), writing nothing"},
    {NULL},
};

static PyTypeObject PlanType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ehtool._speedups.Plan",
    .tp_basicsize = sizeof(PlanObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Plan(ops, little, budget, fallback, min_len=0): a payload or record renderer",
    .tp_new = Plan_new,
    .tp_dealloc = (destructor)Plan_dealloc,
    .tp_traverse = (traverseproc)Plan_traverse,
    .tp_methods = Plan_methods,
};

/* ================================================================================== */
/* Scanner: runs of fixed-layout samples                                              */
/* ================================================================================== */

/* the fields a scanner reads, in Sample order after type/size */
enum { F_TYPE, F_SIZE, F_RAWSIZE, F_ID, F_TIME, F_CPU, F_PID, F_TID, NFIELDS };

typedef struct {
    Py_ssize_t off; /* -1: not in the layout */
    int size;
    int is_signed;
} Field;

typedef struct {
    PyObject_HEAD
    Field f[NFIELDS];
    Py_ssize_t fixed; /* bytes before RAW */
    int little;
    PyObject *by_id; /* dict: sample id -> EventDesc, or NULL */
    PyObject *lone;  /* the EventDesc when samples carry no id */
    PyTypeObject *sample_type;
} ScannerObject;

static inline PyObject *
field_value(const ScannerObject *s, const unsigned char *rec, int k)
{
    const Field *f = &s->f[k];
    if (f->off < 0)
        Py_RETURN_NONE;
    uint64_t v = read_uint(rec + f->off, f->size, s->little);
    if (f->is_signed)
        return PyLong_FromLongLong(sign_extend(v, f->size));
    return PyLong_FromUnsignedLongLong(v);
}

static PyObject *
Scanner_scan(ScannerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "scan(buf, pos, limit, base, append)");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t limit = PyLong_AsSsize_t(args[2]);
    long long base = PyLong_AsLongLong(args[3]);
    if (PyErr_Occurred())
        return NULL;
    PyObject *append = args[4];
    PyObject *list = NULL; /* a bound list.append: append directly */
    if (PyCFunction_Check(append) && PyList_Check(PyCFunction_GET_SELF(append)))
        list = PyCFunction_GET_SELF(append);
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buf = view.buf;
    if (limit > view.len)
        limit = view.len;
    Py_ssize_t count = 0;
    Py_ssize_t fixed = self->fixed;
    int failed = 0;
    while (pos >= 0 && pos + fixed <= limit) {
        const unsigned char *rec = buf + pos;
        uint64_t type = read_uint(rec + self->f[F_TYPE].off, self->f[F_TYPE].size, self->little);
        Py_ssize_t size =
            (Py_ssize_t)read_uint(rec + self->f[F_SIZE].off, self->f[F_SIZE].size, self->little);
        if (type != 9 || size < fixed || pos + size > limit)
            break;
        PyObject *desc;
        if (self->by_id != NULL) {
            PyObject *key = field_value(self, rec, F_ID);
            if (key == NULL) {
                failed = 1;
                break;
            }
            desc = PyDict_GetItemWithError(self->by_id, key);
            Py_DECREF(key);
            if (desc == NULL) {
                failed = PyErr_Occurred() != NULL;
                break;
            }
        }
        else {
            desc = self->lone;
        }
        Py_ssize_t raw_size = (Py_ssize_t)read_uint(
            rec + self->f[F_RAWSIZE].off, self->f[F_RAWSIZE].size, self->little);
        if (fixed + raw_size > size)
            break;
        PyObject *sample = self->sample_type->tp_alloc(self->sample_type, 7);
        if (sample == NULL) {
            failed = 1;
            break;
        }
        PyObject *items[7];
        items[0] = field_value(self, rec, F_TIME);
        items[1] = field_value(self, rec, F_CPU);
        items[2] = field_value(self, rec, F_PID);
        items[3] = field_value(self, rec, F_TID);
        items[4] = PyBytes_FromStringAndSize((const char *)rec + fixed, raw_size);
        items[5] = Py_NewRef(desc);
        items[6] = PyLong_FromLongLong(base + pos);
        for (int i = 0; i < 7; i++) {
            if (items[i] == NULL)
                failed = 1;
            PyTuple_SET_ITEM(sample, i, items[i]);
        }
        if (!failed)
            failed = (list != NULL ? PyList_Append(list, sample)
                                   : (Py_XDECREF(PyObject_CallOneArg(append, sample)),
                                      PyErr_Occurred() != NULL ? -1 : 0)) < 0;
        Py_DECREF(sample);
        if (failed)
            break;
        count++;
        pos += size;
    }
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    return Py_BuildValue("nn", pos, count);
}

static PyObject *
Scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"fields", "fixed", "little", "by_id", "lone", "sample_type", NULL};
    PyObject *fields, *by_id, *lone, *sample_type;
    Py_ssize_t fixed;
    int little;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!npOOO!", kwlist, &PyDict_Type, &fields,
                                     &fixed, &little, &by_id, &lone, &PyType_Type, &sample_type))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)sample_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "sample_type must be a tuple subclass");
        return NULL;
    }
    if (by_id != Py_None && !PyDict_Check(by_id)) {
        PyErr_SetString(PyExc_TypeError, "by_id must be a dict or None");
        return NULL;
    }
    ScannerObject *self = (ScannerObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    static const char *names[NFIELDS] = {"type", "size", "raw_size", "id",
                                         "time", "cpu", "pid", "tid"};
    for (int k = 0; k < NFIELDS; k++) {
        /* fields[name] = (offset, size, signed) */
        PyObject *spec = PyDict_GetItemString(fields, names[k]);
        self->f[k].off = -1;
        if (spec == NULL)
            continue;
        if (!PyArg_ParseTuple(spec, "nip", &self->f[k].off, &self->f[k].size,
                              &self->f[k].is_signed)) {
            Py_DECREF(self);
            return NULL;
        }
        int size = self->f[k].size;
        if (self->f[k].off < 0 || self->f[k].off + size > fixed ||
            (size != 1 && size != 2 && size != 4 && size != 8)) {
            PyErr_Format(PyExc_ValueError, "field %s: bad offset or size", names[k]);
            Py_DECREF(self);
            return NULL;
        }
    }
    if (self->f[F_TYPE].off < 0 || self->f[F_SIZE].off < 0 || self->f[F_RAWSIZE].off < 0 ||
        (by_id != Py_None && self->f[F_ID].off < 0)) {
        PyErr_SetString(PyExc_ValueError, "a scanner needs type, size, raw_size (and id)");
        Py_DECREF(self);
        return NULL;
    }
    self->fixed = fixed;
    self->little = little;
    self->by_id = by_id == Py_None ? NULL : Py_NewRef(by_id);
    self->lone = Py_NewRef(lone);
    self->sample_type = (PyTypeObject *)Py_NewRef(sample_type);
    return (PyObject *)self;
}

static void
Scanner_dealloc(ScannerObject *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->by_id);
    Py_CLEAR(self->lone);
    Py_CLEAR(self->sample_type);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Scanner_traverse(ScannerObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->by_id);
    Py_VISIT(self->lone);
    Py_VISIT(self->sample_type);
    return 0;
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)(void (*)(void))Scanner_scan, METH_FASTCALL,
     "scan(buf, pos, limit, base, append) -> (pos, count)"},
    {NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ehtool._speedups.Scanner",
    .tp_basicsize = sizeof(ScannerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Scanner(fields, fixed, little, by_id, lone, sample_type): a sample run reader",
    .tp_new = Scanner_new,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_traverse = (traverseproc)Scanner_traverse,
    .tp_methods = Scanner_methods,
};

/* ================================================================================== */
/* Formatter: the per-sample loop of ehtool.output.events.SampleFormatter.format_many */
/* ================================================================================== */

/* Handler specs (built by SampleFormatter._native_spec; anything else is a callable):
 *   PlainSpec(0, head, render, extra, handler)     a plain tracepoint:
 *        head + render(raw) + meta
 *   EventHeaderSpec(1, tracepoint, eventheader_offset, head, fast_cache, handler,
 *                   activity_keys, tail, metas, meta_of)
 *        an EventHeader tracepoint: EventHeaderDecoder.fast_cache (tracepoint -> first 12
 *        event bytes -> FastEntry(expect, activity_size, skip, render, info)) is consulted
 *        as EventHeaderDecoder.decode_parts does; a hit (activity ids too) is formatted
 *        here, with ``tail`` after its meta members (JSON Lines' "file"), anything else
 *        by handler. ``metas`` None: the meta members are the info's; else a dict (info
 *        -> the members of the formatter's --meta keys), filled by ``meta_of(info)``,
 *        and events with activity ids are the handler's (their ids go in between).
 * (NamedTuples of ehtool/render/events.py and eventheader.py: read here by index;
 * tests/speedups/test_constants.py checks their field order.)
 * The meta object is the template of SampleFormatter (time, cpu, pid, tid, extra). Its
 * time is written as ``time_mode`` says (the TIME_* constants, ehtool/render/times.py):
 * perf-decode's (UTC with the session clock's offset, else session seconds), integer ns,
 * seconds since the first event or since the previous one (state kept here; Python
 * handlers reach it through Formatter.time_json). */

enum { TIME_PERF = 0, TIME_NS = 1, TIME_REL = 2, TIME_DELTA = 3 };

static PyObject *str_name_json, *str_meta, *str_offset_ns; /* interned attribute names */

/* A recent fast-cache hit: the spec, the event's first 12 bytes, the FastEntry. */
#define HIT_SLOTS 1024
typedef struct {
    PyObject *spec;
    PyObject *hit;        /* the FastEntry */
    PyObject *name, *meta; /* its info's name_json and meta */
    Py_ssize_t skip;      /* its skip */
    unsigned char key[12];
} HitSlot;

typedef struct {
    PyObject_HEAD
    PyObject *handlers; /* dict: EventDesc -> spec tuple or callable */
    PyObject *make;     /* make(desc) -> spec tuple or callable */
    PyObject *clock;    /* SessionClock: offset_ns, prefix_for(sec) */
    /* the meta members' keys, each with what comes before it (bytes; None: not shown) */
    PyObject *pre_time, *mid_cpu, *mid_pid, *mid_tid, *end_meta;
    PyObject *comm_json; /* comm_json(tid) -> the comm member (bytes) or None; or None */
    /* groups (open, sep, close, empty: bytes; see end_group): the meta object when no
     * piece above is shown, and the fields nested under --fields-key (or None) */
    PyObject *meta_group, *fields_group;
    long long last_sec;
    PyObject *last_prefix; /* bytes or NULL */
    int time_mode;         /* TIME_* */
    int utc;               /* in this format_many call: ISO times (TIME_PERF + clock data) */
    int have_base;         /* base holds the first (REL) or previous (DELTA) time */
    unsigned long long base;
    HitSlot hits[HIT_SLOTS]; /* recent EventHeader cache hits (cached_hit) */
} FormatterObject;

/* a signed 128-bit integer in decimal */
static int
out_put_i128(Out *o, __int128 v)
{
    char tmp[48];
    int n = 0;
    unsigned __int128 u = v < 0 ? -(unsigned __int128)v : (unsigned __int128)v;
    do {
        tmp[sizeof(tmp) - 1 - n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[sizeof(tmp) - 1 - n++] = '-';
    return out_put(o, tmp + sizeof(tmp) - n, n);
}

/* ``[-]sec.nnnnnnnnn`` (a JSON number) of a signed nanosecond count */
static int
out_put_seconds(Out *o, __int128 when)
{
    if (when < 0) {
        if (out_put(o, "-", 1) < 0)
            return -1;
        when = -when;
    }
    unsigned long long sec = (unsigned long long)(when / 1000000000);
    long long ns = (long long)(when % 1000000000);
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%llu.%09lld", sec, ns);
    return out_put(o, buf, n);
}

/* The time value of ``t`` (session clock ns) in a non-ISO mode; advances REL/DELTA state. */
static int
put_time_value(FormatterObject *self, Out *o, unsigned long long t, long long offset_ns)
{
    __int128 when;
    switch (self->time_mode) {
    case TIME_NS: /* (past 64 bits with a corrupt time or clock offset: Python's ints) */
        return out_put_i128(o, (__int128)t + offset_ns);
    case TIME_REL:
        if (!self->have_base) {
            self->base = t;
            self->have_base = 1;
        }
        return out_put_seconds(o, (__int128)t - (__int128)self->base);
    case TIME_DELTA:
        when = self->have_base ? (__int128)t - (__int128)self->base : 0;
        self->base = t;
        self->have_base = 1;
        return out_put_seconds(o, when);
    default: /* TIME_PERF without a UTC offset: seconds of the session clock */
        return out_put_seconds(o, (__int128)t);
    }
}

static PyObject *
time_prefix(FormatterObject *self, long long sec)
{
    if (self->last_prefix != NULL && sec == self->last_sec)
        return self->last_prefix;
    PyObject *prefix = PyObject_CallMethod(self->clock, "prefix_for", "L", sec);
    if (prefix == NULL)
        return NULL;
    if (!PyBytes_Check(prefix)) {
        Py_DECREF(prefix);
        PyErr_SetString(PyExc_TypeError, "prefix_for must return bytes");
        return NULL;
    }
    Py_XSETREF(self->last_prefix, prefix);
    self->last_sec = sec;
    return prefix;
}

static PyObject *call1(PyObject *fn, PyObject *arg);
static int put_result(Out *o, PyObject *r, const char *what);

/* A group's members, each led by its separator, were appended to o since ``body``, just
 * after the group's opening at ``mark``: drop the first one's separator and close the
 * group; with no members, its empty form replaces the opening (JsonStyle.nest). The
 * group: a tuple of bytes (open, sep, close, empty). */
static int
end_group(Out *o, PyObject *group, Py_ssize_t mark, Py_ssize_t body)
{
    PyObject *sep = PyTuple_GET_ITEM(group, 1);
    Py_ssize_t n = PyBytes_GET_SIZE(sep);
    if (o->len == body) {
        o->len = mark;
        return out_put_bytes(o, PyTuple_GET_ITEM(group, 3));
    }
    if (o->len - body < n || memcmp(o->data + body, PyBytes_AS_STRING(sep), n) != 0) {
        PyErr_SetString(PyExc_ValueError, "a group's members must start with its separator");
        return -1;
    }
    memmove(o->data + body, o->data + body + n, o->len - body - n);
    o->len -= n;
    return out_put_bytes(o, PyTuple_GET_ITEM(group, 2));
}

/* The opening of the fields' group (--fields-key) appended to o: the offset its members
 * start at, or 0 without a group (-1 on an error). */
static Py_ssize_t
begin_fields(FormatterObject *self, Out *o)
{
    if (self->fields_group == Py_None)
        return 0;
    if (out_put_bytes(o, PyTuple_GET_ITEM(self->fields_group, 0)) < 0)
        return -1;
    return o->len;
}

/* The end of the fields begun at ``body`` (begin_fields, its opening at ``mark``). */
static int
end_fields(FormatterObject *self, Out *o, Py_ssize_t mark, Py_ssize_t body)
{
    return body ? end_group(o, self->fields_group, mark, body) : 0;
}

/* ``{ "time": ..., "cpu": N, "pid": N, "tid": N, "comm": ...<extra><tail> } }`` appended
 * to o, the members the pieces show (``tail``: bytes or NULL); ``utc``: the ISO form with
 * ``offset_ns`` (TIME_PERF with clock data). */
static int
put_meta(FormatterObject *self, Out *o, PyObject *sample, int utc, long long offset_ns,
         const char *extra, Py_ssize_t extra_len, PyObject *tail)
{
    Py_ssize_t mark = o->len, body = -1;
    if (self->meta_group != Py_None) { /* none of the four: its members decide its form */
        if (out_put_bytes(o, PyTuple_GET_ITEM(self->meta_group, 0)) < 0)
            return -1;
        body = o->len;
        goto comm;
    }
    if (self->pre_time == Py_None)
        goto ids;
    unsigned long long t = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(sample, 0));
    if (t == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    if (!utc) {
        if (out_put_bytes(o, self->pre_time) < 0 || put_time_value(self, o, t, offset_ns) < 0)
            return -1;
        goto ids;
    }
    __int128 when = (__int128)t + offset_ns;
    long long sec = (long long)(when / 1000000000);
    long long ns = (long long)(when % 1000000000);
    if (ns < 0) { /* floor division, as divmod */
        ns += 1000000000;
        sec -= 1;
    }
    PyObject *prefix = time_prefix(self, sec);
    if (prefix == NULL)
        return -1;
    char digits[9];
    for (int i = 8; i >= 0; i--) {
        digits[i] = (char)('0' + ns % 10);
        ns /= 10;
    }
    if (out_put_bytes(o, self->pre_time) < 0 || out_put_bytes(o, prefix) < 0 ||
        out_put(o, digits, 9) < 0 || out_put(o, "Z\"", 2) < 0)
        return -1;
ids:;
    PyObject *const mids[3] = {self->mid_cpu, self->mid_pid, self->mid_tid};
    for (int i = 0; i < 3; i++) {
        if (mids[i] == Py_None)
            continue;
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(sample, 1 + i));
        if (v == -1 && PyErr_Occurred())
            return -1;
        if (out_put_bytes(o, mids[i]) < 0 || out_put_i64(o, v) < 0)
            return -1;
    }
comm:
    if (self->comm_json != Py_None) {
        PyObject *comm = call1(self->comm_json, PyTuple_GET_ITEM(sample, 3));
        if (comm == NULL)
            return -1;
        int rc = comm == Py_None ? 0 : put_result(o, comm, "comm_json");
        if (comm == Py_None)
            Py_DECREF(comm);
        if (rc < 0)
            return -1;
    }
    if (out_put(o, extra, extra_len) < 0 || (tail != NULL && out_put_bytes(o, tail) < 0))
        return -1;
    if (body >= 0)
        return end_group(o, self->meta_group, mark, body);
    return out_put_bytes(o, self->end_meta);
}

static PyObject *
call1(PyObject *fn, PyObject *arg)
{
    return PyObject_CallOneArg(fn, arg);
}

/* ``bytes`` appended to o (a Python handler's or renderer's result) */
static int
put_result(Out *o, PyObject *r, const char *what)
{
    if (r == NULL)
        return -1;
    int rc = -1;
    if (!PyBytes_Check(r))
        PyErr_Format(PyExc_TypeError, "%s must be bytes", what);
    else
        rc = out_put_bytes(o, r);
    Py_DECREF(r);
    return rc;
}

/* The plan of a bound Plan method object (``which``: its C function), else NULL: the
 * renderer then runs straight into the caller's buffer. */
static PlanObject *
plan_of(PyObject *fn, PyCFunction which)
{
    if (!PyCFunction_Check(fn) || PyCFunction_GET_FUNCTION(fn) != which)
        return NULL;
    PyObject *owner = PyCFunction_GET_SELF(fn);
    return owner != NULL && Py_TYPE(owner) == &PlanType ? (PlanObject *)owner : NULL;
}

/* render(raw) appended to o: a tracefs renderer (a Plan's render_record runs here) */
static int
put_rendered(Out *o, PyObject *render, PyObject *raw)
{
    PlanObject *plan = plan_of(render, (PyCFunction)(void (*)(void))Plan_render_record);
    if (plan == NULL || !PyBytes_Check(raw) || PyBytes_GET_SIZE(raw) < plan->min_len)
        return put_result(o, call1(render, raw), "event pieces");
    Py_ssize_t mark = o->len;
    int rc = plan_run(plan, raw, 0, o);
    if (rc == FAIL_PY)
        return -1;
    if (rc == FAIL_DEFER) { /* as Plan.render_record: the Python renderer */
        o->len = mark;
        return put_result(o, PyObject_CallOneArg(plan->fallback, raw), "a renderer");
    }
    return 0;
}

/* head + render(raw) + meta appended to o */
static int
put_plain(FormatterObject *self, Out *o, PyObject *spec, PyObject *sample, long long offset_ns)
{
    PyObject *head = PyTuple_GET_ITEM(spec, 1), *render = PyTuple_GET_ITEM(spec, 2);
    PyObject *raw = PyTuple_GET_ITEM(sample, 4), *extra = PyTuple_GET_ITEM(spec, 3);
    if (out_put_bytes(o, head) < 0)
        return -1;
    Py_ssize_t mark = o->len, body = begin_fields(self, o);
    if (body < 0 || put_rendered(o, render, raw) < 0 || end_fields(self, o, mark, body) < 0)
        return -1;
    if (!PyBytes_Check(extra)) {
        PyErr_SetString(PyExc_TypeError, "meta members must be bytes");
        return -1;
    }
    return put_meta(self, o, sample, self->utc, offset_ns, PyBytes_AS_STRING(extra),
                    PyBytes_GET_SIZE(extra), NULL);
}

/* The fields of an EventHeader cache hit appended to o: 1 when done, 0 when the event is
 * the handler's (o as it was), -1 on an error. */
static int
put_hit_fields(Out *o, PyObject *hit, PyObject *raw, Py_ssize_t off, Py_ssize_t skip)
{
    PyObject *render = PyTuple_GET_ITEM(hit, 3);
    Py_ssize_t mark = o->len;
    PlanObject *plan = plan_of(render, (PyCFunction)(void (*)(void))Plan_render);
    if (plan != NULL) {
        int rc = plan_run(plan, raw, off + skip, o);
        if (rc == OK)
            return 1;
        o->len = mark;
        if (rc == FAIL_PY)
            goto failed;
        render = plan->fallback; /* as Plan.render: the generated Python renderer */
    }
    PyObject *args[3] = {raw, PyLong_FromSsize_t(off + skip), PyLong_FromSsize_t(off)};
    PyObject *fields = NULL;
    if (args[1] != NULL && args[2] != NULL)
        fields = PyObject_Vectorcall(render, args, 3, NULL);
    Py_XDECREF(args[1]);
    Py_XDECREF(args[2]);
    if (fields != NULL)
        return put_result(o, fields, "event pieces") < 0 ? -1 : 1;
failed:
    if (!PyErr_ExceptionMatches(PyExc_ValueError))
        return -1;
    PyErr_Clear(); /* a malformed event: the handler falls back and warns */
    return 0;
}

/* An EventHeader hit's fields appended to o after its name, in the fields' group: the
 * common fields first when the spec has their renderer (--meta common), then the
 * event's. As put_hit_fields: 1, 0 (the handler's: the caller rewinds o), -1. */
static int
put_eh_fields(FormatterObject *self, Out *o, PyObject *spec, PyObject *hit, PyObject *raw,
              Py_ssize_t off, Py_ssize_t skip)
{
    Py_ssize_t mark = o->len, body = begin_fields(self, o);
    PyObject *common = PyTuple_GET_ITEM(spec, 10);
    if (body < 0 || (common != Py_None && put_rendered(o, common, raw) < 0))
        return -1;
    int rc = put_hit_fields(o, hit, raw, off, skip);
    if (rc == 1 && end_fields(self, o, mark, body) < 0)
        return -1;
    return rc;
}

/* The decoder's fast-cache entry (EventHeaderDecoder.fast_cache[tracepoint]) keyed by
 * the n event bytes at off: a borrowed reference, or NULL (an error is set only when a
 * lookup itself failed). */
static PyObject *
cache_get(PyObject *fast_cache, PyObject *tracepoint, PyObject *raw, Py_ssize_t off,
          Py_ssize_t n)
{
    PyObject *per_name = PyDict_GetItemWithError(fast_cache, tracepoint);
    if (per_name == NULL || !PyDict_Check(per_name) || off < 0 ||
        off + n > PyBytes_GET_SIZE(raw))
        return NULL;
    PyObject *key = PyBytes_FromStringAndSize(PyBytes_AS_STRING(raw) + off, n);
    if (key == NULL)
        return NULL;
    PyObject *hit = PyDict_GetItemWithError(per_name, key);
    Py_DECREF(key);
    return hit;
}

/* The decoder's cache entry for this event when it is a hit without activity ids, else
 * NULL (no error), following EventHeaderDecoder.decode_parts: the first 12 event bytes key
 * an entry whose metadata must follow them, or, when several metadata share those bytes,
 * the length of the longer key (header, extension header, metadata) of the entry. */
static PyObject *
fast_hit(PyObject *fast_cache, PyObject *tracepoint, PyObject *raw, Py_ssize_t off)
{
    Py_ssize_t len = PyBytes_GET_SIZE(raw);
    const char *data = PyBytes_AS_STRING(raw);
    PyObject *hit = cache_get(fast_cache, tracepoint, raw, off, 12);
    if (hit != NULL && PyLong_CheckExact(hit)) { /* the marker: key by the whole prefix */
        Py_ssize_t m = PyLong_AsSsize_t(hit);
        if (m < 12)
            return NULL;
        hit = cache_get(fast_cache, tracepoint, raw, off, m);
        if (hit == NULL || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 5)
            return NULL;
        return Py_NewRef(hit);
    }
    if (hit == NULL || !PyTuple_Check(hit) || PyTuple_GET_SIZE(hit) != 5)
        return NULL;
    PyObject *expect = PyTuple_GET_ITEM(hit, 0), *activity = PyTuple_GET_ITEM(hit, 1);
    if (!PyBytes_Check(expect) || !PyLong_CheckExact(activity) || PyLong_AsLong(activity) != 0)
        return NULL;
    Py_ssize_t n = PyBytes_GET_SIZE(expect);
    if (off + 12 + n > len || memcmp(data + off + 12, PyBytes_AS_STRING(expect), n) != 0)
        return NULL;
    return Py_NewRef(hit);
}

/* What formatting a fast-cache hit needs, read once per entry (EventInfo and FastEntry
 * are not changed after they are made). */
static int
slot_fill(HitSlot *slot, PyObject *hit)
{
    slot->hit = hit; /* the reference is the slot's */
    slot->skip = PyLong_AsSsize_t(PyTuple_GET_ITEM(hit, 2));
    if (slot->skip == -1 && PyErr_Occurred())
        return -1;
    PyObject *info = PyTuple_GET_ITEM(hit, 4);
    slot->name = PyObject_GetAttr(info, str_name_json);
    if (slot->name == NULL)
        return -1;
    slot->meta = PyObject_GetAttr(info, str_meta);
    if (slot->meta == NULL)
        return -1;
    if (!PyBytes_Check(slot->name) || !PyBytes_Check(slot->meta)) {
        PyErr_SetString(PyExc_TypeError, "event pieces must be bytes");
        return -1;
    }
    return 0;
}

static void
slot_clear(HitSlot *slot)
{
    Py_CLEAR(slot->spec);
    Py_CLEAR(slot->hit);
    Py_CLEAR(slot->name);
    Py_CLEAR(slot->meta);
}

/* The decoder's cache entry for a hit without activity ids (fast_hit on the spec's
 * cache and tracepoint), else NULL. */
static PyObject *
eventheader_hit(PyObject *spec, PyObject *raw, Py_ssize_t off)
{
    return fast_hit(PyTuple_GET_ITEM(spec, 4), PyTuple_GET_ITEM(spec, 1), raw, off);
}

/* eventheader_hit through a small table of recent hits: an entry (without activity ids)
 * serves any event of the same spec with the same first 12 bytes followed by its metadata
 * (its ``expect``), whatever the decoder's cache now holds for those bytes: the entry
 * renders exactly what decoding such an event gives. Returns the table's slot or ``tmp``
 * (filled: the caller clears it), or NULL (an error set, or no hit). */
static HitSlot *
cached_hit(FormatterObject *self, PyObject *spec, PyObject *raw, Py_ssize_t off, HitSlot *tmp)
{
    Py_ssize_t len = PyBytes_GET_SIZE(raw);
    HitSlot *slot = NULL;
    const unsigned char *key = (const unsigned char *)PyBytes_AS_STRING(raw) + off;
    if (off >= 0 && off + 12 <= len) {
        /* hashed with the start of the metadata too: several metadata may follow the
         * same 12 bytes */
        Py_ssize_t hashed = len - off < 12 + 32 ? len - off : 12 + 32;
        uint64_t h = (uint64_t)(uintptr_t)spec >> 4;
        for (Py_ssize_t i = 0; i < hashed; i++)
            h = h * 31 + key[i];
        slot = &self->hits[(h ^ (h >> 29)) & (HIT_SLOTS - 1)];
        if (slot->spec == spec && memcmp(slot->key, key, 12) == 0) {
            PyObject *expect = PyTuple_GET_ITEM(slot->hit, 0);
            Py_ssize_t n = PyBytes_GET_SIZE(expect);
            if (off + 12 + n <= len && memcmp(key + 12, PyBytes_AS_STRING(expect), n) == 0)
                return slot;
        }
    }
    PyObject *hit = eventheader_hit(spec, raw, off);
    if (hit == NULL)
        return NULL;
    memset(tmp, 0, sizeof *tmp);
    if (slot_fill(tmp, hit) < 0) {
        slot_clear(tmp);
        return NULL;
    }
    PyObject *expect = PyTuple_GET_ITEM(hit, 0), *activity = PyTuple_GET_ITEM(hit, 1);
    if (slot != NULL && PyBytes_Check(expect) && PyLong_CheckExact(activity) &&
        PyLong_AsLong(activity) == 0) {
        slot_clear(slot);
        *slot = *tmp; /* the references move to the table */
        slot->spec = Py_NewRef(spec);
        memcpy(slot->key, key, 12);
        memset(tmp, 0, sizeof *tmp);
        return slot;
    }
    return tmp;
}

/* The decoder's entry for an event with activity ids (EventHeaderDecoder.decode_parts):
 * the first 12 bytes key a FastEntry with activity ids, or a list of them, tried in
 * order; the entry's metadata must follow the ids. A new reference, or NULL. */
static PyObject *
activity_hit(PyObject *spec, PyObject *raw, Py_ssize_t off)
{
    Py_ssize_t len = PyBytes_GET_SIZE(raw);
    const char *data = PyBytes_AS_STRING(raw);
    PyObject *hit = cache_get(PyTuple_GET_ITEM(spec, 4), PyTuple_GET_ITEM(spec, 1), raw, off, 12);
    if (hit == NULL)
        return NULL;
    int listed = PyList_Check(hit);
    Py_ssize_t n = listed ? PyList_GET_SIZE(hit) : 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *entry = listed ? PyList_GET_ITEM(hit, i) : hit;
        if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 5)
            return NULL;
        PyObject *expect = PyTuple_GET_ITEM(entry, 0), *activity = PyTuple_GET_ITEM(entry, 1);
        if (!PyBytes_Check(expect) || !PyLong_CheckExact(activity))
            return NULL;
        long size = PyLong_AsLong(activity);
        if (size != 16 && size != 32) { /* (no activity ids: eventheader_hit's) */
            PyErr_Clear();
            return NULL;
        }
        Py_ssize_t m = PyBytes_GET_SIZE(expect), at = off + 12 + size;
        if (at + m <= len && memcmp(data + at, PyBytes_AS_STRING(expect), m) == 0)
            return Py_NewRef(entry);
    }
    return NULL;
}

/* An event with activity ids from its entry: as put_eventheader, the meta followed by
 * the activity id and the related one (EventHeaderDecoder._with_activity). */
static int
put_activity_event(FormatterObject *self, Out *o, PyObject *spec, PyObject *sample,
                   PyObject *hit, Py_ssize_t off, long long offset_ns)
{
    PyObject *raw = PyTuple_GET_ITEM(sample, 4);
    PyObject *keys = PyTuple_GET_ITEM(spec, 6);
    if (!PyTuple_Check(keys) || PyTuple_GET_SIZE(keys) != 2 ||
        !PyBytes_Check(PyTuple_GET_ITEM(keys, 0)) || !PyBytes_Check(PyTuple_GET_ITEM(keys, 1))) {
        PyErr_SetString(PyExc_TypeError, "activity_keys must be two bytes");
        return -1;
    }
    HitSlot tmp = {0};
    if (slot_fill(&tmp, Py_NewRef(hit)) < 0) {
        slot_clear(&tmp);
        return -1;
    }
    long size = PyLong_AsLong(PyTuple_GET_ITEM(hit, 1));
    Py_ssize_t mark = o->len;
    int rc = -1;
    Out extra;
    out_init(&extra);
    const unsigned char *ids = (const unsigned char *)PyBytes_AS_STRING(raw) + off + 12;
    if (out_put_bytes(&extra, tmp.meta) < 0 ||
        out_put_bytes(&extra, PyTuple_GET_ITEM(keys, 0)) < 0 || put_uuid(&extra, ids) != OK)
        goto done;
    if (size == 32 && (out_put_bytes(&extra, PyTuple_GET_ITEM(keys, 1)) < 0 ||
                       put_uuid(&extra, ids + 16) != OK))
        goto done;
    if (out_put_bytes(o, PyTuple_GET_ITEM(spec, 3)) < 0 || out_put_bytes(o, tmp.name) < 0)
        goto done;
    rc = put_eh_fields(self, o, spec, hit, raw, off, tmp.skip);
    if (rc == 1)
        rc = put_meta(self, o, sample, self->utc, offset_ns, extra.data, extra.len,
                      PyTuple_GET_ITEM(spec, 7));
    else if (rc == 0) {
        o->len = mark;
        rc = put_result(o, call1(PyTuple_GET_ITEM(spec, 5), sample), "a handler's event");
    }
done:
    out_free(&extra);
    slot_clear(&tmp);
    return rc;
}

/* The meta members of a hit's event for the formatter's --meta keys: spec.metas[info],
 * made by spec.meta_of(info) the first time. A new reference, or NULL. */
static PyObject *
meta_for(PyObject *spec, PyObject *hit)
{
    PyObject *metas = PyTuple_GET_ITEM(spec, 8), *info = PyTuple_GET_ITEM(hit, 4);
    PyObject *meta = PyDict_GetItemWithError(metas, info);
    if (meta != NULL)
        return Py_NewRef(meta);
    if (PyErr_Occurred())
        return NULL;
    meta = call1(PyTuple_GET_ITEM(spec, 9), info);
    if (meta == NULL)
        return NULL;
    if (!PyBytes_Check(meta)) {
        Py_DECREF(meta);
        PyErr_SetString(PyExc_TypeError, "meta_of(info) must return bytes");
        return NULL;
    }
    if (PyDict_SetItem(metas, info, meta) < 0) {
        Py_DECREF(meta);
        return NULL;
    }
    return meta;
}

/* An EventHeader event appended to o: head, name, fields and meta of a cache hit without
 * activity ids, else the handler's text. */
static int
put_eventheader(FormatterObject *self, Out *o, PyObject *spec, PyObject *sample,
                long long offset_ns)
{
    PyObject *raw = PyTuple_GET_ITEM(sample, 4);
    PyObject *handler = PyTuple_GET_ITEM(spec, 5);
    Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 2));
    if (off == -1 && PyErr_Occurred())
        return -1;
    HitSlot tmp = {0};
    HitSlot *slot = PyBytes_CheckExact(raw) ? cached_hit(self, spec, raw, off, &tmp) : NULL;
    PyObject *metas = PyTuple_GET_ITEM(spec, 8);
    if (slot == NULL) {
        if (PyErr_Occurred())
            return -1;
        PyObject *hit = PyBytes_CheckExact(raw) && metas == Py_None
                            ? activity_hit(spec, raw, off) : NULL;
        if (hit != NULL) {
            int rc = put_activity_event(self, o, spec, sample, hit, off, offset_ns);
            Py_DECREF(hit);
            return rc;
        }
        if (PyErr_Occurred())
            return -1;
        return put_result(o, call1(handler, sample), "a handler's event");
    }
    /* the slot may be replaced while Python code runs: hold what is used */
    PyObject *hit = Py_NewRef(slot->hit), *meta = Py_NewRef(slot->meta);
    PyObject *name = Py_NewRef(slot->name);
    Py_ssize_t skip = slot->skip, mark = o->len;
    int rc = -1;
    if (metas != Py_None) {
        Py_SETREF(meta, meta_for(spec, hit));
        if (meta == NULL)
            goto done;
    }
    if (out_put_bytes(o, PyTuple_GET_ITEM(spec, 3)) < 0 || out_put_bytes(o, name) < 0)
        goto done;
    rc = put_eh_fields(self, o, spec, hit, raw, off, skip);
    if (rc == 1)
        rc = put_meta(self, o, sample, self->utc, offset_ns, PyBytes_AS_STRING(meta),
                      PyBytes_GET_SIZE(meta), PyTuple_GET_ITEM(spec, 7));
    else if (rc == 0) {
        o->len = mark;
        rc = put_result(o, call1(handler, sample), "a handler's event");
    }
done:
    Py_DECREF(hit);
    Py_DECREF(name);
    Py_XDECREF(meta);
    slot_clear(&tmp);
    return rc;
}

static int
valid_spec(PyObject *h)
{
    if (!PyTuple_Check(h))
        return PyCallable_Check(h);
    Py_ssize_t n = PyTuple_GET_SIZE(h);
    if (n < 1)
        return 0;
    long kind = PyLong_AsLong(PyTuple_GET_ITEM(h, 0));
    if (kind == 0)
        return n == 5 && PyBytes_Check(PyTuple_GET_ITEM(h, 1)) &&
               PyBytes_Check(PyTuple_GET_ITEM(h, 3));
    if (kind == 1)
        return n == 11 && PyUnicode_Check(PyTuple_GET_ITEM(h, 1)) &&
               PyDict_Check(PyTuple_GET_ITEM(h, 4)) && PyBytes_Check(PyTuple_GET_ITEM(h, 3)) &&
               PyBytes_Check(PyTuple_GET_ITEM(h, 7)) &&
               (PyTuple_GET_ITEM(h, 8) == Py_None ||
                (PyDict_Check(PyTuple_GET_ITEM(h, 8)) &&
                 PyCallable_Check(PyTuple_GET_ITEM(h, 9))));
    return 0;
}

/* One sample's JSON object appended to o. */
static int
put_sample(FormatterObject *self, Out *o, PyObject *sample, long long offset_ns)
{
    if (!PyTuple_Check(sample) || PyTuple_GET_SIZE(sample) < 7) {
        PyErr_SetString(PyExc_TypeError, "samples must be Sample tuples");
        return -1;
    }
    PyObject *desc = PyTuple_GET_ITEM(sample, 5);
    PyObject *h = PyDict_GetItemWithError(self->handlers, desc);
    if (h == NULL) {
        if (PyErr_Occurred())
            return -1;
        PyObject *made = call1(self->make, desc);
        if (made == NULL)
            return -1;
        if (!valid_spec(made)) {
            Py_DECREF(made);
            PyErr_SetString(PyExc_TypeError, "make(desc) returned no handler");
            return -1;
        }
        int rc = PyDict_SetItem(self->handlers, desc, made);
        Py_DECREF(made);
        if (rc < 0)
            return -1;
        h = made; /* the dict holds it */
    }
    Py_INCREF(h); /* the handlers may run Python code */
    int rc;
    if (!PyTuple_Check(h))
        rc = put_result(o, call1(h, sample), "a handler's event");
    else if (PyLong_AsLong(PyTuple_GET_ITEM(h, 0)) == 0)
        rc = put_plain(self, o, h, sample, offset_ns);
    else
        rc = put_eventheader(self, o, h, sample, offset_ns);
    Py_DECREF(h);
    return rc;
}

/* The clock offset of this call (0 when unknown) and whether times are ISO. */
static int
begin_call(FormatterObject *self, PyObject *samples, long long *offset_ns)
{
    if (!PyList_Check(samples)) {
        PyErr_SetString(PyExc_TypeError, "format_many takes a list of samples");
        return -1;
    }
    PyObject *offset = PyObject_GetAttr(self->clock, str_offset_ns);
    if (offset == NULL)
        return -1;
    int known = offset != Py_None;
    *offset_ns = known ? PyLong_AsLongLong(offset) : 0;
    Py_DECREF(offset);
    if (known && *offset_ns == -1 && PyErr_Occurred())
        return -1;
    self->utc = known && self->time_mode == TIME_PERF;
    return 0;
}

static PyObject *
Formatter_format_many(FormatterObject *self, PyObject *samples)
{
    long long offset_ns;
    if (begin_call(self, samples, &offset_ns) < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(samples);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    Out o;
    out_init(&o);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i >= PyList_GET_SIZE(samples)) {
            PyErr_SetString(PyExc_RuntimeError, "the sample list changed size");
            goto fail;
        }
        o.len = 0;
        PyObject *r = NULL, *sample = Py_NewRef(PyList_GET_ITEM(samples, i));
        if (put_sample(self, &o, sample, offset_ns) == 0)
            r = PyBytes_FromStringAndSize(o.data, o.len);
        Py_DECREF(sample);
        if (r == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, r);
    }
    out_free(&o);
    return out;
fail:
    out_free(&o);
    Py_DECREF(out);
    return NULL;
}

/* format_joined(samples, sep, lead=b"", tail=b"") -> bytes: ``lead``, the events' JSON
 * objects with ``sep`` between them, ``tail``, written into one buffer
 * (lead + sep.join(format_many(samples)) + tail without the objects). */
static PyObject *
Formatter_format_joined(FormatterObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 4 || !PyBytes_Check(args[1])
            || (nargs > 2 && !PyBytes_Check(args[2])) || (nargs > 3 && !PyBytes_Check(args[3]))) {
        PyErr_SetString(PyExc_TypeError,
                        "format_joined(samples, sep: bytes, lead: bytes = b'', tail: bytes = b'')");
        return NULL;
    }
    PyObject *samples = args[0], *sep = args[1];
    long long offset_ns;
    if (begin_call(self, samples, &offset_ns) < 0)
        return NULL;
    Out o;
    out_init(&o);
    PyObject *result = NULL;
    if (nargs > 2 && out_put_bytes(&o, args[2]) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(samples); i++) {
        if (i && out_put_bytes(&o, sep) < 0)
            goto done;
        PyObject *sample = Py_NewRef(PyList_GET_ITEM(samples, i));
        int rc = put_sample(self, &o, sample, offset_ns);
        Py_DECREF(sample);
        if (rc < 0)
            goto done;
    }
    if (nargs > 3 && out_put_bytes(&o, args[3]) < 0)
        goto done;
    result = PyBytes_FromStringAndSize(o.data, o.len);
done:
    out_free(&o);
    return result;
}

static PyObject *
Formatter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"make", "clock", "pre_time", "mid_cpu", "mid_pid", "mid_tid",
                             "end_meta", "time_mode", "comm_json", "meta_group",
                             "fields_group", NULL};
    PyObject *make, *clock, *pre_time, *mid_cpu, *mid_pid, *mid_tid, *end_meta;
    PyObject *comm_json = Py_None, *meta_group = Py_None, *fields_group = Py_None;
    int time_mode = TIME_PERF;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOOS|iOOO", kwlist, &make, &clock,
                                     &pre_time, &mid_cpu, &mid_pid, &mid_tid, &end_meta,
                                     &time_mode, &comm_json, &meta_group, &fields_group))
        return NULL;
    PyObject *const groups[2] = {meta_group, fields_group};
    for (int i = 0; i < 2; i++) {
        PyObject *g = groups[i];
        if (g == Py_None)
            continue;
        int ok = PyTuple_Check(g) && PyTuple_GET_SIZE(g) == 4;
        for (int k = 0; ok && k < 4; k++)
            ok = PyBytes_Check(PyTuple_GET_ITEM(g, k));
        if (!ok) {
            PyErr_SetString(PyExc_TypeError, "a group must be four bytes or None");
            return NULL;
        }
    }
    if (time_mode < TIME_PERF || time_mode > TIME_DELTA) {
        PyErr_SetString(PyExc_ValueError, "time_mode must be a TIME_* constant");
        return NULL;
    }
    PyObject *const pieces[4] = {pre_time, mid_cpu, mid_pid, mid_tid};
    for (int i = 0; i < 4; i++) {
        if (pieces[i] != Py_None && !PyBytes_Check(pieces[i])) {
            PyErr_SetString(PyExc_TypeError, "the meta pieces must be bytes or None");
            return NULL;
        }
    }
    if (comm_json != Py_None && !PyCallable_Check(comm_json)) {
        PyErr_SetString(PyExc_TypeError, "comm_json must be callable or None");
        return NULL;
    }
    if ((meta_group == Py_None) != (pre_time != Py_None || mid_cpu != Py_None ||
                                    mid_pid != Py_None || mid_tid != Py_None)) {
        PyErr_SetString(PyExc_ValueError, "meta_group is for a meta without the four pieces");
        return NULL;
    }
    FormatterObject *self = (FormatterObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->handlers = PyDict_New();
    if (self->handlers == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->make = Py_NewRef(make);
    self->clock = Py_NewRef(clock);
    self->pre_time = Py_NewRef(pre_time);
    self->mid_cpu = Py_NewRef(mid_cpu);
    self->mid_pid = Py_NewRef(mid_pid);
    self->mid_tid = Py_NewRef(mid_tid);
    self->end_meta = Py_NewRef(end_meta);
    self->comm_json = Py_NewRef(comm_json);
    self->meta_group = Py_NewRef(meta_group);
    self->fields_group = Py_NewRef(fields_group);
    self->time_mode = time_mode;
    return (PyObject *)self;
}

static int
Formatter_clear(FormatterObject *self)
{
    Py_CLEAR(self->handlers);
    Py_CLEAR(self->make);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->pre_time);
    Py_CLEAR(self->mid_cpu);
    Py_CLEAR(self->mid_pid);
    Py_CLEAR(self->mid_tid);
    Py_CLEAR(self->end_meta);
    Py_CLEAR(self->comm_json);
    Py_CLEAR(self->meta_group);
    Py_CLEAR(self->fields_group);
    Py_CLEAR(self->last_prefix);
    for (int i = 0; i < HIT_SLOTS; i++)
        slot_clear(&self->hits[i]);
    return 0;
}

static void
Formatter_dealloc(FormatterObject *self)
{
    PyObject_GC_UnTrack(self);
    Formatter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Formatter_traverse(FormatterObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->handlers);
    Py_VISIT(self->make);
    Py_VISIT(self->clock);
    Py_VISIT(self->comm_json);
    for (int i = 0; i < HIT_SLOTS; i++) {
        Py_VISIT(self->hits[i].spec);
        Py_VISIT(self->hits[i].hit);
        Py_VISIT(self->hits[i].name);
        Py_VISIT(self->hits[i].meta);
    }
    return 0;
}

/* Formatter.time_json(t): the time value in a non-ISO mode, sharing the REL/DELTA state
 * of format_many (for the Python handlers of samples the template does not cover). */
static PyObject *
Formatter_time_json(FormatterObject *self, PyObject *arg)
{
    unsigned long long t = PyLong_AsUnsignedLongLong(arg);
    if (t == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    long long offset_ns = 0;
    if (self->time_mode == TIME_NS) {
        PyObject *offset = PyObject_GetAttr(self->clock, str_offset_ns);
        if (offset == NULL)
            return NULL;
        if (offset != Py_None)
            offset_ns = PyLong_AsLongLong(offset);
        if (offset_ns == -1 && PyErr_Occurred()) {
            /* an offset past 64 bits (corrupt CLOCK_DATA): Python's ints, as TimeFormat */
            PyErr_Clear();
            PyObject *sum = PyNumber_Add(arg, offset);
            Py_DECREF(offset);
            PyObject *text = sum != NULL ? PyObject_Str(sum) : NULL;
            Py_XDECREF(sum);
            PyObject *r = text != NULL ? PyUnicode_AsASCIIString(text) : NULL;
            Py_XDECREF(text);
            return r;
        }
        Py_DECREF(offset);
    }
    Out o;
    out_init(&o);
    PyObject *r = NULL;
    if (put_time_value(self, &o, t, offset_ns) == 0)
        r = PyBytes_FromStringAndSize(o.data, o.len);
    out_free(&o);
    return r;
}

static PyMethodDef Formatter_methods[] = {
    {"time_json", (PyCFunction)Formatter_time_json, METH_O,
     "time_json(time) -> the meta time value (bytes) in a non-ISO time_mode"},
    {"format_many", (PyCFunction)Formatter_format_many, METH_O,
     "format_many(samples) -> list of JSON event objects (bytes)"},
    {"format_joined", (PyCFunction)(void (*)(void))Formatter_format_joined, METH_FASTCALL,
     "format_joined(samples, sep, lead=b'', tail=b'') -> bytes: "
     "lead + sep.join(format_many(samples)) + tail"},
    {NULL},
};

static PyTypeObject FormatterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ehtool._speedups.Formatter",
    .tp_basicsize = sizeof(FormatterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Formatter(make, clock, pre_time, mid_cpu, mid_pid, mid_tid, end_meta, "
              "time_mode=0, comm_json=None, meta_group=None, fields_group=None)",
    .tp_new = Formatter_new,
    .tp_dealloc = (destructor)Formatter_dealloc,
    .tp_traverse = (traverseproc)Formatter_traverse,
    .tp_clear = (inquiry)Formatter_clear,
    .tp_methods = Formatter_methods,
};

/* ================================================================================== */
/* Program and Filter: the decisions of ehtool.decode.filters.Selection for a batch  */
/* ================================================================================== */

/* A Program decides the samples of one EventInfo (EventHeader fast-cache hits without
 * activity ids) or of one tracefs event; ehtool/decode/native.py compiles it from the
 * expression's tree, and whatever it cannot say goes to Selection.select:
 *   Program(plan, marks, slots, nodes, decision)
 * plan: the _speedups.Plan whose walk checks the event whole (as Plan.check) and notes
 *   where its top-level ops ``marks`` (op indices, ascending) start; None for tracefs.
 * slots: the value of each name of the expression, (found, source, ...):
 *   (found, SRC_MISSING, None) | (found, SRC_CONST, value) | (found, SRC_SAMPLE, index)
 *   | (found, SRC_COMM, names, tid index): the thread's name in the session's live dict
 *   | (found, SRC_FIELD, mark, read: RD_*) | (found, SRC_RECORD, offset, size, element size
 *   (0: a char array's text),
 *   signed, big endian); ``found``: the name's byte in the Filter's ``found``, set
 *   when the value is present in an event decided here.
 * nodes: (N_OR|N_AND, a, b) | (N_NOT, a) | (N_CMP, slot, op, value) | (N_NAME, slot),
 *   children before their parents, the root last; op: Py_LT..Py_GE, CMP_BITS (&), or
 *   CMP_GLOB (~: the value is expression.glob_matcher's test, called on text).
 * decision: 0 or 1 when it is the same for every event (the nodes unused), else -1.
 * The comparisons are Python's (PyObject_RichCompare); a missing value is false; text
 * that compares as a number (``"0x..."``) is left to Python. */
enum { SRC_MISSING = 0, SRC_CONST = 1, SRC_SAMPLE = 2, SRC_FIELD = 3, SRC_RECORD = 4,
       SRC_COMM = 5 };
enum { RD_FIXED = 0, RD_UTF8 = 1, RD_LATIN1 = 2, RD_ARRAY = 3 };
enum { N_OR = 0, N_AND = 1, N_NOT = 2, N_CMP = 3, N_NAME = 4 };
enum { CMP_BITS = 6, CMP_GLOB = 7 };
#define PROGRAM_SLOTS 32
#define DEFER (-2) /* a decision for the Python path */

typedef struct {
    int found, source, read;
    Py_ssize_t arg;                  /* SAMPLE: index; FIELD: mark; RECORD: offset */
    int size, esize, is_signed, big; /* RECORD */
    PyObject *value;                 /* CONST */
} Slot;

typedef struct {
    int type, a, b, op;
    PyObject *value; /* N_CMP: the constant */
} Node;

typedef struct {
    PyObject_HEAD
    PlanObject *plan; /* or NULL */
    const Op *marks[PROGRAM_SLOTS];
    Py_ssize_t nmarks;
    Slot slots[PROGRAM_SLOTS];
    Py_ssize_t nslots;
    Node *nodes;
    Py_ssize_t nnodes;
    int decision;
} ProgramObject;

static PyTypeObject ProgramType;

/* Text that expression._number reads as a number: the Python path's. */
static int
hex_text(PyObject *v)
{
    if (!PyUnicode_Check(v) || PyUnicode_GET_LENGTH(v) < 2)
        return 0;
    Py_UCS4 b = PyUnicode_READ_CHAR(v, 1);
    return PyUnicode_READ_CHAR(v, 0) == '0' && (b == 'x' || b == 'X');
}

/* ``left OP right`` as expression._comparison: 1, 0, -1 (error) or DEFER. */
static int
compare(PyObject *left, int op, PyObject *right)
{
    if (left == NULL)
        return 0; /* a missing name */
    PyObject *r;
    if (PyLong_Check(left) && (op == CMP_GLOB || PyUnicode_Check(right)))
        return DEFER; /* a number shown as text (hex, errno) is text there: Python's */
    if (op == CMP_GLOB) { /* text only, as it is (no hex reading) */
        if (!PyUnicode_Check(left))
            return 0;
        r = PyObject_CallOneArg(right, left);
        if (r == NULL)
            return -1;
        int t = r != Py_None;
        Py_DECREF(r);
        return t;
    }
    if (hex_text(left))
        return DEFER;
    if (op == CMP_BITS) {
        if (!PyLong_Check(left) || !PyLong_Check(right))
            return 0;
        r = PyNumber_And(left, right);
    }
    else {
        r = PyObject_RichCompare(left, right, op);
        if (r == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            return 0;
        }
    }
    if (r == NULL)
        return -1;
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* Node i on the slots' values: 1, 0, -1 (error) or DEFER. */
static int
eval_node(const ProgramObject *g, PyObject *const *values, Py_ssize_t i)
{
    const Node *n = &g->nodes[i];
    int r;
    switch (n->type) {
    case N_OR:
        r = eval_node(g, values, n->a);
        return r != 0 ? r : eval_node(g, values, n->b);
    case N_AND:
        r = eval_node(g, values, n->a);
        return r != 1 ? r : eval_node(g, values, n->b);
    case N_NOT:
        r = eval_node(g, values, n->a);
        return r < 0 ? r : !r;
    case N_NAME: {
        PyObject *v = values[n->a];
        if (v == NULL)
            return 0;
        return hex_text(v) ? DEFER : PyObject_IsTrue(v);
    }
    default:
        return compare(values[n->a], n->op, n->value);
    }
}

/* A fixed-size value at q (op: its OP_FIXED) as the typed decoder has it
 * (ehtool.eventheader.kinds) for the kinds the Program reads (Kind.c_reads), else
 * FAIL_DEFER. */
static int
read_fixed(const Op *op, const unsigned char *q, int little, PyObject **out)
{
    int size = op->size;
    uint64_t v = read_uint(q, size, little);
    switch (op->kind) {
    case FX_UNSIGNED:
    case FX_HEX:
        *out = PyLong_FromUnsignedLongLong(v);
        break;
    case FX_SIGNED:
        *out = PyLong_FromLongLong(sign_extend(v, size));
        break;
    case FX_PORT: /* network byte order */
        *out = PyLong_FromUnsignedLongLong(read_uint(q, 2, 0));
        break;
    case FX_ERRNO: /* a signed 32-bit int (compared with text, Python decides) */
        if (size != 4)
            return FAIL_DEFER;
        *out = PyLong_FromLong((int32_t)(uint32_t)v);
        break;
    case FX_BOOL: /* False, True, else the value as a signed 32-bit int */
        *out = v <= 1 ? PyBool_FromLong((long)v) : PyLong_FromLong((int32_t)(uint32_t)v);
        break;
    case FX_FLOAT: { /* a float64 (a float32's typed value is Python's rule) */
        if (size != 8)
            return FAIL_DEFER;
        double d;
        memcpy(&d, &v, 8);
        *out = PyFloat_FromDouble(d);
        break;
    }
    default:
        return FAIL_DEFER;
    }
    return *out == NULL ? FAIL_PY : OK;
}

/* An array of fixed-size values at p (op: its OP_ARRAY): the list of their values. */
static int
read_array(const Op *op, Py_ssize_t p, const unsigned char *data, Py_ssize_t len, int little,
           PyObject **out)
{
    const Op *element = op + 1;
    if (op->op != OP_ARRAY || op->body != 1 || element->op != OP_FIXED || element->size > 8)
        return FAIL_DEFER;
    Py_ssize_t count = op->count;
    if (count == 0) { /* the u16 count before the elements */
        if (p + 2 > len)
            return FAIL_DEFER;
        count = (Py_ssize_t)read_uint(data + p, 2, little);
        p += 2;
    }
    if (p + count * element->size > len)
        return FAIL_DEFER;
    PyObject *list = PyList_New(count);
    if (list == NULL)
        return FAIL_PY;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item;
        int rc = read_fixed(element, data + p + i * element->size, little, &item);
        if (rc != OK) {
            Py_DECREF(list);
            return rc;
        }
        PyList_SET_ITEM(list, i, item);
    }
    *out = list;
    return OK;
}

/* A top-level EventHeader field at p (the walk checked the event): its typed value
 * for the reads the Program knows, else FAIL_DEFER. */
static int
read_field(const Slot *s, const Op *op, Py_ssize_t p, const unsigned char *data,
           Py_ssize_t len, int little, PyObject **out)
{
    if (s->read == RD_UTF8 || s->read == RD_LATIN1) {
        Ctx c;
        Py_ssize_t start, n, next;
        c.data = data;
        c.len = len;
        c.p = p;
        c.little = little;
        if (op->op != OP_STR || op->size != 1 || string_bounds(&c, op, &start, &n, &next) != OK)
            return FAIL_DEFER;
        const char *q = (const char *)data + start;
        *out = s->read == RD_UTF8 ? PyUnicode_DecodeUTF8(q, n, "replace")
                                  : PyUnicode_DecodeLatin1(q, n, NULL);
        return *out == NULL ? FAIL_PY : OK;
    }
    if (s->read == RD_ARRAY)
        return p < 0 ? FAIL_DEFER : read_array(op, p, data, len, little, out);
    if (op->op != OP_FIXED || op->size > 8 || p < 0 || p + op->size > len)
        return FAIL_DEFER;
    return read_fixed(op, data + p, little, out);
}

/* A tracefs scalar integer as formats.values.field_value reads it (None when the record
 * is too short). */
static int
read_record(const Slot *s, const unsigned char *data, Py_ssize_t len, PyObject **out)
{
    if (s->esize == 0) { /* a char array: its text up to a NUL, Latin-1 ("" when cut) */
        Py_ssize_t n = 0;
        if (s->arg + s->size <= len) {
            const unsigned char *nul = memchr(data + s->arg, 0, (size_t)s->size);
            n = nul != NULL ? nul - (data + s->arg) : s->size;
        }
        *out = PyUnicode_DecodeLatin1((const char *)data + s->arg, n, NULL);
        return *out == NULL ? FAIL_PY : OK;
    }
    if (s->arg + s->size > len || s->size < s->esize) {
        *out = Py_NewRef(Py_None);
        return OK;
    }
    uint64_t v = read_uint(data + s->arg, s->esize, !s->big);
    *out = s->is_signed ? PyLong_FromLongLong(sign_extend(v, s->esize))
                        : PyLong_FromUnsignedLongLong(v);
    return *out == NULL ? FAIL_PY : OK;
}

/* The value of slot s (a new reference, NULL when missing): OK, FAIL_DEFER or FAIL_PY. */
static int
slot_value(const ProgramObject *g, const Slot *s, PyObject *sample, const unsigned char *data,
           Py_ssize_t len, const Py_ssize_t *at, PyObject **out)
{
    *out = NULL;
    switch (s->source) {
    case SRC_CONST:
        *out = Py_NewRef(s->value);
        return OK;
    case SRC_SAMPLE: {
        PyObject *v = PyTuple_GET_ITEM(sample, s->arg);
        if (v != Py_None)
            *out = Py_NewRef(v);
        return OK;
    }
    case SRC_COMM: { /* session.comm(tid), for a sample with a tid */
        PyObject *tid = PyTuple_GET_ITEM(sample, s->arg);
        if (tid == Py_None)
            return OK;
        PyObject *v = PyDict_GetItemWithError(s->value, tid);
        if (v != NULL)
            *out = Py_NewRef(v);
        return PyErr_Occurred() ? FAIL_PY : OK;
    }
    case SRC_FIELD:
        return read_field(s, g->marks[s->arg], at[s->arg], data, len, g->plan->little, out);
    case SRC_RECORD:
        return read_record(s, data, len, out);
    default:
        return OK;
    }
}

/* The program's decision on a sample whose payload starts at pos of raw: 1, 0, -1
 * (error) or DEFER (the walk failed, or a value is left to Python); the names found set
 * in found[0:nfound]. */
static int
program_decide(ProgramObject *g, PyObject *sample, PyObject *raw, Py_ssize_t pos, char *found,
               Py_ssize_t nfound)
{
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(raw);
    Py_ssize_t len = PyBytes_GET_SIZE(raw);
    Py_ssize_t at[PROGRAM_SLOTS];
    if (g->plan != NULL) { /* the event whole, as Plan.check walks it */
        Ctx c;
        c.object = raw;
        c.data = data;
        c.len = len;
        c.base = c.p = pos;
        c.steps = 0;
        c.little = g->plan->little;
        c.budget = g->plan->budget;
        c.out = NULL;
        c.marks = g->marks;
        c.at = at;
        c.nmarks = g->nmarks;
        c.next = 0;
        if (pos < 0 || pos > len || walk_ops(&c, g->plan->ops, g->plan->nops) != OK ||
            c.next != g->nmarks)
            return DEFER;
    }
    PyObject *values[PROGRAM_SLOTS];
    Py_ssize_t k;
    int r = 0;
    for (k = 0; k < g->nslots; k++) {
        int rc = slot_value(g, &g->slots[k], sample, data, len, at, &values[k]);
        if (rc != OK) {
            r = rc == FAIL_PY ? -1 : DEFER;
            break;
        }
    }
    if (k == g->nslots)
        r = g->decision >= 0 ? g->decision : eval_node(g, values, g->nnodes - 1);
    for (Py_ssize_t i = 0; i < k; i++) {
        if (values[i] != NULL) {
            if (r >= 0 && g->slots[i].found < nfound)
                found[g->slots[i].found] = 1;
            Py_DECREF(values[i]);
        }
    }
    return r;
}

static int
slot_from_tuple(Slot *s, PyObject *t)
{
    Py_ssize_t n = PyTuple_Check(t) ? PyTuple_GET_SIZE(t) : 0;
    if (n < 3)
        goto bad;
#define INT_AT(i) ((int)PyLong_AsLong(PyTuple_GET_ITEM(t, (i))))
    s->found = INT_AT(0);
    s->source = INT_AT(1);
    switch (s->source) {
    case SRC_MISSING:
        break;
    case SRC_CONST:
        s->value = Py_NewRef(PyTuple_GET_ITEM(t, 2));
        break;
    case SRC_SAMPLE:
        s->arg = INT_AT(2);
        if (s->arg < 0 || s->arg > 3)
            goto bad;
        break;
    case SRC_COMM:
        if (n != 4 || !PyDict_Check(PyTuple_GET_ITEM(t, 2)))
            goto bad;
        s->value = Py_NewRef(PyTuple_GET_ITEM(t, 2));
        s->arg = INT_AT(3);
        if (s->arg < 0 || s->arg > 3)
            goto bad;
        break;
    case SRC_FIELD:
        if (n != 4)
            goto bad;
        s->arg = INT_AT(2);
        s->read = INT_AT(3);
        if (s->read < RD_FIXED || s->read > RD_ARRAY)
            goto bad;
        break;
    case SRC_RECORD:
        if (n != 7)
            goto bad;
        s->arg = INT_AT(2);
        s->size = INT_AT(3);
        s->esize = INT_AT(4);
        s->is_signed = INT_AT(5);
        s->big = INT_AT(6);
        if (s->arg < 0 || s->size < 1 ||
            (s->esize != 0 && s->esize != 1 && s->esize != 2 && s->esize != 4 && s->esize != 8))
            goto bad;
        break;
    default:
        goto bad;
    }
#undef INT_AT
    if (PyErr_Occurred())
        return -1;
    if (s->found >= 0)
        return 0;
bad:
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "malformed slot %R", t);
    return -1;
}

static int
node_from_tuple(Node *n, PyObject *t, Py_ssize_t index, Py_ssize_t nslots)
{
    Py_ssize_t size = PyTuple_Check(t) ? PyTuple_GET_SIZE(t) : 0;
    if (size < 2)
        goto bad;
#define INT_AT(i) ((int)PyLong_AsLong(PyTuple_GET_ITEM(t, (i))))
    n->type = INT_AT(0);
    n->a = INT_AT(1);
    switch (n->type) {
    case N_OR:
    case N_AND:
        if (size != 3)
            goto bad;
        n->b = INT_AT(2);
        if (n->a < 0 || n->a >= index || n->b < 0 || n->b >= index)
            goto bad;
        break;
    case N_NOT:
        if (size != 2 || n->a < 0 || n->a >= index)
            goto bad;
        break;
    case N_NAME:
        if (size != 2 || n->a < 0 || n->a >= nslots)
            goto bad;
        break;
    case N_CMP:
        if (size != 4)
            goto bad;
        n->op = INT_AT(2);
        n->value = Py_NewRef(PyTuple_GET_ITEM(t, 3));
        if (n->a < 0 || n->a >= nslots || n->op < Py_LT || n->op > CMP_GLOB
            || (n->op == CMP_GLOB && !PyCallable_Check(n->value)))
            goto bad;
        break;
    default:
        goto bad;
    }
#undef INT_AT
    if (!PyErr_Occurred())
        return 0;
bad:
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "malformed node %R", t);
    return -1;
}

static void
Program_dealloc(ProgramObject *self)
{
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->plan);
    for (Py_ssize_t i = 0; i < self->nslots; i++)
        Py_CLEAR(self->slots[i].value);
    if (self->nodes != NULL) {
        for (Py_ssize_t i = 0; i < self->nnodes; i++)
            Py_CLEAR(self->nodes[i].value);
        PyMem_Free(self->nodes);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Program_traverse(ProgramObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->plan);
    for (Py_ssize_t i = 0; i < self->nslots; i++)
        Py_VISIT(self->slots[i].value);
    for (Py_ssize_t i = 0; i < self->nnodes; i++)
        Py_VISIT(self->nodes[i].value);
    return 0;
}

static PyObject *
Program_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"plan", "marks", "slots", "nodes", "decision", NULL};
    PyObject *plan, *marks, *slots, *nodes;
    int decision;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!O!O!i", kwlist, &plan, &PyTuple_Type,
                                     &marks, &PyTuple_Type, &slots, &PyTuple_Type, &nodes,
                                     &decision))
        return NULL;
    if ((plan != Py_None && Py_TYPE(plan) != &PlanType) || decision < -1 || decision > 1 ||
        PyTuple_GET_SIZE(marks) > PROGRAM_SLOTS || PyTuple_GET_SIZE(slots) > PROGRAM_SLOTS ||
        (plan == Py_None && PyTuple_GET_SIZE(marks)) ||
        (decision < 0 && PyTuple_GET_SIZE(nodes) == 0)) {
        PyErr_SetString(PyExc_ValueError, "a malformed program");
        return NULL;
    }
    ProgramObject *self = (ProgramObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->decision = decision;
    if (plan != Py_None)
        self->plan = (PlanObject *)Py_NewRef(plan);
    Py_ssize_t last = -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(marks); i++) {
        Py_ssize_t op = PyLong_AsSsize_t(PyTuple_GET_ITEM(marks, i));
        if (op <= last || op >= self->plan->nops) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "marks must be ascending op indices");
            Py_DECREF(self);
            return NULL;
        }
        self->marks[i] = &self->plan->ops[op];
        self->nmarks = i + 1;
        last = op;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(slots); i++) {
        self->nslots = i + 1;
        Slot *s = &self->slots[i];
        if (slot_from_tuple(s, PyTuple_GET_ITEM(slots, i)) < 0 ||
            (s->source == SRC_FIELD && s->arg >= self->nmarks) ||
            (s->source == SRC_FIELD && s->arg < 0)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a field slot names no mark");
            Py_DECREF(self);
            return NULL;
        }
    }
    Py_ssize_t n = PyTuple_GET_SIZE(nodes);
    self->nodes = PyMem_Calloc(n ? n : 1, sizeof(Node));
    if (self->nodes == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        self->nnodes = i + 1;
        if (node_from_tuple(&self->nodes[i], PyTuple_GET_ITEM(nodes, i), i, self->nslots) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    return (PyObject *)self;
}

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ehtool._speedups.Program",
    .tp_basicsize = sizeof(ProgramObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Program(plan, marks, slots, nodes, decision): a filter's decision on the "
              "events of one EventInfo or tracefs event",
    .tp_new = Program_new,
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_traverse = (traverseproc)Program_traverse,
};

/* Filter(descs, describe, select, found, sample_type).filter(batch) -> the samples kept.
 * descs: dict EventDesc -> what decides its samples (describe(desc) when absent):
 *   a Program (tracefs events), (tracepoint, eventheader_offset, fast_cache, programs,
 *   program_of) (EventHeader: the decoder's fast cache; programs: EventInfo -> Program,
 *   or None for the Python path, program_of(info) when absent) or None;
 * select(sample) decides every sample no Program decides (Selection.select). */
typedef struct {
    PyObject_HEAD
    PyObject *descs, *describe, *select, *found, *sample_type;
} FilterObject;

/* The Program of an EventHeader sample (borrowed from ``programs``) and where its payload
 * starts, or NULL (the Python path; an error only when set). */
static PyObject *
eventheader_program(PyObject *entry, PyObject *raw, Py_ssize_t *pos)
{
    PyObject *fast_cache = PyTuple_GET_ITEM(entry, 2), *programs = PyTuple_GET_ITEM(entry, 3);
    Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 1));
    if ((off == -1 && PyErr_Occurred()) || !PyDict_Check(fast_cache) || !PyDict_Check(programs))
        return NULL;
    PyObject *hit = fast_hit(fast_cache, PyTuple_GET_ITEM(entry, 0), raw, off);
    if (hit == NULL)
        return NULL;
    PyObject *info = PyTuple_GET_ITEM(hit, 4);
    Py_ssize_t skip = PyLong_AsSsize_t(PyTuple_GET_ITEM(hit, 2));
    PyObject *program = skip == -1 && PyErr_Occurred()
                            ? NULL : PyDict_GetItemWithError(programs, info);
    if (program == NULL && !PyErr_Occurred()) {
        program = call1(PyTuple_GET_ITEM(entry, 4), info);
        if (program != NULL) {
            int rc = PyDict_SetItem(programs, info, program);
            Py_DECREF(program); /* the dict's now */
            if (rc < 0)
                program = NULL;
        }
    }
    Py_DECREF(hit);
    *pos = off + skip;
    return program;
}

/* The decision on one sample: 1, 0 or -1 (error). */
static int
filter_one(FilterObject *self, PyObject *sample, char *found, Py_ssize_t nfound)
{
    int r = DEFER;
    if (Py_TYPE(sample) == (PyTypeObject *)self->sample_type && PyTuple_GET_SIZE(sample) >= 6 &&
        PyBytes_CheckExact(PyTuple_GET_ITEM(sample, 4))) {
        PyObject *raw = PyTuple_GET_ITEM(sample, 4), *desc = PyTuple_GET_ITEM(sample, 5);
        PyObject *entry = PyDict_GetItemWithError(self->descs, desc);
        if (entry == NULL) {
            if (PyErr_Occurred())
                return -1;
            entry = call1(self->describe, desc);
            if (entry == NULL)
                return -1;
            int rc = PyDict_SetItem(self->descs, desc, entry);
            Py_DECREF(entry); /* the dict's now */
            if (rc < 0)
                return -1;
        }
        Py_INCREF(entry);
        if (Py_TYPE(entry) == &ProgramType) {
            r = program_decide((ProgramObject *)entry, sample, raw, 0, found, nfound);
        }
        else if (PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 5) {
            Py_ssize_t pos = 0;
            PyObject *program = eventheader_program(entry, raw, &pos);
            if (program == NULL && PyErr_Occurred())
                r = -1;
            else if (program != NULL && Py_TYPE(program) == &ProgramType) {
                Py_INCREF(program);
                r = program_decide((ProgramObject *)program, sample, raw, pos, found, nfound);
                Py_DECREF(program);
            }
        }
        Py_DECREF(entry);
    }
    if (r != DEFER)
        return r;
    PyObject *answer = call1(self->select, sample);
    if (answer == NULL)
        return -1;
    r = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return r;
}

static PyObject *
Filter_filter(FilterObject *self, PyObject *batch)
{
    PyObject *seq = PySequence_Fast(batch, "filter(batch): a list of samples");
    if (seq == NULL)
        return NULL;
    PyObject *kept = PyList_New(0);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; kept != NULL && i < n; i++) {
        PyObject *sample = PySequence_Fast_GET_ITEM(seq, i);
        /* (found is read each time: select may run Python code) */
        int r = filter_one(self, sample, PyByteArray_AS_STRING(self->found),
                           PyByteArray_GET_SIZE(self->found));
        if (r < 0 || (r && PyList_Append(kept, sample) < 0))
            Py_CLEAR(kept);
    }
    Py_DECREF(seq);
    return kept;
}

static PyObject *
Filter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"descs", "describe", "select", "found", "sample_type", NULL};
    PyObject *descs, *describe, *select, *found, *sample_type;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OOO!O!", kwlist, &PyDict_Type, &descs,
                                     &describe, &select, &PyByteArray_Type, &found,
                                     &PyType_Type, &sample_type))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)sample_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "sample_type must be a tuple type");
        return NULL;
    }
    FilterObject *self = (FilterObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->descs = Py_NewRef(descs);
    self->describe = Py_NewRef(describe);
    self->select = Py_NewRef(select);
    self->found = Py_NewRef(found);
    self->sample_type = Py_NewRef(sample_type);
    return (PyObject *)self;
}

static int
Filter_clear(FilterObject *self)
{
    Py_CLEAR(self->descs);
    Py_CLEAR(self->describe);
    Py_CLEAR(self->select);
    Py_CLEAR(self->found);
    Py_CLEAR(self->sample_type);
    return 0;
}

static void
Filter_dealloc(FilterObject *self)
{
    PyObject_GC_UnTrack(self);
    Filter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
Filter_traverse(FilterObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->descs);
    Py_VISIT(self->describe);
    Py_VISIT(self->select);
    Py_VISIT(self->found);
    Py_VISIT(self->sample_type);
    return 0;
}

static PyMethodDef Filter_methods[] = {
    {"filter", (PyCFunction)Filter_filter, METH_O,
     "filter(batch) -> the samples of batch the selection keeps, in order"},
    {NULL},
};

static PyTypeObject FilterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ehtool._speedups.Filter",
    .tp_basicsize = sizeof(FilterObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Filter(descs, describe, select, found, sample_type): Selection's decisions "
              "for a batch, by Programs where they can",
    .tp_new = Filter_new,
    .tp_dealloc = (destructor)Filter_dealloc,
    .tp_traverse = (traverseproc)Filter_traverse,
    .tp_clear = (inquiry)Filter_clear,
    .tp_methods = Filter_methods,
};

/* ================================================================================== */
/* RowMaker: the per-sample loop of ehtool.events.SampleConverter.row (the columnar    */
/* writers' rows), a batch at a time                                                  */
/* ================================================================================== */

/* RowMaker(layouts, describe, entry_of, fallback, slots, clock, comm_of, error, sample_type)
 *   describe(desc) -> a spec, made once per EventDesc:
 *     (0, template, render)  a tracepoint with a format: the template with the sample's
 *                            values, fields the object of render(raw)'s members (render
 *                            None: fields stay None);
 *     (1, tracepoint, eventheader_offset)  an EventHeader tracepoint: its events are
 *                            looked up in ``layouts`` (TypedDecoder._layouts: tracepoint ->
 *                            first 12 event bytes -> [(activity ids size, expect size,
 *                            {expect: EventLayout})]) as TypedDecoder._layout does, and a
 *                            layout's row is entry_of(layout) -> (template, fn) or None:
 *                            fields the object of fn(data, payload, offset)'s members, or
 *                            fn is the whole check and fields stay None (skip: the
 *                            layout's, item 5);
 *     None                   fallback(sample) makes its rows.
 *   fallback(sample) also makes the rows of anything the specs do not cover (a cache miss,
 *   another extension layout, a fn that raises ``error``: it says why).
 *   slots: the row's places of the UTC time, session time, cpu, pid, tid, comm, activity,
 *   related activity, fields and the sample's offset (ehtool.events.ROW_COLUMNS).
 *   clock: its offset_ns is read at each call (None: no UTC time); comm_of(tid) or None.
 * Samples are read by index (ehtool.perfdata.records.Sample: time, cpu, pid, tid, raw,
 * desc, offset). */

enum { RS_UTC, RS_TIME, RS_CPU, RS_PID, RS_TID, RS_COMM, RS_ACT, RS_REL, RS_FIELDS, RS_OFF,
       RS_COUNT };

#define ROW_ENTRIES_MAX 4096

typedef struct {
    PyObject_HEAD
    PyObject *layouts, *describe, *entry_of, *fallback, *clock, *comm_of, *error, *sample_type;
    PyObject *specs;   /* dict: EventDesc -> spec */
    PyObject *entries; /* dict: id(layout) -> (layout, template, fn) or (layout,) */
    Py_ssize_t slots[RS_COUNT];
    int with_fields;
} RowMakerObject;

static PyObject *
uuid_text(const unsigned char *q)
{
    static const char digits[] = "0123456789abcdef";
    char text[36];
    int w = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            text[w++] = '-';
        text[w++] = digits[q[i] >> 4];
        text[w++] = digits[q[i] & 15];
    }
    return PyUnicode_FromStringAndSize(text, w);
}

/* ``{`` + all but the first byte of members + ``}`` as str (object_text), from o */
static PyObject *
object_text_of(Out *o)
{
    if (o->len == 0)
        return PyUnicode_FromStringAndSize("{}", 2);
    if (out_put(o, "}", 1) < 0)
        return NULL;
    o->data[0] = '{';
    return PyUnicode_DecodeUTF8(o->data, o->len, NULL);
}

/* The fields object of fn(args)'s members (a Plan's render runs here) */
static PyObject *
fields_text(PyObject *fn, PyObject *const *args, Py_ssize_t nargs)
{
    Out o;
    out_init(&o);
    PyObject *text = NULL;
    PlanObject *plan = plan_of(fn, (PyCFunction)(void (*)(void))Plan_render);
    int rc = FAIL_DEFER;
    if (plan != NULL && nargs == 3) {
        Py_ssize_t p = PyLong_AsSsize_t(args[1]);
        rc = p == -1 && PyErr_Occurred() ? FAIL_PY : plan_run(plan, args[0], p, &o);
        if (rc == FAIL_DEFER) {
            o.len = 0;
            fn = plan->fallback;
        }
    }
    else if (plan == NULL) {
        plan = plan_of(fn, (PyCFunction)(void (*)(void))Plan_render_record);
        if (plan != NULL && nargs == 1 && PyBytes_GET_SIZE(args[0]) >= plan->min_len) {
            rc = plan_run(plan, args[0], 0, &o);
            if (rc == FAIL_DEFER) {
                o.len = 0;
                fn = plan->fallback;
            }
        }
    }
    if (rc == FAIL_DEFER && put_result(&o, PyObject_Vectorcall(fn, args, nargs, NULL),
                                       "a renderer") == 0)
        rc = OK;
    if (rc == OK)
        text = object_text_of(&o);
    out_free(&o);
    return text;
}

/* A new row: ``template`` with the sample's values in their slots (activity ids and
 * fields: the caller's new references, taken here, or NULL for None). */
static PyObject *
row_from(RowMakerObject *self, PyObject *template, PyObject *sample, PyObject *offset_ns,
         PyObject *activity, PyObject *related, PyObject *fields)
{
    PyObject *time = PyTuple_GET_ITEM(sample, 0), *tid = PyTuple_GET_ITEM(sample, 3);
    PyObject *values[RS_COUNT] = {NULL}, *row = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(template);
    values[RS_ACT] = activity != NULL ? activity : Py_NewRef(Py_None);
    values[RS_REL] = related != NULL ? related : Py_NewRef(Py_None);
    values[RS_FIELDS] = fields != NULL ? fields : Py_NewRef(Py_None);
    values[RS_TIME] = Py_NewRef(time);
    values[RS_CPU] = Py_NewRef(PyTuple_GET_ITEM(sample, 1));
    values[RS_PID] = Py_NewRef(PyTuple_GET_ITEM(sample, 2));
    values[RS_TID] = Py_NewRef(tid);
    values[RS_OFF] = Py_NewRef(PyTuple_GET_ITEM(sample, 6));
    values[RS_UTC] = offset_ns != Py_None && time != Py_None ? PyNumber_Add(time, offset_ns)
                                                              : Py_NewRef(Py_None);
    if (values[RS_UTC] == NULL)
        goto done;
    values[RS_COMM] = self->comm_of != Py_None && tid != Py_None ? call1(self->comm_of, tid)
                                                                  : Py_NewRef(Py_None);
    if (values[RS_COMM] == NULL)
        goto done;
    for (int k = 0; k < RS_COUNT; k++) {
        if (self->slots[k] >= n) {
            PyErr_SetString(PyExc_ValueError, "RowMaker: a template shorter than its slots");
            goto done;
        }
    }
    row = PyTuple_New(n);
    if (row == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(row, i, Py_NewRef(PyTuple_GET_ITEM(template, i)));
    for (int k = 0; k < RS_COUNT; k++) {
        Py_SETREF(((PyTupleObject *)row)->ob_item[self->slots[k]], values[k]);
        values[k] = NULL;
    }
done:
    for (int k = 0; k < RS_COUNT; k++)
        Py_XDECREF(values[k]);
    return row;
}

/* The cached EventLayout of an EventHeader sample (borrowed), or NULL: not cached (no
 * error) or a lookup failed (error set). *act: its activity ids' size. */
static PyObject *
layout_of(RowMakerObject *self, PyObject *tracepoint, PyObject *raw, Py_ssize_t off,
          Py_ssize_t *act)
{
    PyObject *groups = cache_get(self->layouts, tracepoint, raw, off, 12);
    if (groups == NULL || !PyList_Check(groups))
        return NULL;
    Py_ssize_t len = PyBytes_GET_SIZE(raw);
    for (Py_ssize_t g = 0; g < PyList_GET_SIZE(groups); g++) {
        PyObject *group = PyList_GET_ITEM(groups, g);
        if (!PyTuple_Check(group) || PyTuple_GET_SIZE(group) != 3)
            return NULL;
        Py_ssize_t activity = PyLong_AsSsize_t(PyTuple_GET_ITEM(group, 0));
        Py_ssize_t size = PyLong_AsSsize_t(PyTuple_GET_ITEM(group, 1));
        PyObject *by_expect = PyTuple_GET_ITEM(group, 2);
        if (activity < 0 || size < 0 || !PyDict_Check(by_expect)) {
            PyErr_Clear();
            return NULL;
        }
        Py_ssize_t start = off + 12 + activity;
        if (start + size > len)
            continue;
        PyObject *expect = PyBytes_FromStringAndSize(PyBytes_AS_STRING(raw) + start, size);
        if (expect == NULL)
            return NULL;
        PyObject *layout = PyDict_GetItemWithError(by_expect, expect);
        Py_DECREF(expect);
        if (layout != NULL) {
            *act = activity;
            return layout;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return NULL;
}

/* The entry of a layout (borrowed): (layout, template, fn), or (layout,) for the
 * fallback's; NULL with an error set. */
static PyObject *
entry_for(RowMakerObject *self, PyObject *layout)
{
    PyObject *key = PyLong_FromVoidPtr(layout);
    if (key == NULL)
        return NULL;
    PyObject *entry = PyDict_GetItemWithError(self->entries, key);
    if (entry == NULL && !PyErr_Occurred()) {
        PyObject *made = call1(self->entry_of, layout);
        if (made != NULL) {
            if (made != Py_None && (!PyTuple_Check(made) || PyTuple_GET_SIZE(made) != 2 ||
                                    !PyTuple_Check(PyTuple_GET_ITEM(made, 0)))) {
                PyErr_SetString(PyExc_TypeError, "entry_of: (template, fn) or None");
                Py_CLEAR(made);
            }
        }
        if (made != NULL) {
            entry = made == Py_None ? PyTuple_Pack(1, layout)
                                    : PyTuple_Pack(3, layout, PyTuple_GET_ITEM(made, 0),
                                                   PyTuple_GET_ITEM(made, 1));
            Py_DECREF(made);
            if (PyDict_GET_SIZE(self->entries) >= ROW_ENTRIES_MAX)
                PyDict_Clear(self->entries);
            if (entry != NULL && PyDict_SetItem(self->entries, key, entry) < 0)
                Py_CLEAR(entry);
            Py_XDECREF(entry); /* (the dict's now) */
        }
    }
    Py_DECREF(key);
    return entry;
}

/* The row of an EventHeader sample, Py_None when the fallback is to make it, or NULL */
static PyObject *
eventheader_row(RowMakerObject *self, PyObject *spec, PyObject *sample, PyObject *offset_ns)
{
    PyObject *raw = PyTuple_GET_ITEM(sample, 4);
    Py_ssize_t off = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 2)), act = 0;
    if (off < 0)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    PyObject *layout = layout_of(self, PyTuple_GET_ITEM(spec, 1), raw, off, &act);
    if (layout == NULL)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    if ((act != 0 && act != 16 && act != 32) || !PyTuple_Check(layout) ||
        PyTuple_GET_SIZE(layout) < 6)
        return Py_NewRef(Py_None);
    Py_INCREF(layout);
    PyObject *entry = entry_for(self, layout);
    if (entry == NULL) {
        Py_DECREF(layout);
        return NULL;
    }
    Py_ssize_t skip = PyLong_AsSsize_t(PyTuple_GET_ITEM(layout, 5));
    Py_DECREF(layout);
    if (PyTuple_GET_SIZE(entry) != 3 || skip < 0)
        return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
    Py_INCREF(entry);
    PyObject *template = PyTuple_GET_ITEM(entry, 1), *fn = PyTuple_GET_ITEM(entry, 2);
    PyObject *row = NULL, *activity = NULL, *related = NULL, *fields = NULL;
    PyObject *args[3] = {raw, PyLong_FromSsize_t(off + skip), PyTuple_GET_ITEM(spec, 2)};
    if (args[1] == NULL)
        goto done;
    if (self->with_fields) {
        fields = fields_text(fn, args, 3);
    }
    else {
        fields = PyObject_Vectorcall(fn, args, 3, NULL); /* the check (its result unused) */
        Py_XSETREF(fields, NULL);
    }
    if (PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(self->error)) { /* malformed: the fallback says why */
            PyErr_Clear();
            row = Py_NewRef(Py_None);
        }
        goto done;
    }
    if (act) {
        const unsigned char *q = (const unsigned char *)PyBytes_AS_STRING(raw) + off + 12;
        activity = uuid_text(q);
        if (activity == NULL || (act == 32 && (related = uuid_text(q + 16)) == NULL))
            goto done;
    }
    row = row_from(self, template, sample, offset_ns, activity, related, fields);
    activity = related = fields = NULL; /* (row_from's) */
done:
    Py_DECREF(entry);
    Py_XDECREF(args[1]);
    Py_XDECREF(activity);
    Py_XDECREF(related);
    Py_XDECREF(fields);
    return row;
}

/* The row of one sample (a new reference) or NULL */
static PyObject *
row_of(RowMakerObject *self, PyObject *sample, PyObject *offset_ns)
{
    if (Py_TYPE(sample) != (PyTypeObject *)self->sample_type ||
        PyTuple_GET_SIZE(sample) != 7 || !PyBytes_CheckExact(PyTuple_GET_ITEM(sample, 4)))
        return call1(self->fallback, sample);
    PyObject *desc = PyTuple_GET_ITEM(sample, 5);
    PyObject *spec = PyDict_GetItemWithError(self->specs, desc);
    if (spec == NULL) {
        if (PyErr_Occurred())
            return NULL;
        spec = call1(self->describe, desc);
        if (spec == NULL)
            return NULL;
        if (spec != Py_None && !(PyTuple_CheckExact(spec) && PyTuple_GET_SIZE(spec) == 3 &&
                                 PyLong_CheckExact(PyTuple_GET_ITEM(spec, 0)))) {
            Py_DECREF(spec);
            PyErr_SetString(PyExc_TypeError, "describe: a row spec or None");
            return NULL;
        }
        int rc = PyDict_SetItem(self->specs, desc, spec);
        Py_DECREF(spec); /* (the dict's now) */
        if (rc < 0)
            return NULL;
    }
    PyObject *row = NULL;
    Py_INCREF(spec);
    if (spec == Py_None) {
        row = Py_NewRef(Py_None);
    }
    else if (PyLong_AsLong(PyTuple_GET_ITEM(spec, 0)) == 1) {
        row = eventheader_row(self, spec, sample, offset_ns);
    }
    else if (PyTuple_Check(PyTuple_GET_ITEM(spec, 1))) { /* a tracepoint with a format */
        PyObject *render = PyTuple_GET_ITEM(spec, 2), *fields = NULL;
        if (render != Py_None)
            fields = fields_text(render, &PyTuple_GET_ITEM(sample, 4), 1);
        if (render == Py_None || fields != NULL)
            row = row_from(self, PyTuple_GET_ITEM(spec, 1), sample, offset_ns, NULL, NULL,
                           fields);
    }
    else {
        row = Py_NewRef(Py_None);
    }
    Py_DECREF(spec);
    if (row == Py_None) {
        Py_DECREF(row);
        row = call1(self->fallback, sample);
    }
    return row;
}

static PyObject *
RowMaker_rows(RowMakerObject *self, PyObject *batch)
{
    if (self->specs == NULL) {
        PyErr_SetString(PyExc_ValueError, "RowMaker: cleared");
        return NULL;
    }
    /* (a tuple of its own: a callback may change the caller's list meanwhile) */
    PyObject *seq = PySequence_Tuple(batch);
    if (seq == NULL)
        return NULL;
    PyObject *offset_ns = self->clock == Py_None ? Py_NewRef(Py_None)
                                                 : PyObject_GetAttr(self->clock, str_offset_ns);
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *rows = offset_ns == NULL ? NULL : PyList_New(n);
    for (Py_ssize_t i = 0; rows != NULL && i < n; i++) {
        PyObject *row = row_of(self, PySequence_Fast_GET_ITEM(seq, i), offset_ns);
        if (row == NULL)
            Py_CLEAR(rows);
        else
            PyList_SET_ITEM(rows, i, row);
    }
    Py_XDECREF(offset_ns);
    Py_DECREF(seq);
    return rows;
}

static PyObject *
RowMaker_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"layouts", "describe", "entry_of", "fallback", "slots", "clock",
                             "comm_of", "error", "sample_type", "with_fields", NULL};
    PyObject *layouts, *describe, *entry_of, *fallback, *slots, *clock, *comm_of, *error;
    PyObject *sample_type;
    int with_fields;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!OOOO!OOOO!p", kwlist, &PyDict_Type,
                                     &layouts, &describe, &entry_of, &fallback, &PyTuple_Type,
                                     &slots, &clock, &comm_of, &error, &PyType_Type,
                                     &sample_type, &with_fields))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)sample_type, &PyTuple_Type) ||
        !PyExceptionClass_Check(error) || PyTuple_GET_SIZE(slots) != RS_COUNT) {
        PyErr_SetString(PyExc_TypeError, "RowMaker: sample_type a tuple type, error an "
                                         "exception class, slots 10 row indexes");
        return NULL;
    }
    RowMakerObject *self = (RowMakerObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    for (int k = 0; k < RS_COUNT; k++) {
        self->slots[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, k));
        if (self->slots[k] < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "RowMaker: a negative slot");
            Py_DECREF(self);
            return NULL;
        }
    }
    self->with_fields = with_fields;
    self->layouts = Py_NewRef(layouts);
    self->describe = Py_NewRef(describe);
    self->entry_of = Py_NewRef(entry_of);
    self->fallback = Py_NewRef(fallback);
    self->clock = Py_NewRef(clock);
    self->comm_of = Py_NewRef(comm_of);
    self->error = Py_NewRef(error);
    self->sample_type = Py_NewRef(sample_type);
    self->specs = PyDict_New();
    self->entries = PyDict_New();
    if (self->specs == NULL || self->entries == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
RowMaker_clear(RowMakerObject *self)
{
    Py_CLEAR(self->layouts);
    Py_CLEAR(self->describe);
    Py_CLEAR(self->entry_of);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->comm_of);
    Py_CLEAR(self->error);
    Py_CLEAR(self->sample_type);
    Py_CLEAR(self->specs);
    Py_CLEAR(self->entries);
    return 0;
}

static void
RowMaker_dealloc(RowMakerObject *self)
{
    PyObject_GC_UnTrack(self);
    RowMaker_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
RowMaker_traverse(RowMakerObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->layouts);
    Py_VISIT(self->describe);
    Py_VISIT(self->entry_of);
    Py_VISIT(self->fallback);
    Py_VISIT(self->clock);
    Py_VISIT(self->comm_of);
    Py_VISIT(self->error);
    Py_VISIT(self->sample_type);
    Py_VISIT(self->specs);
    Py_VISIT(self->entries);
    return 0;
}

static PyMethodDef RowMaker_methods[] = {
    {"rows", (PyCFunction)RowMaker_rows, METH_O,
     "rows(batch) -> the rows of a list of samples, in order"},
    {NULL},
};

static PyTypeObject RowMakerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ehtool._speedups.RowMaker",
    .tp_basicsize = sizeof(RowMakerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "RowMaker(layouts, describe, entry_of, fallback, slots, clock, comm_of, error, "
              "sample_type, with_fields): SampleConverter.row for a batch of samples",
    .tp_new = RowMaker_new,
    .tp_dealloc = (destructor)RowMaker_dealloc,
    .tp_traverse = (traverseproc)RowMaker_traverse,
    .tp_clear = (inquiry)RowMaker_clear,
    .tp_methods = RowMaker_methods,
};

/* -- hop: the record-header walk (ehtool.perfdata.split) ------------------------------ */

/* hop(buf, pos, end, big_endian, stops) -> (pos, type, size): from ``pos``, step over
 * records until one whose type is flagged in ``stops`` (a 256-byte table; types >= 256
 * always stop), one with a size below 8 (returned as is), or the end (type -1). Mirrors
 * ehtool.perfdata.split._hop; the header layout is the grammar's (u32 type, u16 misc,
 * u16 size). */
static PyObject *
hop(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "hop(buf, pos, end, big_endian, stops)");
        return NULL;
    }
    Py_buffer view, table;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[4], &table, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    int big = PyObject_IsTrue(args[3]);
    PyObject *result = NULL;
    if ((pos == -1 || end == -1 || big < 0) && PyErr_Occurred())
        goto done;
    if (table.len != 256) {
        PyErr_SetString(PyExc_ValueError, "stops must be 256 bytes");
        goto done;
    }
    if (end > view.len)
        end = view.len;
    const unsigned char *b = view.buf, *stops = table.buf;
    long long type = -1;
    unsigned size = 0;
    while (pos >= 0 && pos + 8 <= end) {
        const unsigned char *h = b + pos;
        uint32_t t = big ? (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3]
                         : (uint32_t)h[3] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[1] << 8 | h[0];
        unsigned sz = big ? (unsigned)h[6] << 8 | h[7] : (unsigned)h[7] << 8 | h[6];
        if (sz < 8 || t >= 256 || stops[t]) {
            type = t;
            size = sz;
            break;
        }
        pos += sz;
    }
    result = Py_BuildValue("(nLI)", pos, type, size);
done:
    PyBuffer_Release(&table);
    PyBuffer_Release(&view);
    return result;
}

/* fast_hit(fast_cache, tracepoint, raw, offset) -> the FastEntry or None */
static PyObject *
fast_hit_py(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "fast_hit(fast_cache: dict, tracepoint, raw, offset)");
        return NULL;
    }
    if (!PyBytes_CheckExact(args[2]))
        Py_RETURN_NONE;
    Py_ssize_t off = PyLong_AsSsize_t(args[3]);
    if (off == -1 && PyErr_Occurred())
        return NULL;
    PyObject *hit = fast_hit(args[0], args[1], args[2], off);
    if (hit == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return hit;
}

/* -- indent_json: ehtool.render.pretty.indent_json (--pretty) --------------------- */

enum { TK_END, TK_OPEN, TK_CLOSE, TK_COMMA, TK_COLON, TK_OTHER };

static int
json_space(unsigned char c) /* \s of a bytes regex */
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* The next token at or after *pos, as pretty.py's _TOKEN finds them: a string (escapes
 * kept; a quote that starts no complete string is skipped), a structural character, or
 * a run of anything else; whitespace is skipped. Its start and length; *pos past it. */
static int
next_token(const unsigned char *d, Py_ssize_t n, Py_ssize_t *pos, Py_ssize_t *start,
           Py_ssize_t *len)
{
    Py_ssize_t i = *pos;
    while (i < n) {
        unsigned char c = d[i];
        if (json_space(c)) {
            i++;
            continue;
        }
        int type = c == '{' || c == '[' ? TK_OPEN : c == '}' || c == ']' ? TK_CLOSE
                 : c == ',' ? TK_COMMA : c == ':' ? TK_COLON : TK_OTHER;
        if (type != TK_OTHER) {
            *start = i;
            *len = 1;
            *pos = i + 1;
            return type;
        }
        Py_ssize_t j = i + 1;
        if (c == '"') {
            while (j < n && d[j] != '"')
                j += d[j] == '\\' ? 2 : 1;
            if (j >= n) { /* no closing quote: the regex skips this one */
                i++;
                continue;
            }
            j++;
        }
        else {
            while (j < n && !json_space(d[j]) && !memchr("\"{}[],:", d[j], 7))
                j++;
        }
        *start = i;
        *len = j - i;
        *pos = j;
        return TK_OTHER;
    }
    *pos = n;
    return TK_END;
}

static int
put_indent(Out *o, const char *lead, Py_ssize_t lead_len, const char *unit,
           Py_ssize_t unit_len, Py_ssize_t depth)
{
    if (out_put(o, lead, lead_len) < 0)
        return -1;
    for (Py_ssize_t k = 0; unit_len && k < depth; k++)
        if (out_put(o, unit, unit_len) < 0)
            return -1;
    return 0;
}

/* indent_json(value, level, unit) -> value laid out one member per line */
static PyObject *
indent_json_py(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "indent_json(value: bytes, level: int, unit: bytes)");
        return NULL;
    }
    Py_ssize_t depth = PyLong_AsSsize_t(args[1]);
    if (depth == -1 && PyErr_Occurred())
        return NULL;
    if (depth > (1 << 20) || depth < -(1 << 20)) {
        PyErr_SetString(PyExc_OverflowError, "indent_json: level out of range");
        return NULL;
    }
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    const char *unit = PyBytes_AS_STRING(args[2]);
    Py_ssize_t unit_len = PyBytes_GET_SIZE(args[2]);
    Out o;
    out_init(&o);
    Py_ssize_t pos = 0, start = 0, len = 0, next_start = 0, next_len = 0;
    int prev = TK_END, type = next_token(d, n, &pos, &start, &len);
    while (type != TK_END) {
        int next = next_token(d, n, &pos, &next_start, &next_len);
        int rc = 0;
        if (type == TK_OPEN && next != TK_CLOSE) {
            depth++;
            rc = out_put(&o, (const char *)d + start, 1) < 0 ||
                 put_indent(&o, "\n", 1, unit, unit_len, depth) < 0;
        }
        else if (type == TK_CLOSE && prev != TK_OPEN) {
            depth--;
            rc = put_indent(&o, "\n", 1, unit, unit_len, depth) < 0 ||
                 out_put(&o, (const char *)d + start, 1) < 0;
        }
        else if (type == TK_COMMA)
            rc = put_indent(&o, ",\n", 2, unit, unit_len, depth) < 0;
        else if (type == TK_COLON)
            rc = out_put(&o, ": ", 2) < 0;
        else
            rc = out_put(&o, (const char *)d + start, len) < 0;
        if (rc) {
            out_free(&o);
            return NULL;
        }
        prev = type;
        type = next;
        start = next_start;
        len = next_len;
    }
    PyObject *r = PyBytes_FromStringAndSize(o.data, o.len);
    out_free(&o);
    return r;
}

/* -- a mapped input cut short: SIGBUS ------------------------------------------------ */

/* A file mapped for reading that something truncates meanwhile faults (SIGBUS) at the
 * first page past its new end; no Python code can run there. The handler writes the
 * message the command set (naming the file), removes the output's temporary file (in
 * the process that made it) and exits 1. */
static char sigbus_message[2048];
static volatile sig_atomic_t sigbus_message_len;
static char sigbus_unlink_path[4096];
static volatile sig_atomic_t sigbus_unlink_set;
static volatile sig_atomic_t sigbus_unlink_pid;

static void
on_sigbus(int sig)
{
    (void)sig;
    if (sigbus_message_len) {
        ssize_t ignored = write(2, sigbus_message, (size_t)sigbus_message_len);
        (void)ignored;
    }
    if (sigbus_unlink_set && (sig_atomic_t)getpid() == sigbus_unlink_pid)
        unlink(sigbus_unlink_path);
    _exit(1);
}

static int
copy_bytes(PyObject *arg, char *to, size_t cap, size_t *len)
{
    char *data;
    Py_ssize_t n;
    if (PyBytes_AsStringAndSize(arg, &data, &n) < 0)
        return -1;
    if ((size_t)n >= cap || memchr(data, 0, (size_t)n) != NULL) {
        PyErr_SetString(PyExc_ValueError, "too long, or holds a NUL byte");
        return -1;
    }
    memcpy(to, data, (size_t)n);
    to[n] = 0;
    *len = (size_t)n;
    return 0;
}

static PyObject *
sigbus_guard_py(PyObject *self, PyObject *message)
{
    static int installed;
    size_t len;
    sigbus_message_len = 0;  /* (a SIGBUS while it changes: no message, still exit 1) */
    if (copy_bytes(message, sigbus_message, sizeof sigbus_message, &len) < 0)
        return NULL;
    sigbus_message_len = (sig_atomic_t)len;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigbus;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, NULL) < 0)
            return PyErr_SetFromErrno(PyExc_OSError);
        installed = 1;
    }
    Py_RETURN_NONE;
}

static PyObject *
sigbus_cleanup_py(PyObject *self, PyObject *path)
{
    size_t len;
    sigbus_unlink_set = 0;
    if (path == Py_None)
        Py_RETURN_NONE;
    if (copy_bytes(path, sigbus_unlink_path, sizeof sigbus_unlink_path, &len) < 0)
        return NULL;
    sigbus_unlink_pid = (sig_atomic_t)getpid();
    sigbus_unlink_set = 1;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"sigbus_guard", (PyCFunction)sigbus_guard_py, METH_O,
     "sigbus_guard(message: bytes): from now on a SIGBUS (a mapped input cut short) "
     "writes message to stderr, removes the sigbus_cleanup path and exits 1"},
    {"sigbus_cleanup", (PyCFunction)sigbus_cleanup_py, METH_O,
     "sigbus_cleanup(path: bytes | None): the file a SIGBUS removes (in this process)"},
    {"fast_hit", (PyCFunction)(void (*)(void))fast_hit_py, METH_FASTCALL,
     "fast_hit(fast_cache, tracepoint, raw, offset) -> the EventHeaderDecoder.fast_cache "
     "entry of an event without activity ids (what the formatter loop formats), or None"},
    {"indent_json", (PyCFunction)(void (*)(void))indent_json_py, METH_FASTCALL,
     "indent_json(value, level, unit) -> ehtool.render.pretty.indent_json's bytes "
     "(|level| <= 2**20)"},
    {"hop", (PyCFunction)(void (*)(void))hop, METH_FASTCALL,
     "hop(buf, pos, end, big_endian, stops) -> (pos, type, size) of the next stop"},
    {NULL},
};

/* -- module ------------------------------------------------------------------------ */

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ehtool._speedups",
    .m_doc = "C versions of ehtool's decode hot loops (optional).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    str_name_json = PyUnicode_InternFromString("name_json");
    str_meta = PyUnicode_InternFromString("meta");
    str_offset_ns = PyUnicode_InternFromString("offset_ns");
    if (str_name_json == NULL || str_meta == NULL || str_offset_ns == NULL)
        return NULL;
    if (PyType_Ready(&PlanType) < 0 || PyType_Ready(&ScannerType) < 0 ||
        PyType_Ready(&FormatterType) < 0 || PyType_Ready(&ProgramType) < 0 ||
        PyType_Ready(&FilterType) < 0 || PyType_Ready(&RowMakerType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Plan", (PyObject *)&PlanType) < 0 ||
        PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0 ||
        PyModule_AddObjectRef(m, "Formatter", (PyObject *)&FormatterType) < 0 ||
        PyModule_AddObjectRef(m, "Program", (PyObject *)&ProgramType) < 0 ||
        PyModule_AddObjectRef(m, "Filter", (PyObject *)&FilterType) < 0 ||
        PyModule_AddObjectRef(m, "RowMaker", (PyObject *)&RowMakerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    /* the op codes and value kinds, so that Python can check its copies (ehtool.speedups) */
#define EXPORT(name) if (PyModule_AddIntConstant(m, #name, name) < 0) { Py_DECREF(m); return NULL; }
    EXPORT(OP_LIT) EXPORT(OP_FIXED) EXPORT(OP_STR) EXPORT(OP_ARRAY) EXPORT(OP_SEEK)
    EXPORT(OP_CSTR) EXPORT(OP_CALL)
    EXPORT(FX_UNSIGNED) EXPORT(FX_SIGNED) EXPORT(FX_HEX) EXPORT(FX_PORT) EXPORT(FX_PY)
    EXPORT(FX_CHAR) EXPORT(FX_BOOL) EXPORT(FX_HEXBYTES) EXPORT(FX_UUID) EXPORT(FX_ERRNO)
    EXPORT(FX_TIME) EXPORT(FX_FLOAT) EXPORT(FX_IP) EXPORT(FX_CHAR_TEXT)
    EXPORT(TIME_PERF) EXPORT(TIME_NS) EXPORT(TIME_REL) EXPORT(TIME_DELTA)
    EXPORT(STR_ASCII) EXPORT(STR_BOM) EXPORT(STR_HEX) EXPORT(STR_UTF) EXPORT(STR_SURROGATE_TEXT)
    EXPORT(SRC_MISSING) EXPORT(SRC_CONST) EXPORT(SRC_SAMPLE) EXPORT(SRC_FIELD) EXPORT(SRC_RECORD)
    EXPORT(SRC_COMM)
    EXPORT(RD_FIXED) EXPORT(RD_UTF8) EXPORT(RD_LATIN1) EXPORT(RD_ARRAY)
    EXPORT(N_OR) EXPORT(N_AND) EXPORT(N_NOT) EXPORT(N_CMP) EXPORT(N_NAME) EXPORT(CMP_BITS)
    EXPORT(CMP_GLOB)
#undef EXPORT
    return m;
}
