/* cgroup v2 device access: splice our allow rules in front of the runtime's BPF_CGROUP_DEVICE
 * program(s) and swap them in atomically.
 *
 * Raw bpf(2) through <linux/bpf.h>, no libbpf: we need one syscall and about 200 lines, and
 * libbpf's object/skeleton machinery does nothing for splicing instructions read back from the
 * kernel, so it would only add a dependency to a binary that runs as root before every start. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "file.h"
#include "log.h"
#include "steps.h"

#define PROLOGUE_HEAD 6 /* instructions that load the ctx fields */
#define PER_RULE 6      /* instructions per allow rule */
#define PROG_NAME "gpuhook_devices"

#ifndef BPF_FS_MAGIC
#define BPF_FS_MAGIC 0xcafe4a11
#endif

struct spliced {
        uint32_t id;
        int old_fd, new_fd;
        struct bpf_insn *insns;
        uint32_t n;
};

static int sys_bpf(int cmd, union bpf_attr *attr) { return (int) syscall(__NR_bpf, cmd, attr, sizeof(*attr)); }

static uint64_t ptr(const void *p) { return (uint64_t) (uintptr_t) p; }

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
        return (struct bpf_insn) { .code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm };
}

/* Returns the ids of the programs attached to the cgroup itself (effective = false) or applying
 * to it, ancestors included.  *ids is malloc'ed. */
static int query(int cgfd, bool effective, uint32_t **ids, uint32_t *cnt, uint32_t *flags)
{
        uint32_t want = 16;

        for (;;) {
                _cleanup_free_ uint32_t *buf = calloc(want, sizeof(*buf));
                union bpf_attr a = { 0 };

                if (buf == NULL)
                        return -1;
                a.query.target_fd = (uint32_t) cgfd;
                a.query.attach_type = BPF_CGROUP_DEVICE;
                a.query.query_flags = effective ? BPF_F_QUERY_EFFECTIVE : 0;
                a.query.prog_ids = ptr(buf);
                a.query.prog_cnt = want;
                if (sys_bpf(BPF_PROG_QUERY, &a) < 0) {
                        if (errno == ENOSPC && a.query.prog_cnt > want) {
                                want = a.query.prog_cnt;
                                continue;
                        }
                        return -1;
                }
                *ids = steal_pointer(&buf);
                *cnt = a.query.prog_cnt;
                if (flags)
                        *flags = a.query.attach_flags;
                return 0;
        }
}

/* bpf needs a real fd for the cgroup (older kernels refuse O_PATH ones). */
static int reopen_dir(int cgfd) { return openat(cgfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC); }

int gh_cgroup_bpf_count(int cgfd, unsigned *flags, gh_error_t *err)
{
        _cleanup_close_ int fd = reopen_dir(cgfd);
        _cleanup_free_ uint32_t *ids = NULL;
        uint32_t cnt = 0, f = 0;

        if (fd < 0 || query(fd, false, &ids, &cnt, &f) < 0)
                return gh_err(err, errno, "querying the cgroup's device programs");
        if (flags)
                *flags = f;
        return (int) cnt;
}

/* Reads program ID back: an fd to it and its instructions as the verifier left them. */
static int read_prog(struct spliced *p, gh_error_t *err)
{
        struct bpf_prog_info info = { 0 };
        union bpf_attr a = { 0 };
        uint32_t len;

        a.prog_id = p->id;
        p->old_fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
        if (p->old_fd < 0)
                return gh_err(err, errno, "opening device program %u%s", p->id,
                              errno == ENOENT ? " (the runtime replaced it meanwhile; retry)" : "");
        memset(&a, 0, sizeof(a));
        a.info.bpf_fd = (uint32_t) p->old_fd;
        a.info.info_len = sizeof(info);
        a.info.info = ptr(&info);
        if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) < 0)
                return gh_err(err, errno, "reading device program %u", p->id);
        if (info.type != BPF_PROG_TYPE_CGROUP_DEVICE)
                return gh_err(err, 0, "program %u attached as a device filter has type %u", p->id, info.type);
        len = info.xlated_prog_len;
        if (len == 0 || len % sizeof(struct bpf_insn) != 0)
                return gh_err(err, 0,
                              "the kernel did not give back the instructions of device program %u "
                              "(needs CAP_SYS_ADMIN)",
                              p->id);
        p->insns = calloc(1, len);
        if (p->insns == NULL)
                return gh_err(err, ENOMEM, "reading device program %u", p->id);
        memset(&info, 0, sizeof(info));
        info.xlated_prog_len = len;
        info.xlated_prog_insns = ptr(p->insns);
        memset(&a, 0, sizeof(a));
        a.info.bpf_fd = (uint32_t) p->old_fd;
        a.info.info_len = sizeof(info);
        a.info.info = ptr(&info);
        if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) < 0)
                return gh_err(err, errno, "reading the instructions of device program %u", p->id);
        if (info.xlated_prog_len != len)
                return gh_err(err, 0, "device program %u changed size while being read", p->id);
        p->n = len / sizeof(struct bpf_insn);
        return 0;
}

