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
#
# Targets: all (default), check, bench, run, format, clean.
# Switches: SANITIZER=address|undefined|thread, WERROR=0 to drop -Werror,
#           OPT=-O0 for debugging.

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

.PHONY: all check bench run format clean
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

check: all
	sh tests/run.sh $(BUILD)

bench: all $(BENCH_BIN)
	sh tests/bench/run.sh $(BUILD)

run: $(BUILD)/ikd
	./$(BUILD)/ikd

format:
	clang-format -i $(SOLVER_SRC) $(PROTO_SRC) $(SERVER_SRC) $(TEST_SRC) $(BENCH_SRC) \
	    $(wildcard solver/*.h proto/*.h server/*.h tests/*/*.h)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
