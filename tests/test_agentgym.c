/* env/agentgym.c, the protocol of `multi2 serve`, called directly (no sockets): statuses and
 * JSON of the main routes, idle expiry on the caller's clock, the limits, and threads that create,
 * step and close the same ids at once (under ASan this is where a close freeing an environment
 * another request still holds would show). The routes field by field: tests/python/test_server.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "env/agentgym.h"

static cJSON *call(m2_gym *g, const char *method, const char *path, const char *query, const char *body, double now,
                   int *status) {
    char *r = m2_gym_handle(g, method, path, query, body, body ? strlen(body) : 0, now, status);
    assert_non_null(r);
    cJSON *j = cJSON_Parse(r);
    assert_non_null(j);
    free(r);
    return j;
}

static const char *err_of(const cJSON *j) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    return cJSON_IsString(e) ? e->valuestring : NULL;
}

static void routes_and_statuses(void **state) {
    m2_gym *g;
    m2_err err = {0};
    m2_gym_config cfg = {.env = "textcraft", .max_envs = 2, .max_body = 256};
    assert_int_equal(m2_gym_create(&g, &cfg, &err), 0);
    int st;
    cJSON *j = call(g, "POST", "/create", NULL, NULL, 0, &st);
    assert_int_equal(st, 200);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(j, "id")->valueint, 0);
    cJSON_Delete(j);
    j = call(g, "POST", "/step", NULL, "{\"id\": 0, \"action\": \"inventory\"}", 0, &st);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "observation")->valuestring, "Inventory: You are not carrying anything.");
    cJSON_Delete(j);
    j = call(g, "GET", "/goal", "id=0", NULL, 0, &st);
    assert_true(cJSON_IsString(j) && !strncmp(j->valuestring, "minecraft:", 10));
    cJSON_Delete(j);
    j = call(g, "POST", "/create", NULL, "{}", 0, &st);
    cJSON_Delete(j);
    j = call(g, "POST", "/create", NULL, "{}", 0, &st);        /* the third is over max_envs 2 */
    assert_non_null(err_of(j));
    assert_non_null(strstr(err_of(j), "too many"));
    cJSON_Delete(j);
    char big[400];
    memset(big, ' ', sizeof big - 1);
    big[sizeof big - 1] = 0;
    j = call(g, "POST", "/step", NULL, big, 0, &st);
    assert_int_equal(st, 413);
    cJSON_Delete(j);
    j = call(g, "DELETE", "/step", NULL, NULL, 0, &st);
    assert_int_equal(st, 405);
    cJSON_Delete(j);
    j = call(g, "GET", "/available_actions", "id=0", NULL, 0, &st);   /* an ALFWorld route */
    assert_int_equal(st, 404);
    cJSON_Delete(j);
    j = call(g, "POST", "/step", NULL, "{\"id\": 0, \"action\": 1}", 0, &st);
    assert_int_equal(st, 422);
    cJSON_Delete(j);
    j = call(g, "GET", "/observation", "x=1&id=1", NULL, 0, &st);     /* id after another key */
    assert_int_equal(st, 200);
    assert_true(cJSON_IsString(j));
    cJSON_Delete(j);
    m2_gym_free(g);   /* frees the environments still open */
}

static void idle_expiry_uses_the_callers_clock(void **state) {
    m2_gym *g;
    m2_err err = {0};
    m2_gym_config cfg = {.env = "alfworld", .idle_seconds = 10};
    assert_int_equal(m2_gym_create(&g, &cfg, &err), 0);
    int st;
    cJSON_Delete(call(g, "POST", "/create", NULL, NULL, 100, &st));
    cJSON_Delete(call(g, "POST", "/create", NULL, NULL, 105, &st));
    cJSON *j = call(g, "POST", "/reset", NULL, "{\"id\": 0, \"game\": 0, \"world_type\": \"Text\"}", 109, &st);
    assert_null(err_of(j));
    cJSON_Delete(j);
    assert_int_equal(m2_gym_open_envs(g), 2);
    j = call(g, "GET", "/detail", "id=0", NULL, 118, &st);     /* id 1 idle 13 s: closed; id 0 only 9 s */
    assert_null(err_of(j));
    cJSON_Delete(j);
    assert_int_equal(m2_gym_open_envs(g), 1);
    j = call(g, "GET", "/detail", "id=1", NULL, 118, &st);
    assert_string_equal(err_of(j), "The task with environment 1 has been deleted.");
    cJSON_Delete(j);
    m2_gym_free(g);
}

static void unknown_names_are_errors(void **state) {
    m2_gym *g = NULL;
    m2_err err = {0};
    m2_gym_config cfg = {.env = "webshop"};
    assert_int_equal(m2_gym_create(&g, &cfg, &err), -1);
    assert_null(g);
    assert_non_null(strstr(err.msg, "webshop"));
}

/* Threads hitting the same small set of ids with create / reset / step / close at once. */
typedef struct hammer_arg { m2_gym *g; unsigned seed; int bad; } hammer_arg;

static void *hammer(void *p) {
    hammer_arg *a = p;
    char body[128], q[32];
    for (int i = 0; i < 1500; i++) {
        a->seed = a->seed * 1103515245u + 12345u;
        unsigned r = a->seed >> 8;
        int id = (int)(r % 24), op = (int)(r / 24 % 6), st = 0;
        const char *m = "POST", *path = "/step", *query = NULL;
        snprintf(body, sizeof body, "{\"id\": %d, \"action\": \"look around\"}", id);
        snprintf(q, sizeof q, "id=%d", id);
        switch (op) {
        case 0: path = "/create"; break;
        case 1: path = "/close"; snprintf(body, sizeof body, "{\"id\": %d}", id); break;
        case 2: path = "/reset"; snprintf(body, sizeof body, "{\"id\": %d, \"data_idx\": %d}", id, (int)(r % 50)); break;
        case 3: m = "GET"; path = "/detail"; query = q; break;
        case 4: m = "GET"; path = "/action_hint"; query = q; break;
        default: break;
        }
        char *resp = m2_gym_handle(a->g, m, path, query, m[0] == 'P' ? body : NULL, m[0] == 'P' ? strlen(body) : 0, i * 0.001, &st);
        cJSON *j = resp ? cJSON_Parse(resp) : NULL;
        if (!j || st != 200) a->bad++;
        cJSON_Delete(j);
        free(resp);
    }
    return NULL;
}

static void threads_on_the_same_ids(void **state) {
    m2_gym *g;
    m2_err err = {0};
    m2_gym_config cfg = {.env = "sciworld", .max_envs = 8, .idle_seconds = 0.2};
    assert_int_equal(m2_gym_create(&g, &cfg, &err), 0);
    enum { T = 4 };
    pthread_t th[T];
    hammer_arg a[T];
    for (int t = 0; t < T; t++) {
        a[t] = (hammer_arg){.g = g, .seed = 77u + (unsigned)t};
        pthread_create(&th[t], NULL, hammer, &a[t]);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(a[t].bad, 0);
    }
    assert_true(m2_gym_open_envs(g) <= 8);
    m2_gym_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(routes_and_statuses),
        cmocka_unit_test(idle_expiry_uses_the_callers_clock),
        cmocka_unit_test(unknown_names_are_errors),
        cmocka_unit_test(threads_on_the_same_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