/* The translated instructions are only reloadable when they refer to nothing outside themselves:
 * map references come back as map ids, helper calls as kernel address offsets, and a blinded
 * program (bpf_jit_harden) uses the hidden register r11.  runc's and crun's filters have none. */
static int check_reloadable(const struct spliced *p, gh_error_t *err)
{
        for (uint32_t i = 0; i < p->n; i++) {
                const struct bpf_insn *in = &p->insns[i];
                uint8_t cls = BPF_CLASS(in->code);

                if (in->dst_reg > BPF_REG_10 || in->src_reg > BPF_REG_10)
                        return gh_err(err, 0,
                                      "device program %u uses an internal register (constant blinding?): "
                                      "cannot extend it; set net.core.bpf_jit_harden=0 or use --no-cgroups",
                                      p->id);
                if ((cls == BPF_JMP || cls == BPF_JMP32) && BPF_OP(in->code) == BPF_CALL)
                        return gh_err(err, 0,
                                      "device program %u calls a helper or subprogram at instruction %u: "
                                      "cannot extend it faithfully; allow the devices in the runtime instead",
                                      p->id, i);
                if (in->code == (BPF_LD | BPF_IMM | BPF_DW)) {
                        if (in->src_reg != 0)
                                return gh_err(err, 0,
                                              "device program %u uses a BPF map at instruction %u: cannot "
                                              "extend it faithfully; allow the devices in the runtime instead",
                                              p->id, i);
                        i++;
                }
        }
        return 0;
}

/* Our rules, then the runtime's code.  The prologue only writes r0, r2-r5, which the runtime's
 * code cannot expect anything of (the verifier made it initialise them itself), and leaves r1 = ctx,
 * so the original code runs as if entered directly.  Jumps inside it stay valid: we only prepend. */
