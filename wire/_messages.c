/* Message sets (magic 0 and 1) decoded into columns: the half of the columnar decoder that reads Kafka's older log
entries, plain messages and compressed wrappers (see _columns.c for the rules; the checks, their order and reasons
are decode_message_set's). */
#include "_columns.h"

typedef struct {
    int64_t offset, timestamp;
    int magic, log_append;
} wrapper;

static int message_field(const unsigned char **p, const unsigned char *end, int64_t offset, int64_t *n) {
    if (end - *p < 4)
        return MALFORMED("message set: truncated length at offset %lld", (long long)offset);
    *n = (int32_t)get_u32(*p);
    *p += 4;
    if (*n == -1)
        return 0;
    if (*n < 0 || *n > end - *p)
        return MALFORMED("message set: length %lld does not fit the message at offset %lld", (long long)*n,
                         (long long)offset);
    return 0;
}

static int message_set(state *s, const unsigned char *data, Py_ssize_t total, const wrapper *w);

/* The message in data[pos:end] (after its offset and size) with offset `offset`; `w`: the wrapper it sits in. On
   success *out holds the top-level message's facts (when w is NULL). */
static int message(state *s, const unsigned char *data, Py_ssize_t pos, Py_ssize_t end, int64_t offset,
                   const wrapper *w, batch_facts *out) {
    uint32_t crc = get_u32(data + pos);
    int magic = (int8_t)data[pos + 4], attributes = data[pos + 5];
    if (!s->writing && crc != bruce_wire_crc32(0, data + pos + 4, (size_t)(end - pos - 4)))
        return fail("CRC", "message set: CRC mismatch in the message at offset %lld", (long long)offset);
    if (magic != 0 && magic != 1)
        return fail("MAGIC", "message set: unknown magic %d at offset %lld", magic, (long long)offset);
    if (w != NULL && magic != w->magic)
        return MALFORMED("message set: magic %d inside a magic-%d wrapper", magic, w->magic);
    const unsigned char *p = data + pos + 6, *stop = data + end;
    int64_t timestamp = -1, key_length, value_length;
    if (magic) {
        if (stop - p < 8)
            return MALFORMED("message set: truncated timestamp at offset %lld", (long long)offset);
        timestamp = get_i64(p);
        p += 8;
    }
    const unsigned char *key = p + 4;
    if (message_field(&p, stop, offset, &key_length) < 0)
        return -1;
    p += key_length < 0 ? 0 : key_length;
    const unsigned char *value = p + 4;
    if (message_field(&p, stop, offset, &value_length) < 0)
        return -1;
    p += value_length < 0 ? 0 : value_length;
    if (p != stop)
        return MALFORMED("message set: %zd stray bytes in the message at offset %lld", stop - p, (long long)offset);
    int codec = attributes & 0x07, log_append = magic && (attributes & 0x08);
    if (out != NULL)
        *out = (batch_facts){.position = 0, .base_offset = offset, .last_offset = offset, .base_ts = timestamp,
                             .max_ts = timestamp, .producer_id = -1, .leader_epoch = -1, .base_sequence = -1,
                             .crc = crc, .attributes = (int16_t)attributes, .producer_epoch = -1,
                             .magic = (int8_t)magic};
    if (codec == 0) {
        if (s->rows == INT32_MAX)
            return MALFORMED("more than 2**31 - 1 records");
        if (binary_put(&s->keys, key, key_length) < 0 || binary_put(&s->values, value, value_length) < 0)
            return -1;
        PUT(&s->header_offsets, int32_t, s->headers);
        return put_row(s, offset, timestamp, log_append);
    }
    if (w != NULL)
        return MALFORMED("message set: nested compression at offset %lld", (long long)offset);
    if (codec >= 4)
        return fail("UNKNOWN_CODEC", "message set: codec %d is not valid with magic %d", codec, magic);
    if (value_length < 0)
        return MALFORMED("message set: compressed wrapper at offset %lld has a null value", (long long)offset);
    Py_ssize_t at = value - data;
    PyObject *inner = decompressed(s, codec, data, at, at + value_length, magic == 0);
    if (inner == NULL)
        return -1;
    Py_ssize_t first = s->rows;
    s->max_row_offset = INT64_MIN;
    wrapper here = {offset, timestamp, magic, log_append};
    if (message_set(s, (const unsigned char *)PyBytes_AS_STRING(inner), PyBytes_GET_SIZE(inner), &here) < 0)
        return -1;
    if (magic == 1 && s->rows > first) { /* inner offsets made absolute, and the wrapper's log-append time */
        int64_t last = s->last_row_offset, moved;
        /* offset - last, exactly (it fits 64 bits unsigned); 0 for a wrapper written with offset 0 by a producer,
           whose inner offsets stay. The addition is checked in infinite precision, on the largest inner offset. */
        uint64_t shift = last > offset ? 0 : (uint64_t)offset - (uint64_t)last;
        if (__builtin_add_overflow(s->max_row_offset, shift, &moved))
            return MALFORMED("a record's offset does not fit 64 bits");
        if (s->writing) {
            int64_t *offsets = (int64_t *)s->offsets.p;
            for (Py_ssize_t i = first; i < s->rows; i++) {
                offsets[i] += (int64_t)shift; /* no overflow: checked above (two's complement wraps to the sum) */
                if (log_append) {
                    ((int64_t *)s->timestamps.p)[i] = timestamp;
                    s->types.p[i] = 1;
                }
            }
        }
    }
    if (out != NULL && s->writing && s->rows > first)
        out->base_offset = ((int64_t *)s->offsets.p)[first];
    return 0;
}

/* The messages inside a compressed wrapper: data[0:total] must hold whole messages only. */
static int message_set(state *s, const unsigned char *data, Py_ssize_t total, const wrapper *w) {
    Py_ssize_t pos = 0;
    while (pos < total) {
        if (total - pos < 12)
            return MALFORMED("message set: %zd stray bytes at the end of a compressed set", total - pos);
        int64_t offset = get_i64(data + pos), size = (int32_t)get_u32(data + pos + 8);
        if (size < 14)
            return MALFORMED("message set: message size %lld at byte %zd is too small", (long long)size, pos);
        if (size > total - pos - 12)
            return MALFORMED("message set: message at byte %zd runs past the end of a compressed set", pos);
        if (message(s, data, pos + 12, pos + 12 + (Py_ssize_t)size, offset, w, NULL) < 0)
            return -1;
        pos += 12 + (Py_ssize_t)size;
    }
    return 0;
}

int bruce_wire_message_entry(state *s, const unsigned char *data, Py_ssize_t start, Py_ssize_t end) {
    int64_t size = end - start - 12;
    if (size < 14)
        return MALFORMED("message set: message size %lld at byte 0 is too small", (long long)size);
    batch_facts f;
    if (message(s, data, start + 12, end, get_i64(data + start), NULL, &f) < 0)
        return -1;
    f.position = start;
    return put_batch(s, &f);
}

