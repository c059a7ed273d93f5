/* The record encoders of bruce.wire in C: the same bytes as the Python builders of recordbatch.py and messageset.py.

Rules:
- Each function takes only the plain form the Python builder encodes without error: columns given as lists or tuples
  of equal length, keys and values exact bytes or None, timestamps exact ints within int64, every size and delta in
  range. Anything else raises ValueError, and the caller runs the Python builder, which builds the bytes or raises
  the one error users see: the two never disagree on an error.
- Two passes: the first checks every message and sums the sizes, the second writes into one bytes object of exactly
  that size. No Python object is made per message.
- record_batch_records writes what build_record_batch joins for records (key, value, timestamp, None): the records
  of a RecordBatch v2 without headers; the batch's header, compression and CRC-32C stay in Python.
- message_set writes an uncompressed magic 0/1 message set, each message with its CRC-32 (IEEE, zlib's function, by
  a slicing-by-8 table); crc32(data, value) is exported so the tests compare it with zlib.crc32.
- record_columns, the decoder of records into columns, lives in _columns.c; column_records, column_sizes and
  murmur2_column, the encoder of Arrow-layout columns, in _encode.c (one extension, several sources).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_varint.h"

#define LENGTH_MAX INT32_MAX /* a key or value longer than this is left to Python */

static uint32_t crc_table[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

/* CRC-32 (IEEE 802.3, reflected) of n bytes at p, continuing from crc (0 to start), as zlib.crc32(data, crc); the
   message-set decoder of _columns.c uses it too. */
uint32_t bruce_wire_crc32(uint32_t crc, const unsigned char *p, size_t n) {
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
              crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
              crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xFF];
    return ~crc;
}

static unsigned char *put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
    return p + 4;
}

static unsigned char *put_u64(unsigned char *p, uint64_t v) {
    p = put_u32(p, (uint32_t)(v >> 32));
    return put_u32(p, (uint32_t)v);
}

static PyObject *left_to_python(void) {
    if (PyErr_Occurred())
        PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, "left to the Python builder");
    return NULL;
}

/* The items of a list or tuple of n items, or NULL (no exception set). */
static PyObject **column(PyObject *seq, Py_ssize_t n) {
    if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq))
        return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != n)
        return NULL;
    return PySequence_Fast_ITEMS(seq);
}

/* The length of a key or value as written: -1 for None (or an empty one with empty_as_null), -2 when Python must
   decide (not bytes, or too long). */
static Py_ssize_t field_length(PyObject *field, int empty_as_null) {
    if (field == Py_None)
        return -1;
    if (!PyBytes_CheckExact(field))
        return -2;
    Py_ssize_t n = PyBytes_GET_SIZE(field);
    if (n > LENGTH_MAX)
        return -2;
    return n == 0 && empty_as_null ? -1 : n;
}

/* An exact int within int64 into *out: 1, or 0 (no exception set) when Python must decide. */
static int int64_of(PyObject *obj, int64_t *out) {
    if (!PyLong_CheckExact(obj))
        return 0;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred()))
        return 0;
    *out = (int64_t)v;
    return 1;
}

static int flag_of(PyObject *obj, int *out) {
    int v = PyObject_IsTrue(obj);
    if (v < 0)
        return 0;
    *out = v;
    return 1;
}

/* ------------------------------------------------------------------ RecordBatch v2 records */

/* One record's parts: its body's size (without its own length varint), and the varints of its timestamp delta. */
struct record_shape {
    Py_ssize_t key_length, value_length, body_size;
    uint64_t ts_delta;
};

/* 1 and the record's shape, or 0 when Python must decide. */
static int record_shape(PyObject *key, PyObject *value, PyObject *ts, int64_t base_ts, Py_ssize_t index,
                        int empty_as_null, int64_t *timestamp, struct record_shape *shape) {
    shape->key_length = field_length(key, empty_as_null);
    shape->value_length = field_length(value, empty_as_null);
    if (shape->key_length == -2 || shape->value_length == -2 || !int64_of(ts, timestamp))
        return 0;
    int64_t delta;
    if (__builtin_sub_overflow(*timestamp, base_ts, &delta))
        return 0;
    shape->ts_delta = zigzag(delta);
    Py_ssize_t size = 1 + uvarint_size(shape->ts_delta) + uvarint_size(zigzag(index)) + 1; /* attributes, header count */
    size += shape->key_length < 0 ? 1 : uvarint_size(zigzag(shape->key_length)) + shape->key_length;
    size += shape->value_length < 0 ? 1 : uvarint_size(zigzag(shape->value_length)) + shape->value_length;
    shape->body_size = size;
    return 1;
}

