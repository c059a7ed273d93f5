/* The spool's record encoder in C: the same bytes as bruce.proxy.spool.format.encode_burst's Python loop.

Rules:
- encode_burst(first_sequence, messages) takes only what the Python encoder encodes without error, in its plain
  form: a list or tuple of 5-tuples (topic bytes, partition key int or None, key bytes or None, value bytes,
  timestamp int) whose fields fit the format. Anything else raises ValueError, and the caller runs the Python
  encoder, which builds the bytes or raises the one error users see: the two never disagree on an error.
- Two passes: the first checks every message and sums the record sizes, the second writes into one bytes object of
  exactly that size. No Python object is made per message.
- CRC-32C (Castagnoli, the crc32c package's function): the SSE4.2 instruction on x86-64 CPUs that have it, else a
  table; crc32c(data) is exported so the tests compare both with the package.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_SSE42_PATH 1
#include <nmmintrin.h>
#endif

#define FIXED_SIZE 31 /* sequence u64, timestamp i64, routing u8, partition key i32, three sizes */
#define FRAME_SIZE 8  /* length u32, CRC-32C u32 */

static uint32_t crc_table[8][256];
static int use_sse42 = 0;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
#ifdef HAVE_SSE42_PATH
    __builtin_cpu_init();
    use_sse42 = __builtin_cpu_supports("sse4.2");
#endif
}

static uint32_t crc_by_table(uint32_t crc, const unsigned char *p, size_t n) {
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
    return crc;
}

#ifdef HAVE_SSE42_PATH
__attribute__((target("sse4.2"))) static uint32_t crc_by_sse42(uint32_t crc, const unsigned char *p, size_t n) {
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}
#endif

static uint32_t crc32c(const unsigned char *p, size_t n) {
#ifdef HAVE_SSE42_PATH
    if (use_sse42)
        return ~crc_by_sse42(0xFFFFFFFFu, p, n);
#endif
    return ~crc_by_table(0xFFFFFFFFu, p, n);
}

static unsigned char *put_u16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
    return p + 2;
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

/* 1 and the fields of a message the fast path takes, or 0 (no exception set) when the Python encoder must decide. */
static int fields_of(PyObject *item, PyObject **topic, long long *pkey, int *routed, PyObject **key,
                     PyObject **value, long long *timestamp) {
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 5)
        return 0;
    *topic = PyTuple_GET_ITEM(item, 0);
    PyObject *pk = PyTuple_GET_ITEM(item, 1);
    *key = PyTuple_GET_ITEM(item, 2);
    *value = PyTuple_GET_ITEM(item, 3);
    PyObject *ts = PyTuple_GET_ITEM(item, 4);
    if (!PyBytes_CheckExact(*topic) || !PyBytes_CheckExact(*value) || !PyLong_CheckExact(ts))
        return 0;
    if (*key != Py_None && !PyBytes_CheckExact(*key))
        return 0;
    Py_ssize_t topic_size = PyBytes_GET_SIZE(*topic);
    if (topic_size < 1 || topic_size > 0xFFFF || PyBytes_GET_SIZE(*value) > INT32_MAX)
        return 0;
    if (*key != Py_None && PyBytes_GET_SIZE(*key) > INT32_MAX)
        return 0;
    int overflow = 0;
    *timestamp = PyLong_AsLongLongAndOverflow(ts, &overflow);
    if (overflow)
        return 0;
    if (pk == Py_None) {
        *routed = 0;
        *pkey = 0;
    } else {
        if (!PyLong_CheckExact(pk))
            return 0;
        *pkey = PyLong_AsLongLongAndOverflow(pk, &overflow);
        if (overflow || *pkey < INT32_MIN || *pkey > INT32_MAX)
            return 0;
        *routed = 1;
    }
    return 1;
}

static PyObject *left_to_python(void) {
    if (PyErr_Occurred())
        PyErr_Clear();
    PyErr_SetString(PyExc_ValueError, "left to the Python encoder");
    return NULL;
}

