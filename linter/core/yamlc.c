/* ailint.core.yamlc: libyaml's events straight to plain data and a position table.
 *
 * The loader's common case, without PyYAML's composer: that composer makes a Python node and
 * two Python marks for every value, which `yamldata.Converter` then turns into the data and
 * the position table (`path -> (key line, key col, key end line, key end col, line, col, end
 * line, end col)`), two thirds of a cold run's parse. Here the same libyaml events become the
 * same dicts, lists, strings and tuples in one pass.
 *
 * It reads only what it is sure to read as `Converter` does, and declines everything else:
 * a stream with an anchor, an alias, a tag, a key that is not a plain string or is repeated,
 * a merge key, a value longer than the scalar limit, nesting deeper than the depth limit,
 * text that is not valid UTF-8, or any libyaml error. `load` then returns None and the caller
 * reads the text the way it always has (`ailint.engine.load`), so a declined text gets every
 * finding and message it got before. Plain scalars whose first character can start a
 * non-string in YAML 1.1 go to `typed`, the Python function `Converter` uses for them, so
 * YAML 1.1's typing is defined once (a memo keeps what it gave for short values: 17,000
 * calls on the corpus, for 1,900 values).
 *
 * The position table is not built while reading: each node's eight numbers are written to a
 * flat array of 32-bit integers in the order of a walk of the data (a collection before its
 * children, a mapping's keys in their order), 32 bytes a node where the table's path tuple,
 * number tuple and dict entry take about 200 and most of a reading's time. `table(data,
 * packed)` makes the table from the two, exactly as `Converter` fills it, when a span is first
 * asked of the document (a run asks it of about one object in seven: those with findings).
 * No node is shared between paths in a document read here (no alias), so the walk meets
 * every node once.
 *
 * Marks: libyaml counts lines and columns in characters, from 0, as PyYAML reports them; the
 * table holds them from 1, as `Converter` writes them.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <yaml.h>

#define FIELDS 8 /* key line, key col, key end line, key end col, line, col, end line, end col */
/* Typed values of at most this many characters are kept in the caller's memo, which is emptied
 * when it holds MEMO_LIMIT of them (a run of distinct values pays no more, as `resolve_plain`). */
#define MEMO_CHARS 16
#define MEMO_LIMIT 4096

typedef struct {
    yaml_parser_t parser;
    int32_t *packed;      /* the current document's nodes, FIELDS numbers each, in walk order */
    Py_ssize_t nodes, capacity;
    PyObject *typed;      /* typed(value: str) -> Any, for plain scalars that may not be strings */
    PyObject *memo;       /* value -> typed(value), for short values (`true`, `1`, `8080` repeat) */
    const char *starts;   /* the first characters that can start a non-string (ASCII) */
    long max_depth;
    Py_ssize_t max_scalar;
    Py_ssize_t interned;  /* a string value of at most this many characters is interned */
    int declined;         /* 1: not ours to read; no Python error is set */
} Reader;

static int next_event(Reader *r, yaml_event_t *ev) {
    if (!yaml_parser_parse(&r->parser, ev)) {
        r->declined = 1;
        return 0;
    }
    return 1;
}

/* A node's slot in the packed array (its numbers written by `place`); -1 when out of memory. */
static Py_ssize_t reserve(Reader *r) {
    if (r->nodes == r->capacity) {
        Py_ssize_t capacity = r->capacity ? 2 * r->capacity : 256;
        int32_t *grown = PyMem_Realloc(r->packed, (size_t)capacity * FIELDS * sizeof(int32_t));
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        r->packed = grown, r->capacity = capacity;
    }
    return r->nodes++;
}

static void place(Reader *r, Py_ssize_t slot, long kl, long kc, long kel, long kec, const yaml_mark_t *s,
                  const yaml_mark_t *e) {
    int32_t *p = r->packed + slot * FIELDS;
    p[0] = (int32_t)kl, p[1] = (int32_t)kc, p[2] = (int32_t)kel, p[3] = (int32_t)kec;
    p[4] = (int32_t)s->line + 1, p[5] = (int32_t)s->column + 1, p[6] = (int32_t)e->line + 1, p[7] = (int32_t)e->column + 1;
}

static PyObject *extended(PyObject *path, PyObject *item) {
    Py_ssize_t n = PyTuple_GET_SIZE(path);
    PyObject *out = PyTuple_New(n + 1);
    if (out == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(path, i);
        Py_INCREF(x);
        PyTuple_SET_ITEM(out, i, x);
    }
    Py_INCREF(item);
    PyTuple_SET_ITEM(out, n, item);
    return out;
}

static PyObject *decoded(Reader *r, const yaml_event_t *ev) {
    PyObject *s = PyUnicode_DecodeUTF8((const char *)ev->data.scalar.value, (Py_ssize_t)ev->data.scalar.length, "strict");
    if (s == NULL) {
        PyErr_Clear();
        r->declined = 1;
    }
    return s;
}

