/* Records encoded from Arrow-layout columns in C: the bytes of column_batch.py's Python twins, and the same inputs
refused (part of the bruce.wire._speedups extension; the module's functions are listed in _speedups.c).

Rules:
- A binary column comes as the tuple (validity or None, offsets, data, first, wide, count): Arrow's binary layout
  (int64 offsets when wide), row r at index first + r. Headers come as (validity or None, int32 list offsets, first,
  key column, value column). Timestamps: one int for every row, or a buffer of int64 (native order), one per row.
  Buffers are read through the buffer protocol, never copied.
- Every buffer's length is checked against the rows it must hold before any row is read; every offset a function
  reads is checked (in order, within its data, a value at most 2 GiB) before its bytes are; header names must be
  present and UTF-8 (Python's strict rules). Anything refused raises ValueError, and the Python twin then builds the
  same bytes or raises the UsageError users see: the two never disagree on what is accepted.
- column_records writes rows [start, stop) as the records of one RecordBatch v2 (what build_record_batch joins),
  after `room` bytes left for the batch's header, into one bytearray of exactly that size: two passes, the first
  checking every row and summing the sizes, the second writing. No Python object per row.
- column_sizes checks every row of the columns and returns the running sum of key + value bytes (int64 per row), the
  largest row, the smallest and largest timestamp; murmur2_column hashes each row of a column (Kafka's murmur2, a
  null row as an empty key) into uint32s.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_utf8.h"
#include "_varint.h"

#define LENGTH_MAX INT32_MAX

static PyObject *refused(void) {
    if (PyErr_Occurred())
        PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, "left to the Python twin");
    return NULL;
}

/* ------------------------------------------------------------------ columns */

typedef struct {
    Py_buffer validity, offsets, data;
    int has_validity, wide;
    Py_ssize_t first, count;
} binary;

typedef struct {
    Py_buffer validity, offsets;
    int has_validity;
    Py_ssize_t first;
    binary keys, values;
} headers;

static void release(Py_buffer *b) {
    if (b->obj != NULL)
        PyBuffer_Release(b);
}

static void binary_release(binary *c) {
    release(&c->validity);
    release(&c->offsets);
    release(&c->data);
}

static void headers_release(headers *h) {
    release(&h->validity);
    release(&h->offsets);
    binary_release(&h->keys);
    binary_release(&h->values);
}

/* A non-negative exact int, at most PY_SSIZE_T_MAX / 16 (so that sizes computed from it cannot overflow). */
static int size_of(PyObject *obj, Py_ssize_t *out) {
    if (!PyLong_CheckExact(obj))
        return -1;
    Py_ssize_t v = PyLong_AsSsize_t(obj);
    if (v < 0 || v > PY_SSIZE_T_MAX / 16)
        return -1;
    *out = v;
    return 0;
}

static int buffer_of(PyObject *obj, Py_buffer *view) {
    return PyObject_GetBuffer(obj, view, PyBUF_SIMPLE);
}

/* Validity bits for rows [0, count) from index first: long enough, or -1. */
static int validity_of(PyObject *obj, Py_buffer *view, int *has, Py_ssize_t first, Py_ssize_t count) {
    *has = obj != Py_None;
    if (!*has)
        return 0;
    if (buffer_of(obj, view) < 0)
        return -1;
    return view->len < (first + count + 7) / 8 ? -1 : 0;
}

/* Open a binary column's tuple (see the rules): its buffers, long enough for all its rows; -1 when refused. */
static int binary_open(PyObject *parts, binary *c) {
    if (!PyTuple_CheckExact(parts) || PyTuple_GET_SIZE(parts) != 6)
        return -1;
    int wide = PyObject_IsTrue(PyTuple_GET_ITEM(parts, 4));
    if (wide < 0 || size_of(PyTuple_GET_ITEM(parts, 3), &c->first) < 0 ||
        size_of(PyTuple_GET_ITEM(parts, 5), &c->count) < 0)
        return -1;
    c->wide = wide;
    if (validity_of(PyTuple_GET_ITEM(parts, 0), &c->validity, &c->has_validity, c->first, c->count) < 0 ||
        buffer_of(PyTuple_GET_ITEM(parts, 1), &c->offsets) < 0 || buffer_of(PyTuple_GET_ITEM(parts, 2), &c->data) < 0)
        return -1;
    return c->offsets.len < (c->first + c->count + 1) * (wide ? 8 : 4) ? -1 : 0;
}

