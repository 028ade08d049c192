/* multi2 serve: AgentGym's HTTP environment servers (textcraft, alfworld, sciworld) on
 * libmicrohttpd. The protocol is env/agentgym.c's (request in, JSON out, no sockets); this file
 * only carries bytes: it collects a request body up to the limit, hands it over and sends the
 * answer. SIGINT / SIGTERM stop it cleanly (every environment freed). */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli/cli.h"
#include "env/agentgym.h"

#define SERVE_PORT_DEFAULT 8000          /* uvicorn's, which AgentGym's launchers use unless told */
#define SERVE_THREADS_DEFAULT 4
#define SERVE_CONN_TIMEOUT_S 300         /* AgentGym's clients wait up to 300 s for an answer */

typedef struct serve_ctx {
    m2_gym *gym;
    size_t max_body;
} serve_ctx;

typedef struct conn {   /* one request being received */
    char *buf;
    size_t len, cap;
    int too_big;
} conn;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static enum MHD_Result send_json(struct MHD_Connection *c, int status, char *text) {
    if (!text) return MHD_NO;   /* out of memory: drop the connection */
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    if (!r) { free(text); return MHD_NO; }
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    serve_ctx *ctx = cls;
    conn *k = *con_cls;
    if (!k) {   /* headers only. A body declared over the limit is read and dropped, then refused
                 * (413): answering before it is read makes clients see a broken pipe, not the 413 */
        if (!(k = calloc(1, sizeof *k))) return MHD_NO;
        *con_cls = k;
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > ctx->max_body) k->too_big = 1;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!k->too_big && k->len + *upload_size > ctx->max_body) {
            k->too_big = 1;
            free(k->buf);
            k->buf = NULL;
            k->len = k->cap = 0;
        }
        if (!k->too_big) {
            if (k->len + *upload_size + 1 > k->cap) {
                size_t cap = (k->len + *upload_size + 1) * 2;
                if (cap > ctx->max_body + 1) cap = ctx->max_body + 1;
                char *b = realloc(k->buf, cap);
                if (!b) return MHD_NO;
                k->buf = b;
                k->cap = cap;
            }
            memcpy(k->buf + k->len, upload, *upload_size);
            k->len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    /* the query: AgentGym's GET routes read only ?id= */
    char query[64] = "";
    const char *id = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "id");
    if (id && strlen(id) < sizeof query - 4) snprintf(query, sizeof query, "id=%s", id);
    int status;
    char *text = m2_gym_handle(ctx->gym, method, url, query, k->buf, k->too_big ? ctx->max_body + 1 : k->len, now_s(), &status);
    return send_json(c, status, text);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls; (void)c; (void)toe;
    conn *k = *con_cls;
    if (k) { free(k->buf); free(k); }
    *con_cls = NULL;
}

static void usage(FILE *f) {
    fprintf(f,
        "usage: multi2 serve --env textcraft|alfworld|sciworld [--host 127.0.0.1|::1] [--port 8000] [--data PATH]\n"
        "                    [--seed 0] [--threads 4] [--max-envs %d] [--idle-seconds %g] [--max-body %d]\n\n"
        "Serves one environment over HTTP with AgentGym's routes and JSON (agentenv-textcraft, -alfworld,\n"
        "-sciworld), so AgentGym's clients and AgentGym-RL's rollouts use multi2's environments unchanged.\n"
        "--port 0 picks a free port; the first line printed names the address. Binds to IPv4 loopback\n"
        "unless --host names another address (IPv4, or IPv6 such as ::1). At most --max-envs environments\n"
        "are open; one idle for --idle-seconds is closed; a request body over --max-body bytes is refused\n"
        "(413). Every reset uses --seed.\n"
        "Routes and index order: docs/python.md. Stop with Ctrl-C or SIGTERM.\n",
        M2_GYM_MAX_ENVS_DEFAULT, M2_GYM_IDLE_SECONDS_DEFAULT, M2_GYM_MAX_BODY_DEFAULT);
}