static struct bpf_insn *build_program(const struct gh_dev_rule *rules, size_t n, const struct spliced *p,
                                      uint32_t *total)
{
        size_t head = PROLOGUE_HEAD + n * PER_RULE, k = 0;
        struct bpf_insn *out = calloc(head + p->n, sizeof(*out));

        if (out == NULL)
                return NULL;
        out[k++] = insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_2, BPF_REG_1, 0, 0); /* access_type */
        out[k++] = insn(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_2, 0, 0);
        out[k++] = insn(BPF_ALU | BPF_AND | BPF_K, BPF_REG_3, 0, 0, 0xffff);    /* r3 = device type */
        out[k++] = insn(BPF_ALU | BPF_RSH | BPF_K, BPF_REG_2, 0, 0, 16);        /* r2 = access bits */
        out[k++] = insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_4, BPF_REG_1, 4, 0); /* major */
        out[k++] = insn(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_5, BPF_REG_1, 8, 0); /* minor */
        for (size_t i = 0; i < n; i++) {
                int32_t type = rules[i].type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR;

                /* Each test skips to the next rule (or to the runtime's code after the last one). */
                out[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, 5, type);
                out[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, 4, (int32_t) rules[i].major);
                out[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_5, 0, 3, (int32_t) rules[i].minor);
                out[k++] = insn(BPF_JMP | BPF_JSET | BPF_K, BPF_REG_2, 0, 2,
                                ~(int32_t) (BPF_DEVCG_ACC_READ | BPF_DEVCG_ACC_WRITE)); /* mknod or unknown */
                out[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
                out[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
        }
        memcpy(out + k, p->insns, p->n * sizeof(*out));
        *total = (uint32_t) (k + p->n);
        return out;
}

/* The last non-empty line of the verifier log names the problem. */
static const char *last_line(char *log)
{
        char *end = log + strlen(log);

        while (end > log && (end[-1] == '\n' || end[-1] == ' '))
                *--end = '\0';
        while (end > log && end[-1] != '\n')
                end--;
        return *end ? end : "no verifier log";
}

static int load(const struct bpf_insn *insns, uint32_t n, gh_error_t *err)
{
        static const char license[] = "Apache-2.0";
        _cleanup_free_ char *log = NULL;
        union bpf_attr a = { 0 };
        int fd, saved;

        a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
        a.insns = ptr(insns);
        a.insn_cnt = n;
        a.license = ptr(license);
        memcpy(a.prog_name, PROG_NAME, sizeof(PROG_NAME));
        fd = sys_bpf(BPF_PROG_LOAD, &a);
        if (fd >= 0)
                return fd;
        saved = errno;
        /* Load again with a log only on failure: the log costs time on every start otherwise. */
        log = calloc(1, 1 << 16);
        if (log != NULL && (saved == EACCES || saved == EINVAL)) {
                a.log_level = 1;
                a.log_buf = ptr(log);
                a.log_size = 1 << 16;
                fd = sys_bpf(BPF_PROG_LOAD, &a);
                if (fd >= 0)
                        return fd;
                if (log[0])
                        return gh_err(err, 0, "loading the extended device program: verifier: %s", last_line(log));
        }
        return gh_err(err, saved, "loading the extended device program");
}

/* ---- One program per rule set ---------------------------------------------------------------
 * Loading a device program (the verifier, then the JIT) is the dearest step of the v2 path: about
 * 0.8 ms for 56 instructions on the CPU machine, where getting a pinned one and reading it back
 * takes 8 us.  Containers of one engine with the same GPUs get the same runtime program and the same
 * rules, so the same spliced program: the first start pins it in bpffs under a name derived from its
 * instructions, the next ones attach that one.  A pin is only a cache entry: what it holds is read
 * back and compared instruction by instruction with the program we would load (the name is a hash,
 * not a proof), and anything else is loaded as before.  Unpinning never affects a cgroup: the kernel
 * frees a program once no pin and no cgroup holds it, so the programs of dead containers go with their
 * cgroups as before, and the directory keeps at most GH_CGROUP_BPF_PINS programs (one more empties
 * it).  `gpu-cli cache clear` empties it too (gh_cgroup_bpf_forget). */
static const char *pin_dir = GH_CGROUP_BPF_PIN_DIR;

void gh_cgroup_bpf_set_pin_dir(const char *dir) { pin_dir = dir; }

/* Where no bpffs holds pins (below). */
static int id_get(const struct bpf_insn *insns, uint32_t n);
static void id_save(int fd, const struct bpf_insn *insns, uint32_t n);

/* FNV-1a over the instructions: a name for the pin, not a check of it. */
static uint64_t insns_hash(const struct bpf_insn *insns, uint32_t n)
{
        const unsigned char *p = (const unsigned char *) insns;
        uint64_t h = 0xcbf29ce484222325ull;

        for (size_t i = 0; i < (size_t) n * sizeof(*insns); i++)
                h = (h ^ p[i]) * 0x100000001b3ull;
        return h;
}

/* The pin directory, when pin_dir is on a bpffs (the parent must be one; the directory is made). */
static int open_pin_dir(bool create)
{
        char parent[256];
        struct statfs sfs;
        const char *slash;
        int fd;

        if (pin_dir == NULL || (slash = strrchr(pin_dir, '/')) == NULL || (size_t) (slash - pin_dir) >= sizeof(parent))
                return -1;
        memcpy(parent, pin_dir, (size_t) (slash - pin_dir));
        parent[slash - pin_dir] = '\0';
        if (statfs(parent[0] ? parent : "/", &sfs) < 0 || sfs.f_type != BPF_FS_MAGIC)
                return -1;
        fd = open(pin_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create && (mkdir(pin_dir, 0700) == 0 || errno == EEXIST))
                fd = open(pin_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 && (fstatfs(fd, &sfs) < 0 || sfs.f_type != BPF_FS_MAGIC)) {
                close(fd);
                return -1;
        }
        return fd;
}

/* The name a rule set's program is kept under, as a pin or as an id: "dev-HASH-COUNT". */
static void kept_name(const struct bpf_insn *insns, uint32_t n, char name[static 48])
{
        snprintf(name, 48, "dev-%016llx-%u", (unsigned long long) insns_hash(insns, n), n);
}

static int pin_path(const struct bpf_insn *insns, uint32_t n, char *buf, size_t size)
{
        char name[48];
        int r;

        kept_name(insns, n, name);
        r = snprintf(buf, size, "%s/%s", pin_dir, name);
        return r > 0 && (size_t) r < size ? 0 : -1;
}

/* Empties a directory of kept programs, pins or ids (the programs stay where they are attached). */
static unsigned unpin_all(int dirfd)
{
        _cleanup_closedir_ DIR *d = fdopendir(dup(dirfd));
        struct dirent *de;
        unsigned n = 0;

        while (d != NULL && (de = readdir(d)) != NULL)
                if (strncmp(de->d_name, "dev-", 4) == 0 && unlinkat(dirfd, de->d_name, 0) == 0)
                        n++;
        return n;
}

/* Keeps a directory of kept programs under GH_CGROUP_BPF_PINS entries: at the limit it is emptied
 * (one more start loads again; nothing attached changes). */
static void make_room(int dirfd, const char *dir)
{
        _cleanup_closedir_ DIR *d = fdopendir(dup(dirfd));
        struct dirent *de;
        unsigned count = 0;

        while (d != NULL && (de = readdir(d)) != NULL)
                count += strncmp(de->d_name, "dev-", 4) == 0;
        if (count >= GH_CGROUP_BPF_PINS)
                gh_debug("%s: %u programs kept, removed %u to make room", dir, count, unpin_all(dirfd));
}

/* Whether fd is a device program whose instructions, as the kernel keeps them, are insns. */
static bool prog_is(int fd, const struct bpf_insn *insns, uint32_t n)
{
        _cleanup_free_ struct bpf_insn *back = calloc(n ? n : 1, sizeof(*back));
        struct bpf_prog_info info = { 0 };
        union bpf_attr a = { 0 };

        if (back == NULL)
                return false;
        info.xlated_prog_len = n * (uint32_t) sizeof(*back);
        info.xlated_prog_insns = ptr(back);
        a.info.bpf_fd = (uint32_t) fd;
        a.info.info_len = sizeof(info);
        a.info.info = ptr(&info);
        return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) == 0 && info.type == BPF_PROG_TYPE_CGROUP_DEVICE &&
               strncmp(info.name, PROG_NAME, sizeof(info.name)) == 0 && info.xlated_prog_len == n * sizeof(*back) &&
               memcmp(back, insns, (size_t) n * sizeof(*back)) == 0;
}

