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
        int id = (int)(r % 24), op = (int)(r / 24 % 9), st = 0;
        const char *m = "POST", *path = "/step", *query = NULL;
        snprintf(body, sizeof body, "{\"id\": %d, \"action\": \"look around\"}", id);
        snprintf(q, sizeof q, "id=%d", id);
        switch (op) {
        case 0: path = "/create"; break;
        case 1: path = "/close"; snprintf(body, sizeof body, "{\"id\": %d}", id); break;
        case 2: path = "/reset"; snprintf(body, sizeof body, "{\"id\": %d, \"data_idx\": %d}", id, (int)(r % 50)); break;
        case 3: m = "GET"; path = "/detail"; query = q; break;
        case 4: m = "GET"; path = "/action_hint"; query = q; break;
        case 5: m = "GET"; path = "/state"; query = q; break;
        case 6: m = "GET"; path = "/object_tree"; query = q; break;
        case 7: path = "/step_visual"; break;
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

static const cJSON *field(const cJSON *j, const char *k) { return cJSON_GetObjectItemCaseSensitive(j, k); }

/* A whole subtree searched for an object of `type` (the object tree's nodes). */
static const cJSON *find_type(const cJSON *node, const char *type) {
    const cJSON *t = field(node, "type");
    if (cJSON_IsString(t) && !strcmp(t->valuestring, type)) return node;
    const cJSON *c;
    cJSON_ArrayForEach(c, field(node, "contents")) {
        const cJSON *hit = find_type(c, type);
        if (hit) return hit;
    }
    return NULL;
}

/* SciWorld's /action_hint objects, /object_tree, /state and /step_visual, and their errors. */
static void sciworld_state_routes(void **state) {
    m2_gym *g;
    m2_err err = {0};
    m2_gym_config cfg = {.env = "sciworld"};
    assert_int_equal(m2_gym_create(&g, &cfg, &err), 0);
    int st;
    cJSON_Delete(call(g, "POST", "/create", NULL, NULL, 0, &st));
    cJSON *j = call(g, "GET", "/state", "id=0", NULL, 0, &st);   /* before a reset */
    assert_string_equal(err_of(j), "The environment 0 has not been reset.");
    cJSON_Delete(j);
    cJSON *reset = call(g, "POST", "/reset", NULL, "{\"id\": 0, \"data_idx\": 0}", 0, &st);
    assert_null(err_of(reset));

    /* possible objects: the visible objects' referents, sorted, the room's doors among them */
    j = call(g, "GET", "/action_hint", "id=0", NULL, 0, &st);
    const cJSON *objs = field(j, "possible_objects");
    assert_true(cJSON_GetArraySize(objs) > 5);
    const cJSON *o, *prev = NULL;
    int doors = 0;
    cJSON_ArrayForEach(o, objs) {
        assert_true(cJSON_IsString(o));
        if (prev) assert_true(strcmp(prev->valuestring, o->valuestring) <= 0);
        doors += strstr(o->valuestring, " door") != NULL;
        prev = o;
    }
    assert_true(doors >= 1);
    /* possible actions: ScienceWorld's action templates, sorted */
    const cJSON *acts = field(j, "possible_actions");
    assert_int_equal(cJSON_GetArraySize(acts), 26);
    assert_string_equal(cJSON_GetArrayItem(acts, 0)->valuestring, "activate OBJ");
    assert_string_equal(cJSON_GetArrayItem(acts, 15)->valuestring, "move OBJ to OBJ");
    assert_string_equal(cJSON_GetArrayItem(acts, 25)->valuestring, "wait1");
    cJSON_Delete(j);

    /* /goals: the goal-progress text, boil's three sequential sub-goals not done */
    j = call(g, "GET", "/goals", "id=0", NULL, 0, &st);
    const char *gp = field(j, "goals")->valuestring;
    assert_true(!strncmp(gp, "Completed keys: \n", 17));
    assert_non_null(strstr(gp, "\nSequential Subgoals:\n"));
    assert_non_null(strstr(gp, "\n2\tfalse\t"));
    assert_null(strstr(gp, "\ttrue\t"));
    cJSON_Delete(j);

    /* the object tree: the universe holding rooms, the agent somewhere with its inventory */
    j = call(g, "GET", "/object_tree", "id=0", NULL, 0, &st);
    const cJSON *tree = field(j, "object_tree");
    assert_string_equal(field(tree, "name")->valuestring, "universe");
    assert_non_null(find_type(tree, "room"));
    const cJSON *agent = find_type(tree, "agent");
    assert_non_null(agent);
    assert_non_null(find_type(agent, "inventory"));
    assert_true(cJSON_IsFalse(field(agent, "isDeleted")));
    cJSON_Delete(j);

    /* /state: the free look is the room the reset showed; no move spent; lists cut at 10 */
    j = call(g, "GET", "/state", "id=0", NULL, 0, &st);
    char look[2048];
    snprintf(look, sizeof look, "%s", field(j, "observation")->valuestring);
    assert_true(strlen(look) > 20 && !strncmp(look, field(reset, "observation")->valuestring, strlen(look)));
    assert_non_null(strstr(field(j, "inventory")->valuestring, "inventory"));
    assert_string_equal(field(j, "task_description")->valuestring, field(reset, "task_description")->valuestring);
    assert_int_equal(cJSON_GetArraySize(field(j, "possible_actions")), 10);
    assert_int_equal(cJSON_GetArraySize(field(j, "possible_objects")), 10);
    assert_int_equal(field(j, "current_moves")->valueint, 0);
    assert_string_equal(field(field(j, "environment_info"), "task_name")->valuestring, "boil");
    cJSON_Delete(j);

    /* /step_visual: "</s>" dropped, the text after "Action:" played; info, tree, inventory, moves */
    j = call(g, "POST", "/step_visual", NULL, "{\"id\": 0, \"action\": \"Thought: look first.\\nAction:  look around \\nAction: x</s>\"}", 0, &st);
    assert_null(err_of(j));
    assert_string_equal(field(j, "observation")->valuestring, look);   /* the free look's words = the step's */
    assert_int_equal(field(j, "moves")->valueint, 1);
    assert_int_equal(field(field(j, "info"), "moves")->valueint, 1);
    assert_string_equal(field(field(j, "info"), "taskName")->valuestring, "boil");
    assert_string_equal(field(field(j, "info"), "look")->valuestring, look);
    assert_string_equal(field(field(j, "info"), "simplificationStr")->valuestring, "");
    assert_true(cJSON_GetArraySize(field(field(j, "info"), "valid")) > 0);
    assert_string_equal(field(field(j, "object_tree"), "name")->valuestring, "universe");
    assert_non_null(strstr(field(j, "inventory")->valuestring, "inventory"));
    cJSON_Delete(j);
    j = call(g, "GET", "/detail", "id=0", NULL, 0, &st);   /* the info dict took the answer's fields */
    assert_non_null(field(j, "object_tree"));
    assert_int_equal(field(j, "moves")->valueint, 1);
    cJSON_Delete(j);
    j = call(g, "POST", "/step_visual", NULL, "{\"id\": 0, \"action\": \"inventory</s>\"}", 0, &st);
    assert_string_equal(field(j, "observation")->valuestring, field(j, "inventory")->valuestring);
    cJSON_Delete(j);
    j = call(g, "GET", "/state", "id=0", NULL, 0, &st);
    assert_int_equal(field(j, "current_moves")->valueint, 2);
    cJSON_Delete(j);
    cJSON_Delete(reset);

    /* errors: unknown and closed ids, bad bodies, the routes only sciworld has */
    j = call(g, "GET", "/object_tree", "id=9", NULL, 0, &st);
    assert_string_equal(err_of(j), "The id 9 is not valid.");
    cJSON_Delete(j);
    j = call(g, "POST", "/step_visual", NULL, "{\"id\": 9, \"action\": \"look around\"}", 0, &st);
    assert_string_equal(err_of(j), "The id 9 is not valid.");
    cJSON_Delete(j);
    j = call(g, "POST", "/step_visual", NULL, "{\"id\": 0}", 0, &st);
    assert_int_equal(st, 422);
    cJSON_Delete(j);
    j = call(g, "POST", "/step_visual", NULL, "{\"id\": 0, \"action\": ", 0, &st);
    assert_int_equal(st, 422);
    cJSON_Delete(j);
    j = call(g, "GET", "/step_visual", "id=0", NULL, 0, &st);
    assert_int_equal(st, 405);
    cJSON_Delete(j);
    j = call(g, "GET", "/state", "id=zero", NULL, 0, &st);
    assert_int_equal(st, 422);
    cJSON_Delete(j);
    cJSON_Delete(call(g, "POST", "/close", NULL, "{\"id\": 0}", 0, &st));
    j = call(g, "GET", "/state", "id=0", NULL, 0, &st);
    assert_string_equal(err_of(j), "The task with environment 0 has been deleted.");
    cJSON_Delete(j);
    m2_gym_free(g);

    cfg.env = "textcraft";
    assert_int_equal(m2_gym_create(&g, &cfg, &err), 0);
    j = call(g, "GET", "/object_tree", "id=0", NULL, 0, &st);
    assert_int_equal(st, 404);
    cJSON_Delete(j);
    m2_gym_free(g);
}

/* TextCraft's /create with the caller's own commands and goal: shown as given, played to a win. */
static void textcraft_custom_commands_and_goal(void **state) {
    m2_gym *g;
    m2_err err = {0};
    m2_gym_config cfg = {.env = "textcraft"};
    assert_int_equal(m2_gym_create(&g, &cfg, &err), 0);
    int st;
    cJSON *j = call(g, "POST", "/create", NULL,
                    "{\"commands\": \"craft 4 pine planks using 1 pine logs\", \"goal\": \"minecraft:pine_planks\"}", 0, &st);
    assert_int_equal(st, 200);
    assert_int_equal(field(j, "id")->valueint, 0);
    assert_string_equal(field(j, "observation")->valuestring,
                        "Crafting commands:\ncraft 4 pine planks using 1 pine logs\n\nGoal: craft pine planks.");
    cJSON_Delete(j);
    j = call(g, "GET", "/commands", "id=0", NULL, 0, &st);
    assert_string_equal(j->valuestring, "craft 4 pine planks using 1 pine logs");
    cJSON_Delete(j);
    j = call(g, "GET", "/goal", "id=0", NULL, 0, &st);
    assert_string_equal(j->valuestring, "minecraft:pine_planks");
    cJSON_Delete(j);
    j = call(g, "GET", "/observation", "id=0", NULL, 0, &st);
    assert_non_null(strstr(j->valuestring, "Goal: craft pine planks."));
    cJSON_Delete(j);
    cJSON_Delete(call(g, "POST", "/step", NULL, "{\"id\": 0, \"action\": \"get 1 pine logs\"}", 0, &st));
    j = call(g, "POST", "/step", NULL, "{\"id\": 0, \"action\": \"craft 4 pine planks using 1 pine logs\"}", 0, &st);
    assert_int_equal(field(j, "reward")->valueint, 1);   /* the caller's goal is the one that wins */
    assert_true(cJSON_IsTrue(field(j, "done")));
    cJSON_Delete(j);
    /* a reset plays data_idx's episode again, its own commands and goal */
    cJSON_Delete(call(g, "POST", "/reset", NULL, "{\"id\": 0, \"data_idx\": 0}", 0, &st));
    j = call(g, "GET", "/commands", "id=0", NULL, 0, &st);
    assert_true(cJSON_IsString(j) && strcmp(j->valuestring, "craft 4 pine planks using 1 pine logs"));
    cJSON_Delete(j);

    /* bad values: errors that name the field; the id they took is gone, as AgentGym's */
    static const struct { const char *body, *want; int status; } bad[] = {
        {"{\"goal\": \"minecraft:pine_planks\"}", "go together", 200},
        {"{\"commands\": \"craft 4 pine planks using 1 pine logs\"}", "go together", 200},
        {"{\"commands\": \"x\", \"goal\": \"pine_planks\"}", "item id", 200},
        {"{\"commands\": \"x\", \"goal\": \"minecraft:\"}", "item id", 200},
        {"{\"commands\": \"x\", \"goal\": \"minecraft:unobtainium\"}", "\"minecraft:unobtainium\" is not an item", 200},
        {"{\"commands\": \"x\", \"goal\": \"minecraft:pine_logs\"}", "can craft", 200},   /* a base item */
        {"{\"commands\": \" \\n\", \"goal\": \"minecraft:pine_planks\"}", "commands is empty", 200},
        {"{\"commands\": 4, \"goal\": \"minecraft:pine_planks\"}", "body.commands", 422},
        {"{\"commands\": \"x\", \"goal\": [1]}", "body.goal", 422},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        j = call(g, "POST", "/create", NULL, bad[i].body, 0, &st);
        assert_int_equal(st, bad[i].status);
        const cJSON *m = field(j, st == 200 ? "error" : "detail");
        assert_true(cJSON_IsString(m));
        if (!strstr(m->valuestring, bad[i].want)) fail_msg("%s -> %s (wanted %s)", bad[i].body, m->valuestring, bad[i].want);
        cJSON_Delete(j);
    }
    assert_int_equal(m2_gym_open_envs(g), 1);
    j = call(g, "POST", "/create", NULL, "{\"commands\": null, \"goal\": null}", 0, &st);   /* nulls: a plain create */
    assert_null(err_of(j));
    assert_true(cJSON_IsNumber(field(j, "id")));
    cJSON_Delete(j);
    m2_gym_free(g);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(routes_and_statuses),
        cmocka_unit_test(idle_expiry_uses_the_callers_clock),
        cmocka_unit_test(unknown_names_are_errors),
        cmocka_unit_test(threads_on_the_same_ids),
        cmocka_unit_test(sciworld_state_routes),
        cmocka_unit_test(textcraft_custom_commands_and_goal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
