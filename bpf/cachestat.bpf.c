// SPDX-License-Identifier: GPL-2.0
/*
 * cachestat: page-cache accesses, insertions (misses) and dirtied pages,
 * counted in the kernel per host, process, cgroup or file.
 *
 * Two ways to see accesses, chosen by user space from the attach plan:
 *  - function hooks (fentry or kprobe): folio_mark_accessed() and its
 *    pre-folio name mark_page_accessed(), as bcc's cachestat;
 *  - tracepoints: mm_filemap_get_pages (the page range of each read(2)),
 *    mm_filemap_map_pages (pages mapped around an mmap fault) and
 *    mm_filemap_fault.
 * Insertions (filemap_add_folio or mm_filemap_add_to_page_cache) and
 * dirtied pages (__folio_mark_dirty or writeback_dirty_folio) mean the same
 * in both modes. Everything is counted in pages: a large folio counts as
 * the pages it holds.
 */
#include "aiscope.bpf.h"
#include "cachestat.h"

const volatile __u32 key_by = CACHESTAT_BY_HOST;
const volatile __u32 page_shift = 12;

__u32 epoch;				/* written by user space each interval */

enum { C_ACCESS, C_ADD, C_DIRTY, C_BUFDIRTY, C_WADD };

/* Host totals, cumulative: user space reads the difference each interval,
 * so nothing is lost between a read and a reset. */
AISCOPE_MAP(totals, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct cachestat_counts, 1);

/* Rows of two intervals (--by), drained and deleted every interval.
 * Preallocated: a burst of new keys must not fail an allocation. */
AISCOPE_MAP(rows, BPF_MAP_TYPE_HASH, struct cachestat_key, struct cachestat_row,
	    1);				/* sized by user space */

/* Tracepoint mode: the read(2)s in progress on each CPU. filemap_read()
 * calls filemap_get_pages() once per batch of folios, and every call
 * reports the range still to read: only the first one counts. Per-CPU
 * slots, not a map keyed by thread: they cost no hash update per read.
 * A few of them, one per thread: a read preempted between two batches by
 * another thread's read on the same CPU keeps its own. A read rarely moves
 * to another CPU between two batches (when it does, or when more threads'
 * reads than slots came between, the rest of it is counted again). */
#define READ_SLOTS	4

struct read_range {
	__u64 file;
	__u64 index;
	__u64 end;
	__u32 tid;
	__u32 pad;
};

struct read_slots {
	struct read_range r[READ_SLOTS];
	__u32 next;		/* the slot a new thread takes */
	__u32 pad;
};

AISCOPE_MAP(reads, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct read_slots, 1);

/* The folio each thread inserted last. A write into a page the cache does
 * not hold inserts a folio and dirties it right away, in the same thread:
 * that insertion is not a read miss. Tells them apart per event, where
 * bcc's arithmetic (insertions minus all dirtied pages) would let one
 * process's writes cancel another's misses. */
AISCOPE_MAP(last_add, BPF_MAP_TYPE_LRU_HASH, __u32, __u64, 8192);

/* --llc samples, two intervals, drained like rows */
AISCOPE_MAP(llc, BPF_MAP_TYPE_HASH, struct cachestat_llc_key, struct cachestat_llc,
	    1);				/* sized by user space with --llc */

/* ---- folios ---- */

/* Local flavors of kernel types, so that one object (and either
 * generated vmlinux.h: x86 from 6.18, arm64 from 6.1) fits both layouts.
 * 6.1-era folios keep their order in a field of their own and their flags
 * in a plain unsigned long; since 6.17 the flags are a memdesc_flags_t,
 * and 64-bit folios have _nr_pages. */
typedef struct {
	unsigned long f;
} memdesc_flags_t___x;

struct folio___md {
	memdesc_flags_t___x flags;
} __attribute__((preserve_access_index));

struct folio___nr {
	unsigned int _nr_pages;
} __attribute__((preserve_access_index));

struct folio___o {
	unsigned long flags;
	unsigned char _folio_order;
	unsigned int _folio_nr_pages;
} __attribute__((preserve_access_index));

/* the access tracepoints' records (not in 6.1, so not in every vmlinux.h) */
struct trace_event_raw_mm_filemap_op_page_cache_range___x {
	struct trace_entry ent;
	unsigned long i_ino;
	dev_t s_dev;
	unsigned long index;
	unsigned long last_index;
} __attribute__((preserve_access_index));

