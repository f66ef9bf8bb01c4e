# ikd: build, test and benchmark.
#
# A plain Makefile: every library comes from pkg-config (wslay ships no .pc
# file in Debian, so it falls back to -lwslay). Sources are found by folder, so
# adding a file needs no edit here:
#   solver/*.c   -> build/libiksolver.a  (C11 + libm only, no I/O)
#   proto/*.c    -> build/libikproto.a   (jansson, libxml2)
#   server/*.c   -> build/ikd            (libmicrohttpd, libuv, wslay, nettle)
#   tests/<area>/test_*.c -> build/tests/<area>/test_*  (check)
#   tests/bench/*.c       -> build/ikbench and the other benchmark tools
#   web/*, clients/js/ikd.js, three.js from node_modules (npm ci) and the
#   page's robot and motion from tests/data -> build/web (the live page,
#   served by "ikd --web build/web"; nothing from node_modules is committed)
#
#   tests/fuzz/fuzz_*.c   -> build-fuzz/fuzz_*  (clang, libFuzzer; `make fuzz`)
#
# Targets: all (default), web, check, bench, fuzz, run, format, clean.
# Switches: SANITIZER=address|undefined|thread, WERROR=0 to drop -Werror,
#           OPT=-O0 for debugging, FUZZ_SECONDS=N per fuzz target (default 60).

CC      ?= gcc
BUILD   ?= build
OPT     ?= -O2
WERROR  ?= 1

PKGS_PROTO  := jansson libxml-2.0
PKGS_SERVER := libmicrohttpd libuv nettle
PKGS_TEST   := check libcurl

WSLAY_CFLAGS := $(shell pkg-config --cflags libwslay 2>/dev/null)
WSLAY_LIBS   := $(shell pkg-config --libs libwslay 2>/dev/null || echo -lwslay)

WARN := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wpointer-arith -Wformat=2 -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN += -Werror
endif

SANFLAGS :=
ifneq ($(SANITIZER),)
SANFLAGS := -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -g
OPT := -O1
endif
ifeq ($(SANITIZER),undefined)
SANFLAGS += -fno-sanitize-recover=undefined
endif

CFLAGS_BASE := -std=c11 -D_GNU_SOURCE $(OPT) -g $(WARN) $(SANFLAGS) -I. -MMD -MP
LDFLAGS_BASE := $(SANFLAGS)

SOLVER_SRC := $(wildcard solver/*.c)
PROTO_SRC  := $(wildcard proto/*.c)
SERVER_SRC := $(wildcard server/*.c)
BENCH_SRC  := $(wildcard tests/bench/*.c)
TEST_SRC   := $(wildcard tests/*/test_*.c)

SOLVER_OBJ := $(SOLVER_SRC:%.c=$(BUILD)/obj/%.o)
PROTO_OBJ  := $(PROTO_SRC:%.c=$(BUILD)/obj/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/obj/%.o)
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN  := $(patsubst tests/bench/%.c,$(BUILD)/%,$(BENCH_SRC))

CFLAGS_PROTO  := $(shell pkg-config --cflags $(PKGS_PROTO))
CFLAGS_SERVER := $(shell pkg-config --cflags $(PKGS_SERVER)) $(WSLAY_CFLAGS) $(CFLAGS_PROTO)
CFLAGS_TEST   := $(shell pkg-config --cflags $(PKGS_TEST)) $(CFLAGS_SERVER)
LIBS_PROTO    := $(shell pkg-config --libs $(PKGS_PROTO))
LIBS_SERVER   := $(shell pkg-config --libs $(PKGS_SERVER)) $(WSLAY_LIBS) $(LIBS_PROTO) -lpthread
LIBS_TEST     := $(shell pkg-config --libs $(PKGS_TEST)) $(LIBS_SERVER)

LIBSOLVER := $(BUILD)/libiksolver.a
LIBPROTO  := $(BUILD)/libikproto.a

.PHONY: all web check bench fuzz fuzz-build run format clean
.SECONDARY:
all: $(LIBSOLVER) $(LIBPROTO) $(BUILD)/ikd $(TEST_BIN)

$(BUILD)/obj/solver/%.o: solver/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -c $< -o $@
$(BUILD)/obj/proto/%.o: proto/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS_PROTO) -c $< -o $@
$(BUILD)/obj/server/%.o: server/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS_SERVER) -c $< -o $@
$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS_TEST) -c $< -o $@

