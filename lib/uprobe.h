/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * User-space probing: ELF symbols, process mappings and uprobe bookkeeping.
 *
 * - elf_syms: one file's function symbols from .dynsym and .symtab, with
 *   symbol versions (name, name@VER, name@@VER), name -> file offset (what
 *   a uprobe attaches to) and file offset -> symbol (names of addresses).
 * - proc_maps_foreach(): the file-backed mappings of a process.
 * - uprobe_set: the libraries a tool has attached to, one entry per inode
 *   (st_dev, st_ino): a library mapped by many processes (8 ranks, every
 *   container) is probed once, and BPF filters by process. Links are kept
 *   per library and released when it is pruned or the set is freed.
 * - elf_cache + uprobe_addr_name(): "what function is at this address of
 *   process P", keyed by inode and file offset, never by virtual address.
 *
 * - uprobe_scanner: discovery. A process is scanned when BPF reports an exec
 *   or a library load (bpf/uprobe_discover.bpf.h: sched_process_exec, and a
 *   uprobe on ld.so's _dl_debug_state, which runs after every dlopen and
 *   after a new program's libraries are mapped, before main), and every
 *   process is rescanned periodically as a fallback (static executables,
 *   libraries mapped without ld.so). Calls made between the load of a new
 *   library and the attach (a few milliseconds) are not seen; a library
 *   named up front (uprobe_scan_add_path) loses none.
 */
#ifndef AISCOPE_UPROBE_H
#define AISCOPE_UPROBE_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "probe.h"

struct bpf_program;
struct bpf_link;
struct bpf_object;
struct ring_buffer;

/* ---- ELF symbols ---- */

struct elf_syms;

/* Reads the function symbols of an ELF file. NULL with errno set
 * (ENOEXEC: not ELF, ENOENT, EACCES, ...). */
struct elf_syms *elf_syms_open(const char *path);
void elf_syms_free(struct elf_syms *s);
/* The memory s holds: its symbol and string tables (read through the
 * file's mapping, resident while s is) and its sorted arrays. */
size_t elf_syms_bytes(const struct elf_syms *s);
/* Function symbols read (both tables, duplicates included). */
int elf_syms_count(const struct elf_syms *s);
/* Whether the file is ELF for the machine this tool was built for. */
bool elf_syms_native(const struct elf_syms *s);

/*
 * File offset of function `name`: "name" (the default version where there
 * are several, else the only one), "name@VER" or "name@@VER" (that
 * version). Both tables are searched, so local symbols of .symtab (kernel
 * stubs, a static CUDA runtime in an executable) resolve too.
 * Returns 0, -ENOENT (no such function) or -ERANGE (not in a loaded segment).
 */
int elf_syms_offset(const struct elf_syms *s, const char *name, uint64_t *off);
bool elf_syms_has(const struct elf_syms *s, const char *name);

/* The function containing file offset off (value <= v < value + size; a
 * size-0 symbol only at its exact address). Returns its name (valid while
 * s is) and the offset into it, or NULL. */
const char *elf_syms_at(const struct elf_syms *s, uint64_t off, uint64_t *delta);

/*
 * The file-offset range [*lo, *hi) of the largest cluster of functions
 * whose names start with one of prefixes (NULL-terminated), in address
 * order, where two of them are at most max_gap other functions apart: where
 * a static library (a CUDA runtime linked into an executable) was placed.
 * Returns the number of matching functions in it, or -ENOENT.
 */
int elf_syms_span(const struct elf_syms *s, const char *const *prefixes, int max_gap,
		  uint64_t *lo, uint64_t *hi);

/* Virtual address <-> file offset through the PT_LOAD headers. */
int elf_syms_vaddr_to_off(const struct elf_syms *s, uint64_t vaddr, uint64_t *off);
int elf_syms_off_to_vaddr(const struct elf_syms *s, uint64_t off, uint64_t *vaddr);

/* ---- process mappings ---- */

struct proc_map {
	uint64_t start, end, pgoff;
	uint64_t dev;		/* makedev(major, minor) as maps shows it */
	uint64_t ino;
	bool exec;
	bool main_exe;		/* uprobe_scanner only: the process's executable */
	const char *path;	/* "" for anonymous mappings; may end in " (deleted)" */
};

/* Calls cb for every mapping of pid with a file behind it (inode != 0) in
 * maps order; a non-zero return stops the walk and is returned. -errno when
 * the maps file cannot be read (the process is gone: -ENOENT or -ESRCH). */
int proc_maps_foreach(pid_t pid, int (*cb)(const struct proc_map *m, void *ctx), void *ctx);
/* Calls cb for every process in /proc; non-zero stops. */
int proc_pids_foreach(int (*cb)(pid_t pid, void *ctx), void *ctx);
/* The path from which this process's mapping can be opened by us, even in
 * another mount namespace or when the file is deleted:
 * /proc/PID/map_files/START-END. */
void proc_map_file(pid_t pid, const struct proc_map *m, char *buf, size_t len);

/* The base name of a maps path, without " (deleted)". */
const char *uprobe_basename(const char *path, char *buf, size_t len);

/* ---- uprobe bookkeeping ---- */

struct uprobe_pending {
	struct bpf_program *prog;
	uint64_t off, cookie;
	pid_t pid;
	bool retprobe;
};

struct uprobe_lib {
	uint64_t dev, ino;	/* of the file (stat of open_path) */
	char path[PATH_MAX];	/* as the first process that mapped it saw it */
	char open_path[PATH_MAX];	/* what we attach through (see proc_map_file) */
	int kind;		/* the tool's classification */
	struct elf_syms *syms;
	struct bpf_link **links;
	int nlinks, cap;
	struct uprobe_pending *pending;	/* probes of uprobe_multi programs, */
	int npending, pending_cap;	/* attached by uprobe_lib_flush */
	unsigned int seen;	/* generation of the last scan that found it */
	int attached;		/* probes attached */
	int missing;		/* symbols asked for and absent */
	bool pinned;		/* given by the user (--lib): never pruned */
	unsigned int tool_flags;	/* the tool's own */
	uint64_t tool_range[2];		/* the tool's own (e.g. an elf_syms_span) */
	uint64_t map_dev, map_ino;	/* as /proc/PID/maps shows them */
};

/* Frees a library's symbols once its probes are attached and nothing more
 * will be looked up in it: a file with nothing to probe (every process's
 * executable is read for a static runtime) stays in the set, so that it is
 * not read again while mapped, without its symbol tables (tens of MiB for
 * a large executable such as node). lib->syms is NULL after. */
void uprobe_lib_drop_syms(struct uprobe_lib *lib);

struct uprobe_set {
	struct uprobe_lib **libs;
	int n, cap;
	unsigned int gen;	/* current scan generation */
	int max_libs;		/* 0: unlimited */
	/* optional: called for each library as it leaves the set (pruned or
	 * the set freed), for what the tool keeps per library elsewhere (a
	 * BPF map keyed by its inode) */
	void (*release)(struct uprobe_lib *lib, void *ctx);
	void *release_ctx;
};

/* The entry for this inode, or NULL. */
struct uprobe_lib *uprobe_set_find(struct uprobe_set *set, uint64_t dev, uint64_t ino);
/*
 * The entry for the file at open_path (stat()ed for its inode); a new one
 * reads its symbols and sets *created so that the caller attaches its
 * probes. path is what users see. NULL with errno on failure (ENOSPC: the
 * set is full; ENAMETOOLONG: open_path does not fit in PATH_MAX).
 */
struct uprobe_lib *uprobe_set_add(struct uprobe_set *set, const char *open_path,
				  const char *path, int kind, bool *created);
/* Attaches prog (entry, or return probe) to symbol sym of lib, for all
 * processes (-1) or one. Returns 0, -ENOENT when the library lacks sym
 * (counted in lib->missing), or the attach error. */
int uprobe_lib_attach(struct uprobe_lib *lib, struct bpf_program *prog, const char *sym,
		      bool retprobe, pid_t pid);
/* The same at a file offset. */
int uprobe_lib_attach_off(struct uprobe_lib *lib, struct bpf_program *prog, uint64_t off,
			  bool retprobe, pid_t pid);
/* The same with a BPF cookie (bpf_get_attach_cookie(), kernel 5.15+). */
int uprobe_lib_attach_cookie(struct uprobe_lib *lib, struct bpf_program *prog, uint64_t off,
			     bool retprobe, pid_t pid, uint64_t cookie);
/*
 * uprobe_multi links (kernel 6.6+, feat_uprobe_multi): one link per file,
 * program and direction instead of a perf event per probe, so attach and,
 * above all, detach (one grace period per link) cost one syscall for them
 * all. uprobe_prog_multi(), before the object is loaded, makes prog a
 * uprobe_multi program where the kernel has the links (true) and leaves it
 * a plain uprobe otherwise (false: single probes, as before). The
 * uprobe_lib_attach* calls for such a program only note the probe;
 * uprobe_lib_flush() attaches the notes, one link per program and
 * direction, and returns how many probes failed (0: all attached; the
 * first error in *err). Plain programs attach at once as before.
 */
bool uprobe_prog_multi(struct bpf_program *prog);
/* The same for every uprobe and uretprobe program of obj (the loader hook
 * too: a single uprobe's perf event took seconds to close here, where a
 * uprobe_multi link of the same probe closes in microseconds). */
bool uprobe_obj_multi(struct bpf_object *obj);
int uprobe_lib_flush(struct uprobe_lib *lib, int *err);
/* How the probes of a file attach on this kernel, for --list-probes:
 * "uprobe_multi link" or "single uprobes" */
const char *uprobe_link_kind(void);

/* Starts a scan generation; entries found during it are marked seen. */
void uprobe_set_begin_scan(struct uprobe_set *set);
/* Detaches and removes the libraries no process mapped in the scan just
 * finished. Returns how many were removed. */
int uprobe_set_prune(struct uprobe_set *set);
/* Detaches everything (from several threads: each uprobe detach waits for
 * a grace period, and the waits overlap). */
void uprobe_set_free(struct uprobe_set *set);

/* The path of the dynamic loader mapped by pid (its r_brk function
 * _dl_debug_state runs after every library load and unload), or -ENOENT. */
int uprobe_ldso_path(pid_t pid, char *buf, size_t len);

/* ---- discovery ---- */

/* Kind of the dynamic loader's entry in a set (tools use small kinds). */
#define UPROBE_KIND_LDSO	0x10000

/*
 * Finds the files a tool probes in processes' mappings and attaches to
 * each new inode once. classify() says which mappings matter (a kind >= 0,
 * or -1); attach() puts the tool's probes on a library seen for the first
 * time. With dlopen_prog (bpf/uprobe_discover.bpf.h's uprobe_disc_dlopen),
 * the dynamic loader of every scanned process is probed too, so that
 * libraries loaded later are reported at once.
 */
struct uprobe_scanner {
	struct uprobe_set *set;
	/* called once per file and process, with its first mapping (which
	 * is usually not the executable one) */
	int (*classify)(const struct proc_map *m, void *ctx);
	void (*attach)(struct uprobe_lib *lib, void *ctx);	/* NULL: files found, not attached (--list-probes) */
	/* optional, per process scanned: scan_begin, then on_map for every
	 * mapping of a file in the set (each of its r--p, r-xp, ... lines;
	 * a file new to the set from its first executable one on), then
	 * scan_end (err: -errno when the maps could not be read). A file
	 * counts as mapped by a process where it is mapped executable. */
	void (*scan_begin)(pid_t pid, void *ctx);
	void (*on_map)(pid_t pid, const struct proc_map *m, struct uprobe_lib *lib, void *ctx);
	void (*scan_end)(pid_t pid, int err, void *ctx);
	void *ctx;
	struct bpf_program *dlopen_prog;
	/* the periodic full scan (uprobe_rescan_due): every rescan_ns (0:
	 * never), counted from the last uprobe_scan_all */
	uint64_t rescan_ns;
	uint64_t last_full_mono;
	/* counters */
	uint64_t scans;		/* processes scanned */
	uint64_t failed;	/* files that could not be read or attached */
	/* --hold (bpf/uprobe_discover.bpf.h): stopped processes continued
	 * after their scan, gone before it, the longest hold */
	uint64_t hold_released, hold_gone, hold_max_ns;
	bool closing;		/* uprobe_discover_close: continue, scan nothing */
};

/* Scans one process. 0, or -errno when its maps cannot be read. */
int uprobe_scan_pid(struct uprobe_scanner *s, pid_t pid);
/* A full scan of every process but this one (or of pids[0..npids) when
 * npids > 0), then drops libraries no longer mapped anywhere. Returns how
 * many libraries were dropped. */
int uprobe_scan_all(struct uprobe_scanner *s, const uint32_t *pids, int npids);
/* Whether the periodic full scan is due at now (CLOCK_MONOTONIC ns). */
bool uprobe_rescan_due(const struct uprobe_scanner *s, uint64_t now);
/* Adds a library by path (--lib): attached now, never pruned. NULL with
 * errno when it cannot be read. */
struct uprobe_lib *uprobe_scan_add_path(struct uprobe_scanner *s, const char *path, int kind);

/*
 * The libraries of the dynamic loader's cache (/etc/ld.so.cache, glibc's
 * "glibc-ld.so.cache1.1" format): cb(soname, path) for each entry, in cache
 * order; non-zero stops. Tools attach to the well-known ones (libcuda.so.1,
 * libnccl.so.2) at start, so that a process started later is traced from
 * its first call. Returns 0, or -errno (-ENOENT without a cache, -EINVAL
 * for a format we do not know). file: NULL for /etc/ld.so.cache.
 */
int uprobe_ldcache_foreach(const char *file, int (*cb)(const char *soname, const char *path,
						       void *ctx), void *ctx);

/* The ring buffer of bpf/uprobe_discover.bpf.h in obj, each event a scan
 * of its process (hand it to struct aiscope_loop's aux_rb). NULL with
 * errno when obj has no such map. */
struct ring_buffer *uprobe_discover_open(struct bpf_object *obj, struct uprobe_scanner *s);
/* After the hooks are detached (aiscope_run's teardown, uprobe_set_free
 * for the loader's): continues the processes stopped for --hold whose
 * events are still unread, then frees rb. */
void uprobe_discover_close(struct ring_buffer *rb, struct uprobe_scanner *s);

/* --hold: continues pid, stopped by BPF at held_ns (CLOCK_MONOTONIC, as
 * bpf_ktime_get_ns), counted in s (hold_released, hold_gone, hold_max_ns);
 * for a tool's own stops beside the discovery's (rdmasnoop's openers) */
void uprobe_hold_release(struct uprobe_scanner *s, pid_t pid, uint64_t held_ns);

/* --hold, the same in every tool that discovers (bpf/uprobe_discover.bpf.h
 * uprobe_hold; opt-in: a stopped process is visible to its parent) */
#define UPROBE_HOLD_OPTION(key)							\
	{ "hold", key, NULL, 0,							\
	  "Stop each new program and each library load of a process (within the "	\
	  "filters) until its probes are attached, then continue it", 1 }

/* --rescan: the scanner's rescan_ns (parse with opt_duration_or_never) */
#define UPROBE_RESCAN_OPTION(key)						\
	{ "rescan", key, "DUR", 0, "Rescan all processes this often (default 5s, 0: never)", 1 }

/* The exec hook of bpf/uprobe_discover.bpf.h, for a tool's hook table. */
#define UPROBE_DISCOVER_HOOK {							\
	.name = "exec", .optional = true, .preemptible = true, .cand = {	\
		{ PM_TP_BTF, "sched_process_exec", "uprobe_disc_exec_btf" },	\
		{ PM_RAW_TP, "sched_process_exec", "uprobe_disc_exec_raw" },	\
		{ PM_TRACEPOINT, "sched/sched_process_exec", "uprobe_disc_exec_tp" }, \
	} }