struct trace_event_raw_mm_filemap_fault___x {
	struct trace_entry ent;
	unsigned long i_ino;
	dev_t s_dev;
	unsigned long index;
} __attribute__((preserve_access_index));

/* Pages in a folio: 1 unless it is a large folio (PG_head). */
static __always_inline __u64 folio_pages(struct folio *folio)
{
	struct folio___o *old = (void *)folio;
	struct folio___md *md = (void *)folio;
	struct folio___nr *fnr = (void *)folio;
	unsigned long flags = 0, f1 = 0;
	unsigned int nr = 0;
	unsigned char order = 0;

	/* CO-RE does not relocate a struct field onto an integer one: one read
	 * per layout, the other one is dead code */
	if (bpf_core_type_exists(memdesc_flags_t___x))
		bpf_core_read(&flags, sizeof(flags), &md->flags);
	else
		bpf_core_read(&flags, sizeof(flags), &old->flags);
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 1;
	if (bpf_core_field_exists(fnr->_nr_pages)) {
		bpf_core_read(&nr, sizeof(nr), &fnr->_nr_pages);
		return nr ? nr : 1;
	}
	if (bpf_core_field_exists(old->_folio_nr_pages)) {
		bpf_core_read(&nr, sizeof(nr), &old->_folio_nr_pages);
		return nr ? nr : 1;
	}
	if (bpf_core_field_exists(old->_folio_order)) {
		bpf_core_read(&order, sizeof(order), &old->_folio_order);
		return 1ULL << (order & 31);
	}
	bpf_core_read(&f1, sizeof(f1), &folio->_flags_1);
	return 1ULL << (f1 & 31);
}

/* ---- rows ---- */

/* The file a mapping caches: inode number and the kernel's dev_t. */
static __always_inline void mapping_file(struct address_space *mapping, __u64 *ino, __u32 *dev)
{
	struct inode *host = BPF_CORE_READ(mapping, host);

	*ino = BPF_CORE_READ(host, i_ino);
	*dev = BPF_CORE_READ(host, i_sb, s_dev);
}

/* dentry::d_alias was in the union d_u until 7.x made that union
 * anonymous: the flavor of each layout, the kernel's BTF picks one. */
struct dentry___du {
	union {
		struct hlist_node d_alias;
	} d_u;
} __attribute__((preserve_access_index));

struct dentry___anon {
	struct hlist_node d_alias;
} __attribute__((preserve_access_index));

/* The name of one of the inode's dentries (the file's last path component). */
static __always_inline void inode_name(struct inode *inode, char *buf)
{
	struct hlist_node *first = BPF_CORE_READ(inode, i_dentry.first);
	const unsigned char *name;
	struct dentry *d;
	__u32 off;

	if (!first)
		return;
	if (bpf_core_field_exists(struct dentry___du, d_u))
		off = bpf_core_field_offset(struct dentry___du, d_u.d_alias);
	else
		off = bpf_core_field_offset(struct dentry___anon, d_alias);
	d = (void *)first - off;
	name = BPF_CORE_READ(d, d_name.name);
	if (name)
		bpf_probe_read_kernel_str(buf, CACHESTAT_NAME_LEN, name);
}

static __always_inline void init_row(struct cachestat_row *r, struct task_struct *t,
				     struct address_space *mapping)
{
	struct inode *host;

	__builtin_memset(r, 0, sizeof(*r));
	aiscope_task_ident(t, &r->ident);
	/* a process row is named after its leader, not the thread seen first */
	if (key_by == CACHESTAT_BY_PID)
		BPF_CORE_READ_STR_INTO(&r->ident.comm, t, group_leader, comm);
	if (key_by != CACHESTAT_BY_FILE || !mapping)
		return;
	host = BPF_CORE_READ(mapping, host);
	r->size = BPF_CORE_READ(host, i_size);
	inode_name(host, r->name);
}

