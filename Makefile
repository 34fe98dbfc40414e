# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# aiscope: small libbpf/CO-RE tools for AI hosts.
#
#   make                 every tool into build/
#   make ARCH=arm64      cross build into build/arm64/
#   make static          statically linked tools into build/static/
#   make SANITIZE=1      ASan+UBSan build into build/sanitize/ (make test SANITIZE=1)
#   make test | demo | deps | install | clean
#   make deb             the Debian package (aiscope_VERSION_ARCH.deb) in build/deb/
#   make release         static tarballs per arch in build/release/

# every tools/<tool>.c is a tool, and so is every folder tools/<tool>/ of
# .c files (one binary of them all, its objects in $(O)/tools/<tool>/);
# tests/completions.bats checks their docs. A tool with bpf/<tool>.bpf.c
# (all of them today) is built with its skeleton, one without it links
# without one
DIR_TOOLS := $(patsubst tools/%/,%,$(sort $(dir $(wildcard tools/*/*.c))))
TOOLS := $(sort $(basename $(notdir $(wildcard tools/*.c))) $(DIR_TOOLS))
BPF_TOOLS := $(filter $(TOOLS),$(basename $(basename $(notdir $(wildcard bpf/*.bpf.c)))))
PLAIN_TOOLS := $(filter-out $(BPF_TOOLS),$(TOOLS))
VERSION := 0.1.0

HOST_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
ARCH ?= $(HOST_ARCH)
ifneq ($(filter-out x86 arm64,$(ARCH)),)
$(error ARCH=$(ARCH) is not supported: use x86 or arm64)
endif
ifneq ($(ARCH),$(HOST_ARCH))
ifeq ($(ARCH),arm64)
CROSS_COMPILE ?= aarch64-linux-gnu-
else
CROSS_COMPILE ?= x86_64-linux-gnu-
endif
endif

ifeq ($(STATIC),1)
O ?= build/$(if $(CROSS_COMPILE),$(ARCH)-,)static
else ifeq ($(SANITIZE),1)
O ?= build/sanitize
else
O ?= build$(if $(CROSS_COMPILE),/$(ARCH),)
endif

CC := $(CROSS_COMPILE)gcc
AR := $(CROSS_COMPILE)ar
CLANG ?= clang
LLVM_STRIP ?= llvm-strip
BPFTOOL ?= bpftool

PREFIX ?= /usr/local
DESTDIR ?=
# Only the front command goes on $PATH: the tools' own names (cachestat...)
# are those of Debian's libbpf-tools and bpfcc-tools, so the tools live
# where only `aiscope TOOL` finds them (cmd/aiscope.c: ../libexec/aiscope
# from its own directory)
BINDIR := $(PREFIX)/sbin
LIBEXECDIR := $(PREFIX)/libexec/aiscope
MANDIR := $(PREFIX)/share/man
BASHCOMPDIR := $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR := $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR := $(PREFIX)/share/fish/vendor_completions.d
# the tools' own bash and zsh completions, which aiscope's load (not under
# the tools' names on the shells' paths: completions/bash/aiscope), and
# bash's helpers, which they load
TOOLCOMPDIR := $(PREFIX)/share/aiscope/completions
# deploy/systemd/: units (their ExecStart names $(BINDIR)) and tmpfiles.d
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
UNITS := $(notdir $(wildcard deploy/systemd/*.service))

# libbpf: the version scripts/libbpf.sh pins, built from its source for
# $(ARCH) into build/libbpf/$(ARCH)/ (shared by the dynamic and static
# builds); its headers serve the BPF programs and user space, and every
# tool links its libbpf.a (the system's libbpf is not used)
LIBBPF_OUT := build/libbpf/$(ARCH)
LIBBPF_A := $(LIBBPF_OUT)/lib/libbpf.a

# clang -target bpf does not see the host's multiarch include dirs (asm/).
CLANG_BPF_SYS_INCLUDES := $(shell $(CLANG) -v -E - </dev/null 2>&1 \
	| sed -n '/<...> search starts here:/,/End of search list./{ s| \(/.*\)|-idirafter \1|p }')

BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) \
	-Iinclude -Ibpf -Ibpf/vmlinux/$(ARCH) -I$(LIBBPF_OUT)/include $(CLANG_BPF_SYS_INCLUDES)
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(CPPFLAGS) $(CFLAGS) -Wall -Wextra -Wno-unused-parameter \
	-Wmissing-field-initializers -Werror -MMD -MP \
	-I$(O) -Ilib -Iinclude -I$(LIBBPF_OUT)/include -DAISCOPE_VERSION='"$(VERSION)"'
# libbpf.a comes first on each link line, as a prerequisite ($^)
LDLIBS := -lelf -lz -lpthread
# extra libraries of one binary: LDLIBS_<name> (lib/demangle.c needs libstdc++)
LDLIBS_gpulaunch := -lstdc++
LDLIBS_test_demangle := -lstdc++
LDLIBS_nclstat := -lm
ifeq ($(STATIC),1)
LDFLAGS += -static
ALL_CFLAGS += -DAISCOPE_STATIC
endif
# ASan+UBSan: the library, the tools and the unit tests, into build/sanitize
# (make test SANITIZE=1 runs them, every report fatal: tests/run.sh). libasan
# and libubsan are linked dynamically, so STATIC=1 is refused; libbpf.a is
# linked in as in every build, not instrumented (its reads of our buffers
# still are). Test helpers stay static and the test doubles (shared
# libraries loaded into unsanitized programs) plain: SAN_CFLAGS is filtered
# out of their rules.
SAN_CFLAGS :=
ifeq ($(SANITIZE),1)
ifeq ($(STATIC),1)
$(error SANITIZE=1 cannot be combined with STATIC=1: libasan is linked dynamically)
endif
SAN_CFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ALL_CFLAGS += $(SAN_CFLAGS)
endif
PLAIN_CFLAGS = $(filter-out $(SAN_CFLAGS),$(ALL_CFLAGS))

LIB_SRCS := $(wildcard lib/*.c)
LIB_OBJS := $(patsubst lib/%.c,$(O)/lib/%.o,$(LIB_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(O)/tests/%,$(UNIT_SRCS))
HELPER_SRCS := $(wildcard tests/helpers/*.c)
HELPER_BINS := $(patsubst tests/helpers/%.c,$(O)/tests/helpers/%,$(HELPER_SRCS))
# BPF objects of unit tests (tests/bpf/<name>.bpf.c -> $(O)/tests/<name>.skel.h)
# and libraries that unit tests load
TEST_LIBS := $(O)/tests/libuargs.so
# programs that call the real CUDA libraries (dynamic: they dlopen them)
CUDA_SRCS := $(wildcard tests/cuda/*.c)
CUDA_BINS := $(patsubst tests/cuda/%.c,$(O)/tests/cuda/%,$(CUDA_SRCS))
# real <<<>>> launches, when nvcc is there (native builds only)
NVCC ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard /usr/local/cuda/bin/nvcc))
ifneq ($(NVCC),)
ifeq ($(CROSS_COMPILE),)
CUDA_BINS += $(O)/tests/cuda/kern_shared $(O)/tests/cuda/kern_static $(O)/tests/cuda/kern_stripped
CUDA_BINS += $(O)/tests/cuda/mem_shared $(O)/tests/cuda/mem_ptds $(O)/tests/cuda/mem_static
CUDA_BINS += $(O)/tests/cuda/graph_shared
endif
endif
# test doubles of the CUDA runtime and driver (exact C ABI; calls succeed)
CUDA_BINS += $(O)/tests/cuda/double/libcudart.so.12 $(O)/tests/cuda/double/libcuda.so.1
CUDA_BINS += $(O)/tests/cuda/double/13/libcudart.so.13

# nclstat's fixtures: a test double of libnccl.so.2 with nccl.h's ABI and
# ncclrank, which loads libnccl.so.2 dynamically (the double, or the real
# library through LD_LIBRARY_PATH). Where the real nccl.h is found (native
# builds), the double is compiled against it and nccl_abi_check.c asserts
# the transcription in tests/fixtures/nccl_abi.h and include/nclstat.h.
NCCL_DIR := $(O)/tests/nccl
NCCL_INC ?= $(if $(CROSS_COMPILE),,$(patsubst %/nccl.h,%,$(firstword \
	$(wildcard /usr/local/cuda/include/nccl.h /usr/local/cuda-*/include/nccl.h))))
