/* The device table of portattn-bench: a small JSON reader (RFC 8259, whole file in memory) and the
 * lookups of devices.h. */
#include "devices.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a JSON value tree ------------------------------------------------------------------- */

typedef enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype t;
    double num;        /* J_NUM, J_BOOL (0/1) */
    char *str;         /* J_STR */
    struct jval *item; /* J_ARR, J_OBJ: n items */
    char **key;        /* J_OBJ: n keys */
    int n;
} jval;

typedef struct jparser { const char *s, *p; char err[160]; } jparser;

static void jfree(jval *v)
{
    for (int i = 0; i < v->n; i++) {
        jfree(&v->item[i]);
        if (v->key) free(v->key[i]);
    }
    free(v->item);
    free(v->key);
    free(v->str);
    memset(v, 0, sizeof *v);
}

static int jfail(jparser *jp, const char *what)
{
    if (!jp->err[0]) {
        int line = 1;
        for (const char *c = jp->s; c < jp->p; c++) line += *c == '\n';
        snprintf(jp->err, sizeof jp->err, "line %d: %s", line, what);
    }
    return -1;
}

static void jskip(jparser *jp)
{
    while (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r') jp->p++;
}

static int jhex4(const char *p, unsigned *out)
{
    unsigned u = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i];
        if (!isxdigit(c)) return -1;
        u = u * 16 + (unsigned)(isdigit(c) ? c - '0' : tolower(c) - 'a' + 10);
    }
    *out = u;
    return 0;
}

static int jstring(jparser *jp, char **out)
{
    const char *p = ++jp->p; /* past the quote */
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    if (!s) return jfail(jp, "out of memory");
    for (;;) {
        unsigned c = (unsigned char)*p++;
        if (n + 5 > cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) { free(s); return jfail(jp, "out of memory"); }
            s = t;
        }
        if (c == '"') break;
        if (c < 0x20) { free(s); jp->p = p - 1; return jfail(jp, "unterminated string or control character in it"); }
        if (c != '\\') { s[n++] = (char)c; continue; }
        c = (unsigned char)*p++;
        const char *esc = strchr("\"\\/bfnrt", (int)c), *to = "\"\\/\b\f\n\r\t";
        if (c && esc) { s[n++] = to[esc - "\"\\/bfnrt"]; continue; }
        unsigned u;
        if (c != 'u' || jhex4(p, &u)) { free(s); jp->p = p - 1; return jfail(jp, "bad escape in string"); }
        p += 4; /* \uXXXX as UTF-8 (a lone surrogate is kept as is: names here are ASCII) */
        if (u < 0x80) s[n++] = (char)u;
        else if (u < 0x800) { s[n++] = (char)(0xC0 | u >> 6); s[n++] = (char)(0x80 | (u & 0x3F)); }
        else { s[n++] = (char)(0xE0 | u >> 12); s[n++] = (char)(0x80 | (u >> 6 & 0x3F)); s[n++] = (char)(0x80 | (u & 0x3F)); }
    }
    s[n] = 0;
    jp->p = p;
    *out = s;
    return 0;
}

static int jvalue(jparser *jp, jval *v, int depth);

