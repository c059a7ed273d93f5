/* Records decoded into columns in C: the columns of columns.py's Python decoder, byte for byte, and the same inputs
refused (part of the bruce.wire._speedups extension; the module's functions are listed in _speedups.c). This file:
the columns' allocation, record batches (magic 2) and the entry point; _messages.c: message sets (magic 0 and 1);
_columns.h: what they share.

Rules:
- record_columns(data, decompress, crc32c) walks the log entries of a Fetch answer's records as
  bruce.wire.records.decode_records does (entry framing, a partial entry at the end ignored, magic 2 record
  batches, magic 0/1 messages and their compressed wrappers), with the Python decoders' checks in their order, so
  both refuse the same inputs for the same reason. It adds one: an offset or timestamp must fit int64.
- No Python object per record, and each column allocated once: two passes over the input, the first checking
  everything and counting each column's bytes, the second writing into bytes objects of exactly those sizes (no
  growing, no copying twice). Byte strings are copied once, into their column's data. Every count and length is
  checked against the bytes left before it is used.
- Decompression and CRC-32C are the caller's: decompress(codec, payload, legacy_lz4) -> bytes (bounded by the
  caller's budget) and crc32c(buffer) -> int, called once per batch (in the first pass; what decompress returned is
  kept for the second) with a memoryview of the input (no copy).
  Their errors pass through unchanged; the decoder's own refusals are ValueError(message, reason), which the caller
  turns into MalformedInput.
- Layouts (Arrow's): int64 offsets and timestamps, int8 timestamp types, binary columns (validity bits, int32
  offsets, data), headers as a list (int32 offsets per record into the header key and value columns), one row of
  facts per batch; native byte order.
*/
#include "_columns.h"
#include "_utf8.h"

/* ------------------------------------------------------------------ allocating the columns */

/* Allocate the column at the size the first pass counted (zeroed when `zero`: a bitmap), for the second. */
static int allocate(column *c, Py_ssize_t size, int zero) {
    if ((c->bytes = PyBytes_FromStringAndSize(NULL, size)) == NULL)
        return -1;
    c->p = PyBytes_AS_STRING(c->bytes);
    if (zero)
        memset(c->p, 0, (size_t)size);
    c->len = 0;
    return 0;
}

/* The column written whole (a new reference; c no longer holds it). */
static PyObject *finish(column *c) {
    if (c->bytes == NULL || c->len != PyBytes_GET_SIZE(c->bytes)) {
        internal_error();
        return NULL;
    }
    PyObject *out = c->bytes;
    c->bytes = NULL;
    return out;
}

static int binary_start(binary *b) {
    PUT(&b->offsets, int32_t, 0);
    return 0;
}

/* Between the passes: the columns at their sizes, the counts back to 0. */
static int binary_allocate(binary *b) {
    if (b->nulls && allocate(&b->validity, (b->count + 7) / 8, 1) < 0)
        return -1;
    b->count = b->nulls = 0;
    return allocate(&b->offsets, b->offsets.len, 0) < 0 || allocate(&b->data, b->data.len, 0) < 0 ? -1 : 0;
}

/* (count, null count, validity or None, offsets, data) */
static PyObject *binary_finish(binary *b) {
    if (b->nulls)
        b->validity.len = PyBytes_GET_SIZE(b->validity.bytes); /* bits set in place */
    PyObject *validity = b->nulls ? finish(&b->validity) : Py_NewRef(Py_None);
    PyObject *offsets = finish(&b->offsets), *data = finish(&b->data);
    if (validity == NULL || offsets == NULL || data == NULL) {
        Py_XDECREF(validity);
        Py_XDECREF(offsets);
        Py_XDECREF(data);
        return NULL;
    }
    return Py_BuildValue("(nnNNN)", b->count, b->nulls, validity, offsets, data);
}

static void binary_free(binary *b) {
    Py_CLEAR(b->validity.bytes);
    Py_CLEAR(b->offsets.bytes);
    Py_CLEAR(b->data.bytes);
}

/* ------------------------------------------------------------------ record batches (magic 2) */