NCCL_BINS := $(NCCL_DIR)/libnccl.so.2 $(NCCL_DIR)/ncclrank \
	$(O)/tests/nccl-opaque/libnccl.so.2 \
	$(if $(NCCL_INC),$(NCCL_DIR)/nccl_abi_check.o)

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.PHONY: all tools test-bins static clean test demo deps install uninstall help fixtures deb release
.DELETE_ON_ERROR:
.SECONDARY:

all: tools test-bins

tools: $(addprefix $(O)/,$(TOOLS)) $(O)/aiscope completions

test-bins: $(UNIT_BINS) $(HELPER_BINS) $(TEST_LIBS) $(CUDA_BINS) \
	$(if $(filter 1,$(STATIC)),,$(NCCL_BINS))

$(O) $(O)/lib $(O)/bpf $(O)/tests $(O)/tests/bpf $(O)/tests/helpers $(O)/tests/cuda $(NCCL_DIR):
	$(Q)mkdir -p $@

$(O)/bpf/%.bpf.o: bpf/%.bpf.c | $(O)/bpf $(LIBBPF_A)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(O)/%.skel.h: $(O)/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

$(LIBBPF_A): scripts/libbpf.sh
	$(call msg,LIBBPF,$@)
	$(Q)scripts/libbpf.sh build $(ARCH) $(CURDIR)/$(LIBBPF_OUT) $(CC) $(AR)