/* The value of a scalar event (not a key). */
static PyObject *scalar_value(Reader *r, const yaml_event_t *ev) {
    PyObject *s = decoded(r, ev);
    if (s == NULL) return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (n > r->max_scalar) {
        Py_DECREF(s);
        r->declined = 1;
        return NULL;
    }
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE || ev->data.scalar.style == YAML_ANY_SCALAR_STYLE) {
        unsigned char first = ev->data.scalar.length ? ev->data.scalar.value[0] : 0;
        if (first == 0 || (first < 128 && strchr(r->starts, first) != NULL)) {
            PyObject *v = n <= MEMO_CHARS ? PyDict_GetItemWithError(r->memo, s) : NULL;
            if (v != NULL) {
                Py_DECREF(s);
                Py_INCREF(v);
                return v;
            }
            if (PyErr_Occurred() || (v = PyObject_CallOneArg(r->typed, s)) == NULL) {
                Py_DECREF(s);
                return NULL;
            }
            if (n <= MEMO_CHARS) {
                if (PyDict_GET_SIZE(r->memo) >= MEMO_LIMIT) PyDict_Clear(r->memo);
                if (PyDict_SetItem(r->memo, s, v) < 0) {
                    Py_DECREF(s);
                    Py_DECREF(v);
                    return NULL;
                }
            }
            Py_DECREF(s);
            return v;
        }
    }
    if (n <= r->interned) PyUnicode_InternInPlace(&s);
    return s;
}

static PyObject *compose(Reader *r, yaml_event_t *ev, long kl, long kc, long kel, long kec, long depth);

static int plain_untagged(const yaml_event_t *ev) {
    switch (ev->type) {
        case YAML_SCALAR_EVENT:
            return ev->data.scalar.anchor == NULL && ev->data.scalar.tag == NULL;
        case YAML_SEQUENCE_START_EVENT:
            return ev->data.sequence_start.anchor == NULL && ev->data.sequence_start.tag == NULL;
        case YAML_MAPPING_START_EVENT:
            return ev->data.mapping_start.anchor == NULL && ev->data.mapping_start.tag == NULL;
        default:
            return 0; /* an alias, or an event that cannot start a node */
    }
}

