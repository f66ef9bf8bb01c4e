/*
 * ikd/client.h: libikdclient, the C network client of ikd, for C and C++
 * programs (game servers, robot controllers; the header compiles as C11 and
 * as C++11 or later). It speaks ikd's wire protocol (proto/README.md for
 * HTTP, proto/STREAM.md for the WebSocket) and turns its answers into the
 * typed structs below.
 *
 * Two objects:
 *   - ikd_client: HTTP over libcurl (solve, batch, register, describe and
 *     forget a chain, list the solvers). Every call blocks until its answer
 *     (or options.timeout_ms); a chain registered through the client is
 *     registered again, and the call retried once, when a replica answers
 *     unknown_chain (it restarted, or the balancer chose another replica).
 *   - ikd_conn: one WebSocket (ws:// or wss://) carrying many named streams
 *     and ticks, non-blocking, for a program's own loop: it exposes a file
 *     descriptor and the poll events it waits for (ikd_conn_fd,
 *     ikd_conn_events) and a deadline (ikd_conn_timeout_ms); the loop calls
 *     ikd_conn_process when the descriptor is ready or the deadline has come
 *     (or calls ikd_conn_poll, which does both). Answers arrive through one
 *     callback, ikd_conn_opts.on_event. Blocking helpers for scripts
 *     (ikd_conn_wait_connected, ikd_stream_solve, ikd_tick_wait) drive the
 *     same connection until their answer comes.
 *
 * ERRORS. Every function that can fail returns 0 (IKD_OK) or a negative
 * IKD_E_* code from IKD_ERROR_MAP (one table: ikd's own wire codes, then the
 * client's), and fills the caller's ikd_error (which may be NULL) with the
 * code, ikd's code word, message and JSON path. On error nothing was sent
 * and every output pointer is left NULL. A function returning a pointer
 * returns NULL on error.
 *
 * MEMORY. Objects returned through an output pointer (ikd_answer,
 * ikd_chain_info, ikd_result, ikd_tick, text) belong to the caller and are
 * freed with their _free function. What an event points to (its result,
 * tick, error, text) belongs to the connection and is valid only until the
 * callback returns: copy what you keep (ikd_result_copy, ikd_tick_copy).
 * Bounded memory, the policy: the connection queues nothing it has read.
 * Each message is decoded as it completes and handed to the callback, in
 * the order ikd sent it, and its memory is reused for the next one; a
 * program that ignores its solutions therefore holds no more than the
 * largest message (at most ikd_conn_opts.max_message) and its decoded
 * form. A program that stops calling ikd_conn_process leaves answers in
 * the kernel's socket buffer and then in ikd's send queue, which ikd bounds
 * (--max-send-queue; past it ikd closes the connection with 1008), while
 * ikd itself conflates targets (a stream's newest target replaces the one
 * waiting; a tick replaces the waiting tick), so nothing grows without
 * bound on either side. What the program sends waits in the connection's
 * send queue until ikd_conn_process writes it; a send that would take the
 * queue past ikd_conn_opts.max_send_queue is refused (IKD_E_SEND_QUEUE_FULL)
 * and nothing of it is queued: a control loop drops that target, or waits.
 *
 * THREADS. An ikd_client or ikd_conn is used by one thread at a time
 * (distinct objects may be used from distinct threads at once). Callbacks
 * run on the thread that called ikd_conn_process (or a blocking helper),
 * and may call the send functions of their connection and ikd_conn_close;
 * not ikd_conn_free, ikd_conn_process or the blocking helpers (those
 * answer IKD_E_INVALID_ARGUMENT from a callback).
 *
 * NAMES. Host names are resolved with getaddrinfo(), which may block; the
 * non-blocking part of a connection starts once the address is known
 * (numeric addresses never block). Every number sent is finite (a NaN or an
 * infinity is refused with IKD_E_INVALID_ARGUMENT, naming the member) and
 * printed so that it reads back as the same double.
 */
#ifndef IKD_CLIENT_H
#define IKD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IKD_CLIENT_VERSION "0.2.0"

/* The version of the library linked (IKD_CLIENT_VERSION when it was built). */
const char *ikd_client_version(void);

