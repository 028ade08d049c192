#include "data/qa.h"
#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/fsutil.h"
#include "core/rng.h"
#include "env/env.h"
#include "env/textcraft/textcraft.h"

void m2_qa_set_init(m2_qa_set *s) { memset(s, 0, sizeof *s); }

static void qa_free(m2_qa *q) {
    free(q->question);
    free(q->answer);
    for (int i = 0; i < q->n_steps; i++) free(q->steps[i]);
    memset(q, 0, sizeof *q);
}

void m2_qa_set_free(m2_qa_set *s) {
    for (int i = 0; i < s->n; i++) qa_free(&s->q[i]);
    free(s->q);
    m2_qa_set_init(s);
}

/* Appends a question (copies every string); steps may be NULL when n_steps is 0. */
static int qa_push(m2_qa_set *s, const char *question, const char *answer, double value, char *const *steps,
                   int n_steps, m2_err *err) {
    if (s->n == s->cap) {
        int nc = s->cap ? 2 * s->cap : 64;
        m2_qa *nq = realloc(s->q, (size_t)nc * sizeof *nq);
        if (!nq) return m2_errorf(err, M2_ENOMEM, "tasks: out of memory");
        s->q = nq;
        s->cap = nc;
    }
    m2_qa *q = &s->q[s->n];
    memset(q, 0, sizeof *q);
    q->question = strdup(question);
    q->answer = strdup(answer);
    q->value = value;
    int ok = q->question && q->answer;
    for (int i = 0; i < n_steps && i < M2_QA_MAX_STEPS && ok; i++) {
        q->steps[i] = strdup(steps[i]);
        ok = q->steps[i] != NULL;
        q->n_steps = i + 1;
    }
    if (!ok) { qa_free(q); return m2_errorf(err, M2_ENOMEM, "tasks: out of memory"); }
    s->n++;
    return 0;
}

/* ---------------------------------------------------------------- answers */

/* Parses a number at s (optional '-', digits with ',' separators, decimals, or a/b); returns the
 * characters used (0: none). */
static int parse_number(const char *s, double *v) {
    const char *p = s;
    int neg = 0;
    if (*p == '-') { neg = 1; p++; }
    if (!isdigit((unsigned char)*p)) return 0;
    double x = 0;
    while (isdigit((unsigned char)*p) || (*p == ',' && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
                                          isdigit((unsigned char)p[3]))) {
        if (*p != ',') x = x * 10 + (*p - '0');
        p++;
    }
    if (*p == '.' && isdigit((unsigned char)p[1])) {
        p++;
        double f = 0.1;
        while (isdigit((unsigned char)*p)) { x += f * (*p - '0'); f *= 0.1; p++; }
    } else if (*p == '/' && isdigit((unsigned char)p[1])) {
        double d = 0;
        const char *q = p + 1;
        while (isdigit((unsigned char)*q)) { d = d * 10 + (*q - '0'); q++; }
        if (d > 0) { x /= d; p = q; }
    }
    *v = neg ? -x : x;
    return (int)(p - s);
}

/* The last number in s[0..len); 1 when found. A '-' counts as a sign only where no digit precedes
 * it ("12-3" is 12 and 3, "= -3" is -3). */
static int last_number(const char *s, size_t len, double *v) {
    int found = 0;
    for (size_t i = 0; i < len;) {
        int sign_ok = s[i] == '-' && (i == 0 || !isdigit((unsigned char)s[i - 1]));
        if (isdigit((unsigned char)s[i]) || (sign_ok && i + 1 < len && isdigit((unsigned char)s[i + 1]))) {
            double x;
            char tmp[64];
            size_t k = len - i < sizeof tmp - 1 ? len - i : sizeof tmp - 1;
            memcpy(tmp, s + i, k);
            tmp[k] = 0;
            int used = parse_number(tmp, &x);
            if (used > 0) { *v = x; found = 1; i += (size_t)used; continue; }
        }
        i++;
    }
    return found;
}

int m2_answer_extract(const char *text, double *value) {
    if (!text) return 0;
    /* the last \boxed{...}, braces balanced */
    const char *b = NULL, *p = text;
    while ((p = strstr(p, "\\boxed{"))) { b = p; p += 7; }
    if (b) {
        const char *o = b + 7, *e = o;
        int depth = 1;
        while (*e && depth > 0) {
            if (*e == '{') depth++;
            else if (*e == '}' && --depth == 0) break;
            e++;
        }
        /* \frac{a}{b} inside the box is a/b */
        const char *f = strstr(o, "\\frac{");
        double a, d;
        if (f && f < e && parse_number(f + 6, &a) > 0) {
            const char *m = strstr(f + 6, "}{");
            if (m && m < e && parse_number(m + 2, &d) > 0 && d != 0) { *value = a / d; return 1; }
        }
        if (last_number(o, (size_t)(e - o), value)) return 1;
    }
    const char *h = NULL;
    p = text;
    while ((p = strstr(p, "####"))) { h = p; p += 4; }
    if (h) {
        const char *o = h + 4;
        while (*o == ' ' || *o == '$') o++;
        if (parse_number(o, value) > 0) return 1;
    }
    return last_number(text, strlen(text), value);
}

