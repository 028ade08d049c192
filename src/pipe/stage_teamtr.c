/* The TeamTR pipeline of a shared-context team over questions (issue #16): the task family's
 * questions and pre-training transcripts, and the `teamtr` stage: teamtr.stages stages of
 * agent-by-agent updates (pipe/team_run.h: metrics, checkpoints, the certificate beside the measured
 * gain), then every agent's PEFT folder and the greedy evaluation of the chain, each agent alone and
 * the best of them, with the measured success per difficulty (worked steps), in eval.json. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/io.h"
#include "pipe/pipe.h"
#include "pipe/team_run.h"
#include "pipe/world.h"

/* ---------------------------------------------------------------- tasks and the team's shape */

int pw_team_tasks(const m2_run_config *cfg, int split, m2_qa_set *qs, m2_err *err) {
    int test = split == M2_QA_SPLIT_TEST;
    uint64_t seed = pw_seed(cfg, PW_SEED_TEAM_TASKS);
    switch (cfg->teamtr_task_family) {
    case M2_TEAMTR_TASK_ARITHMETIC:
        if (cfg->teamtr_task_min_ops > cfg->teamtr_task_max_ops)
            return m2_errorf(err, M2_ECONFIG, "teamtr.task.min_ops %lld is more than teamtr.task.max_ops %lld",
                             (long long)cfg->teamtr_task_min_ops, (long long)cfg->teamtr_task_max_ops);
        return m2_qa_arith(seed, split, (int)(test ? cfg->teamtr_task_test : cfg->teamtr_task_train),
                           (int)cfg->teamtr_task_train, (int)cfg->teamtr_task_min_ops, (int)cfg->teamtr_task_max_ops, qs, err);
    case M2_TEAMTR_TASK_CRAFT:
        return m2_qa_craft(cfg->env_data[0] ? cfg->env_data : NULL, seed, split,
                           (int)(test ? cfg->teamtr_task_test : cfg->teamtr_task_train), qs, err);
    default: {
        const char *path = test ? cfg->teamtr_task_test_path : cfg->teamtr_task_path;
        if (!path[0])
            return m2_errorf(err, M2_ECONFIG, "%s: empty (teamtr.task.family jsonl needs the file)",
                             test ? "teamtr.task.test_path" : "teamtr.task.path");
        return m2_qa_load_jsonl(path, qs, err);
    }
    }
}

static int team_size(const m2_run_config *cfg) { return (int)cfg->teamtr_agents; }

/* The team's protocol from the config (agents filled by the caller). */
static void team_shape(const m2_run_config *cfg, m2_team *t) {
    memset(t, 0, sizeof *t);
    t->n = team_size(cfg);
    t->protocol = cfg->teamtr_protocol == M2_TEAMTR_PROTOCOL_ROUTER ? M2_TEAM_ROUTER : M2_TEAM_CHAIN;
    t->order = cfg->teamtr_order == M2_TEAMTR_ORDER_RANDOM ? M2_TEAM_RANDOM : M2_TEAM_ROUND_ROBIN;
    t->turns = (int)cfg->teamtr_turns;
    t->order_seed = pw_seed(cfg, PW_SEED_TEAM_ORDER);
}

/* Question i played by the team with its worked solution split between the turns' speakers. */
static int worked_transcript(const m2_team *shape, const m2_qa *q, int i, m2_traj *tr, m2_err *err) {
    m2_team_sample s = {.id = (uint64_t)i};
    s.n_turns = m2_team_schedule(shape, s.id, s.speaker);
    if (s.n_turns < 1) return m2_errorf(err, M2_ECONFIG, "teamtr: no team of %d agents and %d turns", shape->n, shape->turns);
    if (m2_qa_parts(q, s.n_turns, s.msg, err)) return -1;
    int rc = m2_team_context(q->question, &s, s.n_turns, tr, err);
    m2_team_sample_free(&s);
    return rc;
}