/* Unsigned LEB128 of at most max_bytes bytes (5: a 32-bit value, 10: 64-bit) at *p, below end; *p moves past it. */
static int uvarint(const unsigned char **p, const unsigned char *end, int max_bytes, uint64_t *out) {
    const unsigned char *q = *p;
    uint64_t result = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (q >= end)
            return MALFORMED("a varint runs past the end of its record");
        unsigned b = *q++;
        result |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            if (i == max_bytes - 1 && b > (max_bytes == 5 ? 0x0Fu : 0x01u))
                return MALFORMED("a varint out of range");
            *p = q;
            *out = result;
            return 0;
        }
    }
    return MALFORMED("a varint longer than %d bytes", max_bytes);
}

/* A zigzag varint of 32 bits (its one-byte form inline: lengths and deltas mostly are). */
static inline int varint32(const unsigned char **p, const unsigned char *end, int64_t *out) {
    uint64_t raw;
    if (*p < end && **p < 0x80) {
        raw = *(*p)++;
    } else if (uvarint(p, end, 5, &raw) < 0)
        return -1;
    *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
    return 0;
}

/* A nullable byte string with a zigzag varint length at *p (-1: null), within end. */
static int varint_bytes(const unsigned char **p, const unsigned char *end, int64_t *n, const char *what) {
    if (varint32(p, end, n) < 0)
        return -1;
    if (*n < -1)
        return MALFORMED("invalid %s length %lld", what, (long long)*n);
    if (*n > end - *p)
        return MALFORMED("a %s of %lld bytes runs past the end of its record", what, (long long)*n);
    return 0;
}

static int record_headers(state *s, const unsigned char **p, const unsigned char *end) {
    int64_t count;
    if (varint32(p, end, &count) < 0)
        return -1;
    if (count < 0 || count > end - *p)
        return MALFORMED("invalid header count %lld", (long long)count);
    if (count > INT32_MAX - s->headers)
        return MALFORMED("more than 2**31 - 1 headers");
    for (int64_t i = 0; i < count; i++) {
        int64_t n;
        if (varint_bytes(p, end, &n, "header key") < 0)
            return -1;
        if (n < 0)
            return MALFORMED("invalid header key length -1");
        if (!valid_utf8(*p, (Py_ssize_t)n))
            return MALFORMED("a header key is not UTF-8");
        if (binary_put(&s->header_keys, *p, n) < 0)
            return -1;
        *p += n;
        if (varint_bytes(p, end, &n, "header value") < 0 || binary_put(&s->header_values, *p, n) < 0)
            return -1;
        *p += n < 0 ? 0 : n;
    }
    s->headers += (Py_ssize_t)count;
    PUT(&s->header_offsets, int32_t, s->headers);
    return 0;
}

/* The `count` records of a RecordBatch v2 in buf[0:len], which they must fill exactly. */
static int batch_records(state *s, const unsigned char *buf, Py_ssize_t len, int32_t count, const batch_facts *f) {
    const unsigned char *p = buf, *end = buf + len;
    int log_append = f->attributes & 0x08;
    if (count > len)
        return MALFORMED("%d records cannot fit in %zd bytes", count, len);
    if (count > INT32_MAX - s->rows)
        return MALFORMED("more than 2**31 - 1 records");
    for (int32_t i = 0; i < count; i++) {
        int64_t length, offset_delta, n;
        uint64_t raw;
        if (varint32(&p, end, &length) < 0)
            return -1;
        if (length < 0 || length > end - p)
            return MALFORMED("record length %lld does not fit the batch", (long long)length);
        const unsigned char *record_end = p + length;
        p++; /* attributes (unused) */
        if (p > record_end || uvarint(&p, record_end, 10, &raw) < 0)
            return p > record_end ? MALFORMED("record %d is empty", i) : -1;
        int64_t ts_delta = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1), timestamp = f->max_ts, offset;
        if (!log_append && __builtin_add_overflow(f->base_ts, ts_delta, &timestamp))
            return MALFORMED("a record's timestamp does not fit 64 bits");
        if (varint32(&p, record_end, &offset_delta) < 0)
            return -1;
        if (__builtin_add_overflow(f->base_offset, offset_delta, &offset))
            return MALFORMED("a record's offset does not fit 64 bits");
        if (varint_bytes(&p, record_end, &n, "key") < 0 || binary_put(&s->keys, p, n) < 0)
            return -1;
        p += n < 0 ? 0 : n;
        if (varint_bytes(&p, record_end, &n, "value") < 0 || binary_put(&s->values, p, n) < 0)
            return -1;
        p += n < 0 ? 0 : n;
        if (record_headers(s, &p, record_end) < 0)
            return -1;
        if (p != record_end)
            return MALFORMED("record fields end %zd bytes before the record's length says", record_end - p);
        if (put_row(s, offset, timestamp, log_append) < 0)
            return -1;
    }
    if (p != end)
        return MALFORMED("%zd bytes after the last of %d records", end - p, count);
    return 0;
}

