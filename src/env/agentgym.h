/* AgentGym's HTTP environment protocol (the agentenv-textcraft / -alfworld / -sciworld servers and
 * their clients) over multi2's environments, without sockets: one request (method, path, query,
 * body) in, one JSON response (HTTP status + text) out. `multi2 serve` (cli/cmd_serve.c) puts it
 * behind libmicrohttpd; the fuzzer and the tests call m2_gym_handle directly. It lives in env/
 * because it needs nothing but the environments (multi2_env.h), core and cJSON.
 *
 * The protocol, as AgentGym's servers and clients speak it (docs/python.md has the route table):
 *  - ids are increasing integers from 0, never reused; a failure inside a route is HTTP 200 with
 *    {"error": "<text>"}; a malformed request (bad JSON, a missing or mistyped field) is 422 with
 *    {"detail": ...}, an unknown route 404, a wrong method 405, a body over the limit 413, as
 *    FastAPI answers them;
 *  - textcraft: POST /create {commands?, goal?} creates AND resets with data_idx = id (or, with
 *    both fields, plays the goal item's episode showing the caller's commands);
 *    POST /reset {id, data_idx=0}; POST /step {id, action}; GET /observation|/commands|/goal|/detail?id=;
 *    POST /close {id} -> true|false. data_idx indexes train, then id, then ood (wrapping round);
 *  - alfworld: POST /create -> {id}; POST /reset {id, game, world_type}; POST /step; GET
 *    /available_actions|/observation|/detail; POST /close (AgentGym's client calls it; its server
 *    lacks it). game indexes train, then id (valid_seen), then ood (valid_unseen);
 *  - sciworld: POST /create; POST /reset {id, data_idx}; POST /step; POST /step_visual; POST /close;
 *    GET /observation|/action_hint|/goals|/detail|/task_description|/object_tree|/state (the
 *    state's objects, tree, look and inventory from m2e_inspect). data_idx enumerates every
 *    variation of every task in task-id order (1-1, 1-2, ...) without 5-1, 5-2, 9-1, 9-2, 9-3,
 *    10-1, 10-2, as AgentGym does.
 * Bounds: at most max_envs open environments; one idle longer than idle_seconds is closed at the
 * next request. Thread-safe: any number of threads may call m2_gym_handle at once; requests on one
 * environment are serialised, requests on different ones run in parallel.
 */
#ifndef M2_AGENTGYM_H
#define M2_AGENTGYM_H
#include <stddef.h>
#include <stdint.h>
#include "core/err.h"

#define M2_GYM_MAX_ENVS_DEFAULT 1024
#define M2_GYM_IDLE_SECONDS_DEFAULT 3600.0
#define M2_GYM_MAX_BODY_DEFAULT (1 << 20)   /* bytes of one request body */

typedef struct m2_gym_config {
    const char *env;          /* "textcraft", "alfworld", "sciworld" (or "scienceworld") */
    const char *data_path;    /* NULL: the embedded data */
    uint64_t seed;            /* every reset's seed */
    int max_envs;             /* <= 0: the default */
    double idle_seconds;      /* <= 0: the default */
    size_t max_body;          /* 0: the default */
} m2_gym_config;

typedef struct m2_gym m2_gym;

int m2_gym_create(m2_gym **out, const m2_gym_config *cfg, m2_err *err);
void m2_gym_free(m2_gym *g);
size_t m2_gym_max_body(const m2_gym *g);
int m2_gym_open_envs(m2_gym *g);     /* environments open now */

/* One request. method "GET"/"POST"; path without the query; query the text after '?' (NULL or ""
 * for none); body of body_len bytes (need not be NUL-terminated; NULL for none); now: seconds on
 * any monotonic clock (idle expiry). Returns the response text (malloc'd, JSON) and its HTTP
 * status in *status; NULL only when out of memory. */
char *m2_gym_handle(m2_gym *g, const char *method, const char *path, const char *query, const char *body,
                    size_t body_len, double now, int *status);

#endif
