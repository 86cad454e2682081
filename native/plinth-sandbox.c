// plinth-sandbox: builds one step's sandbox in one process, where the shell init (SANDBOX_INIT in
// src/engine/sandbox/init-script.ts) starts eight: `unshare`, its init shell, `mount -a`, `pivot_root`,
// `umount`, a subshell, `setpriv` and the guard's subshell. It does exactly what that script does, in
// the same order, with the same arguments; init-script.ts is the description of both.
//
//   plinth-sandbox [--net] FSTAB ROOT UID NPROC [CGROUP_PROCS_FILE...]
//
// It runs as root with only PATH in its environment (the worker's spawner starts it so). It takes new
// mount, IPC, UTS (and, with --net, network) namespaces and forks the init of a new PID namespace; it
// waits for that init and ends as it ends (as `unshare --fork --kill-child`). The init enters the
// step's cgroups, mounts FSTAB (fstab(5): bind, ro, nosuid, nodev, noexec, and a filesystem's own
// options), pivots into ROOT, and forks the step's shell: `sh -s` reading its script from fd 3, as UID
// with no supplementary groups, no capabilities (none permitted, effective, inheritable, ambient or in
// the bounding set), no_new_privs, RLIMIT_NPROC = NPROC, no core dumps, and SIGINT and SIGQUIT ignored
// (as the shell init's step shell, a background job, has them). Then it guards: end-of-file
// on its stdin (a pipe only the worker holds) kills every process of the namespace; SIGTERM and SIGINT
// are passed to every process; it reaps whatever is orphaned to it, and exits with the step shell's
// status (128 + the signal when a signal ended it) once that shell is gone; the kernel then kills what
// is left in the namespace.
//
// Any failure before the step's shell runs is printed on stderr and ends the sandbox with status 125:
// nothing of the step has run, since its script is only read by that shell.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <grp.h>

#define SETUP_FAILED 125

// The capset(2) ABI of linux/capability.h, spelled out: the launcher builds against any C library's
// headers (musl's include no kernel headers).
#define CAPABILITY_VERSION_3 0x20080522
struct cap_header {
  uint32_t version;
  int pid;
};
struct cap_data {
  uint32_t effective, permitted, inheritable;
};

static void fail(const char *fmt, ...) {
  int saved = errno;
  va_list ap;
  va_start(ap, fmt);
  fputs("plinth-sandbox: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (saved) fprintf(stderr, ": %s", strerror(saved));
  fputc('\n', stderr);
  _exit(SETUP_FAILED);
}

static void write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail("open %s", path);
  size_t len = strlen(text);
  if (write(fd, text, len) != (ssize_t)len) fail("write %s", path);
  close(fd);
}

// fstab(5) escapes: \NNN in octal (space, tab, newline, backslash).
static void unescape(char *s) {
  char *out = s;
  for (char *in = s; *in; in++) {
    if (in[0] == '\\' && in[1] >= '0' && in[1] <= '7' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' && in[3] <= '7') {
      *out++ = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
      in += 3;
    } else {
      *out++ = *in;
    }
  }
  *out = '\0';
}

static unsigned long flags_in_force(const char *target) {
  struct statvfs st;
  if (statvfs(target, &st) != 0) fail("statvfs %s", target);
  unsigned long flags = 0;
  if (st.f_flag & ST_RDONLY) flags |= MS_RDONLY;
  if (st.f_flag & ST_NOSUID) flags |= MS_NOSUID;
  if (st.f_flag & ST_NODEV) flags |= MS_NODEV;
  if (st.f_flag & ST_NOEXEC) flags |= MS_NOEXEC;
  if (st.f_flag & ST_NOATIME) flags |= MS_NOATIME;
  if (st.f_flag & ST_NODIRATIME) flags |= MS_NODIRATIME;
  if (st.f_flag & ST_RELATIME) flags |= MS_RELATIME;
  return flags;
}

