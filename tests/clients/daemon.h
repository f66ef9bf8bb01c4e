/*
 * daemon.h: the real ikd for the client library's tests: started from
 * $IKD_BIN (default build/ikd) on 127.0.0.1 (port 0, or a given port to
 * come back on after a restart), its address read from its one stdout line
 * "ikd listening on HOST:PORT", stopped with SIGTERM (exit status 0
 * required). One daemon at a time per test process.
 */
#ifndef TESTS_CLIENTS_DAEMON_H
#define TESTS_CLIENTS_DAEMON_H

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t daemon_pid;
static FILE *daemon_out;
static int daemon_port;
static char daemon_url[128]; /* http://127.0.0.1:PORT */

/* Starts ikd on port (0: any) with extra flags (NULL-terminated or NULL). */
static void daemon_start(int port, const char *const *extra)
{
    const char *bin = getenv("IKD_BIN") ? getenv("IKD_BIN") : "build/ikd";
    char listen[64];
    snprintf(listen, sizeof listen, "127.0.0.1:%d", port);
    const char *argv[32];
    int n = 0;
    argv[n++] = bin;
    argv[n++] = "--listen";
    argv[n++] = listen;
    argv[n++] = "--log-level";
    argv[n++] = "warn";
    for (; extra && *extra && n < 30; extra++)
        argv[n++] = *extra;
    argv[n] = NULL;
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        execv(bin, (char *const *)argv);
        perror("execv");
        _exit(127);
    }
    close(fds[1]);
    daemon_pid = pid;
    daemon_out = fdopen(fds[0], "r");
    char line[256] = "";
    ck_assert_msg(fgets(line, sizeof line, daemon_out) != NULL, "ikd printed nothing");
    const char *prefix = "ikd listening on ";
    ck_assert_msg(strncmp(line, prefix, strlen(prefix)) == 0, "unexpected line: %s", line);
    char *colon = strrchr(line, ':');
    daemon_port = atoi(colon + 1);
    ck_assert_int_gt(daemon_port, 0);
    snprintf(daemon_url, sizeof daemon_url, "http://127.0.0.1:%d", daemon_port);
}

/* SIGTERM and wait; the exit status (or 128 + the signal). */
static int daemon_stop(void)
{
    if (daemon_pid <= 0)
        return 0;
    kill(daemon_pid, SIGTERM);
    int st = 0;
    while (waitpid(daemon_pid, &st, 0) < 0 && errno == EINTR)
        ;
    daemon_pid = 0;
    if (daemon_out)
        fclose(daemon_out);
    daemon_out = NULL;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif /* TESTS_CLIENTS_DAEMON_H */
