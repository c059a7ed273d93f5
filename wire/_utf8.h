/* Strict UTF-8 as Python's decoder accepts it, for the C code that must refuse what Python refuses (_columns.c: header
names read; _encode.c: header names written). */
#ifndef BRUCE_WIRE_UTF8_H
#define BRUCE_WIRE_UTF8_H

#include <Python.h>

/* No overlong forms, surrogates or code points past U+10FFFF. */
static inline int valid_utf8(const unsigned char *p, Py_ssize_t n) {
    const unsigned char *end = p + n;
    while (p < end) {
        unsigned c = *p++;
        if (c < 0x80)
            continue;
        int more;
        unsigned low = 0x80, high = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            more = 1;
        else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            if (c == 0xE0)
                low = 0xA0;
            if (c == 0xED)
                high = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            if (c == 0xF0)
                low = 0x90;
            if (c == 0xF4)
                high = 0x8F;
        } else
            return 0;
        if (end - p < more || p[0] < low || p[0] > high)
            return 0;
        for (int i = 1; i < more; i++)
            if (p[i] < 0x80 || p[i] > 0xBF)
                return 0;
        p += more;
    }
    return 1;
}

#endif
