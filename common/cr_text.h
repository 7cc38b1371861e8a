/* cr_text.h — making text that a candidate controls safe to show: in a
 * terminal, results.csv, run.json, markdown and html. What a candidate
 * writes (its output, a compiler's message about its source, a sidecar's
 * fields, even its file name) reaches the user only through these. */
#ifndef CR_TEXT_H
#define CR_TEXT_H

#include <stddef.h>

/* Copies in[0..n) to out (at most cap-1 bytes and a NUL), with newline,
 * carriage return and tab as a space, every other C0 control, DEL, C1
 * control (U+0080..U+009F), byte of invalid UTF-8, and bidirectional
 * override or isolate (U+202A..U+202E, U+2066..U+2069) written as \xNN per
 * byte; valid printable UTF-8 and backslashes are kept. An escape or a UTF-8
 * sequence is never cut. Escaping escaped text changes nothing. Returns the
 * bytes written (without the NUL). */
size_t cr_text_escape(const char *in, size_t n, char *out, size_t cap);
/* The same for a name (a file name or path): newline, carriage return and
 * tab are \xNN too (a newline in a file name must not read as a space). Idempotent, and cr_text_escape leaves its
 * output unchanged. */
size_t cr_text_escape_name(const char *in, size_t n, char *out, size_t cap);
/* The same on a NUL-terminated string in a buffer of cap bytes. */
void cr_text_escape_inplace(char *s, size_t cap);

#endif