char *pw_team_corpus(const m2_run_config *cfg, size_t *len, m2_err *err) {
    m2_qa_set qs;
    if (pw_team_tasks(cfg, M2_QA_SPLIT_TRAIN, &qs, err)) return NULL;
    m2_team shape;
    team_shape(cfg, &shape);
    m2_strbuf sb = {0};
    int rc = 0;
    for (int i = 0; i < qs.n && !rc; i++) {
        m2_traj tr;
        if ((rc = worked_transcript(&shape, &qs.q[i], i, &tr, err))) break;
        /* the text as the packing concatenates it (segments without separators), one line each */
        rc = m2_strbuf_puts(&sb, tr.prompt);
        for (int t = 0; t < tr.n_states && !rc; t++) {
            rc = m2_strbuf_puts(&sb, tr.states[t]);
            if (!rc && t < tr.n_actions) rc = m2_strbuf_puts(&sb, tr.actions[t]);
        }
        if (!rc) rc = m2_strbuf_putc(&sb, '\n');
        m2_traj_free(&tr);
        if (rc) m2_errorf(err, M2_ENOMEM, "teamtr: out of memory");
    }
    m2_qa_set_free(&qs);
    if (rc) { m2_strbuf_free(&sb); return NULL; }
    *len = sb.len;
    return m2_strbuf_take(&sb);
}

int pw_team_pretrain_set(const m2_run_config *cfg, const m2_tok_iface *tok, int seq_len, m2_seqset *set, m2_err *err) {
    m2_qa_set qs;
    if (pw_team_tasks(cfg, M2_QA_SPLIT_TRAIN, &qs, err)) return -1;
    m2_team shape;
    team_shape(cfg, &shape);
    int rc = 0;
    for (int i = 0; i < qs.n && !rc; i++) {
        m2_traj tr;
        if ((rc = worked_transcript(&shape, &qs.q[i], i, &tr, err))) break;
        if (set->n == set->cap) {
            int nc = set->cap ? 2 * set->cap : 256;
            m2_packed *np = realloc(set->seq, (size_t)nc * sizeof *np);
            if (!np) { m2_traj_free(&tr); rc = m2_errorf(err, M2_ENOMEM, "teamtr: out of memory"); break; }
            set->seq = np;
            set->cap = nc;
        }
        m2_err pe = {0};
        if (m2_pack_traj(tok, &tr, seq_len, &set->seq[set->n], &pe)) {
            if (pe.code != M2_ESHAPE) { if (err) *err = pe; rc = -1; }
            else set->n_dropped++;   /* longer than pretrain.seq_len */
        } else {
            set->n++;
        }
        m2_traj_free(&tr);
    }
    m2_qa_set_free(&qs);
    return rc;
}

/* ---------------------------------------------------------------- evaluation */

/* The JSONL record of one played question (one line, no newline; malloc'd, NULL: out of memory). */
static char *record_of(int index, const m2_qa *q, const m2_team_sample *s) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", index);
    cJSON_AddStringToObject(o, "question", q->question);
    cJSON_AddStringToObject(o, "answer", q->answer);
    cJSON *sp = cJSON_AddArrayToObject(o, "speakers"), *ms = cJSON_AddArrayToObject(o, "messages");
    for (int j = 0; j < s->n_turns; j++) {
        cJSON_AddItemToArray(sp, cJSON_CreateNumber(s->speaker[j] + 1));
        cJSON_AddItemToArray(ms, cJSON_CreateString(s->msg[j] ? s->msg[j] : ""));
    }
    cJSON_AddBoolToObject(o, "success", s->reward > 0);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return t;
}

/* Team t plays the first n test questions greedily over the ranks of d (NULL: alone): rank r plays
 * its block (m2_dist_shard), and every rank receives every question's record, in question order, as
 * lines of *all (malloc'd). */