$(O)/lib/%.o: lib/%.c | $(O)/lib $(LIBBPF_A)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(O)/libaiscope.a: $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && $(AR) rcs $@ $^

FILE_TOOLS := $(filter-out $(DIR_TOOLS),$(TOOLS))
$(addprefix $(O)/,$(addsuffix .o,$(filter $(BPF_TOOLS),$(FILE_TOOLS)))): $(O)/%.o: tools/%.c $(O)/%.skel.h | $(O) $(LIBBPF_A)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(addprefix $(O)/,$(addsuffix .o,$(filter $(PLAIN_TOOLS),$(FILE_TOOLS)))): $(O)/%.o: tools/%.c | $(O) $(LIBBPF_A)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(addprefix $(O)/,$(FILE_TOOLS)): $(O)/%: $(O)/%.o $(O)/libaiscope.a $(LIBBPF_A)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ $(LDLIBS) $(LDLIBS_$(notdir $@)) -o $@

# the tools' names, rewritten only when they change: a new tool rebuilds the
# front command, which knows them
$(O)/tools.list: FORCE | $(O)
	$(Q)echo '$(TOOLS)' | cmp -s - $@ || echo '$(TOOLS)' > $@
FORCE:

# the front command (cmd/aiscope.c): knows the tools' names, needs no library
$(O)/aiscope: cmd/aiscope.c Makefile $(O)/tools.list | $(O)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) -DAISCOPE_TOOLS='"$(TOOLS)"' $< -o $@

# The shell completions, all in $(O)/completions/: each tool's made by the
# tool from its own options (--complete=SHELL, lib/complete.c), which loads
# the helpers every tool's calls: those of completions/<shell>/ (copied) and
# the completion of the options lib gives every tool (COMP_SHARED, which any
# tool prints with --complete=SHELL-shared); the front command's copied. A
# cross build runs the host's build of the tools (build/, made first: the
# completions are the same on every arch).
COMP := $(O)/completions
TOOL_COMPS := $(foreach t,$(TOOLS),$(COMP)/bash/$(t) $(COMP)/zsh/_$(t) $(COMP)/fish/$(t).fish)
COMP_HELPERS := bash/aiscope-tool zsh/_aiscope_tids zsh/_aiscope_comms fish/aiscope-tool.fish
COMP_SHARED := bash/aiscope-options zsh/_aiscope_options fish/aiscope-options.fish
.PHONY: completions
completions: $(TOOL_COMPS) $(addprefix $(COMP)/,$(COMP_HELPERS) $(COMP_SHARED)) \
	$(COMP)/bash/aiscope $(COMP)/zsh/_aiscope $(COMP)/aiscope.fish

ifeq ($(CROSS_COMPILE),)
GEN_O := $(O)
else
GEN_O := build
.PHONY: host-tools
$(addprefix $(GEN_O)/,$(TOOLS)): host-tools ;
host-tools:
	$(Q)$(MAKE) --no-print-directory ARCH=$(HOST_ARCH) CROSS_COMPILE= STATIC= SANITIZE= O=$(GEN_O) \
		$(addprefix $(GEN_O)/,$(TOOLS))
endif
# the tool that prints COMP_SHARED (every tool prints the same)
COMP_SHARED_GEN := $(GEN_O)/$(firstword $(TOOLS))

# gen_comp ARG: $@ from the tool (first prerequisite) --complete=ARG (made
# again when the Makefile changes: what it writes where)
define gen_comp
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D) && $< --complete=$(1) > $@.tmp && mv $@.tmp $@
endef
$(COMP)/bash/%: $(GEN_O)/% Makefile
	$(call gen_comp,bash)