#define BATCH_HEADER 61

static int check_crc(state *s, const unsigned char *data, Py_ssize_t start, Py_ssize_t end, uint32_t expected) {
    PyObject *view = view_of(data, start + 21, end);
    if (view == NULL)
        return -1;
    PyObject *crc = PyObject_CallOneArg(s->crc32c, view);
    Py_DECREF(view);
    if (crc == NULL)
        return -1;
    unsigned long actual = PyLong_AsUnsignedLong(crc);
    Py_DECREF(crc);
    if (actual == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    if (actual != expected) {
        char text[80];
        snprintf(text, sizeof text, "record batch: CRC-32C is %#010lx, the batch says %#010lx", actual,
                 (unsigned long)expected);
        return fail("CRC", "%s", text);
    }
    return 0;
}

static int record_batch(state *s, const unsigned char *data, Py_ssize_t start, Py_ssize_t end) {
    if (end - start < BATCH_HEADER)
        return MALFORMED("record batch of %zd bytes is shorter than its 61-byte header", end - start);
    const unsigned char *h = data + start;
    batch_facts f = {
        .position = start,
        .base_offset = get_i64(h),
        .leader_epoch = (int32_t)get_u32(h + 12),
        .crc = get_u32(h + 17),
        .attributes = get_i16(h + 21),
        .base_ts = get_i64(h + 27),
        .max_ts = get_i64(h + 35),
        .producer_id = get_i64(h + 43),
        .producer_epoch = get_i16(h + 51),
        .base_sequence = (int32_t)get_u32(h + 53),
        .magic = 2,
    };
    int32_t last_delta = (int32_t)get_u32(h + 23), count = (int32_t)get_u32(h + 57);
    if (!s->writing && check_crc(s, data, start, end, f.crc) < 0)
        return -1;
    int codec = f.attributes & 0x07;
    if (count < 0)
        return MALFORMED("negative record count %d", count);
    if (codec > 4)
        return MALFORMED("record batch codec %d is unknown", codec);
    int result;
    if (codec == 0) {
        result = batch_records(s, data + start + BATCH_HEADER, end - start - BATCH_HEADER, count, &f);
    } else {
        PyObject *inner = decompressed(s, codec, data, start + BATCH_HEADER, end, 0);
        if (inner == NULL)
            return -1;
        result = batch_records(s, (const unsigned char *)PyBytes_AS_STRING(inner), PyBytes_GET_SIZE(inner), count, &f);
    }
    if (result < 0)
        return -1;
    if (__builtin_add_overflow(f.base_offset, (int64_t)last_delta, &f.last_offset))
        return MALFORMED("a batch's last offset does not fit 64 bits");
    return put_batch(s, &f);
}

/* ------------------------------------------------------------------ the entry point */

static void state_free(state *s) {
    column *plain[] = {&s->offsets, &s->timestamps, &s->types, &s->header_offsets};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        Py_CLEAR(plain[i]->bytes);
    binary_free(&s->keys);
    binary_free(&s->values);
    binary_free(&s->header_keys);
    binary_free(&s->header_values);
    for (int i = 0; i < BATCH_COLUMNS; i++)
        Py_CLEAR(batch_column(s, i)->bytes);
    Py_CLEAR(s->inflated);
}

/* Between the passes: each column allocated at the size the first counted, every count back to 0. */
static int allocate_all(state *s) {
    column *plain[] = {&s->offsets, &s->timestamps, &s->types, &s->header_offsets};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        if (allocate(plain[i], plain[i]->len, 0) < 0)
            return -1;
    for (int i = 0; i < BATCH_COLUMNS; i++)
        if (allocate(batch_column(s, i), batch_column(s, i)->len, 0) < 0)
            return -1;
    if (binary_allocate(&s->keys) < 0 || binary_allocate(&s->values) < 0 || binary_allocate(&s->header_keys) < 0 ||
        binary_allocate(&s->header_values) < 0)
        return -1;
    s->rows = s->headers = s->batches = s->next_inflated = 0;
    s->writing = 1;
    return 0;
}

/* (count, rows, position, ... magic): BatchColumns' fields in order. */
static PyObject *batches_finish(state *s) {
    PyObject *out = PyTuple_New(BATCH_COLUMNS + 1);
    if (out == NULL)
        return NULL;
    PyTuple_SET_ITEM(out, 0, PyLong_FromSsize_t(s->batches));
    for (int i = 0; i < BATCH_COLUMNS; i++) {
        PyObject *column = finish(batch_column(s, i));
        if (column == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i + 1, column);
    }
    if (PyTuple_GET_ITEM(out, 0) == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* One pass over the log entries of data[0:total]. */
static int pass(state *s, const unsigned char *data, Py_ssize_t total) {
    if (binary_start(&s->keys) < 0 || binary_start(&s->values) < 0 || binary_start(&s->header_keys) < 0 ||
        binary_start(&s->header_values) < 0)
        return -1;
    PUT(&s->header_offsets, int32_t, 0);
    PUT(&s->b_rows, int32_t, 0);
    Py_ssize_t pos = 0;
    while (total - pos >= 12) {
        int32_t size = (int32_t)get_u32(data + pos + 8);
        if (size < 5)
            return MALFORMED("log entry at byte %zd declares size %d, too small for a magic byte", pos, size);
        if (size > total - pos - 12)
            break; /* a partial entry at the end */
        Py_ssize_t end = pos + 12 + size;
        int magic = data[pos + 16];
        if (magic == 2) {
            if (record_batch(s, data, pos, end) < 0)
                return -1;
        } else if (magic == 0 || magic == 1) {
            if (bruce_wire_message_entry(s, data, pos, end) < 0)
                return -1;
        } else {
            return fail("MAGIC", "log entry at byte %zd has unknown magic %d", pos, magic);
        }
        pos = end;
    }
    return 0;
}

/* The first pass (checking, counting), the columns allocated, the second (writing). */
static int walk(state *s, const unsigned char *data, Py_ssize_t total) {
    if (pass(s, data, total) < 0 || allocate_all(s) < 0 || pass(s, data, total) < 0)
        return -1;
    return s->next_inflated == PyList_GET_SIZE(s->inflated) ? 0 : internal_error();
}

PyObject *bruce_wire_record_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "record_columns(data, decompress, crc32c)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    state s;
    memset(&s, 0, sizeof s);
    s.decompress = args[1];
    s.crc32c = args[2];
    PyObject *out = NULL;
    if ((s.inflated = PyList_New(0)) != NULL && walk(&s, (const unsigned char *)view.buf, view.len) == 0) {
        PyObject *offsets = finish(&s.offsets), *stamps = finish(&s.timestamps), *types = finish(&s.types);
        PyObject *header_offsets = finish(&s.header_offsets);
        PyObject *keys = binary_finish(&s.keys), *values = binary_finish(&s.values);
        PyObject *header_keys = binary_finish(&s.header_keys), *header_values = binary_finish(&s.header_values);
        PyObject *batches = batches_finish(&s);
        if (offsets && stamps && types && header_offsets && keys && values && header_keys && header_values && batches)
            out = Py_BuildValue("(nNNNNNNNNN)", s.rows, offsets, stamps, types, keys, values, header_offsets,
                                header_keys, header_values, batches);
        else {
            Py_XDECREF(offsets);
            Py_XDECREF(stamps);
            Py_XDECREF(types);
            Py_XDECREF(header_offsets);
            Py_XDECREF(keys);
            Py_XDECREF(values);
            Py_XDECREF(header_keys);
            Py_XDECREF(header_values);
            Py_XDECREF(batches);
        }
    }
    state_free(&s);
    PyBuffer_Release(&view);
    return out;
}