static int play_records(const m2_team *t, const m2_qa_set *test, int n, const m2_team_gen *g, m2_team_sample *s,
                        m2_dist *d, char **all, m2_err *err) {
    int64_t lo, cnt;
    m2_dist_shard(n, d ? d->rank : 0, d ? d->world : 1, &lo, &cnt);
    for (int i = 0; i < n; i++) s[i] = (m2_team_sample){.task = i, .id = (uint64_t)i};
    if (m2_team_play_block(t, test, s, n, (int)lo, (int)cnt, g, err)) return -1;
    m2_strbuf sb = {0};
    for (int i = (int)lo; i < lo + cnt; i++) {
        char *line = record_of(i, &test->q[i], &s[i]);
        if (!line || m2_strbuf_puts(&sb, line) || m2_strbuf_putc(&sb, '\n')) sb.oom = 1;
        free(line);
    }
    for (int i = 0; i < n; i++) m2_team_sample_free(&s[i]);
    size_t *lens = malloc((size_t)(d ? d->world : 1) * sizeof *lens);
    int rc = sb.oom || !lens ? m2_errorf(err, M2_ENOMEM, "teamtr: out of memory")
                             : m2_dist_allgather(d, sb.len ? m2_strbuf_str(&sb) : "", sb.len, all, lens, err);
    m2_strbuf_free(&sb);
    free(lens);
    return rc;
}

/* Greedy test success of the chain, of each agent alone (a team of one) and of the best of the
 * agents alone per question, over the first n questions, the questions split across the ranks of d;
 * chain records to jsonl (may be NULL; under MPI rank 0's). */
static int greedy_eval(const m2_team *team, const m2_qa_set *test, int n, int max_new, FILE *jsonl, m2_dist *d,
                       m2_team_eval *ev, m2_err *err) {
    memset(ev, 0, sizeof *ev);
    if (n <= 0 || n > test->n) n = test->n;
    ev->n_agents = team->n;
    ev->questions = n;
    m2_team_gen g = {.sampler = {.temperature = 0}, .max_new_tokens = max_new, .seed = 0};
    int *solved = calloc((size_t)(n ? n : 1), sizeof *solved);
    m2_team_sample *s = calloc((size_t)(n ? n : 1), sizeof *s);
    int rc = !solved || !s ? m2_errorf(err, M2_ENOMEM, "teamtr: out of memory") : 0;
    for (int k = -1; k < team->n && !rc; k++) {   /* k = -1: the chain */
        m2_team one = {.n = 1, .protocol = M2_TEAM_CHAIN};
        if (k >= 0) one.agent[0] = team->agent[k];
        char *all = NULL, *line, *save = NULL;
        if ((rc = play_records(k < 0 ? team : &one, test, n, &g, s, d, &all, err))) break;
        line = strtok_r(all, "\n", &save);
        for (int i = 0; i < n && !rc; i++, line = strtok_r(NULL, "\n", &save)) {
            cJSON *o = line ? cJSON_Parse(line) : NULL;
            if (!o) { rc = m2_errorf(err, M2_EFORMAT, "teamtr: question %d: no record", i); break; }
            float won = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "success")) ? 1.f : 0.f;
            cJSON_Delete(o);
            if (k < 0) {
                ev->chain += won / n;
                if (jsonl && fprintf(jsonl, "%s\n", line) < 0) rc = m2_errorf(err, M2_EIO, "eval records: write failed");
            } else {
                ev->alone[k] += won / n;
                solved[i] |= won > 0;
            }
        }
        free(all);
    }
    for (int i = 0; i < n && !rc; i++) ev->best_of += solved[i] / (double)n;
    free(solved);
    free(s);
    return rc;
}