$(LIBSOLVER): $(SOLVER_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^
$(LIBPROTO): $(PROTO_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/ikd: $(SERVER_OBJ) $(LIBPROTO) $(LIBSOLVER)
	$(CC) $(LDFLAGS_BASE) -o $@ $(SERVER_OBJ) $(LIBPROTO) $(LIBSOLVER) $(LIBS_SERVER) -lm

# Every test binary links the three layers; server objects other than main.o
# are linked too so that server modules can be unit-tested.
SERVER_LIB_OBJ := $(filter-out $(BUILD)/obj/server/main.o,$(SERVER_OBJ))
$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(SERVER_LIB_OBJ) $(LIBPROTO) $(LIBSOLVER)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(SERVER_LIB_OBJ) $(LIBPROTO) $(LIBSOLVER) $(LIBS_TEST) -lm

$(BUILD)/%: $(BUILD)/obj/tests/bench/%.o $(SERVER_LIB_OBJ) $(LIBPROTO) $(LIBSOLVER)
	$(CC) $(LDFLAGS_BASE) -o $@ $< $(SERVER_LIB_OBJ) $(LIBPROTO) $(LIBSOLVER) $(LIBS_TEST) -lm

# The live page: one flat directory (ikd serves no subdirectories), three.js
# mapped by the page's import map to the copies made here.
WEB_SRC  := $(wildcard web/*.html web/*.js web/*.css)
WEB_NPM  := node_modules/three/build/three.module.js node_modules/three/build/three.core.js \
            node_modules/three/examples/jsm/controls/TransformControls.js \
            node_modules/three/examples/jsm/controls/OrbitControls.js \
            node_modules/three/examples/jsm/loaders/BVHLoader.js
WEB_DATA := tests/data/robots/kuka_iiwa14_r820.urdf tests/data/motion/cmu_02_01_walk.bvh

web: $(BUILD)/web/.built
$(BUILD)/web/.built: $(WEB_SRC) clients/js/ikd.js $(WEB_DATA) package-lock.json
	@test -f node_modules/three/package.json || { \
	    echo "make web: node_modules/three is missing; run 'npm ci' (docker/install-deps.sh does)" >&2; \
	    exit 1; }
	rm -rf $(BUILD)/web && mkdir -p $(BUILD)/web
	cp $(WEB_SRC) clients/js/ikd.js $(WEB_NPM) $(WEB_DATA) $(BUILD)/web/
	touch $@

check: all web
	sh tests/run.sh $(BUILD)

bench: all $(BENCH_BIN)
	sh tests/bench/run.sh $(BUILD)

# Fuzzing: solver/ and proto/ rebuilt with clang under
# -fsanitize=fuzzer-no-link,address,undefined in FUZZ_BUILD (a make of its
# own, so the usual rules apply), each target linked with libFuzzer's main.
# Needs `sh docker/install-deps.sh fuzz` (clang and its runtime libraries).
FUZZ_CC      ?= clang-14
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SAN     := address,undefined -fno-sanitize-recover=undefined
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN     := $(FUZZ_SRC:tests/fuzz/%.c=$(FUZZ_BUILD)/%)

fuzz-build:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) SANITIZER="fuzzer-no-link,$(FUZZ_SAN)" \
	    $(FUZZ_BUILD)/libikproto.a $(FUZZ_BUILD)/libiksolver.a
	$(MAKE) $(FUZZ_BIN)

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_BUILD)/libikproto.a $(FUZZ_BUILD)/libiksolver.a
	$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -I. $(CFLAGS_PROTO) \
	    -fsanitize=fuzzer,$(FUZZ_SAN) -o $@ $< $(FUZZ_BUILD)/libikproto.a \
	    $(FUZZ_BUILD)/libiksolver.a $(LIBS_PROTO) $(shell pkg-config --libs nettle) -lm

fuzz: fuzz-build
	sh tests/fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

run: $(BUILD)/ikd web
	./$(BUILD)/ikd --web $(BUILD)/web

format:
	clang-format -i $(SOLVER_SRC) $(PROTO_SRC) $(SERVER_SRC) $(TEST_SRC) $(BENCH_SRC) \
	    $(wildcard solver/*.h proto/*.h server/*.h tests/*/*.h)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
