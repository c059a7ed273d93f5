/* What the two halves of the columnar decoder share (_columns.c: the columns, record batches and the entry point;
_messages.c: message sets of magic 0 and 1): the columns being built, the decoder's state, and the helpers both
write with. See _columns.c for the rules. */
#ifndef BRUCE_WIRE_COLUMNS_H
#define BRUCE_WIRE_COLUMNS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

uint32_t bruce_wire_crc32(uint32_t crc, const unsigned char *p, size_t n); /* _speedups.c: zlib's CRC-32 */

/* ------------------------------------------------------------------ columns: sized, then written */

typedef struct {
    PyObject *bytes; /* the column, allocated between the passes; NULL while sizing */
    char *p;         /* its bytes */
    Py_ssize_t len;  /* bytes counted (first pass) or written (second) */
} column;

static inline int internal_error(void) {
    PyErr_SetString(PyExc_SystemError, "record_columns: the second pass left the first one's path");
    return -1;
}

/* Count n bytes (first pass), or write them (second pass). */
static inline int put(column *c, const void *src, Py_ssize_t n) {
    if (c->p != NULL) {
        if (n > PyBytes_GET_SIZE(c->bytes) - c->len)
            return internal_error();
        memcpy(c->p + c->len, src, (size_t)n);
    } else if (n > PY_SSIZE_T_MAX / 2 - c->len) {
        PyErr_NoMemory();
        return -1;
    }
    c->len += n;
    return 0;
}

#define PUT(col, type, value)                                                                                        \
    do {                                                                                                             \
        type v_ = (type)(value);                                                                                     \
        if (put((col), &v_, sizeof v_) < 0)                                                                          \
            return -1;                                                                                               \
    } while (0)

/* Arrow's binary layout: validity bits (only when a value is null), int32 offsets, data. */
typedef struct {
    column validity, offsets, data;
    Py_ssize_t count, nulls;
} binary;

/* Append a value of n bytes at p (n = -1: null). */
static inline int binary_put(binary *b, const unsigned char *p, int64_t n) {
    if (n < 0) {
        b->nulls++;
    } else {
        if (n > INT32_MAX - b->data.len) {
            PyErr_SetObject(PyExc_ValueError,
                            Py_BuildValue("(ss)", "a column of byte strings would pass 2 GiB", "MALFORMED"));
            return -1;
        }
        if (put(&b->data, p, (Py_ssize_t)n) < 0)
            return -1;
        if (b->validity.p != NULL)
            b->validity.p[b->count / 8] |= (char)(1u << (b->count % 8));
    }
    b->count++;
    PUT(&b->offsets, int32_t, b->data.len);
    return 0;
}

/* Everything decoded so far. */
typedef struct {
    PyObject *decompress, *crc32c;
    int writing;            /* the second pass */
    PyObject *inflated;     /* what decompress() returned in the first pass, in order, for the second */
    Py_ssize_t next_inflated;
    int64_t last_row_offset, max_row_offset; /* of the rows added (a magic-1 wrapper's inner ones) */
    Py_ssize_t rows;
    column offsets, timestamps, types, header_offsets;
    binary keys, values, header_keys, header_values;
    Py_ssize_t headers;
    Py_ssize_t batches;
    column b_rows, b_position, b_base_offset, b_last_offset, b_base_ts, b_max_ts, b_producer_id, b_leader_epoch,
        b_base_sequence, b_crc, b_attributes, b_producer_epoch, b_magic;
} state;

#define BATCH_COLUMNS 13 /* b_rows .. b_magic, in the order of BatchColumns' fields */

static inline column *batch_column(state *s, int i) { return &s->b_rows + i; }

typedef struct {
    int64_t position, base_offset, last_offset, base_ts, max_ts, producer_id;
    int32_t leader_epoch, base_sequence;
    uint32_t crc;
    int16_t attributes, producer_epoch;
    int8_t magic;
} batch_facts;

