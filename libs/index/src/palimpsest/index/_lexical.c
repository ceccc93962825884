/* The chunker's hot loops in C, each giving exactly what its Python form in palimpsest.index.tokens
 * gives: ``compounds`` (the identifier compounds of a text), ``expand`` (one compound's tokens),
 * ``lexical_vector`` and ``code_vector`` (the two steps from a chunk's text to its vector at once).
 *
 * ``compounds`` is ``_COMPOUND.findall(text)`` for ASCII text -- runs of [A-Za-z0-9_$] joined by
 * ``::``, ``.``, ``/``, ``\`` or ``-`` where another run follows -- and NotImplemented for any other
 * text (the pattern's \w is Unicode-aware there). ``expand`` is ``_expand`` for an ASCII compound:
 * the whole joined, each segment joined and each segment's words (case and digit boundaries),
 * lower-cased, kept from 2 to MAX_TOKEN_BYTES characters; NotImplemented for any other compound.
 *
 * A chunk's tokens (code_tokens output: ASCII words separated by spaces) become tsvector's binary
 * form: the lexeme count (int32), then each distinct word in bytewise order, NUL-terminated, with
 * its position count (uint16) and its positions (uint16 each, ascending, 1-based, weight D).
 * None where PostgreSQL's parser could read the text otherwise (see tokens.lexical_vector), and
 * NotImplemented where only the Python implementation can say (a \x1c-\x1f character, which
 * str.split treats as whitespace and bytes.split does not). Words are grouped with a small open
 * addressing table (one per call), then only the distinct words are sorted.
 *
 * ``code_vector`` is ``lexical_vector(code_tokens(text))`` for ASCII text: the compound scan and
 * the expansion write each compound's tokens into one buffer, which becomes the vector, so the
 * chunker never builds the tokens as Python strings (NotImplemented for other text). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POSITION 16383 /* the highest position tsvector stores (MAXENTRYPOS - 1) */
#define MAX_POSITIONS 255  /* positions to_tsvector keeps per lexeme (MAXNUMPOS - 1) */

typedef struct {
    const char *at;
    uint64_t hash;
    uint64_t key; /* the first eight bytes, big-endian, zero-padded: most comparisons end here */
    uint32_t len;
    uint32_t count;
    uint32_t first; /* index of the first occurrence in `next`, chained in order */
    uint32_t last;
} Lexeme;

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static int is_upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
static int is_lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static int is_word(unsigned char c) { return is_upper(c) || is_lower(c) || is_digit(c) || c == '_' || c == '$'; }

/* The length of the compound separator at s[i] (``::``, or one of ``./\-``), or 0 where there is none */
static Py_ssize_t separator(const unsigned char *s, Py_ssize_t i, Py_ssize_t size) {
    if (i + 1 < size && s[i] == ':' && s[i + 1] == ':') return 2;
    return i < size && (s[i] == '.' || s[i] == '/' || s[i] == '\\' || s[i] == '-');
}

/* Whether ``arg`` is a str, setting TypeError (naming it ``what``) where it is not */
static int is_str(PyObject *arg, const char *what) {
    if (PyUnicode_Check(arg)) return 1;
    PyErr_Format(PyExc_TypeError, "%s must be a str", what);
    return 0;
}

/* digits, 'e', a digit at the start of a word: a number in scientific notation to the parser */
static int exponent_like(const char *w, uint32_t len) {
    uint32_t i = 0;
    while (i < len && is_digit((unsigned char)w[i])) i++;
    return i > 0 && i + 1 < len && w[i] == 'e' && is_digit((unsigned char)w[i + 1]);
}

static int bytewise(const void *a, const void *b) {
    const Lexeme *x = *(const Lexeme *const *)a, *y = *(const Lexeme *const *)b;
    /* keys that differ order their words (a shorter word's padding is below any byte it lacks) */
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    int c = memcmp(x->at, y->at, x->len < y->len ? x->len : y->len);
    if (c) return c;
    return x->len < y->len ? -1 : (x->len > y->len);
}

static uint64_t prefix_key(const char *s, uint32_t len) {
    uint64_t key = 0;
    for (uint32_t i = 0; i < 8; i++) key = key << 8 | (i < len ? (unsigned char)s[i] : 0);
    return key;
}

