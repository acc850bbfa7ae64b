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
# the server's web page (src/server/web/index.html) goes into the command
# as a C array that tools/embed.sh writes
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o) $(if $(SERVER_SRC),$(BUILD)/gen/web_page.o)
$(SERVER_OBJ): ALL_CFLAGS += $(MHD_CFLAGS)
$(BUILD)/cli/serve.o: ALL_CFLAGS += $(if $(SERVER_SRC),-DWICK_HAVE_SERVER)

.PHONY: all lib tests test asan debug fault-check clean cuda rocm install uninstall
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

$(BUILD)/gen/web_page.c: src/server/web/index.html tools/embed.sh
	@mkdir -p $(dir $@)
	$(Q)sh tools/embed.sh wks_web_page $< > $@.tmp && mv $@.tmp $@
$(BUILD)/gen/web_page.o: $(BUILD)/gen/web_page.c
	@$(if $(V),,echo "  CC $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

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

# The README's test command (it builds the runners: `tests`). TEST_PYTHON runs the server's tests that use
# packages from outside the standard library (the openai client; CI gives
# it a virtual environment): without them those tests skip with a note.
# PYTHON runs the chat template comparison (tools/check_chat_templates.py:
# skipped with a note without jinja2).
TEST_PYTHON ?= python3
PYTHON ?= python3
test: all tests
	$(BUILD)/wick-tests
	$(MAKE) --no-print-directory fuzz-replay
	CC="$(CC)" tests/cli/test_cli.sh $(BUILD)/wick
	CC="$(CC)" MAKE="$(MAKE)" tests/install/test_install.sh $(BUILD)
	$(if $(SERVER_SRC),python3 tests/server/test_server.py $(BUILD)/wick,@echo "tests/server: skipped (wick serve not built: no libmicrohttpd)")
	$(if $(SERVER_SRC),python3 tests/server/test_load.py $(BUILD)/wick)
	$(if $(SERVER_SRC),python3 tests/server/test_web.py $(BUILD)/wick)
	$(if $(SERVER_SRC),$(TEST_PYTHON) tests/server/test_openai_client.py $(BUILD)/wick)
	$(PYTHON) tools/check_chat_templates.py $(BUILD)/wick
	tools/check-layers && tools/check-layers --self-test
	tools/check-env && tools/check-env --self-test

# The sanitizer build also has the debug build's handles (below): a use
# after wk_release is an error there, tested by the suite handles.
# The fuzz corpus is replayed there too (tests/fuzz/README.md).
ASAN_VARS = BUILD=build-asan OPT="-O1 -fno-omit-frame-pointer" \
    EXTRA_CFLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined -DWK_DEBUG_HANDLES" \
    LDLIBS="$(LDLIBS) -fsanitize=address,undefined"
asan:
	$(MAKE) $(ASAN_VARS) build-asan/wick-tests
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 build-asan/wick-tests
	ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 $(MAKE) --no-print-directory $(ASAN_VARS) fuzz-replay

# A debug build: -O1, and tensor handles that carry a generation and stay
# readable after their release (-DWK_DEBUG_HANDLES, src/core/core.h), so a
# use after wk_release is an error naming the op instead of a use of freed
# memory; release builds do none of this. Runs the test suite there.
debug:
	$(MAKE) BUILD=build-debug OPT="-O1 -g -fno-omit-frame-pointer" EXTRA_CFLAGS="-DWK_DEBUG_HANDLES" build-debug/wick-tests
	build-debug/wick-tests

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
	rm -rf build build-asan build-fault build-debug build-fuzz

# ---- fuzzing (tests/fuzz/README.md) ----------------------------------------
# `make fuzz` builds every harness tests/fuzz/fuzz_*.c with clang's
# libFuzzer, ASan and UBSan into build-fuzz/ and runs each for FUZZ_TIME
# seconds from its corpus (tests/fuzz/corpus/NAME/; what it finds new goes
# to build-fuzz/corpus/NAME/, a crash to build-fuzz/findings/); it fails on
# any finding. `make fuzz-replay` builds the harnesses with $(CC) and a
# plain main (tests/fuzz/replay.c) and runs every file of the corpus once:
# `make test` does it, so every crash kept in the corpus is a regression
# test. FUZZ=NAME picks one harness.
FUZZ_CC    ?= clang
FUZZ_TIME  ?= 60
FUZZ_BUILD := build-fuzz
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=undefined
# an allocation over 2 GiB fails (NULL) as it would on a small machine, so
# that the library's out-of-memory paths run instead of ASan stopping
FUZZ_ASAN  := allocator_may_return_null=1:max_allocation_size_mb=2048
FUZZ       ?= $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_EXTRA  = $(if $(filter openai,$*),$(BUILD)/src/server/openai.o)

.PHONY: fuzz fuzz-build fuzz-replay
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_util.h $(BUILD)/libwick.a $(BUILD)/src/server/openai.o
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Isrc/server -fsanitize=fuzzer -o $@ $< $(FUZZ_EXTRA) $(BUILD)/libwick.a $(LDLIBS)
$(BUILD)/fuzz-replay/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz_util.h $(BUILD)/libwick.a $(BUILD)/src/server/openai.o
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD $@")
	$(Q)$(CC) $(ALL_CFLAGS) -Isrc/server -o $@ $< tests/fuzz/replay.c $(FUZZ_EXTRA) $(BUILD)/libwick.a $(LDLIBS)

fuzz-build:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) OPT="-O1 -g -fno-omit-frame-pointer" \
	    EXTRA_CFLAGS="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" LDLIBS="$(LDLIBS) $(FUZZ_SAN)" \
	    $(FUZZ:%=$(FUZZ_BUILD)/fuzz/fuzz_%)

fuzz: fuzz-build
	@fail=0; for h in $(FUZZ); do \
	    mkdir -p $(FUZZ_BUILD)/corpus/$$h $(FUZZ_BUILD)/findings/$$h; \
	    echo "fuzz: $$h for $(FUZZ_TIME) s"; \
	    ASAN_OPTIONS=$(FUZZ_ASAN) UBSAN_OPTIONS=print_stacktrace=1 \
	    $(FUZZ_BUILD)/fuzz/fuzz_$$h -max_total_time=$(FUZZ_TIME) -timeout=25 \
	        -rss_limit_mb=3072 -malloc_limit_mb=4096 -max_len=1048576 -print_final_stats=1 \
	        -artifact_prefix=$(FUZZ_BUILD)/findings/$$h/ $(FUZZ_BUILD)/corpus/$$h tests/fuzz/corpus/$$h \
	        > $(FUZZ_BUILD)/fuzz-$$h.log 2>&1 || { fail=1; echo "fuzz: $$h: FINDING (log: $(FUZZ_BUILD)/fuzz-$$h.log)"; tail -40 $(FUZZ_BUILD)/fuzz-$$h.log; }; \
	    grep -E '^#[0-9]+.*(DONE|INITED)|stat::number_of_executed_units' $(FUZZ_BUILD)/fuzz-$$h.log | tail -2; \
	 done; exit $$fail

fuzz-replay: $(FUZZ:%=$(BUILD)/fuzz-replay/fuzz_%)
	@for h in $(FUZZ); do $(BUILD)/fuzz-replay/fuzz_$$h tests/fuzz/corpus/$$h || exit 1; done

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
