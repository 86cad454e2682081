// The worker's spawner, native (src/engine/sandbox/spawner.ts): started once by each worker, it starts
// that worker's sandbox launchers. The JavaScript spawner (spawner-child.mjs) does the same from a Node
// process, whose every spawn costs a fork of its ~60 MB (0.5 ms of CPU) and about as much again in
// JavaScript for the child's four pipes and the messages; here a spawn is a posix_spawn (a vfork: no
// page table copied) and a few system calls.
//
// It speaks the worker's IPC channel as a Node child would (NODE_CHANNEL_FD, one JSON message a line):
// it reads the worker's orders, and hands back each child's stdout and stderr themselves, as Node hands
// a socket (a `NODE_HANDLE` message of type `net.Socket`, the descriptor attached with SCM_RIGHTS). The
// worker only ever sends it messages it builds itself, whose fields are plain: an `op`, an `id`, and
// the payload `a` as hexadecimal (spawn: file, cwd, nice, fd3, argc, args, environment, NUL-separated;
// script: its bytes). It answers `spawned`, `error` and `exit` as the JavaScript spawner does.
//
// It keeps each child's stdin (the guard's pipe, never written) and fd 3 (the script, written when told,
// then closed). When the worker goes (even by SIGKILL) the channel reaches end-of-file and this process
// exits, which closes every stdin it held: each sandbox's guard then kills its step.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

struct child {
  long id;
  pid_t pid;
  int in;   // our end of its stdin: kept, never written
  int fd3;  // our end of its fd 3, or -1
  char *script;
  size_t length, written;
};

static struct child *children;
static size_t nchildren, capacity;
static int channel = -1;

static void die(const char *what) {
  // Nobody reads this process's stderr by default; the worker sees the channel close and starts another.
  fprintf(stderr, "plinth-spawner: %s: %s\n", what, strerror(errno));
  exit(1);
}

// Writes all of `line` on the channel, with `fd` attached when it is not -1. A worker gone is the end.
static void send_line(const char *line, size_t length, int fd) {
  size_t sent = 0;
  while (sent < length) {
    struct iovec iov = {.iov_base = (char *)line + sent, .iov_len = length - sent};
    union {
      char buf[CMSG_SPACE(sizeof(int))];
      struct cmsghdr align;
    } control;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0 && sent == 0) {
      memset(&control, 0, sizeof control);
      msg.msg_control = control.buf;
      msg.msg_controllen = sizeof control.buf;
      struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(sizeof(int));
      memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    }
    ssize_t n = sendmsg(channel, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        struct pollfd p = {.fd = channel, .events = POLLOUT};
        poll(&p, 1, -1);
        continue;
      }
      exit(0);
    }
    sent += (size_t)n;
  }
}

static void send_text(const char *line) {
  send_line(line, strlen(line), -1);
}

// A JSON string's contents: what is not plain printable ASCII is escaped.
static void json_escape(char *out, size_t size, const char *in) {
  size_t o = 0;
  for (; *in && o + 7 < size; in++) {
    unsigned char c = (unsigned char)*in;
    if (c == '"' || c == '\\') {
      out[o++] = '\\';
      out[o++] = (char)c;
    } else if (c < 0x20 || c >= 0x7f) {
      o += (size_t)snprintf(out + o, size - o, "\\u%04x", c);
    } else {
      out[o++] = (char)c;
    }
  }
  out[o] = '\0';
}

static const char *errno_name(int e) {
  switch (e) {
    case ENOENT: return "ENOENT";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOEXEC: return "ENOEXEC";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case ELOOP: return "ELOOP";
    case E2BIG: return "E2BIG";
    case ENOMEM: return "ENOMEM";
    case EAGAIN: return "EAGAIN";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case ETXTBSY: return "ETXTBSY";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    default: return "EUNKNOWN";
  }
}

