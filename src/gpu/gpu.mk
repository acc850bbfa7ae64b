# src/gpu/gpu.mk — builds the GPU plugins from the one HIP source in
# src/gpu/ (included by the top Makefile; uses its BUILD).
#
#   make cuda          $(BUILD)/libwick_cuda.so      nvcc, CUDA_ARCHS (sm_80 sm_90)
#   make cuda-wave64   $(BUILD)/libwick_cuda_w64.so  nvcc, virtual wave64 (compat.h)
#   make rocm          $(BUILD)/libwick_rocm.so      hipcc, ROCM_TARGETS
#                      (gfx90a gfx940 gfx1030), then tools/check-hip-kernels
#   make gpu-plugins   all three (what CI builds)
#
# Each plugin exports one symbol, wk_backend_entry_v1 (hidden visibility
# plus a linker version script); each target checks that with nm.
#
# Every plugin compiles file by file: one object per .hip file, so
# `make -j` compiles the files in parallel (a single translation unit for
# all of them would be one serial compiler run of several minutes per
# ROCm target), and an edit recompiles only its file. No relocatable device
# code (-fgpu-rdc / -rdc) is needed: every kernel is launched from the
# file that defines it. The CUDA plugins link the static CUDA runtime, so
# they need only the driver at run time.
# Each ROCm object carries its own offload bundle (one code object per
# target), so libwick_rocm.so holds one code object per .hip file and
# target. tools/check-hip-kernels takes the union of the code objects of
# each target and requires every kernel the host can launch to be in every
# target's union (and, within one object, in all of its targets), which
# finds a kernel that a device-only macro renamed or dropped for one target.

NVCC         ?= nvcc
HIPCC        ?= hipcc
CUDA_ARCHS   ?= 80 90
ROCM_TARGETS ?= gfx90a gfx940 gfx1030
GPU_OPT      ?= -O3
# extra libraries for the CUDA plugin (e.g. -lcublas) and the ROCm one
CUDA_LIBS    ?=
ROCM_LIBS    ?=