static int is_plain(const yaml_event_t *ev) {
    return ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE || ev->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

/* A mapping or a list from its start event to its end event. Its slot comes before its
 * children's (the walk's order), its numbers once its end is read. */
static PyObject *collection(Reader *r, yaml_event_t *start, long kl, long kc, long kel, long kec, long depth) {
    int is_map = start->type == YAML_MAPPING_START_EVENT;
    yaml_event_type_t end = is_map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
    yaml_mark_t sm = start->start_mark;
    if (kl < 0) {
        kl = (long)sm.line + 1, kc = (long)sm.column + 1, kel = kl, kec = kc;
    }
    Py_ssize_t slot = reserve(r);
    if (slot < 0) return NULL;
    PyObject *out = is_map ? PyDict_New() : PyList_New(0);
    if (out == NULL) return NULL;
    yaml_event_t ev;
    for (;;) {
        if (!next_event(r, &ev)) goto fail;
        if (ev.type == end) {
            place(r, slot, kl, kc, kel, kec, &sm, &ev.end_mark);
            yaml_event_delete(&ev);
            return out;
        }
        if (!is_map) {
            PyObject *value = compose(r, &ev, -1, 0, 0, 0, depth + 1);
            if (value == NULL || PyList_Append(out, value) < 0) {
                Py_XDECREF(value);
                goto fail;
            }
            Py_DECREF(value);
            continue;
        }
        if (ev.type != YAML_SCALAR_EVENT || !plain_untagged(&ev) ||
            (is_plain(&ev) && ev.data.scalar.length == 2 && memcmp(ev.data.scalar.value, "<<", 2) == 0)) {
            yaml_event_delete(&ev);
            r->declined = 1; /* a complex key, an anchor or a tag on a key, an alias, a merge key */
            goto fail;
        }
        PyObject *key = decoded(r, &ev);
        long k1 = (long)ev.start_mark.line + 1, k2 = (long)ev.start_mark.column + 1;
        long k3 = (long)ev.end_mark.line + 1, k4 = (long)ev.end_mark.column + 1;
        yaml_event_delete(&ev);
        if (key == NULL) goto fail;
        PyUnicode_InternInPlace(&key);
        int seen = PyDict_Contains(out, key);
        if (seen != 0) {
            Py_DECREF(key);
            if (seen > 0) r->declined = 1; /* a repeated key */
            goto fail;
        }
        if (!next_event(r, &ev)) {
            Py_DECREF(key);
            goto fail;
        }
        PyObject *value = compose(r, &ev, k1, k2, k3, k4, depth + 1);
        if (value == NULL || PyDict_SetItem(out, key, value) < 0) {
            Py_DECREF(key);
            Py_XDECREF(value);
            goto fail;
        }
        Py_DECREF(key);
        Py_DECREF(value);
    }
fail:
    Py_DECREF(out);
    return NULL;
}

/* The node that `ev` starts (its event is consumed here). `kl` < 0: no key (the document's
 * root, or an item of a list), and the key's numbers are the node's start. */
static PyObject *compose(Reader *r, yaml_event_t *ev, long kl, long kc, long kel, long kec, long depth) {
    if (depth > r->max_depth || !plain_untagged(ev)) {
        yaml_event_delete(ev);
        r->declined = 1;
        return NULL;
    }
    if (ev->type != YAML_SCALAR_EVENT) {
        PyObject *out = collection(r, ev, kl, kc, kel, kec, depth);
        yaml_event_delete(ev);
        return out;
    }
    if (kl < 0) {
        kl = (long)ev->start_mark.line + 1, kc = (long)ev->start_mark.column + 1, kel = kl, kec = kc;
    }
    Py_ssize_t slot = reserve(r);
    PyObject *value = slot < 0 ? NULL : scalar_value(r, ev);
    if (value != NULL) place(r, slot, kl, kc, kel, kec, &ev->start_mark, &ev->end_mark);
    yaml_event_delete(ev);
    return value;
}

/* One document after its start event: its data and its packed numbers, or the root's 1-based
 * line for an empty document (an empty plain scalar: kubectl skips it, and so does the
 * loader). */
static PyObject *document(Reader *r) {
    yaml_event_t ev;
    if (!next_event(r, &ev)) return NULL;
    PyObject *item;
    if (ev.type == YAML_SCALAR_EVENT && ev.data.scalar.length == 0 && plain_untagged(&ev) && is_plain(&ev)) {
        item = PyLong_FromLong((long)ev.start_mark.line + 1);
        yaml_event_delete(&ev);
    } else {
        r->nodes = 0;
        PyObject *data = compose(r, &ev, -1, 0, 0, 0, 0);
        if (data == NULL) return NULL;
        PyObject *packed = PyBytes_FromStringAndSize((const char *)r->packed, r->nodes * FIELDS * (Py_ssize_t)sizeof(int32_t));
        item = packed == NULL ? NULL : PyTuple_Pack(2, data, packed);
        Py_DECREF(data);
        Py_XDECREF(packed);
    }
    if (item == NULL) return NULL;
    if (!next_event(r, &ev)) {
        Py_DECREF(item);
        return NULL;
    }
    int ok = ev.type == YAML_DOCUMENT_END_EVENT;
    yaml_event_delete(&ev);
    if (!ok) {
        Py_DECREF(item);
        r->declined = 1;
        return NULL;
    }
    return item;
}

PyDoc_STRVAR(load_doc,
             "load(text, typed, memo, starts, max_documents, max_depth, max_scalar, interned)\n"
             "--\n\n"
             "The documents of `text`: for each, `(data, packed)` (see `table`), or the 1-based\n"
             "line of an empty document; at most `max_documents` + 1 of them. None when the text\n"
             "is not one this reader reads (see the module's comment): the caller reads it otherwise.");

static PyObject *load(PyObject *self, PyObject *args) {
    PyObject *text, *typed, *memo;
    const char *starts;
    Py_ssize_t max_documents, max_scalar, interned;
    long max_depth;
    if (!PyArg_ParseTuple(args, "UOO!snlnn:load", &text, &typed, &PyDict_Type, &memo, &starts, &max_documents, &max_depth,
                          &max_scalar, &interned))
        return NULL;
    /* The text's UTF-8: an ASCII string's own characters, else a copy made for this call
     * (`PyUnicode_AsUTF8AndSize` would keep one beside the text for as long as it lives, and
     * a run keeps its texts). */
    PyObject *encoded = NULL;
    const char *utf8;
    Py_ssize_t size;
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0) return NULL; /* (every string is ready from 3.12 on) */
#endif
    if (PyUnicode_IS_ASCII(text)) {
        utf8 = (const char *)PyUnicode_DATA(text);
        size = PyUnicode_GET_LENGTH(text);
    } else {
        encoded = PyUnicode_AsUTF8String(text);
        if (encoded == NULL) {
            PyErr_Clear(); /* a lone surrogate: the caller's reading reports it */
            Py_RETURN_NONE;
        }
        utf8 = PyBytes_AS_STRING(encoded);
        size = PyBytes_GET_SIZE(encoded);
    }
    Reader r;
    memset(&r, 0, sizeof r);
    r.typed = typed, r.memo = memo, r.starts = starts, r.max_depth = max_depth, r.max_scalar = max_scalar, r.interned = interned;
    if (!yaml_parser_initialize(&r.parser)) {
        Py_XDECREF(encoded);
        return PyErr_NoMemory();
    }
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)utf8, (size_t)size);
    yaml_parser_set_encoding(&r.parser, YAML_UTF8_ENCODING);
    PyObject *docs = PyList_New(0);
    yaml_event_t ev;
    if (docs == NULL || !next_event(&r, &ev)) goto done;
    yaml_event_delete(&ev); /* the stream's start */
    for (;;) {
        if (!next_event(&r, &ev)) goto done;
        yaml_event_type_t type = ev.type;
        yaml_event_delete(&ev);
        if (type == YAML_STREAM_END_EVENT) break;
        if (type != YAML_DOCUMENT_START_EVENT) {
            r.declined = 1;
            goto done;
        }
        PyObject *item = document(&r);
        if (item == NULL) goto done;
        int failed = PyList_Append(docs, item);
        Py_DECREF(item);
        if (failed) goto done;
        if (PyList_GET_SIZE(docs) > max_documents) break;
    }
    yaml_parser_delete(&r.parser);
    PyMem_Free(r.packed);
    Py_XDECREF(encoded);
    return docs;