/* The final greedy evaluation, written with the stages' summary to artifacts/teamtr/eval.json. */
static int final_eval(pw_team_run *r, const m2_team *team, const m2_qa_set *test, m2_stage_ctx *ctx, m2_err *err) {
    const m2_run_config *cfg = r->cfg;
    m2_team_eval ev;
    if (greedy_eval(team, test, (int)cfg->teamtr_eval_tasks, (int)cfg->teamtr_max_new_tokens, NULL, ctx->dist, &ev, err))
        return -1;
    cJSON *o = pw_team_run_summary(r);
    if (o) {
        cJSON_AddNumberToObject(o, "questions", ev.questions);
        cJSON_AddNumberToObject(o, "chain", ev.chain);
        cJSON *a = cJSON_AddArrayToObject(o, "alone");
        for (int k = 0; k < team->n; k++) cJSON_AddItemToArray(a, cJSON_CreateNumber(ev.alone[k]));
        cJSON_AddNumberToObject(o, "best_of", ev.best_of);
    }
    if (pw_team_write_summary(ctx, o, err)) return -1;
    if (ctx->out) {
        fprintf(ctx->out, "teamtr: greedy test success (%d questions): chain %.3f, best of agents alone %.3f, alone",
                ev.questions, ev.chain, ev.best_of);
        for (int k = 0; k < team->n; k++) fprintf(ctx->out, " %.3f", ev.alone[k]);
        fprintf(ctx->out, " -> %s/eval.json\n", ctx->artifacts);
    }
    return 0;
}

int m2_pipe_eval_team_run(const char *run_dir, int n, FILE *jsonl, m2_team_eval *out, m2_err *err) {
    return m2_pipe_eval_team_run_dist(run_dir, n, jsonl, out, NULL, err);
}

int m2_pipe_eval_team_run_dist(const char *run_dir, int n, FILE *jsonl, m2_team_eval *out, m2_dist *dist, m2_err *err) {
    char path[1300];
    snprintf(path, sizeof path, "%s/config.yaml", run_dir);
    m2_run_config *cfg = malloc(sizeof *cfg);
    if (!cfg) return m2_errorf(err, M2_ENOMEM, "out of memory");
    if (m2_run_config_load(cfg, path, 0, NULL, err)) { free(cfg); return -1; }
    if (!m2_method_of(cfg)->team) {
        m2_errorf(err, M2_EINVAL, "%s: method %s is no team run", run_dir, m2_method_names[cfg->method]);
        free(cfg);
        return -1;
    }
    pw_world w;
    if (pw_open(&w, cfg, run_dir, 1, err)) { free(cfg); return -1; }
    m2_team team;
    team_shape(cfg, &team);
    m2_qa_set test;
    m2_qa_set_init(&test);
    int rc = pw_team_tasks(cfg, M2_QA_SPLIT_TEST, &test, err);
    for (int k = 0; k < team.n && !rc; k++) {
        char name[32], dir[1400];
        snprintf(name, sizeof name, "agent%d", k + 1);
        snprintf(dir, sizeof dir, "%s/artifacts/teamtr/adapter_%s", run_dir, name);
        if (!m2_path_exists(dir)) { rc = m2_errorf(err, M2_ENOTFOUND, "%s: missing (the teamtr stage writes it at its end)", dir); break; }
        m2_adapter *a = m2_peft_load(w.m, dir, name, err);
        if (!a) { rc = -1; break; }
        team.agent[k] = (m2_team_agent){.model = w.m, .adapter = a, .tok = &w.tok};
    }
    if (!rc) rc = greedy_eval(&team, &test, n > 0 ? n : (int)cfg->teamtr_eval_tasks, (int)cfg->teamtr_max_new_tokens,
                              jsonl, dist, out, err);
    m2_qa_set_free(&test);
    pw_close(&w);
    free(cfg);
    return rc;
}

/* "N steps": the difficulty label of a question (its worked steps; a JSONL item has none). */
static char *steps_label(const m2_qa *q) {
    char b[32];
    snprintf(b, sizeof b, "%d step%s", q->n_steps, q->n_steps == 1 ? "" : "s");
    return strdup(b);
}