static __always_inline struct cachestat_row *row_of(struct task_struct *t,
						    struct address_space *mapping,
						    __u64 ino, __u32 dev)
{
	struct cachestat_key key = { .epoch = *(volatile __u32 *)&epoch };
	struct aiscope_ident id;
	struct cachestat_row *r, init;

	switch (key_by) {
	case CACHESTAT_BY_PID:
		key.id = bpf_get_current_pid_tgid() >> 32;
		break;
	case CACHESTAT_BY_CGROUP:
		aiscope_task_cgroup_id(t, &id);
		key.id = id.cgroup_id;
		key.cgroup_v1 = id.cgroup_v1;
		break;
	case CACHESTAT_BY_FILE:
		if (mapping)
			mapping_file(mapping, &ino, &dev);
		if (!ino && !dev)
			return NULL;
		key.id = ino;
		key.dev = dev;
		break;
	default:
		return NULL;
	}
	r = bpf_map_lookup_elem(&rows, &key);
	if (r)
		return r;
	init_row(&init, t, mapping);
	return aiscope_lookup_or_init(&rows, &key, &init);
}

static __always_inline void add_counts(struct cachestat_counts *c, int what, __u64 n)
{
	__u64 *p;

	switch (what) {
	case C_ACCESS: p = &c->accesses; break;
	case C_ADD: p = &c->added; break;
	case C_DIRTY: p = &c->dirtied; break;
	case C_WADD: p = &c->write_added; break;
	default: p = &c->buf_dirtied; break;
	}
	__sync_fetch_and_add(p, n);
}

/* Counts n pages for the current task, which has passed the filters.
 * mapping: the file's page cache, or NULL where only ino/dev are known. */
static __always_inline void count(struct task_struct *t, int what, __u64 n,
				  struct address_space *mapping, __u64 ino, __u32 dev)
{
	struct cachestat_counts *c;
	struct cachestat_row *r;
	__u32 zero = 0;

	if (!n)
		return;
	/* atomic although per-CPU: see aiscope_count_lost() */
	c = bpf_map_lookup_elem(&totals, &zero);
	if (c)
		add_counts(c, what, n);
	if (key_by == CACHESTAT_BY_HOST)
		return;
	r = row_of(t, mapping, ino, dev);
	if (r)
		add_counts(&r->c, what, n);
}

static __always_inline struct task_struct *current_passing(void)
{
	struct task_struct *t = (void *)bpf_get_current_task();

	return aiscope_task_pass(t) ? t : NULL;
}

/* A folio's mapping as read from the folio: anonymous and movable folios
 * (folio_mark_accessed() sees them too) have no file, the low bits of
 * their mapping say so. Only for values read with CO-RE: a BTF pointer
 * may not be masked. */
static __always_inline struct address_space *file_mapping(struct address_space *m)
{
	return ((unsigned long)m & 3) ? NULL : m;
}

/* An insertion is remembered by an id (the folio or page address, or the
 * inode and index where only those are known); a dirtied page with the id
 * of its thread's last insertion was inserted to be written. */
static __always_inline void note_added(__u64 id)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	bpf_map_update_elem(&last_add, &tid, &id, BPF_ANY);
}

static __always_inline bool added_to_write(__u64 id)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *last = bpf_map_lookup_elem(&last_add, &tid);

	if (!last || *last != id)
		return false;
	bpf_map_delete_elem(&last_add, &tid);
	return true;
}

static __always_inline void count_page(struct task_struct *t, int what, __u64 n, __u64 id,
				       struct address_space *mapping, __u64 ino, __u32 dev)
{
	count(t, what, n, mapping, ino, dev);
	if (what == C_ADD)
		note_added(id);
	else if (what == C_DIRTY && added_to_write(id))
		count(t, C_WADD, n, mapping, ino, dev);
}

/* A folio's or a page's hook: p's own mapping unless the hook passed one;
 * a macro for BPF_CORE_READ, which wants p's type */
#define ON_CACHE_PAGE(what, p, npages, mapping) ({				\
	struct address_space *m_ = (mapping);					\
	struct task_struct *t_;							\
										\
	if ((p) && (t_ = current_passing())) {					\
		if (!m_)							\
			m_ = file_mapping(BPF_CORE_READ(p, mapping));		\
		count_page(t_, what, npages, (__u64)(p), m_, 0, 0);		\
	}									\
	0;									\
})

static __always_inline int on_folio(int what, struct folio *folio, struct address_space *mapping)
{
	return ON_CACHE_PAGE(what, folio, folio_pages(folio), mapping);
}

/* pre-folio kernels: one page */
static __always_inline int on_page(int what, struct page *page, struct address_space *mapping)
{
	return ON_CACHE_PAGE(what, page, 1, mapping);
}