$(COMP)/zsh/_%: $(GEN_O)/% Makefile
	$(call gen_comp,zsh)
$(COMP)/fish/%.fish: $(GEN_O)/% Makefile
	$(call gen_comp,fish)
$(COMP)/bash/aiscope-options: $(COMP_SHARED_GEN) Makefile
	$(call gen_comp,bash-shared)
$(COMP)/zsh/_aiscope_options: $(COMP_SHARED_GEN) Makefile
	$(call gen_comp,zsh-shared)
$(COMP)/fish/aiscope-options.fish: $(COMP_SHARED_GEN) Makefile
	$(call gen_comp,fish-shared)

$(COMP)/bash/aiscope $(COMP)/zsh/_aiscope $(addprefix $(COMP)/,$(COMP_HELPERS)): $(COMP)/%: completions/%
	$(Q)mkdir -p $(@D) && cp $< $@

# The tools' completions and COMP_SHARED also ship in the tree
# (completions/<shell>/, the contract's section 8), as generated copies of
# $(COMP)'s, never edited: tests/completions.bats fails when a copy differs
# from what make writes, and `make completions-update` writes them anew
# after an option changes.
.PHONY: completions-update
completions-update: $(TOOL_COMPS) $(addprefix $(COMP)/,$(COMP_SHARED))
	$(Q)for f in $(patsubst $(COMP)/%,%,$(TOOL_COMPS)) $(COMP_SHARED); do cp $(COMP)/$$f completions/$$f || exit 1; done

# fish has no way to hand "aiscope TOOL ..." to TOOL's completions without
# registering them for a command named TOOL (other packages' cachestat):
# aiscope.fish is the helpers (once) and each $(COMP)/fish/TOOL.fish with
# its complete lines moved under "aiscope TOOL"
$(COMP)/aiscope.fish: $(addprefix $(COMP)/fish/,$(addsuffix .fish,$(TOOLS))) completions/fish/aiscope-tool.fish \
		$(COMP)/fish/aiscope-options.fish Makefile
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D) && { \
		echo '# fish completion for aiscope(8), generated by make from each TOOL --complete=fish'; \
		echo 'function __aiscope_is; set -l w (commandline -opc); test (count $$w) -ge 2; and test "$$w[2]" = $$argv[1]; end'; \
		sed -e '/^#/d' -e '/^source /d' completions/fish/aiscope-tool.fish $(COMP)/fish/aiscope-options.fish; \
		echo "complete -c aiscope -f -n __fish_use_subcommand -a '$(TOOLS)' -d tool"; \
		echo "complete -c aiscope -f -n __fish_use_subcommand -a 'list help' -d command"; \
		echo "complete -c aiscope -f -n __fish_use_subcommand -s V -l version -d 'Print program version'"; \
		echo "complete -c aiscope -f -n '__aiscope_is help' -a '$(TOOLS)'"; \
		for t in $(TOOLS); do \
			sed -e '/^#/d' -e '/^source /d' -e "s/^complete -c $$t /complete -c aiscope -n '__aiscope_is $$t' /" \
				-e "s/^\(__aiscope_options [a-z]*\) -c $$t\$$/\1 -c aiscope -n '__aiscope_is $$t'/" \
				$(COMP)/fish/$$t.fish; \
		done; } > $@.tmp && mv $@.tmp $@

