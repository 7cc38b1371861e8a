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
/* The same for a name (a file name or path), one to one so that a row
 * names one file: newline, carriage return, tab and the backslash are \xNN
 * too (a newline must not read as a space, and a name holding the text
 * "\x09" must not read as one holding a tab). cr_text_escape leaves its
 * output unchanged; cr_text_unescape_name gives the name back. */
size_t cr_text_escape_name(const char *in, size_t n, char *out, size_t cap);
/* cr_text_escape_name of the whole string into a buffer that always holds
 * it (4 bytes a byte): malloc'd, NULL when out of memory. */
char *cr_text_escape_name_dup(const char *s);
/* The name cr_text_escape_name escaped (\xNN back to its byte; a \x00 is
 * kept as text): malloc'd, NULL when out of memory. */
char *cr_text_unescape_name(const char *s);
/* The same on a NUL-terminated string in a buffer of cap bytes. */
void cr_text_escape_inplace(char *s, size_t cap);

#endif