static unsigned char *put_field(unsigned char *p, PyObject *field, Py_ssize_t length) {
    if (length < 0) {
        *p++ = 0x01; /* zigzag -1: null */
        return p;
    }
    p = put_uvarint(p, zigzag(length));
    memcpy(p, PyBytes_AS_STRING(field), (size_t)length);
    return p + length;
}

static PyObject *record_batch_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "record_batch_records(keys, values, timestamps, empty_as_null)");
        return NULL;
    }
    int empty_as_null;
    if (!flag_of(args[3], &empty_as_null))
        return NULL;
    if (!PyList_CheckExact(args[1]) && !PyTuple_CheckExact(args[1]))
        return left_to_python();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args[1]);
    PyObject **keys = column(args[0], n), **values = column(args[1], n), **stamps = column(args[2], n);
    int64_t base_ts, max_ts, ts;
    if (n == 0 || keys == NULL || stamps == NULL || !int64_of(stamps[0], &base_ts))
        return left_to_python();
    max_ts = base_ts;
    Py_ssize_t total = 0;
    struct record_shape shape;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!record_shape(keys[i], values[i], stamps[i], base_ts, i, empty_as_null, &ts, &shape))
            return left_to_python();
        if (ts > max_ts)
            max_ts = ts;
        Py_ssize_t size = uvarint_size(zigzag(shape.body_size)) + shape.body_size;
        if (total > PY_SSIZE_T_MAX - size)
            return left_to_python();
        total += size;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        return NULL;
    /* No Python code runs between the passes, but the second one checks every size again rather than trust that. */
    keys = column(args[0], n), values = column(args[1], n), stamps = column(args[2], n);
    if (keys == NULL || values == NULL || stamps == NULL) {
        Py_DECREF(out);
        return left_to_python();
    }
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out), *end = p + total;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!record_shape(keys[i], values[i], stamps[i], base_ts, i, empty_as_null, &ts, &shape) ||
            end - p < uvarint_size(zigzag(shape.body_size)) + shape.body_size) {
            Py_DECREF(out);
            return left_to_python();
        }
        p = put_uvarint(p, zigzag(shape.body_size));
        *p++ = 0; /* attributes */
        p = put_uvarint(p, shape.ts_delta);
        p = put_uvarint(p, zigzag(i));
        p = put_field(p, keys[i], shape.key_length);
        p = put_field(p, values[i], shape.value_length);
        *p++ = 0; /* no headers */
    }
    if (p != end) {
        Py_DECREF(out);
        return left_to_python();
    }
    return Py_BuildValue("(NLL)", out, (long long)base_ts, (long long)max_ts);
}

/* ------------------------------------------------------------------ message sets (magic 0 and 1) */

/* The bytes of one entry (offset, size, crc and the message), or -1 when Python must decide. */
static Py_ssize_t entry_size(PyObject *key, PyObject *value, int magic, int empty_as_null, Py_ssize_t *key_length,
                             Py_ssize_t *value_length) {
    *key_length = field_length(key, empty_as_null);
    *value_length = field_length(value, empty_as_null);
    if (*key_length == -2 || *value_length == -2)
        return -1;
    return 12 + 4 + 2 + (magic ? 8 : 0) + 4 + (*key_length > 0 ? *key_length : 0) + 4 +
           (*value_length > 0 ? *value_length : 0);
}

static unsigned char *put_message_field(unsigned char *p, PyObject *field, Py_ssize_t length) {
    p = put_u32(p, (uint32_t)(int32_t)length);
    if (length > 0) {
        memcpy(p, PyBytes_AS_STRING(field), (size_t)length);
        p += length;
    }
    return p;
}