/* The pinned program with exactly these instructions, or -1. */
static int pinned_get(const struct bpf_insn *insns, uint32_t n)
{
        union bpf_attr a = { 0 };
        char path[320];
        int fd;

        if (pin_dir == NULL || pin_path(insns, n, path, sizeof(path)) < 0)
                return id_get(insns, n);
        a.pathname = ptr(path);
        fd = sys_bpf(BPF_OBJ_GET, &a);
        if (fd < 0)
                return id_get(insns, n);
        if (!prog_is(fd, insns, n)) {
                gh_debug("%s is not the device program it is named after: loading a new one", path);
                close(fd);
                return -1;
        }
        return fd;
}

/* ---- where no bpffs is mounted: the program's id, kept in id_dir ---- */

static const char *id_dir = GH_CGROUP_BPF_ID_DIR;

void gh_cgroup_bpf_set_id_dir(const char *dir) { id_dir = dir; }

/* id_dir, root's and writable by nobody else (else it is not used), made when create. */
static int open_id_dir(bool create)
{
        struct stat st;
        int fd;

        if (id_dir == NULL || id_dir[0] != '/')
                return -1;
        fd = open(id_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT && create) {
                /* The parents as the state cache and the records make them (0755: readers of the
                 * cache need to pass), the directory itself root's alone. */
                _cleanup_error_ gh_error_t e = NULL;
                _cleanup_free_ char *parent = strdup(id_dir);
                char *slash = parent ? strrchr(parent, '/') : NULL;
                if (slash != NULL && slash != parent)
                        *slash = '\0';
                if (slash != NULL && (slash == parent || gh_mkdir_p_trusted(AT_FDCWD, parent, 0755, &e) == 0) &&
                    (mkdir(id_dir, 0700) == 0 || errno == EEXIST))
                        fd = open(id_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0)) {
                close(fd);
                return -1;
        }
        return fd;
}