// One fstab line: a bind (then its flags by a remount, which keeps every restriction the source
// already had: a flag is only ever added), or a filesystem with its flags and its own options.
static void mount_entry(char *source, char *target, char *type, char *options) {
  unsigned long flags = 0;
  int bind = 0;
  char data[512] = "";
  for (char *save = NULL, *opt = strtok_r(options, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
    if (strcmp(opt, "bind") == 0) bind = 1;
    else if (strcmp(opt, "ro") == 0) flags |= MS_RDONLY;
    else if (strcmp(opt, "nosuid") == 0) flags |= MS_NOSUID;
    else if (strcmp(opt, "nodev") == 0) flags |= MS_NODEV;
    else if (strcmp(opt, "noexec") == 0) flags |= MS_NOEXEC;
    else if (strchr(opt, '=') && !bind) {
      if (strlen(data) + strlen(opt) + 2 > sizeof data) fail("options too long for %s", target);
      if (data[0]) strcat(data, ",");
      strcat(data, opt);
    } else {
      errno = 0;
      fail("unknown mount option \"%s\" for %s", opt, target);
    }
  }
  if (bind) {
    if (mount(source, target, NULL, MS_BIND, NULL) != 0) fail("bind %s on %s", source, target);
    if (flags && mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | flags | flags_in_force(target), NULL) != 0) fail("remount %s", target);
  } else if (mount(source, target, type, flags, data[0] ? data : NULL) != 0) {
    fail("mount %s on %s", type, target);
  }
}

static void mount_fstab(const char *path) {
  FILE *f = fopen(path, "re");
  if (!f) fail("open %s", path);
  char *line = NULL;
  size_t size = 0;
  while (getline(&line, &size, f) > 0) {
    char *save = NULL;
    char *source = strtok_r(line, " \t\n", &save);
    if (!source || source[0] == '#') continue;
    char *target = strtok_r(NULL, " \t\n", &save);
    char *type = strtok_r(NULL, " \t\n", &save);
    char *options = strtok_r(NULL, " \t\n", &save);
    if (!target || !type || !options) {
      errno = 0;
      fail("a line of %s has fewer than four fields", path);
    }
    unescape(source);
    unescape(target);
    mount_entry(source, target, type, options);
  }
  free(line);
  fclose(f);
}

static void drop_privileges(uid_t uid, rlim_t nproc) {
  struct rlimit none = {0, 0}, procs = {nproc, nproc};
  if (setrlimit(RLIMIT_CORE, &none) != 0) fail("RLIMIT_CORE");
  if (setrlimit(RLIMIT_NPROC, &procs) != 0) fail("RLIMIT_NPROC");
  if (setgroups(0, NULL) != 0) fail("setgroups");
  if (setresgid(uid, uid, uid) != 0) fail("setresgid");
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) fail("dropping capability %d from the bounding set", cap);
  }
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) fail("clearing ambient capabilities");
  if (setresuid(uid, uid, uid) != 0) fail("setresuid");
  struct cap_header header = {CAPABILITY_VERSION_3, 0};
  struct cap_data data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &header, data) != 0) fail("clearing capabilities");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
}

// The step's shell: its script on stdin (fd 3 of the sandbox), nothing else of the init's open.
static void exec_step_shell(uid_t uid, rlim_t nproc, const sigset_t *mask) {
  if (dup2(3, 0) != 0) fail("dup2");
  if (syscall(SYS_close_range, 3, ~0U, 0) != 0) fail("close_range");
  drop_privileges(uid, nproc);
  signal(SIGTERM, SIG_DFL);
  signal(SIGCHLD, SIG_DFL);
  // As the shell init's step shell, a background job of a non-interactive shell: an interrupt is for
  // the programs of the step that handle it (OpenTofu then writes its state and releases its lock),
  // not for the shell that waits on them, whose end would end the namespace and them with it.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  sigprocmask(SIG_UNBLOCK, mask, NULL);
  execlp("sh", "sh", "-s", (char *)NULL);
  fail("exec sh");
}

