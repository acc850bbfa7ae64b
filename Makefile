# wick — build. `make` builds the library (static and shared) and the
# `wick` command; `make tests` the test runners; `make test` builds and runs
# the tests; `make asan` builds and runs them under AddressSanitizer +
# UBSan; `make fault-check` proves the tests can fail (a build with an
# injected fault must fail); `make install` (PREFIX, DESTDIR) installs.
# GPU plugins: `make cuda`, `make rocm` (see src/gpu/gpu.mk).

# ---- parallel by default ------------------------------------------------------
# A top-level make runs one job per core unless the command line says
# otherwise (`make -j1`, `make -j4` win over this); sub-makes share their
# parent's jobs. Not with clean, which would race the build.
ifeq ($(MAKELEVEL),0)
ifeq ($(filter clean,$(MAKECMDGOALS))$(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
endif
endif
# ---- end of parallel by default ------------------------------------------------

CC      ?= cc
BUILD   ?= build
OPT     ?= -O3 -march=x86-64-v2 -mtune=native
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror=implicit-function-declaration
CFLAGS  ?= $(OPT) -g
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE -fPIC -fvisibility=hidden -pthread $(WARN) -Iinclude -Isrc $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS  := -lm -ldl -pthread

# the core and cpu backend, then the layers above the API (model files,
# tokenizers, models), which use only the public headers (tools/check-layers)
LIB_SRC   := $(sort $(wildcard src/core/*.c src/cpu/*.c)) $(sort $(wildcard src/formats/*.c src/tokenizer/*.c src/llm/*.c src/engine/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
TEST_SRC  := $(sort $(wildcard tests/*.c))
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
CLI_SRC   := $(sort $(wildcard cli/*.c))

# `wick serve` (src/server, the layer above the engine; cli/serve.c) needs
# libmicrohttpd (Debian, Ubuntu: apt-get install libmicrohttpd-dev). Found
# through pkg-config, else by its header: the server is built into the
# `wick` command (never into libwick); without it `wick serve` says how to
# install it. SERVE=no leaves it out where it is installed.
ifeq ($(origin SERVE),undefined)
SERVE := $(shell pkg-config --exists libmicrohttpd 2>/dev/null && echo yes || \
           (printf '\043include <microhttpd.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo yes) || echo no)
endif
ifeq ($(SERVE),yes)
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
MHD_LIBS   := $(or $(shell pkg-config --libs libmicrohttpd 2>/dev/null),-lmicrohttpd)
SERVER_SRC := $(sort $(wildcard src/server/*.c))
endif
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o)
$(SERVER_OBJ): ALL_CFLAGS += $(MHD_CFLAGS)
$(BUILD)/cli/serve.o: ALL_CFLAGS += $(if $(SERVER_SRC),-DWICK_HAVE_SERVER)

.PHONY: all lib tests test asan fault-check clean cuda rocm install uninstall
all: lib $(BUILD)/wick

lib: $(BUILD)/libwick.a $(BUILD)/libwick.so

# the test runners (make test builds them too)
tests: $(BUILD)/wick-tests $(BUILD)/wick-parity

# the version, from include/wick.h: the shared library's name and soname
WK_VERSION := $(shell awk '/^\#define WK_VERSION_(MAJOR|MINOR|PATCH) /{ v = v (v == "" ? "" : ".") $$3 } END { print v }' include/wick.h)
WK_MAJOR   := $(firstword $(subst ., ,$(WK_VERSION)))

Q := $(if $(V),,@)

$(BUILD)/%.o: %.c $(wildcard include/*.h src/*.h src/*/*.h tests/*.h tests/data/*.h cli/*.h) Makefile
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/libwick.a: $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

# soname libwick.so.MAJOR; the link of that name lets programs linked
# against build/libwick.so run from the build folder
$(BUILD)/libwick.so: $(LIB_OBJ)
	$(Q)$(CC) -shared -Wl,-soname,libwick.so.$(WK_MAJOR) -o $@ $^ $(LDLIBS)
	$(Q)ln -sf libwick.so $(BUILD)/libwick.so.$(WK_MAJOR)

$(BUILD)/wick: $(CLI_SRC:%.c=$(BUILD)/%.o) $(SERVER_OBJ) $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS) $(MHD_LIBS)

# serve.o is rebuilt when the answer changes
$(BUILD)/cli/serve.o: $(BUILD)/.serve-$(SERVE)
$(BUILD)/.serve-$(SERVE):
	@mkdir -p $(dir $@)
	@rm -f $(BUILD)/.serve-*
	@touch $@

$(BUILD)/wick-tests: $(TEST_OBJ) $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# The op-parity runner: every op on every GPU device against the cpu
# (cpu against itself when there is no GPU). `$(BUILD)/wick-parity --quick`
# keeps sizes small for compute-sanitizer runs.
PARITY_SRC := $(sort $(wildcard tests/parity/*.c))
PARITY_OBJ := $(PARITY_SRC:%.c=$(BUILD)/%.o)
$(BUILD)/tests/parity/%.o: tests/parity/%.c $(wildcard include/*.h tests/*.h tests/parity/*.h) Makefile
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@
$(BUILD)/wick-parity: $(PARITY_OBJ) $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# The GPU benchmark's C driver (bench/gpu_vs_torch.py runs it).
# device-level checks: run-time errors and >2^31-element tensors (8 GiB)
$(BUILD)/wick-device-checks: tests/device/device_checks.c $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# custom ops and kernels compiled at run time on a GPU (NVRTC / hiprtc, the disk cache)
$(BUILD)/wick-rtc-checks: tests/device/rtc_checks.c $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# collectives on the GPUs of the machine (NCCL / RCCL)
$(BUILD)/wick-comm-checks: tests/device/comm_checks.c $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# the run-time compiler path of a plugin, without a GPU:
# $(BUILD)/wick-rtc-compile-check $(BUILD)/libwick_cuda.so sm_90
$(BUILD)/wick-rtc-compile-check: tests/device/rtc_compile_check.c $(wildcard include/*.h src/*.h)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< -ldl

# examples/: a custom op with a cpu callback and a run-time compiled GPU kernel
$(BUILD)/example-custom-op: examples/custom_op.c $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/wick-gpu-bench: bench/gpu_bench.c cli/timing.h $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# Host cost of one small op: the launch chain on any device (bench/README.md).
$(BUILD)/wick-launch-overhead: bench/launch_overhead.c cli/timing.h $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# The tokenizer comparison's C driver (tools/check_tokenizers.py runs it).
$(BUILD)/wick-tok-check: tests/tokenizer/tok_check.c $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# The model oracle's wick side (tools/llm_oracle.py runs it against transformers).
$(BUILD)/wick-llm-oracle: tests/device/llm_oracle.c cli/ranks.h $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# A language model's prefill and decode speed through the C API (bench/run_model.sh).
$(BUILD)/wick-llm-bench: bench/llm_bench.c bench/bench_args.h cli/ranks.h cli/timing.h $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# The batched engine's throughput at several batch sizes (bench/README.md).
$(BUILD)/wick-engine-bench: bench/engine_bench.c bench/bench_args.h cli/timing.h $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# Constrained sampling's mask time per token on a model (docs/grammar.md).
$(BUILD)/wick-grammar-bench: bench/grammar_bench.c cli/timing.h $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# all_reduce across the GPUs of a host (bench/comm_vs_torch.py).
$(BUILD)/wick-comm-bench: bench/comm_bench.c cli/ranks.h cli/timing.h $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# The cpu's two qmatmul paths timed side by side (docs/cpu-qdot.md).
$(BUILD)/wick-qdot-bench: bench/qdot_bench.c cli/timing.h $(BUILD)/libwick.a
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(filter-out %.h,$^) $(LDLIBS)

# The README's test command.
test: all tests
	$(BUILD)/wick-tests
	CC="$(CC)" tests/cli/test_cli.sh $(BUILD)/wick
	CC="$(CC)" MAKE="$(MAKE)" tests/install/test_install.sh $(BUILD)
	$(if $(SERVER_SRC),python3 tests/server/test_server.py $(BUILD)/wick,@echo "tests/server: skipped (wick serve not built: no libmicrohttpd)")
	tools/check-layers && tools/check-layers --self-test
	tools/check-env && tools/check-env --self-test

asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -fno-omit-frame-pointer" EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined" \
	    LDLIBS="$(LDLIBS) -fsanitize=address,undefined" build-asan/wick-tests
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-asan/wick-tests

# A build whose exp is perturbed (WK_FAULT_INJECT) must make the runner fail,
# and name exp in its failures.
fault-check:
	$(MAKE) BUILD=build-fault EXTRA_CFLAGS="-DWK_FAULT_INJECT=WK_OP_EXP" build-fault/wick-tests
	@if build-fault/wick-tests --filter exp > build-fault/log.txt 2>&1; then \
	    echo "fault-check: FAILED: the runner passed a build with a fault in exp"; exit 1; \
	 elif grep -q 'FAIL.*exp' build-fault/log.txt; then \
	    echo "fault-check: ok: the injected fault in exp was caught"; \
	 else echo "fault-check: FAILED: the runner failed but did not name exp"; tail -20 build-fault/log.txt; exit 1; fi

clean:
	rm -rf build build-asan build-fault

# ---- make install -------------------------------------------------------------
# make install [PREFIX=/usr/local] [DESTDIR=staging folder]: the headers
# (INCLUDEDIR/wick/), libwick.a, libwick.so.X.Y.Z (soname libwick.so.X, and
# the links libwick.so.X and libwick.so), the GPU plugins built (beside
# libwick.so, where the library looks for them; an installed wick looks in
# PREFIX/lib too), the wick command, the default model's fetch script (which
# an installed wick runs) and wick.pc for pkg-config:
#   cc prog.c $(pkg-config --cflags --libs wick)
PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
DATADIR      ?= $(PREFIX)/share
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
INSTALL      ?= install
INSTALL_PLUGINS = $(wildcard $(BUILD)/libwick_cuda.so $(BUILD)/libwick_rocm.so)

install: lib $(BUILD)/wick
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/wick $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(DATADIR)/wick
	$(INSTALL) -m 644 $(wildcard include/*.h) $(DESTDIR)$(INCLUDEDIR)/wick/
	$(INSTALL) -m 644 $(BUILD)/libwick.a $(DESTDIR)$(LIBDIR)/libwick.a
	$(INSTALL) -m 755 $(BUILD)/libwick.so $(DESTDIR)$(LIBDIR)/libwick.so.$(WK_VERSION)
	ln -sf libwick.so.$(WK_VERSION) $(DESTDIR)$(LIBDIR)/libwick.so.$(WK_MAJOR)
	ln -sf libwick.so.$(WK_MAJOR) $(DESTDIR)$(LIBDIR)/libwick.so
	$(if $(INSTALL_PLUGINS),$(INSTALL) -m 755 $(INSTALL_PLUGINS) $(DESTDIR)$(LIBDIR)/)
	$(INSTALL) -m 755 $(BUILD)/wick $(DESTDIR)$(BINDIR)/wick
	$(INSTALL) -m 755 tools/fetch-default-model.sh $(DESTDIR)$(DATADIR)/wick/fetch-default-model.sh
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' 'Name: wick' \
	    'Description: a tensor library in C for LLM inference on CPUs, AMD and NVIDIA GPUs' 'Version: $(WK_VERSION)' \
	    'Cflags: -I$${includedir}/wick' 'Libs: -L$${libdir} -lwick' 'Libs.private: $(LDLIBS)' \
	    > $(DESTDIR)$(PKGCONFIGDIR)/wick.pc

uninstall:
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/wick/,$(notdir $(wildcard include/*.h))) \
	    $(DESTDIR)$(LIBDIR)/libwick.a $(DESTDIR)$(LIBDIR)/libwick.so.$(WK_VERSION) $(DESTDIR)$(LIBDIR)/libwick.so.$(WK_MAJOR) \
	    $(DESTDIR)$(LIBDIR)/libwick.so $(DESTDIR)$(LIBDIR)/libwick_cuda.so $(DESTDIR)$(LIBDIR)/libwick_rocm.so \
	    $(DESTDIR)$(BINDIR)/wick $(DESTDIR)$(DATADIR)/wick/fetch-default-model.sh $(DESTDIR)$(PKGCONFIGDIR)/wick.pc
	-rmdir $(DESTDIR)$(INCLUDEDIR)/wick $(DESTDIR)$(DATADIR)/wick 2>/dev/null
# ---- end of make install ------------------------------------------------------

-include src/gpu/gpu.mk