/* ==== errors ============================================================
 *
 * X(ENUM, word, what it means). The first rows are ikd's wire codes
 * (proto/README.md, "Errors"; an error ikd answers carries its word in
 * ikd_error.wire_code), then the client's own from SERVER to UNEXPECTED;
 * wire codes ikd gained later follow them, at the end, so that no code's
 * number changes (it is the library's ABI). */
#define IKD_ERROR_MAP(X)                                                                           \
    X(INVALID_JSON, "invalid_json", "ikd could not read the message as JSON")                      \
    X(INVALID_REQUEST, "invalid_request", "a member is missing, unknown or invalid (see path)")    \
    X(UNKNOWN_TYPE, "unknown_type", "a stream message whose type ikd does not know")               \
    X(STREAM_EXISTS, "stream_exists", "a stream of that name is already open")                     \
    X(TOO_MANY_STREAMS, "too_many_streams", "more streams than a connection may have")             \
    X(UNAUTHORIZED, "unauthorized", "ikd wants a valid bearer token")                              \
    X(FORBIDDEN_ORIGIN, "forbidden_origin", "an Origin outside ikd's --allow-origin")              \
    X(NOT_FOUND, "not_found", "no such endpoint")                                                  \
    X(UNKNOWN_CHAIN, "unknown_chain", "no chain of that id is registered")                         \
    X(UNKNOWN_STREAM, "unknown_stream", "no stream of that name is open on the connection")        \
    X(METHOD_NOT_ALLOWED, "method_not_allowed", "the endpoint does not take that method")          \
    X(REQUEST_TIMEOUT, "request_timeout", "ikd did not receive the request whole in time")         \
    X(TOO_LARGE, "too_large", "a limit of ikd is exceeded (body, joints, targets, samples)")       \
    X(INVALID_CHAIN, "invalid_chain", "the chain cannot be built")                                 \
    X(INVALID_URDF, "invalid_urdf", "the URDF is malformed or has no chain between base and tip")  \
    X(UPGRADE_REQUIRED, "upgrade_required", "the stream endpoint wants a WebSocket upgrade")       \
    X(INTERNAL, "internal", "ikd failed, not the request")                                         \
    X(OVERLOADED, "overloaded", "ikd's solver queue is full: send again later")                    \
    X(SHUTTING_DOWN, "shutting_down", "ikd is shutting down")                                      \
    X(SERVER, "server_error", "an error whose code this client does not know (see wire_code)")     \
    X(INVALID_ARGUMENT, "invalid_argument", "a bad argument to a libikdclient function")           \
    X(NO_MEMORY, "no_memory", "out of memory")                                                     \
    X(CONNECT, "connect", "no connection: the name did not resolve, or the address refused")       \
    X(TLS, "tls", "the TLS handshake or a TLS record failed (an untrusted certificate, say)")      \
    X(HANDSHAKE, "handshake", "the WebSocket upgrade was refused or answered wrongly")             \
    X(PROTOCOL, "protocol", "ikd's bytes break the WebSocket protocol")                            \
    X(BAD_ANSWER, "bad_answer", "an answer that is not what the protocol describes")               \
    X(HTTP, "http", "the HTTP exchange failed (libcurl's words in message)")                       \
    X(TIMEOUT, "timeout", "no answer in time")                                                     \
    X(CONNECTION_LOST, "connection_lost", "the connection ended before the answer came")           \
    X(CLOSED, "closed", "the connection is closed")                                                \
    X(SEND_QUEUE_FULL, "send_queue_full", "the send queue is full: the message was not queued")    \
    X(MESSAGE_TOO_LARGE, "message_too_large", "a message or answer larger than the limit set")     \
    X(UNEXPECTED, "unexpected_message", "a message the waiting call did not expect")               \
    X(INVALID_SRDF, "invalid_srdf", "the SRDF is malformed or names a link the URDF lacks")        \
    X(UNKNOWN_SCENE, "unknown_scene", "no scene of that id is registered")