static int headers_open(PyObject *parts, headers *h, Py_ssize_t count) {
    if (!PyTuple_CheckExact(parts) || PyTuple_GET_SIZE(parts) != 5 ||
        size_of(PyTuple_GET_ITEM(parts, 2), &h->first) < 0)
        return -1;
    if (validity_of(PyTuple_GET_ITEM(parts, 0), &h->validity, &h->has_validity, h->first, count) < 0 ||
        buffer_of(PyTuple_GET_ITEM(parts, 1), &h->offsets) < 0 || h->offsets.len < (h->first + count + 1) * 4)
        return -1;
    if (binary_open(PyTuple_GET_ITEM(parts, 3), &h->keys) < 0 || binary_open(PyTuple_GET_ITEM(parts, 4), &h->values) < 0)
        return -1;
    return h->keys.count != h->values.count ? -1 : 0;
}

static inline int bit(const Py_buffer *bits, Py_ssize_t i) {
    return ((const unsigned char *)bits->buf)[i >> 3] >> (i & 7) & 1;
}

static inline int64_t offset_at(const binary *c, Py_ssize_t i) {
    const char *p = (const char *)c->offsets.buf;
    if (c->wide) {
        int64_t v;
        memcpy(&v, p + 8 * i, 8);
        return v;
    }
    int32_t v;
    memcpy(&v, p + 4 * i, 4);
    return v;
}

/* Row r of a column: its bytes and length (-1: null); -1 when its offsets are bad. */
static inline int row(const binary *c, Py_ssize_t r, const unsigned char **p, Py_ssize_t *n) {
    Py_ssize_t i = c->first + r;
    int64_t low = offset_at(c, i), high = offset_at(c, i + 1);
    if (low < 0 || high < low || high > c->data.len || high - low > LENGTH_MAX)
        return -1;
    if (c->has_validity && !bit(&c->validity, i)) {
        *n = -1;
        return 0;
    }
    *p = (const unsigned char *)c->data.buf + low;
    *n = (Py_ssize_t)(high - low);
    return 0;
}

/* Header rows [low, high) of row r: -1 when its list offsets are bad. A row without headers is an empty range. */
static inline int header_range(const headers *h, Py_ssize_t r, Py_ssize_t *low, Py_ssize_t *high) {
    int32_t a, b;
    memcpy(&a, (const char *)h->offsets.buf + 4 * (h->first + r), 4);
    memcpy(&b, (const char *)h->offsets.buf + 4 * (h->first + r + 1), 4);
    if (a < 0 || b < a || b > h->keys.count)
        return -1;
    *low = a;
    *high = b;
    return 0;
}

/* Check the headers of rows [start, stop) as the twin does: the list offsets of every row, the header rows they span
   well formed, the names of rows with headers present and UTF-8. */
static int headers_check(const headers *h, Py_ssize_t start, Py_ssize_t stop) {
    Py_ssize_t low, high, first_low = 0, last_high = 0;
    for (Py_ssize_t r = start; r < stop; r++) {
        if (header_range(h, r, &low, &high) < 0)
            return -1;
        if (r == start)
            first_low = low;
        last_high = high;
    }
    const unsigned char *p;
    Py_ssize_t n;
    for (Py_ssize_t k = first_low; k < last_high; k++)
        if (row(&h->keys, k, &p, &n) < 0 || row(&h->values, k, &p, &n) < 0)
            return -1;
    for (Py_ssize_t r = start; r < stop; r++) {
        if (h->has_validity && !bit(&h->validity, h->first + r))
            continue;
        header_range(h, r, &low, &high);
        for (Py_ssize_t k = low; k < high; k++)
            if (row(&h->keys, k, &p, &n) < 0 || n < 0 || !valid_utf8(p, n))
                return -1;
    }
    return 0;
}

/* The timestamp of row r: one for every row, or the column's. */
static inline int64_t stamp(const Py_buffer *column, int64_t one, Py_ssize_t r) {
    if (column->obj == NULL)
        return one;
    int64_t v;
    memcpy(&v, (const char *)column->buf + 8 * r, 8);
    return v;
}

/* ------------------------------------------------------------------ records */

static inline Py_ssize_t field_size(Py_ssize_t n) { return n < 0 ? 1 : uvarint_size(zigzag(n)) + n; }

static inline unsigned char *put_field(unsigned char *p, const unsigned char *src, Py_ssize_t n) {
    if (n < 0) {
        *p++ = 0x01; /* zigzag -1: null */
        return p;
    }
    p = put_uvarint(p, zigzag(n));
    memcpy(p, src, (size_t)n);
    return p + n;
}

typedef struct {
    binary values, keys;
    headers heads;
    int has_keys, has_headers;
    Py_buffer stamps;
    int64_t one_stamp;
} inputs;

static void inputs_release(inputs *in) {
    binary_release(&in->values);
    binary_release(&in->keys);
    headers_release(&in->heads);
    release(&in->stamps);
}

/* Open the columns of count rows: values, keys or None, headers or None, timestamps (an int when `one_allowed`, a
   buffer of int64, or None when `none_allowed`). */