/* The items of an array or object after its opening bracket. */
static int jitems(jparser *jp, jval *v, int depth, char close)
{
    int cap = 0;
    jp->p++;
    jskip(jp);
    if (*jp->p == close) { jp->p++; return 0; }
    for (;;) {
        if (v->n == cap) {
            cap = cap ? 2 * cap : 8;
            jval *it = realloc(v->item, sizeof(jval) * (size_t)cap);
            if (!it) return jfail(jp, "out of memory");
            v->item = it;
            if (close == '}') {
                char **k = realloc(v->key, sizeof(char *) * (size_t)cap);
                if (!k) return jfail(jp, "out of memory");
                v->key = k;
            }
        }
        memset(&v->item[v->n], 0, sizeof(jval));
        if (close == '}') {
            jskip(jp);
            if (*jp->p != '"') return jfail(jp, "expected a \"key\"");
            if (jstring(jp, &v->key[v->n])) return -1;
            jskip(jp);
            if (*jp->p++ != ':') { v->n++; jp->p--; return jfail(jp, "expected ':'"); }
        }
        v->n++; /* counted before parsing, so that jfree frees a half-parsed item */
        if (jvalue(jp, &v->item[v->n - 1], depth + 1)) return -1;
        jskip(jp);
        if (*jp->p == ',') { jp->p++; continue; }
        if (*jp->p == close) { jp->p++; return 0; }
        return jfail(jp, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int jvalue(jparser *jp, jval *v, int depth)
{
    jskip(jp);
    if (depth > 32) return jfail(jp, "nested too deep");
    char c = *jp->p;
    if (c == '{') { v->t = J_OBJ; return jitems(jp, v, depth, '}'); }
    if (c == '[') { v->t = J_ARR; return jitems(jp, v, depth, ']'); }
    if (c == '"') { v->t = J_STR; return jstring(jp, &v->str); }
    static const struct { const char *word; jtype t; double num; } words[] = {
        {"null", J_NULL, 0}, {"true", J_BOOL, 1}, {"false", J_BOOL, 0}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strncmp(jp->p, words[i].word, strlen(words[i].word))) {
            v->t = words[i].t; v->num = words[i].num;
            jp->p += strlen(words[i].word);
            return 0;
        }
    if (c == '-' || isdigit((unsigned char)c)) {
        char *end;
        v->t = J_NUM;
        v->num = strtod(jp->p, &end);
        jp->p = end;
        return 0;
    }
    return jfail(jp, "expected a value");
}

static const jval *jget(const jval *obj, const char *key)
{
    for (int i = 0; obj->t == J_OBJ && i < obj->n; i++)
        if (!strcmp(obj->key[i], key)) return &obj->item[i];
    return NULL;
}

/* Copies a string member into dst (truncated to n); "" when absent. -1 when present but not a string. */
static int jcopy(const jval *obj, const char *key, char *dst, size_t n)
{
    const jval *v = jget(obj, key);
    dst[0] = 0;
    if (!v || v->t == J_NULL) return 0;
    if (v->t != J_STR) return -1;
    snprintf(dst, n, "%s", v->str);
    return 0;
}

/* ---- the table ----------------------------------------------------------------------------- */

static int read_file(const char *path, char **text)
{
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 1 << 16, n = 0, got;
    char *s = malloc(cap + 1);
    while (s && (got = fread(s + n, 1, cap - n, f)) > 0)
        if ((n += got) == cap) {
            char *t = cap > (64u << 20) ? NULL : realloc(s, 2 * cap + 1); /* a device table is small */
            if (!t) { free(s); s = NULL; }
            else { s = t; cap *= 2; }
        }
    fclose(f);
    if (!s) return -1;
    s[n] = 0;
    *text = s;
    return 0;
}

/* Fills t from the parsed document; -1 with why in err. */
static int fill_table(const jval *doc, dt_table *t, char *err, size_t errlen)
{
    const jval *devs = jget(doc, "devices");
    if (!devs || devs->t != J_ARR) { snprintf(err, errlen, "no \"devices\" array"); return -1; }
    for (int i = 0; i < devs->n; i++) {
        const jval *d = &devs->item[i], *v;
        if (t->n == DT_MAX_DEVICES) { snprintf(err, errlen, "more than %d devices", DT_MAX_DEVICES); return -1; }
        dt_device *o = &t->dev[t->n++];
        memset(o, 0, sizeof *o);
        if (d->t != J_OBJ || jcopy(d, "name", o->name, sizeof o->name) || !o->name[0]) {
            snprintf(err, errlen, "device %d: not an object with a \"name\"", i + 1);
            return -1;
        }
        const char *lists[2] = {"match", "exclude"};
        for (int l = 0; l < 2; l++) {
            char(*dst)[48] = l ? o->exclude : o->match;
            int *cnt = l ? &o->nexclude : &o->nmatch;
            if (!(v = jget(d, lists[l]))) continue;
            for (int j = 0; v->t == J_ARR && j < v->n && *cnt < DT_MAX_MATCH; j++)
                if (v->item[j].t == J_STR) snprintf(dst[(*cnt)++], 48, "%s", v->item[j].str);
        }
        if (!o->nmatch) { snprintf(err, errlen, "device %s: no \"match\" strings", o->name); return -1; }
        if (!(v = jget(d, "peaks")) || v->t != J_ARR) { snprintf(err, errlen, "device %s: no \"peaks\" array", o->name); return -1; }
        for (int j = 0; j < v->n && o->npeaks < DT_MAX_PEAKS; j++) {
            const jval *p = &v->item[j], *val = jget(p, "value");
            dt_peak *q = &o->peaks[o->npeaks];
            if (p->t != J_OBJ || jcopy(p, "metric", q->metric, sizeof q->metric) || !q->metric[0] ||
                jcopy(p, "kind", q->kind, sizeof q->kind) || jcopy(p, "date", q->date, sizeof q->date) ||
                jcopy(p, "source", q->source, sizeof q->source) || !val || val->t != J_NUM || !(val->num > 0) ||
                (strcmp(q->kind, "measured") && strcmp(q->kind, "datasheet"))) {
                snprintf(err, errlen, "device %s, peak %d: needs \"metric\", \"value\" > 0 and \"kind\" "
                                      "\"measured\" or \"datasheet\"", o->name, j + 1);
                return -1;
            }
            q->value = val->num;
            o->npeaks++;
        }
    }
    return 0;
}

static int load_path(const char *path, dt_table *t, char *err, size_t errlen)
{
    char *text = NULL;
    if (read_file(path, &text)) { snprintf(err, errlen, "cannot read %s", path); return -1; }
    jparser jp = {text, text, ""};
    jval doc;
    memset(&doc, 0, sizeof doc);
    int rc = jvalue(&jp, &doc, 0);
    if (!rc) { jskip(&jp); if (*jp.p) rc = jfail(&jp, "text after the JSON value"); }
    memset(t, 0, sizeof *t);
    if (rc) snprintf(err, errlen, "%s: %s", path, jp.err);
    else if (doc.t != J_OBJ) { snprintf(err, errlen, "%s: not a JSON object", path); rc = -1; }
    else {
        char why[300] = "";
        if ((rc = fill_table(&doc, t, why, sizeof why))) snprintf(err, errlen, "%s: %s", path, why);
        else snprintf(t->path, sizeof t->path, "%s", path);
    }
    jfree(&doc);
    free(text);
    return rc;
}

int dt_load(const char *explicit_path, dt_table *t, char *err, size_t errlen)
{
    if (explicit_path) return load_path(explicit_path, t, err, errlen);
    const char *env = getenv("PORTATTN_DEVICES");
    if (env && *env) return load_path(env, t, err, errlen);
    char cand[3][1100];
    int n = 0;
    char exe[1024];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1); /* Linux; elsewhere the later candidates */
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            snprintf(cand[n++], sizeof cand[0], "%s/devices.json", exe);
            snprintf(cand[n++], sizeof cand[0], "%s/../share/portattn/devices.json", exe);
        }
    }
#ifdef PORTATTN_SOURCE_DIR
    snprintf(cand[n++], sizeof cand[0], "%s/tools/devices.json", PORTATTN_SOURCE_DIR);
#endif
    for (int i = 0; i < n; i++)
        if (access(cand[i], R_OK) == 0) return load_path(cand[i], t, err, errlen);
    snprintf(err, errlen, "no device table found (give --devices FILE or set PORTATTN_DEVICES%s)",
             n ? "; looked next to the executable" : "");
    return -1;
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

const dt_device *dt_match(const dt_table *t, const char *device_name)
{
    for (int i = 0; t && device_name && i < t->n; i++) {
        const dt_device *d = &t->dev[i];
        int hit = 0;
        for (int j = 0; j < d->nmatch; j++) hit |= contains_nocase(device_name, d->match[j]);
        for (int j = 0; hit && j < d->nexclude; j++) hit &= !contains_nocase(device_name, d->exclude[j]);
        if (hit) return d;
    }
    return NULL;
}

const dt_peak *dt_peak_of(const dt_device *d, const char *metric, int prefer_measured)
{
    const dt_peak *measured = NULL, *datasheet = NULL;
    for (int i = 0; d && i < d->npeaks; i++) {
        const dt_peak *p = &d->peaks[i];
        if (strcmp(p->metric, metric)) continue;
        if (!strcmp(p->kind, "measured") && !measured) measured = p;
        if (!strcmp(p->kind, "datasheet") && !datasheet) datasheet = p;
    }
    return prefer_measured && measured ? measured : datasheet ? datasheet : measured;
}