/* The codes: IKD_OK, then IKD_E_<ENUM> = -1, -2, ... in the table's order. */
enum ikd__error_index {
#define IKD__ERROR_INDEX(name, word, text) IKD__EI_##name,
    IKD_ERROR_MAP(IKD__ERROR_INDEX)
#undef IKD__ERROR_INDEX
        IKD__EI_COUNT
};
typedef enum ikd_errcode {
    IKD_OK = 0,
#define IKD__ERROR_CODE(name, word, text) IKD_E_##name = -1 - IKD__EI_##name,
    IKD_ERROR_MAP(IKD__ERROR_CODE)
#undef IKD__ERROR_CODE
} ikd_errcode;

/* The word of a code ("invalid_request", "connect"), "ok" for IKD_OK, ""
 * outside the table. Static. */
const char *ikd_errcode_name(int code);
/* What a code means, in words. Static. */
const char *ikd_errcode_text(int code);
/* The code of one of ikd's wire words, IKD_E_SERVER when unknown. */
int ikd_errcode_from_wire(const char *word);

/* What went wrong: filled by every call that fails (caller-owned, fixed
 * size, never allocated; longer texts are truncated). */
typedef struct ikd_error {
    int code;             /* IKD_OK or an IKD_E_* code */
    int http_status;      /* an HTTP answer's status (or a refused upgrade's), else 0 */
    double retry_after_s; /* a 503's Retry-After in seconds, else 0 */
    long long seq;        /* the seq of the message it answers, when has_seq */
    bool has_seq;
    char wire_code[40]; /* ikd's code word as sent; "" for the client's own errors */
    char stream[72];    /* the stream it names; "" when none */
    char path[256];     /* JSON pointer into what was sent ("" for the whole) */
    char message[512];  /* ikd's words, or the client's */
} ikd_error;

/* ==== what is sent ======================================================
 *
 * A chain: ikd's chain object as JSON text (proto/README.md, "Chains"), or
 * the id of a registered one. Exactly one of the two is set. */
typedef struct ikd_chain {
    const char *json; /* {"kind": ...} */
    const char *id;   /* a chain_id */
} ikd_chain;

/* A target (proto/README.md, "Target"). The pointers are optional members
 * (NULL: absent). json, when set, is the whole target object as JSON text
 * and is sent instead of the members (tree targets, rotation matrices). */
typedef struct ikd_target {
    double position[3];
    int dims;                  /* 2 for planar chains ([x, y], and up); 0 or 3 otherwise */
    const double *orientation; /* [x, y, z, w] */
    const double *pole;        /* [x, y, z] */
    const double *up;          /* [x, y, z], or [x, y] on planar chains */
    const double *weights;     /* 6 weights */
    const char *json;
} ikd_target;

/* A seed (proto/README.md, "Seed"): count values of width numbers each (1:
 * joint values; 3: bone positions; 4: local rotations), or json, a seed
 * as JSON text sent as it is. NULL wherever a seed is optional. */
typedef struct ikd_seed {
    const double *values;
    size_t count;
    int width;
    const char *json;
} ikd_seed;

/* ==== what is answered ==================================================
 *
 * One solve's result (proto/README.md, "Responses"). A member ikd did not
 * send (options.fields leaves many out) has its bit clear in has and reads
 * as 0 or NULL. Arrays are flat: positions holds position_count points of
 * position_dim numbers (3, or 2 on planar chains), rotations and
 * local_rotations 4 numbers [x, y, z, w] each, solutions solution_list_count
 * rows of solution_width joint values. */
enum ikd_result_has {
    IKD_HAS_CODE = 1u << 0,
    IKD_HAS_REASON = 1u << 1,
    IKD_HAS_CAUSE = 1u << 2,
    IKD_HAS_JOINTS = 1u << 3,
    IKD_HAS_POSITIONS = 1u << 4,
    IKD_HAS_ROTATIONS = 1u << 5,
    IKD_HAS_LOCAL_ROTATIONS = 1u << 6,
    IKD_HAS_TIP = 1u << 7,
    IKD_HAS_TIPS = 1u << 8,
    IKD_HAS_POSITION_ERROR = 1u << 9,
    IKD_HAS_ORIENTATION_ERROR = 1u << 10,
    IKD_HAS_MAX_JOINT_STEP = 1u << 11,
    IKD_HAS_ARRIVED = 1u << 12,
    IKD_HAS_SOLUTIONS = 1u << 13,
    IKD_HAS_SOLUTION_COUNT = 1u << 14,
    IKD_HAS_ITERATIONS = 1u << 15,
    IKD_HAS_RESTARTS = 1u << 16,
    IKD_HAS_TIME_MS = 1u << 17,
    IKD_HAS_STATUS = 1u << 18 /* tips only: a result always has its status */
};