static int status_code(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void reap(pid_t step, int *step_status, int *step_done) {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    if (pid == step) {
      *step_status = status;
      *step_done = 1;
    }
  }
}

// The init, pid 1 of the namespace: guards the step's shell and reaps, until that shell is gone.
static void guard(pid_t step, int sfd) {
  int step_status = 0, step_done = 0;
  struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
  while (!step_done) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      kill(-1, SIGKILL);
      fail("poll");
    }
    if (fds[0].revents) {
      char buf[64];
      ssize_t n = read(0, buf, sizeof buf);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        // The worker is gone or retired this sandbox: nothing of it may go on.
        kill(-1, SIGKILL);
        fds[0].fd = -1;
      }
    }
    if (fds[1].revents) {
      struct signalfd_siginfo info;
      while (read(sfd, &info, sizeof info) == (ssize_t)sizeof info) {
        if (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT) kill(-1, (int)info.ssi_signo);
      }
      reap(step, &step_status, &step_done);
    }
  }
  _exit(status_code(step_status));
}

static void init(char **args, int ncgroups, uid_t uid, rlim_t nproc, const sigset_t *mask) {
  const char *fstab = args[0], *root = args[1];
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail("PR_SET_PDEATHSIG");
  for (int i = 0; i < ncgroups; i++) write_file(args[4 + i], "0");
  if (sethostname("plinth-step", 11) != 0) fail("sethostname");
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail("making mounts private");
  mount_fstab(fstab);
  if (chdir(root) != 0) fail("chdir %s", root);
  if (syscall(SYS_pivot_root, ".", ".") != 0) fail("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) fail("detaching the host's root");
  if (chdir("/workspace") != 0) fail("chdir /workspace");
  int sfd = signalfd(-1, mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) fail("signalfd");
  pid_t step = fork();
  if (step < 0) fail("fork");
  if (step == 0) exec_step_shell(uid, nproc, mask);
  close(3);
  guard(step, sfd);
}

static long number(const char *text, const char *what, long max) {
  char *end;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno || *end || end == text || value <= 0 || value > max) {
    errno = 0;
    fail("%s must be a positive integer, got \"%s\"", what, text);
  }
  return value;
}

static void on_signal(int sig) {
  (void)sig;
}

int main(int argc, char **argv) {
  int net = argc > 1 && strcmp(argv[1], "--net") == 0;
  char **args = argv + 1 + net;
  int nargs = argc - 1 - net;
  if (nargs < 4) {
    errno = 0;
    fail("usage: plinth-sandbox [--net] FSTAB ROOT UID NPROC [CGROUP_PROCS_FILE...]");
  }
  uid_t uid = (uid_t)number(args[2], "UID", 4294967294L);
  rlim_t nproc = (rlim_t)number(args[3], "NPROC", 1L << 22);
  // Blocked from here on (the init reads them from a signalfd; a handler, not SIG_DFL, so that pid 1
  // of the namespace is never spared them); the step's shell unblocks them before it starts.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGCHLD);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  struct sigaction action = {.sa_handler = on_signal};
  sigaction(SIGTERM, &action, NULL);
  sigaction(SIGINT, &action, NULL);
  sigaction(SIGCHLD, &action, NULL);
  if (unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID | (net ? CLONE_NEWNET : 0)) != 0) fail("unshare");
  pid_t init_pid = fork();
  if (init_pid < 0) fail("fork");
  if (init_pid == 0) init(args, nargs - 4, uid, nproc, &mask);
  // As `unshare --fork`: wait for the init, end as it ended. SIGTERM and SIGINT to the group reach the
  // init too; here they stay blocked. Nothing of the step's is held open here.
  close(0);
  close(3);
  int status;
  while (waitpid(init_pid, &status, 0) < 0) {
    if (errno != EINTR) fail("waitpid");
  }
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &mask, NULL);
    kill(getpid(), WTERMSIG(status));
  }
  return status_code(status);
}