/* The program recorded for these instructions, by id, when it is still loaded and is exactly them. */
static int id_get(const struct bpf_insn *insns, uint32_t n)
{
        _cleanup_close_ int dirfd = open_id_dir(false), f = -1;
        union bpf_attr a = { 0 };
        char name[48], buf[24];
        struct stat st;
        unsigned long v;
        char *end;
        ssize_t got;
        int fd;

        if (dirfd < 0)
                return -1;
        kept_name(insns, n, name);
        f = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (f < 0 || fstat(f, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
            (got = read(f, buf, sizeof(buf) - 1)) <= 0)
                return -1;
        buf[got] = '\0';
        errno = 0;
        v = strtoul(buf, &end, 10);
        if (errno != 0 || end == buf || (*end != '\0' && *end != '\n') || v == 0 || v > UINT32_MAX)
                return -1;
        a.prog_id = (uint32_t) v;
        fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
        if (fd < 0)
                return -1; /* gone with the last cgroup that held it */
        if (!prog_is(fd, insns, n)) {
                gh_debug("device program %lu is not the one %s/%s names: loading a new one", v, id_dir, name);
                close(fd);
                return -1;
        }
        return fd;
}

/* Records the id of a program just loaded from insns (and kept by the kernel as given). */
static void id_save(int fd, const struct bpf_insn *insns, uint32_t n)
{
        _cleanup_close_ int dirfd = -1;
        _cleanup_error_ gh_error_t e = NULL;
        struct bpf_prog_info info = { 0 };
        union bpf_attr a = { 0 };
        char name[48], text[24];

        a.info.bpf_fd = (uint32_t) fd;
        a.info.info_len = sizeof(info);
        a.info.info = ptr(&info);
        if (sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) < 0 || info.id == 0 || (dirfd = open_id_dir(true)) < 0)
                return;
        make_room(dirfd, id_dir);
        kept_name(insns, n, name);
        snprintf(text, sizeof(text), "%u\n", info.id);
        if (gh_write_file_at(dirfd, name, text, strlen(text), 0600, GH_WRITE_ATOMIC, NULL, &e) < 0)
                gh_debug("keeping the device program's id: %s", e->msg);
}

/* Pins a program just loaded from insns, when the kernel kept it as given (else a later start could
 * never prove a pin right).  Failures only cost the next start a load. */
static void pin_new(int fd, const struct bpf_insn *insns, uint32_t n)
{
        _cleanup_close_ int dirfd = -1;
        union bpf_attr a = { 0 };
        char path[320];

        if (!prog_is(fd, insns, n))
                return;
        if (pin_dir == NULL || pin_path(insns, n, path, sizeof(path)) < 0 || (dirfd = open_pin_dir(true)) < 0) {
                id_save(fd, insns, n); /* no bpffs here: the id, for while the program lives */
                return;
        }
        make_room(dirfd, pin_dir);
        a.pathname = ptr(path);
        a.bpf_fd = (uint32_t) fd;
        if (sys_bpf(BPF_OBJ_PIN, &a) < 0 && errno != EEXIST)
                gh_debug("pinning the device program at %s: %m", path);
}

int gh_cgroup_bpf_forget(gh_error_t *err)
{
        _cleanup_close_ int dirfd = open_pin_dir(false), idfd = open_id_dir(false);
        unsigned n = 0;

        if (idfd >= 0) {
                n += unpin_all(idfd);
                if (unlinkat(AT_FDCWD, id_dir, AT_REMOVEDIR) < 0 && errno != ENOENT && errno != ENOTEMPTY)
                        return gh_err(err, errno, "removing %s", id_dir);
        }
        if (dirfd < 0)
                return (int) n;
        n += unpin_all(dirfd);
        if (unlinkat(AT_FDCWD, pin_dir, AT_REMOVEDIR) < 0 && errno != ENOENT && errno != ENOTEMPTY)
                return gh_err(err, errno, "removing %s", pin_dir);
        return (int) n;
}

static int attach(int cgfd, int new_fd, int old_fd, uint32_t flags)
{
        union bpf_attr a = { 0 };

        a.target_fd = (uint32_t) cgfd;
        a.attach_bpf_fd = (uint32_t) new_fd;
        a.attach_type = BPF_CGROUP_DEVICE;
        /* Without BPF_F_ALLOW_MULTI the cgroup holds one program and attaching with the same flags
         * swaps it; with it, BPF_F_REPLACE swaps exactly the old one in place. */
        a.attach_flags = flags;
        if (flags & BPF_F_ALLOW_MULTI) {
                a.attach_flags |= BPF_F_REPLACE;
                a.replace_bpf_fd = (uint32_t) old_fd;
        }
        return sys_bpf(BPF_PROG_ATTACH, &a);
}