/* status, with MoveIt's codes in code (1, -31, -6, -16, 99999). */
typedef enum ikd_status {
    IKD_STATUS_OTHER = 0, /* a word this client does not know: see status_text */
    IKD_STATUS_SUCCESS,
    IKD_STATUS_NO_IK_SOLUTION,
    IKD_STATUS_TIMED_OUT,
    IKD_STATUS_INVALID_GOAL_CONSTRAINTS,
    IKD_STATUS_FAILURE
} ikd_status;

/* A tip of a tree chain's answer (proto/README.md, "tree"): its pose, and
 * for the tips checked their status and errors (bits of has as above). */
typedef struct ikd_tip {
    unsigned has; /* IKD_HAS_STATUS, _CODE, _POSITION_ERROR, _ORIENTATION_ERROR */
    ikd_status status;
    int code;
    double position[3];
    double orientation[4];
    double position_error;
    double orientation_error;
} ikd_tip;

typedef struct ikd_result {
    unsigned has; /* IKD_HAS_* bits */
    ikd_status status;
    const char *status_text; /* the word ikd sent ("success") */
    int code;
    const char *reason; /* "ok", "unreachable", ... */
    const char *cause;  /* "out_of_reach", ... */
    size_t joint_count;
    const double *joints;
    size_t position_count;
    int position_dim;
    const double *positions;
    size_t rotation_count;
    const double *rotations;
    size_t local_rotation_count;
    const double *local_rotations;
    double tip_position[3];
    double tip_orientation[4];
    size_t tip_count;
    const ikd_tip *tips;
    double position_error;
    double orientation_error;
    double max_joint_step;
    bool arrived;
    size_t solution_list_count;
    size_t solution_width;
    const double *solutions;
    long long solution_count;
    long long iterations;
    long long restarts;
    double time_ms;
} ikd_result;

/* An HTTP solve or batch answer: the chain-level members, then results
 * (one for a solve, count for a batch) and, for a batch, counts. */
typedef struct ikd_answer {
    const char *chain_id;
    const char *solver;
    const char *units;
    const char *frame; /* NULL on planar chains */
    size_t joint_name_count;
    const char *const *joint_names; /* joint_names, or bone_names for bones */
    size_t tip_name_count;
    const char *const *tip_names;
    size_t count;
    const ikd_result *results;
    bool has_counts;
    long long counts_success, counts_no_ik_solution, counts_timed_out, counts_other;
} ikd_answer;

/* A chain's description (POST /v1/chains, GET /v1/chains/{id}). */
typedef struct ikd_joint_info {
    const char *type; /* "revolute", "continuous", "prismatic" */
    bool has_limits;
    double lower, upper;
} ikd_joint_info;

typedef struct ikd_chain_info {
    const char *id;
    const char *kind;
    bool created; /* POST answered 201 (new), not 200 (known) */
    long long dof;
    size_t joint_count;
    const char *const *joint_names;
    const ikd_joint_info *joints; /* joint_count of them, when ikd describes them, else NULL */
    size_t solver_count;
    const char *const *solvers;
    const char *closed_form; /* closed_form.family ("ur", "none", ...); NULL when absent */
    long long memory_bytes;
    const char *text; /* the whole description as ikd sent it, NUL-terminated */
    size_t text_len;
} ikd_chain_info;

void ikd_answer_free(ikd_answer *a);
void ikd_chain_info_free(ikd_chain_info *c);
void ikd_result_free(ikd_result *r);
/* Frees text returned by the library (ikd_solvers, ikd_request). */
void ikd_text_free(char *text);

/* A copy of r that the caller owns (ikd_result_free); NULL when out of
 * memory. For keeping an event's result past its callback. */
ikd_result *ikd_result_copy(const ikd_result *r);

/* ==== HTTP: ikd_client ================================================== */

typedef struct ikd_client ikd_client;