# a folder tools/<tool>/: each .c into $(O)/tools/<tool>/ (after the
# skeleton, when the tool has one), linked into $(O)/<tool>
define dir_tool
$(1)_OBJS := $$(patsubst %.c,$(O)/%.o,$$(wildcard tools/$(1)/*.c))
$$($(1)_OBJS): $(O)/tools/$(1)/%.o: tools/$(1)/%.c $$(if $$(filter $(1),$$(BPF_TOOLS)),$(O)/$(1).skel.h) | $(LIBBPF_A)
	$$(call msg,CC,$$@)
	$$(Q)mkdir -p $$(@D) && $$(CC) $$(ALL_CFLAGS) -c $$< -o $$@

$(O)/$(1): $$($(1)_OBJS) $(O)/libaiscope.a $(LIBBPF_A)
	$$(call msg,LINK,$$@)
	$$(Q)$$(CC) $$(ALL_CFLAGS) $$(LDFLAGS) $$^ $$(LDLIBS) $$(LDLIBS_$(1)) -o $$@
endef
$(foreach t,$(DIR_TOOLS),$(eval $(call dir_tool,$(t))))

$(O)/tests/%.o: tests/unit/%.c | $(O)/tests $(LIBBPF_A)
	$(call msg,CC,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -I$(O)/tests -DFIXTURES='"$(CURDIR)/tests/fixtures"' -c $< -o $@

$(O)/tests/bpf/%.bpf.o: tests/bpf/%.bpf.c | $(O)/tests/bpf $(LIBBPF_A)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
	$(Q)$(LLVM_STRIP) -g $@

$(O)/tests/%.skel.h: $(O)/tests/bpf/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

$(O)/tests/test_uprobe.o $(O)/tests/test_probe.o: $(O)/tests/uprobe_args.skel.h
$(O)/tests/test_lost.o: $(O)/tests/recursion.skel.h
$(O)/tests/test_mapdrain.o: $(O)/tests/epoch.skel.h

$(O)/tests/cuda/%: tests/cuda/%.c | $(O)/tests/cuda
	$(call msg,CC,$@)
	$(Q)$(CC) $(PLAIN_CFLAGS) $< -o $@ -ldl

$(O)/tests/cuda/kern_shared: tests/cuda/kern.cu | $(O)/tests/cuda
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) -cudart shared -o $@ $<

$(O)/tests/cuda/kern_static: tests/cuda/kern.cu | $(O)/tests/cuda
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) -cudart static -o $@ $<

# every --mem family, from an nvcc program (the driver dlopened)
$(O)/tests/cuda/mem_shared: tests/cuda/mem.cu | $(O)/tests/cuda
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) -cudart shared -o $@ $< -ldl

# the same with the static runtime inside the executable
# CUDA graphs built every way (tests/cuda/graph.cu): the doubles, a GPU
$(O)/tests/cuda/graph_shared: tests/cuda/graph.cu | $(O)/tests/cuda
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) -cudart shared -o $@ $< -ldl

$(O)/tests/cuda/mem_static: tests/cuda/mem.cu | $(O)/tests/cuda
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) -cudart static -o $@ $< -ldl

# the same with the per-thread default stream: the _ptds and _ptsz exports
$(O)/tests/cuda/mem_ptds: tests/cuda/mem.cu | $(O)/tests/cuda
	$(call msg,NVCC,$@)
	$(Q)$(NVCC) -cudart shared --default-stream per-thread -o $@ $< -ldl

$(O)/tests/cuda/kern_stripped: $(O)/tests/cuda/kern_shared
	$(call msg,STRIP,$@)
	$(Q)strip -o $@ $<

$(O)/tests/cuda/double/libcudart.so.12: tests/cuda/double/cudart.c | $(O)/tests/cuda
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(PLAIN_CFLAGS) -fPIC -shared -Wl,-soname,libcudart.so.12 $< -o $@ -ldl

# the same double under CUDA 13's name and symbol version, for mem_shared
$(O)/tests/cuda/double/13/libcudart.so.13: tests/cuda/double/cudart.c tests/cuda/double/cudart13.map | $(O)/tests/cuda
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(PLAIN_CFLAGS) -fPIC -shared -Wl,-soname,libcudart.so.13 \
		-Wl,--version-script,tests/cuda/double/cudart13.map $< -o $@ -ldl

$(O)/tests/cuda/double/libcuda.so.1: tests/cuda/double/cuda.c | $(O)/tests/cuda
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D) && $(CC) $(PLAIN_CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 $< -o $@

# symbol versions, a _ptsz twin and a local function for test_uprobe
$(O)/tests/libuargs.so: tests/unit/uargs_lib.c tests/unit/uargs_lib.map | $(O)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(PLAIN_CFLAGS) -fPIC -shared -Wl,--version-script=tests/unit/uargs_lib.map $< -o $@

$(O)/tests/test_%: $(O)/tests/test_%.o $(O)/libaiscope.a $(LIBBPF_A)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(ALL_CFLAGS) $(LDFLAGS) $^ $(LDLIBS) $(LDLIBS_$(notdir $@)) -o $@

# Test helpers are static so that the VM images can carry them.
$(O)/tests/helpers/%: tests/helpers/%.c | $(O)/tests/helpers
	$(call msg,CC,$@)
	$(Q)$(CC) $(PLAIN_CFLAGS) -static $< -o $@ -lpthread

# but for rsverbs (tests/vm/rdmasnoop.sh), dynamic: libibverbs dlopens its
# providers. VERBS_ROOT: the tree of another architecture's rdma-core
# (scripts/vm/fetch.sh's RDMA_ROOT) to link against, with this host's
# <infiniband/*.h> (the same on every architecture)
VERBS_LIBDIR = $(firstword $(wildcard $(VERBS_ROOT)/usr/lib/*-linux-gnu))
$(O)/tests/helpers/rsverbs: tests/rdma/rsverbs.c | $(O)/tests/helpers
	$(call msg,CC,$@)
ifneq ($(VERBS_ROOT),)
	$(Q)rm -rf $(O)/verbs && mkdir -p $(O)/verbs/include $(O)/verbs/lib && \
		ln -s /usr/include/infiniband $(O)/verbs/include/infiniband && \
		ln -s $(VERBS_LIBDIR)/libibverbs.so.1 $(O)/verbs/lib/libibverbs.so
	$(Q)$(CC) $(PLAIN_CFLAGS) -I$(O)/verbs/include $< -o $@ -L$(O)/verbs/lib \
		-Wl,-rpath-link,$(VERBS_LIBDIR):$(VERBS_ROOT)/lib/$(notdir $(VERBS_LIBDIR)) -libverbs
else
	$(Q)$(CC) $(PLAIN_CFLAGS) $< -o $@ -libverbs
endif

$(NCCL_DIR)/libnccl.so.2: tests/fixtures/libnccl.c tests/fixtures/nccl_hash.h | $(NCCL_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PLAIN_CFLAGS) -fPIC -shared -Wl,-soname,libnccl.so.2 \
		$(if $(NCCL_INC),-DNCCL_REAL_HEADER -I$(NCCL_INC)) $< -o $@

# the double whose communicators nclstat cannot read (no layout)
$(O)/tests/nccl-opaque/libnccl.so.2: tests/fixtures/libnccl.c tests/fixtures/nccl_hash.h
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(PLAIN_CFLAGS) -fPIC -shared -Wl,-soname,libnccl.so.2 -DFAKE_NCCL_OPAQUE \
		$(if $(NCCL_INC),-DNCCL_REAL_HEADER -I$(NCCL_INC)) $< -o $@

$(NCCL_DIR)/ncclrank: tests/fixtures/ncclrank.c tests/fixtures/nccl_hash.h $(NCCL_DIR)/libnccl.so.2
	$(call msg,CC,$@)
	$(Q)$(CC) $(PLAIN_CFLAGS) $< -o $@ -L$(NCCL_DIR) -l:libnccl.so.2

$(NCCL_DIR)/nccl_abi_check.o: tests/fixtures/nccl_abi_check.c | $(NCCL_DIR)
	$(call msg,CC,$@)
	$(Q)$(CC) $(PLAIN_CFLAGS) -I$(NCCL_INC) -c $< -o $@

static:
	$(Q)$(MAKE) --no-print-directory STATIC=1 tools

test: all
	$(Q)$(if $(filter 1,$(SANITIZE)),AISCOPE_SANITIZE=1 )scripts/as-root.sh tests/run.sh $(O)

demo:
	$(Q)scripts/as-root.sh scripts/demo.sh

deps:
	$(Q)scripts/as-root.sh scripts/deps.sh $(if $(filter arm64,$(ARCH)),--arm64,)

# CUDA libraries from Debian non-free for gpulaunch's tests (make test does it)
fixtures:
	$(Q)scripts/fixtures.sh $(if $(filter arm64,$(ARCH)),--arch arm64,) $(O)/fixtures

# man/TOOL.8 for each tool (the contract's name in the tree) is installed
# as aiscope-TOOL.8: the names libbpf-tools and bpfcc-tools leave free (they
# ship cachestat(8)-like pages, and cachestat-bpfcc(8)); MAN8: the installed names
MAN8 := aiscope.8 $(addprefix aiscope-,$(addsuffix .8,$(TOOLS)))
# the helpers of the tools' completions: bash's beside the tools' files (which
# load them from there), zsh's autoloaded from $fpath beside _aiscope; fish's
# are in aiscope.fish
COMP_BASH_SHARED := aiscope-tool aiscope-options
COMP_ZSH_FPATH := _aiscope_tids _aiscope_comms _aiscope_options

install: tools
	$(Q)install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man7 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	$(Q)install -m 0755 $(O)/aiscope $(DESTDIR)$(BINDIR)/
	$(Q)install -m 0755 $(addprefix $(O)/,$(TOOLS)) $(DESTDIR)$(LIBEXECDIR)/
	$(Q)install -m 0644 man/aiscope.8 $(DESTDIR)$(MANDIR)/man8/
	$(Q)for t in $(TOOLS); do install -m 0644 man/$$t.8 $(DESTDIR)$(MANDIR)/man8/aiscope-$$t.8 || exit 1; done
	$(Q)install -m 0644 man/aiscope.7 $(DESTDIR)$(MANDIR)/man7/
	$(Q)install -m 0644 $(COMP)/bash/aiscope $(DESTDIR)$(BASHCOMPDIR)/aiscope
	$(Q)install -m 0644 $(COMP)/zsh/_aiscope $(addprefix $(COMP)/zsh/,$(COMP_ZSH_FPATH)) $(DESTDIR)$(ZSHCOMPDIR)/
	$(Q)install -m 0644 $(COMP)/aiscope.fish $(DESTDIR)$(FISHCOMPDIR)/aiscope.fish
	$(Q)install -d $(DESTDIR)$(TOOLCOMPDIR)/bash $(DESTDIR)$(TOOLCOMPDIR)/zsh
	$(Q)install -m 0644 $(addprefix $(COMP)/bash/,$(TOOLS) $(COMP_BASH_SHARED)) $(DESTDIR)$(TOOLCOMPDIR)/bash/
	$(Q)install -m 0644 $(addprefix $(COMP)/zsh/_,$(TOOLS)) $(DESTDIR)$(TOOLCOMPDIR)/zsh/
	$(Q)install -d $(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(TMPFILESDIR)
	$(Q)for u in $(UNITS); do \
		sed 's|/usr/local/sbin/|$(BINDIR)/|' deploy/systemd/$$u > $(DESTDIR)$(SYSTEMDUNITDIR)/$$u && \
		chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/$$u || exit 1; \
	done
	$(Q)install -m 0644 deploy/systemd/aiscope-tmpfiles.conf $(DESTDIR)$(TMPFILESDIR)/aiscope.conf

uninstall:
	$(Q)rm -f $(DESTDIR)$(BINDIR)/aiscope $(addprefix $(DESTDIR)$(LIBEXECDIR)/,$(TOOLS)) \
		$(addprefix $(DESTDIR)$(MANDIR)/man8/,$(MAN8)) $(DESTDIR)$(MANDIR)/man7/aiscope.7 \
		$(DESTDIR)$(BASHCOMPDIR)/aiscope $(DESTDIR)$(ZSHCOMPDIR)/_aiscope $(DESTDIR)$(FISHCOMPDIR)/aiscope.fish \
		$(addprefix $(DESTDIR)$(ZSHCOMPDIR)/,$(COMP_ZSH_FPATH)) \
		$(addprefix $(DESTDIR)$(TOOLCOMPDIR)/bash/,$(TOOLS) $(COMP_BASH_SHARED)) $(addprefix $(DESTDIR)$(TOOLCOMPDIR)/zsh/_,$(TOOLS)) \
		$(DESTDIR)$(TMPFILESDIR)/aiscope.conf $(addprefix $(DESTDIR)$(SYSTEMDUNITDIR)/,$(UNITS))
	$(Q)rmdir $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(TOOLCOMPDIR)/bash $(DESTDIR)$(TOOLCOMPDIR)/zsh \
		$(DESTDIR)$(TOOLCOMPDIR) $(DESTDIR)$(PREFIX)/share/aiscope 2> /dev/null || true

# make deb [ARCH=arm64]: debian/ built by dpkg-buildpackage from a copy of
# the tree's files (git ls-files, the working tree's state) in build/deb/
# (libbpf from the pinned source this tree has fetched into build/cache/),
# where aiscope_$(VERSION)_<arch>.deb lands; ARCH=arm64 cross builds with
# the toolchain of make deps ARCH=arm64
DEB_ARCH := $(subst x86,amd64,$(ARCH))
DEB_DIR := build/deb

# make grafana: deploy/grafana/dashboards/UID.json from deploy/grafana/spec.json
# (dashboards.jq), one per dashboard; GRAFANA_OUT writes them elsewhere
GRAFANA_OUT ?= deploy/grafana/dashboards
.PHONY: grafana
grafana:
	$(Q)mkdir -p $(GRAFANA_OUT) && cd deploy/grafana && \
	for u in $$(jq -r '.dashboards[].uid' spec.json); do \
		jq --arg uid "$$u" -f dashboards.jq spec.json > $(abspath $(GRAFANA_OUT))/$$u.json.tmp && \
		mv $(abspath $(GRAFANA_OUT))/$$u.json.tmp $(abspath $(GRAFANA_OUT))/$$u.json || exit 1; \
	done
deb:
	$(Q)rm -rf $(DEB_DIR)/aiscope-$(VERSION) && mkdir -p $(DEB_DIR)/aiscope-$(VERSION)
	$(Q)git ls-files -z --cached --others --exclude-standard | \
		xargs -0 sh -c 'for f; do [ -f "$$f" ] && printf "%s\0" "$$f"; done' _ | \
		tar -c --null -T - -f - | tar -x -C $(DEB_DIR)/aiscope-$(VERSION)
	$(Q)scripts/libbpf.sh fetch
	$(Q)cd $(DEB_DIR)/aiscope-$(VERSION) && AISCOPE_LIBBPF_CACHE=$(CURDIR)/build/cache/libbpf dpkg-buildpackage -b -us -uc \
		$(if $(filter-out $(HOST_ARCH),$(ARCH)),-a$(DEB_ARCH)) -j$(or $(JOBS),2) > ../build-$(DEB_ARCH).log 2>&1 || \
		{ tail -n 30 ../build-$(DEB_ARCH).log; echo "make deb: dpkg-buildpackage failed: $(DEB_DIR)/build-$(DEB_ARCH).log"; exit 1; }
	$(Q)rm -rf $(DEB_DIR)/aiscope-$(VERSION)
	$(Q)ls $(DEB_DIR)/aiscope_$(VERSION)_$(DEB_ARCH).deb

# make release: per arch, aiscope-$(VERSION)-<arch>.tar.gz in build/release/:
# the static tools of build/static and build/arm64-static (those make test-vm
# runs), laid out as make install PREFIX=/usr/local lays them out (unpack
# with tar -C /usr/local --strip-components=1), with man pages, completions,
# units, tmpfiles.d and SHA256SUMS of its files; build/release/SHA256SUMS of
# the tarballs. Reproducible: names sorted, owner root, mtime of the last commit.
RELEASE_DIR := build/release
RELEASE_ARCHES ?= x86 arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2> /dev/null || date +%s)
release:
	$(Q)rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)
	$(Q)for a in $(RELEASE_ARCHES); do \
		d=aiscope-$(VERSION)-$$(echo $$a | sed 's/x86/amd64/'); \
		stage=$(RELEASE_DIR)/stage-$$a; \
		$(MAKE) --no-print-directory STATIC=1 ARCH=$$a install DESTDIR=$$PWD/$$stage PREFIX=/usr/local || exit 1; \
		mv $$stage/usr/local $(RELEASE_DIR)/$$d && rm -rf $$stage || exit 1; \
		(cd $(RELEASE_DIR)/$$d && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | sed 's|^\./||' | \
			xargs sha256sum > SHA256SUMS) || exit 1; \
		tar -C $(RELEASE_DIR) --sort=name --owner=0 --group=0 --numeric-owner \
			--mtime=@$(SOURCE_DATE_EPOCH) -cf - $$d | gzip -9n > $(RELEASE_DIR)/$$d.tar.gz || exit 1; \
		rm -rf $(RELEASE_DIR)/$$d; \
	done
	$(Q)cd $(RELEASE_DIR) && sha256sum *.tar.gz > SHA256SUMS && cat SHA256SUMS

clean:
	$(Q)rm -rf build/arm64 build/static build/arm64-static $(filter-out build/cache,$(wildcard build/*))

help:
	@sed -n '2,9p' Makefile | sed 's/^# \{0,1\}//'

-include $(wildcard $(O)/*.d $(O)/tools/*/*.d $(O)/lib/*.d $(O)/bpf/*.d $(O)/tests/*.d $(O)/tests/bpf/*.d $(O)/tests/helpers/*.d $(O)/tests/cuda/*.d \
	$(O)/tests/cuda/double/*.d $(NCCL_DIR)/*.d)

# Layer 4 of the tests: the end-to-end subset in qemu on every Debian kernel
# line, x86_64 and arm64 (scripts/vm/kernels; KERNELS=x86-6.12 arm64 ... picks
# some). Builds the static tools, helpers and one initramfs per arch.
.PHONY: test-vm kernels-md
test-vm:
	$(Q)KERNELS="$(KERNELS)" scripts/vm/run-matrix.sh

# docs/KERNELS.md from the last matrix run's logs (build/vm/)
kernels-md:
	$(Q)scripts/vm/kernels-md.sh build/vm > docs/KERNELS.md.tmp && mv docs/KERNELS.md.tmp docs/KERNELS.md