static PyObject *message_set(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "message_set(keys, values, timestamps, magic, empty_as_null, base_offset)");
        return NULL;
    }
    int empty_as_null;
    if (!flag_of(args[4], &empty_as_null))
        return NULL;
    int64_t magic, base_offset;
    if (!int64_of(args[3], &magic) || (magic != 0 && magic != 1) || !int64_of(args[5], &base_offset))
        return left_to_python();
    if (!PyList_CheckExact(args[1]) && !PyTuple_CheckExact(args[1]))
        return left_to_python();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(args[1]);
    PyObject **keys = column(args[0], n), **values = column(args[1], n), **stamps = NULL;
    if (keys == NULL || (magic && (stamps = column(args[2], n)) == NULL) || (!magic && args[2] != Py_None))
        return left_to_python();
    if (n && base_offset > INT64_MAX - (int64_t)(n - 1))
        return left_to_python();
    Py_ssize_t total = 0, key_length, value_length;
    int64_t ts = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t size = entry_size(keys[i], values[i], (int)magic, empty_as_null, &key_length, &value_length);
        if (size < 0 || size - 12 > INT32_MAX || (magic && !int64_of(stamps[i], &ts)) || total > PY_SSIZE_T_MAX - size)
            return left_to_python();
        total += size;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        return NULL;
    keys = column(args[0], n), values = column(args[1], n);
    if (keys == NULL || values == NULL || (magic && (stamps = column(args[2], n)) == NULL)) {
        Py_DECREF(out);
        return left_to_python();
    }
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out), *end = p + total;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t size = entry_size(keys[i], values[i], (int)magic, empty_as_null, &key_length, &value_length);
        if (size < 0 || end - p < size || (magic && !int64_of(stamps[i], &ts))) {
            Py_DECREF(out);
            return left_to_python();
        }
        unsigned char *crc_at = put_u32(put_u64(p, (uint64_t)(base_offset + i)), (uint32_t)(size - 12));
        unsigned char *message = crc_at + 4;
        p = message;
        *p++ = (unsigned char)magic;
        *p++ = 0; /* attributes: no compression, create time */
        if (magic)
            p = put_u64(p, (uint64_t)ts);
        p = put_message_field(p, keys[i], key_length);
        p = put_message_field(p, values[i], value_length);
        put_u32(crc_at, bruce_wire_crc32(0, message, (size_t)(p - message)));
    }
    if (p != end) {
        Py_DECREF(out);
        return left_to_python();
    }
    return out;
}

static PyObject *crc32_py(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "crc32(data, value=0)");
        return NULL;
    }
    unsigned long value = 0;
    if (nargs == 2) {
        value = PyLong_AsUnsignedLong(args[1]);
        if (value == (unsigned long)-1 && PyErr_Occurred())
            return NULL;
        if (value > 0xFFFFFFFFul) {
            PyErr_SetString(PyExc_OverflowError, "a CRC-32 is 32 bits");
            return NULL;
        }
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t crc = bruce_wire_crc32((uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

PyObject *bruce_wire_record_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs); /* _columns.c */
PyObject *bruce_wire_column_records(PyObject *module, PyObject *const *args, Py_ssize_t nargs);  /* _encode.c */
PyObject *bruce_wire_column_sizes(PyObject *module, PyObject *const *args, Py_ssize_t nargs);    /* _encode.c */
PyObject *bruce_wire_murmur2_column(PyObject *module, PyObject *const *args, Py_ssize_t nargs);  /* _encode.c */

static PyMethodDef methods[] = {
    {"record_batch_records", (PyCFunction)(void (*)(void))record_batch_records, METH_FASTCALL,
     "(records bytes, base timestamp, max timestamp) of a RecordBatch v2 without headers; ValueError: use Python."},
    {"message_set", (PyCFunction)(void (*)(void))message_set, METH_FASTCALL,
     "An uncompressed magic 0/1 message set from columns; ValueError: use Python."},
    {"record_columns", (PyCFunction)(void (*)(void))bruce_wire_record_columns, METH_FASTCALL,
     "The records of a Fetch answer's record set as columns (see _columns.c); ValueError(message, reason): bad."},
    {"column_records", (PyCFunction)(void (*)(void))bruce_wire_column_records, METH_FASTCALL,
     "The records of a RecordBatch v2 from Arrow-layout columns (see _encode.c); ValueError: use Python."},
    {"column_sizes", (PyCFunction)(void (*)(void))bruce_wire_column_sizes, METH_FASTCALL,
     "Arrow-layout columns checked and measured (see _encode.c); ValueError: use Python."},
    {"murmur2_column", (PyCFunction)(void (*)(void))bruce_wire_murmur2_column, METH_FASTCALL,
     "Kafka's murmur2 of each row of a binary column, as uint32s; ValueError: use Python."},
    {"crc32", (PyCFunction)(void (*)(void))crc32_py, METH_FASTCALL,
     "CRC-32 (zlib's) of a buffer, continuing from value (the message sets' own, for the tests)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_speedups",
    .m_doc = "bruce.wire's record encoders and columnar decoder in C (recordbatch.py, messageset.py, columns.py, "
             "column_batch.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    crc_init();
    return PyModule_Create(&module_def);
}