typedef struct ikd_client_opts {
    const char *url;       /* "http://HOST:PORT" or "https://..." (a path prefix is kept) */
    const char *token;     /* bearer token, or NULL */
    const char *ca_file;   /* PEM file of the CAs to trust for https (NULL: the system's) */
    long timeout_ms;       /* each request, connection included; 0: 30000 */
    size_t max_answer;     /* bytes of one answer at most; 0: 256 MiB */
    int retries;           /* times an "overloaded" 503 is retried after its Retry-After */
    size_t max_remembered; /* chain text kept for re-registration, bytes; 0: 64 MiB */
} ikd_client_opts;

/* A client of the ikd at opts->url (nothing is sent yet). NULL on error
 * (a URL that is not http:// or https://, out of memory). */
ikd_client *ikd_client_new(const ikd_client_opts *opts, ikd_error *err);
void ikd_client_free(ikd_client *c);

/* POST /v1/solve: one target on one chain, with an optional seed and
 * options (the "options" object as JSON text, or NULL). *out: the answer,
 * whatever the solve's status (an unreachable target is an answer, not an
 * error). */
int ikd_solve(ikd_client *c, const ikd_chain *chain, const ikd_target *target, const ikd_seed *seed,
              const char *options_json, ikd_answer **out, ikd_error *err);

/* POST /v1/solve/batch: count targets on one chain; seeds is NULL or holds
 * count seeds (a seed with neither values nor json is sent as null). An
 * answer of other than count results (one for ikd_solve) is refused as
 * IKD_E_BAD_ANSWER. */
int ikd_solve_batch(ikd_client *c, const ikd_chain *chain, const ikd_target *targets, size_t count,
                    const ikd_seed *seeds, const char *options_json, ikd_answer **out,
                    ikd_error *err);

/* POST /v1/chains: registers chain_json and answers its description (id,
 * joints, solvers). The client remembers the text (up to max_remembered
 * bytes in all) so that a solve by that id answered unknown_chain registers
 * it again and is retried once. */
int ikd_chain_register(ikd_client *c, const char *chain_json, ikd_chain_info **out, ikd_error *err);
/* GET /v1/chains/{id}. */
int ikd_chain_get(ikd_client *c, const char *id, ikd_chain_info **out, ikd_error *err);
/* DELETE /v1/chains/{id} (and the client forgets its text). */
int ikd_chain_delete(ikd_client *c, const char *id, ikd_error *err);
/* GET /v1/solvers: the answer's JSON text (ikd_text_free). */
int ikd_solvers(ikd_client *c, char **json, ikd_error *err);

/* Any request: method ("GET", "POST", "DELETE"), a path under the URL
 * ("/v1/solve"), an optional JSON body. *status gets the HTTP status and
 * *answer the answer's text (NUL-terminated, ikd_text_free; NULL when
 * empty). Statuses >= 400 are answers here, not errors: only a failed
 * exchange is. */
int ikd_request(ikd_client *c, const char *method, const char *path, const char *body,
                size_t body_len, int *status, char **answer, size_t *answer_len, ikd_error *err);

/* ==== streams: ikd_conn ================================================= */

typedef struct ikd_conn ikd_conn;

typedef enum ikd_event_kind {
    IKD_EV_CONNECTED = 1, /* the upgrade succeeded (again, after a reconnection) */
    IKD_EV_OPENED,        /* a stream is open: stream, chain_id */
    IKD_EV_SOLUTION,      /* a stream's answer: stream, seq, skipped, result */
    IKD_EV_PATH_END,      /* a path's last sample was answered: stream, seq */
    IKD_EV_CLOSED,        /* a stream was closed: stream */
    IKD_EV_TICK,          /* a tick's answer, every target of it in order: tick */
    IKD_EV_ERROR,         /* ikd's error message, or the client's: error (stream, seq) */
    IKD_EV_MESSAGE,       /* a message of a type this client does not know: type, text */
    IKD_EV_DISCONNECTED   /* the connection ended: error says why */
} ikd_event_kind;

/* One target of a tick's answer: result, or error when that target could
 * not be solved (an unknown stream, an invalid target). stream is "" when
 * ikd names none (an error about the stream's name itself). */
typedef struct ikd_tick_entry {
    const char *stream;
    long long seq;
    long long skipped;
    const ikd_result *result;
    const ikd_error *error;
} ikd_tick_entry;

