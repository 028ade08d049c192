/* libFuzzer target: the request -> response handling of `multi2 serve` (env/agentgym.c) without
 * sockets. The first byte picks the server (textcraft, alfworld, sciworld); the rest is a series
 * of requests separated by 0x1e, each "METHOD PATH[?QUERY]\n" then its body. The handler must
 * answer every one with JSON and a status, never crash, never leak (a server per kind lives for
 * the whole run: ids keep growing, so the open-environment limit and expiry are exercised too). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>
#include "env/agentgym.h"

#define FUZZ_MAX_ENVS 8          /* small, so "too many open environments" is reached */
#define FUZZ_MAX_BODY 4096
#define FUZZ_MAX_REQUESTS 32

static const char *const kinds[3] = {"textcraft", "alfworld", "sciworld"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static m2_gym *gyms[3];
    static double clock_s;           /* a fake clock: each input moves it on, so idle expiry happens */
    if (size < 1) return 0;
    int k = data[0] % 3;
    if (!gyms[k]) {
        m2_gym_config cfg = {.env = kinds[k], .max_envs = FUZZ_MAX_ENVS, .idle_seconds = 50, .max_body = FUZZ_MAX_BODY};
        m2_err err = {0};
        if (m2_gym_create(&gyms[k], &cfg, &err)) { fprintf(stderr, "%s\n", err.msg); abort(); }
    }
    clock_s += 1 + data[0] / 3 % 4;
    char *buf = malloc(size);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = 0;
    char *p = buf, *end = buf + size - 1;
    for (int n = 0; n < FUZZ_MAX_REQUESTS && p < end; n++) {
        char *rec_end = memchr(p, 0x1e, (size_t)(end - p));
        if (!rec_end) rec_end = end;
        *rec_end = 0;
        char *nl = strchr(p, '\n');
        const char *body = nl ? nl + 1 : NULL;
        size_t body_len = nl ? (size_t)(rec_end - (nl + 1)) : 0;
        if (nl) *nl = 0;
        char *sp = strchr(p, ' ');
        const char *method = "POST", *path = p, *query = NULL;
        if (sp) { *sp = 0; method = p; path = sp + 1; }
        char *q = strchr(path, '?');
        if (q) { *q = 0; query = q + 1; }
        int status = 0;
        char *resp = m2_gym_handle(gyms[k], method, path, query, body, body_len, clock_s, &status);
        if (resp) {
            cJSON *j = cJSON_Parse(resp);   /* every answer is JSON */
            if (!j || status < 200 || status > 599) abort();
            cJSON_Delete(j);
            free(resp);
        }
        p = rec_end + 1;
    }
    free(buf);
    return 0;
}