static const char *signal_name(int sig) {
  static const char *names[] = {
      [SIGHUP] = "SIGHUP",   [SIGINT] = "SIGINT",     [SIGQUIT] = "SIGQUIT", [SIGILL] = "SIGILL",
      [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",   [SIGBUS] = "SIGBUS",   [SIGFPE] = "SIGFPE",
      [SIGKILL] = "SIGKILL", [SIGUSR1] = "SIGUSR1",   [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
      [SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM",   [SIGTERM] = "SIGTERM", [SIGCHLD] = "SIGCHLD",
      [SIGCONT] = "SIGCONT", [SIGSTOP] = "SIGSTOP",   [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN",
      [SIGTTOU] = "SIGTTOU", [SIGURG] = "SIGURG",     [SIGXCPU] = "SIGXCPU", [SIGXFSZ] = "SIGXFSZ",
      [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF", [SIGWINCH] = "SIGWINCH", [SIGIO] = "SIGIO",
      [SIGPWR] = "SIGPWR",   [SIGSYS] = "SIGSYS",
  };
  if (sig > 0 && sig < (int)(sizeof names / sizeof names[0]) && names[sig]) return names[sig];
  return "SIGKILL";
}

static int signal_number(const char *name) {
  if (strcmp(name, "SIGTERM") == 0) return SIGTERM;
  if (strcmp(name, "SIGINT") == 0) return SIGINT;
  if (strcmp(name, "SIGKILL") == 0) return SIGKILL;
  return 0;
}

static struct child *child_by_id(long id) {
  for (size_t i = 0; i < nchildren; i++) {
    if (children[i].id == id) return &children[i];
  }
  return NULL;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void end_script(struct child *c) {
  close_fd(&c->fd3);
  free(c->script);
  c->script = NULL;
}

// Writes what it can of the script without blocking; closes fd 3 once all is written (or the reader is gone).
static void flush_script(struct child *c) {
  while (c->script && c->written < c->length) {
    ssize_t n = write(c->fd3, c->script + c->written, c->length - c->written);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      break;  // It exited before reading it all: not an error.
    }
    c->written += (size_t)n;
  }
  end_script(c);
}

// --- the worker's messages ---

// The value of `"key":` in a message the worker built: a string's contents (no escapes in what it
// sends in them) or a number's digits; its length in *length. NULL when absent.
static const char *field(const char *line, const char *key, size_t *length) {
  char pattern[32];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char *at = strstr(line, pattern);
  if (!at) return NULL;
  at += strlen(pattern);
  if (*at == '"') {
    const char *end = strchr(++at, '"');
    if (!end) return NULL;
    *length = (size_t)(end - at);
  } else {
    *length = strspn(at, "-0123456789");
  }
  return at;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The payload `a`, decoded, NUL-terminated (it may hold NULs of its own: *length says how long).
static char *payload(const char *line, size_t *length) {
  size_t hex;
  const char *at = field(line, "a", &hex);
  if (!at || hex % 2) return NULL;
  char *out = malloc(hex / 2 + 1);
  if (!out) die("malloc");
  for (size_t i = 0; i < hex / 2; i++) {
    int hi = hex_value(at[2 * i]), lo = hex_value(at[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      free(out);
      return NULL;
    }
    out[i] = (char)(hi * 16 + lo);
  }
  out[hex / 2] = '\0';
  *length = hex / 2;
  return out;
}

static void report_error(long id, const char *file, int e) {
  char name[512], line[768];
  json_escape(name, sizeof name, file);
  snprintf(line, sizeof line, "{\"op\":\"error\",\"id\":%ld,\"message\":\"spawn %s %s\"}\n", id, name, errno_name(e));
  send_text(line);
}

// The file to run: as given when it names a path, else the first executable of that name on the PATH
// of the environment it will run with (as Node's spawn finds it).
static const char *resolve(const char *file, char *const *env, char *buffer, size_t size) {
  if (strchr(file, '/')) return file;
  const char *path = "/usr/local/bin:/usr/bin:/bin";
  for (char *const *e = env; *e; e++) {
    if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
  }
  while (*path) {
    size_t n = strcspn(path, ":");
    if (n > 0 && (size_t)snprintf(buffer, size, "%.*s/%s", (int)n, path, file) < size && access(buffer, X_OK) == 0) return buffer;
    path += n + (path[n] == ':');
  }
  return file;
}

// A pair of connected sockets, as Node makes for a child's pipe: ours (nonblocking), and the child's.
static int pair(int fds[2]) {
  return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds);
}

static void start(long id, char *spec, size_t length) {
  // file, cwd, nice, fd3, argc, then argc arguments, then the environment's NAME=value pairs.
  size_t n = 0, most = 1;
  for (size_t i = 0; i < length; i++) most += spec[i] == '\0';
  char **fields = calloc(most, sizeof *fields);
  if (!fields) die("calloc");
  for (char *p = spec; p <= spec + length; p += strlen(p) + 1) fields[n++] = p;
  long argc = n >= 5 ? strtol(fields[4], NULL, 10) : -1;
  if (argc < 0 || (size_t)(5 + argc) > n) {
    free(fields);
    report_error(id, "(malformed spawn)", EINVAL);
    return;
  }
  const char *file = fields[0], *cwd = fields[1], *nice = fields[2];
  int with_fd3 = strcmp(fields[3], "1") == 0;
  char **argv = calloc((size_t)argc + 2, sizeof *argv);
  char **envp = calloc(n - 5 - (size_t)argc + 1, sizeof *envp);
  if (!argv || !envp) die("calloc");
  argv[0] = (char *)file;
  for (long i = 0; i < argc; i++) argv[i + 1] = fields[5 + i];
  for (size_t i = 5 + (size_t)argc, j = 0; i < n; i++) envp[j++] = fields[i];

  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1}, three[2] = {-1, -1};
  pid_t pid = -1;
  int e = 0;
  if (pair(in) || pair(out) || pair(err) || (with_fd3 && pair(three))) {
    e = errno;
  } else {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
    // As Node's `detached: true`: a session (and process group) of its own; every signal at its default, none blocked.
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawn_file_actions_adddup2(&actions, in[1], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    if (with_fd3) posix_spawn_file_actions_adddup2(&actions, three[1], 3);
    posix_spawn_file_actions_addchdir_np(&actions, cwd);
    char found[4096];
    e = posix_spawn(&pid, resolve(file, envp, found, sizeof found), &actions, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  free(argv);
  free(envp);
  free(fields);
  close_fd(&in[1]);
  close_fd(&out[1]);
  close_fd(&err[1]);
  close_fd(&three[1]);
  if (e) {
    close_fd(&in[0]);
    close_fd(&out[0]);
    close_fd(&err[0]);
    close_fd(&three[0]);
    report_error(id, file, e);
    return;
  }
  // Lowered before it forks anything, most likely: what it forks inherits the level (the worker sets it back for the step).
  if (nice[0]) setpriority(PRIO_PROCESS, (id_t)pid, (int)strtol(nice, NULL, 10));
  if (three[0] >= 0) fcntl(three[0], F_SETFL, O_NONBLOCK);
  if (nchildren == capacity) {
    capacity = capacity ? capacity * 2 : 32;
    children = realloc(children, capacity * sizeof *children);
    if (!children) die("realloc");
  }
  children[nchildren++] = (struct child){.id = id, .pid = pid, .in = in[0], .fd3 = three[0]};
  // In this order, each on the ordered channel: the worker holds both pipes when it reads `spawned`.
  char line[160];
  struct { const char *name; int *fd; } pipes[] = {{"stdout", &out[0]}, {"stderr", &err[0]}};
  for (size_t i = 0; i < 2; i++) {
    snprintf(line, sizeof line, "{\"cmd\":\"NODE_HANDLE\",\"type\":\"net.Socket\",\"msg\":{\"op\":\"%s\",\"id\":%ld}}\n", pipes[i].name, id);
    send_line(line, strlen(line), *pipes[i].fd);
    close_fd(pipes[i].fd);
  }
  snprintf(line, sizeof line, "{\"op\":\"spawned\",\"id\":%ld,\"pid\":%ld}\n", id, (long)pid);
  send_text(line);
}

static void handle(const char *line) {
  size_t n;
  const char *op = field(line, "op", &n);
  const char *id_text = field(line, "id", &n);
  // Not an order: the acknowledgements of the descriptors handed over (nothing to do), or anything else.
  if (!op || !id_text) return;
  long id = strtol(id_text, NULL, 10);
  struct child *c = child_by_id(id);
  size_t length;
  if (strncmp(op, "spawn\"", 6) == 0) {
    char *spec = payload(line, &length);
    if (!spec) {
      report_error(id, "(malformed spawn)", EINVAL);
      return;
    }
    start(id, spec, length);
    free(spec);
  } else if (strncmp(op, "script\"", 7) == 0) {
    if (!c || c->fd3 < 0 || c->script) return;
    c->script = payload(line, &length);
    if (!c->script) {
      end_script(c);
      return;
    }
    c->length = length;
    c->written = 0;
    flush_script(c);
  } else if (strncmp(op, "release\"", 8) == 0) {
    if (!c) return;
    end_script(c);
    close_fd(&c->in);
  } else if (strncmp(op, "signal\"", 7) == 0) {
    const char *name = field(line, "signal", &n);
    char which[16] = "";
    if (name && n < sizeof which) {
      memcpy(which, name, n);
      which[n] = '\0';
    }
    int sig = signal_number(which);
    // Only while it runs (it is in the list until reaped): once reaped, its pid and group id may be another process's.
    if (c && sig) kill(-c->pid, sig);
  }
}

// --- the loop ---

static void reap(void) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (size_t i = 0; i < nchildren; i++) {
      if (children[i].pid != pid) continue;
      struct child c = children[i];
      children[i] = children[--nchildren];
      end_script(&c);
      close_fd(&c.in);
      char line[160];
      if (WIFSIGNALED(status)) snprintf(line, sizeof line, "{\"op\":\"exit\",\"id\":%ld,\"code\":null,\"signal\":\"%s\"}\n", c.id, signal_name(WTERMSIG(status)));
      else snprintf(line, sizeof line, "{\"op\":\"exit\",\"id\":%ld,\"code\":%d,\"signal\":null}\n", c.id, WEXITSTATUS(status));
      send_text(line);
      break;
    }
  }
}

int main(void) {
  const char *fd = getenv("NODE_CHANNEL_FD");
  const char *mode = getenv("NODE_CHANNEL_SERIALIZATION_MODE");
  if (!fd || (mode && strcmp(mode, "json") != 0)) {
    fprintf(stderr, "plinth-spawner: started by a Plinth worker only (a Node IPC channel, json)\n");
    return 2;
  }
  channel = (int)strtol(fd, NULL, 10);
  // Descriptors 0 to 2 are taken (the null device when closed), so no pipe made for a child is one of
  // them: a child's descriptor is always a duplicate of its own, never left to an exec that closes it.
  for (int std = 0; std <= 2; std++) {
    if (fcntl(std, F_GETFD) < 0 && open("/dev/null", O_RDWR) != std) die("opening /dev/null");
  }
  // Nothing this process holds reaches what it starts but the four descriptors it hands each child.
  syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
  // Only the worker ends it (by closing the channel): a terminal's Ctrl-C reaches the worker, which drains.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_BLOCK, &chld, NULL);
  int sfd = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) die("signalfd");

  size_t size = 65536, used = 0;
  char *buffer = malloc(size);
  struct pollfd *fds = NULL;
  size_t nfds = 0;
  if (!buffer) die("malloc");
  for (;;) {
    if (nfds < nchildren + 2) {
      nfds = nchildren + 2 + 32;
      fds = realloc(fds, nfds * sizeof *fds);
      if (!fds) die("realloc");
    }
    fds[0] = (struct pollfd){.fd = channel, .events = POLLIN};
    fds[1] = (struct pollfd){.fd = sfd, .events = POLLIN};
    size_t count = 2;
    for (size_t i = 0; i < nchildren; i++) {
      if (children[i].script) fds[count++] = (struct pollfd){.fd = children[i].fd3, .events = POLLOUT};
    }
    if (poll(fds, count, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (fds[1].revents) {
      struct signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) > 0) {
      }
      reap();
    }
    for (size_t i = 2; i < count; i++) {
      if (!fds[i].revents) continue;
      for (size_t j = 0; j < nchildren; j++) {
        if (children[j].fd3 == fds[i].fd && children[j].script) flush_script(&children[j]);
      }
    }
    if (fds[0].revents) {
      if (used + 4096 > size) {
        size *= 2;
        buffer = realloc(buffer, size);
        if (!buffer) die("realloc");
      }
      ssize_t n = read(channel, buffer + used, size - used - 1);
      if (n == 0) return 0;  // The worker is gone.
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        return 0;
      }
      used += (size_t)n;
      buffer[used] = '\0';
      char *start = buffer, *end;
      while ((end = memchr(start, '\n', used - (size_t)(start - buffer)))) {
        *end = '\0';
        handle(start);
        start = end + 1;
      }
      used -= (size_t)(start - buffer);
      memmove(buffer, start, used);
    }
  }
}
