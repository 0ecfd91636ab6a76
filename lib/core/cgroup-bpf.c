/* cgroup v2 device access: splice our allow rules in front of the runtime's BPF_CGROUP_DEVICE
 * program(s) and swap them in atomically.
 *
 * Raw bpf(2) through <linux/bpf.h>, no libbpf: we need one syscall and about 200 lines, and
 * libbpf's object/skeleton machinery does nothing for splicing instructions read back from the
 * kernel, so it would only add a dependency to a binary that runs as root before every start. */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "cleanup.h"
#include "log.h"

#define PROLOGUE_HEAD 6 /* instructions that load the ctx fields */
#define PER_RULE 6      /* instructions per allow rule */

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
        memcpy(a.prog_name, "gpuhook_devices", sizeof("gpuhook_devices"));
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
                p->new_fd = load(insns, total, err);
                if (p->new_fd < 0)
                        return -1;
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
        if (query(fd, true, &all, &nall, NULL) == 0 && nall > cnt)
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
        if (prepare(&set, ids, rules, n, err) < 0)
                return gh_err_wrap(err, "allowing devices in cgroup %s", name);

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