static int inputs_open(inputs *in, PyObject *const *args, Py_ssize_t count, int one_allowed, int none_allowed) {
    if (binary_open(args[0], &in->values) < 0 || in->values.count != count)
        return -1;
    in->has_keys = args[1] != Py_None;
    if (in->has_keys && (binary_open(args[1], &in->keys) < 0 || in->keys.count != count))
        return -1;
    in->has_headers = args[2] != Py_None;
    if (in->has_headers && headers_open(args[2], &in->heads, count) < 0)
        return -1;
    PyObject *ts = args[3];
    if (ts == Py_None)
        return none_allowed ? 0 : -1;
    if (PyLong_Check(ts)) {
        if (!one_allowed || !PyLong_CheckExact(ts))
            return -1;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(ts, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred()))
            return -1;
        in->one_stamp = v;
        return 0;
    }
    if (buffer_of(ts, &in->stamps) < 0)
        return -1;
    return in->stamps.len < 8 * count ? -1 : 0;
}

/* The record of row r: the sizes of its key, value and body (without its own length). -1 when refused. */
static int record_size(const inputs *in, Py_ssize_t r, Py_ssize_t start, int64_t base_ts, Py_ssize_t *body) {
    const unsigned char *p;
    Py_ssize_t value_n, key_n = -1, low = 0, high = 0;
    if (row(&in->values, r, &p, &value_n) < 0 || (in->has_keys && row(&in->keys, r, &p, &key_n) < 0))
        return -1;
    int64_t delta;
    if (__builtin_sub_overflow(stamp(&in->stamps, in->one_stamp, r), base_ts, &delta))
        return -1;
    if (in->has_headers && !(in->heads.has_validity && !bit(&in->heads.validity, in->heads.first + r)))
        header_range(&in->heads, r, &low, &high); /* checked already */
    Py_ssize_t size = 1 + uvarint_size(zigzag(delta)) + uvarint_size(zigzag(r - start));
    size += field_size(key_n) + field_size(value_n) + uvarint_size(zigzag(high - low));
    for (Py_ssize_t k = low; k < high; k++) {
        Py_ssize_t name_n = -1, header_n = -1;
        row(&in->heads.keys, k, &p, &name_n);
        row(&in->heads.values, k, &p, &header_n);
        size += field_size(name_n) + field_size(header_n);
    }
    *body = size;
    return 0;
}

static unsigned char *put_record(unsigned char *out, const inputs *in, Py_ssize_t r, Py_ssize_t start,
                                 int64_t base_ts, Py_ssize_t body) {
    const unsigned char *p = NULL;
    Py_ssize_t n, low = 0, high = 0;
    out = put_uvarint(out, zigzag(body));
    *out++ = 0; /* attributes */
    out = put_uvarint(out, zigzag(stamp(&in->stamps, in->one_stamp, r) - base_ts));
    out = put_uvarint(out, zigzag(r - start));
    n = -1;
    if (in->has_keys)
        row(&in->keys, r, &p, &n);
    out = put_field(out, p, n);
    row(&in->values, r, &p, &n);
    out = put_field(out, p, n);
    if (in->has_headers && !(in->heads.has_validity && !bit(&in->heads.validity, in->heads.first + r)))
        header_range(&in->heads, r, &low, &high);
    out = put_uvarint(out, zigzag(high - low));
    for (Py_ssize_t k = low; k < high; k++) {
        row(&in->heads.keys, k, &p, &n);
        out = put_field(out, p, n);
        row(&in->heads.values, k, &p, &n);
        out = put_field(out, p, n);
    }
    return out;
}

/* column_records(values, keys, headers, timestamps, count, start, stop, room) -> (bytearray, base ts, max ts) */
PyObject *bruce_wire_column_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError,
                        "column_records(values, keys, headers, timestamps, count, start, stop, room)");
        return NULL;
    }
    Py_ssize_t count, start, stop, room;
    if (size_of(args[4], &count) < 0 || size_of(args[5], &start) < 0 || size_of(args[6], &stop) < 0 ||
        size_of(args[7], &room) < 0 || start >= stop || stop > count)
        return refused();
    inputs in;
    memset(&in, 0, sizeof in);
    PyObject *out = NULL;
    if (inputs_open(&in, args, count, 1, 0) < 0 || (in.has_headers && headers_check(&in.heads, start, stop) < 0))
        goto refuse;
    int64_t base_ts = stamp(&in.stamps, in.one_stamp, start), max_ts = base_ts;
    Py_ssize_t total = room, body;
    for (Py_ssize_t r = start; r < stop; r++) {
        if (record_size(&in, r, start, base_ts, &body) < 0)
            goto refuse;
        Py_ssize_t size = uvarint_size(zigzag(body)) + body;
        if (total > PY_SSIZE_T_MAX / 2 - size)
            goto refuse;
        total += size;
        int64_t ts = stamp(&in.stamps, in.one_stamp, r);
        if (ts > max_ts)
            max_ts = ts;
    }
    out = PyByteArray_FromStringAndSize(NULL, total);
    if (out == NULL) {
        inputs_release(&in);
        return NULL;
    }
    unsigned char *p = (unsigned char *)PyByteArray_AS_STRING(out), *end = p + total;
    memset(p, 0, (size_t)room);
    p += room;
    /* The buffers are held (their exporters cannot resize them) and no Python code runs between the passes; each
       record is still checked against the room left rather than trusting the first pass. */
    for (Py_ssize_t r = start; r < stop; r++) {
        if (record_size(&in, r, start, base_ts, &body) < 0 || end - p < uvarint_size(zigzag(body)) + body)
            goto refuse;
        p = put_record(p, &in, r, start, base_ts, body);
    }
    if (p != end)
        goto refuse;
    inputs_release(&in);
    return Py_BuildValue("(NLL)", out, (long long)base_ts, (long long)max_ts);
