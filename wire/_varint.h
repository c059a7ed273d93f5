/* Kafka's varints as the C encoders write them (_speedups.c, _encode.c): zigzag for signed values, then LEB128. */
#ifndef BRUCE_WIRE_VARINT_H
#define BRUCE_WIRE_VARINT_H

#include <Python.h>
#include <stdint.h>

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline Py_ssize_t uvarint_size(uint64_t u) {
    Py_ssize_t n = 1;
    while (u >= 0x80) {
        u >>= 7;
        n++;
    }
    return n;
}

static inline unsigned char *put_uvarint(unsigned char *p, uint64_t u) {
    while (u >= 0x80) {
        *p++ = (unsigned char)(u | 0x80);
        u >>= 7;
    }
    *p++ = (unsigned char)u;
    return p;
}

#endif
