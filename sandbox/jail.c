/* jail.c — namespaces, the empty root and Landlock for the candidate worker
 * (see jail.h). Every step is checked: a step the kernel refuses is an
 * error for the caller, which decides (from the probe) whether the layer
 * was expected to work. */
#include "sandbox/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Landlock rights newer than the system's headers (Debian 12's stop at ABI
 * 2); the values are the kernel's UAPI. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)      /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)     /* ABI 5 */
#endif
#define NET_BIND_TCP (1ULL << 0)                      /* ABI 4 */
#define NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)        /* ABI 6 */
#define SCOPE_SIGNAL (1ULL << 1)

/* struct landlock_ruleset_attr as of ABI 6; the size passed tells the
 * kernel which fields we fill. */
struct ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

static enum cr_status write_file(const char *path, const char *s, struct cr_err *err)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	if (fd < 0)
		return cr_errf(err, CR_EENV, "jail: open %s: %s", path, strerror(errno));
	n = write(fd, s, strlen(s));
	if (n != (ssize_t)strlen(s)) {
		int e = errno;
		close(fd);
		return cr_errf(err, CR_EENV, "jail: write %s: %s", path, strerror(e));
	}
	close(fd);
	return CR_OK;
}

enum cr_status cr_jail_unshare(struct cr_err *err)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC))
		return cr_errf(err, CR_EENV, "jail: unshare(user, mount, net, ipc): %s", strerror(errno));
	/* the same ids inside: nothing in the jail is root */
	if (write_file("/proc/self/setgroups", "deny", err))
		return err->status;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
	if (write_file("/proc/self/uid_map", map, err))
		return err->status;
	snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
	return write_file("/proc/self/gid_map", map, err);
}

static enum cr_status drop_caps(struct cr_err *err)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof data);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return cr_errf(err, CR_EENV, "jail: clear ambient capabilities: %s", strerror(errno));
	if (syscall(SYS_capset, &hdr, data))
		return cr_errf(err, CR_EENV, "jail: capset(none): %s", strerror(errno));
	return CR_OK;
}

enum cr_status cr_jail_root(const char *so_path, struct cr_err *err)
{
	enum cr_status st = CR_OK;
	int so = -1, fs = -1, mnt = -1, ph;
	struct mount_attr ro = { .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV };

	/* nothing done here may reach the orchestrator's mount namespace */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
		st = cr_errf(err, CR_EENV, "jail: make mounts private: %s", strerror(errno));
		goto out;
	}
	/* the library enters as a read-only bind mount of that one file: a
	 * copy would be bounded by the worker's RLIMIT_FSIZE */
	if (so_path && ((so = open_tree(AT_FDCWD, so_path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) < 0 ||
			mount_setattr(so, "", AT_EMPTY_PATH, &ro, sizeof ro))) {
		st = cr_errf(err, CR_EENV, "jail: bind %s read-only: %s", so_path, strerror(errno));
		goto out;
	}
	/* a detached tmpfs (new mount API): no directory of the old root is
	 * needed as a mount point */
	if ((fs = fsopen("tmpfs", FSOPEN_CLOEXEC)) < 0 ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "size", "64k", 0) ||
	    fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0755", 0) ||
	    fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) ||
	    (mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)) < 0) {
		st = cr_errf(err, CR_EENV, "jail: a tmpfs for the new root: %s", strerror(errno));
		goto out;
	}
	/* attach it over / and make it the root; the old root is detached, so
	 * no path leads out (no /proc, /sys, /tmp, /dev) */
	if (move_mount(mnt, "", AT_FDCWD, "/", MOVE_MOUNT_F_EMPTY_PATH) || fchdir(mnt)) {
		st = cr_errf(err, CR_EENV, "jail: attach the new root: %s", strerror(errno));
		goto out;
	}
	if (so >= 0) {
		if ((ph = open(CR_JAIL_SO + 1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444)) < 0 ||
		    close(ph) || move_mount(so, "", AT_FDCWD, CR_JAIL_SO + 1, MOVE_MOUNT_F_EMPTY_PATH)) {
			st = cr_errf(err, CR_EENV, "jail: place the library in the new root: %s",
				     strerror(errno));
			goto out;
		}
	}
	if (syscall(SYS_pivot_root, ".", ".") || umount2(".", MNT_DETACH) || chdir("/")) {
		st = cr_errf(err, CR_EENV, "jail: pivot into the empty root: %s", strerror(errno));
		goto out;
	}
	if (mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL)) {
		st = cr_errf(err, CR_EENV, "jail: make the root read-only: %s", strerror(errno));
		goto out;
	}
	st = drop_caps(err);
out:
	if (so >= 0)
		close(so);
	if (fs >= 0)
		close(fs);
	if (mnt >= 0)
		close(mnt);
	return st;
}

int cr_landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	return v > 0 ? (int)v : 0;
}

enum cr_status cr_landlock_restrict(int abi, const char *readable, struct cr_err *err)
{
	struct ruleset_attr a = { 0 };
	size_t size = sizeof a.handled_access_fs;
	enum cr_status st = CR_OK;
	int rs, fd = -1;

	a.handled_access_fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */
	if (abi >= 2)
		a.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		a.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		a.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	if (abi >= 4) {
		a.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
		size = offsetof(struct ruleset_attr, scoped);
	}
	if (abi >= 6) {
		a.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
		size = sizeof a;
	}
	rs = (int)syscall(SYS_landlock_create_ruleset, &a, size, 0);
	if (rs < 0)
		return cr_errf(err, CR_EENV, "landlock: create ruleset (abi %d): %s", abi, strerror(errno));
	if (readable) {
		struct landlock_path_beneath_attr pb = { .allowed_access = LANDLOCK_ACCESS_FS_READ_FILE };
		if ((fd = open(readable, O_PATH | O_CLOEXEC)) < 0) {
			st = cr_errf(err, CR_EENV, "landlock: open %s: %s", readable, strerror(errno));
			goto out;
		}
		pb.parent_fd = fd;
		if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0)) {
			st = cr_errf(err, CR_EENV, "landlock: rule for %s: %s", readable, strerror(errno));
			goto out;
		}
	}
	/* needs no_new_privs (set by the sandbox before the jail) */
	if (syscall(SYS_landlock_restrict_self, rs, 0))
		st = cr_errf(err, CR_EENV, "landlock: restrict self: %s", strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	close(rs);
	return st;
}