done:
    yaml_parser_delete(&r.parser);
    PyMem_Free(r.packed);
    Py_XDECREF(encoded);
    Py_XDECREF(docs);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* -- the table, from the data and the packed numbers ---------------------------------------- */

typedef struct {
    PyObject *table;
    const int32_t *packed;
    Py_ssize_t nodes, next;
} Walk;

static int walk(Walk *w, PyObject *value, PyObject *path) {
    if (w->next >= w->nodes) {
        PyErr_SetString(PyExc_ValueError, "the data has more nodes than the packed table");
        return -1;
    }
    const int32_t *p = w->packed + w->next++ * FIELDS;
    PyObject *pos = PyTuple_New(FIELDS);
    if (pos == NULL) return -1;
    for (int i = 0; i < FIELDS; i++) {
        PyObject *n = PyLong_FromLong((long)p[i]);
        if (n == NULL) {
            Py_DECREF(pos);
            return -1;
        }
        PyTuple_SET_ITEM(pos, i, n);
    }
    int failed = PyDict_SetItem(w->table, path, pos);
    Py_DECREF(pos);
    if (failed) return -1;
    if (PyDict_CheckExact(value)) {
        Py_ssize_t at = 0;
        PyObject *k, *v;
        while (PyDict_Next(value, &at, &k, &v)) {
            PyObject *sub = extended(path, k);
            if (sub == NULL) return -1;
            failed = walk(w, v, sub);
            Py_DECREF(sub);
            if (failed) return -1;
        }
    } else if (PyList_CheckExact(value)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            PyObject *index = PyLong_FromSsize_t(i);
            PyObject *sub = index == NULL ? NULL : extended(path, index);
            Py_XDECREF(index);
            if (sub == NULL) return -1;
            failed = walk(w, PyList_GET_ITEM(value, i), sub);
            Py_DECREF(sub);
            if (failed) return -1;
        }
    }
    return 0;
}

PyDoc_STRVAR(table_doc,
             "table(data, packed)\n"
             "--\n\n"
             "The position table of a document `load` read: `path -> (8 numbers)`, the paths in\n"
             "the order of a walk of `data`, as `Converter` fills it. ValueError when `packed` does\n"
             "not hold one entry per node of `data`.");

static PyObject *table(PyObject *self, PyObject *args) {
    PyObject *data;
    Py_buffer packed;
    if (!PyArg_ParseTuple(args, "Oy*:table", &data, &packed)) return NULL;
    Walk w = {PyDict_New(), (const int32_t *)packed.buf, packed.len / (Py_ssize_t)(FIELDS * sizeof(int32_t)), 0};
    PyObject *root = PyTuple_New(0);
    int failed = w.table == NULL || root == NULL || packed.len % (Py_ssize_t)(FIELDS * sizeof(int32_t)) != 0 ||
                 walk(&w, data, root) < 0;
    Py_XDECREF(root);
    PyBuffer_Release(&packed);
    if (!failed && w.next != w.nodes) {
        PyErr_SetString(PyExc_ValueError, "the packed table has more nodes than the data");
        failed = 1;
    }
    if (failed) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "not a packed table");
        Py_XDECREF(w.table);
        return NULL;
    }
    return w.table;
}

static PyMethodDef methods[] = {
    {"load", load, METH_VARARGS, load_doc},
    {"table", table, METH_VARARGS, table_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "yamlc", "libyaml's events straight to plain data and a packed position table.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_yamlc(void) { return PyModule_Create(&module); }