typedef struct ikd_tick {
    long long seq;
    long long skipped; /* ticks replaced unsolved since the previous answer */
    size_t count;
    const ikd_tick_entry *entries; /* in the order of the tick's targets */
} ikd_tick;

void ikd_tick_free(ikd_tick *t);
/* A copy of t that the caller owns (ikd_tick_free); NULL when out of memory. */
ikd_tick *ikd_tick_copy(const ikd_tick *t);

typedef struct ikd_event {
    ikd_event_kind kind;
    const char *stream; /* OPENED, SOLUTION, PATH_END, CLOSED; ERROR when it names one */
    long long seq;      /* SOLUTION, PATH_END, TICK; ERROR when has_seq */
    bool has_seq;
    long long skipped;        /* SOLUTION, TICK, PATH_END: targets (ticks, samples) skipped */
    bool has_index;           /* SOLUTION of a path's sample: index and count are set */
    long long index;          /* SOLUTION of a path's sample: its index */
    long long count;          /* SOLUTION of a path's sample, PATH_END: the path's samples */
    long long sent;           /* PATH_END: samples answered */
    bool completed;           /* PATH_END: false when a target, path or close cut it short */
    const char *chain_id;     /* OPENED */
    const ikd_result *result; /* SOLUTION */
    const ikd_tick *tick;     /* TICK */
    const ikd_error *error;   /* ERROR, DISCONNECTED */
    const char *type;         /* the message's type ("solution", ...); MESSAGE: the unknown one */
    const char *text;         /* the message as ikd sent it (NULL for the client's own events) */
    size_t text_len;
    bool binary;         /* a binary message (text, text_len are its bytes): MESSAGE, or
                            TICK (and ERROR) for the answer to a binary tick */
    bool will_reconnect; /* DISCONNECTED: the connection is dialled again */
    int close_code;      /* DISCONNECTED: ikd's WebSocket close code, 0 when none */
} ikd_event;

typedef void (*ikd_event_cb)(ikd_conn *conn, const ikd_event *ev, void *user);

typedef struct ikd_conn_opts {
    const char *url;        /* "ws://HOST:PORT", "wss://...", or http(s):// (the same ikd) */
    const char *token;      /* bearer token, or NULL */
    const char *ca_file;    /* PEM CAs to trust for wss (NULL: the system's) */
    ikd_event_cb on_event;  /* NULL: events go only to a waiting blocking helper */
    void *user;             /* passed to on_event */
    size_t max_message;     /* largest message accepted from ikd; 0: 16 MiB */
    size_t max_send_queue;  /* bytes waiting to be written at most; 0: 8 MiB */
    int connect_timeout_ms; /* TCP, TLS and the upgrade together; 0: 10000 */
    int idle_timeout_ms;    /* silent this long: a ping; twice: the connection is
                               dropped (IKD_E_TIMEOUT); 0: 30000; -1: never */
    bool reconnect;         /* dial again after a loss, with backoff, and reopen
                               the streams (see ikd_conn_new) */
    int max_streams;        /* streams open at once, targets in a tick and
                               entries read in a tick's answer; 0: 1024
                               (ikd's default) */
} ikd_conn_opts;

/* Poll events (the values of poll()'s POLLIN and POLLOUT). */
#define IKD_WANT_READ  0x001
#define IKD_WANT_WRITE 0x004

/* A connection to opts->url: the name is resolved and a non-blocking
 * connect started; the TLS and WebSocket handshakes happen in
 * ikd_conn_process. Messages may be sent at once: they are written after
 * the upgrade. IKD_EV_CONNECTED says when it succeeded; a failure comes as
 * IKD_EV_DISCONNECTED. NULL on error (a bad URL, a name that does not
 * resolve, no memory).
 *
 * A lost connection: every stream with a target or path unanswered and
 * every tick unanswered gets an IKD_EV_ERROR with IKD_E_CONNECTION_LOST
 * (stream and seq set, the message saying why), then IKD_EV_DISCONNECTED.
 * With opts->reconnect, and a loss a new connection can mend (not an
 * upgrade refused with a 4xx status, a TLS failure, or ikd's close for a
 * client that does not read or a message too large), the address is
 * dialled again after 0.1 s, doubling to 5 s between tries (with jitter),
 * and once upgraded every stream open (or opening) is opened again with
 * its open message, before anything queued meanwhile. The connection
 * keeps each stream's open message for this: register large chains over
 * HTTP and open streams by chain_id. */