int m2_qa_check(const m2_qa *q, const char *final_message) {
    double v;
    if (!m2_answer_extract(final_message, &v)) return 0;
    double tol = 1e-6 * (fabs(q->value) > 1 ? fabs(q->value) : 1);
    return fabs(v - q->value) <= tol;
}

/* ---------------------------------------------------------------- parts */

static char *join_steps(char *const *steps, int b, int e) {
    size_t len = 1;
    for (int i = b; i < e; i++) len += strlen(steps[i]) + 2;
    char *s = malloc(len);
    if (!s) return NULL;
    s[0] = 0;
    for (int i = b; i < e; i++) {
        if (i > b) strcat(s, ", ");
        strcat(s, steps[i]);
    }
    return s;
}

int m2_qa_parts(const m2_qa *q, int n, char **parts, m2_err *err) {
    if (n <= 0) return m2_errorf(err, M2_EINVAL, "tasks: %d parts", n);
    int k = q->n_steps;
    for (int j = 0; j < n; j++) {
        if (k == 0 || (k < n && j >= k)) parts[j] = strdup(q->answer);
        else if (k < n) parts[j] = strdup(q->steps[j]);
        else parts[j] = join_steps(q->steps, (int)((long)j * k / n), (int)((long)(j + 1) * k / n));
        if (!parts[j]) {
            for (int i = 0; i < j; i++) { free(parts[i]); parts[i] = NULL; }
            return m2_errorf(err, M2_ENOMEM, "tasks: out of memory");
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- arithmetic */

/* Stream numbers of the two splits (one seed, two disjoint streams). */
enum { QA_STREAM_TRAIN = 0x51a, QA_STREAM_TEST = 0x7e57 };

/* One question from r: the text, the steps and the value. */
static int arith_draw(m2_rng *r, int min_ops, int max_ops, char *qbuf, size_t qcap, char steps[][48], int *n_steps,
                      int *value) {
    int ops = min_ops + (int)m2_rng_below(r, (uint32_t)(max_ops - min_ops + 1));
    int v = 1 + (int)m2_rng_below(r, 9);
    int len = snprintf(qbuf, qcap, "Compute %d", v);
    for (int i = 0; i < ops; i++) {
        int x = 1 + (int)m2_rng_below(r, 9);
        int plus = (int)m2_rng_below(r, 2);
        if (plus && v + x > M2_QA_ARITH_MAX) plus = 0;   /* stay in 0..M2_QA_ARITH_MAX */
        if (!plus && v - x < 0) plus = 1;
        int nv = plus ? v + x : v - x;
        len += snprintf(qbuf + len, qcap - (size_t)len, "%c%d", plus ? '+' : '-', x);
        snprintf(steps[i], 48, "%d%c%d=%d", v, plus ? '+' : '-', x, nv);
        v = nv;
    }
    snprintf(qbuf + len, qcap - (size_t)len, ".");
    *n_steps = ops;
    *value = v;
    return 0;
}

int m2_qa_arith(uint64_t seed, int split, int n, int n_train, int min_ops, int max_ops, m2_qa_set *out, m2_err *err) {
    m2_qa_set_init(out);
    if (min_ops < 1 || max_ops < min_ops || max_ops > M2_QA_MAX_STEPS)
        return m2_errorf(err, M2_EINVAL, "arithmetic tasks: operations %d..%d (need 1 <= min <= max <= %d)", min_ops,
                         max_ops, M2_QA_MAX_STEPS);
    /* the test split skips the training set's questions (the first n_train of the train stream) */
    m2_qa_set train;
    m2_qa_set_init(&train);
    if (split == M2_QA_SPLIT_TEST && n_train > 0 &&
        m2_qa_arith(seed, M2_QA_SPLIT_TRAIN, n_train, 0, min_ops, max_ops, &train, err))
        return -1;
    m2_rng r;
    m2_rng_seed_stream(&r, seed, split == M2_QA_SPLIT_TEST ? QA_STREAM_TEST : QA_STREAM_TRAIN);
    char q[256], st[M2_QA_MAX_STEPS][48], ans[32];
    char *sp[M2_QA_MAX_STEPS];
    for (int i = 0; i < M2_QA_MAX_STEPS; i++) sp[i] = st[i];
    int rc = 0;
    for (int tries = 0; out->n < n && tries < 8 * n + 64; tries++) {
        int ns, v;
        arith_draw(&r, min_ops, max_ops, q, sizeof q, st, &ns, &v);
        int dup = 0;
        for (int i = 0; i < train.n && !dup; i++) dup = !strcmp(train.q[i].question, q);
        if (dup) continue;
        snprintf(ans, sizeof ans, "%d", v);
        if ((rc = qa_push(out, q, ans, v, sp, ns, err))) break;
    }
    m2_qa_set_free(&train);
    if (rc) m2_qa_set_free(out);
    else if (out->n == 0)
        rc = m2_errorf(err, M2_EINVAL, "arithmetic tasks: no %s question of %d..%d operations outside the %d training questions",
                       split == M2_QA_SPLIT_TEST ? "test" : "train", min_ops, max_ops, n_train);
    return rc;
}

/* ---------------------------------------------------------------- crafting counts */

typedef struct craft_line {
    int out_count;
    char out[64];
    int n_ing;
    int ing_count[4];
    char ing[4][64];
} craft_line;

/* "craft 4 oak planks using 1 oak log" (", "-separated ingredients); 0 when it parses. */
static int parse_craft(const char *s, craft_line *c) {
    memset(c, 0, sizeof *c);
    const char *p = strstr(s, "craft ");
    if (!p) return -1;
    p += 6;
    char *end;
    long k = strtol(p, &end, 10);
    if (end == p || k <= 0 || *end != ' ') return -1;
    c->out_count = (int)k;
    p = end + 1;
    const char *u = strstr(p, " using ");
    if (!u || u - p <= 0 || u - p >= (long)sizeof c->out) return -1;
    memcpy(c->out, p, (size_t)(u - p));
    c->out[u - p] = 0;
    p = u + 7;
    while (*p && c->n_ing < 4) {
        k = strtol(p, &end, 10);
        if (end == p || k <= 0 || *end != ' ') return -1;
        p = end + 1;
        const char *e = strstr(p, ", ");
        size_t l = e ? (size_t)(e - p) : strlen(p);
        while (l > 0 && (p[l - 1] == '\n' || p[l - 1] == ' ' || p[l - 1] == '.')) l--;
        if (l == 0 || l >= sizeof c->ing[0]) return -1;
        memcpy(c->ing[c->n_ing], p, l);
        c->ing[c->n_ing][l] = 0;
        c->ing_count[c->n_ing++] = (int)k;
        p = e ? e + 2 : p + strlen(p);
    }
    return 0;
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* Amounts asked for: a multiple-free draw in 1..CRAFT_MAX_WANT. */
#define CRAFT_MAX_WANT 16
/* Episodes scanned for recipe lines per question wanted (the lines repeat between episodes). */
#define CRAFT_EPISODES_PER_QUESTION 2

int m2_qa_craft(const char *data_path, uint64_t seed, int split, int n, m2_qa_set *out, m2_err *err) {
    m2_qa_set_init(out);
    m2_env *env = NULL;
    if (m2_env_create("textcraft", data_path, &env, err)) return -1;
    m2_split es = split == M2_QA_SPLIT_TEST ? M2_SPLIT_OOD : M2_SPLIT_TRAIN;
    int n_ep = env->cls->num_episodes(env, "", es, err);
    if (n_ep <= 0) {
        m2_env_destroy(env);
        return n_ep < 0 ? -1 : m2_errorf(err, M2_EINVAL, "craft tasks: the textcraft %s split has no episodes", m2_split_name(es));
    }
    m2_rng r;
    m2_rng_seed_stream(&r, seed, split == M2_QA_SPLIT_TEST ? QA_STREAM_TEST : QA_STREAM_TRAIN);
    int rc = 0, scanned = 0;
    craft_line *lines = NULL;
    for (int ep = 0; out->n < n && scanned < CRAFT_EPISODES_PER_QUESTION * n + 16; ep = (ep + 1) % n_ep, scanned++) {
        m2_step_result first;
        if ((rc = env->cls->reset(env, "", es, ep, seed, &first, err))) break;
        int nc = m2_tc_command_count(env);
        free(lines);
        lines = calloc((size_t)(nc > 0 ? nc : 1), sizeof *lines);
        if (!lines) { rc = m2_errorf(err, M2_ENOMEM, "craft tasks: out of memory"); break; }
        int nl = 0;
        for (int i = 0; i < nc; i++)
            if (!parse_craft(m2_tc_command(env, i), &lines[nl])) nl++;
        if (nl == 0) continue;
        int two = out->n % 2 == 1;   /* alternate one- and two-step questions */
        craft_line *a = &lines[m2_rng_below(&r, (uint32_t)nl)], *b = NULL;
        int ia = (int)m2_rng_below(&r, (uint32_t)a->n_ing);
        if (two)
            for (int i = 0; i < nl && !b; i++)
                if (!strcmp(lines[i].out, a->ing[ia])) b = &lines[i];
        int want = 1 + (int)m2_rng_below(&r, CRAFT_MAX_WANT);
        char q[640], s0[160], s1[160], ans[32];
        int crafts = ceil_div(want, a->out_count), need = crafts * a->ing_count[ia];
        snprintf(s0, sizeof s0, "%d %s: %d crafts, %d %s", want, a->out, crafts, need, a->ing[ia]);
        char *steps[2] = {s0, s1};
        int value = need, ns = 1;
        const char *asked = a->ing[ia];
        char recipes[400];
        snprintf(recipes, sizeof recipes, "craft %d %s using %d %s", a->out_count, a->out, a->ing_count[ia], a->ing[ia]);
        if (b) {
            int crafts2 = ceil_div(need, b->out_count), need2 = crafts2 * b->ing_count[0];
            snprintf(s1, sizeof s1, "%d %s: %d crafts, %d %s", need, b->out, crafts2, need2, b->ing[0]);
            size_t l = strlen(recipes);
            snprintf(recipes + l, sizeof recipes - l, "; craft %d %s using %d %s", b->out_count, b->out, b->ing_count[0],
                     b->ing[0]);
            value = need2;
            ns = 2;
            asked = b->ing[0];
        }
        snprintf(q, sizeof q, "Recipes: %s. How many %s are needed for %d %s?", recipes, asked, want, a->out);
        int dup = 0;
        for (int i = 0; i < out->n && !dup; i++) dup = !strcmp(out->q[i].question, q);
        if (dup) continue;
        snprintf(ans, sizeof ans, "%d", value);
        if ((rc = qa_push(out, q, ans, value, steps, ns, err))) break;
    }
    free(lines);
    m2_env_destroy(env);
    if (rc) m2_qa_set_free(out);
    else if (out->n == 0) return m2_errorf(err, M2_EINVAL, "craft tasks: no recipe line of the textcraft environment parsed");
    return rc;
}

/* ---------------------------------------------------------------- JSONL */

int m2_qa_parse_jsonl(const char *text, size_t len, const char *path, m2_qa_set *out, m2_err *err) {
    m2_qa_set_init(out);
    char *txt = malloc(len + 1);
    if (!txt) return m2_errorf(err, M2_ENOMEM, "%s: out of memory", path);
    memcpy(txt, text, len);
    txt[len] = 0;
    int rc = 0, line = 0;
    char *p = txt;
    while (p && *p && !rc) {
        char *e = strchr(p, '\n');
        if (e) *e = 0;
        line++;
        char *t = p;
        while (*t == ' ' || *t == '\t' || *t == '\r') t++;
        if (*t) {
            cJSON *o = cJSON_Parse(t);
            const cJSON *q = o ? cJSON_GetObjectItemCaseSensitive(o, "question") : NULL;
            const cJSON *a = o ? cJSON_GetObjectItemCaseSensitive(o, "answer") : NULL;
            char num[64];
            const char *as = cJSON_IsString(a) ? a->valuestring : NULL;
            if (cJSON_IsNumber(a)) { snprintf(num, sizeof num, "%.17g", a->valuedouble); as = num; }
            double v;
            if (!o) rc = m2_errorf(err, M2_EFORMAT, "%s:%d: not a JSON object", path, line);
            else if (!cJSON_IsString(q)) rc = m2_errorf(err, M2_EFORMAT, "%s:%d: \"question\" missing or not a string", path, line);
            else if (!as) rc = m2_errorf(err, M2_EFORMAT, "%s:%d: \"answer\" missing or not a string or number", path, line);
            else if (!m2_answer_extract(as, &v)) rc = m2_errorf(err, M2_EFORMAT, "%s:%d: \"answer\" holds no number", path, line);
            else rc = qa_push(out, q->valuestring, as, v, NULL, 0, err);
            cJSON_Delete(o);
        }
        p = e ? e + 1 : NULL;
    }
    free(txt);
    if (!rc && out->n == 0) rc = m2_errorf(err, M2_EFORMAT, "%s: no questions", path);
    if (rc) m2_qa_set_free(out);
    return rc;
}

int m2_qa_load_jsonl(const char *path, m2_qa_set *out, m2_err *err) {
    m2_qa_set_init(out);
    char *txt;
    size_t len;
    if (m2_read_file(path, &txt, &len, err)) return -1;
    int rc = m2_qa_parse_jsonl(txt, len, path, out, err);
    free(txt);
    return rc;
}