static PyObject *encode_burst(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "encode_burst(first_sequence, messages)");
        return NULL;
    }
    unsigned long long first = 0;
    if (!PyLong_CheckExact(args[0]) || (first = PyLong_AsUnsignedLongLong(args[0])) == (unsigned long long)-1) {
        PyErr_Clear(); /* negative, too large, or 2**64 - 1 itself: the Python encoder decides */
        return left_to_python();
    }
    PyObject *seq = args[1];
    if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq))
        return left_to_python();
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n && first > UINT64_MAX - (unsigned long long)(n - 1))
        return left_to_python();
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *topic, *key, *value;
        long long pkey, timestamp;
        int routed;
        if (!fields_of(items[i], &topic, &pkey, &routed, &key, &value, &timestamp))
            return left_to_python();
        Py_ssize_t size = FRAME_SIZE + FIXED_SIZE + PyBytes_GET_SIZE(topic) + PyBytes_GET_SIZE(value) +
                          (key == Py_None ? 0 : PyBytes_GET_SIZE(key));
        if (total > PY_SSIZE_T_MAX - size)
            return left_to_python();
        total += size;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL)
        return NULL;
    /* No Python code can have run since the first pass (a bytes allocation starts no collection), but the second
       pass checks the sizes again rather than trust that. */
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        Py_DECREF(out);
        return left_to_python();
    }
    items = PySequence_Fast_ITEMS(seq);
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out), *end = p + total;
    uint64_t sequence = first;
    for (Py_ssize_t i = 0; i < n; i++, sequence++) {
        PyObject *topic, *key, *value;
        long long pkey, timestamp;
        int routed;
        int ok = fields_of(items[i], &topic, &pkey, &routed, &key, &value, &timestamp);
        Py_ssize_t topic_size = ok ? PyBytes_GET_SIZE(topic) : 0, value_size = ok ? PyBytes_GET_SIZE(value) : 0;
        Py_ssize_t key_size = !ok || key == Py_None ? -1 : PyBytes_GET_SIZE(key);
        Py_ssize_t body_size = FIXED_SIZE + topic_size + (key_size > 0 ? key_size : 0) + value_size;
        if (!ok || end - p < FRAME_SIZE + body_size) {
            Py_DECREF(out);
            return left_to_python();
        }
        unsigned char *frame = p, *body = p + FRAME_SIZE;
        p = put_u64(body, sequence);
        p = put_u64(p, (uint64_t)timestamp);
        *p++ = (unsigned char)routed;
        p = put_u32(p, (uint32_t)(int32_t)pkey);
        p = put_u16(p, (uint16_t)topic_size);
        p = put_u32(p, (uint32_t)(int32_t)key_size);
        p = put_u32(p, (uint32_t)(int32_t)value_size);
        memcpy(p, PyBytes_AS_STRING(topic), (size_t)topic_size);
        p += topic_size;
        if (key_size > 0) {
            memcpy(p, PyBytes_AS_STRING(key), (size_t)key_size);
            p += key_size;
        }
        memcpy(p, PyBytes_AS_STRING(value), (size_t)value_size);
        p += value_size;
        put_u32(frame, (uint32_t)body_size);
        put_u32(frame + 4, crc32c(body, (size_t)body_size));
    }
    if (p != end) {
        Py_DECREF(out);
        return left_to_python();
    }
    return out;
}

static PyObject *crc_of_buffer(PyObject *arg, int table) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *p = (const unsigned char *)view.buf;
    uint32_t crc = table ? ~crc_by_table(0xFFFFFFFFu, p, (size_t)view.len) : crc32c(p, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

static PyObject *crc32c_py(PyObject *module, PyObject *arg) { return crc_of_buffer(arg, 0); }

static PyObject *crc32c_table_py(PyObject *module, PyObject *arg) { return crc_of_buffer(arg, 1); }

static PyObject *hardware_crc(PyObject *module, PyObject *unused) { return PyBool_FromLong(use_sse42); }

static PyMethodDef methods[] = {
    {"encode_burst", (PyCFunction)(void (*)(void))encode_burst, METH_FASTCALL,
     "The records of a burst as one bytes (see bruce.proxy.spool.format.encode_burst); ValueError: use Python."},
    {"crc32c", crc32c_py, METH_O, "CRC-32C of a buffer (the encoder's own, for the tests)."},
    {"crc32c_table", crc32c_table_py, METH_O, "CRC-32C of a buffer by the table (the fallback, for the tests)."},
    {"hardware_crc", hardware_crc, METH_NOARGS, "Whether the CRC uses the CPU's CRC-32C instruction."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_speedups",
    .m_doc = "The spool's record encoder in C (see format.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    crc_init();
    return PyModule_Create(&module_def);
}