static __always_inline int on_buffer_dirty(struct buffer_head *bh)
{
	struct task_struct *t;

	if (!bh || !(t = current_passing()))
		return 0;
	count(t, C_BUFDIRTY, 1, BPF_CORE_READ(bh, b_page, mapping), 0, 0);
	return 0;
}

/* Tracepoint accesses: pages index..end of a file. file tells one file
 * from another for the read-in-progress check. */
static __always_inline __u64 new_pages(__u64 file, __u64 index, __u64 end)
{
	struct read_slots *rs;
	struct read_range *r = NULL;
	__u32 zero = 0, tid;

	if (end < index)
		return 0;
	rs = bpf_map_lookup_elem(&reads, &zero);
	if (!rs)
		return end - index + 1;
	tid = (__u32)bpf_get_current_pid_tgid();
#pragma unroll
	for (int i = 0; i < READ_SLOTS; i++)
		if (rs->r[i].tid == tid)
			r = &rs->r[i];
	/* checked before the one-page case: a read's last batch can be its
	 * last page alone (a 32-page read of order-0 folios is a batch of
	 * 31 and one of 1), and that page was counted with the range */
	if (r && r->file == file && r->end == end && index > r->index) {
		/* the next batch of the read whose range was counted */
		r->index = index;
		return 0;
	}
	/* a read of one page is one batch: nothing to remember */
	if (end == index)
		return 1;
	if (!r)
		r = &rs->r[rs->next++ & (READ_SLOTS - 1)];
	r->tid = tid;
	r->file = file;
	r->index = index;
	r->end = end;
	return end - index + 1;
}

/* A read asks for its whole buffer, the fault-around window may pass the
 * end of the file: the pages past the end are not read. n pages from
 * index: how many are inside a file of size bytes. */
static __always_inline __u64 within_file(__u64 n, __u64 index, __s64 size)
{
	__u64 last;

	if (size <= 0)
		return 0;
	last = (size - 1) >> page_shift;
	if (index > last)
		return 0;
	return index + n - 1 > last ? last - index + 1 : n;
}

/* size: the file's i_size, read by the caller (plain loads under tp_btf,
 * CO-RE reads under raw_tp); only needed for ranges of several pages */
static __always_inline int on_range(struct address_space *mapping, __u64 index, __u64 end,
				    bool read, __s64 size)
{
	struct task_struct *t;
	__u64 n;

	if (!mapping || !(t = current_passing()))
		return 0;
	n = read ? new_pages((__u64)mapping, index, end) : (end >= index ? end - index + 1 : 0);
	if (n > 1)
		n = within_file(n, index, size);
	count(t, C_ACCESS, n, mapping, 0, 0);
	return 0;
}

static __always_inline __s64 size_btf(struct address_space *mapping, __u64 index, __u64 end)
{
	if (!mapping || end <= index)
		return 0;
	return mapping->host->i_size;
}

static __always_inline __s64 size_raw(struct address_space *mapping, __u64 index, __u64 end)
{
	if (!mapping || end <= index)
		return 0;
	return BPF_CORE_READ(mapping, host, i_size);
}

/* Classic tracepoints: only the inode number and device */
static __always_inline int on_range_tp(__u64 ino, __u32 dev, __u64 index, __u64 end, bool read)
{
	struct task_struct *t = current_passing();
	__u64 n;

	if (!t)
		return 0;
	n = read ? new_pages(ino ^ ((__u64)dev << 40), index, end)
		 : (end >= index ? end - index + 1 : 0);
	count(t, C_ACCESS, n, NULL, ino, dev);
	return 0;
}

static __always_inline int on_ino(int what, __u64 n, __u64 ino, __u32 dev, __u64 index)
{
	struct task_struct *t = current_passing();

	if (t)
		count_page(t, what, n, (ino << 24) ^ index, NULL, ino, dev);
	return 0;
}

/* ---- function hooks ---- */

AISCOPE_FENTRY_KPROBE(folio_mark_accessed, accessed, struct folio *folio)
{
	return on_folio(C_ACCESS, folio, NULL);
}

AISCOPE_FENTRY_KPROBE(mark_page_accessed, page_accessed, struct page *page)
{
	return on_page(C_ACCESS, page, NULL);
}

AISCOPE_FENTRY_KPROBE(filemap_add_folio, add, struct address_space *mapping, struct folio *folio)
{
	return on_folio(C_ADD, folio, mapping);
}