ikd_conn *ikd_conn_new(const ikd_conn_opts *opts, ikd_error *err);
/* Closes the socket at once (no closing handshake) and frees everything;
 * no callback runs. */
void ikd_conn_free(ikd_conn *conn);

/* The socket to watch, -1 while there is none (between reconnections). */
int ikd_conn_fd(const ikd_conn *conn);
/* IKD_WANT_READ and/or IKD_WANT_WRITE: what to watch the socket for. */
int ikd_conn_events(const ikd_conn *conn);
/* Milliseconds until ikd_conn_process must run even if the socket is
 * quiet (a handshake deadline, a ping, a redial, bytes already buffered):
 * 0 for now, -1 for no deadline. */
int ikd_conn_timeout_ms(const ikd_conn *conn);
/* Does whatever can be done without blocking: connects, handshakes, writes
 * what is queued, reads and dispatches every message that is complete, and
 * runs the deadlines. revents: what poll() said of ikd_conn_fd (0 when it
 * was not polled: then it only tries). Returns the number of events
 * dispatched, or IKD_E_CLOSED once the connection has ended for good
 * (closed, or lost without reconnect); IKD_E_INVALID_ARGUMENT from inside
 * a callback. */
int ikd_conn_process(ikd_conn *conn, int revents);
/* poll() on ikd_conn_fd for at most timeout_ms (-1: until something
 * happens, bounded by ikd_conn_timeout_ms), then ikd_conn_process. */
int ikd_conn_poll(ikd_conn *conn, int timeout_ms);
/* Writes what is queued now, as far as the socket takes it. */
int ikd_conn_flush(ikd_conn *conn);
/* Closes the connection: a close frame (1000) after everything queued,
 * then the socket once ikd answers (or at the connect timeout). Streams
 * are not reopened. */
int ikd_conn_close(ikd_conn *conn);
/* Whether the upgrade is done and the connection usable now. */
bool ikd_conn_is_open(const ikd_conn *conn);

typedef struct ikd_conn_stats {
    unsigned long long messages_in, messages_out, bytes_in, bytes_out;
    unsigned long long reconnects;
    size_t send_queued;  /* bytes waiting to be written */
    size_t memory_bytes; /* every buffer the connection holds now */
    size_t streams;      /* streams known (open or opening) */
} ikd_conn_stats;
void ikd_conn_get_stats(const ikd_conn *conn, ikd_conn_stats *stats);

/* The automatic seq of a target: the stream's previous seq plus one. In a
 * tick entry: the tick's own seq (no seq member is sent). */
#define IKD_SEQ_AUTO (-9223372036854775807LL - 1)

/* Sends "open" (STREAM.md): stream is 1 to 64 characters of
 * A-Z a-z 0-9 _ . : -; chain by json or id; seed and options_json may be
 * NULL. IKD_EV_OPENED (or IKD_EV_ERROR naming the stream) answers it. */
int ikd_stream_open(ikd_conn *conn, const char *stream, const ikd_chain *chain,
                    const ikd_seed *seed, const char *options_json, ikd_error *err);
/* Sends "target" with seq (IKD_SEQ_AUTO: the stream's next; *seq_out gets
 * the seq sent when not NULL) and an optional seed. */
int ikd_stream_target(ikd_conn *conn, const char *stream, long long seq, const ikd_target *target,
                      const ikd_seed *seed, long long *seq_out, ikd_error *err);
/* Sends "path": count waypoints (2 to 1024), rate_hz and duration_s when
 * > 0 (else ikd's defaults). */
int ikd_stream_path(ikd_conn *conn, const char *stream, long long seq, const ikd_target *waypoints,
                    size_t count, double rate_hz, double duration_s, long long *seq_out,
                    ikd_error *err);
/* Sends "close"; IKD_EV_CLOSED when ikd answers, or when the connection
 * is lost first (the stream is not opened again after a reconnection). */