refuse:
    Py_XDECREF(out);
    inputs_release(&in);
    return refused();
}

/* column_sizes(values, keys, headers, timestamps, count) -> (ends, biggest, min ts, max ts) */
PyObject *bruce_wire_column_sizes(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "column_sizes(values, keys, headers, timestamps, count)");
        return NULL;
    }
    Py_ssize_t count;
    if (size_of(args[4], &count) < 0)
        return refused();
    inputs in;
    memset(&in, 0, sizeof in);
    if (inputs_open(&in, args, count, 0, 1) < 0 || (in.has_headers && headers_check(&in.heads, 0, count) < 0)) {
        inputs_release(&in);
        return refused();
    }
    PyObject *ends = PyBytes_FromStringAndSize(NULL, 8 * count);
    if (ends == NULL) {
        inputs_release(&in);
        return NULL;
    }
    char *e = PyBytes_AS_STRING(ends);
    int64_t total = 0, biggest = 0, low = 0, high = 0;
    for (Py_ssize_t r = 0; r < count; r++) {
        const unsigned char *p;
        Py_ssize_t value_n, key_n = -1;
        if (row(&in.values, r, &p, &value_n) < 0 || (in.has_keys && row(&in.keys, r, &p, &key_n) < 0)) {
            Py_DECREF(ends);
            inputs_release(&in);
            return refused();
        }
        int64_t size = (value_n > 0 ? value_n : 0) + (key_n > 0 ? key_n : 0);
        total += size;
        memcpy(e + 8 * r, &total, 8);
        if (size > biggest)
            biggest = size;
        if (in.stamps.obj != NULL) {
            int64_t ts = stamp(&in.stamps, 0, r);
            if (r == 0 || ts < low)
                low = ts;
            if (r == 0 || ts > high)
                high = ts;
        }
    }
    int stamped = in.stamps.obj != NULL && count > 0;
    inputs_release(&in);
    if (!stamped)
        return Py_BuildValue("(NLOO)", ends, (long long)biggest, Py_None, Py_None);
    return Py_BuildValue("(NLLL)", ends, (long long)biggest, (long long)low, (long long)high);
}

/* ------------------------------------------------------------------ murmur2 */

/* Kafka's murmur2 (Java's Utils.murmur2: seed 0x9747b28c, little-endian words). */
static uint32_t murmur2(const unsigned char *data, Py_ssize_t length) {
    const uint32_t m = 0x5bd1e995;
    uint32_t h = 0x9747b28cu ^ (uint32_t)length;
    Py_ssize_t words = length / 4;
    for (Py_ssize_t i = 0; i < words; i++) {
        const unsigned char *w = data + 4 * i;
        uint32_t k = (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 | (uint32_t)w[3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    const unsigned char *tail = data + 4 * words;
    switch (length & 3) {
    case 3:
        h ^= (uint32_t)tail[2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)tail[1] << 8;
        /* fall through */
    case 1:
        h ^= tail[0];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

/* murmur2_column(column) -> bytes of count uint32 */
PyObject *bruce_wire_murmur2_column(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "murmur2_column(column)");
        return NULL;
    }
    binary c;
    memset(&c, 0, sizeof c);
    if (binary_open(args[0], &c) < 0) {
        binary_release(&c);
        return refused();
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, 4 * c.count);
    if (out == NULL) {
        binary_release(&c);
        return NULL;
    }
    char *o = PyBytes_AS_STRING(out);
    for (Py_ssize_t r = 0; r < c.count; r++) {
        const unsigned char *p = NULL;
        Py_ssize_t n;
        if (row(&c, r, &p, &n) < 0) {
            Py_DECREF(out);
            binary_release(&c);
            return refused();
        }
        uint32_t h = murmur2(p, n < 0 ? 0 : n);
        memcpy(o + 4 * r, &h, 4);
    }
    binary_release(&c);
    return out;
}