AISCOPE_FENTRY_KPROBE(add_to_page_cache_lru, add_page, struct page *page,
		      struct address_space *mapping)
{
	return on_page(C_ADD, page, mapping);
}

AISCOPE_FENTRY_KPROBE(__folio_mark_dirty, dirty, struct folio *folio,
		      struct address_space *mapping)
{
	return on_folio(C_DIRTY, folio, mapping);
}

AISCOPE_FENTRY_KPROBE(account_page_dirtied, dirty_page, struct page *page,
		      struct address_space *mapping)
{
	return on_page(C_DIRTY, page, mapping);
}

AISCOPE_FENTRY_KPROBE(mark_buffer_dirty, bufdirty, struct buffer_head *bh)
{
	return on_buffer_dirty(bh);
}

/* ---- tracepoints with typed (tp_btf) or raw (raw_tp) arguments ---- */

/* the tracepoint's argument is a struct folio since 5.16, a struct page
 * before (5.10): the kernel's BTF says which */
static __always_inline int on_added(void *folio_or_page)
{
	if (bpf_core_type_exists(struct folio))
		return on_folio(C_ADD, folio_or_page, NULL);
	return on_page(C_ADD, folio_or_page, NULL);
}

AISCOPE_BTF_RAW(mm_filemap_add_to_page_cache, add, void *folio_or_page)
{
	return on_added(folio_or_page);
}

AISCOPE_BTF_RAW(writeback_dirty_folio, dirty, struct folio *folio, struct address_space *mapping)
{
	return on_folio(C_DIRTY, folio, mapping);
}

/* before 5.16 */
AISCOPE_BTF_RAW(writeback_dirty_page, dirty_page, struct page *page, struct address_space *mapping)
{
	return on_page(C_DIRTY, page, mapping);
}

/* A range tracepoint's tp_btf and raw_tp programs: the same but for how
 * they read the file's size (a plain load, CO-RE) */