int m2_stage_teamtr(m2_stage_ctx *ctx, m2_err *err) {
    const m2_run_config *cfg = ctx->cfg;
    pw_world w;
    if (pw_open(&w, cfg, ctx->run->dir, 1, err)) return -1;
    pw_team_run r = {.cfg = cfg, .loop = pw_team_loop_cfg(cfg)};
    m2_team team;
    team_shape(cfg, &team);
    m2_qa_set train, test;
    m2_qa_set_init(&train);
    m2_qa_set_init(&test);
    m2_team_qa qa_train = {.team = &team, .qs = &train}, qa_test = {.team = &team, .qs = &test};
    char **labels = NULL;
    int rc = -1;
    if (pw_team_tasks(cfg, M2_QA_SPLIT_TRAIN, &train, err) || pw_team_tasks(cfg, M2_QA_SPLIT_TEST, &test, err)) goto out;
    /* the agents: an adapter each on the shared base, a frozen snapshot, and the initial policy for kl_init */
    for (int k = 0; k < team.n; k++) {
        m2_lora_config lo = {.rank = (int)cfg->teamtr_lora_rank, .alpha = (float)cfg->teamtr_lora_alpha};
        if (m2_lora_parse_targets(cfg->teamtr_lora_targets, &lo.targets) != 0 || !lo.targets) lo.targets = M2_LORA_Q | M2_LORA_V;
        snprintf(lo.name, sizeof lo.name, "agent%d", k + 1);
        m2_adapter *a = m2_adapter_add(w.m, &lo, pw_seed(cfg, (pw_seed_purpose)(PW_SEED_ADAPTER_AGENT0 + k)), err);
        snprintf(lo.name, sizeof lo.name, "agent%d_old", k + 1);
        m2_adapter *o = a ? m2_adapter_add(w.m, &lo, 0, err) : NULL;
        if (!o || m2_adapter_set_trainable(o, 0, err)) goto out;
        team.agent[k] = (m2_team_agent){.model = w.m, .adapter = a, .tok = &w.tok};
        r.tt.old[k] = o;
        r.update[k] = k;
        if (cfg->teamtr_kl_init > 0) {
            snprintf(lo.name, sizeof lo.name, "agent%d_init", k + 1);
            m2_adapter *i0 = m2_adapter_add(w.m, &lo, 0, err);
            if (!i0 || m2_adapter_copy_weights(i0, a, err) || m2_adapter_set_trainable(i0, 0, err)) goto out;
            r.tt.init[k] = i0;
        }
    }
    m2_teamtr_set_team(&r.tt, &team);
    r.n_update = team.n;
    r.tt.src = m2_team_qa_source(&qa_train);
    r.n_train = train.n;
    r.test = m2_team_qa_source(&qa_test);
    r.n_test = cfg->teamtr_eval_tasks > 0 && cfg->teamtr_eval_tasks < test.n ? (int)cfg->teamtr_eval_tasks : test.n;
    if (!(labels = calloc((size_t)(r.n_test > 0 ? r.n_test : 1), sizeof *labels))) { m2_errorf(err, M2_ENOMEM, "teamtr: out of memory"); goto out; }
    for (int i = 0; i < r.n_test; i++)
        if (!(labels[i] = steps_label(&test.q[i]))) { m2_errorf(err, M2_ENOMEM, "teamtr: out of memory"); goto out; }
    r.test_label = (const char *const *)labels;
    char label[96];
    snprintf(label, sizeof label, "%d agent%s (%s, %s)", team.n, team.n == 1 ? "" : "s",
             team.protocol == M2_TEAM_ROUTER ? "router" : "chain", team.order == M2_TEAM_RANDOM ? "random" : "round robin");
    if (pw_team_run_stages(ctx, &r, label, err)) goto out;
    for (int k = 0; k < team.n; k++)
        if (m2_stage_writes(ctx) && pw_save_adapter(&w, team.agent[k].adapter, ctx->artifacts, err)) goto out;
    if (final_eval(&r, &team, &test, ctx, err)) goto out;
    rc = 0;
out:
    pw_team_run_free(&r);
    m2_team_qa_free(&qa_train);
    m2_team_qa_free(&qa_test);
    for (int i = 0; labels && i < r.n_test; i++) free(labels[i]);
    free(labels);
    m2_qa_set_free(&train);
    m2_qa_set_free(&test);
    pw_close(&w);
    return rc;
}