GPU_SRC  := $(sort $(wildcard src/gpu/*.hip))
GPU_DEPS := $(wildcard include/*.h src/*.h src/core/scalar.h src/core/philox.h src/gpu/*.h) src/gpu/gpu.mk

# sm_XX code for every arch, plus PTX of the newest for later GPUs. The
# virtual-wave64 plugin (a test build, for running the wave64 code paths on
# NVIDIA) takes W64_ARCHS, the same by default; CI, which only compiles it,
# builds it for one arch.
W64_ARCHS    ?= $(CUDA_ARCHS)
nvcc_gencode = $(foreach a,$(1),-gencode arch=compute_$(a),code=sm_$(a)) \
               -gencode arch=compute_$(lastword $(1)),code=compute_$(lastword $(1))
NVCC_GENCODE     := $(call nvcc_gencode,$(CUDA_ARCHS))
NVCC_GENCODE_W64 := $(call nvcc_gencode,$(W64_ARCHS))
NVCC_BASE  := -x cu -std=c++17 $(GPU_OPT) -Iinclude -Isrc -Xcompiler -fPIC,-fvisibility=hidden,-Wall,-Wextra
NVCC_FLAGS := $(NVCC_BASE) $(NVCC_GENCODE)
HIPCC_ARCH  := $(addprefix --offload-arch=,$(ROCM_TARGETS))
HIPCC_FLAGS := -x hip -std=c++17 $(GPU_OPT) -Iinclude -Isrc $(HIPCC_ARCH) \
               -fPIC -fvisibility=hidden -Wall -Wextra

# random.hip: no a*b+c contraction, so every step is the one docs/random.md
# specifies (the uniform mapping uses explicit fmaf either way)
NVCC_FLAGS_random  := -fmad=false
HIPCC_FLAGS_random := -ffp-contract=off
# quant.hip: the decoders round as ggml's do (no contraction); its dot
# products use explicit fmaf
NVCC_FLAGS_quant  := -fmad=false
HIPCC_FLAGS_quant := -ffp-contract=off

# pool.hip: source positions and weights of upsampling computed as the
# cpu computes them (no contraction), so the indices agree
NVCC_FLAGS_pool  := -fmad=false
HIPCC_FLAGS_pool := -ffp-contract=off

# rtc.hip embeds compat.h as text: the prelude of kernels compiled at run
# time (a raw string literal made here)
RTC_PRELUDE := $(BUILD)/gpu/rtc_prelude.inc
$(RTC_PRELUDE): src/gpu/compat.h src/gpu/gpu.mk
	@mkdir -p $(dir $@)
	{ printf 'R"WKRTC(\n'; cat $<; printf ')WKRTC"\n'; } > $@
$(BUILD)/gpu/cuda/rtc.o $(BUILD)/gpu/cuda_w64/rtc.o $(BUILD)/gpu/rocm/rtc.o: $(RTC_PRELUDE)
NVCC_FLAGS_rtc  := -I$(BUILD)/gpu
HIPCC_FLAGS_rtc := -I$(BUILD)/gpu

# attention.hip: `make cuda ATTN_PORTABLE=1` (any plugin) compiles the
# portable attention path (plain FMAs) in place of the matrix-core one, so
# that the parity tests run it on NVIDIA. Objects are not rebuilt when the
# switch changes: build into a BUILD of its own (BUILD=build-attn-portable).
ifneq ($(ATTN_PORTABLE),)
NVCC_FLAGS_attention  += -DWK_ATTN_PORTABLE
HIPCC_FLAGS_attention += -DWK_ATTN_PORTABLE
endif

# The MFMA builtins of compat.h against a plain matrix product, lane by
# lane (tests/device/mfma_check.hip): wick-mfma-check is the software twin
# (nvcc, virtual wave64; tests/run_gpu.sh runs it), wick-mfma-check-rocm
# the hardware instructions (hipcc, the MFMA targets of ROCM_TARGETS; for
# an MI200/MI300).
MFMA_TARGETS := $(filter gfx90a gfx940 gfx941 gfx942,$(ROCM_TARGETS))
$(BUILD)/wick-mfma-check: tests/device/mfma_check.hip src/gpu/compat.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_BASE) $(NVCC_GENCODE_W64) -DWK_VIRTUAL_WAVE64 $< -o $@
$(BUILD)/wick-mfma-check-rocm: tests/device/mfma_check.hip src/gpu/compat.h
	@mkdir -p $(dir $@)
	$(HIPCC) -x hip -std=c++17 -O2 -Iinclude -Isrc $(addprefix --offload-arch=,$(MFMA_TARGETS)) -Wall -Wextra $< -o $@

# Objects in the order make starts them: largest sources first, so that
# under -j the longest compiles do not start last (the links sort them).
# gpu-plugins interleaves the three plugins' objects in that order.
GPU_SRC_BIG  := $(if $(GPU_SRC),$(shell ls -S $(GPU_SRC) 2>/dev/null))
GPU_CUDA_OBJ := $(GPU_SRC_BIG:src/gpu/%.hip=$(BUILD)/gpu/cuda/%.o)
GPU_W64_OBJ  := $(GPU_SRC_BIG:src/gpu/%.hip=$(BUILD)/gpu/cuda_w64/%.o)
GPU_ROCM_OBJ := $(GPU_SRC_BIG:src/gpu/%.hip=$(BUILD)/gpu/rocm/%.o)
GPU_ALL_OBJ  := $(foreach f,$(GPU_SRC_BIG:src/gpu/%.hip=%.o),$(BUILD)/gpu/rocm/$(f) $(BUILD)/gpu/cuda/$(f) $(BUILD)/gpu/cuda_w64/$(f))
GPU_MAP      := $(BUILD)/gpu/plugin.map

# A plugin links with -z defs (a symbol of the core used by mistake fails the
# link, not the dlopen), and its exported symbols must be exactly the entry point
define gpu_check_exports
	@syms=$$(nm -D --defined-only $(1) | awk '{print $$3}' | sort -u | tr '\n' ' '); \
	 if [ "$$syms" != "wk_backend_entry_v1 " ]; then \
	    echo "$(1): exports '$$syms', want only wk_backend_entry_v1"; exit 1; \
	 else echo "$(1): exports only wk_backend_entry_v1"; fi
endef

.PHONY: cuda cuda-wave64 rocm gpu-plugins
cuda: $(BUILD)/libwick_cuda.so
cuda-wave64: $(BUILD)/libwick_cuda_w64.so
rocm: $(BUILD)/libwick_rocm.so
	tools/check-hip-kernels $<
gpu-plugins: $(GPU_ALL_OBJ) rocm cuda cuda-wave64

$(GPU_MAP): src/gpu/gpu.mk
	@mkdir -p $(dir $@)
	printf '{\n  global: wk_backend_entry_v1;\n  local: *;\n};\n' > $@

$(BUILD)/gpu/cuda/%.o: src/gpu/%.hip $(GPU_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_FLAGS) $(NVCC_FLAGS_$*) -c $< -o $@

$(BUILD)/gpu/cuda_w64/%.o: src/gpu/%.hip $(GPU_DEPS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_BASE) $(NVCC_GENCODE_W64) $(NVCC_FLAGS_$*) -DWK_VIRTUAL_WAVE64 -c $< -o $@

$(BUILD)/gpu/rocm/%.o: src/gpu/%.hip $(GPU_DEPS)
	@mkdir -p $(dir $@)
	$(HIPCC) $(HIPCC_FLAGS) $(HIPCC_FLAGS_$*) -c $< -o $@

$(BUILD)/libwick_cuda.so: $(GPU_CUDA_OBJ) $(GPU_MAP)
	$(NVCC) -shared $(NVCC_GENCODE) -o $@ $(sort $(GPU_CUDA_OBJ)) -Xlinker --version-script=$(GPU_MAP) -Xlinker -z,defs $(CUDA_LIBS) -ldl -lpthread
	$(call gpu_check_exports,$@)

$(BUILD)/libwick_cuda_w64.so: $(GPU_W64_OBJ) $(GPU_MAP)
	$(NVCC) -shared $(NVCC_GENCODE_W64) -o $@ $(sort $(GPU_W64_OBJ)) -Xlinker --version-script=$(GPU_MAP) -Xlinker -z,defs $(CUDA_LIBS) -ldl -lpthread
	$(call gpu_check_exports,$@)

$(BUILD)/libwick_rocm.so: $(GPU_ROCM_OBJ) $(GPU_MAP)
	$(HIPCC) -shared -fPIC $(HIPCC_ARCH) -o $@ $(sort $(GPU_ROCM_OBJ)) -Wl,--version-script=$(GPU_MAP) -Wl,-z,defs $(ROCM_LIBS) -ldl -lpthread
	$(call gpu_check_exports,$@)