static uint64_t hash(const char *s, uint32_t len) {
    uint64_t h = 1469598103934665603ULL;
    for (uint32_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

/* The binary tsvector of ``size`` bytes of ASCII words separated by whitespace (no \x1c-\x1f), or
 * None where PostgreSQL's parser could read them otherwise; NULL with an exception set on failure */
static PyObject *vector_of(const char *text, Py_ssize_t size) {
    /* at most MAX_POSITION words, each at least one character and one separator */
    Py_ssize_t most = size / 2 + 1 < MAX_POSITION + 1 ? size / 2 + 1 : MAX_POSITION + 1;
    size_t slots = 16;
    while (slots < (size_t)most * 2) slots <<= 1;
    Lexeme *lexemes = PyMem_Malloc(sizeof(Lexeme) * (size_t)most);
    Lexeme **table = PyMem_Calloc(slots, sizeof(Lexeme *));
    uint32_t *next = PyMem_Malloc(sizeof(uint32_t) * ((size_t)most + 1));
    PyObject *result = NULL;
    if (!lexemes || !table || !next) {
        PyErr_NoMemory();
        goto done;
    }
    uint32_t n = 0, distinct = 0;
    Py_ssize_t bytes = 4;
    for (Py_ssize_t i = 0; i < size;) {
        while (i < size && is_space((unsigned char)text[i])) i++;
        if (i >= size) break;
        Py_ssize_t start = i;
        while (i < size && !is_space((unsigned char)text[i])) i++;
        const char *word = text + start;
        uint32_t len = (uint32_t)(i - start);
        if (n == MAX_POSITION || exponent_like(word, len)) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        n++; /* this word's position */
        uint64_t h = hash(word, len);
        size_t slot = (size_t)h & (slots - 1);
        Lexeme *found;
        while ((found = table[slot]) != NULL
               && (found->hash != h || found->len != len || memcmp(found->at, word, len) != 0))
            slot = (slot + 1) & (slots - 1);
        if (found == NULL) {
            found = table[slot] = &lexemes[distinct++];
            found->at = word;
            found->hash = h;
            found->key = prefix_key(word, len);
            found->len = len;
            found->count = 0;
            found->first = n;
            bytes += len + 3;
        } else {
            next[found->last] = n;
        }
        if (++found->count > MAX_POSITIONS) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        found->last = n;
        next[n] = 0;
        bytes += 2;
    }
    /* the distinct lexemes in bytewise order: reuse the table's first slots as the sort array */
    for (uint32_t d = 0; d < distinct; d++) table[d] = &lexemes[d];
    qsort(table, distinct, sizeof(Lexeme *), bytewise);
    result = PyBytes_FromStringAndSize(NULL, bytes);
    if (result == NULL) goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    *out++ = (unsigned char)(distinct >> 24);
    *out++ = (unsigned char)(distinct >> 16);
    *out++ = (unsigned char)(distinct >> 8);
    *out++ = (unsigned char)distinct;
    for (uint32_t d = 0; d < distinct; d++) {
        const Lexeme *lexeme = table[d];
        memcpy(out, lexeme->at, lexeme->len);
        out += lexeme->len;
        *out++ = 0;
        *out++ = (unsigned char)(lexeme->count >> 8);
        *out++ = (unsigned char)lexeme->count;
        for (uint32_t p = lexeme->first; p != 0; p = next[p]) {
            *out++ = (unsigned char)(p >> 8);
            *out++ = (unsigned char)p;
        }
    }
done:
    PyMem_Free(lexemes);
    PyMem_Free(table);
    PyMem_Free(next);
    return result;
}

static PyObject *lexical_vector(PyObject *Py_UNUSED(self), PyObject *arg) {
    if (!is_str(arg, "tokens")) return NULL;
    if (!PyUnicode_IS_ASCII(arg)) Py_RETURN_NONE;
    Py_ssize_t size = PyUnicode_GET_LENGTH(arg);
    const char *text = (const char *)PyUnicode_1BYTE_DATA(arg);
    for (Py_ssize_t i = 0; i < size; i++)
        if (text[i] >= 0x1c && text[i] <= 0x1f) Py_RETURN_NOTIMPLEMENTED;
    return vector_of(text, size);
}

/* The next compound of ASCII ``text`` at or after *i: its start, *i moved to its end; -1 at the end */
static Py_ssize_t next_compound(const unsigned char *text, Py_ssize_t size, Py_ssize_t *at) {
    Py_ssize_t i = *at;
    while (i < size && !is_word(text[i])) i++;
    if (i >= size) return -1;
    Py_ssize_t start = i;
    while (i < size && is_word(text[i])) i++;
    for (;;) { /* a separator extends the compound only where a run follows it */
        Py_ssize_t j = i + separator(text, i, size);
        if (j == i || j >= size || !is_word(text[j])) break;
        for (i = j; i < size && is_word(text[i]);) i++;
    }
    *at = i;
    return start;
}

static PyObject *compounds(PyObject *Py_UNUSED(self), PyObject *arg) {
    if (!is_str(arg, "text")) return NULL;
    if (!PyUnicode_IS_ASCII(arg)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t size = PyUnicode_GET_LENGTH(arg);
    const unsigned char *text = PyUnicode_1BYTE_DATA(arg);
    PyObject *found = PyList_New(0);
    if (found == NULL) return NULL;
    for (Py_ssize_t i = 0, start; (start = next_compound(text, size, &i)) >= 0;) {
        PyObject *compound = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, text + start, i - start);
        if (compound == NULL || PyList_Append(found, compound) < 0) {
            Py_XDECREF(compound);
            Py_DECREF(found);
            return NULL;
        }
        Py_DECREF(compound);
    }
    return found;
}

#define MIN_TOKEN_CHARS 2
#define MAX_TOKEN_BYTES 2046

/* The next match of [A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+ in s[*at..end) (re.findall's order):
 * its start and length, or 0 when there is none. */
static Py_ssize_t next_word(const unsigned char *s, Py_ssize_t end, Py_ssize_t *at) {
    for (Py_ssize_t i = *at; i < end; i++) {
        Py_ssize_t j = i;
        if (is_upper(s[i])) {
            while (j < end && is_upper(s[j])) j++;
            if (j >= end || !is_lower(s[j])) { *at = i; return j - i; }
            if (j - i >= 2) { *at = i; return j - i - 1; } /* HTTPServer: HTTP, then Server */
            for (j = i + 1; j < end && is_lower(s[j]);) j++; /* Server */
            *at = i;
            return j - i;
        }
        if (is_lower(s[i]) || is_digit(s[i])) {
            int digits = is_digit(s[i]);
            while (j < end && (digits ? is_digit(s[j]) : is_lower(s[j]))) j++;
            *at = i;
            return j - i;
        }
    }
    return 0;
}

typedef struct {
    char *data;
    Py_ssize_t len;
    Py_ssize_t count;
} Out; /* space-joined tokens; room for them is allocated up front */

static void put(Out *out, const char *token, Py_ssize_t len) {
    if (len < MIN_TOKEN_CHARS || len > MAX_TOKEN_BYTES) return;
    if (out->count++) out->data[out->len++] = ' ';
    memcpy(out->data + out->len, token, (size_t)len);
    out->len += len;
}

/* Room for expanding the compounds of a text of ``size`` characters (Work_new, Work_free) */
typedef struct {
    char *words;              /* a compound's words, lower-cased, end to end (its whole form) */
    Py_ssize_t *word_start;   /* where each word begins in ``words`` */
    Py_ssize_t *segment_word; /* each segment's first word */
    Out out;                  /* the tokens */
} Work;

/* At most the tokens' bytes with a separator after each of a compound of ``size`` characters
 * (the whole, then per segment its joined form and its words: at most 3 * size characters and a
 * separator per token of two or more), or of a text of such compounds */
#define TOKEN_ROOM(size) ((size_t)(size) * 5 + 8)

/* Allocates ``work`` for a text of ``size`` characters; 0 with MemoryError set where it cannot
 * (Work_free releases it either way) */
static int Work_new(Work *work, Py_ssize_t size) {
    work->words = PyMem_Malloc((size_t)size + 1);
    work->word_start = PyMem_Malloc(sizeof(Py_ssize_t) * ((size_t)size + 2));
    work->segment_word = PyMem_Malloc(sizeof(Py_ssize_t) * ((size_t)size + 2));
    work->out = (Out){PyMem_Malloc(TOKEN_ROOM(size)), 0, 0};
    if (work->words && work->word_start && work->segment_word && work->out.data) return 1;
    PyErr_NoMemory();
    return 0;
}

static void Work_free(Work *work) {
    PyMem_Free(work->words);
    PyMem_Free(work->word_start);
    PyMem_Free(work->segment_word);
    PyMem_Free(work->out.data);
}

/* tokens._expand's tokens of the ASCII compound s[0..size), put in ``out`` (empty); the size
 * _expand gives (their bytes + 1, or 0 for a lower-case word too long to keep) */
static Py_ssize_t expand_into(const unsigned char *s, Py_ssize_t size, Out *out, const Work *work) {
    int plain = size >= MIN_TOKEN_CHARS;
    for (Py_ssize_t i = 0; plain && i < size; i++) plain = is_lower(s[i]);
    if (plain) { /* a keyword or a lower-case name: itself */
        if (size > MAX_TOKEN_BYTES) return 0;
        put(out, (const char *)s, size);
        return size + 1;
    }
    char *words = work->words;
    Py_ssize_t *word_start = work->word_start, *segment_word = work->segment_word;
    Py_ssize_t nwords = 0, nsegments = 0, length = 0;
    for (Py_ssize_t start = 0; start <= size;) {
        /* a segment ends at a separator (re.split(r"::|[./\\-]")) or the end */
        Py_ssize_t stop = start, gap = 0;
        for (; stop < size; stop++) /* (no word character is part of a separator) */
            if (!is_word(s[stop]) && (gap = separator(s, stop, size)) != 0) break;
        Py_ssize_t next = stop < size ? stop + gap : size + 1;
        Py_ssize_t first = nwords, at = start, len;
        while ((len = next_word(s, stop, &at)) > 0) {
            word_start[nwords++] = length;
            for (Py_ssize_t k = 0; k < len; k++, at++)
                words[length++] = (char)(is_upper(s[at]) ? s[at] + 32 : s[at]);
        }
        if (nwords > first) segment_word[nsegments++] = first; /* an empty segment yields nothing */
        start = next;
    }
    word_start[nwords] = length;
    segment_word[nsegments] = nwords;
    if (nsegments > 1) put(out, words, length);
    for (Py_ssize_t g = 0; g < nsegments; g++) {
        Py_ssize_t first = segment_word[g], last = segment_word[g + 1];
        put(out, words + word_start[first], word_start[last] - word_start[first]);
        if (last - first > 1)
            for (Py_ssize_t w = first; w < last; w++) put(out, words + word_start[w], word_start[w + 1] - word_start[w]);
    }
    return out->len + 1;
}

/* tokens._expand for an ASCII compound: (space-joined tokens, token count, their bytes + 1) */
static PyObject *expand(PyObject *Py_UNUSED(self), PyObject *arg) {
    if (!is_str(arg, "compound")) return NULL;
    if (!PyUnicode_IS_ASCII(arg)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t size = PyUnicode_GET_LENGTH(arg);
    Work work;
    PyObject *result = NULL;
    if (Work_new(&work, size)) {
        Py_ssize_t bytes = expand_into(PyUnicode_1BYTE_DATA(arg), size, &work.out, &work);
        PyObject *text = PyUnicode_FromStringAndSize(work.out.data, work.out.len);
        if (text != NULL) result = Py_BuildValue("(Nnn)", text, work.out.count, bytes);
    }
    Work_free(&work);
    return result;
}

#define MAX_TOKENS 12000
#define MAX_DOCUMENT_BYTES (512 * 1024)

/* lexical_vector(code_tokens(text)) for ASCII text, without the tokens as a str: each compound's
 * tokens go straight into one buffer, up to the compound that would take the document past
 * MAX_TOKENS tokens or MAX_DOCUMENT_BYTES bytes (code_tokens' cut); NotImplemented for other text */
static PyObject *code_vector(PyObject *Py_UNUSED(self), PyObject *arg) {
    if (!is_str(arg, "text")) return NULL;
    if (!PyUnicode_IS_ASCII(arg)) Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t size = PyUnicode_GET_LENGTH(arg);
    const unsigned char *text = PyUnicode_1BYTE_DATA(arg);
    Work work;
    PyObject *result = NULL;
    if (Work_new(&work, size)) {
        Out *out = &work.out;
        Py_ssize_t tokens = 0, bytes = 0;
        for (Py_ssize_t i = 0, start; (start = next_compound(text, size, &i)) >= 0;) {
            /* this compound's tokens, after the separator they need if any come before them */
            Out one = {out->data + out->len + (out->count > 0), 0, 0};
            bytes += expand_into(text + start, i - start, &one, &work);
            tokens += one.count;
            if (tokens > MAX_TOKENS || bytes > MAX_DOCUMENT_BYTES) break;
            if (one.count == 0) continue;
            if (out->count > 0) out->data[out->len++] = ' ';
            out->len += one.len;
            out->count += one.count;
        }
        result = vector_of(out->data, out->len);
    }
    Work_free(&work);
    return result;
}

static PyMethodDef methods[] = {
    {"compounds", compounds, METH_O, "_COMPOUND.findall(text) for ASCII text; NotImplemented otherwise."},
    {"expand", expand, METH_O, "tokens._expand(compound) for an ASCII compound; NotImplemented otherwise."},
    {"lexical_vector", lexical_vector, METH_O,
     "to_tsvector('simple', tokens) in tsvector's binary form; None or NotImplemented where it cannot say."},
    {"code_vector", code_vector, METH_O,
     "lexical_vector(code_tokens(text)) for ASCII text; NotImplemented otherwise."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_lexical", .m_doc = NULL, .m_size = -1, .m_methods = methods,
};

/* Raised whenever a function is added or changes what it returns: tokens.py ignores a module
 * built from another version of this file (a checkout updated without rebuilding it). */
#define VERSION 3

PyMODINIT_FUNC PyInit__lexical(void) {
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "VERSION", VERSION) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