struct splice_set {
        struct spliced *p;
        uint32_t n;
};

static void splice_set_free(struct splice_set *s)
{
        for (uint32_t i = 0; s->p && i < s->n; i++) {
                if (s->p[i].old_fd >= 0)
                        close(s->p[i].old_fd);
                if (s->p[i].new_fd >= 0)
                        close(s->p[i].new_fd);
                free(s->p[i].insns);
        }
        free(s->p);
}

/* Reads, checks, extends and loads every attached program: everything that can fail before the
 * cgroup changes. */
static int prepare(struct splice_set *set, const uint32_t *ids, const struct gh_dev_rule *rules, size_t n,
                   gh_error_t *err)
{
        for (uint32_t i = 0; i < set->n; i++) {
                _cleanup_free_ struct bpf_insn *insns = NULL;
                struct spliced *p = &set->p[i];
                uint32_t total;

                p->id = ids[i];
                if (read_prog(p, err) < 0 || check_reloadable(p, err) < 0)
                        return -1;
                insns = build_program(rules, n, p, &total);
                if (insns == NULL)
                        return gh_err(err, ENOMEM, "building the device program");
                p->new_fd = pinned_get(insns, total);
                if (p->new_fd >= 0) {
                        gh_debug("device program for %zu rule(s) over program %u: the one kept for reuse", n, p->id);
                        continue;
                }
                p->new_fd = load(insns, total, err);
                if (p->new_fd < 0)
                        return -1;
                pin_new(p->new_fd, insns, total);
        }
        return 0;
}

int gh_cgroup_bpf_allow(int cgfd, const char *name, const struct gh_dev_rule *rules, size_t n, gh_error_t *err)
{
        _cleanup_close_ int fd = reopen_dir(cgfd);
        _cleanup_free_ uint32_t *ids = NULL, *all = NULL;
        _cleanup_(splice_set_free) struct splice_set set = { 0 };
        uint32_t cnt = 0, nall = 0, flags = 0, done;
        int saved;

        if (fd < 0)
                return gh_err(err, errno, "opening cgroup %s", name);
        if (query(fd, false, &ids, &cnt, &flags) < 0)
                return gh_err(err, errno, "querying the device programs of cgroup %s%s", name,
                              errno == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
        /* The effective list only feeds a debug line: no second query on the way of a start. */
        if (gh_log_get_level() >= GH_LOG_DEBUG && query(fd, true, &all, &nall, NULL) == 0 && nall > cnt)
                gh_debug("cgroup %s: %u device program(s) of ancestor cgroups also apply and are left as they are",
                         name, nall - cnt);
        if (cnt == 0) {
                gh_debug("cgroup %s: no device program attached, every device is allowed already", name);
                return 0;
        }
        set.p = calloc(cnt, sizeof(*set.p));
        if (set.p == NULL)
                return gh_err(err, ENOMEM, "allowing devices in %s", name);
        set.n = cnt;
        for (uint32_t i = 0; i < cnt; i++)
                set.p[i].old_fd = set.p[i].new_fd = -1;
        GH_STEP("cgroup.query");
        if (prepare(&set, ids, rules, n, err) < 0)
                return gh_err_wrap(err, "allowing devices in cgroup %s", name);
        GH_STEP("cgroup.prepare");

        for (done = 0; done < cnt; done++) {
                if (attach(fd, set.p[done].new_fd, set.p[done].old_fd, flags) < 0)
                        break;
                gh_debug("cgroup %s: device program %u replaced by one allowing %zu more device(s)", name,
                         set.p[done].id, n);
        }
        if (done == cnt)
                return 0;
        saved = errno;
        /* Put back the runtime's programs we had already swapped out. */
        for (uint32_t i = done; i-- > 0;)
                if (attach(fd, set.p[i].old_fd, set.p[i].new_fd, flags) < 0)
                        gh_warn("cgroup %s: could not put back device program %u: %m", name, set.p[i].id);
        return gh_err(err, saved, "allowing devices in cgroup %s: replacing its device program %u%s", name,
                      set.p[done].id,
                      saved == ENOENT || saved == EPERM ? " (attached through a bpf link or by a parent? "
                                                          "use --no-cgroups and let the runtime allow it)"
                                                        : "");
}