#define RANGE_PROGS(tp, prog, read)						\
SEC("tp_btf/" #tp)								\
int BPF_PROG(prog##_btf, struct address_space *mapping, unsigned long first,	\
	     unsigned long last)						\
{										\
	return on_range(mapping, first, last, read, size_btf(mapping, first, last));	\
}										\
SEC("raw_tp/" #tp)								\
int BPF_PROG(prog##_raw, struct address_space *mapping, unsigned long first,	\
	     unsigned long last)						\
{										\
	return on_range(mapping, first, last, read, size_raw(mapping, first, last));	\
}

RANGE_PROGS(mm_filemap_get_pages, read, true)
RANGE_PROGS(mm_filemap_map_pages, map, false)

AISCOPE_BTF_RAW(mm_filemap_fault, fault, struct address_space *mapping, unsigned long index)
{
	return on_range(mapping, index, index, false, 0);
}

/* ---- classic tracepoints: inode numbers, no pointers ---- */

SEC("tracepoint/filemap/mm_filemap_add_to_page_cache")
int add_tp(struct trace_event_raw_mm_filemap_op_page_cache *ctx)
{
	unsigned char order = 0;

	if (bpf_core_field_exists(ctx->order))
		order = BPF_CORE_READ(ctx, order);
	return on_ino(C_ADD, 1ULL << (order & 31), ctx->i_ino, ctx->s_dev, ctx->index);
}

/* The writeback records name the inode but not its device, nor the size of
 * the folio, and large folios (7.x file systems write through them) hold
 * many pages. The size is the task's nr_dirtied after the event less
 * before it: the kernel adds the folio's pages to it just after this
 * tracepoint (folio_account_dirtied), and every dirtying of a file folio
 * then marks the inode dirty (writeback_mark_inode_dirty, in the same
 * task), where the pending event is counted. Without that hook
 * (dirty_sized 0), or where nothing was added (a mapping without
 * writeback accounting), an event counts one page, of device 0. */
__u32 dirty_sized;			/* written by user space after attach */

struct dirty_pending {
	__u64 ino;
	__u64 index;
	__u64 nr_dirtied;
};

AISCOPE_MAP(dirty_pend, BPF_MAP_TYPE_LRU_HASH, __u32, struct dirty_pending, 1024);

static __always_inline void dirty_flush(struct task_struct *t, struct dirty_pending *p)
{
	__u64 now = (__u32)BPF_CORE_READ(t, nr_dirtied), n = 1;

	/* balance_dirty_pages() zeroes nr_dirtied, but only after the
	 * write that dirtied the folio returned: never in between */
	if (now > p->nr_dirtied)
		n = now - p->nr_dirtied;
	count_page(t, C_DIRTY, n, (p->ino << 24) ^ p->index, NULL, p->ino, 0);
}

SEC("tracepoint/writeback/writeback_dirty_folio")
int dirty_tp(struct trace_event_raw_writeback_folio_template *ctx)
{
	struct task_struct *t = current_passing();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct dirty_pending *p, np;

	if (!t)
		return 0;
	if (!*(volatile __u32 *)&dirty_sized)
		return on_ino(C_DIRTY, 1, ctx->ino, 0, ctx->index);
	/* one whose inode was not marked dirty: counted with what it added */
	p = bpf_map_lookup_elem(&dirty_pend, &tid);
	if (p)
		dirty_flush(t, p);
	np.ino = ctx->ino;
	np.index = ctx->index;
	np.nr_dirtied = (__u32)BPF_CORE_READ(t, nr_dirtied);
	if (bpf_map_update_elem(&dirty_pend, &tid, &np, BPF_ANY)) {
		aiscope_count_lost(AISCOPE_LOST_MAP);
		count_page(t, C_DIRTY, 1, (np.ino << 24) ^ np.index, NULL, np.ino, 0);
	}
	return 0;
}

SEC("tracepoint/writeback/writeback_mark_inode_dirty")
int mark_inode_tp(struct trace_event_raw_writeback_dirty_inode_template *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct dirty_pending *p = bpf_map_lookup_elem(&dirty_pend, &tid);
	struct task_struct *t;

	if (!p || p->ino != ctx->ino)
		return 0;
	t = (void *)bpf_get_current_task();
	dirty_flush(t, p);
	bpf_map_delete_elem(&dirty_pend, &tid);
	return 0;
}

/* the same record, before 5.16; a fixed layout: the type is gone from
 * today's BTF */
struct writeback_page_record {
	__u64 common;
	char name[32];
	__u64 ino;
	__u64 index;
};

SEC("tracepoint/writeback/writeback_dirty_page")
int dirty_page_tp(struct writeback_page_record *ctx)
{
	return on_ino(C_DIRTY, 1, ctx->ino, 0, ctx->index);
}

SEC("tracepoint/filemap/mm_filemap_get_pages")
int read_tp(struct trace_event_raw_mm_filemap_op_page_cache_range___x *ctx)
{
	return on_range_tp(ctx->i_ino, ctx->s_dev, ctx->index, ctx->last_index, true);
}

SEC("tracepoint/filemap/mm_filemap_map_pages")
int map_tp(struct trace_event_raw_mm_filemap_op_page_cache_range___x *ctx)
{
	return on_range_tp(ctx->i_ino, ctx->s_dev, ctx->index, ctx->last_index, false);
}

SEC("tracepoint/filemap/mm_filemap_fault")
int fault_tp(struct trace_event_raw_mm_filemap_fault___x *ctx)
{
	return on_range_tp(ctx->i_ino, ctx->s_dev, ctx->index, ctx->index, false);
}

/* ---- --llc: hardware cache events sampled every sample_period ---- */

static __always_inline int llc_add(__u64 period, bool miss)
{
	struct task_struct *t = current_passing();
	struct cachestat_llc_key key;
	struct cachestat_llc *v, init;

	if (!t)
		return 0;
	key.pid = bpf_get_current_pid_tgid() >> 32;
	key.epoch = *(volatile __u32 *)&epoch;
	v = bpf_map_lookup_elem(&llc, &key);
	if (!v) {
		__builtin_memset(&init, 0, sizeof(init));
		aiscope_task_ident(t, &init.ident);
		BPF_CORE_READ_STR_INTO(&init.ident.comm, t, group_leader, comm);
		v = aiscope_lookup_or_init(&llc, &key, &init);
		if (!v)
			return 0;
	}
	if (miss)
		__sync_fetch_and_add(&v->misses, period);
	else
		__sync_fetch_and_add(&v->refs, period);
	return 0;
}

SEC("perf_event")
int llc_ref(struct bpf_perf_event_data *ctx)
{
	return llc_add(ctx->sample_period, false);
}

SEC("perf_event")
int llc_miss(struct bpf_perf_event_data *ctx)
{
	return llc_add(ctx->sample_period, true);
}

char LICENSE[] SEC("license") = "GPL";