static int parse_ll(const char *s, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cmd_serve(int argc, char **argv) {
    const char *env = NULL, *host = "127.0.0.1", *data = NULL;
    long long port = SERVE_PORT_DEFAULT, threads = SERVE_THREADS_DEFAULT, max_envs = M2_GYM_MAX_ENVS_DEFAULT,
              max_body = M2_GYM_MAX_BODY_DEFAULT, seed = 0;
    double idle = M2_GYM_IDLE_SECONDS_DEFAULT;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (i + 1 >= argc) { fprintf(stderr, "multi2 serve: option '%s' needs a value (see --help)\n", a); return 2; }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--env")) env = v;
        else if (!strcmp(a, "--host")) host = v;
        else if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "--port")) bad = parse_ll(v, 0, 65535, &port);
        else if (!strcmp(a, "--threads")) bad = parse_ll(v, 1, 256, &threads);
        else if (!strcmp(a, "--max-envs")) bad = parse_ll(v, 1, 1000000, &max_envs);
        else if (!strcmp(a, "--max-body")) bad = parse_ll(v, 64, 1LL << 30, &max_body);
        else if (!strcmp(a, "--seed")) bad = parse_ll(v, 0, (1LL << 62), &seed);
        else if (!strcmp(a, "--idle-seconds")) {
            char *end;
            idle = strtod(v, &end);
            bad = end == v || *end || !(idle > 0 && idle <= 1e9);
        } else { fprintf(stderr, "multi2 serve: unknown option '%s' (see --help)\n", a); return 2; }
        if (bad) { fprintf(stderr, "multi2 serve: %s '%s': out of range or not a number (see --help)\n", a, v); return 2; }
    }
    if (!env) { fprintf(stderr, "multi2 serve: --env is required\n"); usage(stderr); return 2; }
    /* an IPv4 address, or an IPv6 one (bare or in brackets: ::1, [::1]) */
    char host6[INET6_ADDRSTRLEN + 2] = "";
    if (!strcmp(host, "localhost")) host = "127.0.0.1";
    size_t hl = strlen(host);
    if (hl > 2 && hl < sizeof host6 && host[0] == '[' && host[hl - 1] == ']') snprintf(host6, sizeof host6, "%.*s", (int)hl - 2, host + 1);
    else snprintf(host6, sizeof host6, "%s", host);
    struct sockaddr_in addr4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    struct sockaddr_in6 addr6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    int ipv6 = 0;
    if (inet_pton(AF_INET, host, &addr4.sin_addr) != 1) {
        ipv6 = inet_pton(AF_INET6, host6, &addr6.sin6_addr) == 1;
        if (!ipv6) {
            fprintf(stderr, "multi2 serve: --host '%s': expected an IPv4 or IPv6 address such as 127.0.0.1 or ::1\n", host);
            return 2;
        }
    }
    m2_gym_config cfg = {.env = env, .data_path = data, .seed = (uint64_t)seed, .max_envs = (int)max_envs,
                         .idle_seconds = idle, .max_body = (size_t)max_body};
    m2_err err = {0};
    serve_ctx ctx = {0};
    if (m2_gym_create(&ctx.gym, &cfg, &err)) { fprintf(stderr, "multi2 %s\n", err.msg); return 1; }
    ctx.max_body = m2_gym_max_body(ctx.gym);
    /* a client gone mid-answer must not end the server */
    signal(SIGPIPE, SIG_IGN);
    /* the daemon's threads inherit this mask; the main thread waits for the signals itself */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG | (ipv6 ? MHD_USE_IPv6 : 0), (uint16_t)port, NULL,
        NULL, on_request, &ctx,
        MHD_OPTION_SOCK_ADDR, ipv6 ? (struct sockaddr *)&addr6 : (struct sockaddr *)&addr4,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)threads,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)SERVE_CONN_TIMEOUT_S,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
        MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "multi2 serve: cannot listen on %s:%lld (%s)\n", host, port, errno ? strerror(errno) : "libmicrohttpd refused");
        m2_gym_free(ctx.gym);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("multi2 serve: %s on http://%s%s%s:%u/ (%lld threads, at most %lld environments, idle expiry %g s, body limit %lld bytes)\n",
           env, ipv6 ? "[" : "", ipv6 ? host6 : host, ipv6 ? "]" : "", info ? info->port : (unsigned)port, threads, max_envs,
           idle, max_body);
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    MHD_stop_daemon(d);
    printf("multi2 serve: stopped (signal %d), %d environments closed\n", sig, m2_gym_open_envs(ctx.gym));
    m2_gym_free(ctx.gym);
    return 0;
}