/* A batch whose records are the last ones added. */
static inline int put_batch(state *s, const batch_facts *f) {
    PUT(&s->b_rows, int32_t, s->rows); /* where its records end */
    PUT(&s->b_position, int64_t, f->position);
    PUT(&s->b_base_offset, int64_t, f->base_offset);
    PUT(&s->b_last_offset, int64_t, f->last_offset);
    PUT(&s->b_base_ts, int64_t, f->base_ts);
    PUT(&s->b_max_ts, int64_t, f->max_ts);
    PUT(&s->b_producer_id, int64_t, f->producer_id);
    PUT(&s->b_leader_epoch, int32_t, f->leader_epoch);
    PUT(&s->b_base_sequence, int32_t, f->base_sequence);
    PUT(&s->b_crc, uint32_t, f->crc);
    PUT(&s->b_attributes, int16_t, f->attributes);
    PUT(&s->b_producer_epoch, int16_t, f->producer_epoch);
    PUT(&s->b_magic, int8_t, f->magic);
    s->batches++;
    return 0;
}

/* A record's offset, timestamp and timestamp type (its key, value and headers are in). */
static inline int put_row(state *s, int64_t offset, int64_t timestamp, int log_append) {
    PUT(&s->offsets, int64_t, offset);
    PUT(&s->timestamps, int64_t, timestamp);
    PUT(&s->types, int8_t, log_append ? 1 : 0);
    s->last_row_offset = offset;
    if (offset > s->max_row_offset)
        s->max_row_offset = offset;
    s->rows++;
    return 0;
}

static inline int fail(const char *reason, const char *format, ...) {
    va_list args;
    va_start(args, format);
    PyObject *message = PyUnicode_FromFormatV(format, args);
    va_end(args);
    if (message != NULL) {
        PyErr_SetObject(PyExc_ValueError, Py_BuildValue("(Ns)", message, reason));
    }
    return -1;
}

#define MALFORMED(...) fail("MALFORMED", __VA_ARGS__)

/* ------------------------------------------------------------------ reading */

static inline int64_t get_i64(const unsigned char *p) {
    return (int64_t)((uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 | (uint64_t)p[2] << 40 | (uint64_t)p[3] << 32 |
                     (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 | (uint64_t)p[6] << 8 | (uint64_t)p[7]);
}

static inline uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline int16_t get_i16(const unsigned char *p) { return (int16_t)((uint16_t)p[0] << 8 | p[1]); }

/* A memoryview of data[start:end] (no copy). */
static inline PyObject *view_of(const unsigned char *data, Py_ssize_t start, Py_ssize_t end) {
    return PyMemoryView_FromMemory((char *)data + start, end - start, PyBUF_READ);
}

/* The bytes the caller's decompress() makes of data[start:end] (a borrowed reference, kept in s->inflated). */
static inline PyObject *decompressed(state *s, int codec, const unsigned char *data, Py_ssize_t start,
                                     Py_ssize_t end, int legacy_lz4) {
    if (s->writing) {
        if (s->next_inflated >= PyList_GET_SIZE(s->inflated)) {
            internal_error();
            return NULL;
        }
        return PyList_GET_ITEM(s->inflated, s->next_inflated++);
    }
    PyObject *payload = view_of(data, start, end);
    if (payload == NULL)
        return NULL;
    PyObject *out = PyObject_CallFunction(s->decompress, "iOO", codec, payload, legacy_lz4 ? Py_True : Py_False);
    Py_DECREF(payload);
    if (out != NULL && !PyBytes_Check(out)) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_TypeError, "decompress() must return bytes");
        return NULL;
    }
    if (out == NULL || PyList_Append(s->inflated, out) < 0) {
        Py_XDECREF(out);
        return NULL;
    }
    Py_DECREF(out); /* the list holds it */
    return out;
}

int bruce_wire_message_entry(state *s, const unsigned char *data, Py_ssize_t start, Py_ssize_t end); /* _messages.c */

#endif