int ikd_stream_close(ikd_conn *conn, const char *stream, ikd_error *err);

/* A tick (STREAM.md "tick"): begin, one add per stream, send. Its answer
 * is one IKD_EV_TICK. The tick is built in the connection (one at a time:
 * begin discards a tick not sent); nothing is queued before send. seq in
 * add: the target's own seq, or IKD_SEQ_AUTO for the tick's. An add that
 * fails leaves the tick as it was; a tick holds at most max_streams
 * targets (IKD_E_TOO_LARGE) and max_send_queue bytes
 * (IKD_E_MESSAGE_TOO_LARGE). A send that fails (the queue is full) leaves
 * the tick built: send may be called again. */
int ikd_tick_begin(ikd_conn *conn, long long seq, ikd_error *err);
int ikd_tick_add(ikd_conn *conn, const char *stream, const ikd_target *target, const ikd_seed *seed,
                 long long seq, ikd_error *err);
int ikd_tick_send(ikd_conn *conn, ikd_error *err);

/* The binary form of ticks (proto/STREAM.md, "Binary ticks"), for programs
 * that count microseconds: with on, each tick begun afterwards is sent as
 * one binary message of doubles when every target fits the form, and ikd
 * answers it with a binary message that the connection reads into the same
 * IKD_EV_TICK (ev->binary set; text, text_len are the answer's bytes), with
 * no number printed or parsed on either side. A target fits when it is a
 * position with an orientation on every target of the tick, or on none,
 * and nothing else: no pole, up, weights or json, no seed, and its seq (and
 * the tick's) of magnitude at most 2^53 - 1. A tick with a target that does
 * not fit is sent as JSON, whole, as without this call. Off by default, so
 * that a program built before it gets the answers it was written for: a
 * result read from a binary answer has no reason, cause, arrived,
 * solutions or solution_count (JSON only), always has code, iterations and
 * restarts, its status_text is the word of its code, and its numbers are
 * the solver's doubles whatever options.digits says (each the double the
 * JSON answer reads back as at the default digits). Errors per target are
 * the JSON form's (code, path, message; stream "" when ikd names none).
 * IKD_E_INVALID_ARGUMENT without a connection. */
int ikd_conn_set_binary_ticks(ikd_conn *conn, bool on);
/* Whether the tick being built would go binary if sent now. */
bool ikd_tick_is_binary(const ikd_conn *conn);

/* Sends one text message as it is (json must be one JSON object). The
 * client does not read it: from then on, answers of seqs it never sent
 * (otherwise IKD_E_BAD_ANSWER) are taken as they come. */
int ikd_send_text(ikd_conn *conn, const char *json, size_t len, ikd_error *err);

/* ---- blocking helpers, for scripts and tests ----------------------------
 *
 * Each drives the connection (ikd_conn_poll) until its answer comes or
 * timeout_ms passes (IKD_E_TIMEOUT). Every event still reaches on_event;
 * without on_event, an error or unknown message that is not the awaited
 * answer makes the helper fail with that error (so nothing passes unseen),
 * and other answers are ignored. */

/* Until IKD_EV_CONNECTED (at once when open). */
int ikd_conn_wait_connected(ikd_conn *conn, int timeout_ms, ikd_error *err);
/* ikd_stream_open, then until IKD_EV_OPENED of that stream (an error
 * naming it fails the call). */
int ikd_stream_open_wait(ikd_conn *conn, const char *stream, const ikd_chain *chain,
                         const ikd_seed *seed, const char *options_json, int timeout_ms,
                         ikd_error *err);
/* ikd_stream_target, then until the stream's solution for it (or a newer
 * one). *out: a copy the caller frees with ikd_result_free. */
int ikd_stream_solve(ikd_conn *conn, const char *stream, const ikd_target *target,
                     const ikd_seed *seed, int timeout_ms, ikd_result **out, ikd_error *err);
/* Until the answer to the tick seq (or a later one, when ikd replaced it).
 * *out: a copy the caller frees with ikd_tick_free. */
int ikd_tick_wait(ikd_conn *conn, long long seq, int timeout_ms, ikd_tick **out, ikd_error *err);

#ifdef __cplusplus
}
#endif

#endif /* IKD_CLIENT_H */