/* ---- names of addresses ---- */

struct elf_cache;

/* At most max files kept open, whose symbols hold at most max_bytes
 * (elf_syms_bytes; 0: no byte cap): past either, the least recently used
 * are dropped (read again when asked for). */
struct elf_cache *elf_cache_new(int max, size_t max_bytes);
size_t elf_cache_bytes(const struct elf_cache *c);
int elf_cache_count(const struct elf_cache *c);
void elf_cache_free(struct elf_cache *c);
/* The symbols of the file with this inode, opened through path on a miss;
 * NULL if it cannot be read. */
const struct elf_syms *elf_cache_get(struct elf_cache *c, uint64_t dev, uint64_t ino,
				     const char *path);

/* Where addr of process pid is: the mapping's file inode, file offset and
 * base name. Returns 0, -ENOENT (no file mapping there), -ESRCH (the
 * process is gone: no maps file, or no file mapping left) or -errno. */
struct addr_loc {
	uint64_t dev, ino, off;
	char module[64];
	char open_path[64];
};
int uprobe_addr_locate(pid_t pid, uint64_t addr, struct addr_loc *loc);

/* The function at addr of pid: its symbol name (raw, mangled) when the
 * file's symbols say, else "module+0xOFF" (stable across runs of a build).
 * Returns 1 for a symbol name, 0 for the fallback, -ENOENT when addr is in
 * no file mapping, -ESRCH when the process is gone (no maps to read: reaped,
 * or a zombie), other -errno when its maps cannot be read. */
int uprobe_addr_name(struct elf_cache *c, pid_t pid, uint64_t addr, char *buf, size_t len);

#endif
